"""The helpdesk story (examples/helpdesk.py) through an MCP server guarded by toolpass,
offline.

An ``MCPServer`` (MCP Python SDK 2.x) serves the tools; ``toolpass.mcp.guard`` checks every
``tools/call``. MCP has no model: a real MCP client session plays the agent host, making the
script's calls, and what it reads back is what the model would read. A stdio server runs for
one person, so the user is ``user=``; with OAuth it is the access token's ``email`` claim.
Needs ``pip install ./core ./adapters/mcp`` (or, once published, ``pip install toolpass-mcp``).

    python examples/mcp_agent.py
"""

from __future__ import annotations

import asyncio
import os

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from helpdesk import CONVERSATION, RULES, TOOLS, USER, Script, engine, kit, main
from mcp import Client
from mcp.server import MCPServer
from mcp_types import TextContent
from toolpass.mcp import guard

server = MCPServer("helpdesk")
for _tool in TOOLS:
    server.add_tool(_tool)
guard(server, engine, RULES, toolkit=kit, user=USER, session=lambda _: CONVERSATION)


async def arun(script: Script) -> list[str]:
    read = []
    async with Client(server) as client:  # in process; a real host speaks stdio or HTTP
        for name, arguments in script:
            result = await client.call_tool(name, arguments)
            text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
            read.append(f"[isError] {text}" if result.is_error else text)
    return read


def run(script: Script) -> list[str]:
    return asyncio.run(arun(script))  # MCP's client is async only


if __name__ == "__main__":
    main("MCP", run)
