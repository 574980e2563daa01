"""toolpass for MCP servers: every ``tools/call`` checked before the tool runs.

``guard(server, tp, rules)`` puts toolpass into an MCP Python SDK 2.x server
(``mcp.server.MCPServer``, or the low-level ``mcp.server.Server``) as server middleware, or,
for a server of the ``fastmcp`` package, as its ``Middleware`` (``FastMCPGuard``)::

    from toolpass.mcp import guard, Rule

    mcp = MCPServer("ops", auth=AuthSettings(...), token_verifier=verifier)
    guard(mcp, tp, {"delete_issue": Rule("jira-main", "DELETE_ISSUES", "issue:{key}")})

Every ``tools/call`` then runs inside the toolpass pipeline: a ``Session`` for the user, the
rule's question to the permission engine, the request hook watching the tool's body, and one
audit event. The user is the application's, never the model's: on streamable HTTP with OAuth,
a claim of the request's access token (``email`` by default, ``claim=``); on stdio, where the
server runs for one person, ``user=`` (the user's name, or a callable given the request's
context). A call with neither is refused (``no_session``).

A refusal is a tool result with ``isError`` whose text the client's model reads
(``Refused by toolpass (code): reason``, from ``on_refuse``); the server keeps serving. A
refusal raised inside the tool's body (a request the request hook refused, a nested toolpass
tool) reaches the model the same way instead of MCP's masked "Error executing tool".

``toolpass mcp-proxy`` (``toolpass.mcp.proxy``) runs any MCP server behind the same guard
without changing its code.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
import threading
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Mapping
from secrets import token_hex
from typing import TYPE_CHECKING, Any

from mcp_types import (
    SERVER_INFO_META_KEY,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ImageContent,
    TextContent,
)
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from toolpass.adapting import (
    REDACTED,
    Guard,
    OnRefuse,
    PermissionEngine,
    Rule,
    Rules,
    SessionSource,
    Toolkit,
    ToolRefused,
    redact,
    redact_text,
    refusal_text,
)
from toolpass.adapting import usable_secrets as usable
from toolpass.mcp._approvals import PREFIX, Approvals

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

if TYPE_CHECKING:
    from toolpass.mcp._fastmcp import FastMCPGuard

__all__ = [
    "Client",
    "FastMCPGuard",
    "Rule",
    "ToolpassMiddleware",
    "User",
    "guard",
    "refusal_result",
    "user_of_token",
]

log = logging.getLogger("toolpass")

#: Where the user comes from when no access token names one: the user's name (a stdio
#: server runs for one person), or a callable given the request's context, returning it.
User = str | Callable[[Any], Any] | None

#: The JSON-RPC error code of a refusal when ``on_refuse=None`` (no tool result: an error),
#: and of a refused ``resources/read`` or ``prompts/get``: in the range JSON-RPC leaves to
#: servers, none of the codes MCP or its SDKs give a meaning (-32001 is a request's timeout).
REFUSED = -32060

#: Who a client is when its requests share no MCP session (a string, or a callable given the
#: request's context); see ``guard``.
Client = str | Callable[[Any], Any] | None

#: Messages other than ``tools/call`` that read or run something on the server: each is
#: checked as a call of a tool of that name, with these arguments from its params.
CHECKED = {"resources/read": ("uri",), "prompts/get": ("name", "arguments")}
#: Messages that run the server's code on a resource or prompt without reading it (a
#: completion lists a template's or a prompt's values, a subscription watches a resource):
#: checked as calls, with these arguments, where a rule names them or under ``strict``;
#: otherwise passed on unaudited, as a listing is.
GATED = {"completion/complete": ("ref", "argument", "value"), "resources/subscribe": ("uri",)}
#: What a retry after the approvals page carries for toolpass (never passed to the tool).
_RESUME_FIELDS = ("requestState", "inputResponses")
_READS: dict[str, list[str] | None] = {
    method: list(args) for method, args in (CHECKED | GATED).items()
}


def user_of_token(token: AccessToken | None, claim: str) -> str | None:
    """The user an access token names: its ``claim`` (``sub`` and ``client_id`` also read
    the token's own fields). None when there is no token or it lacks the claim."""
    if token is None:
        return None
    value = (token.claims or {}).get(claim)
    if value is None and claim == "sub":
        value = token.subject
    if value is None and claim == "client_id":
        value = token.client_id
    if value is None:
        return None
    if not isinstance(value, str):  # refused (check_error) by the guard
        raise TypeError(f"the token's {claim!r} claim is a {type(value).__name__}, not a string")
    return value


def refusal_result(text: str, refused: ToolRefused | None = None) -> CallToolResult:
    """A failed tool result (``isError``) carrying ``text`` for the model; its ``_meta``
    names the refusal's code (and the approval request's id while one waits)."""
    meta: dict[str, Any] = {}
    if refused is not None:
        meta = {"code": refused.code}
        request_id = getattr(refused, "request_id", None)
        if isinstance(request_id, str):
            meta["approval_id"] = request_id
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        is_error=True,
        _meta={"toolpass": meta} if meta else None,
    )


class _FailedResult(Exception):
    """A tool result with ``isError`` (the tool raised, or the server rejected its
    arguments), carried through the pipeline so the call is audited as an error; the client
    gets the result as it is."""

    def __init__(self, result: Any) -> None:
        super().__init__("the tool's result is an error (isError)")
        self.result = result


def _is_error_result(result: Any) -> bool:
    if isinstance(result, Mapping):
        return result.get("isError") is True
    return getattr(result, "is_error", None) is True


class _Refused(MCPError):
    """A refusal raised inside a tool's body, carried past MCP's own error handling (which
    passes an ``MCPError`` on and masks anything else) to the guard around it."""

    def __init__(self, refused: ToolRefused) -> None:
        super().__init__(REFUSED, refusal_text(refused))
        self.refused = refused


def refusal_in(exc: BaseException) -> ToolRefused | None:
    """The toolpass refusal an exception of a tool's body stands for (itself, or its cause
    or context, as MCP and FastMCP wrap a tool's exception), or None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, _Refused):
            return current.refused
        if isinstance(current, ToolRefused):
            return current
        current = current.__cause__ or current.__context__
    return None


class _UserSource:
    """The user of a call: the access token's claim, else ``user=``. Given to the Guard as
    its ``user`` callable, so a failure of it refuses (``check_error``)."""

    def __init__(self, user: User, claim: str, token: Callable[[], AccessToken | None]) -> None:
        if not (user is None or callable(user) or (isinstance(user, str) and user.strip())):
            raise TypeError(f"user is the user's name, a callable or None, not {user!r}")
        if not isinstance(claim, str) or not claim.strip():
            raise TypeError(f"claim is the name of an access token claim, not {claim!r}")
        self.user, self.claim, self.token = user, claim, token
        named = f"the access token's {claim!r} claim"
        if callable(user):
            named = f"the user callable {getattr(user, '__qualname__', user)!r}"
        elif isinstance(user, str):
            named += f", else user={user!r}"
        self.__qualname__ = named  # what a no_session refusal says toolpass looked in

    def __call__(self, context: Any) -> Any:
        if callable(self.user):
            return self.user(context)
        token = self.token()
        if token is not None:  # an authenticated request acts for its token's user only
            return user_of_token(token, self.claim)
        return self.user


class _ClientRun:
    """Stands for one client whose requests share no MCP session (``session="run"``)."""

    __slots__ = ("__weakref__",)


class _Core:
    """What the MCP and FastMCP middleware share: the Guard, the user and session of a
    request, and what a refusal becomes."""

    def __init__(
        self,
        engine: PermissionEngine | None,
        rules: Rules | None,
        *,
        strict: bool,
        toolkit: Toolkit | None,
        user: User,
        claim: str,
        session: SessionSource,
        on_refuse: OnRefuse | None,
        token: Callable[[], AccessToken | None],
        client: Client = None,
    ) -> None:
        if not (client is None or callable(client) or (isinstance(client, str) and client)):
            raise TypeError(f"client is a client's name, a callable or None, not {client!r}")
        self.engine, self.client, self.token = engine, client, token
        self._clients: OrderedDict[str, _ClientRun] = OrderedDict()
        self._lock = threading.Lock()
        self._scope = token_hex(8)  # this guard's clients: never another server's
        self.guard = Guard(
            engine,
            rules,
            strict=strict,
            toolkit=toolkit,
            user=_UserSource(user, claim, token),
            session=session,
            on_refuse=on_refuse,
        )
        self.guard.add_tools(dict(_READS), complete=False)
        self._listed: set[str] = set()
        #: The server's tools as they are now (None when it cannot tell): beside those
        #: tools/list showed, what a call of a tool under ``strict`` is told it is unknown by.
        self.known_tools: Callable[[], Collection[str] | None] = lambda: None

    async def call(
        self,
        tool: Any,
        arguments: Any,
        context: Any,
        connection: Any,
        request: Any,
        call_next: Callable[[], Awaitable[Any]],
        refused_as: Callable[[Any, ToolRefused], Any],
        pause: Callable[[ToolRefused], Any] | None = None,
    ) -> Any:
        """Run ``call_next`` (the rest of the server's chain: validation, the tool) inside
        the pipeline; a refusal becomes ``refused_as(what on_refuse made, refusal)``, unless
        ``pause`` answers it (a call waiting for a person). A failure of the guard itself
        refuses; the body's own exceptions stay the server's."""
        guard = self.guard
        name = tool if isinstance(tool, str) else repr(tool)
        args: Mapping[str, Any] = arguments if isinstance(arguments, Mapping) else {}
        raised: list[BaseException] = []

        async def body() -> Any:
            try:
                result = redacted(await call_next(), self.secrets())
            except Exception as exc:
                refused = refusal_in(exc)
                if refused is not None:  # refused inside the body: the call's outcome
                    raise refused from None
                hidden = self.without_secrets(exc)
                raised.append(hidden)
                if hidden is exc:
                    raise
                raise hidden from None
            if _is_error_result(result):
                raised.append(_FailedResult(result))
                raise raised[-1]
            return result

        try:
            with guard.refusing(name, args):  # never run: the application's source failed
                if not isinstance(tool, str) or not (
                    arguments is None or isinstance(arguments, Mapping)
                ):
                    raise ToolRefused(
                        "check_error",
                        "The call's tool or arguments could not be read, so it was not made.",
                        detail=f"tool {tool!r}, arguments of type {type(arguments).__name__}",
                    )
                user = guard.user_of(None, context)
                key = guard.key(*self.keys(connection, request, context), context)
            with guard.refusing(name, args, user):
                self.refuse_unknown(name)
            return await guard.arun(user, name, args, body, key=key)
        except ToolRefused as refused:
            paused = pause(refused) if pause is not None else None
            return self.refusal(refused, refused_as) if paused is None else paused
        except Exception as exc:
            if raised and isinstance(raised[0], _FailedResult):  # audited as an error
                return raised[0].result
            if raised and exc is raised[0]:  # the server's own error: its own handling
                raise
            if raised and hasattr(exc, "original_type"):
                # The body's error, redacted or fenced by the pipeline: the model reads that.
                return refused_as(str(exc), ToolRefused("tool_error", str(exc)))
            log.exception("toolpass: the check of %s failed", name)
            failed = ToolRefused(
                "check_error",
                "toolpass could not check this call, so it was not made. Tell the user.",
                detail=f"{type(exc).__name__}: {exc}",
            )
            return self.refusal(failed, refused_as)

    def refuse_unknown(self, name: str) -> None:
        """Under ``strict``, a call of a tool the server does not have (and no rule names)
        is refused as what it is, an unknown tool, not as a tool without a rule."""
        guard = self.guard
        if not guard.strict or name in _READS or guard.rule(name) is not None:
            return
        known = self.known_tools()
        tools = {*(known or ()), *(self._listed - set(_READS))}
        if (known is not None or self._listed) and name not in tools:
            raise ToolRefused(
                "invalid_arguments",
                f"Unknown tool: {name}. There is no tool of that name here, so the call was "
                "not made. Call one of the tools listed.",
                detail="a tool the server does not have",
            )

    def saw_tools(self, found: dict[str, list[str] | None]) -> None:
        """A listing of the server's tools (name: argument names): the rules checked
        against them again when they changed, each problem a warning."""
        found = {**found, **_READS}
        if set(found) == self._listed:
            return
        self._listed = set(found)
        with warnings.catch_warnings():
            warnings.simplefilter("default")  # a warning must never fail the listing
            self.guard.add_tools(found, late=True)

    def secrets(self) -> tuple[str, ...]:
        """The secrets of the engine's connections, as they resolve now (a rotated token
        too): what a result must not carry back to the client."""
        engine = self.engine
        names = getattr(engine, "connections", ())
        integration = getattr(engine, "integration", None)
        if not callable(integration) or not isinstance(names, tuple | list):
            return ()
        return usable(s for name in names for s in integration(name).secret_values())

    def without_secrets(self, exc: Exception) -> Exception:
        """An ``MCPError`` (passed on to the client as it is) without the connections'
        secrets; any other exception is the server's to mask."""
        secrets = self.secrets() if isinstance(exc, MCPError) else ()
        if not secrets or redact(exc.error, secrets) is exc.error:  # type: ignore[attr-defined]
            return exc
        return MCPError.from_error_data(redact(exc.error, secrets))  # type: ignore[attr-defined]

    def keys(self, connection: Any, request: Any, context: Any) -> tuple[Any, Any]:
        """The ``(run, conversation)`` a request's session is kept under: its MCP session
        (``Mcp-Session-Id``); else its connection, when the connection lasts beyond the
        request (stdio, in memory); else (the 2026-07-28 protocol, stateless HTTP: a
        connection per request) its client: ``client=``, else the access token's
        ``client_id``, else the one client of this server."""
        session_id = getattr(connection, "session_id", None)
        if isinstance(session_id, str) and session_id:
            return connection, session_id
        version = getattr(connection, "protocol_version", None)
        if request is None and version not in MODERN_PROTOCOL_VERSIONS:
            return connection, None
        name = self.client_of(context)
        with self._lock:
            run = self._clients.pop(name, None) or _ClientRun()
            self._clients[name] = run
            if len(self._clients) > self.guard.held_sessions:
                self._clients.popitem(last=False)
        return run, f"mcp-client {self._scope} {name}"

    def client_of(self, context: Any) -> str:
        client = self.client
        try:
            name = client(context) if callable(client) else client
        except Exception as exc:
            raise ToolRefused(
                "check_error",
                "The session of this call could not be found, so it was not made. Tell the user.",
                detail=f"client raised {type(exc).__name__}: {exc}",
            ) from None
        if name is None:
            token = self.token()
            name = token.client_id if token is not None else "(this server's client)"
        if not isinstance(name, str) or not name:
            raise ToolRefused(
                "check_error",
                "The session of this call could not be found, so it was not made. Tell the user.",
                detail=f"client gave {name!r}, not a client's name",
            )
        return name

    async def resumed(
        self, approvals: Approvals, state: str, tool: Any, arguments: Any, context: Any
    ) -> Any:
        """The arguments a retry after the approvals page runs with (``Approvals.resumed``);
        its refusal (a state forged or altered, a request expired) audited by the guard."""
        try:
            user = self.guard.user_of(None, context)
        except ToolRefused:
            user = None
        args = arguments if isinstance(arguments, Mapping) else {}
        with self.guard.refusing(str(tool), args, user):
            return await approvals.resumed(state, tool, arguments)

    def refusal(self, refused: ToolRefused, refused_as: Callable[[Any, ToolRefused], Any]) -> Any:
        """What the client reads for ``refused``: ``on_refuse``'s text (or result) made a
        failed tool result, or an ``MCPError`` when ``on_refuse`` is None. An ``on_refuse``
        that fails or gives nothing gives the refusal's own text."""
        on_refuse = self.guard.on_refuse
        if on_refuse is None:
            raise MCPError(REFUSED, refusal_text(refused), {"code": refused.code})
        try:
            made = on_refuse(refused)
        except MCPError:
            raise
        except Exception:
            log.exception("toolpass: on_refuse failed; the model reads the refusal's text")
            made = None
        if made is None:
            made = refusal_text(refused)
        return refused_as(made, refused)


def redacted(value: Any, secrets: tuple[str, ...]) -> Any:
    """A server's result without ``secrets``: in its text (``redact``), in the base64 of its
    images, audio and binary resources (which the client decodes), and in the text of a list
    of content blocks (which the client's model reads as one text)."""
    if not secrets:
        return value
    return redact(_decoded(value, secrets, 0), secrets)


#: The base64 field of a binary content block, by its model or its ``type``.
_PAYLOADS: dict[Any, str] = {
    ImageContent: "data",
    AudioContent: "data",
    BlobResourceContents: "blob",
    "image": "data",
    "audio": "data",
}
_DEPTH = 32


def _decoded(value: Any, secrets: tuple[str, ...], depth: int) -> Any:
    """``value`` with the secrets redacted in its base64 payloads and split text blocks
    (the same object when there are none)."""
    if depth > _DEPTH or isinstance(value, str | bytes):
        return value
    d = depth + 1
    if isinstance(value, list):
        items = _one_text([_decoded(v, secrets, d) for v in value], secrets)
        same = len(items) == len(value) and all(a is b for a, b in zip(items, value, strict=True))
        return value if same else items
    if isinstance(value, Mapping):
        field = _PAYLOADS.get(value.get("type")) or ("blob" if "blob" in value else None)
        changed = {k: _decoded(v, secrets, d) for k, v in value.items()}
        if field is not None and isinstance(value.get(field), str):
            changed[field] = _unencoded(value[field], secrets)
        same = all(changed[k] is v for k, v in value.items())
        return value if same else changed
    fields = getattr(type(value), "model_fields", None)
    if not isinstance(fields, Mapping) or not callable(getattr(value, "model_copy", None)):
        return value
    update = {name: _decoded(getattr(value, name, None), secrets, d) for name in fields}
    field = _PAYLOADS.get(type(value))
    if field is not None and isinstance(getattr(value, field, None), str):
        update[field] = _unencoded(getattr(value, field), secrets)
    update = {k: v for k, v in update.items() if v is not getattr(value, k, None)}
    return value.model_copy(update=update) if update else value


def _unencoded(data: str, secrets: tuple[str, ...]) -> str:
    """Base64 ``data`` with the secrets redacted in what it decodes to (itself when it
    holds none; the redaction mark when it is not base64)."""
    try:
        raw = base64.b64decode(data)
    except (binascii.Error, ValueError):
        return REDACTED if any(s in data for s in secrets) else data
    clean = raw
    for secret in secrets:
        clean = clean.replace(secret.encode(), REDACTED.encode())
    return data if clean == raw else base64.b64encode(clean).decode("ascii")


def _text_of(block: Any) -> str | None:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, Mapping) and block.get("type") == "text":
        text = block.get("text")
        return text if isinstance(text, str) else None
    return None


def _one_text(blocks: list[Any], secrets: tuple[str, ...]) -> list[Any]:
    """Content blocks whose text, joined, holds a secret split across them: those text
    blocks made one, in place of the first, redacted; otherwise the blocks as they are."""
    texts = [t for t in map(_text_of, blocks) if t is not None]
    each_redacted = "".join(redact_text(t, secrets) for t in texts)
    if len(texts) < 2 or not any(s in each_redacted for s in secrets):
        return blocks  # no secret, or none but whole ones in single blocks
    first = next(i for i, b in enumerate(blocks) if _text_of(b) is not None)
    one: Any = TextContent(type="text", text=redact_text(each_redacted, secrets))
    if isinstance(blocks[first], Mapping):
        one = {"type": "text", "text": one.text}
    return [
        one if i == first else b for i, b in enumerate(blocks) if _text_of(b) is None or i == first
    ]


def _as_mcp_result(made: Any, refused: ToolRefused) -> Any:
    if isinstance(made, CallToolResult | Mapping):
        return made
    return refusal_result(made if isinstance(made, str) else str(made), refused)


def _as_mcp_error(made: Any, refused: ToolRefused) -> Any:
    text = made if isinstance(made, str) else refusal_text(refused)
    raise MCPError(REFUSED, text, {"code": refused.code})


def _connection_of(session: Any) -> Any:
    """The client connection a request came on (one per client session on stdio, legacy
    in-memory and stateful HTTP; one per request on the stateless 2026-07-28 protocol)."""
    return getattr(session, "_connection", None) or session


class ToolpassMiddleware:
    """MCP Python SDK 2.x server middleware (``ServerMiddleware``) checking every
    ``tools/call`` with toolpass; every other message passes through. Made by ``guard``."""

    def __init__(self, core: _Core, server: Any = None, approvals: Approvals | None = None) -> None:
        self._core = core
        self.guard = core.guard
        #: The low-level server whose ``server_info_stamp`` a 2026-07-28 result carries.
        self.server = server
        #: Where a call waiting for a person sends the client (``guard``'s ``approvals_url``).
        self.approvals = approvals or Approvals(core.guard, None, None, 0)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method == "tools/call":
            called: HandlerResult = await self._call(ctx, call_next)
            return called
        if ctx.method in CHECKED or (ctx.method in GATED and self._gated(ctx.method)):
            read: HandlerResult = await self._read(ctx, call_next)
            return read
        if ctx.method == "subscriptions/listen" and self._gated("resources/subscribe"):
            await self._watches(ctx)
        result = await call_next(ctx)
        if ctx.method == "tools/list":
            try:
                self._saw_tools(result)
            except Exception:  # only a check of the rules: never fail the listing
                log.exception("toolpass: could not check the rules against the tools")
        return result

    async def _call(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        params: Any = ctx.params if isinstance(ctx.params, Mapping) else {}
        name, arguments = params.get("name"), params.get("arguments")
        state = params.get("requestState")
        resumed = isinstance(state, str) and state.startswith(PREFIX)
        if resumed:  # a retry after the approvals page: the state is ours, not the tool's
            params = {k: v for k, v in params.items() if k not in _RESUME_FIELDS}
            try:
                arguments = await self._core.resumed(self.approvals, state, name, arguments, ctx)
            except ToolRefused as refused:
                return self._on_the_wire(ctx, self._core.refusal(refused, _as_mcp_result))
            params = {**params, "arguments": arguments}
            ctx = dataclasses.replace(ctx, params=params)
        session, pause = ctx.session, None
        if not resumed and self.approvals.url is not None:  # URL elicitation: to the page
            caps = getattr(session, "client_capabilities", None)
            pause = self.approvals.pauser(caps, name, arguments, ctx.protocol_version, session)
        result = await self._core.call(
            name,
            arguments,
            ctx,
            _connection_of(ctx.session),
            ctx.request,
            lambda: call_next(ctx),
            _as_mcp_result,
            pause,
        )
        if isinstance(result, str):  # the pipeline fenced an untrusted result: text
            result = CallToolResult(content=[TextContent(type="text", text=result)])
        return self._on_the_wire(ctx, result)

    def _on_the_wire(self, ctx: ServerRequestContext[Any, Any], result: Any) -> Any:
        """A result the middleware made (a refusal, a fenced text) shaped as the server
        shapes its own for the connection's protocol version: only that version's fields
        (no ``resultType`` on a 2025 connection), and on 2026-07-28 its ``resultType`` and
        the server's ``serverInfo`` in ``_meta``. A result of the server's is already."""
        if not isinstance(result, CallToolResult | Mapping) or isinstance(result, dict):
            return result  # the server's wire dict (call_next's), or the unexpected
        version = ctx.protocol_version
        dumped = (
            result.model_dump(by_alias=True, mode="json", exclude_none=True)
            if isinstance(result, CallToolResult)
            else dict(result)
        )
        try:
            dumped = serialize_server_result("tools/call", version, dumped)
        except (KeyError, ValueError):  # a version or shape the SDK does not know: as it is
            return dumped
        if version in MODERN_PROTOCOL_VERSIONS:
            dumped.setdefault("resultType", "complete")
            meta = dumped.get("_meta")
            stamp = getattr(self.server, "server_info_stamp", None)
            if stamp is not None and isinstance(meta, dict | None):
                dumped["_meta"] = {SERVER_INFO_META_KEY: stamp, **(meta or {})}
        return dumped

    async def _read(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        """``resources/read``, ``prompts/get`` (and a ``GATED`` message): checked as a call
        of the tool named by the method, whose arguments are the message's (``uri``; ``name``
        and ``arguments``; ``ref``, ``argument`` and ``value``); refused as a JSON-RPC error,
        as these have no failed result."""
        params: Any = ctx.params if isinstance(ctx.params, Mapping) else {}
        if ctx.method == "completion/complete":
            params = _completion_of(params)
        arguments = {name: params.get(name) for name in _READS[ctx.method] or ()}
        return await self._core.call(
            ctx.method,
            arguments,
            ctx,
            _connection_of(ctx.session),
            ctx.request,
            lambda: call_next(ctx),
            _as_mcp_error,
        )

    async def _watches(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """A ``subscriptions/listen`` stream's ``resourceSubscriptions`` (2026-07-28), each
        checked as a ``resources/subscribe`` of its URI, before the stream opens; a refusal
        is a JSON-RPC error, as a subscription's."""
        params: Any = ctx.params if isinstance(ctx.params, Mapping) else {}
        wanted = params.get("notifications")
        uris = wanted.get("resourceSubscriptions") if isinstance(wanted, Mapping) else None
        for uri in uris if isinstance(uris, list) else []:
            await self._core.call(
                "resources/subscribe",
                {"uri": uri},
                ctx,
                _connection_of(ctx.session),
                ctx.request,
                _nothing,
                _as_mcp_error,
            )

    def _gated(self, method: str) -> bool:
        return self.guard.strict or self.guard.rule(method) is not None

    def _saw_tools(self, result: Any) -> None:
        tools = (
            result.get("tools") if isinstance(result, Mapping) else getattr(result, "tools", None)
        )
        if not isinstance(tools, list):
            return
        found: dict[str, list[str] | None] = {}
        for tool in tools:
            name = tool.get("name") if isinstance(tool, Mapping) else getattr(tool, "name", None)
            schema = (
                tool.get("inputSchema")
                if isinstance(tool, Mapping)
                else getattr(tool, "input_schema", None)
            )
            if isinstance(name, str):
                found[name] = _arguments_of(schema)
        self._core.saw_tools(found)


async def _nothing() -> None:
    """The body of a check that runs nothing itself (the stream opens after it)."""


def _completion_of(params: Mapping[str, Any]) -> dict[str, Any]:
    """A completion's arguments as a rule reads them: ``ref`` (the prompt's name or the
    template's URI), ``argument`` (its name) and ``value`` (what the user typed)."""
    ref, argument = params.get("ref"), params.get("argument")
    ref = ref if isinstance(ref, Mapping) else {}
    argument = argument if isinstance(argument, Mapping) else {}
    return {
        "ref": ref.get("name") if ref.get("type") == "ref/prompt" else ref.get("uri"),
        "argument": argument.get("name"),
        "value": argument.get("value"),
    }


def _arguments_of(schema: Any) -> list[str] | None:
    """The argument names of a tool's JSON schema (None when it names none)."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    return list(properties) if isinstance(properties, Mapping) else None


def guard(
    server: Any,
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
) -> Any:
    """Check every ``tools/call`` (and ``resources/read``, ``prompts/get``) of ``server``
    with toolpass; returns the middleware added.

    ``server`` is an MCP SDK 2.x ``MCPServer`` or low-level ``Server`` (toolpass joins the
    end of ``server.middleware``: innermost, so it checks the arguments the tool receives;
    guard after adding your own middleware), or a ``fastmcp`` server (a ``FastMCPGuard`` is
    added with ``add_middleware``). ``rules`` maps a tool name (or a tuple of names) to a
    ``Rule(connection, action, resource_template)`` or a tuple; the resource is filled from
    the call's arguments. With ``strict=True`` a tool without a rule is refused; otherwise it
    runs unchecked (in a session, audited). ``user``: who a request without an access token
    acts for (the user's name, for a stdio server run for one person; or a callable given the
    request's context); a request with a token acts for its ``claim``.

    ``session``: what one session (its limits, its record of untrusted content, a call
    waiting for approval) lasts for: ``"conversation"`` (the client's MCP session,
    ``Mcp-Session-Id``, on stateful streamable HTTP), ``"run"`` (the connection), or a callable
    given the request's context. Where a connection is one request (the 2026-07-28 protocol
    the SDK negotiates by default, stateless HTTP), both mean the client: ``client`` (its name,
    or a callable given the request's context), else the access token's ``client_id``, else
    this server's one client (right for stdio). A session is reset by a new MCP session or
    connection, by the server's restart, or once it is not among the toolkit's most recently
    used sessions (``Guard.held_sessions``). ``resources/read`` and ``prompts/get`` are checked
    as calls of tools of those names (arguments ``uri``; ``name`` and ``arguments``): a rule
    may name them, ``strict=True`` refuses them without one. ``completion/complete``
    (arguments ``ref``, ``argument``, ``value``) and ``resources/subscribe`` (``uri``; also
    each resource a 2026-07-28 ``subscriptions/listen`` stream watches) are checked so where
    a rule names them or under ``strict``. Results (and errors) reach the
    client without the engine's connections' secrets. ``on_refuse`` makes the text the model
    reads (or a ``CallToolResult``); None makes a refusal a JSON-RPC error instead of a tool
    result.

    A call waiting for a person's approval (the toolkit's approver an ``ApprovalQueue``)
    sends a client that declared URL-mode elicitation to ``approvals_url`` (the approvals
    page, ``https://toolpass.example.com/approvals``; the request's ``?id=`` is added): on
    2026-07-28 connections an ``InputRequiredResult`` whose ``request_state`` is signed with
    ``approval_key`` (at least 32 bytes; None: a key kept in the queue's store) over the
    request id and a digest of the call; on the 2025 versions the error -32042. The client's
    retry runs the whole check again and the queue's record decides (a person's edit runs
    with the person's arguments); a retry after the client opened the page waits up to
    ``approval_wait`` seconds for the decision. Other clients, or no ``approvals_url``: the
    refusal's text. Every option is checked here.
    """
    if _is_fastmcp(server):
        from toolpass.mcp._fastmcp import FastMCPGuard

        middleware: Any = FastMCPGuard(
            engine,
            rules,
            strict=strict,
            toolkit=toolkit,
            user=user,
            claim=claim,
            session=session,
            on_refuse=on_refuse,
            client=client,
            approvals_url=approvals_url,
            approval_key=approval_key,
            approval_wait=approval_wait,
        )
        server.add_middleware(middleware)
        return middleware
    chain = getattr(server, "middleware", None)
    if not isinstance(chain, list):
        raise TypeError(
            "server is an MCP SDK 2.x MCPServer or Server (with a middleware list) or a "
            f"fastmcp server, not {type(server).__name__}"
        )
    core = _Core(
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
    core.guard.add_tools(_known_tools(server), complete=False)
    if getattr(server, "_tool_manager", None) is not None:
        core.known_tools = lambda: _known_tools(server)
    _surface_body_refusals(server)
    approvals = Approvals(core.guard, approvals_url, approval_key, approval_wait)
    added = ToolpassMiddleware(core, getattr(server, "_lowlevel_server", server), approvals)
    chain.append(added)
    return added


def _is_fastmcp(server: Any) -> bool:
    return any(c.__module__.split(".")[0] == "fastmcp" for c in type(server).__mro__) and callable(
        getattr(server, "add_middleware", None)
    )


def _known_tools(server: Any) -> dict[str, list[str] | None]:
    """The tools an MCPServer has now (more may be added later)."""
    manager = getattr(server, "_tool_manager", None)
    listed = getattr(manager, "list_tools", None)
    if not callable(listed):
        return {}
    found: dict[str, list[str] | None] = {}
    for tool in listed():
        parameters = getattr(tool, "parameters", None)
        properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
        found[str(tool.name)] = list(properties) if isinstance(properties, Mapping) else None
    return found


def _surface_body_refusals(server: Any) -> None:
    """MCPServer turns any exception of a tool other than ``MCPError`` into a masked "Error
    executing tool"; its ``call_tool`` is wrapped so a toolpass refusal raised in the body
    passes MCP's handling, as ``_Refused``, to the guard, which gives the model its reason."""
    call_tool = getattr(server, "call_tool", None)
    if not callable(call_tool) or getattr(call_tool, "_toolpass", False):
        return

    async def surfaced(*args: Any, **kwargs: Any) -> Any:
        try:
            return await call_tool(*args, **kwargs)
        except MCPError:
            raise
        except Exception as exc:
            refused = refusal_in(exc)
            if refused is None:
                raise
            raise _Refused(refused) from None

    surfaced._toolpass = True  # type: ignore[attr-defined]
    setattr(server, "call_tool", surfaced)  # noqa: B010


def __getattr__(name: str) -> Any:
    if name == "FastMCPGuard":  # needs the fastmcp package: imported when asked for
        from toolpass.mcp._fastmcp import FastMCPGuard

        return FastMCPGuard
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
