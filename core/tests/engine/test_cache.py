from __future__ import annotations

import threading
import time

import pytest
from toolpass.engine.cache import DecisionCache
from toolpass.wire.decision import Decision


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def ttl(seconds: float):  # type: ignore[no-untyped-def]
    return lambda decision: seconds


def test_allow_and_deny_are_cached_until_they_expire() -> None:
    clock = Clock()
    cache = DecisionCache(clock=clock)
    asked: list[str] = []

    def ask() -> Decision:
        asked.append("x")
        return Decision.allow("yes")

    first = cache.lookup("k", ask, ttl(30))
    again = cache.lookup("k", ask, ttl(30))
    assert (first.cached, again.cached, again.reason, len(asked)) == (False, True, "yes", 1)
    clock.now += 30
    assert not cache.lookup("k", ask, ttl(30)).cached
    assert len(asked) == 2
    cache.put("d", Decision.deny("no"), 10)
    assert cache.get("d") == Decision.deny("no", cached=True)


def test_unknown_and_zero_ttl_are_never_cached() -> None:
    cache = DecisionCache()
    cache.put("u", Decision.unknown("timeout"), 60)
    cache.put("z", Decision.allow(), 0)
    assert (cache.get("u"), cache.get("z"), len(cache)) == (None, None, 0)


def test_fresh_skips_the_cache_and_refreshes_it() -> None:
    cache = DecisionCache()
    cache.put("k", Decision.allow("old"), 60)
    fresh = cache.lookup("k", lambda: Decision.deny("new"), ttl(60), fresh=True)
    assert (fresh.reason, fresh.cached) == ("new", False)
    assert cache.get("k") == Decision.deny("new", cached=True)


def test_least_recently_used_goes_first() -> None:
    cache = DecisionCache(max_entries=2)
    cache.put("a", Decision.allow(), 60)
    cache.put("b", Decision.allow(), 60)
    cache.get("a")
    cache.put("c", Decision.allow(), 60)
    assert (cache.get("a") is not None, cache.get("b"), cache.get("c") is not None) == (
        True,
        None,
        True,
    )


def test_concurrent_identical_questions_make_one_look_up() -> None:
    cache = DecisionCache()
    calls = 0
    release = threading.Event()
    lock = threading.Lock()

    def ask() -> Decision:
        nonlocal calls
        with lock:
            calls += 1
        release.wait(5)
        return Decision.allow("once")

    results: list[Decision] = []
    threads = [
        threading.Thread(target=lambda: results.append(cache.lookup("k", ask, ttl(60))))
        for _ in range(16)
    ]
    for t in threads:
        t.start()
    time.sleep(0.05)
    release.set()
    for t in threads:
        t.join()
    assert calls == 1
    assert len(results) == 16
    assert all(r.reason == "once" for r in results)


def test_unknown_is_shared_by_the_flight_but_not_kept() -> None:
    cache = DecisionCache()
    assert cache.lookup("k", lambda: Decision.unknown("503"), ttl(60)).decision == "unknown"
    assert cache.lookup("k", lambda: Decision.allow(), ttl(60)).decision == "allow"


def test_a_failing_look_up_reaches_every_waiter() -> None:
    cache = DecisionCache()
    started = threading.Event()

    def ask() -> Decision:
        started.set()
        time.sleep(0.05)
        raise RuntimeError("boom")

    errors: list[BaseException] = []

    def run() -> None:
        try:
            cache.lookup("k", ask, ttl(60))
        except RuntimeError as e:
            errors.append(e)

    leader = threading.Thread(target=run)
    leader.start()
    started.wait()
    follower = threading.Thread(target=run)
    follower.start()
    leader.join()
    follower.join()
    assert len(errors) == 2


def test_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        DecisionCache(0)


def test_the_kits_remembered_values_are_not_answered_in_a_fresh_check() -> None:
    """Every integration's own cache (``Remembered``) is bypassed by ``fresh=True``, which
    the engine passes down to the check; what the fresh check learns is kept."""
    from toolpass.integrations.base import Remembered, asking_fresh, fresh_lookups

    kept: Remembered[str, str] = Remembered()
    kept.put("dana", "admin", ttl=60)
    with fresh_lookups():
        assert asking_fresh()
        assert kept.get("dana") is None
        kept.put("dana", "member", ttl=60)
    assert not asking_fresh()
    assert kept.get("dana") == "member"
