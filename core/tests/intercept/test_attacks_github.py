"""Wrong allows found by attacking GitHub's checks (#19), through the request hook: a merge
of a draft, a branch created under a ruleset's ``creation`` rule (REST and Git over HTTP),
and a reference written by its full or a malformed name are refused and never reach GitHub."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from fakes.github import FakeGitHub
from toolpass import Session, Toolkit
from toolpass.intercept import ActionRefused

from .test_github_rules_hook import HEADERS, client, refused, run, seeded, toolkit

SHA = "a" * 40
CREATION = {"id": 11, "branches": ["release"], "rules": [{"type": "creation"}]}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        yield seeded(gh)


@pytest.fixture
def kit(github: FakeGitHub) -> Iterator[Toolkit]:
    yield from toolkit(github)


def test_a_draft_pull_request_is_not_merged(kit: Toolkit, github: FakeGitHub) -> None:
    github.repos["acme/widgets"].branches["main"] = False
    github.repos["acme/widgets"].pulls[0]["draft"] = True

    @kit.tool()
    def merge(number: int) -> bool:
        url = f"{github.api_url}/repos/acme/widgets/pulls/{number}/merge"
        return bool(requests.put(url, json={}, headers=HEADERS, timeout=5).json()["merged"])

    assert "is a draft" in refused("erin", merge, 1).message
    assert github.seen("PUT", ".*/merge") == []


def test_creating_a_branch_a_ruleset_restricts(kit: Toolkit, github: FakeGitHub) -> None:
    """PyGithub's ``create_git_ref`` (``POST .../git/refs``) is placed on the new branch."""
    github.repos["acme/widgets"].rulesets.append(CREATION)

    @kit.tool()
    def branch(name: str) -> str:
        repo = client(github, lazy=True).get_repo("acme/widgets")
        return str(repo.create_git_ref(f"refs/heads/{name}", SHA).ref)

    assert "may create it (ruleset 11)" in refused("dana", branch, "release").message
    assert github.seen("POST", ".*/git/refs") == []


@pytest.mark.parametrize(
    "path", ["refs/heads/feature", "heads//feature", "heads/./feature", "heads/feature/"]
)
def test_a_reference_named_another_way_is_refused(
    kit: Toolkit, github: FakeGitHub, path: str
) -> None:
    """A ref the documented ``heads/<branch>`` does not spell is checked as every branch it
    may name, or refused when git would not accept it as a branch."""
    rules = [{"type": "update"}, {"type": "deletion"}]
    github.repos["acme/widgets"].rulesets.append(
        {"id": 12, "branches": ["feature"], "rules": rules}
    )

    @kit.tool()
    def force(ref: str) -> int:
        url = f"{github.api_url}/repos/acme/widgets/git/refs/{ref}"
        body = {"sha": SHA, "force": True}
        return requests.patch(url, json=body, headers=HEADERS, timeout=5).status_code

    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        force(path)
    assert github.seen("PATCH", ".*/git/refs/.*") == []


def test_a_git_push_creating_a_restricted_branch() -> None:
    """Git over HTTP: a push whose command creates ``release`` is ``branch.create`` on it."""
    with FakeGitHub(prefix="/api/v3") as ghes:
        seeded(ghes).repos["acme/widgets"].rulesets.append(CREATION)
        for kit in toolkit(ghes):

            @kit.tool()
            def push(branch: str) -> int:
                line = f"{'0' * 40} {SHA} refs/heads/{branch}\0report-status"
                body = f"{len(line) + 5:04x}{line}\n".encode() + b"0000PACK"
                url = f"{ghes.url}/acme/widgets.git/git-receive-pack"
                headers = {**HEADERS, "Content-Type": "application/x-git-receive-pack-request"}
                return requests.post(url, data=body, headers=headers, timeout=5).status_code

            assert "may create it" in refused("dana", push, "release").message
            assert ghes.seen("POST", ".*/git-receive-pack") == []
            assert run("dana", push, "topic") == 200


def test_updating_a_restricted_head_branch_is_refused(kit: Toolkit, github: FakeGitHub) -> None:
    """PyGithub's ``PullRequest.update_branch`` writes the head branch (``fix``)."""
    rules = [{"type": "update"}]
    github.repos["acme/widgets"].rulesets.append({"id": 14, "branches": ["fix"], "rules": rules})

    @kit.tool()
    def update(number: int) -> bool:
        url = f"{github.api_url}/repos/acme/widgets/pulls/{number}/update-branch"
        return requests.put(url, json={}, headers=HEADERS, timeout=5).ok

    assert "on the branch fix of acme/widgets" in refused("dana", update, 1).message
    assert github.seen("PUT", ".*/update-branch") == []


@pytest.mark.parametrize("force", [True, "true", 1])
def test_a_forced_ref_update_is_a_force_push(
    kit: Toolkit, github: FakeGitHub, force: object
) -> None:
    """``PATCH .../git/refs/heads/main`` with ``force`` is checked as ``contents.force``:
    the protected branch blocks force pushes, admins included."""
    github.repos["acme/widgets"].protections["main"] = {}

    @kit.tool()
    def force_push(branch: str) -> int:
        url = f"{github.api_url}/repos/acme/widgets/git/refs/heads/{branch}"
        body = {"sha": SHA, "force": force}
        return requests.patch(url, json=body, headers=HEADERS, timeout=5).status_code

    assert "force pushes to it are blocked" in refused("erin", force_push, "main").message
    assert github.seen("PATCH", ".*/git/refs/.*") == []
