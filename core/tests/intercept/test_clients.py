"""Every hooked client library, for real, against the fake GitHub on 127.0.0.1.

A user who may open pull requests gets one; a user who may not is refused inside the client
library, and the fake's request log proves the refused request never arrived.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from typing import Any

import aiohttp
import httpx
import pytest
import requests
from fakes.github import FakeGitHub
from github import Auth, Github
from toolpass import Session, Toolkit, ToolRefused
from toolpass.intercept import ActionRefused

from .conftest import TOKEN, posted

HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
BODY = {"title": "fix", "head": "fix", "base": "main"}


def with_urllib(base: str) -> int:
    req = urllib.request.Request(
        f"{base}/repos/acme/widgets/pulls",
        data=json.dumps(BODY).encode(),
        headers=HEADERS,
        method="POST",
    )
    with urllib.request.urlopen(req) as resp:
        return int(json.load(resp)["number"])


def with_requests(base: str) -> int:
    return int(
        requests.post(
            f"{base}/repos/acme/widgets/pulls", json=BODY, headers=HEADERS, timeout=5
        ).json()["number"]
    )


def with_httpx(base: str) -> int:
    with httpx.Client() as client:
        r = client.post(f"{base}/repos/acme/widgets/pulls", json=BODY, headers=HEADERS)
        return int(r.json()["number"])


def with_pygithub(base: str) -> int:
    gh = Github(base_url=base, auth=Auth.Token(TOKEN), retry=None)
    return int(
        gh.get_repo("acme/widgets")
        .create_pull(title="fix", body="", head="fix", base="main")
        .number
    )


async def with_httpx_async(base: str) -> int:
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{base}/repos/acme/widgets/pulls", json=BODY, headers=HEADERS)
        return int(r.json()["number"])


async def with_aiohttp(base: str) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{base}/repos/acme/widgets/pulls", json=BODY, headers=HEADERS) as resp,
    ):
        return int((await resp.json())["number"])


SYNC = {
    "urllib": with_urllib,
    "requests": with_requests,
    "httpx": with_httpx,
    "pygithub": with_pygithub,
}
ASYNC = {"httpx-async": with_httpx_async, "aiohttp": with_aiohttp}


def declare(kit: Toolkit, client: Callable[[str], Any], base: str) -> Any:
    @kit.tool()
    def open_pr() -> str:
        return f"opened #{client(base)}"

    return open_pr


@pytest.mark.parametrize("client", SYNC.values(), ids=SYNC.keys())
def test_allowed_request_is_sent(
    kit: Toolkit, github: FakeGitHub, events: list[Any], client: Callable[[str], int]
) -> None:
    open_pr = declare(kit, client, github.api_url)
    with Session("dana@example.com").active():
        assert open_pr() == "opened #1"
    assert posted(github) == ["/repos/acme/widgets/pulls"]
    [action] = [a for a in events[-1].actions if a.get("action") == "pr.create"]
    assert action["verdict"] == "allowed"
    assert action["as"] == "user"
    assert action["resource"] == "repo:acme/widgets"


@pytest.mark.parametrize("client", SYNC.values(), ids=SYNC.keys())
def test_refused_request_never_leaves(
    kit: Toolkit, github: FakeGitHub, events: list[Any], client: Callable[[str], int]
) -> None:
    open_pr = declare(kit, client, github.api_url)
    with Session("rory@example.com").active(), pytest.raises(ActionRefused) as info:
        open_pr()
    assert info.value.code == "not_authorized"
    assert "pr.create on repo:acme/widgets" in info.value.message
    assert posted(github) == []
    assert events[-1].code == "not_authorized"
    assert events[-1].actions[-1]["verdict"] == "not_authorized"


@pytest.mark.parametrize("client", ASYNC.values(), ids=ASYNC.keys())
async def test_async_clients(
    kit: Toolkit, github: FakeGitHub, events: list[Any], client: Callable[[str], Any]
) -> None:
    @kit.tool()
    async def open_pr() -> str:
        return f"opened #{await client(github.api_url)}"

    async with Session("dana@example.com").active():
        assert await open_pr() == "opened #1"
    async with Session("rory@example.com").active():
        with pytest.raises(ActionRefused) as info:
            await open_pr()
    assert info.value.code == "not_authorized"
    assert posted(github) == ["/repos/acme/widgets/pulls"]


def test_a_body_that_swallows_the_refusal_is_still_refused(
    kit: Toolkit, github: FakeGitHub
) -> None:
    @kit.tool()
    def sneaky() -> str:
        try:
            with_requests(github.api_url)
        except ActionRefused:
            return "it worked, trust me"
        return "opened"

    with Session("rory@example.com").active(), pytest.raises(ToolRefused) as info:
        sneaky()
    assert info.value.code == "not_authorized"
    assert posted(github) == []


def test_engine_look_ups_are_not_hooked(
    kit: Toolkit, github: FakeGitHub, events: list[Any]
) -> None:
    open_pr = declare(kit, with_requests, github.api_url)
    with Session("dana@example.com").active():
        open_pr()
    assert any("/collaborators/dana/permission" in r.path for r in github.requests)
    paths = [a["path"] for a in events[-1].actions]
    assert paths == ["/repos/acme/widgets/pulls"]  # the engine's own look-up is not an action


def test_layers_check_once(kit: Toolkit, github: FakeGitHub, events: list[Any]) -> None:
    """requests → urllib3 → http.client: one request, one action."""
    open_pr = declare(kit, with_requests, github.api_url)
    with Session("dana@example.com").active():
        open_pr()
    assert len(events[-1].actions) == 1


def test_httpx_custom_transports_are_checked(kit: Toolkit, github: FakeGitHub) -> None:
    """The hook sits above the transport: a transport of the tool's own is checked too."""
    handled: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        handled.append(request.url.path)
        return httpx.Response(201, json={"number": 9})

    @kit.tool()
    def open_pr() -> int:
        with httpx.Client(transport=httpx.MockTransport(handler)) as client:
            url = f"{github.api_url}/repos/acme/widgets/pulls"
            return int(client.post(url, json=BODY).json()["number"])

    with Session("dana@example.com").active():
        assert open_pr() == 9
    with Session("rory@example.com").active(), pytest.raises(ActionRefused):
        open_pr()
    assert handled == ["/repos/acme/widgets/pulls"]  # only dana's request reached it


def test_http_client_used_directly(kit: Toolkit, github: FakeGitHub) -> None:
    import http.client

    @kit.tool()
    def open_pr() -> int:
        conn = http.client.HTTPConnection("127.0.0.1", github.port, timeout=5)
        try:
            conn.request("POST", "/repos/acme/widgets/pulls", json.dumps(BODY), HEADERS)
            return conn.getresponse().status
        finally:
            conn.close()

    with Session("rory@example.com").active(), pytest.raises(ActionRefused):
        open_pr()
    assert posted(github) == []
    with Session("dana@example.com").active():
        assert open_pr() == 201
    assert posted(github) == ["/repos/acme/widgets/pulls"]
