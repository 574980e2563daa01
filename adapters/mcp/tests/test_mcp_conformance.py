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

from http_server import client, oauth_server, serving
from mcp.server import MCPServer
from mcp_client import call_all, text_of
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


class TestStreamableHTTP(TestMCPServer):
    """Over a real transport: streamable HTTP on 127.0.0.1 with the SDK's OAuth bearer
    middleware; the user is the verified token's ``email`` claim (a run without a user sends
    a token naming none, as an agent host's own client-credentials token does)."""

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
        server = oauth_server("kit")
        for fn in tools.functions():
            server.add_tool(fn)
        guard(server, engine, rules, strict=strict, **options)
        return Server(server, script)

    async def arun(self, agent: Server, user: str | None) -> Transcript:
        outputs = []
        with serving(agent.server) as url:
            async with client(url, user) as session:
                for call in agent.script:
                    outputs.append(text_of(await session.call_tool(call.tool, call.arguments)))
        return Transcript(outputs, "done")
