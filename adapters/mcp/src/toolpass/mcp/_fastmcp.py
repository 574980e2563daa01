"""toolpass for servers of the ``fastmcp`` package: its ``Middleware``, ``on_call_tool``."""

from __future__ import annotations

from typing import Any

import mcp_types
from fastmcp.server.dependencies import get_access_token, get_http_request
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp_types import TextContent
from toolpass.adapting import OnRefuse, PermissionEngine, Rules, SessionSource, Toolkit, ToolRefused
from toolpass.adapting import refusal_text as refusal_text
from toolpass.mcp import Client, User, _connection_of, _Core

__all__ = ["FastMCPGuard"]


def _as_tool_result(made: Any, refused: ToolRefused) -> Any:
    if isinstance(made, ToolResult):
        return made
    meta: dict[str, Any] = {"code": refused.code}
    request_id = getattr(refused, "request_id", None)
    if isinstance(request_id, str):
        meta["approval_id"] = request_id
    return ToolResult(
        content=[TextContent(type="text", text=made if isinstance(made, str) else str(made))],
        meta={"toolpass": meta},
        is_error=True,
    )


def _http_request() -> Any:
    """The HTTP request being served, or None (stdio, in memory)."""
    try:
        return get_http_request()
    except RuntimeError:
        return None


class FastMCPGuard(Middleware):
    """A ``fastmcp`` server ``Middleware`` checking every tool call with toolpass
    (``server.add_middleware(FastMCPGuard(tp, rules))``, or ``guard(server, tp, rules)``).
    The options are ``toolpass.mcp.guard``'s; the access token is FastMCP's
    (``fastmcp.server.dependencies.get_access_token``), and a ``user`` callable is given the
    ``MiddlewareContext``."""

    def __init__(
        self,
        engine: PermissionEngine | None,
        rules: Rules | None = None,
        *,
        strict: bool = False,
        toolkit: Toolkit | None = None,
        user: User = None,
        claim: str = "email",
        session: SessionSource = "conversation",
        on_refuse: OnRefuse | None = refusal_text,
        client: Client = None,
    ) -> None:
        self._core = _Core(
            engine,
            rules,
            strict=strict,
            toolkit=toolkit,
            user=user,
            claim=claim,
            session=session,
            on_refuse=on_refuse,
            token=get_access_token,
            client=client,
        )
        self.guard = self._core.guard

    async def on_call_tool(
        self,
        context: MiddlewareContext[mcp_types.CallToolRequestParams],
        call_next: CallNext[mcp_types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        message: Any = context.message
        fastmcp_context = context.fastmcp_context
        try:
            session = fastmcp_context.session if fastmcp_context is not None else None
        except RuntimeError:  # no request: called in process, without a client
            session = None
        connection = _connection_of(session) if session is not None else context
        result: ToolResult = await self._core.call(
            getattr(message, "name", None),
            getattr(message, "arguments", None),
            context,
            connection,
            _http_request(),
            lambda: call_next(context),
            _as_tool_result,
        )
        if isinstance(result, str):  # the pipeline fenced an untrusted result: text
            return ToolResult(content=[TextContent(type="text", text=result)])
        return result
