"""Redis store connections: an update whose answer is lost is never sent again (it may have
been applied: twice would double it), and a connection Redis closed is replaced before a
command is sent on it, so a restart costs no call."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from toolpass.store import StoreUnavailable
from toolpass.store.redis import RedisStore

from .conftest import free_port, redis_process


class DroppingProxy:
    """127.0.0.1 TCP relay to Redis, one request and its reply at a time; ``drop()`` makes
    it pass the next request on and close the client's connection instead of the reply."""

    def __init__(self, port: int) -> None:
        self.port, self._dropping = port, threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self._listener.getsockname()[1]}/0"
        threading.Thread(target=self._accept, daemon=True).start()

    def drop(self) -> None:
        self._dropping.set()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        with client, socket.create_connection(("127.0.0.1", self.port)) as server:
            while request := client.recv(65536):
                server.sendall(request)
                reply = server.recv(65536)
                if self._dropping.is_set():
                    self._dropping.clear()
                    return  # applied by Redis; its answer never arrives
                client.sendall(reply)

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def redis_port(tmp_path: Path) -> Iterator[int]:
    port = free_port()
    process = redis_process(tmp_path, port)
    yield port
    process.kill()
    process.wait(10)


def add_one(value: int | None) -> tuple[int, None]:
    return (value or 0) + 1, None


def test_an_update_whose_answer_was_lost_is_not_sent_again(redis_port: int) -> None:
    proxy = DroppingProxy(redis_port)
    store, truth = RedisStore(proxy.url), RedisStore(f"redis://127.0.0.1:{redis_port}/0")
    store.update("n", add_one)
    proxy.drop()
    with pytest.raises(StoreUnavailable):
        store.update("n", add_one)
    assert truth.get("n") == 2  # applied once, by the one request that reached Redis
    assert store.update("n", add_one) is None  # and the store goes on
    assert truth.get("n") == 3
    for each in (store, truth, proxy):
        each.close()


def test_a_restart_of_redis_costs_no_call(tmp_path: Path) -> None:
    port = free_port()
    process = redis_process(tmp_path, port)
    store = RedisStore(f"redis://127.0.0.1:{port}/0")
    store.update("n", add_one)
    process.kill()
    process.wait(10)
    process = redis_process(tmp_path, port)  # no call while it was down
    try:
        assert store.update("n", add_one) is None  # a new Redis: nothing kept
        assert store.get("n") == 1
    finally:
        store.close()
        process.kill()
        process.wait(10)
