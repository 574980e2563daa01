"""The systems toolpass checks, each found through the entry point group
``toolpass.integrations``. Core registers its own there (one line each in its
pyproject.toml); a third-party distribution adds a system the same way, without a fork::

    [project.entry-points."toolpass.integrations"]
    tickets = "acme_toolpass.tickets:INTEGRATION"

The entry point's name is what a connection's ``integration:`` says; it names an
:class:`~toolpass.integrations.base.Integration` subclass of that ``name``. One that cannot
be loaded (it raises at import, exits, or its distribution's metadata cannot be read) is
reported with the distribution that registers it, and only the connections naming it fail;
the others load as before.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import TYPE_CHECKING

from toolpass.rules.lazy import lazy_pattern
from toolpass.wire.errors import ConfigError

if TYPE_CHECKING:
    from importlib.metadata import Distribution, EntryPoint

    from toolpass.integrations.base import Integration

GROUP = "toolpass.integrations"
_NAME = lazy_pattern(r"[a-z][a-z0-9_]*")
log = logging.getLogger("toolpass")
_unreadable: set[str] = set()  # distributions already reported as unreadable


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
    except (Exception, SystemExit) as e:  # a broken plugin: its own connections fail only
        raise ConfigError(f"{where} cannot be loaded: {type(e).__name__}: {e}") from e
    if not (isinstance(cls, type) and issubclass(cls, Integration)):
        raise ConfigError(f"{where} is not an Integration class")
    if cls.name != entry.name:
        raise ConfigError(f"{where} is named {cls.name!r}")
    return cls


_found: tuple[tuple[tuple[str, int], ...], dict[str, list[EntryPoint]]] | None = None


def _registered() -> dict[str, list[EntryPoint]]:
    """:func:`_scan`'s answer, read again only when a folder on ``sys.path`` changed (as
    importlib's own path cache does): reading every distribution's metadata takes about
    70 ms, and every connection parsed asks."""
    global _found
    state = _path_state()
    if _found is None or _found[0] != state:
        _found = (state, _scan())
    return _found[1]


def _path_state() -> tuple[tuple[str, int], ...]:
    """Each folder on ``sys.path`` and when it last changed (installing or removing a
    distribution adds or removes an entry in it); -1 for one that cannot be read."""
    state: list[tuple[str, int]] = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            state.append((entry, -1))
    return tuple(state)


def _scan() -> dict[str, list[EntryPoint]]:
    """The group's entry points with a valid name, by name, from each distribution installed
    (the first of a name on the path, as ``entry_points`` takes them). A distribution whose
    metadata cannot be read is left out alone: ``entry_points()`` would raise for all."""
    from importlib.metadata import distributions  # on first use: it costs an import

    found: dict[str, list[EntryPoint]] = {}
    seen: set[str] = set()
    for dist in distributions():
        try:
            name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()
            entries = () if name in seen else dist.entry_points.select(group=GROUP)
        except Exception as e:
            _skipped(dist, e)
            continue
        if name:
            seen.add(name)
        for entry in entries:
            if _NAME.fullmatch(entry.name):
                found.setdefault(entry.name, []).append(entry)
    return found


def _skipped(dist: Distribution, error: Exception) -> None:
    where = str(getattr(dist, "_path", "a distribution"))
    if where not in _unreadable:
        _unreadable.add(where)
        log.warning("toolpass skips %s: its metadata cannot be read (%s)", where, error)


def _origin(entry: EntryPoint) -> str:
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"
