"""The approvals page hardened (#18): proxy headers count only from the operator's
``trusted_proxies`` (against ``toolpass serve`` in its own process, as a local agent's HTTP
tool would reach it), nobody approves a call made for themselves, and removing a key ends
its sessions."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ServerProcess, approvals_config
from test_approvals_page import LEE_KEY, ORIGIN, Tool, client_for, csrf_of, server_config, sign_in
from toolpass import ApprovalQueue, Session, Toolkit, ToolRefused
from toolpass.adapting import Guard, Traits
from toolpass.engine import ConfigError, Toolpass, literal
from toolpass.server import create_app, parse_server_config

KIM_KEY = "approver-kim-0123456789abcdef"


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/state.db"


@pytest.fixture
def engine() -> Iterator[Toolpass]:
    with Toolpass([]) as tp:
        yield tp


@pytest.fixture
def tool(store: str, tmp_path: Path) -> Tool:
    return Tool(store, tmp_path / "audit.jsonl")


@pytest.fixture
def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Callable[..., ServerProcess]
) -> tuple[ServerProcess, Tool]:
    """``toolpass serve`` with key and proxy sign-in (the proxy at 10.1.0.0/16), on
    127.0.0.1, over the SQLite store a real secured tool asks through."""
    monkeypatch.setenv("TP_SERVICE_KEY", "tp-service-key-0123456789abcdef")
    monkeypatch.setenv("TP_APPROVER_LEE", LEE_KEY)
    config, url = approvals_config(
        tmp_path,
        """\
        api_keys:
          - name: lee@example.com
            key: env:TP_APPROVER_LEE
        proxy:
          user_header: X-Forwarded-User
        trusted_proxies: [10.1.0.0/16]
        """,
    )
    return start("-config", str(config), "--port", "0"), Tool(url, tmp_path / "audit.jsonl")


def test_a_local_process_cannot_sign_in_with_proxy_headers(
    served: tuple[ServerProcess, Tool],
) -> None:
    server, asking = served
    request_id = asking.ask()
    forged = {"X-Forwarded-For": "10.1.2.3", "X-Forwarded-User": "kim"}
    with httpx.Client(base_url=server.url, follow_redirects=False) as agent:
        page = agent.get("/approvals", headers=forged)
        assert page.status_code == 303  # to the sign-in form: nobody is signed in
        assert agent.get("/approvals/live", headers=forged).status_code == 401
        data = {"csrf": "", "id": request_id, "decision": "approve"}
        posted = agent.post(
            "/approvals/decide", data=data, headers={**forged, "Origin": server.url}
        )
        assert posted.status_code == 401
    assert asking.queue.get(request_id).status == "pending"


def test_the_sign_in_limit_holds_whatever_address_is_claimed(
    served: tuple[ServerProcess, Tool],
) -> None:
    server, _ = served
    with httpx.Client(base_url=server.url) as agent:
        statuses = []
        for n in range(12):
            form = agent.get("/approvals/login")
            token = re.search(r'name=token value="([^"]+)"', form.text)
            assert token, form.text
            answer = agent.post(
                "/approvals/login",
                data={"key": f"a-guess-{n}", "token": token.group(1)},
                headers={"Origin": server.url, "X-Forwarded-For": f"203.0.113.{n}"},
            )
            statuses.append(answer.status_code)
    assert statuses[:10] == [401] * 10
    assert statuses[10:] == [429, 429]


# --- in process: the addresses a trusted proxy forwards ---------------------------------


def test_a_proxy_login_needs_trusted_proxies(store: str) -> None:
    with pytest.raises(ConfigError, match="trusted_proxies"):
        server_config(store, proxy={"user_header": "X-Forwarded-User"})
    with pytest.raises(ConfigError, match=r"moved to approvals\.trusted_proxies"):
        server_config(store, proxy={"user_header": "X-User", "trusted": ["10.0.0.1"]})
    with pytest.raises(ConfigError, match=r"'nope' is not an address"):
        server_config(store, trusted_proxies=["nope"])
    with pytest.raises(ConfigError, match=r"self_approval.*true or false"):
        server_config(store, self_approval="no")


async def test_behind_a_trusted_proxy_the_limit_counts_the_forwarded_client(
    engine: Toolpass, store: str
) -> None:
    app = create_app(engine, server_config(store, trusted_proxies=["10.1.0.0/16"]))

    async def fail(c: httpx.AsyncClient, forwarded: str) -> int:
        form = await c.get("/approvals/login")
        token = re.search(r'name=token value="([^"]+)"', form.text)
        assert token
        answer = await c.post(
            "/approvals/login",
            data={"key": "a-guess", "token": token.group(1)},
            headers={"Origin": ORIGIN, "X-Forwarded-For": forwarded},
        )
        return answer.status_code

    async with client_for(app, "10.1.2.3") as c:
        # The proxy appends the client it saw; what the client claimed before it is ignored.
        assert [await fail(c, f"198.51.100.{n}, 203.0.113.7") for n in range(10)] == [401] * 10
        assert await fail(c, "203.0.113.7") == 429
        assert await fail(c, "203.0.113.8") == 401  # another client behind the proxy


# --- self-approval and removed keys -----------------------------------------------------


async def test_an_approver_cannot_approve_a_call_made_for_them(
    engine: Toolpass, store: str, tool: Tool
) -> None:
    request_id = tool.ask(user="lee@example.com")
    async with client_for(create_app(engine, server_config(store))) as c:
        page = await (await sign_in(c)).aread()
        data = {"csrf": csrf_of(page.decode()), "id": request_id, "decision": "approve"}
        answer = await c.post("/approvals/decide", data=data, headers={"Origin": ORIGIN})
        assert answer.status_code == 403
        assert "another approver must approve it" in answer.text
    assert tool.queue.get(request_id).status == "pending"
    allowed = create_app(engine, server_config(store, self_approval=True))
    async with client_for(allowed) as c:
        page = await (await sign_in(c)).aread()
        data = {"csrf": csrf_of(page.decode()), "id": request_id, "decision": "approve"}
        answer = await c.post("/approvals/decide", data=data, headers={"Origin": ORIGIN})
        assert answer.status_code == 200
    assert tool.queue.get(request_id).decided_by == "lee@example.com"


def without_lee(url: str, **approvals: Any) -> Any:
    """The page once lee's key is removed (kim's stays)."""
    section: dict[str, Any] = {
        "api_keys": [{"name": "bot", "key": literal("tp-service-key-0123456789abcdef")}],
        "approvals": {"api_keys": [{"name": "kim@example.com", "key": literal(KIM_KEY)}]},
    }
    section["approvals"].update(approvals)
    return parse_server_config(section, store=url)


@pytest.mark.parametrize("change", ["removed", "replaced"])
async def test_removing_a_key_ends_its_sessions(
    engine: Toolpass, store: str, tool: Tool, change: str
) -> None:
    request_id = tool.ask()
    before = create_app(engine, server_config(store))
    if change == "removed":
        after = create_app(engine, without_lee(store))
    else:  # lee keeps the name, with a new key
        new = [{"name": "lee@example.com", "key": literal("approver-lee-new-0123456789")}]
        after = create_app(engine, server_config(store, api_keys=new))
    async with client_for(before) as c:
        page = (await sign_in(c)).text
        assert (await c.get("/approvals/live")).status_code == 200
        cookies = c.cookies
    async with client_for(after) as c:
        c.cookies = cookies
        assert (await c.get("/approvals/live")).status_code == 401
        data = {"csrf": csrf_of(page), "id": request_id, "decision": "approve"}
        answer = await c.post("/approvals/decide", data=data, headers={"Origin": ORIGIN})
        assert answer.status_code == 401
    assert tool.queue.get(request_id).status == "pending"


# --- what the page shows ------------------------------------------------------------------


async def test_the_page_shows_a_framework_tools_arguments(engine: Toolpass, store: str) -> None:
    """A call checked through an adapter (its Guard), waiting in the shared store: the page
    shows the address it would send to."""
    send = Traits(effect="write", sends_out=True, reads_private=True, untrusted_output=True)
    kit = Toolkit(approver=ApprovalQueue(store=store), audit=[])
    guard = Guard(None, {"send_mail": send}, toolkit=kit)
    with Session("dana@example.com").active(), pytest.raises(ToolRefused):
        guard.run("dana@example.com", "send_mail", {"to": "eve@evil.example"}, lambda: "sent")
    async with client_for(create_app(engine, server_config(store))) as c:
        page = await sign_in(c)
    assert "to = &#x27;eve@evil.example&#x27;" in page.text
