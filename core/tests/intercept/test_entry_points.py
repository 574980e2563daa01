"""The lower layers of each client library, called directly by a tool, are checked too; each
request is checked once however many hooked layers it passes; each redirect hop is checked.

Every test runs a real client against the fake GitHub on 127.0.0.1: dana may open pull
requests and is let through, rory may not and is refused, and the fake's request log proves
his request never arrived.
"""

from __future__ import annotations

import http.client
import json
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import aiohttp
import httpcore
import httpx
import pytest
import requests
import urllib3
from fakes.github import FakeGitHub
from fakes.proxy import FakeProxy
from fakes.server import Reply
from toolpass import Session, Toolkit
from toolpass.intercept import ActionRefused

from .conftest import TOKEN, posted

PULLS = "/repos/acme/widgets/pulls"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
DATA = json.dumps({"title": "fix", "head": "fix", "base": "main"}).encode()


def by_hand(port: int) -> int:
    """``http.client`` without ``request()``: putrequest, putheader, endheaders(body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.putrequest("POST", PULLS)
        for name, value in {**HEADERS, "Content-Length": str(len(DATA))}.items():
            conn.putheader(name, value)
        conn.endheaders(DATA)
        return conn.getresponse().status
    finally:
        conn.close()


def body_sent_later(port: int) -> int:
    """``http.client`` with the body written by ``send()`` after ``endheaders()``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.putrequest("POST", PULLS)
        for name, value in {**HEADERS, "Content-Length": str(len(DATA))}.items():
            conn.putheader(name, value)
        conn.endheaders()
        conn.send(DATA)
        return conn.getresponse().status
    finally:
        conn.close()


def urllib3_connection(port: int) -> int:
    conn = urllib3.connection.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("POST", PULLS, body=DATA, headers=HEADERS)
        return conn.getresponse().status
    finally:
        conn.close()


def urllib3_pool(port: int) -> int:
    with urllib3.HTTPConnectionPool("127.0.0.1", port) as pool:
        return pool.urlopen("POST", PULLS, body=DATA, headers=HEADERS).status


def urllib3_pool_manager(port: int) -> int:
    with urllib3.PoolManager() as manager:
        url = f"http://127.0.0.1:{port}{PULLS}"
        return manager.request("POST", url, body=DATA, headers=HEADERS).status


def httpx_transport(port: int) -> int:
    with httpx.HTTPTransport() as transport:
        request = httpx.Request("POST", f"http://127.0.0.1:{port}{PULLS}", content=DATA)
        request.headers.update(HEADERS)
        response = transport.handle_request(request)
        response.read()
        return response.status_code


def httpx_mount(port: int) -> int:
    mounts = {"http://127.0.0.1": httpx.HTTPTransport(retries=1)}
    with httpx.Client(mounts=mounts) as client:
        url = f"http://127.0.0.1:{port}{PULLS}"
        return client.post(url, content=DATA, headers=HEADERS).status_code


def httpcore_pool(port: int) -> int:
    with httpcore.ConnectionPool() as pool:
        url = f"http://127.0.0.1:{port}{PULLS}"
        return pool.request("POST", url, headers=HEADERS, content=DATA).status


def httpcore_connection(port: int) -> int:
    origin = httpcore.Origin(b"http", b"127.0.0.1", port)
    with httpcore.HTTPConnection(origin) as conn:
        url = f"http://127.0.0.1:{port}{PULLS}"
        return conn.request("POST", url, headers=HEADERS, content=DATA).status


async def httpx_async_transport(port: int) -> int:
    async with httpx.AsyncHTTPTransport() as transport:
        request = httpx.Request("POST", f"http://127.0.0.1:{port}{PULLS}", content=DATA)
        request.headers.update(HEADERS)
        response = await transport.handle_async_request(request)
        await response.aread()
        return response.status_code


async def httpcore_async_pool(port: int) -> int:
    async with httpcore.AsyncConnectionPool() as pool:
        url = f"http://127.0.0.1:{port}{PULLS}"
        response = await pool.request("POST", url, headers=HEADERS, content=DATA)
        return response.status


SYNC: dict[str, Callable[[int], int]] = {
    "http.client-by-hand": by_hand,
    "http.client-send-later": body_sent_later,
    "urllib3-connection": urllib3_connection,
    "urllib3-pool": urllib3_pool,
    "urllib3-pool-manager": urllib3_pool_manager,
    "httpx-transport": httpx_transport,
    "httpx-mount": httpx_mount,
    "httpcore-pool": httpcore_pool,
    "httpcore-connection": httpcore_connection,
}
ASYNC = {"httpx-async-transport": httpx_async_transport, "httpcore-async": httpcore_async_pool}


@pytest.mark.parametrize("client", SYNC.values(), ids=SYNC.keys())
def test_lower_layers_are_checked(
    kit: Toolkit, github: FakeGitHub, events: list[Any], client: Callable[[int], int]
) -> None:
    @kit.tool()
    def open_pr() -> int:
        return client(github.port)

    with Session("rory@example.com").active(), pytest.raises(ActionRefused) as info:
        open_pr()
    assert info.value.code == "not_authorized"
    assert posted(github) == []
    with Session("dana@example.com").active():
        assert open_pr() == 201
    assert posted(github) == [PULLS]
    [action] = events[-1].actions  # one request, one check, however many layers it passed
    assert (action["action"], action["verdict"]) == ("pr.create", "allowed")


@pytest.mark.parametrize("client", ASYNC.values(), ids=ASYNC.keys())
async def test_lower_async_layers_are_checked(
    kit: Toolkit, github: FakeGitHub, events: list[Any], client: Callable[[int], Any]
) -> None:
    @kit.tool()
    async def open_pr() -> int:
        return int(await client(github.port))

    async with Session("rory@example.com").active():
        with pytest.raises(ActionRefused):
            await open_pr()
    assert posted(github) == []
    async with Session("dana@example.com").active():
        assert await open_pr() == 201
    assert posted(github) == [PULLS]
    assert len(events[-1].actions) == 1


# --- through a proxy: the URL the proxy is asked for is the one checked -----------------------


@pytest.fixture
def proxy() -> Iterator[FakeProxy]:
    with FakeProxy() as fake:
        yield fake


def test_through_a_proxy_the_target_is_checked(
    kit: Toolkit, github: FakeGitHub, proxy: FakeProxy
) -> None:
    github.add_repo("acme/secret", {"dana": "read"})

    @kit.tool()
    def read(repo: str) -> int:
        with urllib3.ProxyManager(proxy.url) as manager:
            url = f"{github.api_url}/repos/{repo}"
            return manager.request("GET", url, headers={"Authorization": f"Bearer {TOKEN}"}).status

    with Session("rory@example.com").active(), pytest.raises(ActionRefused):
        read("acme/secret")
    assert proxy.seen == []
    with Session("dana@example.com").active():
        assert read("acme/secret") == 200
    assert proxy.seen == [f"GET {github.api_url}/repos/acme/secret"]


# --- redirects: every hop is checked --------------------------------------------------------


def _via_requests(url: str) -> int:
    return requests.get(url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5).status_code


def _via_urllib(url: str) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return int(response.status)


def _via_urllib3(url: str) -> int:
    with urllib3.PoolManager() as manager:
        return manager.request("GET", url, headers={"Authorization": f"Bearer {TOKEN}"}).status


def _via_httpx(url: str) -> int:
    with httpx.Client(follow_redirects=True) as client:
        return client.get(url, headers={"Authorization": f"Bearer {TOKEN}"}).status_code


REDIRECTED = {
    "requests": _via_requests,
    "urllib": _via_urllib,
    "urllib3": _via_urllib3,
    "httpx": _via_httpx,
}


@pytest.fixture
def moved(github: FakeGitHub) -> FakeGitHub:
    """``/moved`` (no route of the integration's: an unmapped read) redirects to a repository
    only dana may read."""
    github.add_repo("acme/secret", {"dana": "read"})
    github.add("GET", "/moved", lambda r: Reply(302, None, {"Location": "/repos/acme/secret"}))
    return github


def _arrived(github: FakeGitHub) -> list[str]:
    return [r.path for r in github.requests if r.path in ("/moved", "/repos/acme/secret")]


@pytest.mark.parametrize("client", REDIRECTED.values(), ids=REDIRECTED.keys())
def test_each_redirect_hop_is_checked(
    kit: Toolkit, moved: FakeGitHub, client: Callable[[str], int]
) -> None:
    @kit.tool()
    def follow() -> int:
        return client(f"{moved.api_url}/moved")

    with Session("rory@example.com").active(), pytest.raises(ActionRefused) as info:
        follow()
    assert "repo:acme/secret" in info.value.message
    assert _arrived(moved) == ["/moved"]  # the first hop went; the second never left
    with Session("dana@example.com").active():
        assert follow() == 200
    assert _arrived(moved) == ["/moved", "/moved", "/repos/acme/secret"]


async def test_each_aiohttp_redirect_hop_is_checked(kit: Toolkit, moved: FakeGitHub) -> None:
    @kit.tool()
    async def follow() -> int:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{moved.api_url}/moved", headers=HEADERS) as response,
        ):
            return response.status

    async with Session("rory@example.com").active():
        with pytest.raises(ActionRefused):
            await follow()
    assert _arrived(moved) == ["/moved"]
    async with Session("dana@example.com").active():
        assert await follow() == 200
    assert _arrived(moved) == ["/moved", "/moved", "/repos/acme/secret"]


# --- a request sent from inside another's body stream is checked on its own -----------------


def test_a_request_from_inside_a_body_stream_is_checked(
    kit: Toolkit, github: FakeGitHub, events: list[Any]
) -> None:
    """While urllib3 sends a checked request, a request the body's generator sends on
    another connection is not taken for the checked one."""

    def body() -> Iterator[bytes]:
        yield DATA[:10]
        yield DATA[10:]

    @kit.tool()
    def open_pr() -> int:
        with urllib3.PoolManager() as manager:
            url = f"{github.api_url}/repos/acme/widgets"
            return manager.request("GET", url, body=body(), headers=HEADERS).status

    with Session("rory@example.com").active():
        assert open_pr() == 200
    assert [a["action"] for a in events[-1].actions] == ["repo.read"]

    def sneaky() -> Iterator[bytes]:
        yield by_hand(github.port).to_bytes(2, "big")

    @kit.tool()
    def smuggle() -> int:
        with urllib3.PoolManager() as manager:
            url = f"{github.api_url}/repos/acme/widgets"
            return manager.request("GET", url, body=sneaky(), headers=HEADERS).status

    with Session("rory@example.com").active(), pytest.raises(ActionRefused):
        smuggle()
    assert posted(github) == []
