"""A store in one SQLite file: shared by the processes of one host, kept across restarts.

Each update is one ``BEGIN IMMEDIATE`` transaction, so writers queue on the file's lock
(WAL mode lets readers go on); a lock held past ``timeout`` seconds, a full disk or a file
that is not a database raise :class:`StoreUnavailable`.

``wait`` is woken at once by a write made in this process; SQLite tells no other process of
a write, so a write made elsewhere is seen by reading the one row again after pauses that
double from 10 ms to 250 ms (a change is seen at most 250 ms late, for one indexed read
per pause of each waiter).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from toolpass.store.base import Change, StoreUnavailable, T
from toolpass.store.waiting import Wakers, backoff, poll, poll_async

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS toolpass_values "
    "(key TEXT PRIMARY KEY, value TEXT NOT NULL, expires REAL)",
    "CREATE TABLE IF NOT EXISTS toolpass_lists "
    "(key TEXT NOT NULL, seq INTEGER NOT NULL, item TEXT NOT NULL, expires REAL, "
    "PRIMARY KEY (key, seq))",
)
#: Expired rows are deleted by one update in this many.
_PURGE_EVERY = 1000


class SQLiteStore:
    """A :class:`~toolpass.store.Store` in the SQLite file at ``path`` (created if needed)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = os.fspath(path)
        self.timeout = timeout
        self._clock = clock
        self._local = threading.local()
        self._updates = 0
        self._wakers = Wakers()
        with self._transaction() as db:
            for statement in _SCHEMA:
                db.execute(statement)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def _connection(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None or getattr(self._local, "pid", None) != os.getpid():
            db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db, self._local.pid = db, os.getpid()
        return db

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        try:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"the SQLite store {self.path} failed: {exc}") from None

    def get(self, key: str) -> Any:
        with self._transaction(write=False) as db:
            row = db.execute(
                "SELECT value FROM toolpass_values WHERE key = ? AND "
                "(expires IS NULL OR expires > ?)",
                (key, self._clock()),
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def update(self, key: str, change: Change[T], *, ttl: float | None = None) -> T:
        return self._update(key, change, (), ttl, always=True)[0]

    def update_reading(
        self,
        key: str,
        change: Change[T],
        lists: Sequence[tuple[str, int]],
        *,
        ttl: float | None = None,
    ) -> tuple[T, list[list[str]]]:
        """:func:`~toolpass.store.update_reading` in one transaction."""
        return self._update(key, change, lists, ttl, always=False)

    def _update(
        self,
        key: str,
        change: Change[T],
        lists: Sequence[tuple[str, int]],
        ttl: float | None,
        *,
        always: bool,
    ) -> tuple[T, list[list[str]]]:
        now = self._clock()
        with self._transaction() as db:
            row = db.execute(
                "SELECT value FROM toolpass_values WHERE key = ? AND "
                "(expires IS NULL OR expires > ?)",
                (key, now),
            ).fetchone()
            value, result = change(None if row is None else json.loads(row[0]))
            new = None if value is None else json.dumps(value)
            changed = always or new != (None if row is None else row[0])
            if changed and new is None:
                db.execute("DELETE FROM toolpass_values WHERE key = ?", (key,))
            elif changed:
                expires = None if ttl is None else now + ttl
                db.execute(
                    "INSERT OR REPLACE INTO toolpass_values VALUES (?, ?, ?)", (key, new, expires)
                )
                if expires is not None:  # the lists live as long as the value
                    db.executemany(
                        "UPDATE toolpass_lists SET expires = ? WHERE key = ? AND expires > ?",
                        [(expires, name, now) for name, _ in lists],
                    )
            if changed:
                self._purge_now_and_then(db, now)
            read = [self._items(db, name, start, now) for name, start in lists]
        if changed:
            self._wakers.wake()
        return result, read

    def _purge_now_and_then(self, db: sqlite3.Connection, now: float) -> None:
        self._updates += 1
        if self._updates % _PURGE_EVERY == 0:
            db.execute("DELETE FROM toolpass_values WHERE expires <= ?", (now,))
            db.execute("DELETE FROM toolpass_lists WHERE expires <= ?", (now,))

    def wait(self, key: str, seen: Any, timeout: float) -> Any:
        """The value at ``key`` once it is not ``seen``, or as it is after ``timeout`` seconds
        (see the module's docstring for how a change is seen)."""
        with self._wakers.waiting() as pause:
            return poll(lambda: self.get(key), seen, timeout, pause, backoff())

    async def wait_async(self, key: str, seen: Any, timeout: float) -> Any:
        """:meth:`wait`, awaited (each read of the row is a quick local one, made inline)."""
        async with self._wakers.waiting_async() as pause:
            return await poll_async(lambda: self.get(key), seen, timeout, pause, backoff())

    def append(self, key: str, item: str, *, ttl: float | None = None) -> int:
        now = self._clock()
        with self._transaction() as db:
            db.execute("DELETE FROM toolpass_lists WHERE key = ? AND expires <= ?", (key, now))
            (length,) = db.execute(
                "SELECT count(*) FROM toolpass_lists WHERE key = ?", (key,)
            ).fetchone()
            expires = None if ttl is None else now + ttl
            db.execute(
                "INSERT INTO toolpass_lists VALUES (?, ?, ?, ?)", (key, length, item, expires)
            )
            db.execute("UPDATE toolpass_lists SET expires = ? WHERE key = ?", (expires, key))
        return int(length) + 1

    def items(self, key: str, start: int = 0) -> list[str]:
        with self._transaction(write=False) as db:
            return self._items(db, key, start, self._clock())

    def _items(self, db: sqlite3.Connection, key: str, start: int, now: float) -> list[str]:
        rows = db.execute(
            "SELECT item FROM toolpass_lists WHERE key = ? AND seq >= ? AND "
            "(expires IS NULL OR expires > ?) ORDER BY seq",
            (key, start, now),
        ).fetchall()
        return [row[0] for row in rows]

    def keys(self, prefix: str) -> list[str]:
        with self._transaction(write=False) as db:
            rows = db.execute(
                "SELECT key FROM toolpass_values WHERE substr(key, 1, ?) = ? AND "
                "(expires IS NULL OR expires > ?) ORDER BY key",
                (len(prefix), prefix, self._clock()),
            ).fetchall()
        return [row[0] for row in rows]

    def close(self) -> None:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
