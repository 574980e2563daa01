"""Waiting for a decision without polling: a store wakes its waiters when a key changes,
also when another process writes it; ``ApprovalQueue.wait`` / ``wait_async`` sit on it."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from toolpass import ApprovalPending, ApprovalQueue, Session, Toolkit
from toolpass.store import open_store, wait_changed, wait_changed_async
from toolpass.store.sqlite import SQLiteStore

from .conftest import finish, run_worker

USER = "dana@example.com"
#: A waiter's timeout: a wake-up before half of it was not the timeout's, however busy the
#: machine (a bound of a second raced the scheduler on a loaded 2-core machine).
TIMEOUT = 30


def ask(queue: ApprovalQueue) -> str:
    """Make one request for a person's approval; its id."""
    kit = Toolkit(approver=queue, audit=[])
    merge = kit.secured_tool(lambda: "merged", name="merge", effect="write", approve=True)
    with Session(USER).active(), pytest.raises(ApprovalPending) as waiting:
        merge()
    return waiting.value.request_id


def later(seconds: float, action: object) -> threading.Timer:
    timer = threading.Timer(seconds, action)  # type: ignore[arg-type]
    timer.start()
    return timer


def test_a_waiter_wakes_on_the_write_from_another_thread(url: str) -> None:
    store = open_store(url)
    store.update("k", lambda _: ("before", None))
    later(0.3, lambda: store.update("k", lambda _: ("after", None)))
    started = time.monotonic()
    assert wait_changed(store, "k", "before", TIMEOUT) == "after"
    assert time.monotonic() - started < TIMEOUT / 2  # woken by the write, not the timeout


def test_a_waiter_returns_the_value_as_it_is_when_the_timeout_passes(url: str) -> None:
    store = open_store(url)
    store.update("k", lambda _: ("same", None))
    started = time.monotonic()
    assert wait_changed(store, "k", "same", 0.4) == "same"
    assert 0.35 < time.monotonic() - started < TIMEOUT / 2
    assert wait_changed(store, "k", "other", 10) == "same"  # already different: at once


async def test_an_async_waiter_wakes_on_a_write_from_a_thread(url: str) -> None:
    store = open_store(url)
    later(0.3, lambda: store.update("k", lambda _: (1, None)))
    started = time.monotonic()
    assert await wait_changed_async(store, "k", None, TIMEOUT) == 1
    assert time.monotonic() - started < TIMEOUT / 2
    assert await wait_changed_async(store, "k", 1, 0.2) == 1  # timeout


def test_redis_waits_on_its_channel_without_reading_in_a_loop(redis_server: str) -> None:
    """While nothing changes, the waiter reads the key once (before it sleeps on pub/sub)."""
    import redis

    store = open_store(redis_server)
    admin = redis.Redis.from_url(redis_server)
    admin.config_resetstat()
    assert wait_changed(store, "never-written", None, 1.5) is None
    gets = admin.info("commandstats").get("cmdstat_get", {}).get("calls", 0)
    assert gets <= 2
    admin.close()


def test_sqlite_reads_the_row_with_a_bounded_back_off(tmp_path: object) -> None:
    """SQLite tells no other process of a write: the waiter reads the row after pauses that
    double up to 250 ms, a few reads a second, not a busy loop."""
    store = SQLiteStore(f"{tmp_path}/state.db")
    reads = []
    store._connection().set_trace_callback(reads.append)  # the test's own view of the file
    assert wait_changed(store, "k", None, 2.0) is None
    selects = [r for r in reads if r.startswith("SELECT value")]
    assert 5 <= len(selects) <= 16  # 10, 20, 40, 80, 160, then every 250 ms


@pytest.mark.parametrize("answer", ["approve", "deny"])
def test_a_decision_in_another_process_wakes_the_waiter(shared_url: str, answer: str) -> None:
    queue = ApprovalQueue(store=shared_url)
    request_id = ask(queue)
    worker = run_worker("decide-later", shared_url, "0.5", answer)
    request = queue.wait(request_id, TIMEOUT)
    woke = time.time()
    decided, decided_at = finish(worker)  # type: ignore[misc]
    assert decided == [request_id]
    assert request.status == ("approved" if answer == "approve" else "denied")
    assert request.decided_by == "lead@example.com"
    # Woken by the decision, long before the timeout (how: the two tests above count reads).
    assert woke - decided_at < TIMEOUT / 2


async def test_wait_async_wakes_on_a_decision_in_another_process(shared_url: str) -> None:
    queue = ApprovalQueue(store=shared_url)
    request_id = ask(queue)
    worker = run_worker("decide-later", shared_url, "0.3", "approve")
    request = await queue.wait_async(request_id, 30)
    assert request.status == "approved"
    finish(worker)


def test_wait_returns_a_pending_request_after_the_timeout(url: str) -> None:
    queue = ApprovalQueue(store=url)
    request_id = ask(queue)
    started = time.monotonic()
    assert queue.wait(request_id, 0.3).status == "pending"
    assert time.monotonic() - started >= 0.3


def test_wait_reports_a_request_that_expires_while_waiting_as_expired(url: str) -> None:
    queue = ApprovalQueue(store=url, ttl=0.5)
    request_id = ask(queue)
    started = time.monotonic()
    assert queue.wait(request_id, TIMEOUT).status == "expired"  # at its expiry
    assert time.monotonic() - started < TIMEOUT / 2


async def test_wait_async_in_memory_wakes_on_a_decision_in_this_process() -> None:
    queue = ApprovalQueue()
    request_id = ask(queue)
    loop = asyncio.get_running_loop()
    loop.call_later(0.2, lambda: queue.deny(request_id, by="lee", reason="not today"))
    request = await queue.wait_async(request_id, 10)
    assert (request.status, request.reason) == ("denied", "not today")


def test_wait_for_an_unknown_request_is_a_key_error(url: str) -> None:
    queue = ApprovalQueue(store=url)
    with pytest.raises(KeyError):
        queue.wait("0123456789ab", 1)
    with pytest.raises(KeyError):
        queue.wait("../not-an-id", 1)
