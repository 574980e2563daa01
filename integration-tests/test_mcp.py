"""The shared scenario through an MCP server guarded by ``toolpass.mcp.guard``: a real MCP
client session calls ``propose_fix`` (a tool that declares nothing) once, for a user who may
not open the pull request and for one who may; in process on the SDK's default path and over
JSON-RPC on in-memory streams (``mode="legacy"``), over streamable HTTP with OAuth (the user
the bearer token's ``email`` claim), and through a ``fastmcp`` server. MCP has no model: the
client session is the loop, and what it reads back is what the model would read.

No rule is needed: the request hook checks what the tool does. The refusal raised inside the
tool's body reaches the client as an ``isError`` result with its reason, where MCP would
otherwise mask it ("Error executing tool propose_fix").
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp_types import CallToolResult, TextContent
from scenario import ARGUMENTS, MAY, MAY_NOT, Scenario
from toolpass.mcp import guard

ISSUER = "https://idp.example.com"


def token(user: str) -> AccessToken:
    return AccessToken(
        token=f"tok.{user}",
        client_id="agent-host",
        scopes=["tools"],
        claims={"email": user, "iss": ISSUER},
    )


class Verifier:
    async def verify_token(self, value: str) -> AccessToken | None:
        return token(value[4:]) if value.startswith("tok.") else None


@contextmanager
def serving(server: MCPServer) -> Iterator[str]:
    web = uvicorn.Server(
        uvicorn.Config(server.streamable_http_app(), host="127.0.0.1", port=0, log_level="warning")
    )
    thread = threading.Thread(target=lambda: asyncio.run(web.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not web.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the MCP server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{web.servers[0].sockets[0].getsockname()[1]}/mcp"
    finally:
        web.should_exit = True
        thread.join(10)


@asynccontextmanager
async def http_client(url: str, user: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer tok.{user}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def text_of(result: Any) -> tuple[bool, str]:
    text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
    return bool(result.is_error), text


async def propose(s: Scenario, user: str, transport: str) -> tuple[bool, str]:
    if transport == "fastmcp":
        from fastmcp import Client as FastMCPClient
        from fastmcp import FastMCP

        fast = FastMCP("github")
        fast.tool(s.propose_fix)
        guard(fast, s.engine)
        auth_context_var.set(AuthenticatedUser(token(user)))
        async with FastMCPClient(fast) as client:
            return text_of(await client.call_tool("propose_fix", ARGUMENTS, raise_on_error=False))
    if transport == "http":
        server = MCPServer(
            "github",
            auth=AuthSettings(
                issuer_url=ISSUER,
                resource_server_url="http://127.0.0.1/mcp",
                validate_token_resource=False,
            ),
            token_verifier=Verifier(),
        )
        server.add_tool(s.propose_fix)
        guard(server, s.engine)
        with serving(server) as url:
            async with http_client(url, user) as client:
                return text_of(await client.call_tool("propose_fix", ARGUMENTS))
    server = MCPServer("github")
    server.add_tool(s.propose_fix)
    guard(server, s.engine)
    auth_context_var.set(AuthenticatedUser(token(user)))  # as the SDK's OAuth middleware does
    async with Client(server, mode=transport) as client:  # type: ignore[arg-type]
        result: CallToolResult = await client.call_tool("propose_fix", ARGUMENTS)
        return text_of(result)


def drive(s: Scenario, user: str, transport: str) -> tuple[bool, str]:
    # MCP's client is async only: one event loop per session, as an agent host runs it.
    return asyncio.run(propose(s, user, transport))


TRANSPORTS = ["auto", "legacy", "http", "fastmcp"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_user_who_may_not_is_refused_and_the_model_reads_why(transport: str) -> None:
    with Scenario() as s:
        is_error, text = drive(s, MAY_NOT, transport)
        assert is_error
        assert text.startswith("Refused by toolpass (not_authorized)"), text
        s.assert_refused(text)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_user_who_may_opens_the_pull_request(transport: str) -> None:
    with Scenario() as s:
        is_error, text = drive(s, MAY, transport)
        assert not is_error, text
        s.assert_opened(text)
