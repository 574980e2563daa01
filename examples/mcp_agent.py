"""The helpdesk story (examples/helpdesk.py) through an MCP server guarded by toolpass,
offline.

An ``MCPServer`` (MCP Python SDK 2.x) serves the tools; ``toolpass.mcp.guard`` checks every
``tools/call``. MCP has no model: a real MCP client session plays the agent host, making the
script's calls, and what it reads back is what the model would read. A stdio server runs for
one person, so the user is ``user=``; with OAuth it is the access token's ``email`` claim.

The deploy needs a person: the host declared URL-mode elicitation, so the server answers
with an ``InputRequiredResult`` sending the user to the approvals page (``approvals_url``,
the request's ``?id=``) with a signed ``request_state``, and the run pauses there. A person
approves on the page; the host's retry, with the state, is checked again and runs the
deploy once. Needs ``pip install ./core ./adapters/mcp`` (or, once published,
``pip install toolpass-mcp``).

    python examples/mcp_agent.py
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from helpdesk import CONVERSATION, RULES, TOOLS, USER, Script, engine, kit, main
from mcp import Client
from mcp.server import MCPServer
from mcp_types import CallToolResult, ElicitResult, InputRequiredResult, TextContent
from toolpass.mcp import guard

PAGE = "https://toolpass.example.com/approvals"  # the approvals page (toolpass serve)

server = MCPServer("helpdesk")
for _tool in TOOLS:
    server.add_tool(_tool)
guard(
    server,
    engine,
    RULES,
    toolkit=kit,
    user=USER,
    session=lambda _: CONVERSATION,
    approvals_url=PAGE,
    approval_wait=0,  # the host resumes in a second run; it does not wait on the call
)
#: The calls paused for a person, by tool and arguments: the state their retry carries.
paused: dict[str, InputRequiredResult] = {}


async def opened_the_page(context: Any, params: Any) -> ElicitResult:
    """The host showed the user the page's URL and they opened it (URL mode: the answer
    says only that; the person's decision is made on the page)."""
    return ElicitResult(action="accept")


async def arun(script: Script) -> list[str]:
    read = []
    # In process; a real host speaks stdio or HTTP.
    async with Client(server, elicitation_callback=opened_the_page) as client:
        for name, arguments in script:
            key = f"{name} {sorted(arguments.items())}"
            pause = paused.pop(key, None)
            resume: dict[str, Any] = {}
            if pause is not None:  # the person decided: retry with the signed state
                accepted = {"toolpass": ElicitResult(action="accept")}
                resume = {"input_responses": accepted, "request_state": pause.request_state}
            result = await client.session.call_tool(
                name, arguments, allow_input_required=True, **resume
            )
            if isinstance(result, InputRequiredResult):  # the run pauses for a person
                paused[key] = result
                read.append(shown_pause(result))
                break
            read.append(text_of(result))
    return read


def shown_pause(result: InputRequiredResult) -> str:
    [asked] = (result.input_requests or {}).values()
    params: Any = asked.params
    kind = params.meta["toolpass"]["type"]
    return f"[InputRequiredResult {kind}] the host shows: {params.message} {params.url}"


def text_of(result: CallToolResult) -> str:
    text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
    return f"[isError] {text}" if result.is_error else text


def run(script: Script) -> list[str]:
    return asyncio.run(arun(script))  # MCP's client is async only


if __name__ == "__main__":
    main("MCP", run)
