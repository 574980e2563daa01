"""``permission_check`` end to end: a secured tool asks the real engine, which asks GitHub."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes.github import FakeGitHub
from toolpass import Session, Toolkit, Toolpass, ToolRefused, permission_check

from .conftest import ENGINE_TOKEN


@pytest.fixture
def engine(github: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> Iterator[Toolpass]:
    monkeypatch.setenv("GITHUB_TOKEN", ENGINE_TOKEN)
    users = {"dana@example.com": "dana", "rory@example.com": "rory"}
    conn = {
        "id": "github",
        "integration": "github",
        "url": github.api_url,
        "token": "env:GITHUB_TOKEN",
        "identity": {"mode": "users", "users": users},
    }
    with Toolpass([conn]) as tp:
        yield tp


def open_pr_tool(engine: Toolpass, events: list[object], connection: str = "github") -> tuple:
    kit = Toolkit(audit=[events.append])
    opened: list[str] = []

    @kit.secured_tool(authorize=permission_check(engine, connection, "pr.create", "repo:{repo}"))
    def open_pr(repo: str, title: str) -> str:
        opened.append(repo)
        return f"opened a pull request on {repo}"

    return open_pr, opened


def test_a_writer_may_open_a_pull_request(engine: Toolpass) -> None:
    events: list[object] = []
    open_pr, opened = open_pr_tool(engine, events)
    with Session("dana@example.com").active():
        assert open_pr("acme/widgets", "fix") == "opened a pull request on acme/widgets"
    assert opened == ["acme/widgets"]


def test_a_reader_is_refused_before_the_body(engine: Toolpass, github: FakeGitHub) -> None:
    events: list[object] = []
    open_pr, opened = open_pr_tool(engine, events)
    with Session("rory@example.com").active(), pytest.raises(ToolRefused) as info:
        open_pr("acme/widgets", "fix")
    assert info.value.code == "not_authorized"
    assert opened == []
    assert any("/collaborators/rory/permission" in r.path for r in github.requests)


def test_a_failed_look_up_is_an_authorization_error(engine: Toolpass, github: FakeGitHub) -> None:
    github.fail(503)
    events: list[object] = []
    open_pr, opened = open_pr_tool(engine, events)
    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        open_pr("acme/widgets", "fix")
    assert info.value.code == "authorization_error"
    assert opened == []


def test_an_unknown_connection_is_not_configured(engine: Toolpass) -> None:
    events: list[object] = []
    open_pr, opened = open_pr_tool(engine, events, connection="gitlab")
    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        open_pr("acme/widgets", "fix")
    assert info.value.code == "not_configured"
    assert opened == []


async def test_async_tools_ask_the_engine_without_blocking(engine: Toolpass) -> None:
    kit = Toolkit(audit=[])

    @kit.secured_tool(authorize=permission_check(engine, "github", "pr.create", "repo:{repo}"))
    async def open_pr(repo: str) -> str:
        return repo

    async with Session("dana@example.com").active():
        assert await open_pr("acme/widgets") == "acme/widgets"
    async with Session("rory@example.com").active():
        with pytest.raises(ToolRefused) as info:
            await open_pr("acme/widgets")
    assert info.value.code == "not_authorized"


def test_a_user_who_maps_to_no_one_is_not_configured_not_try_later(
    engine: Toolpass, github: FakeGitHub
) -> None:
    decision = engine.check("zed@example.com", "github", "pr.create", "repo:acme/widgets")
    assert (decision.decision, decision.cause) == ("unknown", "identity")
    open_pr, opened = open_pr_tool(engine, [])
    with Session("zed@example.com").active(), pytest.raises(ToolRefused) as info:
        open_pr("acme/widgets", "fix")
    assert info.value.code == "not_configured"
    assert "map their account" in info.value.message
    assert "later" not in info.value.message
    assert opened == []


def test_a_resource_the_action_does_not_take_is_invalid_not_try_later(
    engine: Toolpass, github: FakeGitHub
) -> None:
    decision = engine.check("dana@example.com", "github", "pr.create", "team:acme/x")
    assert (decision.decision, decision.cause) == ("unknown", "resource")
    kit = Toolkit(audit=[])

    @kit.secured_tool(authorize=permission_check(engine, "github", "pr.create", "{target}"))
    def open_pr(target: str) -> str:
        return "opened"

    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as info:
        open_pr("team:acme-x")
    assert info.value.code == "invalid_arguments"
    assert "later" not in info.value.message
