"""The server as a real process on 127.0.0.1, asked by ``Toolpass.remote`` and by httpx."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import (
    DEFAULT_SERVER,
    GH_TOKEN,
    KEY,
    KEY2,
    SECRETS,
    ServerProcess,
    fake_github,
    free_port,
    set_keys,
    write_config,
)
from fakes.github import FakeGitHub
from toolpass import Session, Toolkit, ToolRefused, permission_check
from toolpass.engine import Decision, RemoteToolpass, Toolpass

REPO = "repo:acme/widgets"


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[ServerProcess, FakeGitHub]]:
    """One server (and its GitHub) for the tests that only read its answers to requests it
    refuses: none reaches GitHub, fills the decision cache or stops the server."""
    with fake_github() as github, pytest.MonkeyPatch.context() as monkeypatch:
        set_keys(monkeypatch)
        directory = Path(tempfile.mkdtemp())
        config = write_config(directory / "toolpass.yaml", github.api_url, DEFAULT_SERVER)
        server = ServerProcess(directory, "-config", str(config), "--port", "0")
        try:
            yield server.wait_ready(), github
        finally:
            server.close()
            shutil.rmtree(directory)


@pytest.fixture
def shared_server(shared: tuple[ServerProcess, FakeGitHub]) -> ServerProcess:
    return shared[0]


def test_allow_deny_and_unknown_match_the_engine_in_process(
    server: ServerProcess, config: Path
) -> None:
    questions = [
        ("dana@example.com", "gh", "pr.merge", REPO),  # allow: write role
        ("rory@example.com", "gh", "pr.merge", REPO),  # deny: read role
        ("dana@elsewhere.org", "gh", "pr.merge", REPO),  # unknown: no such identity
        ("dana@example.com", "nope", "pr.merge", REPO),  # unknown: no such connection
        ("dana@example.com", "gh", "no.such.action", REPO),  # unknown: no such action
    ]
    with closing(Toolpass.remote(server.url, KEY)) as remote, Toolpass.from_config(config) as local:
        got = [remote.check(*q, fresh=True) for q in questions]
        want = [local.check(*q, fresh=True) for q in questions]
    assert [d.decision for d in got] == ["allow", "deny", "unknown", "unknown", "unknown"]
    for g, w in zip(got, want, strict=True):
        assert (g.decision, g.reason, g.user, g.connection, g.action, g.resource) == (
            w.decision,
            w.reason,
            w.user,
            w.connection,
            w.action,
            w.resource,
        )
    assert "no connection 'nope' is configured (gh)" in got[3].reason


def test_cached_and_fresh(server: ServerProcess, github: FakeGitHub) -> None:
    ask = ("dana@example.com", "gh", "pr.merge", REPO)
    with closing(Toolpass.remote(server.url, KEY)) as tp:
        first = tp.check(*ask)
        asked = len(github.requests)
        second = tp.check(*ask)
        assert len(github.requests) == asked  # the server answered from its cache
        third = tp.check(*ask, fresh=True)
        assert len(github.requests) > asked
    assert (first.cached, second.cached, third.cached) == (False, True, False)
    assert [first.decision, second.decision, third.decision] == ["allow"] * 3


async def test_async_client(server: ServerProcess) -> None:
    with closing(Toolpass.remote(server.url, KEY2)) as tp:
        d = await tp.acheck("dana@example.com", "gh", "pr.merge", REPO)
    assert d.decision == "allow"


@pytest.mark.parametrize("key", ["tp-not-a-configured-key-000", KEY + "x", KEY[:-1]])
def test_a_wrong_key_is_a_401_and_the_client_decides_unknown(
    server: ServerProcess, github: FakeGitHub, key: str
) -> None:
    with closing(Toolpass.remote(server.url, key)) as tp:
        d = tp.check("dana@example.com", "gh", "pr.merge", REPO)
    assert d.decision == "unknown"
    assert "rejected the API key (HTTP 401)" in d.reason
    assert github.requests == []  # nothing was asked on a rejected key
    assert server.access_log(at_least=2)[-1]["status"] == 401  # after the healthz


def test_a_missing_key_is_a_401(shared_server: ServerProcess) -> None:
    server = shared_server
    body = {"user": "dana@example.com", "connection": "gh", "action": "pr.merge"}
    answer = httpx.post(f"{server.url}/check", json={**body, "resource": REPO})
    assert answer.status_code == 401
    assert answer.json() == {"error": "a valid API key is required (Authorization: Bearer <key>)"}
    assert answer.headers["www-authenticate"] == 'Bearer realm="toolpass"'


def post(server: ServerProcess, content: bytes, **headers: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json", **headers}
    return httpx.post(f"{server.url}/check", content=content, headers=headers)


def test_body_size_limit(shared: tuple[ServerProcess, FakeGitHub]) -> None:
    server, github = shared
    big = json.dumps(
        {"user": "dana@example.com", "connection": "gh", "action": "a", "resource": "r" * 2000}
    ).encode()
    answer = post(server, big)
    assert (answer.status_code, answer.json()) == (
        413,
        {"error": "the body is larger than 1024 bytes"},
    )

    def chunks() -> object:  # no Content-Length: the server counts as it reads
        for _ in range(20):
            yield b" " * 100

    answer = httpx.post(
        f"{server.url}/check",
        content=chunks(),  # type: ignore[arg-type]
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    assert answer.status_code == 413
    assert github.requests == []


@pytest.mark.parametrize(
    ("content", "headers", "status", "message"),
    [
        (b'{"user": ', {}, 400, "the body is not valid JSON: Expecting value"),
        (b"\xff\xfe", {}, 400, "the body is not UTF-8"),
        (b"[1]", {}, 422, "the body must be a JSON object"),
        (b'{"user": "dana@example.com"}', {}, 422, "missing field 'connection'"),
        (b"{}", {"Content-Type": "text/plain"}, 415, "the body must be application/json"),
    ],
)
def test_bad_bodies_get_json_errors(
    shared_server: ServerProcess, content: bytes, headers: dict[str, str], status: int, message: str
) -> None:
    server = shared_server
    answer = post(server, content, **headers)
    assert answer.status_code == status
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"].startswith(message)


def test_unknown_paths_and_methods(shared_server: ServerProcess) -> None:
    server = shared_server
    answer = httpx.get(f"{server.url}/nope")
    assert (answer.status_code, answer.json()) == (404, {"error": "no such path"})
    answer = httpx.get(f"{server.url}/check")
    assert (answer.status_code, answer.json()) == (405, {"error": "GET is not allowed here"})
    assert answer.headers["allow"] == "POST"
    assert httpx.post(f"{server.url}/check/", json={}).status_code == 404  # no redirect


def test_healthz(shared_server: ServerProcess) -> None:
    server = shared_server
    answer = httpx.get(f"{server.url}/healthz")
    assert (answer.status_code, answer.json()) == (200, {"status": "ok"})
    assert "server" not in answer.headers
    assert answer.headers["cache-control"] == "no-store"
    assert httpx.head(f"{server.url}/healthz").status_code == 200


def test_access_log_has_names_never_secrets(server: ServerProcess) -> None:
    with (
        closing(Toolpass.remote(server.url, KEY)) as one,
        closing(Toolpass.remote(server.url, KEY2)) as two,
    ):
        one.check("dana@example.com", "gh", "pr.merge", REPO)
        two.check("rory@example.com", "gh", "pr.merge", REPO)
    httpx.post(f"{server.url}/check?api_key={KEY}", headers={"Authorization": f"Bearer {KEY}x"})
    log = server.access_log(at_least=4)  # with the first /healthz
    checks = [e for e in log if e["path"] == "/check"]
    assert [(e["key"], e.get("user"), e.get("decision"), e["status"]) for e in checks] == [
        ("env:TP_TEST_KEY", "dana@example.com", "allow", 200),
        ("ci-bot", "rory@example.com", "deny", 200),
        (None, None, None, 401),
    ]
    assert checks[0]["client"] == "127.0.0.1"
    assert checks[0]["ms"] > 0
    everything = server.stdout + server.stderr
    for secret in SECRETS:
        assert secret not in everything
    assert "Bearer tp-" not in everything
    assert "api_key" not in everything  # the query string is not logged


def test_graceful_shutdown_finishes_in_flight_requests(
    server: ServerProcess, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while a check waits for GitHub: the server stops accepting at once, waits
    for the check (held by the test, not by a sleep that a busy machine could outrun),
    answers it and exits cleanly."""
    arrived, release = threading.Event(), threading.Event()
    answer = github.answer

    def held(request: Any) -> Any:
        if request.path.endswith("/collaborators/dana/permission"):
            arrived.set()
            release.wait(30)
        return answer(request)

    monkeypatch.setattr(github, "answer", held)
    results: list[Decision] = []

    def ask() -> None:
        with closing(Toolpass.remote(server.url, KEY, timeout=60)) as tp:
            results.append(tp.check("dana@example.com", "gh", "pr.merge", REPO, fresh=True))

    asker = threading.Thread(target=ask)
    asker.start()
    assert arrived.wait(30), "the check never reached GitHub"
    server.proc.send_signal(15)  # SIGTERM while the check waits for GitHub
    port = int(server.url.rsplit(":", 1)[1])
    deadline = time.monotonic() + 30
    refused = False
    while not refused and time.monotonic() < deadline:  # it stops accepting
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            time.sleep(0.05)
        except OSError:
            refused = True
    assert refused
    assert server.proc.poll() is None  # still running: it waits for the check under way
    assert not results
    release.set()
    asker.join(30)
    assert server.proc.wait(30) == 0
    assert [d.decision for d in results] == ["allow"]
    assert server.access_log()[-1]["decision"] == "allow"
    assert "stopped" in server.stderr


def test_https(
    tmp_path: Path, github: FakeGitHub, keys: None, start: Callable[..., ServerProcess]
) -> None:
    from fakes.tls import make_certs

    certs = make_certs(tmp_path)
    server = DEFAULT_SERVER + f"tls_cert_file: {certs.cert_file}\ntls_key_file: {certs.key_file}\n"
    config = write_config(tmp_path / "tls.yaml", github.api_url, server)
    proc = start("-config", str(config), "--port", "0")
    assert proc.url.startswith("https://127.0.0.1:")
    with closing(Toolpass.remote(proc.url, KEY, ca_file=certs.ca_file)) as tp:
        assert tp.check("dana@example.com", "gh", "pr.merge", REPO).decision == "allow"
    with closing(Toolpass.remote(proc.url, KEY)) as tp:  # the system roots do not know the test CA
        d = tp.check("dana@example.com", "gh", "pr.merge", REPO)
    assert d.decision == "unknown"
    assert proc.terminate() == 0


def test_workers(config: Path, start: Callable[..., ServerProcess], github: FakeGitHub) -> None:
    port = free_port()
    proc = start(
        "--config", str(config), "--workers", "2", "--port", str(port),
        url=f"http://127.0.0.1:{port}",
    )  # fmt: skip
    with closing(Toolpass.remote(proc.url, KEY)) as tp:
        decisions = [tp.check("dana@example.com", "gh", "pr.merge", REPO) for _ in range(6)]
    assert {d.decision for d in decisions} == {"allow"}
    assert proc.terminate() == 0
    assert "starting 2 workers" in proc.stderr


def test_configuration_errors_are_one_line(
    tmp_path: Path, github: FakeGitHub, keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = write_config(tmp_path / "bad.yaml", github.api_url, DEFAULT_SERVER + "colour: blue\n")
    done = run_serve("-config", str(bad))
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        f"toolpass serve: {bad}, line 17, server key 'colour': unknown key (expected one of "
        "api_keys, host, port, workers, threads, max_body_bytes, access_log, shutdown_timeout, "
        "keep_alive_timeout, tls_cert_file, tls_key_file, public_url, approvals)"
    ]
    monkeypatch.delenv("TP_TEST_KEY2")
    good = write_config(tmp_path / "good.yaml", github.api_url, DEFAULT_SERVER)
    done = run_serve("-config", str(good))
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        f"toolpass serve: {good}, line 14, server key 'api_keys[1]': "
        "secret env:TP_TEST_KEY2: environment variable is not set"
    ]


def test_port_in_use_and_usage(config: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_serve("-config", str(config), "--port", str(port))
    assert done.returncode == 3
    assert done.stderr == (
        f"toolpass serve: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )
    done = run_serve("-config", str(config), "--port", "99999")
    assert (done.returncode, done.stderr.count("\n")) == (3, 1)
    assert "99999 is not from 0 to 65535" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "toolpass.server", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0
    assert "--workers" in done.stdout


def run_serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolpass.cli", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_github_token_is_used_only_by_the_engine(shared_server: ServerProcess) -> None:
    server = shared_server
    answer = httpx.post(
        f"{server.url}/check",
        headers={"Authorization": f"Bearer {GH_TOKEN}"},
        json={"user": "a@example.com", "connection": "gh", "action": "pr.merge", "resource": REPO},
    )
    assert answer.status_code == 401


def test_what_the_server_is_not_set_up_for_is_not_configured(server: ServerProcess) -> None:
    """Through Toolpass.remote, a tool refuses an unknown connection or action, and a key
    the server rejects, as not_configured (an operator's to fix), not as a failed look-up."""

    def refusal(remote: RemoteToolpass, connection: str, action: str) -> str:
        kit = Toolkit(audit=[])
        tool = kit.secured_tool(
            lambda repo: "merged",
            name="merge",
            authorize=permission_check(remote, connection, action, "repo:{repo}"),
        )
        with Session("dana@example.com").active():
            try:
                return str(tool("acme/widgets"))
            except ToolRefused as refused:
                return refused.code

    with closing(Toolpass.remote(server.url, KEY)) as remote:
        assert refusal(remote, "gh", "pr.merge") == "merged"
        assert refusal(remote, "nope", "pr.merge") == "not_configured"
        assert refusal(remote, "gh", "no.such.action") == "not_configured"
        assert remote.configured("gh", "pr.merge")
    with closing(Toolpass.remote(server.url, KEY + "x")) as rejected:
        assert refusal(rejected, "gh", "pr.merge") == "not_configured"
