from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.server import FakeServer, Reply, Request
from toolpass.engine import ConfigError, PermissionDenied, RemoteToolpass, Toolpass, env


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:

        @fake.route("POST", "/check")
        def check(request: Request) -> Reply | dict[str, Any]:
            if request.headers.get("authorization") != "Bearer k1":
                return Reply(401, {"error": "bad api key"})
            q = request.json()
            verdict = "allow" if q["user"] == "dana@example.com" else "deny"
            return {"decision": verdict, "reason": "as configured", "cached": q["fresh"] is False}

        @fake.route("POST", "/moved/check")
        def moved(request: Request) -> Reply:
            return Reply(307, None, {"Location": "/check"})

        yield fake


def test_check_over_the_wire(server: FakeServer) -> None:
    tp = Toolpass.remote(server.url, "k1")
    d = tp.check("dana@example.com", "gh", "pr.merge", "repo:acme/x")
    assert (d.decision, d.reason, d.cached, d.connection, d.resource) == (
        "allow",
        "as configured",
        True,
        "gh",
        "repo:acme/x",
    )
    assert server.seen()[0].json() == {
        "user": "dana@example.com",
        "connection": "gh",
        "action": "pr.merge",
        "resource": "repo:acme/x",
        "fresh": False,
    }
    assert not tp.check("erin@example.com", "gh", "pr.merge", "repo:acme/x", fresh=True).allowed
    with pytest.raises(PermissionDenied):
        tp.require("erin@example.com", "gh", "pr.merge", "repo:acme/x")
    tp.close()


async def test_async(server: FakeServer) -> None:
    tp = Toolpass.remote(server.url, env("TP_KEY_UNSET_IN_TEST"))
    d = await tp.acheck("dana@example.com", "gh", "pr.merge", "repo:acme/x")
    assert d.decision == "unknown"
    assert "env:TP_KEY_UNSET_IN_TEST" in d.reason
    tp = Toolpass.remote(server.url, "k1")
    assert (await tp.arequire("dana@example.com", "gh", "pr.merge", "repo:acme/x")).allowed
    tp.close()


@pytest.mark.parametrize(
    ("inject", "reason"),
    [
        (lambda f: None, None),
        (lambda f: f.fail(500, body={"error": "engine exploded"}), r"HTTP 500 \(engine exploded\)"),
        (lambda f: f.not_json(), "not JSON"),
        (lambda f: f.fail(200, body={"decision": "maybe"}), "no valid decision"),
    ],
)
def test_failures_are_unknown(server: FakeServer, inject: Any, reason: str | None) -> None:
    inject(server)
    key = "wrong" if reason is None else "k1"
    tp = RemoteToolpass(server.url, key)
    d = tp.check("dana@example.com", "gh", "pr.merge", "repo:acme/x")
    assert d.decision == "unknown"
    assert re.search(reason or r"rejected the API key \(HTTP 401\)", d.reason), d.reason
    tp.close()


def test_redirects_are_not_followed(server: FakeServer) -> None:
    tp = RemoteToolpass(f"{server.url}/moved", "k1")
    d = tp.check("dana@example.com", "gh", "pr.merge", "repo:acme/x")
    assert d.decision == "unknown"
    assert "redirects are not followed" in d.reason
    assert [r.path for r in server.requests] == ["/moved/check"]
    tp.close()


def test_unreachable_is_unknown() -> None:
    with FakeServer() as gone:
        url = gone.url
    tp = RemoteToolpass(url, "k1", timeout=1)
    d = tp.check("u@x.io", "gh", "a", "r")
    tp.close()
    assert d.decision == "unknown"
    assert d.reason.startswith(f"toolpass server {url}:")


def test_environment(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLPASS_URL", server.url)
    monkeypatch.setenv("TOOLPASS_API_KEY", "k1")
    tp = Toolpass.remote()
    assert tp.check("dana@example.com", "gh", "pr.merge", "repo:acme/x").allowed
    assert "k1" not in repr(tp)
    tp.close()


@pytest.mark.parametrize(
    "url",
    ["http://toolpass.example.com", "ftp://localhost", "http://10.0.0.1:8080", "https://u:p@h"],
)
def test_url_rules(url: str) -> None:
    with pytest.raises(ConfigError, match="toolpass server URL"):
        RemoteToolpass(url, "k")


@pytest.mark.parametrize(
    "url", ["https://toolpass.internal", "http://localhost:8", "http://[::1]:8"]
)
def test_allowed_urls(url: str) -> None:
    assert RemoteToolpass(url, "k").url == url


def test_missing_url_or_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLPASS_URL", raising=False)
    monkeypatch.delenv("TOOLPASS_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="TOOLPASS_URL"):
        RemoteToolpass()
    with pytest.raises(ConfigError, match="TOOLPASS_API_KEY"):
        RemoteToolpass("https://toolpass.internal")


@pytest.mark.parametrize(
    ("said", "cause"),
    [("identity", "identity"), ("resource", "resource"), ("anything else", ""), (None, "")],
)
def test_the_cause_of_an_unknown_crosses_the_wire(
    server: FakeServer, said: str | None, cause: str
) -> None:
    @server.route("POST", "/cause/check")
    def check(request: Request) -> dict[str, Any]:
        return {"decision": "unknown", "reason": "no one", "cause": said, "cached": False}

    tp = Toolpass.remote(server.url + "/cause", "k1")
    assert tp.check("zed@example.com", "gh", "pr.merge", "repo:acme/x").cause == cause
    tp.close()
