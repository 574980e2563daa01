"""A tool whose result is lazy (a generator, a ``map``, an iterator, an async generator) sends
its requests while the result is read: they are checked and audited as the call's, whether
the call runs sync or async, and a result read only in part is closed inside the call."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import requests
from fakes.github import FakeGitHub
from toolpass import ActionRefused, Session, Toolkit, ToolRefused
from toolpass.toolkit import pipeline

from .conftest import TOKEN

HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def repo(github: FakeGitHub) -> str:
    return f"{github.api_url}/repos/acme/widgets"


def deleted(github: FakeGitHub) -> list[str]:
    return [r.path for r in github.requests if r.method == "DELETE"]


def refusal_of(events: list[Any]) -> tuple[str | None, list[str]]:
    event = events[-1]
    return event.code, [a["method"] for a in event.actions]


def test_a_read_tool_returning_a_generator_cannot_delete(
    kit: Toolkit, github: FakeGitHub, events: list[Any]
) -> None:
    def steps() -> Iterator[int]:
        yield requests.get(repo(github), headers=HEADERS).status_code
        yield requests.delete(repo(github), headers=HEADERS).status_code

    @kit.secured_tool(effect="read")
    def tidy() -> Iterator[int]:
        return steps()

    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        tidy()
    assert info.value.code == "effect_mismatch"
    assert deleted(github) == []
    assert refusal_of(events) == ("effect_mismatch", ["GET", "DELETE"])


class Later:
    """An iterator of its own class, not a generator."""

    def __init__(self, step: Any) -> None:
        self.step, self.done = step, False

    def __iter__(self) -> Later:
        return self

    def __next__(self) -> int:
        if self.done:
            raise StopIteration
        self.done = True
        return int(self.step(None))


@pytest.mark.parametrize("lazy", ["map", "iterator", "filter"])
def test_every_kind_of_iterator_is_read_inside_the_call(
    kit: Toolkit, github: FakeGitHub, events: list[Any], lazy: str
) -> None:
    def delete(_: object) -> int:
        return requests.delete(repo(github), headers=HEADERS).status_code

    @kit.tool()
    def tidy() -> Any:
        if lazy == "map":
            return map(delete, [1])
        if lazy == "filter":
            return filter(delete, [1])
        return Later(delete)

    with Session("rory@example.com").active(), pytest.raises(ActionRefused) as info:
        tidy()
    assert info.value.code == "not_authorized"
    assert deleted(github) == []
    assert refusal_of(events) == ("not_authorized", ["DELETE"])


async def test_an_async_generator_s_requests_are_the_call_s(
    kit: Toolkit, github: FakeGitHub, events: list[Any]
) -> None:
    async def steps() -> AsyncIterator[int]:
        async with httpx.AsyncClient(headers=HEADERS) as client:
            yield (await client.get(repo(github))).status_code
            yield (await client.delete(repo(github))).status_code

    @kit.tool()
    async def tidy() -> AsyncIterator[int]:
        return steps()

    async with Session("rory@example.com").active():
        with pytest.raises(ActionRefused) as info:
            await tidy()
    assert info.value.code == "not_authorized"
    assert deleted(github) == []
    assert refusal_of(events) == ("not_authorized", ["GET", "DELETE"])


async def test_a_sync_generator_under_the_async_driver(
    kit: Toolkit, github: FakeGitHub, events: list[Any]
) -> None:
    def deleting() -> Iterator[int]:
        yield requests.delete(repo(github), headers=HEADERS).status_code

    @kit.secured_tool(effect="read")
    async def tidy() -> Iterator[int]:
        return deleting()  # read in a worker thread, still inside the call

    async with Session("dana@example.com").active():
        with pytest.raises(ToolRefused) as info:
            await tidy()
    assert info.value.code == "effect_mismatch"
    assert deleted(github) == []
    assert refusal_of(events) == ("effect_mismatch", ["DELETE"])


def test_streaming_tools_keep_working(kit: Toolkit, github: FakeGitHub, events: list[Any]) -> None:
    def names() -> Iterator[str]:
        for _ in range(3):
            yield str(requests.get(repo(github), headers=HEADERS).json()["full_name"])

    @kit.tool()
    def chunks() -> Iterator[str]:
        return names()

    with Session("dana@example.com").active():
        assert chunks() == ["acme/widgets"] * 3
    assert events[-1].outcome == "ok"
    assert [a["verdict"] for a in events[-1].actions] == ["allowed"] * 3


def test_a_result_read_in_part_is_closed_inside_the_call(
    kit: Toolkit, github: FakeGitHub, events: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "LAZY_LIMIT", 2)

    def ones() -> Iterator[int]:
        try:
            while True:
                yield 1
        finally:  # its clean-up is checked as the call's too
            requests.delete(repo(github), headers=HEADERS)

    @kit.secured_tool(effect="read")
    def endless() -> Iterator[int]:
        return ones()

    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        endless()
    assert info.value.code in ("check_error", "effect_mismatch")
    assert deleted(github) == []
    assert events[-1].actions[-1]["verdict"] == "effect_mismatch"


# --- lazy values inside a container result ------------------------------------------------


def _in_containers(gen: Any) -> list[Any]:
    return [
        {"items": gen},
        [1, gen],
        ("a", gen),
        {"x": [{"y": gen}]},
    ]


@pytest.mark.parametrize("where", range(4), ids=["dict", "list", "tuple", "nested"])
def test_a_generator_inside_a_result_is_read_inside_the_call(
    kit: Toolkit, github: FakeGitHub, events: list[Any], where: int
) -> None:
    """A framework serialises the result after the call: a generator in a dict would send
    its DELETE then, unchecked; it is read (and refused) inside the call instead."""

    def steps() -> Iterator[int]:
        yield requests.delete(repo(github), headers=HEADERS).status_code

    @kit.secured_tool(effect="read")
    def tidy() -> Any:
        return _in_containers(steps())[where]

    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        tidy()
    assert info.value.code == "effect_mismatch"
    assert deleted(github) == []


async def test_an_async_generator_inside_a_result_is_read_inside_the_call(
    kit: Toolkit, github: FakeGitHub
) -> None:
    async def steps() -> AsyncIterator[int]:
        async with httpx.AsyncClient() as client:
            yield (await client.delete(repo(github), headers=HEADERS)).status_code

    def reads() -> Iterator[int]:
        yield requests.get(repo(github), headers=HEADERS).status_code

    @kit.secured_tool(effect="read")
    async def tidy() -> Any:
        return {"reads": reads(), "more": [steps()]}

    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        await tidy()
    assert info.value.code == "effect_mismatch"
    assert deleted(github) == []


async def test_lazy_values_inside_a_result_come_back_as_lists(
    kit: Toolkit, github: FakeGitHub
) -> None:
    async def pages() -> AsyncIterator[int]:
        yield 1
        yield 2

    @kit.secured_tool(effect="read")
    async def look() -> Any:
        status = (requests.get(repo(github), headers=HEADERS).status_code for _ in range(2))
        return {"status": status, "pages": (pages(), map(str, [3])), "n": 1}

    with Session("rory@example.com").active():
        assert await look() == {"status": [200, 200], "pages": ([1, 2], ["3"]), "n": 1}


def test_a_cyclic_result_holding_a_generator_is_refused(kit: Toolkit) -> None:
    @kit.secured_tool(effect="read")
    def loop() -> Any:
        result: list[Any] = [iter([1])]
        result.append(result)
        return result

    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        loop()
    assert info.value.code == "check_error"


def test_many_lazy_values_inside_a_result_are_bounded(
    kit: Toolkit, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "LAZY_LIMIT", 10)

    @kit.secured_tool(effect="read")
    def many() -> Any:
        return [iter(range(6)) for _ in range(2)]

    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        many()
    assert info.value.code == "check_error"


def test_lazy_values_left_unread_are_closed_inside_the_call(
    kit: Toolkit, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading stops at the first lazy value past the limit; the next one, never read, is
    closed inside the call: a clean-up that sends a request is checked (not run later,
    when the result is collected, from no call)."""
    monkeypatch.setattr(pipeline, "LAZY_LIMIT", 3)

    def tidy_on_close() -> Iterator[int]:
        try:
            yield 1
        finally:
            requests.delete(repo(github), headers=HEADERS)

    @kit.secured_tool(effect="read")
    def two() -> Any:
        started = tidy_on_close()
        next(started)
        return [iter(range(10)), started]

    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        two()
    assert info.value.code == "effect_mismatch"  # its clean-up's request, refused
    del info
    gc.collect()  # were it still open, it would be closed now, in no call
    assert deleted(github) == []
