"""The systems toolpass checks, each found through the entry point group
``toolpass.integrations``. Core registers its own there (one line each in its
pyproject.toml); a third-party distribution adds a system the same way, without a fork::

    [project.entry-points."toolpass.integrations"]
    tickets = "acme_toolpass.tickets:INTEGRATION"

The entry point's name is what a connection's ``integration:`` says; it names an
:class:`~toolpass.integrations.base.Integration` subclass of that ``name``. One that cannot
be loaded is reported with the distribution that registers it, and only the connections
naming it fail; the others load as before.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from toolpass.wire.errors import ConfigError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from toolpass.integrations.base import Integration

GROUP = "toolpass.integrations"
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def available() -> list[str]:
    """The names of the integrations installed (core's and third parties'), sorted."""
    return sorted(_registered())


def get(name: str) -> type[Integration]:
    """The integration called ``name``; :class:`ConfigError` when there is none, when two
    distributions claim the name, or when it cannot be loaded."""
    found = _registered().get(name, [])
    if not found:
        raise ConfigError(
            f"no integration named {name!r} (available: {', '.join(available()) or 'none'})"
        )
    if len(found) > 1:
        raise ConfigError(
            f"integration {name!r} is registered by {' and '.join(map(_origin, found))}: "
            "uninstall one of them"
        )
    return _load(found[0])


def _load(entry: EntryPoint) -> type[Integration]:
    from toolpass.integrations.base import Integration

    where = f"integration {entry.name!r} ({entry.value}, from {_origin(entry)})"
    try:
        cls = entry.load()
    except Exception as e:  # a broken plugin: its own connections fail, never the others
        raise ConfigError(f"{where} cannot be loaded: {type(e).__name__}: {e}") from e
    if not (isinstance(cls, type) and issubclass(cls, Integration)):
        raise ConfigError(f"{where} is not an Integration class")
    if cls.name != entry.name:
        raise ConfigError(f"{where} is named {cls.name!r}")
    return cls


def _registered() -> dict[str, list[EntryPoint]]:
    """The group's entry points with a valid name, by name."""
    from importlib.metadata import entry_points  # on first use: it costs an import

    found: dict[str, list[EntryPoint]] = {}
    for entry in entry_points(group=GROUP):
        if _NAME.fullmatch(entry.name):
            found.setdefault(entry.name, []).append(entry)
    return found


def _origin(entry: EntryPoint) -> str:
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"
