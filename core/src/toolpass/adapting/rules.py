"""The rules an adapter is given: ``Rule`` (a question for the permission engine), ``Traits``
(what a framework tool does), the ``rules`` mapping as a guard reads it, the checks made of
them when an adapter is built, and ``Explanation`` (what a guard does with each tool)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolpass.adapting.sources import _kind
from toolpass.toolkit.authorize import PermissionCheck
from toolpass.toolkit.places import checked_places
from toolpass.toolkit.records import checked_trust, field_paths
from toolpass.toolkit.settings import Mode, check_mode
from toolpass.toolkit.spec import Declared
from toolpass.toolkit.task import ToolInfo


@dataclass(frozen=True, slots=True)
class Rule:
    """Before the tool runs, ask ``connection`` whether the user may do ``action`` on
    ``resource`` (a template filled from the call's arguments: ``"issue:{key}"``).
    ``mode="observe"``: its tool's calls are audited as what would be refused, and run."""

    connection: str
    action: str
    resource: str
    fresh: bool = False
    mode: Mode | None = None

    def __post_init__(self) -> None:
        for name in ("connection", "action", "resource"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise TypeError(f"a rule's {name} is a non-empty string, not {value!r}")
        if not isinstance(self.fresh, bool):
            raise TypeError(f"a rule's fresh is True or False, not {self.fresh!r}")
        check_mode("mode", self.mode)

    def __str__(self) -> str:
        fresh = " (fresh)" if self.fresh else ""
        return f"{self.connection} {self.action} {self.resource}{fresh}"


@dataclass(frozen=True, slots=True)
class Traits:
    """What a framework tool does, as the application declares it (a value of ``rules``
    beside or instead of a ``Rule``): its ``effect``; whether it ``sends_out`` data,
    ``reads_private`` data, or returns untrusted content (``untrusted_output``, or only the
    ``untrusted_fields`` of its result); its ``destinations`` (argument names); what happens
    to a destination read only in untrusted content (``provenance``: check, approve, ignore,
    or ``request``: the user must have named it; or ``{argument: mode}``); what happens to
    private data in what it sends out (``private_data``: approve, refuse, ignore);
    whether every call needs a person's approval (``approve``, as ``secured_tool``'s);
    its permission ``rule``, if any; what a call outside the session's task scope does
    (``outside_task``: ask or refuse; None: the toolkit's); ``trust``, a predicate trusting
    records of its output, and ``places``, the arguments naming places it reads or writes (as
    ``secured_tool``'s). Untrusted output is recorded for the checks, not fenced: the
    framework owns the tool's result."""

    effect: str | None = None
    sends_out: bool = False
    reads_private: bool = False
    untrusted_output: bool = False
    untrusted_fields: tuple[str, ...] = ()
    destinations: tuple[str, ...] = ()
    provenance: (
        Literal["check", "approve", "ignore", "request"]
        | Mapping[str, str]
        | tuple[tuple[str, str], ...]
        | None
    ) = None
    rule: Rule | None = None
    approve: bool = False
    private_data: Literal["approve", "refuse", "ignore"] | None = None
    outside_task: Literal["ask", "refuse"] | None = None
    trust: Callable[[Any], Any] | None = None
    places: Mapping[str, str] | tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name in ("sends_out", "reads_private", "untrusted_output", "approve"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"Traits.{name} is True or False, not {getattr(self, name)!r}")
        if self.effect is not None and not (isinstance(self.effect, str) and self.effect):
            raise TypeError(f"Traits.effect is an effect's name, not {self.effect!r}")
        for name in ("untrusted_fields", "destinations"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
                raise TypeError(f"Traits.{name} is a tuple of names, not {value!r}")
        modes = ("check", "approve", "ignore", "request")
        given = self.provenance
        if isinstance(given, Mapping):
            given = tuple(given.items())
            object.__setattr__(self, "provenance", given)  # frozen: kept hashable
        if isinstance(given, tuple):
            if not all(isinstance(n, str) and m in modes for n, m in given):
                raise ValueError(f"Traits.provenance maps arguments to {modes}, not {given!r}")
            extra = tuple(n for n, _ in given if n not in self.destinations)
            object.__setattr__(self, "destinations", (*self.destinations, *extra))
        elif given not in (None, *modes):
            raise ValueError(
                f"Traits.provenance is check, approve, ignore or request, not {given!r}"
            )
        if self.private_data not in (None, "approve", "refuse", "ignore"):
            raise ValueError(
                f"Traits.private_data is approve, refuse or ignore, not {self.private_data!r}"
            )
        if self.rule is not None and not isinstance(self.rule, Rule):
            raise TypeError(f"Traits.rule is a Rule, not {self.rule!r}")
        check_mode("outside_task", self.outside_task)
        field_paths(self.untrusted_fields)
        checked_trust("Traits", self.trust)
        try:
            places = dict(self.places)
        except (TypeError, ValueError):
            raise TypeError(f"Traits.places maps arguments to kinds, not {self.places!r}") from None
        object.__setattr__(self, "places", checked_places("Traits", places, places.keys()))

    def declared(self, **adapter: Any) -> Declared:
        """What these traits declare, as a ``secured_tool``'s options are declared, with
        what the ``adapter`` adds (its authorizer, preview, mode...)."""
        fields = field_paths(self.untrusted_fields) or None
        shared = {name: getattr(self, name) for name in _SHARED_TRAITS}
        shared.update(
            untrusted_fields=fields,
            untrusted_output=self.untrusted_output or bool(fields) or self.trust is not None,
        )
        return Declared(**shared, **adapter)


#: The traits that are a secured tool's options of the same name (all but ``rule``).
_SHARED_TRAITS = tuple(f.name for f in dataclasses.fields(Traits) if f.name != "rule")


RuleLike = Rule | tuple[str, str, str] | Traits
#: Tool name (or a tuple of names sharing a rule) -> rule.
Rules = Mapping[str | tuple[str, ...], RuleLike]


#: The tools an adapter knows: name -> the names of its arguments (None: not known).
ToolArguments = Mapping[str, Collection[str] | None]


def _rule(value: RuleLike) -> Rule:
    if isinstance(value, Rule):
        return value
    if isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, str) for v in value):
        return Rule(*value)
    raise TypeError(f"a rule is a Rule or a (connection, action, resource) tuple, not {value!r}")


@dataclass(frozen=True)
class Explanation:
    """What a guard does with each tool (``Guard.explain``)."""

    rules: Mapping[str, Rule]
    #: The tools the guard knows of (name -> argument names, None when not known).
    tools: Mapping[str, frozenset[str] | None]
    strict: bool
    #: Whether ``tools`` are all the agent's tools (else more may come as it runs).
    complete: bool
    problems: tuple[str, ...] = field(default=())

    @property
    def unchecked(self) -> list[str]:
        """The known tools with no rule: refused under ``strict``, else run unchecked."""
        return sorted(t for t in self.tools if t not in self.rules)

    def __str__(self) -> str:
        names = sorted(set(self.tools) | set(self.rules))
        width = max((len(n) for n in names), default=0)
        no_rule = "refused (strict, no rule)" if self.strict else "UNCHECKED (no rule)"
        lines = []
        for name in names:
            rule = self.rules.get(name)
            said = str(rule) if rule else no_rule
            if self.complete and name not in self.tools:
                said += "  (the agent has no such tool)"
            lines.append(f"{name.ljust(width)}  {said}")
        if not self.complete:
            lines.append(
                f"(tools known only as the agent runs: each one without a rule is {no_rule})"
            )
        lines += [f"problem: {p}" for p in self.problems]
        return "\n".join(lines)


def _rules(rules: Rules | None) -> tuple[dict[str, Rule], dict[str, Traits]]:
    """The rules by tool name, and the tools' declared traits."""
    if rules is None:
        return {}, {}
    if not isinstance(rules, Mapping):
        raise TypeError(f"rules map tool names to rules, not {_kind(rules)}")
    found: dict[str, Rule] = {}
    traits: dict[str, Traits] = {}
    for names, value in rules.items():
        for name in (names,) if isinstance(names, str) else names:
            if not isinstance(name, str) or not name:
                raise TypeError(f"a rule's key is a tool name or a tuple of names: {names!r}")
            if name in found or name in traits:
                raise ValueError(f"{name!r} has two rules")
            if isinstance(value, Traits):
                traits[name] = value
                if value.rule is not None:
                    found[name] = value.rule
            else:
                found[name] = _rule(value)
    return found, traits


_NO_TRAITS = Traits()


def _tool_info(name: str, traits: Traits) -> ToolInfo:
    """What a task planner is told of a framework's tool: its traits."""
    return ToolInfo(
        name=name,
        effect=traits.effect,
        destinations=traits.destinations,
        sends_out=traits.sends_out,
        reads_private=traits.reads_private,
        untrusted_output=traits.untrusted_output or bool(traits.untrusted_fields),
    )


def _check_effects(traits: Mapping[str, Traits], known: Collection[str]) -> None:
    """Refuse an effect the toolkit does not know, as ``secured_tool`` does."""
    for tool, declared in traits.items():
        if declared.effect is not None and declared.effect not in known:
            raise ValueError(
                f"{tool}: effect {declared.effect!r} is not one of {', '.join(sorted(known))}; "
                "declare an effect of your own with Toolkit(effects=[...]) first"
            )


def _check_engine(engine: Any, needed: bool) -> None:
    if engine is None and not needed:
        return
    if isinstance(engine, type) or not callable(getattr(engine, "check", None)):
        raise TypeError(
            "engine is a permission engine (toolpass.Toolpass, Toolpass.remote(...) or an "
            f"object with check(user, connection, action, resource)), not {engine!r}"
        )


def _permission_check(engine: Any, tool: str, rule: Rule) -> PermissionCheck:
    try:
        return PermissionCheck(
            engine, rule.connection, rule.action, rule.resource, fresh=rule.fresh
        )
    except ValueError as exc:
        raise ValueError(f"the rule for {tool!r}: {exc}") from None


def _by_rule(rules: Mapping[str, Rule]) -> dict[tuple[str, str], list[str]]:
    grouped: dict[tuple[str, str], list[str]] = {}
    for name, rule in rules.items():
        grouped.setdefault((rule.connection, rule.action), []).append(name)
    return grouped


def _engine_problems(engine: Any, rules: Mapping[str, Rule]) -> list[str]:
    """The rules naming a connection or action the engine says it does not have (an engine
    that cannot tell, a remote one before it has asked, has none)."""
    configured = getattr(engine, "configured", None)
    if not callable(configured):
        return []
    known = getattr(engine, "connections", None)
    problems = []
    for (connection, action), tools in _by_rule(rules).items():
        if configured(connection, action):
            continue
        if isinstance(known, tuple) and connection not in known:
            there = ", ".join(map(str, known)) or "none"
            why = f"the engine has no connection {connection!r} (it has: {there})"
        else:
            why = f"connection {connection!r} has no action {action!r}"
        problems.append(f"the rule for {', '.join(map(repr, tools))}: {why}")
    return problems


def _template_problems(
    checks: Mapping[str, PermissionCheck], tools: Mapping[str, frozenset[str] | None]
) -> list[str]:
    problems = []
    for name, check in checks.items():
        arguments = tools.get(name)
        missing = [] if arguments is None else [f for f in check.fields if f not in arguments]
        if missing:
            takes = ", ".join(sorted(arguments or ())) or "no arguments"
            problems.append(
                f"the rule for {name!r}: resource template {check.template!r} names "
                f"{', '.join(missing)}, which the tool does not take (it takes: {takes})"
            )
    return problems


def _missing_problems(rules: Mapping[str, Rule], tools: Mapping[str, Any]) -> list[str]:
    missing = [name for name in rules if name not in tools]
    if not missing:
        return []
    has = ", ".join(sorted(tools)) or "none"
    return [f"rules for tools the agent does not have: {', '.join(missing)} (it has: {has})"]
