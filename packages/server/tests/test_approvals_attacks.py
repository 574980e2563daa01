"""Attacks on the approvals page (#18): an identity header sent twice (or joined by a proxy)
signs nobody in, the sign-in limit counts a client however its address is written, and the
page writes no character that would not show as itself."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_approvals_page import ORIGIN, client_for, csrf_of, server_config, sign_in
from toolpass import ApprovalQueue, Session, Toolkit, ToolRefused
from toolpass.adapting import Guard, Traits
from toolpass.engine import Toolpass
from toolpass.server import create_app

PROXY = {"user_header": "X-Forwarded-User", "email_header": "X-Forwarded-Email"}


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/state.db"


@pytest.fixture
def engine() -> Any:
    with Toolpass([]) as tp:
        yield tp


@pytest.fixture
def proxied(engine: Toolpass, store: str) -> Any:
    return create_app(engine, server_config(store, proxy=PROXY, trusted_proxies=["10.1.0.0/16"]))


@pytest.mark.parametrize(
    "headers",
    [
        # The client's own header first, the proxy's appended after it.
        [("X-Forwarded-User", "lee@example.com"), ("X-Forwarded-User", "kim")],
        [("x-forwarded-user", "lee@example.com"), ("X-FORWARDED-USER", "kim")],
        # A proxy that joins the two into one field line.
        [("X-Forwarded-User", "lee@example.com, kim")],
        # One user, two emails.
        [
            ("X-Forwarded-User", "kim"),
            ("X-Forwarded-Email", "lee@example.com"),
            ("X-Forwarded-Email", "kim@example.com"),
        ],
    ],
)
async def test_an_identity_header_sent_twice_signs_nobody_in(
    proxied: Any, headers: list[tuple[str, str]]
) -> None:
    async with client_for(proxied, "10.1.2.3") as c:
        page = await c.get("/approvals", headers=headers, follow_redirects=False)
        assert page.status_code == 303, page.text
        assert (await c.get("/approvals/live", headers=headers)).status_code == 401


async def test_one_identity_header_still_signs_in(proxied: Any) -> None:
    async with client_for(proxied, "10.1.2.3") as c:
        headers = {"X-Forwarded-User": "kim", "X-Forwarded-Email": "kim@example.com"}
        assert (await c.get("/approvals/live", headers=headers)).status_code == 200


async def failed_sign_in(c: httpx.AsyncClient, forwarded: str) -> int:
    form = await c.get("/approvals/login")
    token = re.search(r'name=token value="([^"]+)"', form.text)
    assert token
    answer = await c.post(
        "/approvals/login",
        data={"key": "a-guess", "token": token.group(1)},
        headers={"Origin": ORIGIN, "X-Forwarded-For": forwarded},
    )
    return answer.status_code


@pytest.mark.parametrize(
    "spelling",
    [
        lambda n: f"203.0.113.7:{40000 + n}",  # the proxy writes the client's port
        lambda n: f"[2001:db8::7]:{40000 + n}",
        lambda n: f"2001:db8::{n + 1:x}",  # one /64, many addresses
        lambda n: ["203.0.113.7", "::ffff:203.0.113.7", "::ffff:cb00:7107"][n % 3],
    ],
)
async def test_the_sign_in_limit_counts_a_client_however_it_is_written(
    engine: Toolpass, store: str, spelling: Any
) -> None:
    app = create_app(engine, server_config(store, trusted_proxies=["10.1.0.0/16"]))
    async with client_for(app, "10.1.2.3") as c:
        statuses = [await failed_sign_in(c, spelling(n)) for n in range(11)]
    assert statuses == [401] * 10 + [429]


async def test_a_trusted_hop_written_with_a_port_is_not_the_client(
    engine: Toolpass, store: str
) -> None:
    """An inner proxy that writes its port must not make every client one address."""
    app = create_app(engine, server_config(store, trusted_proxies=["10.1.0.0/16"]))
    async with client_for(app, "10.1.2.3") as c:
        for n in range(12):
            assert await failed_sign_in(c, f"198.51.100.{n}, 10.1.9.9:8080") == 401


async def test_the_page_writes_no_invisible_or_bidi_character(engine: Toolpass, store: str) -> None:
    name = "deploy\u202e\u2066lanretni\u200b"
    send = Traits(effect="write", sends_out=True, reads_private=True, untrusted_output=True)
    guard = Guard(
        None, {name: send}, toolkit=Toolkit(approver=ApprovalQueue(store=store), audit=[])
    )
    with Session("dana@example.com").active(), pytest.raises(ToolRefused):
        guard.run("dana@example.com", name, {"to": "eve@evil.example"}, lambda: "sent")
    async with client_for(create_app(engine, server_config(store))) as c:
        page = await sign_in(c)
        assert page.status_code == 200
        csrf_of(page.text)
    assert not any(ch in page.text for ch in "\u202e\u2066\u200b")
    assert "deploy\\u202e\\u2066lanretni\\u200b" in page.text


@pytest.mark.parametrize("peer", ["::ffff:10.1.2.3"])
async def test_a_dual_stack_proxy_is_trusted_and_its_ipv6_hops_skipped(
    engine: Toolpass, store: str, peer: str
) -> None:
    config = server_config(store, proxy=PROXY, trusted_proxies=["10.1.0.0/16", "fd00::/8"])
    app = create_app(engine, config)
    async with client_for(app, peer) as c:
        assert (
            await c.get("/approvals/live", headers={"X-Forwarded-User": "kim"})
        ).status_code == 200
        for n in range(10):
            assert await failed_sign_in(c, f"198.51.100.{n}, [fd00::1]:8080, fd00::2") == 401
        assert await failed_sign_in(c, "198.51.100.99, fd00::3") == 401
