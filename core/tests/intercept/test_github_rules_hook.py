"""GitHub's rules on top of the role (#19), through the request hook: PyGithub's requests
(``requests`` where PyGithub has no method) are placed, checked against the fake GitHub, and
a refused one never reaches it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
from fakes.github import FakeGitHub
from github import Auth, Github
from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import literal
from toolpass.intercept import ActionRefused

TOKEN = "ghp_tool00000000000000000000000000000000"
LOGINS = ("dana", "erin", "rory", "maya")
GHSA = "GHSA-abcd-efgh-ijkl"
HEADERS = {"Authorization": f"token {TOKEN}"}


def seeded(gh: FakeGitHub) -> FakeGitHub:
    repo = gh.add_repo(
        "acme/widgets",
        {"dana": "write", "erin": "admin", "rory": "read", "maya": "maintain"},
        branches={"main": True, "feature": False},
    )
    repo.pulls.append(
        {"id": 1, "number": 1, "title": "Fix", "body": "", "head_ref": "fix", "base_ref": "main"}
    )
    gh.add_org("acme", {"engine-bot": "admin", "erin": "admin", "dana": "member"})
    gh.add_token(TOKEN)
    return gh


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        yield seeded(gh)


def toolkit(gh: FakeGitHub) -> Iterator[Toolkit]:
    conn = {
        "id": "github",
        "integration": "github",
        "url": gh.api_url,
        "token": literal(TOKEN),
        "identity": {"mode": "users", "users": {f"{u}@example.com": u for u in LOGINS}},
    }
    with Toolpass([conn]) as engine:
        yield Toolkit(permissions=engine)
        intercept.uninstall()


@pytest.fixture
def kit(github: FakeGitHub) -> Iterator[Toolkit]:
    yield from toolkit(github)


def client(gh: FakeGitHub, *, lazy: bool = False) -> Github:
    return Github(
        base_url=gh.api_url,
        lazy=lazy,
        auth=Auth.Token(TOKEN),
        retry=None,
        seconds_between_requests=0,
        seconds_between_writes=0,
    )


def renew(kit: Toolkit, login: str, action: str, resource: str) -> None:
    """Ask anew (``fresh=True``), replacing the decision the hook would find cached."""
    engine = kit.permissions
    assert isinstance(engine, Toolpass)
    engine.check(f"{login}@example.com", "github", action, resource, fresh=True)


def refused(login: str, call: Any, *args: Any) -> ActionRefused:
    with Session(f"{login}@example.com").active(), pytest.raises(ActionRefused) as info:
        call(*args)
    assert info.value.code == "not_authorized"
    return info.value


def run(login: str, call: Any, *args: Any) -> Any:
    with Session(f"{login}@example.com").active():
        return call(*args)


def merged(gh: FakeGitHub, number: int) -> bool:
    """A merge as a tool sends it, reading nothing first (a read would taint the call)."""
    url = f"{gh.api_url}/repos/acme/widgets/pulls/{number}/merge"
    return bool(requests.put(url, json={}, headers=HEADERS, timeout=5).json()["merged"])


def test_a_merge_waits_for_the_base_branchs_reviews(kit: Toolkit, github: FakeGitHub) -> None:
    @kit.tool()
    def merge(number: int) -> bool:
        return merged(github, number)

    refusal = refused("dana", merge, 1)
    assert "needs 1 approving reviews" in refusal.message
    assert github.seen("PUT", ".*/merge") == []
    github.repos["acme/widgets"].reviews[1] = [{"user": "maya", "state": "APPROVED"}]
    renew(kit, "dana", "pr.merge", "pr:acme/widgets#1")
    assert run("dana", merge, 1) is True
    assert len(github.seen("PUT", "/repos/acme/widgets/pulls/1/merge")) == 1


def test_rulesets_and_archives_refuse_writes(kit: Toolkit, github: FakeGitHub) -> None:
    repo = github.repos["acme/widgets"]

    @kit.tool()
    def rename(branch: str) -> str:
        repo = client(github, lazy=True).get_repo("acme/widgets")
        return str(repo.rename_branch(branch, "trunk"))

    assert "default branch" in refused("dana", rename, "main").message
    repo.rulesets.append({"id": 7, "branches": ["feature"], "rules": [{"type": "update"}]})

    @kit.tool()
    def merge(number: int) -> bool:
        return merged(github, number)

    repo.archived = True
    assert "archived" in refused("erin", merge, 1).message
    assert github.seen("POST", ".*/rename") == []
    assert github.seen("PUT", ".*/merge") == []


def test_locked_conversations_through_the_hook(kit: Toolkit, github: FakeGitHub) -> None:
    github.repos["acme/widgets"].locked.add(3)

    @kit.tool()
    def comment(number: int) -> int:
        url = f"{github.api_url}/repos/acme/widgets/issues/{number}/comments"
        return int(
            requests.post(url, json={"body": "me too"}, headers=HEADERS, timeout=5).json()["id"]
        )

    assert "is locked" in refused("rory", comment, 3).message
    assert github.seen("POST", ".*/comments") == []
    assert run("dana", comment, 3) > 0
    assert run("rory", comment, 4) > 0


def test_reviewers_advisories_and_org_settings(kit: Toolkit, github: FakeGitHub) -> None:
    repo = github.repos["acme/widgets"]
    repo.pending[42] = [{"environment": "production", "users": ["maya"]}]
    repo.advisories[GHSA] = {"state": "draft", "users": ["rory"]}
    github.org_settings["acme"] = {"members_can_create_repositories": False}
    base = f"{github.api_url}/repos/acme/widgets"

    @kit.tool()
    def approve(run_id: int) -> int:
        body = {"environment_ids": [500], "state": "approved", "comment": "ship"}
        url = f"{base}/actions/runs/{run_id}/pending_deployments"
        return requests.post(url, json=body, headers=HEADERS, timeout=5).status_code

    @kit.tool()
    def read_advisory() -> str:
        return str(client(github).get_repo("acme/widgets").get_repository_advisory(GHSA).state)

    @kit.tool()
    def create_repo(name: str) -> int:
        url = f"{github.api_url}/orgs/acme/repos"
        return requests.post(url, json={"name": name}, headers=HEADERS, timeout=5).status_code

    assert (
        "no required reviewer of the environment production" in refused("dana", approve, 42).message
    )
    assert run("maya", approve, 42) == 200
    assert "advisory" in refused("dana", read_advisory).message
    assert "draft" in run("rory", read_advisory)
    assert "may not create repositories" in refused("dana", create_repo, "gadgets").message
    assert github.seen("POST", "/orgs/acme/repos") == []
    assert run("erin", create_repo, "gadgets") == 201


def test_a_suspended_account_sends_nothing() -> None:
    with FakeGitHub(prefix="/api/v3") as ghes:
        seeded(ghes)
        for kit in toolkit(ghes):

            @kit.tool()
            def open_pull() -> int:
                repo = client(ghes).get_repo("acme/widgets")
                return int(repo.create_pull(title="T", body="", head="fix", base="feature").number)

            assert run("dana", open_pull) == 2
            ghes.suspended["dana"] = "2026-11-30T10:00:00Z"
            kit.permissions.check(
                "dana@example.com", "github", "pr.create", "repo:acme/widgets", fresh=True
            )  # type: ignore[union-attr]
            assert "suspended" in refused("dana", open_pull).message
            assert len(ghes.seen("POST", ".*/pulls")) == 1
