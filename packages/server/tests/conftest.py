"""Fixtures: a fake GitHub on 127.0.0.1 (core's test fake), a config pointing at it, and the
server as a real process (``python -m toolpass.cli serve``, i.e. ``toolpass serve``)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "core" / "tests"))

from fakes.github import FakeGitHub  # noqa: E402

GH_TOKEN = "ghp_server_test_token"
KEY = "tp-test-key-0123456789abcdef"  # env TP_TEST_KEY, name "env:TP_TEST_KEY"
KEY2 = "tp-second-key-fedcba9876543210"  # env TP_TEST_KEY2, name "ci-bot"
SECRETS = (KEY, KEY2, GH_TOKEN)


@contextmanager
def fake_github() -> Iterator[FakeGitHub]:
    """A fake GitHub on 127.0.0.1 with acme/widgets (dana writes, rory reads)."""
    with FakeGitHub() as gh:
        gh.add_repo("acme/widgets", {"dana": "write", "rory": "read"})
        gh.add_token(GH_TOKEN)
        yield gh


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with fake_github() as gh:
        yield gh


def set_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_TEST_KEY", KEY)
    monkeypatch.setenv("TP_TEST_KEY2", KEY2)
    monkeypatch.setenv("TP_GH_TOKEN", GH_TOKEN)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    set_keys(monkeypatch)


def write_config(path: Path, github_url: str, server: str) -> Path:
    """A toolpass.yaml with one GitHub connection ``gh`` and the given ``server:`` body."""
    path.write_text(
        textwrap.dedent(f"""\
            connections:
              - id: gh
                integration: github
                url: {github_url}
                token: env:TP_GH_TOKEN
                identity:
                  mode: template
                  template: "{{local}}"
                  domains: [example.com]
            server:
            """)
        + textwrap.indent(textwrap.dedent(server), "  ")
    )
    return path


def approvals_config(directory: Path, approvals: str) -> tuple[Path, str]:
    """A toolpass.yaml in ``directory`` for ``toolpass serve`` with the approvals page: no
    connection, a SQLite store, the service key env:TP_SERVICE_KEY and ``approvals`` as the
    ``server.approvals`` section. Returns the file and the store's URL."""
    store = f"sqlite:///{directory}/state.db"
    path = directory / "toolpass.yaml"
    path.write_text(
        textwrap.dedent(f"""\
            connections: []
            store: {store}
            server:
              api_keys: [env:TP_SERVICE_KEY]
              shutdown_timeout: 5
              approvals:
            """)
        + textwrap.indent(textwrap.dedent(approvals), "    ")
    )
    return path, store


DEFAULT_SERVER = textwrap.dedent("""\
    api_keys:
      - env:TP_TEST_KEY
      - name: ci-bot
        key: env:TP_TEST_KEY2
    max_body_bytes: 1024
    shutdown_timeout: 10
""")


@pytest.fixture
def config(tmp_path: Path, github: FakeGitHub, keys: None) -> Path:
    return write_config(tmp_path / "toolpass.yaml", github.api_url, DEFAULT_SERVER)


class ServerProcess:
    """``toolpass serve`` in a child process; stdout and stderr go to files."""

    def __init__(self, directory: Path, *args: str) -> None:
        self.out_path = directory / "server.out"
        self.err_path = directory / "server.err"
        self._out = self.out_path.open("wb")
        self._err = self.err_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "toolpass.cli", "serve", *args],
            stdout=self._out,
            stderr=self._err,
            stdin=subprocess.DEVNULL,
        )
        self.url = ""

    def wait_ready(self, timeout: float = 20.0, url: str | None = None) -> ServerProcess:
        """Wait for 'listening on URL' (or use ``url``), then for /healthz."""
        deadline = time.monotonic() + timeout
        while not url:
            found = re.search(r"listening on (https?://\S+)", self.stderr)
            if found:
                url = found.group(1)
            elif self.proc.poll() is not None:
                raise AssertionError(f"the server exited {self.proc.returncode}:\n{self.stderr}")
            elif time.monotonic() > deadline:
                raise AssertionError(f"the server did not start:\n{self.stderr}")
            else:
                time.sleep(0.02)
        self.url = url
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1, verify=False).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"/healthz never answered:\n{self.stderr}")
            time.sleep(0.05)

    @property
    def stdout(self) -> str:
        return self.out_path.read_text()

    @property
    def stderr(self) -> str:
        return self.err_path.read_text()

    def access_log(self, at_least: int = 1, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The access log's entries, once there are ``at_least`` (a line is written just
        after its answer is sent, so it may lag the client by a moment)."""
        deadline = time.monotonic() + timeout
        while True:
            lines = [line for line in self.stdout.splitlines() if line.strip()]
            if len(lines) >= at_least or time.monotonic() > deadline:
                return [json.loads(line) for line in lines]
            time.sleep(0.01)

    def terminate(self, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        self._err.close()


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """``start(*args)``: a server process, ready; stopped (killed if need be) at the end."""
    started: list[ServerProcess] = []

    def run(*args: str, ready: bool = True, url: str | None = None) -> ServerProcess:
        directory = tmp_path / f"server{len(started)}"
        directory.mkdir()
        server = ServerProcess(directory, *args)
        started.append(server)
        return server.wait_ready(url=url) if ready else server

    yield run
    for server in started:
        server.close()


@pytest.fixture
def server(config: Path, start: Callable[..., ServerProcess]) -> ServerProcess:
    return start("-config", str(config), "--port", "0")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def env_without(*names: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in names}
