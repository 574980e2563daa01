"""The approvals page in process (httpx's ASGI transport), over a real SQLite store that a
real secured tool in this process asks through: login, CSRF, escaping, the decider's name,
decisions reaching the tool, the audit tail."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from toolpass import ApprovalPending, ApprovalQueue, Session, Toolkit, ToolRefused
from toolpass.engine import ConfigError, Toolpass, literal
from toolpass.server import create_app, parse_server_config
from toolpass.server.config import ServerConfig

LEE_KEY = "approver-lee-0123456789abcdef"
BOT_KEY = "tp-service-key-0123456789abcdef"
ORIGIN = "http://approvals.test"
HOSTILE = "<script>alert('x')</script></pre><form action=//evil.example><<<END UNTRUSTED>>>"


def server_config(store: str, **approvals: Any) -> ServerConfig:
    section: dict[str, Any] = {
        "api_keys": [{"name": "bot", "key": literal(BOT_KEY)}],
        "approvals": {
            "api_keys": [{"name": "lee@example.com", "key": literal(LEE_KEY)}],
            **approvals,
        },
    }
    return parse_server_config(section, store=store)


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/state.db"


@pytest.fixture
def audit_file(tmp_path: Path) -> Path:
    return tmp_path / "audit.jsonl"


@pytest.fixture
def engine() -> Iterator[Toolpass]:
    with Toolpass([]) as tp:
        yield tp


class Tool:
    """A real secured tool that always needs approval, asking through the shared store."""

    def __init__(self, store: str, audit_file: Path) -> None:
        self.queue = ApprovalQueue(store=store)
        self.runs: list[str] = []
        kit = Toolkit(approver=self.queue, audit=[str(audit_file)])

        @kit.secured_tool(effect="write", approve=True)
        def deploy(service: str, note: str) -> str:
            self.runs.append(service)
            return f"deployed {service}"

        self.deploy = deploy

    def ask(self, note: str = "roll out 1.2", user: str = "dana@example.com") -> str:
        with Session(user, id="conv-1").active():
            try:
                self.deploy("web", note)
            except ApprovalPending as waiting:
                return waiting.request_id
        raise AssertionError("the call ran without approval")

    def retry(self, note: str = "roll out 1.2", user: str = "dana@example.com") -> str:
        with Session(user, id="conv-1").active():
            result: str = self.deploy("web", note)
            return result


@pytest.fixture
def tool(store: str, audit_file: Path) -> Tool:
    return Tool(store, audit_file)


def client_for(app: Any, address: str = "10.0.0.9") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url=ORIGIN, follow_redirects=True)


@pytest.fixture
async def client(
    engine: Toolpass, store: str, audit_file: Path
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(engine, server_config(store, audit_file=str(audit_file)))
    async with client_for(app) as c:
        yield c


async def sign_in(client: httpx.AsyncClient, key: str = LEE_KEY) -> httpx.Response:
    form = await client.get("/approvals/login")
    token = re.search(r'name=token value="([^"]+)"', form.text)
    assert token, form.text
    return await client.post(
        "/approvals/login",
        data={"key": key, "token": token.group(1)},
        headers={"Origin": ORIGIN},
    )


def csrf_of(page: str) -> str:
    found = re.search(r'name=csrf value="([^"]+)"', page)
    assert found, page
    return found.group(1)


# --- configuration --------------------------------------------------------------------


def test_the_page_needs_a_login(store: str) -> None:
    section = {"api_keys": [literal(BOT_KEY)], "approvals": {"audit_file": "a.jsonl"}}
    with pytest.raises(ConfigError, match=r"needs a login.*never open to all"):
        parse_server_config(section, store=store)


@pytest.mark.parametrize("url", [None, "memory:"])
def test_the_page_needs_a_shared_store(url: str | None) -> None:
    with pytest.raises(ConfigError, match="needs a shared store"):
        server_config(url)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("proxy", "message"),
    [
        ({"user_header": "X-Forwarded-User"}, "needs the proxy's addresses"),
        ({"email_header": "X-Email"}, "user_header': missing"),
        ({"user_header": "X User"}, "must be a header name"),
    ],
)
def test_a_bad_proxy_section(store: str, proxy: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        server_config(store, proxy=proxy)


def test_disabled_means_no_page(store: str) -> None:
    assert server_config(store, enabled=False).approvals is None
    assert parse_server_config({"api_keys": [literal(BOT_KEY)]}).approvals is None


async def test_no_page_routes_without_the_section(engine: Toolpass) -> None:
    app = create_app(engine, {"api_keys": [literal(BOT_KEY)]})
    async with client_for(app) as c:
        assert (await c.get("/approvals")).status_code == 404


# --- login ----------------------------------------------------------------------------


async def test_nothing_is_shown_before_sign_in(client: httpx.AsyncClient, tool: Tool) -> None:
    request_id = tool.ask()
    page = await client.get("/approvals", follow_redirects=False)
    assert page.status_code == 303
    assert page.headers["location"] == "/approvals/login"
    live = await client.get("/approvals/live")
    assert live.status_code == 401
    assert request_id not in live.text
    decided = await client.post(
        "/approvals/decide",
        data={"id": request_id, "decision": "approve", "csrf": "x"},
        headers={"Origin": ORIGIN},
    )
    assert decided.status_code == 401
    assert tool.queue.get(request_id).status == "pending"


async def test_a_wrong_key_or_the_service_key_does_not_sign_in(client: httpx.AsyncClient) -> None:
    for key in ("not-a-key-at-all-0000000000", BOT_KEY, LEE_KEY + "x"):
        answer = await sign_in(client, key)
        assert answer.status_code == 401
        assert "not an approver" in answer.text
    assert (await client.get("/approvals/live")).status_code == 401


async def test_sign_in_sets_a_strict_http_only_cookie(client: httpx.AsyncClient) -> None:
    answer = await sign_in(client)
    assert answer.status_code == 200  # followed the 303 to the page
    assert "Signed in as <strong id=me>lee@example.com</strong>" in answer.text
    [first] = answer.history
    cookie = next(
        v
        for k, v in first.headers.multi_items()
        if k == "set-cookie" and "toolpass_approvals=" in v
    )
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie or "SameSite=Strict" in cookie
    assert "Path=/approvals" in cookie
    assert "Max-Age=28800" in cookie
    assert "Secure" not in cookie  # plain http here; see the TLS test


async def test_the_cookie_is_secure_over_tls(engine: Toolpass, store: str) -> None:
    config = server_config(store).replace(tls_cert_file="cert.pem", tls_key_file="key.pem")
    async with client_for(create_app(engine, config)) as c:
        c.base_url = httpx.URL("https://approvals.test")
        form = await c.get("/approvals/login")
        cookie = form.headers["set-cookie"]
        assert "Secure" in cookie
        assert "HttpOnly" in cookie


async def test_the_cookie_is_secure_behind_an_https_proxy(engine: Toolpass, store: str) -> None:
    config = server_config(store, public_url="https://toolpass.example.com")
    async with client_for(create_app(engine, config)) as c:
        cookie = (await c.get("/approvals/login")).headers["set-cookie"]
    assert "Secure" in cookie


async def test_the_login_form_needs_its_own_token(client: httpx.AsyncClient) -> None:
    await client.get("/approvals/login")
    answer = await client.post(
        "/approvals/login", data={"key": LEE_KEY, "token": "forged"}, headers={"Origin": ORIGIN}
    )
    assert answer.status_code == 401
    assert "expired" in answer.text
    cross = await client.post(
        "/approvals/login", data={"key": LEE_KEY}, headers={"Origin": "http://evil.example"}
    )
    assert cross.status_code == 403


async def test_a_forged_cookie_is_no_session(client: httpx.AsyncClient) -> None:
    await sign_in(client)
    value = client.cookies["toolpass_approvals"]
    client.cookies.clear()
    client.cookies.set("toolpass_approvals", value[:-1] + ("0" if value[-1] != "0" else "1"))
    assert (await client.get("/approvals/live")).status_code == 401


async def test_sign_out_ends_the_session(client: httpx.AsyncClient) -> None:
    page = await sign_in(client)
    cookie = client.cookies["toolpass_approvals"]
    out = await client.post(
        "/approvals/logout", data={"csrf": csrf_of(page.text)}, headers={"Origin": ORIGIN}
    )
    assert out.status_code == 200
    assert "approver key" in out.text
    client.cookies.set("toolpass_approvals", cookie)  # the old cookie, replayed
    assert (await client.get("/approvals/live")).status_code == 401


# --- the page and decisions -----------------------------------------------------------


async def test_the_page_shows_who_what_why_and_the_preview(
    client: httpx.AsyncClient, tool: Tool
) -> None:
    request_id = tool.ask(note="roll out 1.2 to 5% first")
    page = await sign_in(client)
    assert f'id="request-{request_id}"' in page.text
    assert "<span class=user>dana@example.com</span> wants to run" in page.text
    assert "<code class=tool>deploy</code> <span class=effect>write</span>" in page.text
    assert "<li>this tool always needs approval</li>" in page.text
    assert "note = &#x27;roll out 1.2 to 5% first&#x27;" in page.text
    assert "session <code>conv-1</code>" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert page.headers["x-frame-options"] == "DENY"


async def test_a_hostile_preview_is_shown_inert(client: httpx.AsyncClient, tool: Tool) -> None:
    tool.ask(note=HOSTILE, user="<img src=x onerror=alert(1)>@example.com")
    page = await sign_in(client)
    assert "<script>alert" not in page.text
    assert "</pre><form action=//evil" not in page.text
    assert "<img src=x" not in page.text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&lt;/pre&gt;&lt;form" in page.text
    assert "&lt;&lt;&lt;END UNTRUSTED&gt;&gt;&gt;" in page.text
    # Only the page's own forms and script: nothing the preview brought.
    assert page.text.count("<form") == 3  # the request's decision, the filters, sign out
    assert page.text.count("<script") == 1


async def test_approve_reaches_the_store_and_the_retry_runs_once(
    client: httpx.AsyncClient, tool: Tool, store: str
) -> None:
    request_id = tool.ask()
    page = await sign_in(client)
    answer = await client.post(
        "/approvals/decide",
        data={
            "csrf": csrf_of(page.text),
            "id": request_id,
            "decision": "approve",
            "by": "mallory",  # not a field the page reads: the decider is the login
            "decided_by": "mallory",
        },
        headers={"Origin": ORIGIN},
    )
    assert answer.status_code == 200
    assert answer.history[0].status_code == 303
    seen = ApprovalQueue(store=store).get(request_id)  # another queue over the same file
    assert (seen.status, seen.decided_by) == ("approved", "lee@example.com")
    assert "<td class=status>approved, not yet run</td><td>lee@example.com</td>" in answer.text
    assert tool.retry() == "deployed web"
    assert tool.runs == ["web"]
    with pytest.raises(ApprovalPending):  # used up: the same call asks again
        tool.retry()
    assert tool.runs == ["web"]


async def test_deny_needs_a_reason_and_the_agent_reads_it(
    client: httpx.AsyncClient, tool: Tool
) -> None:
    request_id = tool.ask()
    page = await sign_in(client)
    csrf = csrf_of(page.text)
    data = {"csrf": csrf, "id": request_id, "decision": "deny"}
    bare = await client.post("/approvals/decide", data=data, headers={"Origin": ORIGIN})
    assert bare.status_code == 400
    assert tool.queue.get(request_id).status == "pending"
    data["reason"] = "not during the freeze"
    denied = await client.post("/approvals/decide", data=data, headers={"Origin": ORIGIN})
    assert denied.status_code == 200
    with pytest.raises(ToolRefused) as refused:
        tool.retry()
    assert refused.value.code == "approval_denied"
    assert "lee@example.com denied this call" in refused.value.message
    assert "not during the freeze" in refused.value.message
    assert tool.runs == []


async def test_a_decided_request_cannot_be_decided_again(
    client: httpx.AsyncClient, tool: Tool
) -> None:
    request_id = tool.ask()
    page = await sign_in(client)
    data = {"csrf": csrf_of(page.text), "id": request_id, "decision": "approve"}
    await client.post("/approvals/decide", data=data, headers={"Origin": ORIGIN})
    again = await client.post(
        "/approvals/decide",
        data={**data, "decision": "deny", "reason": "r"},
        headers={"Origin": ORIGIN},
    )
    assert again.status_code == 409
    assert "already approved" in again.text
    gone = await client.post(
        "/approvals/decide", data={**data, "id": "ffffffffffff"}, headers={"Origin": ORIGIN}
    )
    assert gone.status_code == 404


@pytest.mark.parametrize(
    "headers",
    [
        {},  # neither Origin nor Referer
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Referer": "http://evil.example/approvals"},
    ],
)
async def test_a_post_from_elsewhere_is_refused(
    client: httpx.AsyncClient, tool: Tool, headers: dict[str, str]
) -> None:
    request_id = tool.ask()
    page = await sign_in(client)
    data = {"csrf": csrf_of(page.text), "id": request_id, "decision": "approve"}
    answer = await client.post("/approvals/decide", data=data, headers=headers)
    assert answer.status_code == 403
    assert tool.queue.get(request_id).status == "pending"


async def test_a_same_origin_referer_is_enough(client: httpx.AsyncClient, tool: Tool) -> None:
    request_id = tool.ask()
    page = await sign_in(client)
    data = {"csrf": csrf_of(page.text), "id": request_id, "decision": "approve"}
    answer = await client.post(
        "/approvals/decide", data=data, headers={"Referer": f"{ORIGIN}/approvals"}
    )
    assert answer.status_code == 200
    assert tool.queue.get(request_id).status == "approved"


@pytest.mark.parametrize("token", ["", "wrong", "x" * 43])
async def test_a_post_without_the_session_token_is_refused(
    client: httpx.AsyncClient, tool: Tool, token: str
) -> None:
    request_id = tool.ask()
    await sign_in(client)
    data = {"csrf": token, "id": request_id, "decision": "approve"}
    answer = await client.post("/approvals/decide", data=data, headers={"Origin": ORIGIN})
    assert answer.status_code == 403
    assert "token" in answer.text
    assert tool.queue.get(request_id).status == "pending"


async def test_another_sessions_token_is_refused(engine: Toolpass, store: str, tool: Tool) -> None:
    app = create_app(engine, server_config(store))
    async with client_for(app) as first, client_for(app) as second:
        other = csrf_of((await sign_in(first)).text)
        await sign_in(second)
        request_id = tool.ask()
        data = {"csrf": other, "id": request_id, "decision": "approve"}
        answer = await second.post("/approvals/decide", data=data, headers={"Origin": ORIGIN})
    assert answer.status_code == 403


async def test_get_changes_nothing(client: httpx.AsyncClient, tool: Tool) -> None:
    request_id = tool.ask()
    await sign_in(client)
    answer = await client.get("/approvals/decide", params={"id": request_id, "decision": "approve"})
    assert answer.status_code == 405
    assert tool.queue.get(request_id).status == "pending"


# --- the proxy login ------------------------------------------------------------------


@pytest.fixture
def proxied_app(engine: Toolpass, store: str) -> Any:
    proxy = {"user_header": "X-Forwarded-User", "email_header": "X-Forwarded-Email"}
    return create_app(engine, server_config(store, proxy=proxy, trusted_proxies=["10.1.0.0/16"]))


async def test_a_trusted_proxys_header_signs_in(proxied_app: Any, tool: Tool) -> None:
    request_id = tool.ask()
    headers = {"X-Forwarded-User": "kim", "X-Forwarded-Email": "kim@example.com"}
    async with client_for(proxied_app, "10.1.2.3") as c:
        page = await c.get("/approvals", headers=headers)
        assert page.status_code == 200
        assert "kim &lt;kim@example.com&gt;" in page.text
        data = {"csrf": csrf_of(page.text), "id": request_id, "decision": "approve"}
        answer = await c.post("/approvals/decide", data=data, headers={**headers, "Origin": ORIGIN})
        assert answer.status_code == 200
    assert tool.queue.get(request_id).decided_by == "kim <kim@example.com>"


async def test_the_header_from_anywhere_else_is_ignored(proxied_app: Any, tool: Tool) -> None:
    tool.ask()
    async with client_for(proxied_app, "10.2.0.1") as c:
        page = await c.get(
            "/approvals", headers={"X-Forwarded-User": "kim"}, follow_redirects=False
        )
        assert page.status_code == 303
        assert (
            await c.get("/approvals/live", headers={"X-Forwarded-User": "kim"})
        ).status_code == 401


async def test_a_proxy_session_follows_the_header(proxied_app: Any, tool: Tool) -> None:
    request_id = tool.ask()
    async with client_for(proxied_app, "10.1.2.3") as c:
        page = await c.get("/approvals", headers={"X-Forwarded-User": "kim"})
        data = {"csrf": csrf_of(page.text), "id": request_id, "decision": "approve"}
        # The proxy now vouches for someone else: kim's session and token no longer count.
        other = await c.post(
            "/approvals/decide",
            data=data,
            headers={"X-Forwarded-User": "sam", "Origin": ORIGIN},
        )
        assert other.status_code == 403
        gone = await c.get("/approvals/live")  # no header at all: nobody
        assert gone.status_code == 401
    assert tool.queue.get(request_id).status == "pending"


# --- the audit tail -------------------------------------------------------------------


async def test_the_audit_tail_is_the_latest_events_first(
    client: httpx.AsyncClient, tool: Tool, audit_file: Path
) -> None:
    tool.ask(note="first")
    tool.ask(note="second <b>")
    with audit_file.open("a") as f:
        f.write("not an event\n")
        f.write('{"tool": "torn", "outcome": ')  # a write in progress
    await sign_in(client)
    live = (await client.get("/approvals/live")).json()
    assert len(live["pending"]) == 2
    assert [(e["tool"], e["outcome"]) for e in live["audit"]] == [
        ("deploy", "refused approval_pending"),
        ("deploy", "refused approval_pending"),
    ]
    assert live["audit"][0]["user"] == "dana@example.com"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", live["audit"][0]["time"])
    page = await client.get("/approvals")
    assert page.text.count("<td>refused approval_pending</td>") == 2


async def test_the_tail_shows_at_most_audit_lines(
    engine: Toolpass, store: str, tool: Tool, audit_file: Path
) -> None:
    for n in range(5):
        tool.ask(note=f"note {n}")
    app = create_app(engine, server_config(store, audit_file=str(audit_file), audit_lines=3))
    async with client_for(app) as c:
        await sign_in(c)
        live = (await c.get("/approvals/live")).json()
    assert len(live["audit"]) == 3
    assert len(live["pending"]) == 5


async def test_the_page_script_and_style_are_served_here(client: httpx.AsyncClient) -> None:
    js = await client.get("/approvals/static/approvals.js")
    assert js.status_code == 200
    assert js.headers["content-type"].startswith("text/javascript")
    assert "innerHTML" not in js.text  # values are set as text
    assert (await client.get("/approvals/static/approvals.css")).status_code == 200
    assert (await client.get("/approvals/static/..%2fapp.py")).status_code == 404


@pytest.mark.parametrize(
    ("top", "approvals", "message"),
    [
        ("store: sqlite:///{dir}/s.db\n", "audit_file: a.jsonl", "needs a login"),
        ("", "api_keys: [env:TP_APPROVER]", "needs a shared store"),
        ("store: sqlite:///{dir}/s.db\n", "api_keys: [env:TP_NOT_SET]", "env:TP_NOT_SET"),
    ],
)
def test_toolpass_serve_refuses_to_start_without_a_login_or_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, top: str, approvals: str, message: str
) -> None:
    monkeypatch.setenv("TP_SERVICE", BOT_KEY)
    monkeypatch.setenv("TP_APPROVER", LEE_KEY)
    config = tmp_path / "toolpass.yaml"
    config.write_text(
        "connections: []\n"
        + top.format(dir=tmp_path)
        + f"server:\n  api_keys: [env:TP_SERVICE]\n  approvals:\n    {approvals}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "toolpass.cli", "serve", "-config", str(config), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert line.startswith(f"toolpass serve: {config}, line ")
    assert message in line


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A redis-server of this test's own on 127.0.0.1 (`python3 dev.py test` installs it; a
    missing one fails)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail(
            "redis-server is not installed: `python3 dev.py test` installs it (as root, with"
            " apt-get; elsewhere: sudo apt-get install redis-server)"
        )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(10)


async def test_the_page_over_redis(engine: Toolpass, redis_url: str, audit_file: Path) -> None:
    tool = Tool(redis_url, audit_file)
    request_id = tool.ask()
    app = create_app(engine, server_config(redis_url))
    async with client_for(app) as c:
        page = await sign_in(c)
        assert f'id="request-{request_id}"' in page.text
        data = {"csrf": csrf_of(page.text), "id": request_id, "decision": "approve"}
        answer = await c.post("/approvals/decide", data=data, headers={"Origin": ORIGIN})
        assert answer.status_code == 200
    assert ApprovalQueue(store=redis_url).get(request_id).decided_by == "lee@example.com"
    assert tool.retry() == "deployed web"
    assert tool.runs == ["web"]


async def test_repeated_failed_sign_ins_are_slowed(client: httpx.AsyncClient) -> None:
    for _ in range(10):
        assert (await sign_in(client, "not-the-key-0000000000")).status_code == 401
    blocked = await sign_in(client)  # even the right key, from this address, for a while
    assert blocked.status_code == 429
    assert "Too many failed sign-ins" in blocked.text
