"""A request target is read the one way a server or proxy reads it: the scheme of an
absolute-form target in any case, and a target that cannot be read one way only is refused,
never taken for a request to an unknown host. Through http.client, urllib3 and httpcore."""

from __future__ import annotations

import http.client
from collections.abc import Callable, Iterator
from typing import Any

import httpcore
import pytest
import urllib3
from fakes.github import FakeGitHub
from fakes.proxy import FakeProxy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolpass import ActionRefused, Session, Toolkit, ToolRefused

from .conftest import TOKEN

HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def proxy() -> Iterator[FakeProxy]:
    with FakeProxy() as running:
        yield running


def _port(url: str) -> int:
    return int(url.rpartition(":")[2])


def via_http_client(proxy: str, target: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", _port(proxy), timeout=5)
    conn.request("GET", target, headers=HEADERS)
    return conn.getresponse().status


def via_urllib3(proxy: str, target: str) -> int:
    conn = urllib3.connection.HTTPConnection("127.0.0.1", _port(proxy), timeout=5)
    conn.request("GET", target, headers=HEADERS)
    return int(conn.getresponse().status)


def via_httpcore(proxy: str, target: str) -> int:
    url = httpcore.URL(scheme=b"http", host=b"127.0.0.1", port=_port(proxy), target=target.encode())
    with httpcore.ConnectionPool() as pool:
        return int(pool.request("GET", url, headers=HEADERS).status)


CLIENTS: dict[str, Callable[[str, str], int]] = {
    "http.client": via_http_client,
    "urllib3": via_urllib3,
    "httpcore": via_httpcore,
}


def secret_url(github: FakeGitHub, scheme: str) -> str:
    return f"{scheme}://127.0.0.1:{_port(github.api_url)}/repos/acme/secret"


@pytest.mark.parametrize("client", CLIENTS.values(), ids=CLIENTS.keys())
@pytest.mark.parametrize("scheme", ["HTTP", "Http", "hTtP"])
def test_an_absolute_target_is_checked_whatever_the_case_of_its_scheme(
    kit: Toolkit,
    github: FakeGitHub,
    proxy: FakeProxy,
    events: list[Any],
    client: Callable[[str, str], int],
    scheme: str,
) -> None:
    github.add_repo("acme/secret", {"dana": "admin"})

    @kit.tool()
    def peek() -> int:
        return client(proxy.url, secret_url(github, scheme))

    with Session("rory@example.com").active(), pytest.raises(ActionRefused) as info:
        peek()
    assert info.value.code == "not_authorized"
    assert proxy.seen == []
    assert events[-1].actions[-1]["connection"] == "github"


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    target=st.one_of(
        st.from_regex(r"[a-z0-9._~-]{1,12}(/[a-z0-9._~-]{0,8}){0,3}", fullmatch=True),
        st.sampled_from(["*", "repos/acme/widgets", "example.com:443", "h:80x/repos"]),
    )
)
def test_a_target_that_cannot_be_read_is_refused_not_let_go(
    kit: Toolkit, github: FakeGitHub, target: str
) -> None:
    before = len(github.requests)

    @kit.tool()
    def tidy() -> int:
        conn = http.client.HTTPConnection("127.0.0.1", _port(github.api_url), timeout=5)
        conn.request("DELETE", target, headers=HEADERS)
        return conn.getresponse().status

    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        tidy()
    assert info.value.code == "check_error"
    assert "cannot read unambiguously" in info.value.message
    assert len(github.requests) == before


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{port}\\@elsewhere.example/repos/acme/widgets",
        "http://a@b@127.0.0.1:{port}/repos/acme/widgets",
        "http://127.0.0.1:{port}x/repos/acme/widgets",
        "http:///repos/acme/widgets",
    ],
)
def test_an_absolute_target_read_two_ways_is_refused(
    kit: Toolkit, github: FakeGitHub, proxy: FakeProxy, target: str
) -> None:
    @kit.tool()
    def tidy() -> int:
        conn = http.client.HTTPConnection("127.0.0.1", _port(proxy.url), timeout=5)
        conn.request("DELETE", target.format(port=_port(github.api_url)), headers=HEADERS)
        return conn.getresponse().status

    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        tidy()
    assert info.value.code == "check_error"
    assert proxy.seen == []
