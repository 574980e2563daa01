"""``Toolkit``, ``configure`` and the ``secured_tool`` decorator."""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from toolpass.intercept.entitlements import Entitlements, Recorder
from toolpass.intercept.router import Router
from toolpass.rules.scope import ScopeRule, compile_scope
from toolpass.toolkit.approval import ApprovalQueue
from toolpass.toolkit.arguments import Binder
from toolpass.toolkit.audit import AuditSink, JsonlSink, LogSink
from toolpass.toolkit.drivers import run_async, run_sync
from toolpass.toolkit.errors import ToolRefused
from toolpass.toolkit.pipeline import steps
from toolpass.toolkit.spec import ToolSpec

F = TypeVar("F", bound=Callable[..., Any])
Approver = ApprovalQueue | Callable[..., Any]
Credentials = Mapping[str, Any] | Callable[[str], Any]
_UNSET: Any = object()
_MODES = {
    "on_untrusted_input": ("refuse", "approve"),
    "untrusted_inputs": ("check", "approve", "ignore"),
    "exfiltration": ("approve", "refuse"),
    "unknown_host": ("allow", "refuse_writes", "refuse"),
}


def _untrusted_mode(untrusted_inputs: str | None, on_untrusted_input: str | None) -> str | None:
    """``untrusted_inputs``, or the older ``on_untrusted_input`` read as it ("refuse" is
    "check")."""
    _check_mode("untrusted_inputs", untrusted_inputs)
    _check_mode("on_untrusted_input", on_untrusted_input)
    if untrusted_inputs is not None:
        return untrusted_inputs
    if on_untrusted_input is not None:
        return "check" if on_untrusted_input == "refuse" else on_untrusted_input
    return None


def _check_mode(name: str, value: str | None) -> None:
    if value is not None and value not in _MODES[name]:
        raise ValueError(f"{name} must be one of {', '.join(_MODES[name])}, not {value!r}")


def _caps(name: str, caps: Mapping[str, int] | None) -> dict[str, int]:
    caps = dict(caps or {})
    for key, cap in caps.items():
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise ValueError(f"{name}[{key!r}] must be a whole number >= 0, not {cap!r}")
    return caps


def _sink(sink: Any) -> AuditSink:
    """An audit sink: a callable, a path (JSON lines) or a ``logging.Logger``."""
    if isinstance(sink, (str, os.PathLike)):
        return JsonlSink(sink)
    if isinstance(sink, logging.Logger):
        return LogSink(sink)
    if not callable(sink):
        raise TypeError(f"an audit sink is a callable, a file path or a Logger, not {sink!r}")
    return sink  # type: ignore[no-any-return]


class Toolkit:
    """Settings shared by a set of tools; tools read them at call time.

    ``approver``: an ``ApprovalQueue`` or a callable ``(request) -> True | False | None``.
    ``credentials``: a mapping of name to secret (or to a callable or secret reference giving
    it), or a callable ``(name) -> secret``. ``limits``: calls per session by effect
    (``{"destructive": 3}``, or ``"tool:name"``/``"effect:name"`` keys); ``tool_limits``: by
    tool name. ``audit``: sinks (callables taking an ``AuditEvent``, file paths written as JSON
    lines, or ``logging.Logger``s; ``LogSink()`` by default). ``on_refuse``: turns a refusal
    into the tool's result (``str`` gives the model the message). ``exfiltration``:
    ``"approve"`` or ``"refuse"``. ``untrusted_inputs``: what happens when the arguments of a
    call that changes or sends something repeat untrusted text seen in the session:
    ``"check"`` (refused), ``"approve"`` (a person must approve) or ``"ignore"``
    (``on_untrusted_input`` is its older name: ``"refuse"`` or ``"approve"``).

    The request hook: ``permissions`` (a ``Toolpass``) checks every HTTP request a tool's body
    sends; ``act_as`` (``"user"`` or ``"agent"``) is whose authority requests are made on
    outside ``as_user()``/``as_agent()``; ``unknown_host`` says what happens to a request to a
    host no connection owns: ``"allow"`` (the default: it goes, and a write is audited with a
    warning), ``"refuse_writes"`` or ``"refuse"``; ``strict`` means ``unknown_host="refuse"``
    (and, with ``entitlements``, refuses tools missing from the file); ``strict_threads``
    refuses requests sent while a call runs from a thread that belongs to no call (a pool
    started before it); ``record`` writes what tools do to a file, and ``entitlements`` holds
    tools to such a file.
    """

    def __init__(
        self,
        *,
        approver: Approver | None = None,
        credentials: Credentials | None = None,
        limits: Mapping[str, int] | None = None,
        tool_limits: Mapping[str, int] | None = None,
        audit: AuditSink | list[AuditSink] | tuple[AuditSink, ...] | None = None,
        on_refuse: Callable[[ToolRefused], Any] | None = None,
        exfiltration: str = "approve",
        on_untrusted_input: str | None = None,
        untrusted_inputs: str | None = None,
        permissions: Any = None,
        act_as: str = "user",
        strict: bool = False,
        unknown_host: str = "allow",
        strict_threads: bool = False,
        record: str | os.PathLike[str] | None = None,
        entitlements: str | os.PathLike[str] | None = None,
    ) -> None:
        self.approver: Approver | None = None
        self.credentials: Credentials | None = None
        self.limits: dict[str, int] = {}
        self.tool_limits: dict[str, int] = {}
        self.sinks: tuple[AuditSink, ...] = (LogSink(),)
        self.on_refuse: Callable[[ToolRefused], Any] | None = None
        self.exfiltration = "approve"
        self.untrusted_inputs = "check"
        self.permissions: Any = None
        self.act_as = "user"
        self.strict = False
        self.unknown_host = "allow"
        self.strict_threads = False
        self.recorder: Recorder | None = None
        self.entitlements: Entitlements | None = None
        self._router: Router | None = None
        self.configure(
            approver=approver,
            credentials=credentials,
            limits=limits,
            tool_limits=tool_limits,
            audit=audit,
            on_refuse=on_refuse,
            exfiltration=exfiltration,
            on_untrusted_input=on_untrusted_input,
            untrusted_inputs=untrusted_inputs,
            permissions=permissions,
            act_as=act_as,
            strict=strict,
            unknown_host=unknown_host,
            strict_threads=strict_threads,
            record=record,
            entitlements=entitlements,
        )

    def configure(
        self,
        *,
        approver: Approver | None = _UNSET,
        credentials: Credentials | None = _UNSET,
        limits: Mapping[str, int] | None = _UNSET,
        tool_limits: Mapping[str, int] | None = _UNSET,
        audit: AuditSink | list[AuditSink] | tuple[AuditSink, ...] | None = _UNSET,
        on_refuse: Callable[[ToolRefused], Any] | None = _UNSET,
        exfiltration: str = _UNSET,
        on_untrusted_input: str | None = _UNSET,
        untrusted_inputs: str | None = _UNSET,
        permissions: Any = _UNSET,
        act_as: str = _UNSET,
        strict: bool = _UNSET,
        unknown_host: str = _UNSET,
        strict_threads: bool = _UNSET,
        record: str | os.PathLike[str] | None = _UNSET,
        entitlements: str | os.PathLike[str] | None = _UNSET,
    ) -> Toolkit:
        """Change settings; what is not named stays as it is. Takes effect on the next call."""
        if approver is not _UNSET:
            if approver is not None and not (
                isinstance(approver, ApprovalQueue) or callable(approver)
            ):
                raise TypeError("approver must be an ApprovalQueue or a callable")
            self.approver = approver
        if credentials is not _UNSET:
            if credentials is not None and not (
                isinstance(credentials, Mapping) or callable(credentials)
            ):
                raise TypeError("credentials must be a mapping of name to secret, or a callable")
            self.credentials = credentials
        if tool_limits is not _UNSET:
            self.tool_limits = _caps("tool_limits", tool_limits)
        if limits is not _UNSET:
            # "effect:write" and "tool:open_pr" say which they mean; a plain key is an effect
            # (or, when no call has that effect, the name of a tool).
            caps = _caps("limits", limits)
            self.limits = {
                k.removeprefix("effect:"): v for k, v in caps.items() if not k.startswith("tool:")
            }
            self.tool_limits.update({k[5:]: v for k, v in caps.items() if k.startswith("tool:")})
        if audit is not _UNSET:
            given = () if audit is None else audit if isinstance(audit, (list, tuple)) else (audit,)
            self.sinks = tuple(_sink(s) for s in given) or (LogSink(),)
        if on_refuse is not _UNSET:
            self.on_refuse = on_refuse
        if exfiltration is not _UNSET:
            _check_mode("exfiltration", exfiltration)
            self.exfiltration = exfiltration
        if untrusted_inputs is not _UNSET or on_untrusted_input is not _UNSET:
            mode = _untrusted_mode(
                None if untrusted_inputs is _UNSET else untrusted_inputs,
                None if on_untrusted_input is _UNSET else on_untrusted_input,
            )
            self.untrusted_inputs = mode or "check"
        if act_as is not _UNSET:
            if act_as not in ("user", "agent"):
                raise ValueError(f"act_as must be 'user' or 'agent', not {act_as!r}")
            self.act_as = act_as
        if strict is not _UNSET:
            self.strict = bool(strict)
            if self.strict:
                self.unknown_host = "refuse"
        if unknown_host is not _UNSET:
            _check_mode("unknown_host", unknown_host)
            self.unknown_host = unknown_host
            if unknown_host != "refuse" and strict is _UNSET:
                self.strict = False
        if strict_threads is not _UNSET:
            self.strict_threads = bool(strict_threads)
        if record is not _UNSET:
            self.recorder = None if record is None else Recorder(record)
        if entitlements is not _UNSET:
            self.entitlements = None if entitlements is None else Entitlements.load(entitlements)
        if permissions is not _UNSET:
            if permissions is not None and not callable(getattr(permissions, "check", None)):
                raise TypeError("permissions must be a permission engine (toolpass.Toolpass)")
            self.permissions = permissions
            self._router = None
            if permissions is not None:
                from toolpass import intercept
                from toolpass.intercept.check import installed_by

                intercept.install()
                installed_by.append(self)
        return self

    @property
    def router(self) -> Router:
        """Which connection of ``permissions`` a request's URL belongs to (built once)."""
        if self._router is None:
            engine = self.permissions
            ids = getattr(engine, "connections", ())
            self._router = Router((cid, engine.integration(cid)) for cid in ids)
        return self._router

    @overload
    def secured_tool(self, fn: F, /) -> F: ...
    @overload
    def secured_tool(self, fn: None = None, /, **options: Any) -> Callable[[F], Any]: ...

    def secured_tool(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """Decorate a function so every call passes the pipeline (see ``secured_tool``)."""
        if fn is not None:
            return _secure(fn, self, **options)
        return lambda f: _secure(f, self, **options)

    def tool(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """A tool that declares what it does by what it does; its effect is not declared."""
        options.setdefault("effect", None)
        return self.secured_tool(fn, **options)


def _by_call_or_arguments(hook: Any, names: frozenset[str]) -> Any:
    """Hooks are given the call (``hook(call)``), or, when every parameter they declare names
    an argument of the tool (or they take ``**kwargs``), the arguments themselves
    (``approve=lambda amount: amount > 1000``)."""
    if not inspect.isfunction(hook) and not inspect.ismethod(hook):
        return hook  # True/False/None, a PermissionCheck, an object with __call__
    params = list(inspect.signature(hook).parameters.values())
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    named = [p.name for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD]
    by_name = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if not params or not all(
        p.kind is inspect.Parameter.VAR_KEYWORD or (p.name in names and p.kind in by_name)
        for p in params
    ):
        return hook

    def pick(call: Any) -> dict[str, Any]:
        args = call.arguments
        return dict(args) if takes_all else {n: args[n] for n in named if n in args}

    if inspect.iscoroutinefunction(hook):

        async def async_hook(call: Any) -> Any:
            return await hook(**pick(call))

        return async_hook
    return functools.wraps(hook)(lambda call: hook(**pick(call)))


def _secure(
    fn: Callable[..., Any],
    kit: Toolkit,
    *,
    effect: str | None = "write",
    name: str | None = None,
    scope: Mapping[str, ScopeRule] | None = None,
    validators: Mapping[str, Callable[[Any], Any]] | None = None,
    limit: int | None = None,
    authorize: Callable[..., Any] | None = None,
    approve: bool | Callable[..., Any] = False,
    preview: Callable[..., Any] | None = None,
    credential: str | None = None,
    reads_private: bool = False,
    untrusted_output: bool = False,
    sends_out: bool = False,
    on_untrusted_input: str | None = None,
    untrusted_inputs: str | None = None,
    exfiltration: str | None = None,
    resources: ScopeRule | None = None,
    on_refuse: Callable[[ToolRefused], Any] | None = _UNSET,
    as_tool: Callable[[Callable[..., Any]], Any] | None = None,
) -> Any:
    if not callable(fn):
        raise TypeError(f"secured_tool decorates a function, not {fn!r}")
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(f"{fn.__name__}: a tool cannot be a generator; return a list instead")
    if effect is not None and (not isinstance(effect, str) or not effect.isidentifier()):
        raise ValueError(
            f"effect must be a name like 'read', 'write' or 'destructive', not {effect!r}"
        )
    untrusted_mode = _untrusted_mode(untrusted_inputs, on_untrusted_input)
    _check_mode("exfiltration", exfiltration)
    if limit is not None:
        _caps("limit", {"": limit})
    tool_name = name or fn.__name__
    signature = inspect.signature(fn)
    params = signature.parameters
    if credential is not None:
        p = params.get("credential")
        if p is None or p.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(
                f"{tool_name}: credential={credential!r} needs a keyword-only "
                "parameter `*, credential: str` to receive it"
            )
        signature = signature.replace(
            parameters=[q for q in params.values() if q.name != "credential"]
        )
    binder = Binder(signature)
    for label, names in (("scope", scope or {}), ("validators", validators or {})):
        unknown = [n for n in names if n not in binder.names]
        if unknown:
            raise TypeError(
                f"{tool_name}: {label} names {', '.join(unknown)}, which it does not take"
            )
    is_async = inspect.iscoroutinefunction(fn)
    for arg, validator in (validators or {}).items():
        if not callable(validator):
            raise TypeError(f"{tool_name}: the validator for {arg!r} is not callable")
        if inspect.iscoroutinefunction(validator) and not is_async:
            raise TypeError(f"{tool_name}: the validator for {arg!r} is async, so the tool must be")
    authorize, approve, preview = (
        _by_call_or_arguments(hook, binder.names) for hook in (authorize, approve, preview)
    )
    spec = ToolSpec(
        fn,
        toolkit=kit,
        name=tool_name,
        effect=effect,
        binder=binder,
        scope=tuple((n, compile_scope(r)) for n, r in (scope or {}).items()),
        validators=tuple((validators or {}).items()),
        limit=limit,
        authorize=authorize,
        approve=approve,
        preview=preview,
        credential=credential,
        reads_private=reads_private,
        untrusted_output=untrusted_output,
        sends_out=sends_out,
        untrusted_inputs=untrusted_mode,
        exfiltration=exfiltration,
        resources=None if resources is None else compile_scope(resources),
    )
    bind = getattr(authorize, "bind", None)
    if callable(bind):
        bind(spec)

    def refused(exc: ToolRefused) -> Any:
        handler = kit.on_refuse if on_refuse is _UNSET else on_refuse
        if handler is None and as_tool is not None and on_refuse is _UNSET:
            # Inside a framework the model must read the refusal, and most frameworks mask
            # or re-raise a tool's exception: the refusal becomes the tool's result.
            handler = str
        if handler is None:
            raise exc
        return handler(exc)

    wrapper: Callable[..., Any]
    if is_async:

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return await run_async(steps(spec, args, kwargs))
            except ToolRefused as exc:
                return refused(exc)
    else:

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return run_sync(steps(spec, args, kwargs))
            except ToolRefused as exc:
                return refused(exc)

    functools.update_wrapper(wrapper, fn)
    declared: Any = wrapper  # a function object: it takes the attributes below
    declared.__signature__ = signature
    declared.__toolpass__ = spec
    if name:
        wrapper.__name__ = name
    if "credential" in getattr(wrapper, "__annotations__", {}):
        wrapper.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != "credential"}
    return as_tool(wrapper) if as_tool is not None else wrapper


default_toolkit = Toolkit()


def configure(**settings: Any) -> Toolkit:
    """Configure the default toolkit (see ``Toolkit``); tools declared earlier follow."""
    return default_toolkit.configure(**settings)


def secured_tool(
    fn: Callable[..., Any] | None = None, /, *, toolkit: Toolkit | None = None, **options: Any
) -> Any:
    """Put every check in front of a function.

    ``effect`` (``"read"``, ``"write"``, ``"destructive"``, ...; ``"write"`` by default),
    ``scope={"arg": glob | [globs] | predicate}``, ``validators={"arg": fn}``, ``limit=``
    calls per session, ``authorize=`` (any callable returning a decision; see
    ``permission_check``), ``approve=True`` or a rule ``(call) -> reason | None``,
    ``preview=(call) -> str``, ``credential="name"`` (injected as the keyword-only
    ``credential`` parameter), ``reads_private``, ``untrusted_output``, ``sends_out``,
    ``untrusted_inputs`` (``"check"``, ``"approve"`` or ``"ignore"``), ``exfiltration``,
    ``on_refuse``, ``as_tool=`` (a framework's tool decorator applied on top; a refusal then
    becomes the tool's result unless ``on_refuse`` says otherwise), ``resources=`` (globs on
    what the body's requests act on), ``name``.
    """
    return (toolkit or default_toolkit).secured_tool(fn, **options)


def tool(
    fn: Callable[..., Any] | None = None, /, *, toolkit: Toolkit | None = None, **options: Any
) -> Any:
    """Like ``secured_tool`` for a tool that declares no effect: it is judged by what it does."""
    return (toolkit or default_toolkit).tool(fn, **options)
