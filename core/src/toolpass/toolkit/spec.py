"""What a tool declares (``ToolSpec``) and what hooks see of one call (``ToolCall``)."""

from __future__ import annotations

import collections
import dataclasses
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


@dataclasses.dataclass(slots=True, kw_only=True, eq=False)
class Declared:
    """What a tool declares, checked and normalised: the one list of a tool's options and
    their defaults, shared by ``secured_tool`` (which reads the keywords ``ToolOptions``
    names into it), an adapter's ``Traits`` (the subset a framework's tool declares) and
    ``ToolSpec`` (which is one). The defaults declare nothing (``secured_tool``'s effect is
    ``write`` unless it is given)."""

    effect: str | None = None
    scope: tuple[tuple[str, Callable[[Any], bool]], ...] = ()
    validators: tuple[tuple[str, Callable[[Any], Any]], ...] = ()
    limit: int | None = None
    authorize: Callable[..., Any] | None = None
    approve: bool | Callable[..., Any] = False
    preview: Callable[..., Any] | None = None
    credential: str | None = None
    reads_private: bool = False
    untrusted_output: bool = False
    sends_out: bool = False
    untrusted_inputs: str | None = None  # None: the toolkit's
    exfiltration: str | None = None  # None: the toolkit's
    #: Globs on the resources the body's requests act on.
    resources: Callable[[Any], bool] | None = None
    #: Arguments naming where the call sends or acts.
    destinations: tuple[str, ...] = ()
    #: None: all the output, when untrusted.
    untrusted_fields: frozenset[str] | None = None
    #: One mode for every destination, or ``((argument, mode), ...)``; None: the toolkit's.
    provenance: str | tuple[tuple[str, str], ...] | None = None
    on_output: Callable[..., Any] | None = None
    #: Untrusted output is fenced (False: recorded only, as a framework owns its result).
    fences: bool = True
    #: Its calls were checked before (a framework hook that decides apart from the body):
    #: only the session and the body run here.
    checked_elsewhere: bool = False
    #: A framework's tool, checked by an adapter: its body is the framework's handler, so
    #: a secured tool that handler calls is this same call (one audit event for both).
    framework: bool = False
    #: ``enforce`` or ``observe`` for this tool (None: the toolkit's); ``default_mode`` is
    #: what stands below the toolkit's (a guard's engine's configuration).
    mode: str | None = None
    default_mode: str | None = None
    #: Seconds a call waiting in the approval queue blocks for a person's answer, within its
    #: one check (a framework with no pause); None: it is refused ``approval_pending`` now.
    approval_wait: float | None = None
    #: Private data in what it sends out: ``approve``, ``refuse``, ``ignore`` (None: the
    #: toolkit's).
    private_data: str | None = None
    #: A call outside the session's task scope: ``ask`` or ``refuse`` (None: the toolkit's).
    outside_task: str | None = None


_DECLARED = tuple(f.name for f in dataclasses.fields(Declared))


class ToolSpec(Declared):
    """Everything declared about one tool: its ``Declared`` options and what is worked out
    from them once, when it is decorated."""

    def __init__(
        self,
        fn: Callable[..., Any],
        declared: Declared,
        *,
        toolkit: Owner,
        name: str,
        binder: Binder,
        key: str | None = None,
    ) -> None:
        self.fn = fn
        self.toolkit = toolkit
        self.name = name
        for option in _DECLARED:
            setattr(self, option, getattr(declared, option))
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
        self.is_async = inspect.iscoroutinefunction(fn)
        self.binder = binder
        self.vouched = frozenset(n for n, _ in self.scope) | frozenset(
            n for n, _ in self.validators
        )
        self.authorize_async = getattr(self.authorize, "acall", None)
        if self.destinations:
            wanted.now = True
        if self.sends_out:
            wanted.private = True
        #: How the values of its trusted output are labelled.
        self.trust: Label = "private" if self.reads_private else "trusted"
        self._types: tuple[tuple[str, TypeCheck, Any], ...] | None = None
        #: (settings, checks, observed): ``pipeline.plan``, worked out once per settings.
        self.plan: tuple[Any, tuple[Any, ...], bool] = (None, (), False)
        self.effect_key = f"effect:{self.effect}"
        self.tool_key = f"tool:{self.key}"
        know = getattr(toolkit, "know_tool", None)
        if callable(know):  # what a task planner is told of the toolkit's tools
            know(self)

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
