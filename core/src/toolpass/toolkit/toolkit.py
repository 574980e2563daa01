"""``Toolkit``, ``configure`` and the ``secured_tool`` decorator."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from toolpass.intercept.entitlements import Recorder
from toolpass.intercept.router import Router
from toolpass.outcome.errors import ToolRefused
from toolpass.rules.scope import compile_scope
from toolpass.rules.validators import is_destination
from toolpass.toolkit.arguments import Binder
from toolpass.toolkit.drivers import run_async, run_sync
from toolpass.toolkit.pipeline import steps
from toolpass.toolkit.session import Conversations
from toolpass.toolkit.settings import (
    MODES,
    AuditSink,
    Settings,
    ToolkitOptions,
    ToolOptions,
    caps,
    check_mode,
    untrusted_mode,
)
from toolpass.toolkit.spec import Declared, ToolSpec
from toolpass.toolkit.task import ToolInfo

if TYPE_CHECKING:
    from typing_extensions import Unpack

_UNSET: Any = object()
_ALIASES = {"sinks": "audit", "recorder": "record"}

P = ParamSpec("P")
R = TypeVar("R")
Decorator = Callable[[Callable[P, R]], Callable[P, R]]


class Toolkit:
    """Settings shared by a set of tools; tools read them at call time.

    ``approver``: an ``ApprovalQueue`` or a callable ``(request) -> True | False | None``.
    ``credentials``: a mapping of name to secret (or to a callable or secret reference giving
    it), or a callable ``(name) -> secret``. ``limits``: calls per session by effect
    (``{"destructive": 3}``, or ``"tool:name"``/``"effect:name"`` keys); ``tool_limits``: by
    tool name. ``audit``: sinks (callables taking an ``AuditEvent``, file paths written as JSON
    lines, or ``logging.Logger``s; by default ``DefaultSink()``: a readable line on stderr, or
    JSON through logging once the application configures it, as ``TOOLPASS_AUDIT`` says).
    ``on_refuse``: turns a refusal into the tool's result (``str`` gives the model the
    message). ``exfiltration``: ``"approve"``, ``"refuse"`` or ``"ignore"`` (the trifecta;
    credentials in the arguments of a tool that sends out are caught either way).
    ``untrusted_inputs``: what happens when the arguments of a call that changes or sends
    something repeat untrusted text seen in the session: ``"check"`` (refused), ``"approve"``
    (a person must approve) or ``"ignore"`` (``on_untrusted_input`` is its older name:
    ``"refuse"`` or ``"approve"``). ``provenance``: what happens when a tool's destination
    argument holds a value read only in untrusted content: ``"check"`` (refused),
    ``"approve"`` or ``"ignore"`` (a tool's own ``provenance`` may also be ``"request"``: the
    value must be one the user named). ``private_data``: what happens when a tool that sends
    out carries, beyond its destinations, an identifier, number or secret read from a
    ``reads_private`` tool: ``"approve"`` (the default), ``"refuse"`` or ``"ignore"`` (the
    task scope's ``private_to`` lets it go there). ``on_output``: callables ``(call, output)``
    that see every tool's output (redacted), in order. ``effects``: effects of its own beside
    read, write and destructive (``["payment"]``). ``store``: where conversations' sessions
    (limits, data flow, untrusted record) are kept, so that the worker processes of one
    deployment share them (a ``toolpass.store`` URL or ``Store``; memory by default). ``mode``:
    ``"enforce"`` (a check that fails refuses the call) or ``"observe"`` (every check runs, what
    it would refuse is audited as ``would_refuse``, and the body runs; a tool's own ``mode``
    wins); None: the ``mode:`` of the permission engine's configuration, else enforce.
    ``planner``: drafts each session's task scope from its request on its first call
    (``(request, tools) -> TaskScope``, see ``toolpass.TaskScope``; a session's own wins);
    ``outside_task``: what happens to a call outside its session's task scope: ``"ask"`` (a
    person approves it; the default) or ``"refuse"`` (``outside_task``).

    The request hook: ``permissions`` (a ``Toolpass``) checks every HTTP request a tool's body
    sends; ``act_as`` (``"user"`` or ``"agent"``) is whose authority requests are made on
    outside ``as_user()``/``as_agent()``; ``unknown_host`` says what happens to a request to a
    host no connection owns: ``"allow"`` (the default: it goes, and a write is audited with a
    warning), ``"refuse_writes"`` or ``"refuse"``; ``strict`` means ``unknown_host="refuse"``
    (and, with ``entitlements``, refuses tools missing from the file); ``strict_threads``
    refuses requests sent while a call runs from a thread that belongs to no call (a pool
    started before it); ``record`` writes what tools do to a file, and ``entitlements`` holds
    tools to such a file.

    The settings are one frozen ``Settings`` (``kit.settings``); each is readable as an
    attribute too (``kit.limits``).
    """

    settings: Settings

    def __init__(self, **options: Unpack[ToolkitOptions]) -> None:
        self._router: Router | None = None
        #: Sessions of conversations (an adapter's ``session="conversation"``), shared by
        #: every agent and adapter on this toolkit.
        self.conversations = Conversations()
        #: Every tool declared on it, as a task planner is told of them, by name.
        self.known_tools: dict[str, ToolInfo] = {}
        self._apply(Settings().change(**options))
        self.conversations.use(self.settings.store)

    def configure(self, **options: Unpack[ToolkitOptions]) -> Toolkit:
        """Change settings; what is not named stays as it is. Takes effect on the next call."""
        self._apply(self.settings.change(**options))
        return self

    def _apply(self, settings: Settings) -> None:
        before = getattr(self, "settings", None)
        self.settings = settings
        if before is not None and settings.store is not before.store:
            self.conversations.use(settings.store)
        engine = settings.permissions
        if before is None or engine is not before.permissions:
            self._router = None
            if engine is not None:
                from toolpass import intercept
                from toolpass.intercept.check import installed_by

                intercept.install()
                installed_by.append(self)

    def __getattr__(self, name: str) -> Any:
        """Each setting as an attribute (``kit.limits``); ``sinks`` and ``recorder`` are the
        audit sinks and the record file."""
        settings = self.__dict__.get("settings")
        if settings is None:
            raise AttributeError(name)
        return getattr(settings, _ALIASES.get(name, name))

    def know_tool(self, tool: ToolSpec | ToolInfo) -> None:
        """Tell task planners of ``tool`` (a declared tool, or what an adapter knows of one);
        what was known of it with a description stays unless this one has one."""
        info = tool if isinstance(tool, ToolInfo) else ToolInfo.of(tool)
        known = self.known_tools.get(info.name)
        if known is None or info.description or not known.description:
            self.known_tools[info.name] = info

    # Read on every call: plain properties, faster than the look-up above.
    @property
    def sinks(self) -> tuple[AuditSink, ...]:
        return self.settings.audit

    @property
    def recorder(self) -> Recorder | None:
        return self.settings.record

    @property
    def router(self) -> Router:
        """Which connection of ``permissions`` a request's URL belongs to (built once)."""
        if self._router is None:
            engine: Any = self.settings.permissions
            ids = getattr(engine, "connections", ())
            self._router = Router((cid, engine.integration(cid)) for cid in ids)
        return self._router

    @overload
    def secured_tool(
        self, fn: Callable[P, R], /, **options: Unpack[ToolOptions]
    ) -> Callable[P, R]: ...
    @overload
    def secured_tool(
        self, fn: None = None, /, **options: Unpack[ToolOptions]
    ) -> Callable[[Callable[P, R]], Callable[P, R]]: ...

    def secured_tool(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """Decorate a function so every call passes the pipeline (see ``secured_tool``)."""
        if fn is not None:
            return _secure(fn, self, **options)
        return lambda f: _secure(f, self, **options)

    @overload
    def tool(self, fn: Callable[P, R], /, **options: Unpack[ToolOptions]) -> Callable[P, R]: ...
    @overload
    def tool(
        self, fn: None = None, /, **options: Unpack[ToolOptions]
    ) -> Callable[[Callable[P, R]], Callable[P, R]]: ...

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


def _names(names: Iterable[str]) -> tuple[str, ...]:
    found = (names,) if isinstance(names, str) else tuple(names)
    if not all(isinstance(n, str) and n for n in found):
        raise TypeError(f"expected names (strings), not {names!r}")
    return found


def _secure(fn: Callable[..., Any], kit: Toolkit, **options: Unpack[ToolOptions]) -> Any:
    """``fn`` with every check in front of it, as ``options`` (``ToolOptions``) declare."""
    unknown = sorted(set(options) - ToolOptions.__optional_keys__)
    if unknown:
        raise TypeError(f"secured_tool() got an unexpected keyword argument {unknown[0]!r}")
    if not callable(fn):
        raise TypeError(f"secured_tool decorates a function, not {fn!r}")
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(f"{fn.__name__}: a tool cannot be a generator; return a list instead")
    tool_name = str(options.get("name") or getattr(fn, "__name__", repr(fn)))
    signature = _signature(fn, tool_name, options.get("credential"))
    binder = Binder(signature)
    declared = _declared(fn, tool_name, binder, kit, options)
    spec = ToolSpec(fn, declared, toolkit=kit, name=tool_name, binder=binder)
    authorize, is_async = spec.authorize, spec.is_async
    bind = getattr(authorize, "bind", None)
    if callable(bind):
        bind(spec)

    on_refuse = options.get("on_refuse", _UNSET)
    as_tool = options.get("as_tool")

    def refused(exc: ToolRefused) -> Any:
        handler = kit.settings.on_refuse if on_refuse is _UNSET else on_refuse
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
    made: Any = wrapper  # a function object: it takes the attributes below
    made.__signature__ = signature
    made.__toolpass__ = spec
    if options.get("name"):
        wrapper.__name__ = tool_name
    if "credential" in getattr(wrapper, "__annotations__", {}):
        wrapper.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != "credential"}
    return as_tool(wrapper) if as_tool is not None else wrapper


def _signature(fn: Callable[..., Any], tool_name: str, credential: str | None) -> Any:
    """``fn``'s signature as the model calls it: without the ``credential`` it is given."""
    signature = inspect.signature(fn)
    if credential is None:
        return signature
    p = signature.parameters.get("credential")
    if p is None or p.kind is not inspect.Parameter.KEYWORD_ONLY:
        raise TypeError(
            f"{tool_name}: credential={credential!r} needs a keyword-only "
            "parameter `*, credential: str` to receive it"
        )
    kept = [q for q in signature.parameters.values() if q.name != "credential"]
    return signature.replace(parameters=kept)


def _declared(
    fn: Callable[..., Any], tool_name: str, binder: Binder, kit: Toolkit, options: ToolOptions
) -> Declared:
    """What ``options`` declare, each checked against the tool (its arguments) and ``kit``."""
    effect = options.get("effect", "write")
    known = kit.settings.effects
    if effect is not None and effect not in known:
        raise ValueError(
            f"{tool_name}: effect {effect!r} is not one of {', '.join(sorted(known))}; "
            "declare an effect of your own with Toolkit(effects=[...]) first"
        )
    inputs = untrusted_mode(options.get("untrusted_inputs"), options.get("on_untrusted_input"))
    check_mode("exfiltration", options.get("exfiltration"))
    provenance = _provenance(tool_name, binder, options.get("provenance"))
    by_argument = provenance if isinstance(provenance, tuple) else ()
    check_mode("private_data", options.get("private_data"))
    check_mode("mode", options.get("mode"))
    check_mode("outside_task", options.get("outside_task"))
    on_output = options.get("on_output")
    if on_output is not None and not callable(on_output):
        raise TypeError(f"{tool_name}: on_output is a callable (call, output)")
    raw_fields = options.get("untrusted_fields")
    fields = None if raw_fields is None else frozenset(_names(raw_fields))
    limit = options.get("limit")
    if limit is not None:
        caps("limit", {"limit": limit})
    scope, validators = options.get("scope") or {}, options.get("validators") or {}
    for label, names in (("scope", scope), ("validators", validators)):
        unknown = [n for n in names if n not in binder.names]
        if unknown:
            raise TypeError(
                f"{tool_name}: {label} names {', '.join(unknown)}, which it does not take"
            )
    chosen = _names(options.get("destinations") or ()) + tuple(n for n, _ in by_argument)
    unknown = [n for n in chosen if n not in binder.names]
    if unknown:
        raise TypeError(f"{tool_name}: destinations names {', '.join(unknown)}, not its argument")
    inferred = [n for n, v in validators.items() if is_destination(v)]
    if provenance == "request" and not (chosen or inferred):
        raise ValueError(
            f"{tool_name}: provenance='request' checks its destinations; name them with "
            "destinations=[...]"
        )
    _check_validators(tool_name, validators, inspect.iscoroutinefunction(fn))
    authorize, approve, preview = (
        _by_call_or_arguments(hook, binder.names)
        for hook in (
            options.get("authorize"),
            options.get("approve", False),
            options.get("preview"),
        )
    )
    resources = options.get("resources")
    return Declared(
        effect=effect,
        scope=tuple((n, compile_scope(r)) for n, r in scope.items()),
        validators=tuple(validators.items()),
        limit=limit,
        authorize=authorize,
        approve=approve,
        preview=preview,
        credential=options.get("credential"),
        reads_private=options.get("reads_private", False),
        untrusted_output=options.get("untrusted_output", False) or fields is not None,
        sends_out=options.get("sends_out", False),
        untrusted_inputs=inputs,
        exfiltration=options.get("exfiltration"),
        resources=None if resources is None else compile_scope(resources),
        destinations=tuple(dict.fromkeys([*chosen, *inferred])),
        untrusted_fields=fields,
        provenance=provenance,
        on_output=on_output,
        mode=options.get("mode"),
        private_data=options.get("private_data"),
        outside_task=options.get("outside_task"),
    )


def _provenance(
    tool_name: str, binder: Binder, given: Any
) -> str | tuple[tuple[str, str], ...] | None:
    """``provenance=``: one mode for every destination, or ``{argument: mode}`` (each named
    argument is a destination)."""
    modes = MODES["argument_provenance"]
    by_argument = given.items() if isinstance(given, Mapping) else (("", given),)
    for name, mode in by_argument:
        if name and name not in binder.names:
            raise TypeError(f"{tool_name}: provenance names {name!r}, not its argument")
        if (mode is not None or name) and mode not in modes:
            raise ValueError(
                f"{tool_name}: provenance must be one of {', '.join(modes)}, not {mode!r}"
            )
    return tuple(given.items()) if isinstance(given, Mapping) else given


def _check_validators(
    tool_name: str, validators: Mapping[str, Callable[[Any], Any]], is_async: bool
) -> None:
    for arg, validator in validators.items():
        if not callable(validator):
            raise TypeError(f"{tool_name}: the validator for {arg!r} is not callable")
        if inspect.iscoroutinefunction(validator) and not is_async:
            raise TypeError(f"{tool_name}: the validator for {arg!r} is async, so the tool must be")


default_toolkit = Toolkit()


def configure(**options: Unpack[ToolkitOptions]) -> Toolkit:
    """Configure the default toolkit (see ``Toolkit``); tools declared earlier follow."""
    return default_toolkit.configure(**options)


@overload
def secured_tool(
    fn: Callable[P, R], /, *, toolkit: Toolkit | None = None, **options: Unpack[ToolOptions]
) -> Callable[P, R]: ...
@overload
def secured_tool(
    fn: None = None, /, *, toolkit: Toolkit | None = None, **options: Unpack[ToolOptions]
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def secured_tool(
    fn: Callable[..., Any] | None = None, /, *, toolkit: Toolkit | None = None, **options: Any
) -> Any:
    """Put every check in front of a function.

    ``effect`` (``"read"``, ``"write"``, ``"destructive"``, or one declared with
    ``Toolkit(effects=[...])``; ``"write"`` by default), ``scope={"arg": glob | [globs] |
    predicate}``, ``validators={"arg": fn}``, ``limit=`` calls per session, ``authorize=``
    (any callable returning a decision; see ``permission_check``), ``approve=True`` or a rule
    ``(call) -> reason | None``, ``preview=(call) -> str`` (shown after the arguments, never
    instead of them), ``credential="name"`` (injected
    as the keyword-only ``credential`` parameter), ``reads_private``, ``untrusted_output``,
    ``sends_out``, ``untrusted_inputs`` (``"check"``, ``"approve"`` or ``"ignore"``),
    ``exfiltration``, ``on_refuse``, ``as_tool=`` (a framework's tool decorator applied on
    top; a refusal then becomes the tool's result unless ``on_refuse`` says otherwise),
    ``resources=`` (globs on what the body's requests act on), ``destinations``,
    ``provenance`` (``"check"``, ``"approve"``, ``"ignore"`` or ``"request"``, or
    ``{argument: mode}``), ``private_data``, ``name``, ``mode``
    (``"enforce"`` or ``"observe"`` for this tool; None: the toolkit's), ``outside_task``
    (``"ask"`` or ``"refuse"`` a call outside the session's task scope; None: the toolkit's).

    The decorated function keeps its type (parameters and result) for type checkers.
    """
    return (toolkit or default_toolkit).secured_tool(fn, **options)


@overload
def tool(
    fn: Callable[P, R], /, *, toolkit: Toolkit | None = None, **options: Unpack[ToolOptions]
) -> Callable[P, R]: ...
@overload
def tool(
    fn: None = None, /, *, toolkit: Toolkit | None = None, **options: Unpack[ToolOptions]
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def tool(
    fn: Callable[..., Any] | None = None, /, *, toolkit: Toolkit | None = None, **options: Any
) -> Any:
    """Like ``secured_tool`` for a tool that declares no effect: it is judged by what it does."""
    return (toolkit or default_toolkit).tool(fn, **options)
