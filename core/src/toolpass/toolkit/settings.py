"""A toolkit's settings: one frozen dataclass, checked once, and the typed names of every
option (so ``mypy --strict`` users see a misspelled option or mode).

``Settings`` holds the values, normalised (audit sinks as a tuple, the record file as a
``Recorder``, caps as dicts); ``ToolkitOptions`` names what ``Toolkit(...)`` and
``configure(...)`` take, ``ToolOptions`` what ``secured_tool(...)`` takes. A test holds the
two lists of toolkit options together.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NewType, Protocol, TypedDict

from toolpass.intercept.entitlements import Entitlements, Recorder
from toolpass.outcome.audit import AuditEvent, DefaultSink, JsonlSink, LogSink
from toolpass.outcome.errors import ToolRefused
from toolpass.rules.scope import ScopeRule
from toolpass.store import Store, open_store
from toolpass.toolkit.approval import ApprovalQueue

if TYPE_CHECKING:
    from toolpass.wire.decision import Decision

#: The effects every toolkit knows; others are declared with ``Toolkit(effects=[...])``.
Effect = Literal["read", "write", "destructive"]
EFFECTS: tuple[str, ...] = ("read", "write", "destructive")
#: An effect of the application's own, declared with ``Toolkit(effects=["payment"])`` and
#: named as ``effect=CustomEffect("payment")`` (so a misspelled plain string is a type error).
CustomEffect = NewType("CustomEffect", str)
UntrustedInputs = Literal["check", "approve", "ignore"]
Exfiltration = Literal["approve", "refuse", "ignore"]
ProvenanceMode = Literal["check", "approve", "ignore"]
#: A tool's provenance, for all its destinations or one of them: ``request`` means the user
#: must have named the value (a miss is refused, or sent for approval when the tool's or
#: toolkit's provenance is ``approve``).
ArgumentProvenance = Literal["check", "approve", "ignore", "request"]
PrivateData = Literal["approve", "refuse", "ignore"]
OutsideTask = Literal["ask", "refuse"]
OutputHook = Callable[..., Any]
UnknownHost = Literal["allow", "refuse_writes", "refuse"]
ActAs = Literal["user", "agent"]
#: ``enforce``: a check that fails refuses the call. ``observe``: every check runs, what it
#: would refuse is audited (``would_refuse``), and the body runs.
Mode = Literal["enforce", "observe"]
Approver = ApprovalQueue | Callable[..., Any]
Credentials = Mapping[str, Any] | Callable[[str], Any]
AuditSink = Callable[[AuditEvent], object]
AuditTarget = AuditSink | str | os.PathLike[str] | logging.Logger
MODES: dict[str, tuple[str, ...]] = {
    "on_untrusted_input": ("refuse", "approve"),
    "untrusted_inputs": ("check", "approve", "ignore"),
    "exfiltration": ("approve", "refuse", "ignore"),
    "provenance": ("check", "approve", "ignore"),
    "unknown_host": ("allow", "refuse_writes", "refuse"),
    "act_as": ("user", "agent"),
    "mode": ("enforce", "observe"),
    "private_data": ("approve", "refuse", "ignore"),
    "argument_provenance": ("check", "approve", "ignore", "request"),
    "outside_task": ("ask", "refuse"),
}


class PermissionEngine(Protocol):
    """What toolpass needs of a permission engine (``toolpass.Toolpass``, its remote client,
    or a test double): one decision per question. Engines may also offer ``acheck`` (async),
    ``configured(connection, action)``, ``connections`` and ``integration(id)`` (for the
    request hook)."""

    def check(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision: ...


class ToolkitOptions(TypedDict, total=False):
    """What ``Toolkit(...)`` and ``configure(...)`` take (see ``Toolkit``)."""

    approver: Approver | None
    credentials: Credentials | None
    limits: Mapping[str, int] | None
    tool_limits: Mapping[str, int] | None
    audit: AuditTarget | Iterable[AuditTarget] | None
    on_refuse: Callable[[ToolRefused], Any] | None
    exfiltration: Exfiltration
    untrusted_inputs: UntrustedInputs
    on_untrusted_input: Literal["refuse", "approve"] | None
    permissions: PermissionEngine | None
    act_as: ActAs
    strict: bool
    unknown_host: UnknownHost
    strict_threads: bool
    record: str | os.PathLike[str] | None
    entitlements: str | os.PathLike[str] | None
    effects: Iterable[str]
    store: Store | str | None
    provenance: ProvenanceMode
    on_output: OutputHook | Iterable[OutputHook] | None
    mode: Mode | None
    private_data: PrivateData
    planner: Callable[..., Any] | None
    outside_task: OutsideTask


class ToolOptions(TypedDict, total=False):
    """What ``secured_tool(...)`` and ``tool(...)`` take (see ``secured_tool``)."""

    effect: Effect | CustomEffect | None
    name: str | None
    scope: Mapping[str, ScopeRule] | None
    validators: Mapping[str, Callable[[Any], Any]] | None
    limit: int | None
    authorize: Callable[..., Any] | None
    approve: bool | Callable[..., Any]
    preview: Callable[..., Any] | None
    credential: str | None
    reads_private: bool
    untrusted_output: bool
    sends_out: bool
    untrusted_inputs: UntrustedInputs | None
    on_untrusted_input: Literal["refuse", "approve"] | None
    exfiltration: Exfiltration | None
    resources: ScopeRule | None
    on_refuse: Callable[[ToolRefused], Any] | None
    as_tool: Callable[[Callable[..., Any]], Any] | None
    destinations: Iterable[str] | None
    untrusted_fields: Iterable[str] | None
    provenance: ArgumentProvenance | Mapping[str, ArgumentProvenance] | None
    on_output: OutputHook | None
    mode: Mode | None
    private_data: PrivateData | None
    outside_task: OutsideTask | None


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """A toolkit's settings, checked and normalised; ``Settings().change(**options)`` gives
    a new one (what is not named stays as it is)."""

    approver: Approver | None = None
    credentials: Credentials | None = None
    limits: Mapping[str, int] = dataclasses.field(default_factory=dict)  # by effect
    tool_limits: Mapping[str, int] = dataclasses.field(default_factory=dict)  # by tool name
    audit: tuple[AuditSink, ...] = (DefaultSink(),)
    on_refuse: Callable[[ToolRefused], Any] | None = None
    exfiltration: Exfiltration = "approve"
    untrusted_inputs: UntrustedInputs = "check"
    permissions: PermissionEngine | None = None
    act_as: ActAs = "user"
    strict: bool = False
    unknown_host: UnknownHost = "allow"
    strict_threads: bool = False
    record: Recorder | None = None
    entitlements: Entitlements | None = None
    effects: frozenset[str] = frozenset(EFFECTS)
    store: Store | None = None
    provenance: ProvenanceMode = "check"
    on_output: tuple[OutputHook, ...] = ()
    #: None: what the permission engine's configuration says (``mode:``), else enforce.
    mode: Mode | None = None
    #: Private data read from ``reads_private`` tools, in what a ``sends_out`` tool sends.
    private_data: PrivateData = "approve"
    #: Drafts a session's task scope from its request (``(request, tools) -> TaskScope``).
    planner: Callable[..., Any] | None = None
    #: A call outside the task scope: a person is asked, or it is refused.
    outside_task: OutsideTask = "ask"

    def change(self, **options: Any) -> Settings:
        """These settings with ``options`` (as ``ToolkitOptions`` names them) changed."""
        changes: dict[str, Any] = {}
        for key, value in options.items():
            if key not in _CHECKS:
                raise TypeError(
                    f"unknown toolkit option {key!r} (expected one of {', '.join(_CHECKS)})"
                )
            changes.update(_CHECKS[key](value))
        if "strict" in options and options["strict"] and "unknown_host" not in options:
            changes["unknown_host"] = "refuse"  # strict means unknown hosts are refused
        if (
            "unknown_host" in options
            and "strict" not in options
            and options["unknown_host"] != "refuse"
        ):
            changes["strict"] = False  # strict means unknown_host="refuse"
        if "limits" in options:
            # "effect:write" and "tool:open_pr" say which they mean; a plain key is an effect.
            caps = changes.pop("limits")
            changes["limits"] = {
                k.removeprefix("effect:"): v for k, v in caps.items() if not k.startswith("tool:")
            }
            tools = {k[5:]: v for k, v in caps.items() if k.startswith("tool:")}
            base = changes.get("tool_limits", self.tool_limits)
            changes["tool_limits"] = {**base, **tools}
        new = dataclasses.replace(self, **changes)
        unknown = [k for k in new.limits if k not in new.effects]
        if unknown:
            raise ValueError(
                f"limits names {', '.join(map(repr, unknown))}, which is not an effect "
                f"({', '.join(sorted(new.effects))}); say 'tool:{unknown[0]}' for a tool, or "
                "declare the effect with effects=[...]"
            )
        routed = new.approver.routing.rules if isinstance(new.approver, ApprovalQueue) else {}
        odd = sorted(
            value for kind, value in routed if kind == "effect" and value not in new.effects
        )
        if odd:
            raise ValueError(
                f"the approver routes {', '.join(map(repr, odd))}, which is not an effect "
                f"({', '.join(sorted(new.effects))}), so no request would match it and each would "
                f"go to anyone; say 'tool:{odd[0]}' for a tool, or declare the effect with "
                "effects=[...]"
            )
        return new


def check_mode(name: str, value: object) -> None:
    if value is not None and value not in MODES[name]:
        raise ValueError(f"{name} must be one of {', '.join(MODES[name])}, not {value!r}")


def configured_mode(engine: object) -> Mode | None:
    """The ``mode:`` of the configuration a permission engine was read from, if it says."""
    mode = getattr(getattr(engine, "config", None), "mode", None)
    return "observe" if mode == "observe" else "enforce" if mode == "enforce" else None


def untrusted_mode(untrusted_inputs: str | None, on_untrusted_input: str | None) -> str | None:
    """``untrusted_inputs``, or the older ``on_untrusted_input`` read as it ("refuse" is
    "check")."""
    check_mode("untrusted_inputs", untrusted_inputs)
    check_mode("on_untrusted_input", on_untrusted_input)
    if untrusted_inputs is not None:
        return untrusted_inputs
    if on_untrusted_input is not None:
        return "check" if on_untrusted_input == "refuse" else on_untrusted_input
    return None


def caps(name: str, given: Mapping[str, int] | None) -> dict[str, int]:
    found = dict(given or {})
    for key, cap in found.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"{name} keys are names, not {key!r}")
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise ValueError(f"{name}[{key!r}] must be a whole number >= 0, not {cap!r}")
    return found


def _sink(sink: Any) -> AuditSink:
    """An audit sink: a callable, a path (JSON lines) or a ``logging.Logger``."""
    if isinstance(sink, (str, os.PathLike)):
        return JsonlSink(sink)
    if isinstance(sink, logging.Logger):
        return LogSink(sink)
    if not callable(sink):
        raise TypeError(f"an audit sink is a callable, a file path or a Logger, not {sink!r}")
    return sink  # type: ignore[no-any-return]


def _audit(value: Any) -> dict[str, Any]:
    if value is None:
        given: tuple[Any, ...] = ()
    elif isinstance(value, (str, os.PathLike, logging.Logger)) or callable(value):
        given = (value,)
    else:
        given = tuple(value)
    return {"audit": tuple(_sink(s) for s in given) or (DefaultSink(),)}


def _approver(value: Any) -> dict[str, Any]:
    if value is not None and not (isinstance(value, ApprovalQueue) or callable(value)):
        raise TypeError("approver must be an ApprovalQueue or a callable")
    return {"approver": value}


def _credentials(value: Any) -> dict[str, Any]:
    if value is not None and not (isinstance(value, Mapping) or callable(value)):
        raise TypeError("credentials must be a mapping of name to secret, or a callable")
    return {"credentials": value}


def _on_refuse(value: Any) -> dict[str, Any]:
    if value is not None and not callable(value):
        raise TypeError(f"on_refuse must be callable, not {value!r}")
    return {"on_refuse": value}


def _mode(name: str) -> Callable[[Any], dict[str, Any]]:
    def check(value: Any) -> dict[str, Any]:
        if value is None:
            raise ValueError(f"{name} must be one of {', '.join(MODES[name])}, not None")
        check_mode(name, value)
        return {name: value}

    return check


def _untrusted(name: str) -> Callable[[Any], dict[str, Any]]:
    def check(value: Any) -> dict[str, Any]:
        given = {"untrusted_inputs": None, "on_untrusted_input": None, name: value}
        return {"untrusted_inputs": untrusted_mode(**given) or "check"}

    return check


def _flag(name: str) -> Callable[[Any], dict[str, Any]]:
    def check(value: Any) -> dict[str, Any]:
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, not {value!r}")
        return {name: value}

    return check


def _permissions(value: Any) -> dict[str, Any]:
    if value is not None and not callable(getattr(value, "check", None)):
        raise TypeError(
            f"permissions must be a permission engine (toolpass.Toolpass), not {value!r}"
        )
    return {"permissions": value}


def _record(value: Any) -> dict[str, Any]:
    if isinstance(value, Recorder) or value is None:
        return {"record": value}
    return {"record": Recorder(value)}


def _entitlements(value: Any) -> dict[str, Any]:
    if isinstance(value, Entitlements) or value is None:
        return {"entitlements": value}
    return {"entitlements": Entitlements.load(value)}


def _effects(value: Any) -> dict[str, Any]:
    names = [value] if isinstance(value, str) else list(value)
    for name in names:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"an effect is a name like 'payment', not {name!r}")
    return {"effects": frozenset((*EFFECTS, *names))}


def _run_mode(value: Any) -> dict[str, Any]:
    check_mode("mode", value)  # None: the configuration's, else enforce
    return {"mode": value}


def _hooks(name: str, value: Any) -> tuple[OutputHook, ...]:
    hooks = () if value is None else (value,) if callable(value) else tuple(value)
    if not all(callable(h) for h in hooks):
        raise TypeError(f"{name} takes a callable (call, output) or a list of them")
    return hooks


_CHECKS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "approver": _approver,
    "credentials": _credentials,
    "limits": lambda v: {"limits": caps("limits", v)},
    "tool_limits": lambda v: {"tool_limits": caps("tool_limits", v)},
    "audit": _audit,
    "on_refuse": _on_refuse,
    "exfiltration": _mode("exfiltration"),
    "untrusted_inputs": _untrusted("untrusted_inputs"),
    "on_untrusted_input": _untrusted("on_untrusted_input"),
    "permissions": _permissions,
    "act_as": _mode("act_as"),
    "strict": _flag("strict"),
    "unknown_host": _mode("unknown_host"),
    "strict_threads": _flag("strict_threads"),
    "record": _record,
    "entitlements": _entitlements,
    "effects": _effects,
    "store": lambda v: {"store": None if v is None else open_store(v)},
    "provenance": _mode("provenance"),
    "on_output": lambda v: {"on_output": _hooks("on_output", v)},
    "mode": _run_mode,
    "private_data": _mode("private_data"),
    "planner": lambda v: {"planner": _planner(v)},
    "outside_task": _mode("outside_task"),
}


def _planner(value: Any) -> Callable[..., Any] | None:
    if value is not None and not callable(value):
        raise TypeError("planner is a callable (request, tools) -> TaskScope")
    return value  # type: ignore[no-any-return]
