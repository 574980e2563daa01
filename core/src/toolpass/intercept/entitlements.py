"""Entitlements: what each tool's body was seen to do, recorded, then held to.

``configure(record="toolpass-tools.yaml")`` writes, per tool, the actions its body performed,
with argument values turned back into ``{argument}`` templates, and the hosts it reached.
Records merge across runs and across processes writing at once. ``configure(entitlements=
"toolpass-tools.yaml")`` holds tools to the file: their user actions whose resource fills from
the arguments are checked before the body runs, limits are taken for the strongest recorded
effect, and at the wire a request matching no recorded action is ``unentitled_action`` and a
host the file does not list ``unknown_host``. A resource that does not fill from the
arguments is a literal or a glob (``*`` within a segment), checked at the wire.

The file is JSON, which is also YAML: it can be read without PyYAML, and edited as YAML
once PyYAML (``toolpass-core[yaml]``) is installed.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from toolpass.outcome.errors import ToolRefused
from toolpass.rules.lazy import lazy_pattern
from toolpass.rules.scope import compile_scope

if TYPE_CHECKING:
    from pathlib import Path

    from toolpass.intercept.call import CallUser, DeclaredTool

EFFECT_RANK = {"read": 0, "write": 1, "destructive": 2}
_FIELD = lazy_pattern(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_BOUNDARY = ":/@#!"


@dataclass(frozen=True, slots=True)
class Entitled:
    """One recorded action: ``resource`` is a template of the tool's arguments, a literal or
    a glob."""

    connection: str
    action: str
    resource: str
    as_: str  # "user" or "agent"

    @property
    def fields(self) -> list[str]:
        return _FIELD.findall(self.resource)

    def resource_for(self, arguments: Mapping[str, Any]) -> str | None:
        """The resource this action names for these arguments, or None if it does not fill."""
        values = {}
        for name in self.fields:
            value = arguments.get(name)
            if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
                return None
            values[name] = str(value)
        return _FIELD.sub(lambda m: values[m.group(1)], self.resource)

    def allows(
        self, connection: str, action: str, resource: str | None, arguments: Mapping[str, Any]
    ) -> bool:
        """Whether a request's (connection, action, resource) is this recorded action."""
        if (connection, action) != (self.connection, self.action):
            return False
        if resource is None:
            return False
        if self.fields:
            return self.resource_for(arguments) == resource
        if "*" in self.resource:
            return compile_scope(self.resource)(resource)
        return self.resource == resource


@dataclass(frozen=True, slots=True)
class ToolEntitlement:
    """What one tool may do."""

    effect: str
    actions: tuple[Entitled, ...]
    hosts: frozenset[str]

    def find(
        self, connection: str, action: str, resource: str | None, arguments: Mapping[str, Any]
    ) -> Entitled | None:
        return next(
            (a for a in self.actions if a.allows(connection, action, resource, arguments)), None
        )


class Entitlements:
    """The entitlements file, read once."""

    def __init__(self, tools: Mapping[str, ToolEntitlement], path: str = "") -> None:
        self.tools = dict(tools)
        self.path = path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Entitlements:
        from pathlib import Path

        data = _read(Path(path))
        tools = {}
        for name, entry in (data.get("tools") or {}).items():
            where = f"{os.fspath(path)}: tool {name!r}"
            try:
                actions = tuple(
                    Entitled(a["connection"], a["action"], a["resource"], a.get("as", "user"))
                    for a in entry.get("actions", ())
                )
                effect = entry.get("effect", "read")
                hosts = frozenset(entry.get("hosts", ()))
            except (KeyError, TypeError, AttributeError) as exc:
                raise ValueError(f"{where}: malformed entry ({exc})") from None
            if effect not in EFFECT_RANK or any(a.as_ not in ("user", "agent") for a in actions):
                raise ValueError(
                    f"{where}: effect must be read, write or destructive and 'as' user or agent"
                )
            tools[name] = ToolEntitlement(effect, actions, hosts)
        return cls(tools, os.fspath(path))

    def get(self, tool: str) -> ToolEntitlement | None:
        return self.tools.get(tool)


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"version": 1, "tools": {}}
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            import yaml
        except ImportError:
            raise ValueError(f"{path} is YAML: install toolpass-core[yaml] to read it") from None
        data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping with 'tools'")
    return data


def template(resource: str, arguments: Mapping[str, Any]) -> str:
    """``resource`` with each argument value it contains, between separators, replaced by
    ``{argument}`` (longest values first)."""
    values = sorted(
        (
            (str(v), k)
            for k, v in arguments.items()
            if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v)
        ),
        key=lambda p: len(p[0]),
        reverse=True,
    )
    out = resource
    for value, name in values:
        pattern = (
            rf"(?<![^{re.escape(_BOUNDARY)}])({re.escape(value)})(?![^{re.escape(_BOUNDARY)}])"
        )
        out = re.sub(pattern, "{" + name + "}", out)
    return out


class _Settings(Protocol):
    @property
    def strict(self) -> bool: ...
    @property
    def entitlements(self) -> Entitlements | None: ...


class EntitledKit(Protocol):
    """What ``entitlement`` reads of the toolkit running the call."""

    @property
    def settings(self) -> _Settings: ...


def entitlement(kit: EntitledKit, spec: DeclaredTool) -> ToolEntitlement | None:
    """What the file says ``spec``'s tool does; refuses a tool missing from it (``strict``)
    or declared weaker than what it was recorded doing."""
    settings = kit.settings
    assert settings.entitlements is not None
    entitled = settings.entitlements.get(spec.name)
    if entitled is None and settings.strict:
        raise ToolRefused(
            "unentitled_action",
            "toolpass has no record of what this tool does, so it was not run. Tell the user; "
            "an operator must record it.",
            detail=f"{spec.name} is not in {settings.entitlements.path}",
        )
    if (
        entitled is not None
        and spec.effect is not None
        and (EFFECT_RANK[entitled.effect] > EFFECT_RANK.get(spec.effect, 2))
    ):
        raise ToolRefused(
            "effect_mismatch",
            f"This tool is declared '{spec.effect}' but was recorded doing more "
            f"({entitled.effect}), so it was not run. Tell the user.",
        )
    return entitled


def entitled_user_actions(
    entitled: ToolEntitlement, arguments: Mapping[str, Any]
) -> list[tuple[Entitled, str]]:
    """The recorded user actions whose resource fills from these arguments."""
    found = []
    for action in entitled.actions:
        if action.as_ == "user" and action.fields:
            resource = action.resource_for(arguments)
            if resource is not None:
                found.append((action, resource))
    return found


class EntitledCheck:
    """Asks the engine about one recorded action before the body runs."""

    def __init__(self, engine: Any, action: Entitled, resource: str) -> None:
        self.engine, self.action, self.resource = engine, action, resource

    def __call__(self, call: CallUser) -> Any:
        return self.engine.check(
            call.user, self.action.connection, self.action.action, self.resource
        )

    async def acall(self, call: CallUser) -> Any:
        return await self.engine.acheck(
            call.user, self.action.connection, self.action.action, self.resource
        )


class Recorder:
    """Merges what tools do into the record file; safe for threads and for processes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from pathlib import Path

        self.path = Path(path)
        self._lock = threading.Lock()

    def record(
        self, tool: str, arguments: Mapping[str, Any], actions: Iterable[Mapping[str, Any]]
    ) -> None:
        seen, hosts, effect = [], set(), "read"
        for a in actions:
            if a.get("verdict") != "allowed" or not a.get("action"):
                continue
            resource = a.get("resource") or ""
            seen.append(
                {
                    "connection": a["connection"],
                    "action": a["action"],
                    "resource": template(resource, arguments),
                    "as": a["as"],
                }
            )
            hosts.add(a["origin"])
            if EFFECT_RANK.get(a.get("effect", "read"), 0) > EFFECT_RANK[effect]:
                effect = a["effect"]
        with self._lock, _file_lock(self.path):
            data = _read(self.path)
            tools = data.setdefault("tools", {})
            entry = tools.setdefault(tool, {"effect": "read", "hosts": [], "actions": []})
            if EFFECT_RANK[effect] > EFFECT_RANK.get(entry.get("effect", "read"), 0):
                entry["effect"] = effect
            entry["hosts"] = sorted(set(entry.get("hosts", [])) | hosts)
            known = {json.dumps(x, sort_keys=True) for x in entry.get("actions", [])}
            for item in seen:
                if json.dumps(item, sort_keys=True) not in known:
                    entry.setdefault("actions", []).append(item)
                    known.add(json.dumps(item, sort_keys=True))
            entry["actions"].sort(key=lambda x: (x["connection"], x["action"], x["resource"]))
            _write(self.path, data)


def _write(path: Path, data: dict[str, Any]) -> None:
    import tempfile

    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock beside the file (``<name>.lock``), across processes."""
    import fcntl

    fd = os.open(path.with_name(path.name + ".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
