"""Who may decide an approval request: approvers by tool, effect or connection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: The kinds of rule an approvers key names (a bare key is an effect).
KINDS = ("tool", "effect", "connection")


class Routing:
    """``approvers`` maps a rule to the people or groups who decide the requests it matches:
    ``"tool:deploy"``, ``"connection:github"``, ``"effect:destructive"`` (or just
    ``"destructive"``). ``groups`` maps a group's name to its people (or other groups). A
    request's approvers are everyone its rules name; a request no rule matches may be decided
    by anyone but the person it is for. Names are compared exactly.
    """

    def __init__(
        self,
        approvers: Mapping[str, Sequence[str]] | None = None,
        groups: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.rules = {_rule(key): _names(key, names) for key, names in (approvers or {}).items()}
        self.groups = {str(name): _names(name, people) for name, people in (groups or {}).items()}
        for (kind, value), names in self.rules.items():
            found: list[str] = []
            for name in names:
                self._expand(name, found, set())
            if not found:
                raise ValueError(
                    f"the approvers of {kind}:{value} reach nobody (an empty list, or groups "
                    "with no person in them); a rule that names nobody would let anyone decide"
                )

    def __bool__(self) -> bool:
        return bool(self.rules)

    def approvers(
        self, *, tool: str, effect: str | None, connection: str | None
    ) -> tuple[str, ...]:
        """The people who may decide a request for ``tool`` (of ``effect``, through
        ``connection``), groups expanded; empty when no rule matches."""
        found: list[str] = []
        for kind, value in (("tool", tool), ("effect", effect), ("connection", connection)):
            for name in self.rules.get((kind, value), ()) if value is not None else ():
                self._expand(name, found, set())
        return tuple(found)

    def _expand(self, name: str, found: list[str], seen: set[str]) -> None:
        if name in seen:
            return
        seen.add(name)
        if name not in self.groups:
            if name not in found:
                found.append(name)
            return
        for member in self.groups[name]:
            self._expand(member, found, seen)


def _rule(key: str) -> tuple[str, str]:
    kind, sep, name = key.partition(":") if isinstance(key, str) else ("", "", "")
    if key and isinstance(key, str) and not sep:
        return "effect", key
    if kind not in KINDS or not name:
        raise ValueError(
            f"an approvers key is 'tool:NAME', 'effect:NAME' or 'connection:NAME' (or an "
            f"effect alone), not {key!r}"
        )
    return kind, name


def _names(key: str, names: Sequence[str]) -> tuple[str, ...]:
    if isinstance(names, str) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f'{key!r} needs a list of names, e.g. ["ops-leads"], not {names!r}')
    return tuple(names)
