"""Every store keeps the same promises: atomic updates across processes, lists, keys by
prefix, expiry, and a clear StoreUnavailable when it cannot answer."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolpass.store import MemoryStore, Store, StoreUnavailable, open_store, update_reading
from toolpass.store.sqlite import SQLiteStore

from .conftest import finish, free_port, run_worker


def test_update_get_and_delete(url: str) -> None:
    store = open_store(url)
    assert isinstance(store, Store)
    assert store.get("k") is None
    assert store.update("k", lambda v: ({"n": 1, "tags": ["a"]}, v)) is None
    assert store.update("k", lambda v: ({**v, "n": v["n"] + 1}, v["n"])) == 1
    assert store.get("k") == {"n": 2, "tags": ["a"]}
    assert store.update("k", lambda v: (None, "gone")) == "gone"
    assert store.get("k") is None
    store.close()


def test_a_value_read_is_a_copy(url: str) -> None:
    store = open_store(url)
    store.update("k", lambda v: ({"list": [1]}, None))
    store.get("k")["list"].append(2)
    assert store.get("k") == {"list": [1]}


def test_a_failed_change_writes_nothing(url: str) -> None:
    store = open_store(url)
    store.update("k", lambda v: (1, None))

    def broken(value: object) -> tuple[object, None]:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        store.update("k", broken)
    assert store.get("k") == 1


def test_lists_append_and_read_from_a_position(url: str) -> None:
    store = open_store(url)
    assert store.items("log") == []
    assert [store.append("log", t) for t in ("a", "b", "c")] == [1, 2, 3]
    assert store.items("log") == ["a", "b", "c"]
    assert store.items("log", 2) == ["c"]
    assert store.items("log", 5) == []


def test_keys_by_prefix_with_glob_characters(url: str) -> None:
    store = open_store(url)
    for key in ("approval:1", "approval:2", "approval*:3", "other:1"):
        store.update(key, lambda v: (True, None))
    assert store.keys("approval:") == ["approval:1", "approval:2"]
    assert store.keys("approval*") == ["approval*:3"]
    assert store.keys("nothing") == []


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_values_and_lists_expire(kind: str, tmp_path: Path) -> None:
    clock = Clock()
    store: Store = (
        MemoryStore(clock=clock)
        if kind == "memory"
        else SQLiteStore(tmp_path / "s.db", clock=clock)
    )
    store.update("short", lambda v: (1, None), ttl=10)
    store.update("long", lambda v: (1, None), ttl=60)
    store.append("log", "x", ttl=10)
    clock.now += 9
    assert store.get("short") == 1
    assert store.items("log") == ["x"]
    clock.now += 2
    assert store.get("short") is None
    assert store.items("log") == []
    assert store.keys("") == ["long"]
    assert store.update("short", lambda v: (v, v)) is None  # an expired value is no value


def test_redis_values_and_lists_expire(redis_server: str) -> None:
    store = open_store(redis_server)
    store.update("short", lambda v: (1, None), ttl=0.5)
    store.append("log", "x", ttl=0.5)
    store.update("long", lambda v: (1, None), ttl=60)
    time.sleep(0.8)
    assert store.get("short") is None
    assert store.items("log") == []
    assert "long" in store.keys("")


def test_updates_are_atomic_across_threads(url: str) -> None:
    store = open_store(url)

    def add() -> None:
        for _ in range(50):
            store.update("n", lambda v: ((v or 0) + 1, None))

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get("n") == 200


def test_updates_are_atomic_across_processes(shared_url: str) -> None:
    workers = [run_worker("increment", shared_url, "100") for _ in range(4)]
    assert [finish(w) for w in workers] == ["done"] * 4
    assert open_store(shared_url).get("counter") == 400


def test_a_sqlite_store_survives_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    first = open_store(url)
    first.update("kept", lambda v: ({"a": 1}, None))
    first.append("log", "line")
    first.close()
    again = open_store(url)
    assert again.get("kept") == {"a": 1}
    assert again.items("log") == ["line"]


def test_a_store_that_cannot_answer_raises_store_unavailable(tmp_path: Path) -> None:
    redis = open_store(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(StoreUnavailable, match="Redis"):
        redis.get("k")
    with pytest.raises(StoreUnavailable):
        redis.update("k", lambda v: (1, None))
    (tmp_path / "not-a-db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreUnavailable, match="SQLite"):
        open_store(f"sqlite:///{tmp_path}/not-a-db")
    with pytest.raises(StoreUnavailable, match="SQLite"):
        open_store(f"sqlite:///{tmp_path}/no/such/dir/state.db")


def test_a_locked_sqlite_store_gives_up_after_its_timeout(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    holder = SQLiteStore(path)
    waiter = SQLiteStore(path, timeout=0.1)
    entered, leave = threading.Event(), threading.Event()

    def hold(value: object) -> tuple[object, None]:
        entered.set()
        leave.wait(5)
        return 1, None

    thread = threading.Thread(target=holder.update, args=("k", hold))
    thread.start()
    entered.wait(5)
    try:
        with pytest.raises(StoreUnavailable, match="locked"):
            waiter.update("k", lambda v: (2, None))
    finally:
        leave.set()
        thread.join()
    assert waiter.get("k") == 1


@pytest.mark.parametrize(
    "url",
    ["", "sqlite:///", "sqlite:///:memory:", "sqlite://relative.db", "postgres://x", "memory"],
)
def test_urls_that_name_no_store_are_refused_with_the_forms_named(url: str) -> None:
    with pytest.raises(ValueError, match=r"memory:, sqlite:///path/to/state\.db or redis://"):
        open_store(url)


def test_open_store_takes_a_store_or_nothing() -> None:
    mine = MemoryStore()
    assert open_store(mine) is mine
    assert isinstance(open_store(None), MemoryStore)
    with pytest.raises(TypeError, match="a URL or a Store"):
        open_store(42)  # type: ignore[arg-type]


_OPS = st.lists(
    st.tuples(
        st.integers(0, 1),  # which of two stores on the one URL (as two processes)
        st.sampled_from(["a", "b"]),  # the value's key
        st.sampled_from(["add", "read", "delete", "append"]),
        st.integers(0, 3),  # what to add or append; where to read the lists from
    ),
    max_size=25,
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_update_reading_is_update_then_items_in_one_step(url: str, ops: list[Any]) -> None:
    first, run = open_store(url), uuid.uuid4().hex
    stores = [first, first if url == "memory:" else open_store(url)]  # memory: not shared
    values: dict[str, int] = {}
    lists: dict[str, list[str]] = {"l1": [], "l2": []}
    for which, key, op, n in ops:
        name, store = f"{run}:{key}", stores[which]
        if op == "append":
            store.append(f"{run}:l{n % 2 + 1}", str(n))
            lists[f"l{n % 2 + 1}"].append(str(n))
            continue
        change: Any = {
            "add": lambda v, n=n: ((v or 0) + n, v),
            "read": lambda v: (v, v),
            "delete": lambda v: (None, v),
        }[op]
        result, read = update_reading(store, name, change, [(f"{run}:l1", n), (f"{run}:l2", 0)])
        assert result == values.get(key)
        assert read == [lists["l1"][n:], lists["l2"]]
        if op == "add":
            values[key] = values.get(key, 0) + n
        elif op == "delete":
            values.pop(key, None)
    for key in ("a", "b"):
        assert stores[0].get(f"{run}:{key}") == stores[1].get(f"{run}:{key}") == values.get(key)
    for store in stores:
        store.close()


def test_a_change_that_keeps_the_value_writes_nothing(url: str) -> None:
    store = open_store(url)
    store.update("k", lambda v: (1, None), ttl=0.5)
    for _ in range(3):
        assert update_reading(store, "k", lambda v: (v, v))[0] == 1  # a read: no new expiry
    deadline = time.monotonic() + 5
    while store.get("k") is not None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert update_reading(store, "k", lambda v: (v, v))[0] is None
    assert store.keys("k") == []  # reading nothing wrote nothing
    store.close()
