"""The ASGI app in process (httpx's ASGI transport): validation, authentication, errors,
the access log. The engine behind it is real, asking the fake GitHub on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import GH_TOKEN, KEY, KEY2
from fakes.github import FakeGitHub
from toolpass.engine import ConfigError, Decision, Toolpass, literal
from toolpass.engine.checker import Checker
from toolpass.server import create_app

REPO = "repo:acme/widgets"
QUESTION = {"user": "dana@example.com", "connection": "gh", "action": "pr.merge", "resource": REPO}
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def tp(github: FakeGitHub, keys: None) -> Iterator[Toolpass]:
    conn = {
        "id": "gh",
        "integration": "github",
        "url": github.api_url,
        "token": "env:TP_GH_TOKEN",
        "identity": {"mode": "template", "template": "{local}", "domains": ["example.com"]},
    }
    with Toolpass([conn]) as engine:
        yield engine


def client_for(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://tp.test")


@pytest.fixture
async def client(tp: Toolpass) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        tp,
        {
            "api_keys": ["env:TP_TEST_KEY", {"name": "ci-bot", "key": literal(KEY2)}],
            "max_body_bytes": 4096,
        },
    )
    async with client_for(app) as c:
        yield c


async def test_decisions(client: httpx.AsyncClient, github: FakeGitHub) -> None:
    answer = await client.post("/check", json=QUESTION, headers=AUTH)
    assert answer.status_code == 200
    assert answer.json() == {
        "decision": "allow",
        "reason": "dana has the write role on acme/widgets; pr.merge needs write",
        "cause": "",
        "cached": False,
        **QUESTION,
        "configured": True,
    }
    again = await client.post("/check", json=QUESTION, headers=AUTH)
    assert again.json()["cached"] is True
    answer = await client.post(
        "/check", json={**QUESTION, "user": "rory@example.com"}, headers=AUTH
    )
    assert answer.json()["decision"] == "deny"
    answer = await client.post("/check", json={**QUESTION, "connection": "jira"}, headers=AUTH)
    assert (answer.status_code, answer.json()["decision"]) == (200, "unknown")
    assert answer.json()["reason"] == "no connection 'jira' is configured (gh)"
    assert answer.json()["configured"] is False
    # Someone outside the mapped domain maps to no one: an unknown that asking again will
    # not change, and the answer says so (Toolpass.remote turns it into Decision.cause).
    answer = await client.post("/check", json={**QUESTION, "user": "zed@else.org"}, headers=AUTH)
    assert (answer.json()["decision"], answer.json()["cause"]) == ("unknown", "identity")
    github.fail(503, times=3)  # a failed look-up is an unknown decision, still a 200
    answer = await client.post("/check", json={**QUESTION, "fresh": True}, headers=AUTH)
    assert (answer.status_code, answer.json()["decision"]) == (200, "unknown")
    assert answer.json()["cause"] == ""


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        f"Basic {KEY}",
        f"Token {KEY}",
        f"Bearer {KEY[:-1]}",
        f"Bearer {KEY}{KEY}",
        f"Bearer {GH_TOKEN}",
        "Bearer env:TP_TEST_KEY",  # the reference is not the key
    ],
)
async def test_authentication_is_required(
    client: httpx.AsyncClient, github: FakeGitHub, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    answer = await client.post("/check", json=QUESTION, headers=headers)
    assert answer.status_code == 401
    assert answer.json() == {"error": "a valid API key is required (Authorization: Bearer <key>)"}
    assert github.requests == []


async def test_every_key_is_accepted_and_named(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "toolpass.server.access")
    for key in (KEY, KEY2):
        for scheme in ("Bearer", "bearer"):
            answer = await client.post(
                "/check", json=QUESTION, headers={"Authorization": f"{scheme} {key}"}
            )
            assert answer.status_code == 200
    entries = [json.loads(r.getMessage()) for r in caplog.records]
    assert [e["key"] for e in entries] == ["env:TP_TEST_KEY"] * 2 + ["ci-bot"] * 2
    assert entries[0]["user"] == "dana@example.com"
    assert entries[0]["decision"] == "allow"
    text = caplog.text
    for secret in (KEY, KEY2, GH_TOKEN):
        assert secret not in text


def body(**changes: Any) -> bytes:
    data: dict[str, Any] = {**QUESTION, **changes}
    return json.dumps({k: v for k, v in data.items() if v is not ...}).encode()


@pytest.mark.parametrize(
    ("content", "status", "message"),
    [
        (b"", 400, "the body is not valid JSON: Expecting value at line 1, column 1"),
        (b"{", 400, "the body is not valid JSON"),
        (b'{"user": NaN}', 400, "the body is not valid JSON"),
        (b"\xc3\x28", 400, "the body is not UTF-8"),
        (b"[" * 1500 + b"]" * 1500, 400, "the body is nested too deeply"),
        (b'{"user": "a@x.org", "user": "dana@x.org"}', 400, "the body repeats the key 'user'"),
        (b"null", 422, "the body must be a JSON object"),
        (b'"dana"', 422, "the body must be a JSON object"),
        (body(user=...), 422, "missing field 'user'"),
        (body(resource=...), 422, "missing field 'resource'"),
        (body(role="x"), 422, "unknown field 'role' (expected user, connection, action, resource"),
        (body(user=42), 422, "'user' must be a string"),
        (body(action=None), 422, "'action' must be a string"),
        (body(resource=["a"]), 422, "'resource' must be a string"),
        (body(user=""), 422, "'user' must not be empty"),
        (body(resource="  "), 422, "'resource' must not be empty"),
        (body(connection="c" * 101), 422, "'connection' is longer than 100 characters"),
        (body(user="dana@example.com\n{\"forged\": 1}"), 422, "'user' must not contain control"),
        (body(resource="repo:acme/x\u200b"), 422, "'resource' must not contain control"),
        (body(fresh="yes"), 422, "'fresh' must be true or false"),
        (body(fresh=1), 422, "'fresh' must be true or false"),
    ],
)  # fmt: skip
async def test_strict_validation(
    client: httpx.AsyncClient, github: FakeGitHub, content: bytes, status: int, message: str
) -> None:
    answer = await client.post(
        "/check", content=content, headers={**AUTH, "Content-Type": "application/json"}
    )
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert list(answer.json()) == ["error"]
    assert answer.json()["error"].startswith(message)
    assert github.requests == []


async def test_error_messages_never_echo_values(client: httpx.AsyncClient) -> None:
    secret = "sk-live-do-not-echo-me"
    for content in (
        body(user=[secret]),
        body(user=secret + "\n"),
        body(resource=secret * 300),
        f'{{"user": "{secret}"'.encode(),
        f'{{"user": "{secret}", "user": 1}}'.encode(),
    ):
        answer = await client.post(
            "/check", content=content, headers={**AUTH, "Content-Type": "application/json"}
        )
        assert answer.status_code in (400, 413, 422)
        assert "do-not-echo" not in answer.text


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"],
)
async def test_content_type(client: httpx.AsyncClient, content_type: str | None) -> None:
    headers = dict(AUTH)
    if content_type:
        headers["Content-Type"] = content_type
    answer = await client.post("/check", content=body(), headers=headers)
    assert (answer.status_code, answer.json()) == (
        415,
        {"error": "the body must be application/json"},
    )
    ok = await client.post(
        "/check",
        content=body(),
        headers={**AUTH, "Content-Type": "Application/JSON; charset=utf-8"},
    )
    assert ok.status_code == 200


async def test_size_limit(client: httpx.AsyncClient, github: FakeGitHub) -> None:
    big = body(resource="r" * 5000)
    answer = await client.post(
        "/check", content=big, headers={**AUTH, "Content-Type": "application/json"}
    )
    assert (answer.status_code, answer.json()) == (
        413,
        {"error": "the body is larger than 4096 bytes"},
    )

    async def stream() -> AsyncIterator[bytes]:  # no Content-Length
        for _ in range(50):
            yield b" " * 100

    answer = await client.post(
        "/check", content=stream(), headers={**AUTH, "Content-Type": "application/json"}
    )
    assert answer.status_code == 413
    assert github.requests == []


async def test_auth_comes_before_the_body(client: httpx.AsyncClient) -> None:
    answer = await client.post("/check", content=b"x" * 5000, headers={"Content-Type": "text/x"})
    assert answer.status_code == 401


@pytest.mark.parametrize(
    ("method", "path", "status", "message"),
    [
        ("GET", "/", 404, "no such path"),
        ("GET", "/check/", 404, "no such path"),
        ("POST", "/healthz/", 404, "no such path"),
        ("GET", "/admin", 404, "no such path"),
        ("GET", "/check", 405, "GET is not allowed here"),
        ("PUT", "/check", 405, "PUT is not allowed here"),
        ("DELETE", "/healthz", 405, "DELETE is not allowed here"),
        ("POST", "/healthz", 405, "POST is not allowed here"),
    ],
)
async def test_paths_and_methods(
    client: httpx.AsyncClient, method: str, path: str, status: int, message: str
) -> None:
    answer = await client.request(method, path, headers=AUTH)
    assert (answer.status_code, answer.json()) == (status, {"error": message})
    assert answer.headers["content-type"] == "application/json"


async def test_healthz_needs_no_key_and_says_nothing(client: httpx.AsyncClient) -> None:
    answer = await client.get("/healthz")
    assert (answer.status_code, answer.json()) == (200, {"status": "ok"})
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["cache-control"] == "no-store"


class Exploding(Checker):
    def check(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        raise RuntimeError(f"secret internals of {user}")


async def test_an_unexpected_failure_is_a_json_500(caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(Exploding(), {"api_keys": [literal(KEY)]})
    async with client_for(app) as client:
        answer = await client.post("/check", json=QUESTION, headers=AUTH)
    assert (answer.status_code, answer.json()) == (500, {"error": "internal error"})
    assert "secret internals" not in answer.text
    assert "Traceback" not in answer.text
    assert "RuntimeError: secret internals" in caplog.text  # the operator sees it


async def test_the_access_log_can_be_turned_off(
    tp: Toolpass, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "toolpass.server.access")
    app = create_app(tp, {"api_keys": [literal(KEY)], "access_log": False})
    async with client_for(app) as client:
        assert (await client.post("/check", json=QUESTION, headers=AUTH)).status_code == 200
    assert caplog.records == []


def test_create_app_reads_the_server_section_of_the_file(
    tmp_path: Path, github: FakeGitHub, keys: None
) -> None:
    from conftest import DEFAULT_SERVER, write_config

    path = write_config(tmp_path / "toolpass.yaml", github.api_url, DEFAULT_SERVER)
    with Toolpass.from_config(path) as engine:
        app = create_app(engine)
        assert app.state.server_config.max_body_bytes == 1024
        assert [k.name for k in app.state.server_config.api_keys] == ["env:TP_TEST_KEY", "ci-bot"]


def test_create_app_without_a_config(tp: Toolpass) -> None:
    with pytest.raises(ConfigError, match="no server configuration"):
        create_app(tp)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ([literal("short")], "at least 16 characters"),
        ([literal("has a space in it, so long")], "printable ASCII without spaces"),
        ([literal(KEY), {"name": "again", "key": literal(KEY)}], "'again' has the same value as"),
        (["env:TP_NOT_SET_ANYWHERE"], "env:TP_NOT_SET_ANYWHERE: environment variable is not set"),
    ],
)
def test_keys_are_checked_when_the_app_is_made(tp: Toolpass, keys: list[Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        create_app(tp, {"api_keys": keys})
    assert KEY not in str(caught.value)


class Gathering(Checker):
    """Answers only once ``parties`` checks are under way at the same time."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=10)

    def check(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        self.barrier.wait()
        return Decision.allow("all here")


async def test_uncached_look_ups_run_side_by_side_on_the_configured_threads() -> None:
    app = create_app(Gathering(16), {"api_keys": [literal(KEY)], "threads": 16})
    async with app.router.lifespan_context(app), client_for(app) as client:
        answers = await asyncio.gather(
            *(client.post("/check", json=QUESTION, headers=AUTH) for _ in range(16))
        )
    assert [a.json()["decision"] for a in answers] == ["allow"] * 16
