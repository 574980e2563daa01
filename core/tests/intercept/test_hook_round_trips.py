"""With a shared store, the hook reads what the session has seen once per request (one round
trip), whatever the checks of that request look at."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from fakes.github import FakeGitHub
from store.conftest import free_port, redis_process
from store.test_redis_round_trips import round_trips
from toolpass import Toolkit, Toolpass, ToolRefused, intercept
from toolpass.toolkit import provenance

from .conftest import TOKEN

HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    process = redis_process(tmp_path, port)
    yield f"redis://127.0.0.1:{port}/0"
    process.terminate()
    process.wait(10)


@pytest.fixture
def shared(engine: Toolpass, url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Toolkit]:
    # Once any tool in this process declares a destination, every output's values are recorded
    # (a write of its own): whether an earlier test in this worker did must not count here.
    monkeypatch.setattr(provenance.wanted, "now", False)
    events: list[Any] = []
    yield Toolkit(permissions=engine, audit=[events.append], store=url)
    intercept.uninstall()


def test_a_request_that_sends_out_reads_the_session_once(
    shared: Toolkit, github: FakeGitHub, url: str
) -> None:
    @shared.tool()
    def quiet() -> str:
        return "nothing sent"

    @shared.tool()
    def open_issue() -> int:
        issue = {"title": "widgets are slow"}
        return requests.post(
            f"{github.api_url}/repos/acme/widgets/issues", json=issue, headers=HEADERS, timeout=5
        ).status_code

    with shared.conversations.get("c1", "dana@example.com").active():
        quiet(), open_issue()  # connections made, scripts loaded
        alone = round_trips(url, quiet)
        sending = round_trips(url, open_issue)
    # The route sends out: untrusted text, private data and taint are all looked at.
    assert len(sending) - len(alone) == 1, (alone, sending)


def test_a_refused_send_after_private_and_untrusted_reads_reads_the_session_once(
    shared: Toolkit, github: FakeGitHub, url: str
) -> None:
    @shared.tool()
    def read_readme() -> str:
        path = f"{github.api_url}/repos/acme/widgets/contents/README.md"
        return requests.get(path, headers=HEADERS, timeout=5).text

    @shared.secured_tool(effect="read", reads_private=True)
    def customers() -> str:
        return "the customer list"

    @shared.secured_tool(effect="read")
    def quiet() -> str:
        return "nothing sent"

    @shared.tool()
    def open_issue() -> int:
        issue = {"title": "widgets are slow"}
        return requests.post(
            f"{github.api_url}/repos/acme/widgets/issues", json=issue, headers=HEADERS, timeout=5
        ).status_code

    # The issue's URL repeats six words of the page's links (host, port, repos, acme, ...):
    # the untrusted-input check is turned off so that the data-flow checks are reached.
    shared.configure(untrusted_inputs="ignore")
    with shared.conversations.get("c2", "dana@example.com").active():
        read_readme(), customers(), quiet()
        alone = round_trips(url, quiet)

        def refused() -> None:
            with pytest.raises(ToolRefused) as info:
                open_issue()
            assert info.value.code == "exfiltration"

        sending = round_trips(url, refused)
    # Untrusted text, private data, its sources and taint were all looked at, in one read.
    assert len(sending) - len(alone) == 1, (alone, sending)
