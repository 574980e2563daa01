"""Shared state: what several processes serving one deployment must agree on.

Session flags and counts, limits, approvals, the untrusted-text record and the decision
cache live in a :class:`Store`. Memory is the default (one process); SQLite holds them for
the processes of one host and survives a restart; Redis holds them for many hosts. Choose
with :func:`open_store` (``"memory:"``, ``"sqlite:///path/to/state.db"``,
``"redis://host:6379/0"``).

A store answers or raises :class:`StoreUnavailable`; the pipeline turns that into a refusal
(``store_unavailable``), never into a call that runs unchecked.

Values are JSON: ``None``, booleans, numbers, strings, lists and dicts of them.
"""

from __future__ import annotations

from toolpass.store.base import (
    Change,
    ReadsWhileUpdating,
    Store,
    StoreUnavailable,
    update_reading,
)
from toolpass.store.memory import MemoryStore
from toolpass.store.waiting import Watchable, wait_changed, wait_changed_async


def open_store(url: str | Store | None) -> Store:
    """The store ``url`` names: ``memory:``, ``sqlite:///<absolute path>`` (``sqlite:///:memory:``
    is not shared and so refused), ``redis://``/``rediss://``/``unix://`` (needs the ``redis``
    extra). A :class:`Store` is returned as it is; None is a new :class:`MemoryStore`."""
    if url is None:
        return MemoryStore()
    if not isinstance(url, str):
        if isinstance(url, Store):
            return url
        raise TypeError(f"a store is a URL or a Store, not {type(url).__name__}")
    kind = store_kind(url)
    if kind == "sqlite":
        from toolpass.store.sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(url))
    if kind == "redis":
        from toolpass.store.redis import RedisStore

        return RedisStore(url)
    return MemoryStore()


def sqlite_path(url: str) -> str:
    """The file a ``sqlite:///`` URL names, always an absolute path, as in a ``file:///``
    URL: ``sqlite:///var/lib/toolpass/state.db`` is ``/var/lib/toolpass/state.db`` (and
    SQLAlchemy's four slashes, ``sqlite:////var/...``, name the same file)."""
    return "/" + url[len("sqlite:///") :].lstrip("/")


def store_kind(url: str) -> str:
    """``"memory"``, ``"sqlite"`` or ``"redis"``: the kind of store ``url`` names, without
    opening it; ``ValueError`` saying which forms there are when it names none."""
    scheme, sep, rest = url.partition(":")
    if scheme == "memory" and sep:
        return "memory"
    if (
        scheme == "sqlite"
        and rest.startswith("///")
        and rest[3:].strip("/") not in ("", ":memory:")
    ):
        return "sqlite"
    if scheme in ("redis", "rediss", "unix") and sep:
        return "redis"
    raise ValueError(
        f"not a store URL: {url!r} (use memory:, sqlite:///path/to/state.db or "
        "redis://host:6379/0; a sqlite path is absolute: "
        "sqlite:///var/lib/toolpass/state.db is the file /var/lib/toolpass/state.db)"
    )


__all__ = [
    "Change",
    "MemoryStore",
    "ReadsWhileUpdating",
    "Store",
    "StoreUnavailable",
    "Watchable",
    "open_store",
    "sqlite_path",
    "store_kind",
    "update_reading",
    "wait_changed",
    "wait_changed_async",
]
