"""The "scripted model" of an MCP server's tests: a real MCP client session that makes the
given tool calls in order and reads back what each returned, as the model would.

MCP has no model of its own: the client (an agent host) is the loop. ``token`` sets the
access token the request carries, as the SDK's OAuth middleware does on streamable HTTP.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterable
from typing import Any

from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp_types import CallToolResult, TextContent
from pytest_toolpass import Transcript


def token_for(user: str | None, claim: str = "email") -> AuthenticatedUser | None:
    """What the SDK's ``BearerAuthBackend`` puts in the request for a verified token."""
    if user is None:
        return None
    return AuthenticatedUser(
        AccessToken(
            token=f"token-of-{user}",
            client_id="agent-host",
            scopes=["tools"],
            subject=f"sub-{user}",
            claims={claim: user, "iss": "https://idp.example.com"},
        )
    )


def text_of(result: CallToolResult) -> str:
    text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
    return f"[error] {text}" if result.is_error else text


async def call_all(
    server: Any, calls: Iterable[tuple[str, dict[str, Any]]], user: str | None, mode: str = "auto"
) -> Transcript:
    """One client session: the calls in order, each result's text (``[error]`` marks
    ``isError``)."""
    outputs: list[str] = []

    async def session() -> None:
        auth_context_var.set(token_for(user))
        async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
            for name, arguments in calls:
                outputs.append(text_of(await client.call_tool(name, arguments)))

    # A context of its own, so the token set here stays with this session.
    await asyncio.create_task(session(), context=contextvars.copy_context())
    return Transcript(outputs, "done")
