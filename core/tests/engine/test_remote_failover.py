"""Several toolpass servers: the client asks the one that answered last, and goes on to the
next only when a server gives no answer (unreachable, dropped, timed out, 502/503/504). An
answer (allow, deny, unknown, a rejected key, any other error status) is final."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from fakes.server import FakeServer, Reply, Request
from hypothesis import given
from hypothesis import strategies as st
from toolpass.engine import ConfigError, RemoteToolpass, Toolpass

ASK = ("dana@example.com", "gh", "pr.merge", "repo:acme/x")


def deciding(fake: FakeServer, verdict: str) -> FakeServer:
    @fake.route("POST", "/check")
    def check(request: Request) -> Reply | dict[str, Any]:
        return {"decision": verdict, "reason": f"{verdict} from {fake.url}", "cached": False}

    return fake


@pytest.fixture
def fakes() -> Iterator[list[FakeServer]]:
    with ExitStack() as stack:
        yield [deciding(stack.enter_context(FakeServer()), v) for v in ("deny", "allow")]


@pytest.fixture
def remote() -> Iterator[Callable[..., RemoteToolpass]]:
    """``remote(urls, **options)``: a client with key k1, closed after the test."""
    made: list[RemoteToolpass] = []

    def make(urls: Any = None, **options: Any) -> RemoteToolpass:
        made.append(Toolpass.remote(urls, "k1", **options))
        return made[-1]

    yield make
    for client in made:
        client.close()


def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens once closed


def test_a_deny_is_final_the_next_server_is_not_asked(
    fakes: list[FakeServer], remote: Callable[..., RemoteToolpass]
) -> None:
    tp = remote([f.url for f in fakes])
    assert tp.check(*ASK).decision == "deny"
    assert len(fakes[0].seen()) == 1
    assert fakes[1].seen() == []


@pytest.mark.parametrize("status", [500, 401, 400])
def test_an_error_answer_is_final(
    fakes: list[FakeServer], remote: Callable[..., RemoteToolpass], status: int
) -> None:
    fakes[0].fail(status)
    tp = remote([f.url for f in fakes])
    assert tp.check(*ASK).decision == "unknown"
    assert fakes[1].seen() == []


@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_server_going_away_passes_the_check_to_the_next(
    fakes: list[FakeServer], remote: Callable[..., RemoteToolpass], status: int
) -> None:
    fakes[0].fail(status)
    tp = remote([f.url for f in fakes])
    assert tp.check(*ASK).decision == "allow"  # the second server's answer
    assert tp.url == fakes[1].url
    assert tp.check(*ASK).decision == "allow"  # asked first now: the one that answered
    assert (len(fakes[0].seen()), len(fakes[1].seen())) == (1, 2)


def test_an_unreachable_server_is_skipped_and_none_answering_is_unknown(
    fakes: list[FakeServer], remote: Callable[..., RemoteToolpass]
) -> None:
    tp = remote([closed_url(), fakes[1].url])
    assert tp.check(*ASK).decision == "allow"
    down = remote([closed_url(), closed_url()])
    decision = down.check(*ASK)
    assert decision.decision == "unknown"
    assert "no server answered" in decision.reason


def test_a_timed_out_server_is_skipped(
    fakes: list[FakeServer], remote: Callable[..., RemoteToolpass]
) -> None:
    fakes[0].slow(2.0)
    tp = remote([f.url for f in fakes], timeout=0.3)
    assert tp.check(*ASK).decision == "allow"


def test_urls_from_the_environment(
    fakes: list[FakeServer], remote: Callable[..., RemoteToolpass], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPASS_URL", f"{closed_url()}, {fakes[1].url}")
    assert remote().check(*ASK).decision == "allow"


@given(st.lists(st.sampled_from(["", " ", "ftp://x", "http://example.com", "x"]), max_size=3))
def test_a_list_with_a_url_that_is_not_allowed_is_refused_whole(urls: list[str]) -> None:
    with pytest.raises(ConfigError, match="toolpass server URL"):
        Toolpass.remote(["https://ok.example.com", *urls] if urls else [], "k1")
