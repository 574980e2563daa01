"""GitHub's rules on top of the role (#19): each answer is what GitHub itself would decide.

Branch protection and rulesets on the written branch and on a merge's base, archived
repositories, locked conversations, the default branch's rename, environments' required
reviewers, unpublished security advisories, the organization's repository creation setting
and suspended accounts; a rule toolpass cannot read answers unknown.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.github import FakeGitHub
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolpass.engine import Toolpass

from .test_github import connection

GHSA = "GHSA-abcd-efgh-ijkl"
ADMIN_ROLE = {"actor_id": 5, "actor_type": "RepositoryRole", "bypass_mode": "always"}


@pytest.fixture
def gh(github: FakeGitHub) -> FakeGitHub:
    repo = github.repos["acme/widgets"]
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


def verdict(tp: Toolpass, login: str, action: str, resource: str) -> str:
    return str(ask(tp, login, action, resource).decision)


# --- branch protection and rulesets ------------------------------------------------------
def test_a_merge_needs_the_base_branchs_approving_reviews(tp: Toolpass, gh: FakeGitHub) -> None:
    reviews = gh.repos["acme/widgets"].reviews.setdefault(1, [])
    denied = ask(tp, "dana", "pr.merge", "pr:acme/widgets#1")
    assert denied.decision == "deny"
    assert "#1 needs 1 approving reviews from users with write access, has 0" in denied.reason
    reviews.append({"user": "rory", "state": "APPROVED"})  # read only: does not count
    assert verdict(tp, "dana", "pr.merge", "pr:acme/widgets#1") == "deny"
    reviews.append({"user": "maya", "state": "APPROVED"})
    assert verdict(tp, "dana", "pr.merge", "pr:acme/widgets#1") == "allow"
    reviews.append({"user": "erin", "state": "CHANGES_REQUESTED"})
    assert verdict(tp, "dana", "pr.merge", "pr:acme/widgets#1") == "deny"
    assert verdict(tp, "erin", "pr.merge", "pr:acme/widgets#1") == "allow"  # admins exempt


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["rory", "maya", "tess", "erin"]),
            st.sampled_from(["APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED"]),
        ),
        max_size=6,
    )
)
def test_reviews_count_as_github_counts_them(
    tp: Toolpass, gh: FakeGitHub, reviews: list[tuple[str, str]]
) -> None:
    """Each writer's latest deciding review counts; one must approve, none request changes."""
    gh.repos["acme/widgets"].reviews[1] = [{"user": u, "state": s} for u, s in reviews]
    latest: dict[str, str] = {}
    for user, state in reviews:
        if state != "COMMENTED" and user in ("maya", "erin"):  # the writers
            latest[user] = state
    states = set(latest.values())
    expected = "allow" if "APPROVED" in states and "CHANGES_REQUESTED" not in states else "deny"
    assert verdict(tp, "dana", "pr.merge", "pr:acme/widgets#1") == expected


def test_push_restrictions_and_enforce_admins(tp: Toolpass, gh: FakeGitHub) -> None:
    repo = gh.repos["acme/widgets"]
    repo.protections["main"] = {"restrictions": {"users": ["maya"], "teams": ["release"]}}
    denied = ask(tp, "dana", "pr.merge", "pr:acme/widgets#1")
    assert "only the people and teams it names may push to it" in denied.reason
    assert verdict(tp, "maya", "pr.merge", "pr:acme/widgets#1") == "allow"
    gh.teams["acme"] = {"release": {"dana"}}
    assert verdict(tp, "dana", "pr.merge", "pr:acme/widgets#1") == "allow"
    assert verdict(tp, "erin", "contents.write", "ref:acme/widgets@main") == "allow"
    repo.protections["main"]["enforce_admins"] = True
    assert verdict(tp, "erin", "contents.write", "ref:acme/widgets@main") == "deny"
    repo.protections["main"]["lock_branch"] = True
    assert "it is locked" in ask(tp, "maya", "pr.merge", "pr:acme/widgets#1").reason


def test_rulesets_bind_admins_unless_they_may_bypass(tp: Toolpass, gh: FakeGitHub) -> None:
    repo = gh.repos["acme/widgets"]
    ruleset = {"id": 7, "branches": ["feature"], "rules": [{"type": "update"}]}
    repo.rulesets.append(ruleset)
    for login in ("dana", "erin"):
        denied = ask(tp, login, "contents.write", "ref:acme/widgets@feature")
        assert denied.decision == "deny"
        assert "may update it (ruleset 7)" in denied.reason
    ruleset["bypass_actors"] = [ADMIN_ROLE]
    assert verdict(tp, "erin", "contents.write", "ref:acme/widgets@feature") == "allow"
    assert verdict(tp, "dana", "contents.write", "ref:acme/widgets@feature") == "deny"
    ruleset["bypass_actors"] = [{"actor_id": 1, "actor_type": "OrganizationAdmin"}]
    assert verdict(tp, "erin", "contents.write", "ref:acme/widgets@feature") == "allow"
    ruleset["bypass_actors"] = [{"actor_id": 9, "actor_type": "Team", "bypass_mode": "always"}]
    assert verdict(tp, "dana", "contents.write", "ref:acme/widgets@feature") == "unknown"
    ruleset["bypass_actors"] = [{"actor_id": 4, "actor_type": "RepositoryRole"}]
    assert verdict(tp, "dana", "contents.write", "ref:acme/widgets@feature") == "allow"
    assert verdict(tp, "maya", "contents.write", "ref:acme/widgets@feature") == "unknown"


def test_a_ruleset_on_the_default_branch_binds_merges(tp: Toolpass, gh: FakeGitHub) -> None:
    repo = gh.repos["acme/widgets"]
    repo.branches["main"] = False  # no classic protection: the ruleset alone binds
    rule = {"type": "pull_request", "parameters": {"required_approving_review_count": 2}}
    repo.rulesets.append({"id": 8, "branches": ["~DEFAULT_BRANCH"], "rules": [rule]})
    repo.reviews[1] = [{"user": "maya", "state": "APPROVED"}]
    denied = ask(tp, "erin", "pr.merge", "pr:acme/widgets#1")
    assert "needs 2 approving reviews" in denied.reason
    assert "(ruleset 8)" in denied.reason
    repo.reviews[1].append({"user": "erin", "state": "APPROVED"})
    assert verdict(tp, "dana", "pr.merge", "pr:acme/widgets#1") == "allow"
    repo.rulesets.append({"id": 9, "branches": ["main"], "rules": [{"type": "merge_queue"}]})
    assert verdict(tp, "dana", "pr.merge", "pr:acme/widgets#1") == "deny"


def test_rules_toolpass_cannot_read_answer_unknown(tp: Toolpass, gh: FakeGitHub) -> None:
    gh.tokens[next(iter(gh.tokens))].admin = False  # cannot read protection or bypass actors
    unread = ask(tp, "erin", "contents.write", "ref:acme/widgets@main")
    assert unread.decision == "unknown"
    assert "cannot read the protection of acme/widgets@main" in unread.reason
    gh.repos["acme/widgets"].rulesets.append(
        {"id": 7, "branches": ["feature"], "rules": [{"type": "update"}]}
    )
    assert (
        "cannot read who may bypass"
        in ask(tp, "erin", "contents.write", "ref:acme/widgets@feature").reason
    )
    gh.fail(403, path="/repos/acme/widgets/rules/branches/.*")
    assert verdict(tp, "dana", "contents.delete", "ref:acme/widgets@fix") == "unknown"
    gh.repos["acme/widgets"].rulesets[0]["rules"] = [{"type": "brand_new_rule"}]
    assert verdict(tp, "dana", "contents.write", "ref:acme/widgets@feature") == "unknown"


def test_renaming_the_default_branch_needs_admin(tp: Toolpass) -> None:
    denied = ask(tp, "dana", "branch.rename", "ref:acme/widgets@main")
    assert "main is the default branch of acme/widgets: renaming it needs admin" in denied.reason
    assert verdict(tp, "dana", "branch.rename", "ref:acme/widgets@feature") == "allow"
    assert verdict(tp, "erin", "branch.rename", "ref:acme/widgets@main") == "allow"


# --- resource and organization state ---------------------------------------------------
def test_an_archived_repository_takes_no_writes(tp: Toolpass, gh: FakeGitHub) -> None:
    gh.repos["acme/widgets"].archived = True
    denied = ask(tp, "erin", "contents.write", "ref:acme/widgets@feature")
    assert "acme/widgets is archived: it is read-only for everyone" in denied.reason
    for action, resource in [
        ("issue.comment", "issue:acme/widgets#3"),
        ("pr.create", "repo:acme/widgets"),
    ]:
        assert verdict(tp, "erin", action, resource) == "deny"
    assert verdict(tp, "rory", "repo.read", "repo:acme/widgets") == "allow"
    assert verdict(tp, "erin", "repo.admin", "repo:acme/widgets") == "allow"  # unarchiving


def test_locked_conversations_take_comments_from_writers(tp: Toolpass, gh: FakeGitHub) -> None:
    gh.repos["acme/widgets"].locked.add(3)
    denied = ask(tp, "rory", "issue.comment", "issue:acme/widgets#3")
    assert "the conversation on #3 is locked" in denied.reason
    assert verdict(tp, "tess", "pr.review", "pr:acme/widgets#3") == "deny"
    assert verdict(tp, "dana", "issue.comment", "issue:acme/widgets#3") == "allow"
    assert verdict(tp, "rory", "issue.comment", "issue:acme/widgets#4") == "allow"


def test_unpublished_advisories_are_for_admins_managers_collaborators(
    tp: Toolpass, gh: FakeGitHub
) -> None:
    repo = gh.repos["acme/widgets"]
    repo.advisories[GHSA] = {"state": "draft", "users": ["rory"], "teams": ["sec-triage"]}
    gh.teams["acme"] = {"sec-triage": {"tess"}, "security": {"maya"}}
    gh.security_managers["acme"] = ["security"]
    where = f"advisory:acme/widgets@{GHSA}"
    denied = ask(tp, "dana", "security.read", where)  # write role, no part in the advisory
    assert "is for the repository's admins, security managers and" in denied.reason
    for login in ("rory", "tess", "maya", "erin"):
        assert verdict(tp, login, "security.manage", where) == "allow", login
    assert verdict(tp, "rory", "advisory.cve", where) == "deny"  # collaborators ask no CVE
    assert verdict(tp, "maya", "advisory.cve", where) == "allow"
    repo.advisories[GHSA]["state"] = "published"
    assert verdict(tp, "dana", "security.read", where) == "allow"


def test_members_can_create_repositories_false(tp: Toolpass, gh: FakeGitHub) -> None:
    assert verdict(tp, "dana", "repo.create", "org:acme") == "allow"
    gh.org_settings["acme"] = {"members_can_create_repositories": False}
    denied = ask(tp, "dana", "repo.create", "org:acme")
    assert "whose members may not create repositories" in denied.reason
    assert verdict(tp, "erin", "repo.create", "org:acme") == "allow"
    gh.orgs["acme"]["engine-bot"] = ("member", "active")  # cannot read the setting
    assert verdict(tp, "dana", "repo.create", "org:acme") == "unknown"


def test_environments_required_reviewers(tp: Toolpass, gh: FakeGitHub) -> None:
    gh.repos["acme/widgets"].pending[42] = [
        {"environment": "production", "users": ["maya"], "teams": ["ops"]}
    ]
    gh.teams["acme"] = {"ops": {"rory"}}
    denied = ask(tp, "dana", "deployment.review", "run:acme/widgets#42")
    assert "dana is no required reviewer of the environment production" in denied.reason
    assert verdict(tp, "maya", "deployment.review", "run:acme/widgets#42") == "allow"
    assert verdict(tp, "rory", "deployment.review", "run:acme/widgets#42") == "allow"
    assert verdict(tp, "erin", "deployment.review", "run:acme/widgets#43") == "deny"


# --- account state ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "identity",
    [
        {"mode": "users", "users": {"dana@example.com": "dana"}},
        {"mode": "template", "template": "{local}", "domains": ["example.com"]},
    ],
)
def test_a_suspended_account_is_refused_whatever_its_roles(
    ghes: FakeGitHub, engine_token: str, identity: dict[str, Any]
) -> None:
    ghes.add_org("acme", {"engine-bot": "admin", "dana": "admin"})
    with Toolpass([connection(ghes, identity=identity)]) as tp:
        dana = "dana@example.com"
        assert tp.check(dana, "gh", "repo.read", "repo:acme/widgets").decision == "allow"
        ghes.suspended["dana"] = "2026-11-30T10:00:00Z"
        assert tp.check(dana, "gh", "repo.read", "repo:acme/widgets").decision == "allow"  # cached
        fresh = tp.check(dana, "gh", "repo.read", "repo:acme/widgets", fresh=True)
        assert fresh.decision == "deny"
        assert "dana's account is suspended" in fresh.reason
        assert tp.check(dana, "gh", "org.manage", "org:acme").decision == "deny"
        ghes.fail(200, body={"login": "dana", "id": 1}, path="/api/v3/users/dana")
        assert tp.check(dana, "gh", "pr.create", "repo:acme/widgets").decision == "unknown"
