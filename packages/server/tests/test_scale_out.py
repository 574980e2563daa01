"""Scale-out, proven: three ``toolpass serve`` processes on one store (Redis, or one SQLite
file) and several client processes calling a tool at once. The conversation's limit holds
across all of them, an approval runs once, and every server answers what the shared decision
cache holds. A server killed mid-load loses nothing (its clients fail over to the others); a
Redis that stops refuses calls with ``store_unavailable`` and serves them again once it is
back, nothing restarted. Real processes and sockets, on 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import GH_TOKEN, KEY, ServerProcess, free_port
from fakes.github import FakeGitHub
from toolpass.engine import Toolpass

WORKER = Path(__file__).with_name("scale_worker.py")
MARK = "@@ "  # what starts the worker's lines for the test
APPROVER_KEY = "tp-approver-key-lee-0123456789"
REPO = "repo:acme/widgets"


class Redis:
    """A redis-server on 127.0.0.1 that the test stops and starts again on the same port."""

    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:  # never a skip that reads like a pass
            pytest.fail("redis-server is not installed: `python3 dev.py test` installs it")
        self.binary, self.directory, self.port = binary, directory, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not self._pong():
            assert self.proc.poll() is None, "redis-server exited"
            assert time.monotonic() < deadline, "redis-server did not answer"
            time.sleep(0.02)

    def _pong(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[Redis]:
    server = Redis(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def github_module() -> Iterator[FakeGitHub]:
    """The fake GitHub the servers ask: dana and sam may write, rory may read."""
    gh = FakeGitHub()
    with gh:
        gh.add_repo("acme/widgets", {"dana": "write", "sam": "write", "rory": "read"})
        gh.add_token(GH_TOKEN)
        yield gh


@pytest.fixture(scope="module", params=["redis", "sqlite"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("store")
    if request.param == "sqlite":
        yield f"sqlite:///{directory}/state.db"
        return
    server = Redis(directory)
    server.start()
    yield server.url
    server.stop()


def config_text(store: str, github: FakeGitHub, approvals: bool = True) -> str:
    page = "  approvals:\n    api_keys: [{name: lee@example.com, key: env:TP_APPROVER_LEE}]\n"
    return textwrap.dedent(f"""\
        store: {store}
        connections:
          - id: gh
            integration: github
            url: {github.api_url}
            token: env:TP_GH_TOKEN
            identity: {{mode: template, template: "{{local}}", domains: [example.com]}}
        server:
          api_keys: [env:TP_TEST_KEY]
        """) + (page if approvals else "")


@pytest.fixture(scope="module")
def servers(
    store: str, github_module: FakeGitHub, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[ServerProcess]]:
    """Three ``toolpass serve`` processes on ``store``, each with the approvals page, for
    this module's tests of that store (the last one kills a server)."""
    directory = tmp_path_factory.mktemp("servers")
    config = directory / "toolpass.yaml"
    config.write_text(config_text(store, github_module))
    env = {"TP_TEST_KEY": KEY, "TP_GH_TOKEN": GH_TOKEN, "TP_APPROVER_LEE": APPROVER_KEY}
    started = []
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        for n in range(3):
            (directory / f"server{n}").mkdir()
            started.append(
                ServerProcess(directory / f"server{n}", "-config", str(config), "--port", "0")
            )
    yield [server.wait_ready() for server in started]
    for server in started:
        server.close()


def worker(
    store: str, urls: list[str], name: str, bodies: Path, calls: int | str, **more: Any
) -> subprocess.Popen[str]:
    """A client process; its conversation is named after the ``bodies`` file's folder (one
    per test: the servers and the store outlive a test)."""
    given = {"store": store, "urls": urls, "key": KEY, "name": name, "bodies": str(bodies)}
    given["conversation"] = bodies.parent.name
    return subprocess.Popen(
        [sys.executable, str(WORKER), json.dumps({**given, "calls": calls, "limit": 45, **more})],
        env={**os.environ, "TOOLPASS_AUDIT": "off"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def tell(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()


def finish(process: subprocess.Popen[str]) -> list[str]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    lines = [line[len(MARK) :] for line in out.splitlines() if line.startswith(MARK)]
    outcomes: list[str] = json.loads(lines[-1])
    return outcomes


def said(process: subprocess.Popen[str]) -> str:
    """The worker's next line for the test (see scale_worker.py)."""
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(MARK):
            return line[len(MARK) :].strip()
    raise AssertionError(process.stderr.read() if process.stderr else "the worker exited")


def ask(process: subprocess.Popen[str]) -> str:
    """One call of a ``calls="stdin"`` worker, and its outcome."""
    tell(process, "call")
    return said(process)


def ran(bodies: Path) -> list[str]:
    return bodies.read_text().split() if bodies.exists() else []


def rotated(urls: list[str], n: int) -> list[str]:
    """The servers as client ``n`` lists them: its own first."""
    return urls[n:] + urls[:n]


def test_every_server_answers_what_the_shared_decision_cache_holds(
    servers: list[ServerProcess], github_module: FakeGitHub
) -> None:
    ask_sam = ("sam@example.com", "gh", "pr.merge", REPO)
    remotes = [Toolpass.remote(s.url, KEY) for s in servers]
    with closing(remotes[0]), closing(remotes[1]), closing(remotes[2]):
        first = [r.check(*ask_sam) for r in remotes]
        assert [d.decision for d in first] == ["allow"] * 3
        assert [d.cached for d in first] == [False, True, True]  # one look-up served all
        roles = github_module.repos["acme/widgets"].roles
        roles["sam"] = "read"
        try:
            assert remotes[1].check(*ask_sam, fresh=True).decision == "deny"
            after = [r.check(*ask_sam) for r in remotes]
        finally:
            roles["sam"] = "write"
    # The fresh answer replaced the shared entry: no server answers from a copy of its own.
    assert [(d.decision, d.cached) for d in after] == [("deny", True)] * 3


def test_an_approval_decided_on_one_server_runs_once_across_clients(
    store: str, servers: list[ServerProcess], tmp_path: Path
) -> None:
    urls, bodies = [s.url for s in servers], tmp_path / "bodies"
    asked = finish(worker(store, urls, "asker", bodies, 1, approve=True))
    assert asked[0].startswith("approval_pending ")
    request_id = asked[0].split()[1]
    decide_on_page(servers[2].url, request_id)
    retries = [worker(store, rotated(urls, n), f"w{n}", bodies, 1, approve=True) for n in range(3)]
    outcomes = [finish(c)[0].split()[0] for c in retries]
    assert outcomes.count("ok") == 1
    assert set(outcomes) <= {"ok", "approval_pending"}
    assert len(ran(bodies)) == 1


def decide_on_page(url: str, request_id: str) -> None:
    """Sign in to ``url``'s approvals page as lee and approve ``request_id``."""
    origin = {"Origin": url}
    with httpx.Client(base_url=url, follow_redirects=True, timeout=10) as page:
        form = page.get("/approvals/login")
        token = re.search(r'name=token value="([^"]+)"', form.text)
        assert token, form.text
        signed_in = page.post(
            "/approvals/login", data={"key": APPROVER_KEY, "token": token.group(1)}, headers=origin
        )
        csrf = re.search(r'name=csrf value="([^"]+)"', signed_in.text)
        assert csrf, signed_in.text
        decided = page.post(
            "/approvals/decide",
            data={"csrf": csrf.group(1), "id": request_id, "decision": "approve"},
            headers=origin,
        )
        assert decided.status_code == 200, decided.text


def test_the_limit_holds_across_servers_and_a_killed_server_loses_nothing(
    store: str, servers: list[ServerProcess], tmp_path: Path
) -> None:
    urls, bodies = [s.url for s in servers], tmp_path / "bodies"
    clients = [worker(store, rotated(urls, n), f"w{n}", bodies, 30) for n in range(3)]
    for client in clients:
        tell(client, "go")
    assert said(clients[0]) == "progress"  # server 0 answered its first call
    servers[0].proc.kill()  # the server client 0 asks first dies mid-load
    for client in clients:
        tell(client, "go on")
    first, *others = [finish(c) for c in clients]
    outcomes = first + [o for listed in others for o in listed]
    # Every call completed once or was refused because the conversation's limit was reached.
    assert len(outcomes) == 90
    assert sorted(set(outcomes)) == ["limit_exceeded", "ok"]
    assert outcomes.count("ok") == 45  # the limit, across three clients and three servers
    assert len(ran(bodies)) == 45  # each allowed call ran once; no refused call ran
    assert first[0] == "ok"  # asked server 0
    assert "ok" in first[1:]  # then went on, on another server


def test_calls_refuse_while_redis_is_down_and_recover_without_a_restart(
    redis: Redis, github: FakeGitHub, keys: None, tmp_path: Path, start: Callable[..., Any]
) -> None:
    config = tmp_path / "toolpass.yaml"
    config.write_text(config_text(redis.url, github, approvals=False))
    urls = [start("-config", str(config), "--port", "0").url]
    bodies = tmp_path / "bodies"
    client = worker(redis.url, urls, "w", bodies, "stdin")
    try:
        assert ask(client) == "ok"
        redis.stop()
        assert [ask(client) for _ in range(3)] == ["store_unavailable"] * 3
        assert len(ran(bodies)) == 1  # nothing ran while the store was down
        redis.start()
        assert [ask(client) for _ in range(2)] == ["ok", "ok"]
        assert len(ran(bodies)) == 3
        with closing(Toolpass.remote(urls, KEY)) as remote:  # the server's cache is back too
            asked = ("rory@example.com", "gh", "pr.merge", REPO)
            assert remote.check(*asked).cached is False
            assert (remote.check(*asked).decision, remote.check(*asked).cached) == ("deny", True)
    finally:
        client.kill()
        client.communicate()
