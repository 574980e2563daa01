"""WebSocket handshakes are checked as a ``GET`` to the http(s) URL, with their headers,
before they leave: websocket-client, websockets (asyncio, threading, legacy), aiohttp's
``ws_connect``, and the kubernetes client's ``stream()`` exec.

The fake GitHub answers ``/repos/{owner}/{repo}/live`` with ``101 Switching Protocols``;
rory may not read acme/secret, dana may; the fake's log proves a refused handshake never
arrived.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import ssl
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import aiohttp
import pytest
import websocket
import websockets.asyncio.client
import websockets.sync.client
from fakes.github import FakeGitHub
from fakes.kubernetes import ENGINE_TOKEN, FakeKubernetes, Rule
from fakes.server import Reply, Request
from kubernetes.client import ApiClient, Configuration, CoreV1Api
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream
from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import literal
from toolpass.integrations.routes import Route
from toolpass.intercept import ActionRefused

from .conftest import TOKEN, USERS, Hub

LIVE = "/repos/acme/secret/live"
FEED = ["GET", "/repos/{owner}/{repo}/live", "repo.read", "repo:{owner}/{repo}", "read"]
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class LiveHub(Hub):
    name = "hub_with_live_feeds"
    routes = (*Hub.routes, Route.row(FEED))


def _switch(request: Request) -> Reply:
    key = request.headers.get("sec-websocket-key", "")
    digest = hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()
    accept = base64.b64encode(digest).decode()
    headers = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": accept}
    return Reply(101, b"", headers)


@pytest.fixture
def live(github: FakeGitHub) -> FakeGitHub:
    github.add_repo("acme/secret", {"dana": "read"})
    github.add("GET", r"/repos/[^/]+/[^/]+/live", _switch)
    return github


@pytest.fixture
def live_kit(live: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> Iterator[Toolkit]:
    monkeypatch.setenv("TOOLPASS_TEST_GITHUB_TOKEN", TOKEN)
    conn = {
        "id": "github",
        "integration": LiveHub,
        "url": live.api_url,
        "token": "env:TOOLPASS_TEST_GITHUB_TOKEN",
        "identity": {"mode": "users", "users": USERS},
    }
    with Toolpass([conn]) as engine:
        yield Toolkit(permissions=engine)
        intercept.uninstall()


def arrived(github: FakeGitHub) -> list[str]:
    return [r.headers.get("upgrade", "") for r in github.seen("GET", LIVE)]


def ws_url(github: FakeGitHub) -> str:
    return f"ws://127.0.0.1:{github.port}{LIVE}"


def with_websocket_client(url: str) -> bool:
    ws = websocket.WebSocket()
    ws.connect(url, header=[f"Authorization: Bearer {TOKEN}"])
    try:
        return bool(ws.connected)
    finally:
        ws.shutdown()


def with_create_connection(url: str) -> bool:
    ws = websocket.create_connection(url, header=AUTH)
    try:
        return bool(ws.connected)
    finally:
        ws.shutdown()


def with_websockets_sync(url: str) -> bool:
    with websockets.sync.client.connect(url, additional_headers=AUTH, close_timeout=0.1) as ws:
        return ws.request is not None


async def with_websockets_asyncio(url: str) -> bool:
    async with websockets.asyncio.client.connect(
        url, additional_headers=AUTH, close_timeout=0.1
    ) as ws:
        return ws.request is not None


async def with_websockets_legacy(url: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        legacy = importlib.import_module("websockets.legacy.client")
        async with legacy.connect(url, extra_headers=AUTH, close_timeout=0.1) as ws:
            return bool(ws.open)


async def with_aiohttp(url: str) -> bool:
    async with aiohttp.ClientSession() as session:
        timeout = aiohttp.ClientWSTimeout(ws_close=0.1)  # the fake speaks no frames
        async with session.ws_connect(url, headers=AUTH, timeout=timeout) as ws:
            return not ws.closed


SYNC: dict[str, Callable[[str], bool]] = {
    "websocket-client": with_websocket_client,
    "websocket-create-connection": with_create_connection,
    "websockets-sync": with_websockets_sync,
}
ASYNC = {
    "websockets-asyncio": with_websockets_asyncio,
    "websockets-legacy": with_websockets_legacy,
    "aiohttp-ws-connect": with_aiohttp,
}


@pytest.mark.parametrize("client", SYNC.values(), ids=SYNC.keys())
def test_sync_handshakes_are_checked(
    live_kit: Toolkit, live: FakeGitHub, client: Callable[[str], bool]
) -> None:
    @live_kit.tool()
    def watch() -> bool:
        return client(ws_url(live))

    with Session("rory@example.com").active(), pytest.raises(ActionRefused) as info:
        watch()
    assert "repo.read on repo:acme/secret" in info.value.message
    assert arrived(live) == []
    with Session("dana@example.com").active():
        assert watch() is True
    assert [u.lower() for u in arrived(live)] == ["websocket"]


@pytest.mark.parametrize("client", ASYNC.values(), ids=ASYNC.keys())
async def test_async_handshakes_are_checked(
    live_kit: Toolkit, live: FakeGitHub, client: Callable[[str], Any]
) -> None:
    @live_kit.tool()
    async def watch() -> bool:
        return bool(await client(ws_url(live)))

    async with Session("rory@example.com").active():
        with pytest.raises(ActionRefused):
            await watch()
    assert arrived(live) == []
    async with Session("dana@example.com").active():
        assert await watch() is True
    assert [u.lower() for u in arrived(live)] == ["websocket"]


def test_a_secure_websocket_url_is_checked_as_https(live_kit: Toolkit, live: FakeGitHub) -> None:
    """wss:// is https://: a host toolpass knows over https only is not taken for http."""

    @live_kit.tool()
    def watch() -> bool:
        return with_websocket_client(f"wss://127.0.0.1:{live.port}{LIVE}")

    # Not github's http origin, so not its route: no refusal, the TLS handshake against the
    # plain-HTTP fake fails before any request.
    with Session("rory@example.com").active(), pytest.raises(ssl.SSLError):
        watch()
    assert arrived(live) == []


# --- the kubernetes client's exec: websocket-client under kubernetes.stream ----------------

DANA, RORY = "dana@example.com", "rory@example.com"
EXEC = "/api/v1/namespaces/payments/pods/web-0/exec"


@pytest.fixture
def k8s() -> Iterator[FakeKubernetes]:
    with FakeKubernetes() as fake:
        fake.engine()
        fake.add_token("agent-token", "system:serviceaccount:agents:tool")
        fake.bind(
            "payments-exec",
            [Rule(["create"], [""], ["pods/exec"])],
            groups=["payments-devs"],
            namespace="payments",
        )
        yield fake


@pytest.fixture
def k8s_kit(k8s: FakeKubernetes) -> Iterator[Toolkit]:
    conn = {
        "id": "k8s",
        "integration": "kubernetes",
        "url": k8s.url,
        "token": literal(ENGINE_TOKEN),
        "groups": {DANA: ["payments-devs"], RORY: []},
    }
    with Toolpass([conn]) as engine:
        yield Toolkit(permissions=engine)
        intercept.uninstall()


def test_kubernetes_exec_is_checked(k8s_kit: Toolkit, k8s: FakeKubernetes) -> None:
    config = Configuration(host=k8s.url)
    config.api_key = {"authorization": "agent-token"}
    config.api_key_prefix = {"authorization": "Bearer"}

    @k8s_kit.tool()
    def run(command: str) -> str:
        with ApiClient(config) as client:
            api = CoreV1Api(client)
            try:
                return str(
                    stream(
                        api.connect_get_namespaced_pod_exec,
                        "web-0",
                        "payments",
                        command=[command],
                        stdout=True,
                        stderr=True,
                        stdin=False,
                        tty=False,
                    )
                )
            except ApiException as e:  # the fake serves no exec: the handshake is answered 404
                return f"answered {e.status}"

    with Session(RORY).active(), pytest.raises(ActionRefused) as info:
        run("ls")
    assert info.value.code == "not_authorized"
    assert k8s.seen("GET", EXEC) == []
    with Session(DANA).active():
        assert "answered" in run("ls")
    [handshake] = k8s.seen("GET", EXEC)
    assert handshake.headers["upgrade"].lower() == "websocket"
    assert handshake.query["command"] == ["ls"]
