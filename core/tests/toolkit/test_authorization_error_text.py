"""A check that could not be answered (``authorization_error``) tells the model to try again
later, and never what failed: the engine's URL, its host and port, a socket error or an HTTP
status are the audit event's. Through ``Toolpass.remote`` at a closed port and at a server
answering 500, and through the engine's own look-ups (its GitHub at a closed port), both from
a secured tool's rule and from the request hook."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from fakes.server import FakeServer, Reply, Request
from toolpass import (
    AuditEvent,
    Session,
    Toolkit,
    Toolpass,
    ToolRefused,
    intercept,
    permission_check,
)
from toolpass.engine import RemoteToolpass

TOKEN = "ghp_engine000000000000000000000000000000"
DANA = "dana@example.com"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def broken_server() -> Iterator[FakeServer]:
    with FakeServer() as fake:

        @fake.route("POST", "/check")
        def check(request: Request) -> Reply:
            return Reply(500, {"error": "engine exploded at http://10.1.2.3:9000/internal"})

        yield fake


@pytest.fixture
def down_url() -> str:
    return f"http://127.0.0.1:{closed_port()}"


@pytest.fixture
def github_down(monkeypatch: pytest.MonkeyPatch, down_url: str) -> Iterator[Toolpass]:
    monkeypatch.setenv("AUTHZ_TEXT_GITHUB_TOKEN", TOKEN)
    conn = {
        "id": "github",
        "integration": "github",
        "url": down_url,
        "token": "env:AUTHZ_TEXT_GITHUB_TOKEN",
        "identity": {"mode": "users", "users": {DANA: "dana"}},
    }
    with Toolpass([conn]) as tp:
        yield tp


def refused_by_rule(engine: Any) -> tuple[ToolRefused, AuditEvent]:
    events: list[AuditEvent] = []
    kit = Toolkit(audit=[events.append])

    @kit.secured_tool(authorize=permission_check(engine, "github", "pr.create", "repo:{repo}"))
    def open_pr(repo: str) -> str:
        raise AssertionError("never runs")

    with Session(DANA).active(), pytest.raises(ToolRefused) as info:
        open_pr("acme/widgets")
    [event] = events
    return info.value, event


def assert_says_nothing_of(refused: ToolRefused, event: AuditEvent, *inside: str) -> None:
    assert refused.code == "authorization_error"
    assert "Try again later" in refused.message
    for text in (*inside, "127.0.0.1", "http", "Errno", "refused", "HTTP 500"):
        assert text not in refused.message, (text, refused.message)
    assert any(text in (event.detail or "") for text in inside), event.detail


ENGINES: dict[str, Callable[..., tuple[Any, tuple[str, ...]]]] = {
    "remote at a closed port": lambda request: (
        (url := f"http://127.0.0.1:{closed_port()}"),
        Toolpass.remote(url, "k1", timeout=2),
    ),
    "remote answering 500": lambda request: (
        (url := request.getfixturevalue("broken_server").url),
        Toolpass.remote(url, "k1", timeout=2),
    ),
    "its own GitHub at a closed port": lambda request: (
        "127.0.0.1",
        request.getfixturevalue("github_down"),
    ),
}


@pytest.mark.parametrize("name", ENGINES)
def test_the_model_never_reads_the_engines_url_or_socket_error(
    name: str, request: pytest.FixtureRequest
) -> None:
    where, engine = ENGINES[name](request)
    try:
        refused, event = refused_by_rule(engine)
    finally:
        if isinstance(engine, RemoteToolpass):
            engine.close()
    assert_says_nothing_of(refused, event, where)


def test_the_request_hook_says_nothing_of_the_engines_failure(
    github_down: Toolpass, down_url: str
) -> None:
    events: list[AuditEvent] = []
    kit = Toolkit(permissions=github_down, audit=[events.append])
    url = down_url

    @kit.secured_tool(effect="write")
    def open_pr(repo: str) -> int:
        answer = requests.post(f"{url}/repos/{repo}/pulls", json={"title": "x"}, timeout=5)
        return answer.status_code

    try:
        with Session(DANA).active(), pytest.raises(ToolRefused) as info:
            open_pr("acme/widgets")
    finally:
        intercept.uninstall()
    refused = info.value
    assert refused.code == "authorization_error"
    assert "Try again later" in refused.message
    for text in (url, "127.0.0.1", "Errno", "refused"):
        assert text not in refused.message, (text, refused.message)
    assert "127.0.0.1" in (events[0].detail or "")
