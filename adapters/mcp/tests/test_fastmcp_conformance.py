"""The shared conformance suite through a ``fastmcp`` server (the FastMCP package, 4.x on
mcp 2.x) guarded by ``guard`` (which adds a ``FastMCPGuard`` middleware), driven by
FastMCP's own in-memory ``Client``; the user is the access token's ``email`` claim."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from fastmcp import Client, FastMCP
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp_client import token_for
from mcp_types import TextContent
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass.mcp import FastMCPGuard, guard


class Server:
    def __init__(self, server: FastMCP, script: list[Call]) -> None:
        self.server, self.script = server, script


async def call_all(agent: Server, user: str | None) -> Transcript:
    outputs: list[str] = []

    async def session() -> None:
        auth_context_var.set(token_for(user))
        async with Client(agent.server) as client:
            for call in agent.script:
                result = await client.call_tool(call.tool, call.arguments, raise_on_error=False)
                text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
                outputs.append(f"[error] {text}" if result.is_error else text)

    await asyncio.create_task(session(), context=contextvars.copy_context())
    return Transcript(outputs, "done")


class TestFastMCP(AdapterConformance):
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
        server = FastMCP("kit")
        for fn in tools.functions():
            server.tool(fn)
        added = guard(server, engine, rules, strict=strict, **options)
        assert isinstance(added, FastMCPGuard)
        return Server(server, script)

    def run(self, agent: Server, user: str | None) -> Transcript:
        return asyncio.run(call_all(agent, user))

    async def arun(self, agent: Server, user: str | None) -> Transcript:
        return await call_all(agent, user)
