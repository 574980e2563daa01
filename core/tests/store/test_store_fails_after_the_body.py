"""A store that fails after a tool's body ran (what it read cannot be recorded): the output is
withheld, and the refusal says the tool ran, so the model does not run it again."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from toolpass import Toolkit, ToolRefused
from toolpass.store import Store
from toolpass.store.sqlite import SQLiteStore

from .conftest import free_port, redis_process


@pytest.fixture(params=["sqlite", "redis"])
def failing(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Store, Callable[[], None]]]:
    """A store, and what makes it fail from then on."""
    if request.param == "sqlite":
        path = tmp_path / "state.db"
        store = SQLiteStore(path, timeout=0.1)
        holder = sqlite3.connect(path, isolation_level=None)

        def lock() -> None:
            holder.execute("BEGIN EXCLUSIVE")  # every other connection times out

        yield store, lock
        holder.close()
        store.close()
        return
    from toolpass.store.redis import RedisStore

    port = free_port()
    server = redis_process(tmp_path, port)
    store = RedisStore(f"redis://127.0.0.1:{port}/0", timeout=0.5)

    def stop() -> None:
        server.kill()
        server.wait(10)

    yield store, stop
    stop()
    store.close()


def test_a_read_whose_record_fails_is_refused_as_run(
    failing: tuple[Store, Callable[[], None]],
) -> None:
    store, fail = failing
    ran: list[str] = []

    def read_page() -> str:
        ran.append("read")
        fail()  # after the checks, before the output is recorded
        return "a page someone else wrote"

    kit = Toolkit(audit=[], store=store)
    tool = kit.secured_tool(read_page, effect="read", untrusted_output=True)
    session = kit.conversations.get("c1", "dana@example.com")
    with session.active(), pytest.raises(ToolRefused) as refused:
        tool()
    assert ran == ["read"]
    assert refused.value.code == "store_unavailable"
    assert "ran" in refused.value.message
    assert "Do not run it again" in refused.value.message
    assert "not allowed" not in refused.value.message
    assert "a page someone else wrote" not in str(refused.value)
