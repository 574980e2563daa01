"""An MCP server on streamable HTTP with OAuth, in this process, for the real-transport
tests: uvicorn on 127.0.0.1 (port 0) in a thread, the SDK's bearer middleware in front,
and a token verifier whose tokens name their user in the ``email`` claim (``token_of``)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

ISSUER = "https://idp.example.com"


def token_of(user: str | None) -> str:
    return f"tok.{user or ''}"


class Verifier:
    """Accepts ``tok.<user>``: its ``email`` claim is the user; ``tok.`` is a token of the
    agent host itself (client credentials), naming no user."""

    async def verify_token(self, token: str) -> AccessToken | None:
        if not token.startswith("tok."):
            return None
        user = token[4:]
        return AccessToken(
            token=token,
            client_id="agent-host",
            scopes=["tools"],
            subject=f"sub-{user}",
            claims={"email": user, "iss": ISSUER} if user else {"iss": ISSUER},
        )


def oauth_server(name: str, **options: Any) -> MCPServer:
    """An MCPServer that requires a bearer token on streamable HTTP."""
    return MCPServer(
        name,
        auth=AuthSettings(
            issuer_url=ISSUER,
            resource_server_url="http://127.0.0.1/mcp",
            validate_token_resource=False,  # the test verifier issues for this server only
        ),
        token_verifier=Verifier(),
        **options,
    )


@contextmanager
def serving(server: Any) -> Iterator[str]:
    """Serve ``server`` (an ``MCPServer``, or a ``fastmcp`` server) over streamable HTTP;
    yields its URL."""
    made = getattr(server, "streamable_http_app", None)
    app = made() if made is not None else server.http_app(path="/mcp")
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(web.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not web.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the MCP server did not start")
        time.sleep(0.01)
    port = web.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        web.should_exit = True
        thread.join(10)


@asynccontextmanager
async def client(
    url: str, user: str | None, mode: str = "auto", headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """A client session with ``url`` sending ``user``'s bearer token (for None, a token naming
    no user), and ``headers``."""
    headers = {**(headers or {}), "Authorization": f"Bearer {token_of(user)}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as session,  # type: ignore[arg-type]
    ):
        yield session
