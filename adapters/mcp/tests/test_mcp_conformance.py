"""The shared conformance suite through a real MCP client session against an ``MCPServer``
guarded by ``guard``: on the SDK's default in-process path (the stateless 2026-07-28
protocol) and over JSON-RPC on in-memory streams (``mode="legacy"``, the initialize
handshake). The user is the access token's ``email`` claim, as on streamable HTTP with OAuth.

The sync run is the same client driven from synchronous code in its own event loop (MCP's
client is async only; a synchronous application calls a server this way).
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server import MCPServer
from mcp_client import call_all
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass.mcp import guard


class Server:
    def __init__(self, server: MCPServer, script: list[Call]) -> None:
        self.server, self.script = server, script


class TestMCPServer(AdapterConformance):
    client_mode = "auto"

    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Server:
        server: MCPServer = MCPServer("kit")
        for fn in tools.functions():
            server.add_tool(fn)
        guard(server, engine, rules, strict=strict, **options)
        return Server(server, script)

    def run(self, agent: Server, user: str | None) -> Transcript:
        return asyncio.run(self.arun(agent, user))

    async def arun(self, agent: Server, user: str | None) -> Transcript:
        calls = [(c.tool, c.arguments) for c in agent.script]
        return await call_all(agent.server, calls, user, mode=self.client_mode)


class TestMCPServerLegacy(TestMCPServer):
    client_mode = "legacy"
