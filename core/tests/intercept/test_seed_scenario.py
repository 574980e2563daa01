"""The seed scenario with the real GitHub integration and its generated route table, and
PyGithub as the tool's client: a tool that declares nothing reads a file as the agent, then
opens a pull request as the user."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.github import FakeGitHub
from github import Auth, Github
from toolpass import Session, Toolkit, Toolpass, ToolRefused, intercept
from toolpass.intercept import as_user

from .conftest import TOKEN, USERS, posted


@pytest.fixture
def real_engine(github: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> Iterator[Toolpass]:
    monkeypatch.setenv("TOOLPASS_TEST_GITHUB_TOKEN", TOKEN)
    conn = {
        "id": "github",
        "integration": "github",
        "url": github.api_url,
        "token": "env:TOOLPASS_TEST_GITHUB_TOKEN",
        "identity": {"mode": "users", "users": USERS},
    }
    with Toolpass([conn]) as tp:
        yield tp
    intercept.uninstall()


def propose_fix_tool(kit: Toolkit, api: str) -> Any:
    @kit.tool()
    def propose_fix(repo: str, path: str, fix: str) -> str:
        r = Github(base_url=api, auth=Auth.Token(TOKEN), retry=None).get_repo(repo)
        current = r.get_contents(path)  # the agent reads on its own authority
        with as_user():  # checked against the user
            pr = r.create_pull(title=fix, body=current.path, head="fix", base="main")
        return f"opened #{pr.number}"

    return propose_fix


def test_the_seed_scenario(real_engine: Toolpass, github: FakeGitHub) -> None:
    events: list[Any] = []
    kit = Toolkit(permissions=real_engine, act_as="agent", audit=[events.append])
    propose_fix = propose_fix_tool(kit, github.api_url)
    with Session("rory@example.com").active(), pytest.raises(ToolRefused) as info:
        propose_fix("acme/widgets", "README.md", "Fix the title")
    assert info.value.code == "not_authorized"
    assert "pr.create on repo:acme/widgets" in info.value.message
    sent = [(r.method, r.path) for r in github.requests]
    assert ("GET", "/repos/acme/widgets/contents/README.md") in sent
    assert posted(github) == []  # the refused request never left the process
    verdicts = [(a.get("action"), a["as"], a["verdict"]) for a in events[-1].actions]
    assert ("contents.read", "agent", "allowed") in verdicts
    assert verdicts[-1] == ("pr.create", "user", "not_authorized")
    assert events[-1].code == "not_authorized"

    with Session("dana@example.com").active():
        result = propose_fix("acme/widgets", "README.md", "Fix the title")
    # The body read a file others wrote, so what it returns reaches the model fenced.
    assert result.startswith("<untrusted-content")
    assert "\nopened #1\n" in result
    assert posted(github) == ["/repos/acme/widgets/pulls"]
