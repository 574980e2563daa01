"""An MCP server using every part of the protocol, knowing nothing of toolpass: resources
(and a template, subscriptions), prompts, completions, logging, and tools that ask the
client (sampling, elicitation, roots), report progress, read their ``_meta``, wait to be
cancelled, add a tool. For the proxy's pass-through tests.

Run on stdio (``python full_upstream.py``) or streamable HTTP (``python full_upstream.py
http PORT``). Each event is appended to the JSON-lines file ``$UPSTREAM_LOG``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from mcp.server import MCPServer
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp_types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel

server: MCPServer = MCPServer("full-upstream", instructions="The upstream's instructions.")


def record(event: str, **details: Any) -> None:
    with open(os.environ["UPSTREAM_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"event": event, **details}) + "\n")


@server.resource("note://readme")
def readme() -> str:
    """The project's readme."""
    record("read", uri="note://readme")
    return "the readme"


@server.resource("note://{name}/text")
def note(name: str) -> str:
    """A note by name."""
    record("read", uri=f"note://{name}/text")
    return f"note {name}"


@server.prompt()
def greet(name: str) -> str:
    """Greets someone."""
    record("prompt", name=name)
    return f"Say hello to {name}."


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion:
    names = ["Ada", "Alan", "Grace"]
    return Completion(values=[n for n in names if n.startswith(argument.value)], total=3)


@server.tool()
async def ask_model(prompt: str, ctx: Context) -> str:
    """Asks the client's model (sampling)."""
    result = await ctx.session.create_message(  # type: ignore[call-overload]
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=50,
        related_request_id=ctx.request_id,
    )
    return f"model said: {result.content.text}"


class Answer(BaseModel):
    colour: str


@server.tool()
async def ask_user(question: str, ctx: Context) -> str:
    """Asks the user (elicitation)."""
    result = await ctx.elicit(message=question, schema=Answer)
    return f"user {result.action}: {result.data.colour if result.action == 'accept' else '-'}"


@server.tool()
async def where(ctx: Context) -> str:
    """The client's roots."""
    roots = await ctx.session.list_roots()
    return " ".join(str(r.uri) for r in roots.roots)


@server.tool()
async def capabilities(ctx: Context) -> str:
    """The client's capabilities, as this server sees them."""
    caps = ctx.session.client_capabilities
    seen = [n for n in ("sampling", "elicitation", "roots") if caps and getattr(caps, n)]
    return ",".join(seen) or "none"


@server.tool()
async def slow(ctx: Context) -> str:
    """Reports progress and logs as it goes."""
    for step in (1, 2, 3):
        await ctx.report_progress(progress=step, total=3, message=f"step {step}")
        await ctx.info(f"did step {step}")
    return "slow done"


@server.tool()
async def echo_meta(ctx: Context) -> str:
    """The request's ``_meta`` (the client's keys)."""
    meta = dict(ctx.request_context.meta or {})
    return json.dumps({k: v for k, v in meta.items() if not k.startswith("io.")}, sort_keys=True)


@server.tool()
async def wait(ctx: Context) -> str:
    """Waits until cancelled."""
    record("waiting")
    try:
        await anyio.sleep(30)
    except anyio.get_cancelled_exc_class():
        record("cancelled")
        raise
    return "waited"


@server.tool()
async def touch(ctx: Context) -> str:
    """Announces a change of the readme to its subscribers."""
    await ctx.session.send_resource_updated("note://readme")
    return "touched"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool ``grown`` and announces it."""

    def grown() -> str:
        """Added while serving."""
        record("grown")
        return "grown ran"

    server.add_tool(grown, name="grown")
    await ctx.session.send_tool_list_changed()
    return "grew"


@server.tool()
async def shout(path: str, ctx: Context) -> str:
    """Says a file's text every way it can: a log message, progress, a sampling request."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    await ctx.info(f"log: {text}")
    await ctx.report_progress(progress=1, total=1, message=f"progress: {text}")
    await ctx.session.create_message(  # type: ignore[call-overload]
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=text))],
        max_tokens=50,
        related_request_id=ctx.request_id,
    )
    return f"result: {text}"


async def set_level(ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> EmptyResult:
    record("set_level", level=params.level)
    return EmptyResult()


async def subscribe(ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
    record("subscribe", uri=str(params.uri))
    return EmptyResult()


async def unsubscribe(
    ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams
) -> EmptyResult:
    record("unsubscribe", uri=str(params.uri))
    return EmptyResult()


lowlevel = server._lowlevel_server
lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)

if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
