"""What a tool declares (``ToolSpec``) and what hooks see of one call (``ToolCall``)."""

from __future__ import annotations

import collections
import inspect
import threading
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from toolpass.toolkit.arguments import Binder, TypeCheck, type_check
from toolpass.toolkit.provenance import wanted
from toolpass.toolkit.session import Session

if TYPE_CHECKING:
    from toolpass.intercept.router import Router
    from toolpass.toolkit.provenance import Label
    from toolpass.toolkit.settings import AuditSink, Settings


class Owner(Protocol):
    """The toolkit a tool belongs to (a ``Toolkit``), as its calls read it."""

    @property
    def settings(self) -> Settings: ...
    @property
    def router(self) -> Router: ...
    @property
    def sinks(self) -> tuple[AuditSink, ...]: ...


#: How many tools were declared so far from each function under each name.
_declared: collections.Counter[str] = collections.Counter()
_declaring = threading.Lock()


class ToolSpec:
    """Everything declared about one tool, prepared once when it is decorated."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        toolkit: Owner,
        name: str,
        effect: str | None,
        binder: Binder,
        scope: tuple[tuple[str, Callable[[Any], bool]], ...],
        validators: tuple[tuple[str, Callable[[Any], Any]], ...],
        limit: int | None,
        authorize: Callable[..., Any] | None,
        approve: bool | Callable[..., Any],
        preview: Callable[..., Any] | None,
        credential: str | None,
        reads_private: bool,
        untrusted_output: bool,
        sends_out: bool,
        untrusted_inputs: str | None,
        exfiltration: str | None,
        resources: Callable[[Any], bool] | None = None,
        key: str | None = None,
        destinations: tuple[str, ...] = (),
        untrusted_fields: frozenset[str] | None = None,
        provenance: str | None = None,
        on_output: Callable[..., Any] | None = None,
        fences: bool = True,
        checked_elsewhere: bool = False,
        framework: bool = False,
        mode: str | None = None,
        default_mode: str | None = None,
    ) -> None:
        self.fn = fn
        self.toolkit = toolkit
        self.name = name
        # Unique per declared tool: one inner function wrapped under many names, or declared
        # twice, must not share per-tool limits or approvals; the same in every process of
        # one program (a shared store), whatever else it declares. ``key`` names a tool that
        # is the same whoever declares it (an adapter's, by its name: a guard made anew
        # continues its limits).
        where = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', name)}:{name}"
        if key is None:
            with _declaring:
                _declared[where] += 1
                key = f"{where}#{_declared[where]}"
        self.key = key
        self.effect = effect
        self.is_async = inspect.iscoroutinefunction(fn)
        self.binder = binder
        self.scope = scope
        self.validators = validators
        self.vouched = frozenset(n for n, _ in scope) | frozenset(n for n, _ in validators)
        self.limit = limit
        self.authorize = authorize
        self.authorize_async = getattr(authorize, "acall", None)
        self.approve = approve
        self.preview = preview
        self.credential = credential
        self.reads_private = reads_private
        self.untrusted_output = untrusted_output
        self.sends_out = sends_out
        self.untrusted_inputs = untrusted_inputs  # None: the toolkit's
        self.exfiltration = exfiltration
        self.resources = resources  # globs on the resources the body's requests act on
        self.destinations = destinations  # arguments naming where the call sends or acts
        if destinations:
            wanted.now = True
        self.untrusted_fields = untrusted_fields  # None: all the output, when untrusted
        self.provenance = provenance  # None: the toolkit's
        self.on_output = on_output
        self.fences = fences  # untrusted output is fenced (False: recorded only)
        #: Its calls were checked before (a framework hook that decides apart from the body):
        #: only the session and the body run here.
        self.checked_elsewhere = checked_elsewhere
        #: A framework's tool, checked by an adapter: its body is the framework's handler, so
        #: a secured tool that handler calls is this same call (one audit event for both).
        self.framework = framework
        #: ``enforce`` or ``observe`` for this tool (None: the toolkit's); ``default_mode``
        #: is what stands below the toolkit's (a guard's engine's configuration).
        self.mode, self.default_mode = mode, default_mode
        #: How the values of its trusted output are labelled.
        self.trust: Label = "private" if reads_private else "trusted"
        self._types: tuple[tuple[str, TypeCheck, Any], ...] | None = None
        #: (settings, checks, observed): ``pipeline.plan``, worked out once per settings.
        self.plan: tuple[Any, tuple[Any, ...], bool] = (None, (), False)
        self.effect_key = f"effect:{effect}"
        self.tool_key = f"tool:{self.key}"

    def __repr__(self) -> str:
        return f"<toolpass tool {self.name} effect={self.effect}>"

    @property
    def types(self) -> tuple[tuple[str, TypeCheck, Any], ...]:
        """Per-argument type checks, resolved on first use (annotations may refer forward)."""
        if self._types is None:
            hints = typing.get_type_hints(self.fn, include_extras=True)
            checks = []
            for name, param in self.binder.signature.parameters.items():
                if name in hints:
                    hint = hints[name]
                    # ``*args: T`` and ``**kwargs: T`` annotate each item, not the whole.
                    if param.kind is inspect.Parameter.VAR_POSITIONAL:
                        hint = types.GenericAlias(tuple, (hint, ...))
                    elif param.kind is inspect.Parameter.VAR_KEYWORD:
                        hint = types.GenericAlias(dict, (str, hint))
                    check = type_check(hint)
                    if check is not None:
                        checks.append((name, check, hint))
            self._types = tuple(checks)
        return self._types


class ToolCall:
    """What hooks (authorizers, approval rules, previews) are given about a call."""

    __slots__ = ("arguments", "session", "tool")

    def __init__(self, tool: ToolSpec, session: Session, arguments: dict[str, Any]) -> None:
        self.tool = tool
        self.session = session
        self.arguments = arguments

    @property
    def user(self) -> str:
        return self.session.user

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def effect(self) -> str | None:
        return self.tool.effect

    def __getitem__(self, name: str) -> Any:
        """``call["amount"]``: an argument's value."""
        return self.arguments[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.arguments.get(name, default)

    def __repr__(self) -> str:
        return f"ToolCall({self.tool.name!r}, user={self.user!r}, arguments={self.arguments!r})"
