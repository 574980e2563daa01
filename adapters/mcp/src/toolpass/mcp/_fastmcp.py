"""toolpass for servers of the ``fastmcp`` package: its ``Middleware``, checking tool calls,
resource reads and prompts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import mcp_types
from fastmcp.prompts.base import PromptResult
from fastmcp.resources.base import ResourceResult
from fastmcp.server.dependencies import get_access_token, get_http_request
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import InputRequiredToolResult, Tool, ToolResult
from mcp_types import TextContent
from toolpass.adapting import OnRefuse, PermissionEngine, Rules, SessionSource, Toolkit, ToolRefused
from toolpass.adapting import refusal_text as refusal_text
from toolpass.mcp import (
    CHECKED,
    Client,
    User,
    _arguments_of,
    _as_mcp_error,
    _connection_of,
    _Core,
    log,
)
from toolpass.mcp._approvals import PREFIX, Approvals

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
    """A ``fastmcp`` server ``Middleware`` checking every tool call (and resource read and
    prompt, as ``guard`` does) with toolpass
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
        approvals_url: str | None = None,
        approval_key: bytes | str | None = None,
        approval_wait: float = 30.0,
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
        self.approvals = Approvals(self.guard, approvals_url, approval_key, approval_wait)

    async def on_call_tool(
        self,
        context: MiddlewareContext[mcp_types.CallToolRequestParams],
        call_next: CallNext[mcp_types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        message: Any = context.message
        name, arguments = getattr(message, "name", None), getattr(message, "arguments", None)
        state = getattr(message, "request_state", None)
        pause = None
        if isinstance(state, str) and state.startswith(PREFIX):  # after the approvals page
            try:
                arguments = await self._core.resumed(
                    self.approvals, state, name, arguments, context
                )
            except ToolRefused as refused:
                refusal: ToolResult = self._core.refusal(refused, _as_tool_result)
                return refusal
            cleared = {"arguments": arguments, "request_state": None, "input_responses": None}
            context = context.copy(message=message.model_copy(update=cleared))
        else:
            pause = self._pause(context, name, arguments)
        result: ToolResult = await self._checked(
            name, arguments, context, call_next, _as_tool_result, pause
        )
        if isinstance(result, str):  # the pipeline fenced an untrusted result: text
            return ToolResult(content=[TextContent(type="text", text=result)])
        return result

    async def on_read_resource(
        self,
        context: MiddlewareContext[mcp_types.ReadResourceRequestParams],
        call_next: CallNext[mcp_types.ReadResourceRequestParams, ResourceResult],
    ) -> ResourceResult:
        """Checked as a call of the tool ``resources/read`` (argument ``uri``); refused as
        a JSON-RPC error."""
        uri = getattr(context.message, "uri", None)
        arguments = {"uri": None if uri is None else str(uri)}
        read: ResourceResult = await self._checked(
            "resources/read", arguments, context, call_next, _as_mcp_error
        )
        return read

    async def on_get_prompt(
        self,
        context: MiddlewareContext[mcp_types.GetPromptRequestParams],
        call_next: CallNext[mcp_types.GetPromptRequestParams, PromptResult],
    ) -> PromptResult:
        """Checked as a call of the tool ``prompts/get`` (arguments ``name``,
        ``arguments``); refused as a JSON-RPC error."""
        message: Any = context.message
        arguments = {name: getattr(message, name, None) for name in CHECKED["prompts/get"]}
        got: PromptResult = await self._checked(
            "prompts/get", arguments, context, call_next, _as_mcp_error
        )
        return got

    async def on_list_tools(
        self,
        context: MiddlewareContext[mcp_types.ListToolsRequest],
        call_next: CallNext[mcp_types.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        """The listing as it is; the rules are checked against its tools (warnings)."""
        tools = await call_next(context)
        try:
            self._core.saw_tools({t.name: _arguments_of(t.parameters) for t in tools})
        except Exception:  # only a check of the rules: never fail the listing
            log.exception("toolpass: could not check the rules against the tools")
        return tools

    async def _checked(
        self,
        name: Any,
        arguments: Any,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Any],
        refused_as: Callable[[Any, ToolRefused], Any],
        pause: Callable[[ToolRefused], Any] | None = None,
    ) -> Any:
        fastmcp_context = context.fastmcp_context
        try:
            session = fastmcp_context.session if fastmcp_context is not None else None
        except RuntimeError:  # no request: called in process, without a client
            session = None
        connection = _connection_of(session) if session is not None else context
        return await self._core.call(
            name,
            arguments,
            context,
            connection,
            _http_request(),
            lambda: call_next(context),
            refused_as,
            pause,
        )

    def _pause(
        self, context: MiddlewareContext[Any], name: Any, arguments: Any
    ) -> Callable[[ToolRefused], Any] | None:
        """A client that declared URL-mode elicitation is sent to the approvals page (on
        2026-07-28 as FastMCP carries an ``InputRequiredResult`` through its middleware)."""
        fastmcp_context = context.fastmcp_context
        request = fastmcp_context.request_context if fastmcp_context is not None else None
        if request is None:
            return None
        session = fastmcp_context.session if fastmcp_context is not None else None
        caps = getattr(session, "client_capabilities", None)
        made = self.approvals.pauser(caps, name, arguments, request.protocol_version, session)
        if made is None:
            return None

        def pause(refused: ToolRefused) -> Any:
            answer = made(refused)
            return InputRequiredToolResult(answer) if answer is not None else None

        return pause
