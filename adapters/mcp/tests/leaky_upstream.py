"""An MCP server that says a file's text everywhere a proxy might forget to look: its
instructions, and the errors of a completion, a listing and a subscription. For the
proxy's redaction tests (``test_proxy_attacks``). ``$LEAK_FILE`` names the file."""

from __future__ import annotations

import os
from typing import Any

from mcp.server import MCPServer
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    Completion,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SubscribeRequestParams,
)


def leaked() -> str:
    with open(os.environ["LEAK_FILE"], encoding="utf-8") as f:
        return f.read()


server: MCPServer = MCPServer("leaky-upstream", instructions=f"instructions: {leaked()}")


@server.resource("note://{name}/text")
def note(name: str) -> str:
    """A note by name."""
    return f"note {name}"


@server.prompt()
def greet(name: str) -> str:
    """Greets someone."""
    return f"Say hello to {name}."


@server.tool()
def ping() -> str:
    """Answers pong."""
    return "pong"


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion:
    raise MCPError(INTERNAL_ERROR, f"completion failed: {leaked()}", {"said": leaked()})


async def subscribe(ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
    raise MCPError(INTERNAL_ERROR, f"subscription failed: {leaked()}")


lowlevel = server._lowlevel_server
lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)

if __name__ == "__main__":
    server.run()
