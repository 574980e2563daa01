"""Stores to test against: memory, a SQLite file, and a real redis-server started here."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("worker.py")


def installed(program: str) -> str:
    """Where ``program`` is; a test that needs a missing one fails, whoever runs it, saying
    what to install (never a skip that reads like a pass)."""
    found = shutil.which(program)
    if found is None:
        pytest.fail(
            f"{program} is not installed: `python3 dev.py test` installs it (as root, with"
            f" apt-get); elsewhere, on Debian or Ubuntu: sudo apt-get install {program}"
        )
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def redis_process(workdir: Path, port: int) -> subprocess.Popen[bytes]:
    """A redis-server on 127.0.0.1:``port``, answering (a missing one fails the test)."""
    command = [installed("redis-server"), "--port", str(port), "--bind", "127.0.0.1"]
    process = subprocess.Popen(
        [*command, "--dir", str(workdir), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return process
        except OSError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            pytest.fail("redis-server did not start")
        time.sleep(0.05)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server on 127.0.0.1 for this test run (a missing one fails these tests)."""
    port = free_port()
    process = redis_process(tmp_path_factory.mktemp("redis"), port)
    yield f"redis://127.0.0.1:{port}/0"
    process.terminate()
    process.wait(10)


def fresh(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty store of ``kind``."""
    if kind == "memory":
        return "memory:"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path}/state.db"
    base: str = request.getfixturevalue("redis_server")
    import redis

    client = redis.Redis.from_url(base)
    client.flushall()
    client.close()
    return base


@pytest.fixture(params=["memory", "sqlite", "redis"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store's URL, of each kind."""
    return fresh(request.param, request, tmp_path)


@pytest.fixture(params=["sqlite", "redis"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store that processes share."""
    return fresh(request.param, request, tmp_path)


def run_worker(*args: str) -> subprocess.Popen[str]:
    """A worker process (see worker.py) started now; ``finish`` gives its answer."""
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> object:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])
