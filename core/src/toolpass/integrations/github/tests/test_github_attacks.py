"""Wrong allows found by attacking GitHub's checks (#19): each is a request GitHub refuses
for a user toolpass allowed, now refused (or unknown) by ``Toolpass.check``.

- a draft or closed pull request merges for nobody, whatever their role;
- a ruleset's ``creation`` rule binds a new branch whose name it matches;
- a branch named fully (``refs/heads/main``) is the branch GitHub writes, and answers to
  that branch's protection and rulesets.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.github import HEAD_SHA, FakeGitHub
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolpass.engine import Toolpass

from .test_github import connection

ANY_FIXTURE = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture
def gh(github: FakeGitHub) -> FakeGitHub:
    repo = github.repos["acme/widgets"]
    repo.branches["main"] = False  # no classic protection: what is tested binds alone
    repo.pulls.append(
        {"id": 1, "number": 1, "title": "Fix", "body": "", "head_ref": "fix", "base_ref": "main"}
    )
    github.add_org("acme", {"engine-bot": "admin", "erin": "admin", "dana": "member"})
    return github


@pytest.fixture
def tp(gh: FakeGitHub, engine_token: str) -> Iterator[Toolpass]:
    with Toolpass([connection(gh)]) as engine:
        yield engine


def ask(tp: Toolpass, login: str, action: str, resource: str) -> Any:
    return tp.check(f"{login}@example.com", "gh", action, resource, fresh=True)


# --- a merge GitHub refuses whatever the role -------------------------------------------
@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"draft": True}, "is a draft"),
        ({"state": "closed"}, "is closed"),
        ({"state": "closed", "merged": True}, "is closed"),
    ],
)
def test_a_draft_or_closed_pull_request_merges_for_nobody(
    tp: Toolpass, gh: FakeGitHub, change: dict[str, Any], said: str
) -> None:
    """GitHub: nobody can merge a draft until it is marked ready for review; a closed pull
    request has nothing to merge. Admins included."""
    assert ask(tp, "erin", "pr.merge", "pr:acme/widgets#1").decision == "allow"
    gh.repos["acme/widgets"].pulls[0].update(change)
    for login in ("erin", "dana"):
        denied = ask(tp, login, "pr.merge", "pr:acme/widgets#1")
        assert denied.decision == "deny"
        assert said in denied.reason


def test_a_pull_request_answer_without_its_state_is_unknown(tp: Toolpass, gh: FakeGitHub) -> None:
    gh.repos["acme/widgets"].pulls[0]["draft"] = "maybe"
    assert ask(tp, "erin", "pr.merge", "pr:acme/widgets#1").decision == "unknown"


# --- rulesets bind the creation of a branch ---------------------------------------------
def test_a_creation_rule_binds_new_branches_it_matches(tp: Toolpass, gh: FakeGitHub) -> None:
    """GitHub: "Restrict creations: only allow users with bypass permission to create
    matching refs"."""
    ruleset = {"id": 11, "branches": ["release"], "rules": [{"type": "creation"}]}
    gh.repos["acme/widgets"].rulesets.append(ruleset)
    for login in ("dana", "erin"):
        denied = ask(tp, login, "branch.create", "ref:acme/widgets@release")
        assert denied.decision == "deny"
        assert "may create it (ruleset 11)" in denied.reason
    assert ask(tp, "dana", "branch.create", "ref:acme/widgets@topic").decision == "allow"
    ruleset["bypass_actors"] = [{"actor_id": 5, "actor_type": "RepositoryRole"}]
    assert ask(tp, "erin", "branch.create", "ref:acme/widgets@release").decision == "allow"
    assert ask(tp, "dana", "branch.create", "ref:acme/widgets@release").decision == "deny"


# --- a branch named fully is the branch ---------------------------------------------------
@ANY_FIXTURE
@given(
    action=st.sampled_from(["contents.write", "contents.delete", "branch.delete"]),
    spelled=st.sampled_from(["refs/heads/feature", "refs/heads/refs/heads/feature"]),
)
def test_a_fully_named_branch_answers_to_its_rules(
    tp: Toolpass, gh: FakeGitHub, action: str, spelled: str
) -> None:
    """``refs/heads/feature`` names the branch ``feature``: its ruleset binds the write;
    toolpass read no rules for a branch of that literal name."""
    repo = gh.repos["acme/widgets"]
    if not repo.rulesets:
        rules = [{"type": "update"}, {"type": "deletion"}]
        repo.rulesets.append({"id": 12, "branches": ["feature"], "rules": rules})
    found = ask(tp, "dana", action, f"ref:acme/widgets@{spelled}")
    assert found.decision == "deny", found.reason
    assert "(ruleset 12)" in found.reason


def test_a_ref_that_is_no_branch_is_unknown(tp: Toolpass) -> None:
    """``refs/tags/v1`` or ``refs/pull/1/head`` is no branch: no branch rules say what binds."""
    for spelled in ("refs/tags/v1", "refs/pull/1/head"):
        assert ask(tp, "dana", "contents.write", f"ref:acme/widgets@{spelled}").decision == (
            "unknown"
        )


def _git_accepts(branch: str) -> bool:
    """git's own verdict on a branch name (``git check-ref-format``)."""
    done = subprocess.run(
        ["git", "check-ref-format", f"refs/heads/{branch}"], capture_output=True, check=False
    )
    return done.returncode == 0


@ANY_FIXTURE
@given(
    st.text(
        alphabet=st.sampled_from(["a", "b", "/", ".", "-", "_", "~", "^", ":", "*", "[", "\\"]),
        min_size=1,
        max_size=12,
    )
)
def test_only_a_name_git_accepts_is_a_branch_toolpass_allows(tp: Toolpass, branch: str) -> None:
    """``heads//main`` or ``./main`` names no branch toolpass can read the rules of (GitHub
    may normalise it onto a protected one): a name git refuses is unknown, never allowed."""
    found = ask(tp, "dana", "contents.write", f"ref:acme/widgets@{branch}")
    if found.decision == "allow":
        assert _git_accepts(branch), branch
    elif branch != "HEAD" and _git_accepts(branch):
        raise AssertionError(f"{branch!r}: {found.reason}")


# --- required status checks bind a merge ---------------------------------------------------
CI = {"strict": False, "contexts": ["ci"], "checks": [{"context": "ci", "app_id": None}]}


def test_a_merge_waits_for_the_required_status_checks(tp: Toolpass, gh: FakeGitHub) -> None:
    """GitHub: a pull request merges into a branch with required status checks only once
    each has passed on its head commit (admins exempt unless enforce_admins)."""
    repo = gh.repos["acme/widgets"]
    repo.branches["main"] = True
    repo.protections["main"] = {"required_status_checks": CI}
    denied = ask(tp, "dana", "pr.merge", "pr:acme/widgets#1")
    assert denied.decision == "deny"
    assert "has not passed its required status checks (ci)" in denied.reason
    assert ask(tp, "erin", "pr.merge", "pr:acme/widgets#1").decision == "allow"
    repo.statuses[HEAD_SHA] = [{"context": "ci", "state": "failure"}]
    assert ask(tp, "dana", "pr.merge", "pr:acme/widgets#1").decision == "deny"
    repo.statuses[HEAD_SHA].append({"context": "ci", "state": "success"})
    assert ask(tp, "dana", "pr.merge", "pr:acme/widgets#1").decision == "allow"


@ANY_FIXTURE
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["lint", "test", "other"]),
            st.sampled_from(["queued", "in_progress", "completed"]),
            st.sampled_from(["success", "failure", "neutral", "skipped", "cancelled", None]),
        ),
        max_size=5,
        unique_by=lambda run: run[0],
    ),
    st.integers(min_value=0, max_value=140),
)
def test_a_ruleset_requires_each_check_run_to_pass(
    tp: Toolpass, gh: FakeGitHub, runs: list[tuple[str, str, Any]], padding: int
) -> None:
    """A ruleset's ``required_status_checks``: each named check run completed as success,
    neutral or skipped, read across every page of the head's check runs."""
    repo = gh.repos["acme/widgets"]
    needed = [{"context": "lint"}, {"context": "test"}]
    rule = {"type": "required_status_checks", "parameters": {"required_status_checks": needed}}
    repo.rulesets = [{"id": 13, "branches": ["main"], "rules": [rule]}]
    filler = [{"name": f"extra-{i}", "conclusion": "failure"} for i in range(padding)]
    listed = [{"name": n, "status": s, "conclusion": c} for n, s, c in runs]
    repo.check_runs[HEAD_SHA] = filler + listed
    ok = {n for n, s, c in runs if s == "completed" and c in ("success", "neutral", "skipped")}
    expected = "allow" if {"lint", "test"} <= ok else "deny"
    assert ask(tp, "erin", "pr.merge", "pr:acme/widgets#1").decision == expected


def test_a_check_required_from_an_app_is_not_met_by_another(tp: Toolpass, gh: FakeGitHub) -> None:
    """A required check that names its app (``app_id``) is met only by that app's run; a
    commit status of the same name, which any writer can post, does not count."""
    repo = gh.repos["acme/widgets"]
    repo.branches["main"] = True
    checks = {**CI, "checks": [{"context": "ci", "app_id": 15368}]}
    repo.protections["main"] = {"required_status_checks": checks}
    repo.statuses[HEAD_SHA] = [{"context": "ci", "state": "success"}]
    repo.check_runs[HEAD_SHA] = [{"name": "ci", "conclusion": "success", "app_id": 999}]
    assert ask(tp, "dana", "pr.merge", "pr:acme/widgets#1").decision == "deny"
    repo.check_runs[HEAD_SHA].append({"name": "ci", "conclusion": "success"})
    assert ask(tp, "dana", "pr.merge", "pr:acme/widgets#1").decision == "allow"


# --- updating a pull request's branch writes its head ------------------------------------
def test_updating_a_pull_requests_branch_answers_to_the_heads_rules(
    tp: Toolpass, gh: FakeGitHub
) -> None:
    """``PUT .../pulls/1/update-branch`` merges the base into the head branch (``fix``): it
    is checked as ``contents.write`` on ``pr:``, bound by the head branch's rules."""
    rules = [{"type": "update"}]
    gh.repos["acme/widgets"].rulesets.append({"id": 14, "branches": ["fix"], "rules": rules})
    denied = ask(tp, "dana", "contents.write", "pr:acme/widgets#1")
    assert denied.decision == "deny"
    assert "on the branch fix of acme/widgets" in denied.reason
    gh.repos["acme/widgets"].rulesets.clear()
    assert ask(tp, "dana", "contents.write", "pr:acme/widgets#1").decision == "allow"


# --- force pushes ---------------------------------------------------------------------------
def test_a_force_push_answers_to_allow_force_pushes_and_non_fast_forward(
    tp: Toolpass, gh: FakeGitHub
) -> None:
    """GitHub blocks force pushes on every protected branch unless it allows them, and a
    ruleset's ``non_fast_forward`` blocks them for all but its bypass actors."""
    repo = gh.repos["acme/widgets"]
    repo.branches["main"] = True
    repo.protections["main"] = {}
    for login in ("erin", "dana"):
        denied = ask(tp, login, "contents.force", "ref:acme/widgets@main")
        assert denied.decision == "deny"
        assert "force pushes to it are blocked" in denied.reason
    repo.protections["main"] = {"allow_force_pushes": True}
    assert ask(tp, "dana", "contents.force", "ref:acme/widgets@main").decision == "allow"
    assert ask(tp, "dana", "contents.force", "ref:acme/widgets@feature").decision == "allow"
    rules = [{"type": "non_fast_forward"}]
    repo.rulesets.append({"id": 15, "branches": ["feature"], "rules": rules})
    assert ask(tp, "erin", "contents.force", "ref:acme/widgets@feature").decision == "deny"
    assert ask(tp, "erin", "contents.write", "ref:acme/widgets@feature").decision == "allow"
