"""A store in Redis: shared by every process of a deployment, on any host.

An update is one round trip: the change is computed from the value this process last saw of
the key, and a script (``EVALSHA``) writes the result only if the key still holds that value,
else answers the value it holds, from which the change is computed again. The same script
reads lists (``update_reading``), so a tool call's session step is one round trip. A Redis that
cannot be reached, refuses, or keeps losing the race raises :class:`StoreUnavailable`. Needs
the ``redis`` extra.

Each update also publishes on the key's channel (in the same script), so ``wait`` sleeps on a
pub/sub subscription, woken by the write from any process, never polling.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

from toolpass.store.base import Change, StoreUnavailable, T

#: Attempts at one update while other processes keep writing the key.
_ATTEMPTS = 100
#: Values last seen, per key, kept by one store (beyond that, the record starts over).
_KNOWN = 4096

# Compare and set, then read lists: KEYS[1] the value's key, KEYS[2..] lists; ARGV: what the
# caller saw ("" for nothing, "=" and the value, "?" for not known), the new value ("" deletes,
# "-" keeps), milliseconds to keep it ("" for ever), the channel to publish on, then where to
# read each list from. Answers {1, list...} once written (or kept), else {0, what the key holds
# now, list...}: nothing is written, and the caller computes its change again from that value.
# A value written with a ttl keeps the lists as long (they never expire before it).
_SWAP = """
local now = redis.call('GET', KEYS[1])
now = now and ('=' .. now) or ''
local out = {0, now}
if now == ARGV[1] then
  out = {1}
  if ARGV[2] == '' then
    redis.call('DEL', KEYS[1])
  elseif ARGV[2] ~= '-' then
    if ARGV[3] == '' then
      redis.call('SET', KEYS[1], ARGV[2])
    else
      redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
      for i = 2, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[3]) end
    end
  end
  if ARGV[2] ~= '-' then redis.call('PUBLISH', ARGV[4], 'changed') end
end
for i = 2, #KEYS do
  out[#out + 1] = redis.call('LRANGE', KEYS[i], ARGV[i + 3], -1)
end
return out
"""
#: The value of a key this store has not seen yet, and the change that writes nothing.
_UNKNOWN, _KEEP = "?", "-"


class RedisStore:
    """A :class:`~toolpass.store.Store` in the Redis at ``url``; keys start with ``prefix``."""

    def __init__(self, url: str, *, prefix: str = "toolpass:", timeout: float = 2.0) -> None:
        try:
            import redis
        except ImportError:
            raise ImportError(
                "a Redis store needs the redis package: pip install 'toolpass-core[redis]'"
            ) from None
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError,)
        self._no_script: type[BaseException] = redis.exceptions.NoScriptError
        self.url = url
        self.prefix = prefix
        # redis-py's types say bytes | str for every answer: decode_responses makes it str.
        self._redis: Any = redis.Redis.from_url(url, **_options(timeout))
        self._timeout = timeout
        self._sha = hashlib.sha1(_SWAP.encode(), usedforsecurity=False).hexdigest()
        self._known: dict[str, str] = {}  # key -> "" (nothing) or "=" and the value last seen
        self._own = threading.local()  # each thread's connection for the script
        # Every such connection, to close; one whose thread ended goes with it.
        self._made: weakref.WeakSet[Any] = weakref.WeakSet()
        self._making = threading.Lock()

    def __repr__(self) -> str:
        return f"RedisStore({self._redis.connection_pool.connection_kwargs.get('host')!r})"

    def _failed(self, exc: BaseException) -> StoreUnavailable:
        return StoreUnavailable(f"the Redis store failed: {type(exc).__name__}: {exc}")

    def get(self, key: str) -> Any:
        try:
            raw = self._redis.get(self.prefix + "v:" + key)
        except self._errors as exc:
            raise self._failed(exc) from None
        self._saw(key, "" if raw is None else "=" + raw)
        return _loads(raw)

    def _saw(self, key: str, seen: str) -> None:
        if len(self._known) >= _KNOWN:
            self._known.clear()
        self._known[key] = seen

    def update(self, key: str, change: Change[T], *, ttl: float | None = None) -> T:
        return self._swapping(key, change, (), ttl, always=True)[0]

    def update_reading(
        self,
        key: str,
        change: Change[T],
        lists: Sequence[tuple[str, int]],
        *,
        ttl: float | None = None,
    ) -> tuple[T, list[list[str]]]:
        """:func:`~toolpass.store.update_reading` in one script: one round trip when this
        store saw the key's value last (or the change writes nothing), else two."""
        return self._swapping(key, change, lists, ttl, always=False)

    def _swapping(
        self,
        key: str,
        change: Change[T],
        lists: Sequence[tuple[str, int]],
        ttl: float | None,
        *,
        always: bool,
    ) -> tuple[T, list[list[str]]]:
        keys = [self.prefix + "v:" + key, *(self.prefix + "l:" + name for name, _ in lists)]
        ms = "" if ttl is None else str(max(1, int(ttl * 1000)))
        tail = [self._channel(key), *(start for _, start in lists)]
        seen, lists_now = self._known.get(key, _UNKNOWN), None
        try:
            for _ in range(_ATTEMPTS):
                value, result = change(_loads_seen(seen))
                new = "" if value is None else "=" + json.dumps(value)
                if lists_now is not None and new == seen and not always:
                    self._saw(key, seen)  # the value the script just answered stays
                    return result, lists_now
                keep = seen == _UNKNOWN or (new == seen and not always)
                answer = self._swap(keys, seen, _KEEP if keep else new[1:], ms, *tail)
                if answer[0] == 1:
                    self._saw(key, seen if keep else new)
                    return result, answer[1:]
                seen, lists_now = answer[1], answer[2:]
        except self._errors as exc:
            self._known.pop(key, None)
            raise self._failed(exc) from None
        self._known.pop(key, None)
        raise StoreUnavailable(f"the Redis store: {key} kept changing under {_ATTEMPTS} updates")

    def _swap(self, keys: list[str], *args: object) -> Any:
        """The compare-and-set script's answer; loaded first where Redis does not know it
        (a new or restarted Redis). Sent on this thread's own connection: redis-py's command
        path (the pool, its hooks, ``Script``) costs more than the round trip on a busy host."""
        command = ("EVALSHA", self._sha, len(keys), *keys, *args)
        try:
            return self._ask(command)
        except self._no_script:
            self._redis.script_load(_SWAP)
            return self._ask(command)

    def _ask(self, command: tuple[object, ...]) -> Any:
        """One command and its answer on this thread's connection, made again after a fork
        or when Redis closed it (a restart); on a failure it is closed, never sent again."""
        conn = getattr(self._own, "conn", None)
        if conn is None or self._own.pid != os.getpid():
            conn = self._own.conn = self._redis.connection_pool.make_connection()
            self._own.pid = os.getpid()
            with self._making:
                self._made.add(conn)
        try:
            stale = conn.can_read()  # an idle connection has nothing to read unless closed
        except self._errors:
            stale = True
        if stale:
            conn.disconnect()
        try:
            conn.send_command(*command)
            return conn.read_response()
        except self._errors as exc:
            if not isinstance(exc, self._no_script):
                conn.disconnect()
            raise

    def _channel(self, key: str) -> str:
        return self.prefix + "c:" + key

    def wait(self, key: str, seen: Any, timeout: float) -> Any:
        """The value at ``key`` once it is not ``seen`` (a write publishes on the key's
        channel), or as it is after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        try:
            with self._redis.pubsub() as pubsub:
                pubsub.subscribe(self._channel(key))
                # Subscribed before the first read, so no write after that read is missed.
                pubsub.get_message(timeout=self._timeout)
                while (value := self.get(key)) == seen:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return value
                    pubsub.get_message(timeout=left)
                return value
        except self._errors as exc:
            raise self._failed(exc) from None

    async def wait_async(self, key: str, seen: Any, timeout: float) -> Any:
        """:meth:`wait`, awaited, on a connection of its own."""
        import redis.asyncio

        deadline = time.monotonic() + timeout
        client: Any = redis.asyncio.Redis.from_url(
            self.url, **_options(self._timeout, asynchronous=True)
        )
        try:
            async with client.pubsub() as pubsub:
                await pubsub.subscribe(self._channel(key))
                await pubsub.get_message(timeout=self._timeout)
                name = self.prefix + "v:" + key
                while (value := _loads(await client.get(name))) == seen:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return value
                    await pubsub.get_message(timeout=left)
                return value
        except self._errors as exc:
            raise self._failed(exc) from None
        finally:
            await client.aclose()

    def append(self, key: str, item: str, *, ttl: float | None = None) -> int:
        name = self.prefix + "l:" + key
        try:
            with self._redis.pipeline() as pipe:
                pipe.rpush(name, item)
                if ttl is not None:
                    pipe.pexpire(name, max(1, int(ttl * 1000)))
                length = pipe.execute()[0]
        except self._errors as exc:
            raise self._failed(exc) from None
        return int(length)

    def items(self, key: str, start: int = 0) -> list[str]:
        try:
            return list(self._redis.lrange(self.prefix + "l:" + key, start, -1))
        except self._errors as exc:
            raise self._failed(exc) from None

    def keys(self, prefix: str) -> list[str]:
        head = self.prefix + "v:"
        pattern = head + "".join(f"\\{c}" if c in "*?[]\\" else c for c in prefix) + "*"
        try:
            found = self._redis.scan_iter(match=pattern, count=500)
            return sorted(k[len(head) :] for k in found)
        except self._errors as exc:
            raise self._failed(exc) from None

    def close(self) -> None:
        with self._making:
            for conn in list(self._made):
                conn.disconnect()
        self._redis.close()


def _options(timeout: float, *, asynchronous: bool = False) -> dict[str, Any]:
    """A client that answers within ``timeout`` seconds or fails, and never sends a command
    again: an update whose answer was lost may have been applied, and sending it again would
    apply it twice (redis-py retries 10 times by default, backing off up to a second, so a
    Redis that is down would hold each call for seconds). A pooled connection that Redis
    closed (a restart) is replaced when it is taken from the pool, before anything is sent."""
    from redis.asyncio.retry import Retry as AsyncRetry
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "decode_responses": True,
        "retry": (AsyncRetry if asynchronous else Retry)(NoBackoff(), 0),
    }


def _loads(raw: str | None) -> Any:
    return None if raw is None else json.loads(raw)


def _loads_seen(seen: str) -> Any:
    """The value a seen mark holds: ``=`` and JSON; nothing (``""``) or not known is None."""
    return json.loads(seen[1:]) if seen.startswith("=") else None
