"""Observe mode and the request hook: a request an observed call's checks would refuse is
sent, and audited on the call's event as what would have been refused. The configuration's
``mode:`` observes every tool checked against its connections unless a toolkit says
otherwise. Real clients (requests, httpx) against a fake GitHub on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from fakes.github import FakeGitHub
from toolpass import Session, Toolkit, Toolpass, ToolRefused, intercept

from .conftest import TOKEN, posted

PR = {"title": "fix", "head": "fix", "base": "main"}
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def configured(
    tmp_path: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Toolpass]:
    """The engine of a toolpass.yaml that says ``mode: observe``."""
    monkeypatch.setenv("TOOLPASS_TEST_GITHUB_TOKEN", TOKEN)
    path = tmp_path / "toolpass.yaml"
    path.write_text(
        "mode: observe\n"
        "connections:\n"
        "  - id: github\n"
        "    integration: github\n"
        f"    url: {github.api_url}\n"
        "    token: env:TOOLPASS_TEST_GITHUB_TOKEN\n"
        "    identity:\n"
        "      mode: users\n"
        "      users: {dana@example.com: dana, rory@example.com: rory}\n"
    )
    with Toolpass.from_config(path) as tp:
        yield tp
    intercept.uninstall()


def would(event: Any) -> list[str | None]:
    return [w["code"] for w in event.would_refuse]


def test_a_refused_request_of_an_observed_call_is_sent(
    configured: Toolpass, github: FakeGitHub
) -> None:
    events: list[Any] = []
    kit = Toolkit(permissions=configured, audit=[events.append])  # the configuration's mode

    @kit.tool()
    def open_pr() -> int:
        url = f"{github.api_url}/repos/acme/widgets/pulls"
        return requests.post(url, json=PR, headers=HEADERS, timeout=5).status_code

    with Session("rory@example.com").active():  # rory may only read acme/widgets
        assert open_pr() == 201
        assert open_pr() == 201  # a retry goes too: nothing is remembered as refused
    assert posted(github) == ["/repos/acme/widgets/pulls"] * 2
    event = events[-1]
    assert event.outcome == "ok"
    assert would(event) == ["not_authorized"]
    assert event.actions[-1]["verdict"] == "not_authorized"
    assert event.to_dict()["mode"] == "observe"

    kit.configure(mode="enforce")  # the toolkit's mode wins over the configuration's
    with Session("rory@example.com").active(), pytest.raises(ToolRefused) as info:
        open_pr()
    assert info.value.code == "not_authorized"
    assert len(posted(github)) == 2


def test_an_observed_async_call_sends_what_would_be_refused(
    configured: Toolpass, github: FakeGitHub
) -> None:
    events: list[Any] = []
    kit = Toolkit(permissions=configured, audit=[events.append], mode="observe")

    @kit.tool(resources="repo:acme/other")
    async def open_pr() -> int:
        async with httpx.AsyncClient() as client:
            url = f"{github.api_url}/repos/acme/widgets/pulls"
            return (await client.post(url, json=PR, headers=HEADERS, timeout=5)).status_code

    with Session("rory@example.com").active():
        assert asyncio.run(open_pr()) == 201
    assert posted(github) == ["/repos/acme/widgets/pulls"]
    assert would(events[-1]) == ["out_of_scope"]  # the first of the request's checks to fail
    assert events[-1].outcome == "ok"
