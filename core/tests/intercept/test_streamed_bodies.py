"""Streamed bodies (files, generators, async iterables, aiohttp payloads) are read for the
check and then sent exactly as given: the fake's request log holds the same bytes.

That the check read them: a streamed issue whose text carries a token is refused as
exfiltration and never arrives. Past ``BODY_LIMIT`` the body is not read for the check, and
the bytes sent are still the ones given.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import httpx
import pytest
import requests
import urllib3
from fakes.github import FakeGitHub
from toolpass import Session, Toolkit
from toolpass.intercept import ActionRefused
from toolpass.intercept import check as hook

from .conftest import TOKEN

HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
PR = json.dumps({"title": "fix", "head": "fix", "base": "main"}).encode()
SECRET = "ghp_8fK2mQ9xZ4vB7nT1wR6yL3pD5sH0jC2aE9uG"  # a token as GitHub mints them
LEAK = json.dumps({"title": "notes", "body": f"the token is {SECRET}"}).encode()
BIG = json.dumps({"title": "fix", "head": "fix", "base": "main", "pad": "x" * 500}).encode()

# A body is given as a file or a generator, to each client as it takes one.


def pieces(data: bytes) -> Iterator[bytes]:
    yield from (data[i : i + 7] for i in range(0, len(data), 7))


async def apieces(data: bytes) -> AsyncIterator[bytes]:
    for piece in pieces(data):
        yield piece


def with_requests(url: str, body: Any) -> int:
    return requests.post(url, data=body, headers=HEADERS, timeout=5).status_code


def with_urllib3(url: str, body: Any) -> int:
    with urllib3.PoolManager() as manager:
        return manager.request("POST", url, body=body, headers=HEADERS).status


def with_httpx(url: str, body: Any) -> int:
    with httpx.Client() as client:
        return client.post(url, content=body, headers=HEADERS).status_code


async def with_httpx_async(url: str, body: Any) -> int:
    async with httpx.AsyncClient() as client:
        return (await client.post(url, content=body, headers=HEADERS)).status_code


async def with_aiohttp(url: str, body: Any) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=HEADERS) as response,
    ):
        return response.status


_opened: list[Any] = []


@pytest.fixture(autouse=True)
def _close_files() -> Iterator[None]:
    yield
    while _opened:
        _opened.pop().close()


def a_file(tmp_path: Path, data: bytes) -> Any:
    path = tmp_path / "body.json"
    path.write_bytes(data)
    _opened.append(path.open("rb"))
    return _opened[-1]


async def an_async_file(tmp_path: Path, data: bytes) -> Any:
    path = tmp_path / "body.json"
    path.write_bytes(data)
    file = await anyio.open_file(path, "rb")
    _opened.append(file.wrapped)
    return file


Make = Callable[[Path, bytes], Any]
SYNC: dict[str, tuple[Callable[[str, Any], int], Make]] = {
    "requests-file": (with_requests, a_file),
    "requests-generator": (with_requests, lambda _, data: pieces(data)),
    "urllib3-file": (with_urllib3, a_file),
    "urllib3-generator": (with_urllib3, lambda _, data: pieces(data)),
    "httpx-file": (with_httpx, a_file),
    "httpx-generator": (with_httpx, lambda _, data: pieces(data)),
}
ASYNC: dict[str, tuple[Callable[[str, Any], Any], Any]] = {
    "httpx-async-file": (with_httpx_async, an_async_file),
    "httpx-async-generator": (with_httpx_async, lambda _, data: apieces(data)),
    "aiohttp-file": (with_aiohttp, a_file),
    "aiohttp-generator": (with_aiohttp, lambda _, data: apieces(data)),
}


def _form(file: Any) -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("title", "fix")
    form.add_field("body", file, filename="body.json", content_type="application/json")
    return form


def _pulls(github: FakeGitHub) -> list[bytes]:
    return [r.body for r in github.seen("POST", r".*/pulls")]


def _issues(github: FakeGitHub) -> list[bytes]:
    return [r.body for r in github.seen("POST", r".*/issues")]


@pytest.fixture
def issues(github: FakeGitHub) -> FakeGitHub:
    github.add("POST", r"/repos/acme/widgets/issues", lambda r: {"number": 1})
    return github


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(hook, "BODY_LIMIT", 64)
    assert len(BIG) > 64
    return 64


@pytest.mark.parametrize(("client", "make"), SYNC.values(), ids=SYNC.keys())
def test_a_streamed_body_is_sent_as_given(
    kit: Toolkit, github: FakeGitHub, tmp_path: Path, client: Any, make: Make
) -> None:
    @kit.tool()
    def open_pr() -> int:
        return int(client(f"{github.api_url}/repos/acme/widgets/pulls", make(tmp_path, PR)))

    with Session("dana@example.com").active():
        assert open_pr() == 201
    assert _pulls(github) == [PR]


@pytest.mark.parametrize(("client", "make"), SYNC.values(), ids=SYNC.keys())
def test_a_streamed_body_is_checked(
    kit: Toolkit, issues: FakeGitHub, tmp_path: Path, client: Any, make: Make
) -> None:
    @kit.tool()
    def file_issue() -> int:
        return int(client(f"{issues.api_url}/repos/acme/widgets/issues", make(tmp_path, LEAK)))

    with Session("dana@example.com").active(), pytest.raises(ActionRefused) as info:
        file_issue()
    assert info.value.code == "exfiltration"
    assert _issues(issues) == []


@pytest.mark.parametrize(("client", "make"), SYNC.values(), ids=SYNC.keys())
def test_past_the_limit_the_same_bytes_are_sent(
    kit: Toolkit, github: FakeGitHub, tmp_path: Path, client: Any, make: Make, small_limit: int
) -> None:
    @kit.tool()
    def open_pr() -> int:
        return int(client(f"{github.api_url}/repos/acme/widgets/pulls", make(tmp_path, BIG)))

    with Session("dana@example.com").active():
        assert open_pr() == 201
    assert _pulls(github) == [BIG]


@pytest.mark.parametrize(("client", "make"), ASYNC.values(), ids=ASYNC.keys())
async def test_an_async_streamed_body_is_sent_as_given_and_checked(
    kit: Toolkit, issues: FakeGitHub, tmp_path: Path, client: Any, make: Any
) -> None:
    async def body(data: bytes) -> Any:
        made = make(tmp_path, data)
        return await made if hasattr(made, "__await__") else made

    @kit.tool()
    async def post(path: str, data: bytes) -> int:
        return int(await client(f"{issues.api_url}/repos/acme/widgets/{path}", await body(data)))

    async with Session("dana@example.com").active():
        assert await post("pulls", PR) == 201
        with pytest.raises(ActionRefused) as info:
            await post("issues", LEAK)
    assert info.value.code == "exfiltration"
    assert _issues(issues) == []
    assert _pulls(issues) == [PR]


async def test_an_aiohttp_form_with_a_file_is_checked_and_sent_as_given(
    kit: Toolkit, issues: FakeGitHub, tmp_path: Path
) -> None:
    @kit.tool()
    async def file_issue(data: bytes) -> int:
        url = f"{issues.api_url}/repos/acme/widgets/issues"
        return int(await with_aiohttp(url, _form(a_file(tmp_path, data))))

    async with Session("dana@example.com").active():
        with pytest.raises(ActionRefused) as info:
            await file_issue(LEAK)
        assert info.value.code == "exfiltration"
        assert _issues(issues) == []
        assert await file_issue(PR) == 200
    [sent] = _issues(issues)
    assert b"form-data" in sent
    assert PR in sent


@pytest.mark.parametrize(("client", "make"), ASYNC.values(), ids=ASYNC.keys())
async def test_past_the_limit_async_bodies_are_sent_as_given(
    kit: Toolkit, github: FakeGitHub, tmp_path: Path, client: Any, make: Any, small_limit: int
) -> None:
    made = make(tmp_path, BIG)
    body = await made if hasattr(made, "__await__") else made

    @kit.tool()
    async def open_pr() -> int:
        return int(await client(f"{github.api_url}/repos/acme/widgets/pulls", body))

    async with Session("dana@example.com").active():
        assert await open_pr() == 201
    assert _pulls(github) == [BIG]
