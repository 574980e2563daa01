"""The interface: what ``session=`` maps to on each transport, a session callable, the
low-level ``Server``, and the ``toolpass`` namespace shared with core."""

from __future__ import annotations

from typing import Any

import pytest
import toolpass
import toolpass.mcp
from http_server import client, oauth_server, serving
from mcp import Client
from mcp.server import MCPServer, Server
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp_client import call_all, text_of, token_for
from mcp_types import CallToolRequestParams, CallToolResult, TextContent
from pytest_toolpass import ScriptedEngine
from toolpass import current_session
from toolpass.mcp import guard

DANA = "dana@example.com"


def whoami() -> str:
    """Who this call acts for, and in which session."""
    session = current_session()
    return f"{session.user} {session.id}" if session else "nobody"


def server(factory: Any = MCPServer, **options: Any) -> MCPServer:
    built = factory("ops")
    built.add_tool(whoami)
    guard(built, ScriptedEngine(), **options)
    return built  # type: ignore[no-any-return]


@pytest.mark.asyncio
async def test_conversation_is_the_mcp_session_on_streamable_http() -> None:
    """A handshake-era HTTP client session has an ``Mcp-Session-Id``: its calls share one
    toolpass session, another client session gets its own. On the stateless 2026-07-28
    protocol (a connection per request) the client's requests share its session."""
    built = server(oauth_server)
    with serving(built) as url:
        legacy = []
        for _ in range(2):
            async with client(url, DANA, mode="legacy") as session:
                legacy.append([text_of(await session.call_tool("whoami", {})) for _ in range(2)])
        async with client(url, DANA) as session:
            modern = [text_of(await session.call_tool("whoami", {})) for _ in range(2)]
    assert all(o.startswith(f"{DANA} ") for o in [*legacy[0], *legacy[1], *modern])
    assert legacy[0][0] == legacy[0][1]
    assert legacy[1][0] == legacy[1][1]
    assert legacy[0][0] != legacy[1][0]
    assert modern[0] == modern[1]


@pytest.mark.asyncio
async def test_a_session_callable_is_given_the_request_context() -> None:
    seen: list[Any] = []

    def conversation(ctx: Any) -> str:
        seen.append(ctx.params["name"])
        return "chat-7"

    built = server(session=conversation)
    first = await call_all(built, [("whoami", {})], DANA)
    second = await call_all(built, [("whoami", {})], DANA)
    assert first.outputs == second.outputs  # one conversation over two client sessions
    assert seen == ["whoami", "whoami"]


@pytest.mark.asyncio
async def test_session_run_is_the_connection() -> None:
    built = server(session="run")
    out = await call_all(built, [("whoami", {}), ("whoami", {})], DANA, mode="legacy")
    assert out.outputs[0] == out.outputs[1]
    again = await call_all(built, [("whoami", {})], DANA, mode="legacy")
    assert again.outputs[0] != out.outputs[0]


@pytest.mark.asyncio
async def test_a_low_level_server() -> None:
    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=whoami())])

    low: Server[Any] = Server("low", on_call_tool=call_tool)
    guard(low, ScriptedEngine(), strict=True)
    auth_context_var.set(token_for(DANA))
    async with Client(low) as session:
        result = await session.call_tool("whoami", {})
    assert result.is_error
    assert "not_configured" in text_of(result)


def test_one_namespace_with_core() -> None:
    assert toolpass.mcp.__name__ == "toolpass.mcp"
    assert "adapters/mcp" in (toolpass.mcp.__file__ or "") or "site-packages" in (
        toolpass.mcp.__file__ or ""
    )
    assert hasattr(toolpass, "Toolkit")  # core's API, from the same package
    assert {"guard", "Rule", "FastMCPGuard", "ToolpassMiddleware"} <= set(toolpass.mcp.__all__)
