"""The GitLab integration, through ``Toolpass``, against a fake GitLab on 127.0.0.1."""

from __future__ import annotations

import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import gitlab
import pytest
from fakes.gitlab import FakeGitLab
from fakes.proxy import FakeProxy
from fakes.server import FakeServer, Request
from fakes.tls import make_certs
from hypothesis import given
from hypothesis import strategies as st
from pytest_toolpass import IntegrationConformance

from toolpass.engine import Toolpass, literal
from toolpass.integrations import get
from toolpass.integrations.gitlab import GitLab, branch_matches, parse_resource
from toolpass.wire.errors import ConfigError, LookupFailed

ADMIN_TOKEN = "glpat-admin-token"
BOT_TOKEN = "glpat-bot-token"
OAUTH_TOKEN = "oauth-access-token"
API = "/api/v4"
PROJECT = "project:acme/platform/api"


class World:
    """A fake GitLab with a cast of users, and a way to build engines against it."""

    def __init__(self, fake: FakeGitLab) -> None:
        self.fake = fake
        self.admin = fake.add_user("root", "root@example.com", admin=True)
        self.bot = fake.add_user("toolpass_bot", "bot@example.com")
        self.dana = fake.add_user("dana", "dana@example.com", public_email="dana@example.com")
        self.erin = fake.add_user("erin", "erin@example.com")
        self.frank = fake.add_user("frank", "frank@example.com", state="blocked")
        self.gina = fake.add_user("gina", "gina@example.com")
        self.hank = fake.add_user("hank", "hank@example.com")
        self.omar = fake.add_user("omar", "omar@example.com")
        self.xena = fake.add_user("xena", "xena@partner.example", external=True)
        fake.add_token(ADMIN_TOKEN, self.admin)
        fake.add_token(BOT_TOKEN, self.bot)
        fake.add_token(OAUTH_TOKEN, self.admin, kind="oauth")
        fake.add_group("acme")
        fake.add_group("acme/platform")
        fake.add_group("partners")
        fake.add_project("acme/platform/api", shared_with=[("partners", 30)])
        fake.add_project("acme/site", visibility="public")
        fake.add_project("acme/tools", visibility="internal")
        fake.add_project("secret/vault")
        fake.add_member("acme", self.dana, 30)  # inherited by every acme project
        fake.add_member("acme/platform/api", self.erin, 10)  # a direct Guest
        fake.add_member("acme/platform/api", self.frank, 40)
        fake.add_member("acme/platform", self.hank, 20)
        fake.add_member("acme/platform/api", self.omar, 50)
        fake.add_member("partners", self.gina, 50)  # invited group, capped at Developer
        fake.add_member("acme/platform/api", self.bot, 20)  # the bot sees this project only

    def engine(self, **extra: Any) -> Toolpass:
        conn: dict[str, Any] = {
            "id": "gl",
            "integration": "gitlab",
            "url": self.fake.url,
            "token": literal(ADMIN_TOKEN),
        }
        conn.update(extra)
        return Toolpass(connections=[conn])


@pytest.fixture
def fake() -> Iterator[FakeGitLab]:
    with FakeGitLab() as server:
        yield server


@pytest.fixture
def world(fake: FakeGitLab) -> World:
    return World(fake)


@pytest.fixture
def tp(world: World) -> Iterator[Toolpass]:
    with world.engine() as engine:
        yield engine


def paths(fake: FakeGitLab) -> list[str]:
    return [r.path for r in fake.requests]


# --- allow and deny ----------------------------------------------------------------------
def test_inherited_developer_may_open_a_merge_request(tp: Toolpass, fake: FakeGitLab) -> None:
    d = tp.check("dana@example.com", "gl", "mr.create", PROJECT)
    assert d.decision == "allow", d.reason
    assert d.allowed
    assert "Developer (30)" in d.reason
    member_reads = fake.seen("GET", rf"{API}/projects/acme%2Fplatform%2Fapi/members/all/\d+")
    assert len(member_reads) == 1
    assert member_reads[0].headers["private-token"] == ADMIN_TOKEN


def test_a_lower_role_is_denied_with_what_it_needs(tp: Toolpass) -> None:
    d = tp.check("hank@example.com", "gl", "mr.create", PROJECT)
    assert d.decision == "deny"
    assert "Reporter (20)" in d.reason
    assert "Developer (30)" in d.reason


def test_owner_may_delete_and_developer_may_not(tp: Toolpass) -> None:
    assert tp.check("omar@example.com", "gl", "project.delete", PROJECT).allowed
    assert tp.check("dana@example.com", "gl", "project.delete", PROJECT).decision == "deny"


def test_an_archived_project_is_read_only(world: World, tp: Toolpass) -> None:
    world.fake.add_project("acme/legacy", archived=True)
    legacy = "project:acme/legacy"
    assert tp.check("dana@example.com", "gl", "project.read", legacy).allowed
    d = tp.check("dana@example.com", "gl", "issue.create", legacy)
    assert d.decision == "deny"
    assert "archived" in d.reason
    assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed  # not archived


def test_invited_group_membership_counts_up_to_the_share_level(tp: Toolpass) -> None:
    # gina owns the invited group, but the share grants at most Developer.
    assert tp.check("gina@example.com", "gl", "mr.create", PROJECT).allowed
    d = tp.check("gina@example.com", "gl", "project.settings", PROJECT)
    assert d.decision == "deny"
    assert "Developer (30)" in d.reason


def test_a_non_member_of_a_private_project_is_denied(tp: Toolpass, fake: FakeGitLab) -> None:
    d = tp.check("dana@example.com", "gl", "project.read", "project:secret/vault")
    assert d.decision == "deny"
    assert "not a member" in d.reason
    # The 404 was confirmed to mean "not a member": the engine could read the project.
    assert fake.seen("GET", rf"{API}/projects/secret%2Fvault")


def test_blocked_members_are_denied(tp: Toolpass) -> None:
    d = tp.check("frank@example.com", "gl", "project.read", PROJECT)
    assert d.decision == "deny"
    assert "blocked" in d.reason


def test_a_membership_awaiting_approval_is_denied(world: World, tp: Toolpass) -> None:
    world.fake.add_member("acme/site", world.hank, 30, membership_state="awaiting")
    d = tp.check("hank@example.com", "gl", "mr.create", "project:acme/site")
    assert d.decision == "deny"
    assert "awaits" in d.reason


def test_numeric_project_ids_work(world: World, tp: Toolpass) -> None:
    pid = world.fake.projects["acme/platform/api"]["id"]
    assert tp.check("dana@example.com", "gl", "mr.create", f"project:{pid}").allowed


def test_group_actions_read_group_membership(tp: Toolpass, fake: FakeGitLab) -> None:
    assert tp.check("dana@example.com", "gl", "group.read", "group:acme/platform").allowed
    d = tp.check("dana@example.com", "gl", "group.delete", "group:acme")
    assert d.decision == "deny"
    assert fake.seen("GET", rf"{API}/groups/acme/members/all/\d+")
    d = tp.check("dana@example.com", "gl", "group.read", PROJECT)
    assert d.decision == "unknown"
    assert "group:" in d.reason


# --- visibility --------------------------------------------------------------------------
def test_public_projects_do_not_enforce_guest(tp: Toolpass) -> None:
    # erin is in no group that owns acme/site: still, anyone may read and open issues.
    assert tp.check("erin@example.com", "gl", "repository.read", "project:acme/site").allowed
    assert tp.check("erin@example.com", "gl", "issue.create", "project:acme/site").allowed
    assert tp.check("erin@example.com", "gl", "mr.create", "project:acme/site").decision == "deny"


def test_features_limited_to_members_are_not_open(world: World, tp: Toolpass) -> None:
    world.fake.add_project("acme/docs", visibility="public", merge_requests="private")
    assert tp.check("erin@example.com", "gl", "issue.create", "project:acme/docs").allowed
    d = tp.check("erin@example.com", "gl", "mr.read", "project:acme/docs")
    assert d.decision == "deny"
    world.fake.projects["acme/docs"].pop("repository_access_level")
    d = tp.check("erin@example.com", "gl", "repository.read", "project:acme/docs")
    assert d.decision == "unknown"
    assert "repository" in d.reason
    # dana is a Developer through acme: the member-only feature is hers
    assert tp.check("dana@example.com", "gl", "mr.read", "project:acme/docs").allowed


def test_blocked_users_get_nothing_from_public_projects(tp: Toolpass) -> None:
    d = tp.check("frank@example.com", "gl", "project.read", "project:acme/site")
    assert d.decision == "deny"
    assert "blocked" in d.reason


def test_a_guest_reads_code_only_where_the_project_is_not_private(tp: Toolpass) -> None:
    d = tp.check("erin@example.com", "gl", "repository.read", PROJECT)
    assert d.decision == "deny"
    assert "Reporter (20)" in d.reason
    assert tp.check("erin@example.com", "gl", "project.read", PROJECT).allowed


def test_internal_projects_exclude_external_users(tp: Toolpass) -> None:
    assert tp.check("erin@example.com", "gl", "project.read", "project:acme/tools").allowed
    d = tp.check("xena@partner.example", "gl", "project.read", "project:acme/tools")
    assert d.decision == "deny"
    assert "external" in d.reason


def test_internal_projects_are_unknown_when_the_token_cannot_see_external(
    world: World,
) -> None:
    world.fake.add_member("acme/tools", world.bot, 20)
    with world.engine(
        token=literal(BOT_TOKEN), identity={"users": {"erin@example.com": "erin"}}
    ) as tp:
        d = tp.check("erin@example.com", "gl", "project.read", "project:acme/tools")
    assert d.decision == "unknown"
    assert "external" in d.reason


# --- 404 semantics -----------------------------------------------------------------------
def test_a_project_the_token_cannot_see_is_unknown(world: World) -> None:
    with world.engine(
        token=literal(BOT_TOKEN), identity={"users": {"dana@example.com": str(world.dana)}}
    ) as tp:
        d = tp.check("dana@example.com", "gl", "project.read", "project:secret/vault")
        assert d.decision == "unknown"
        assert "not found or the engine cannot see it" in d.reason
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed


def test_not_found_deny_turns_a_hidden_project_into_a_deny(world: World) -> None:
    with world.engine(not_found="deny") as tp:
        d = tp.check("dana@example.com", "gl", "project.read", "project:acme/nope")
    assert d.decision == "deny"
    assert "not_found: deny" in d.reason


# --- protected branches ------------------------------------------------------------------
@pytest.fixture
def protected(world: World) -> World:
    fake = world.fake
    fake.protect("acme/platform/api", "main", push=40, merge=30)
    fake.protect("acme/platform/api", "release/*", push=0, merge=40)
    fake.protect(
        "acme/platform/api", "hotfix-*", push=[{"user_id": world.hank}, {"user_id": world.dana}]
    )
    fake.protect("acme/platform/api", "team-*", push=[{"group_id": 77}])
    fake.protect("acme/platform/api", "scratch", push=30, allow_force_push=True)
    fake.add_merge_request("acme/platform/api", 1, source="feature/x", target="main")
    fake.add_merge_request("acme/platform/api", 2, source="feature/y", target="release/1.0")
    fake.add_merge_request("acme/platform/api", 3, source="patch", fork=True)
    return world


def test_pushing_follows_protected_branches(protected: World, tp: Toolpass) -> None:
    def push(who: str, branch: str) -> str:
        resource = f"branch:acme/platform/api@{branch}"
        return tp.check(f"{who}@example.com", "gl", "branch.push", resource).decision

    assert push("dana", "feature/x") == "allow"  # not protected
    assert push("dana", "main") == "deny"  # Maintainers only
    assert push("omar", "main") == "allow"
    assert push("omar", "release/1.0") == "deny"  # wildcard rule, "No one"
    assert push("dana", "hotfix-7") == "allow"  # a user entry
    assert push("hank", "hotfix-7") == "deny"  # a user entry needs Developer too
    assert push("dana", "team-a") == "unknown"  # a group entry: not evaluated


def test_merging_uses_the_merge_requests_target_branch(protected: World, tp: Toolpass) -> None:
    assert tp.check("dana@example.com", "gl", "mr.merge", "mr:acme/platform/api!1").allowed
    d = tp.check("dana@example.com", "gl", "mr.merge", "mr:acme/platform/api!2")
    assert d.decision == "deny"
    assert "release/*" in d.reason
    assert tp.check("omar@example.com", "gl", "mr.merge", "mr:acme/platform/api!2").allowed
    # pushing to an MR means its source branch, unprotected here
    assert tp.check("dana@example.com", "gl", "branch.push", "mr:acme/platform/api!1").allowed
    fork = tp.check("dana@example.com", "gl", "branch.push", "mr:acme/platform/api!3")
    assert fork.decision == "unknown"
    assert "fork" in fork.reason
    missing = tp.check("dana@example.com", "gl", "mr.merge", "mr:acme/platform/api!99")
    assert missing.decision == "unknown"


def test_force_push_needs_a_rule_that_allows_it(protected: World, tp: Toolpass) -> None:
    main = "branch:acme/platform/api@main"
    assert tp.check("omar@example.com", "gl", "branch.force_push", main).decision == "deny"
    scratch = "branch:acme/platform/api@scratch"
    assert tp.check("dana@example.com", "gl", "branch.force_push", scratch).allowed


def test_deleting_a_protected_branch_needs_maintainer(protected: World, tp: Toolpass) -> None:
    main = "branch:acme/platform/api@main"
    assert tp.check("dana@example.com", "gl", "branch.delete", main).decision == "deny"
    assert tp.check("omar@example.com", "gl", "branch.delete", main).allowed
    other = "branch:acme/platform/api@feature/x"
    assert tp.check("dana@example.com", "gl", "branch.delete", other).allowed


def test_branch_actions_need_a_branch(protected: World, tp: Toolpass) -> None:
    d = tp.check("omar@example.com", "gl", "branch.push", PROJECT)
    assert d.decision == "unknown"
    assert "branch:" in d.reason


def test_protected_branches_are_read_across_pages(world: World, tp: Toolpass) -> None:
    for n in range(150):
        world.fake.protect("acme/platform/api", f"frozen-{n}", push=0)
    resource = "branch:acme/platform/api@frozen-140"
    d = tp.check("omar@example.com", "gl", "branch.push", resource)
    assert d.decision == "deny"
    assert "frozen-140" in d.reason
    pages = world.fake.seen("GET", rf"{API}/projects/acme%2Fplatform%2Fapi/protected_branches")
    assert [r.arg("page") for r in pages] == ["1", "2"]


def test_too_many_pages_is_unknown(world: World) -> None:
    for n in range(150):
        world.fake.protect("acme/platform/api", f"frozen-{n}", push=0)
    with world.engine(max_pages=1) as tp:
        d = tp.check("omar@example.com", "gl", "branch.push", "branch:acme/platform/api@x")
    assert d.decision == "unknown"
    assert "max_pages" in d.reason


# --- issues ------------------------------------------------------------------------------
def test_confidential_issues(world: World, tp: Toolpass) -> None:
    world.fake.add_issue("acme/platform/api", 5, author=world.erin, confidential=True)
    world.fake.add_issue("acme/platform/api", 6, author=world.dana, confidential=True)
    world.fake.add_issue("acme/platform/api", 7, author=world.dana)
    assert tp.check("erin@example.com", "gl", "issue.read", "issue:acme/platform/api#5").allowed
    d = tp.check("erin@example.com", "gl", "issue.read", "issue:acme/platform/api#6")
    assert d.decision == "deny"
    assert "confidential" in d.reason
    assert tp.check("erin@example.com", "gl", "issue.read", "issue:acme/platform/api#7").allowed
    assert tp.check("hank@example.com", "gl", "issue.read", "issue:acme/platform/api#6").allowed


def test_authors_may_update_their_issues(world: World, tp: Toolpass) -> None:
    world.fake.add_issue("acme/platform/api", 5, author=world.erin)
    world.fake.add_issue("acme/platform/api", 6, author=world.dana, assignees=[world.erin])
    world.fake.add_issue("acme/platform/api", 7, author=world.dana)
    for iid in (5, 6):
        resource = f"issue:acme/platform/api#{iid}"
        assert tp.check("erin@example.com", "gl", "issue.update", resource).allowed
    d = tp.check("erin@example.com", "gl", "issue.close", "issue:acme/platform/api#7")
    assert d.decision == "deny"
    assert tp.check("erin@example.com", "gl", "issue.update", PROJECT).decision == "deny"


def test_levels_override_the_built_in_minimum(world: World) -> None:
    world.fake.add_member("acme/site", world.gina, 15)  # a Planner
    with world.engine(levels={"issue.update": 15}) as tp:
        assert tp.check("gina@example.com", "gl", "issue.update", "project:acme/site").allowed
    with world.engine() as tp:
        assert tp.check("gina@example.com", "gl", "issue.update", "project:acme/site").decision == (
            "deny"
        )


# --- every kind of unknown ---------------------------------------------------------------
def test_a_rejected_token_is_unknown(world: World) -> None:
    with world.engine(token=literal("glpat-wrong")) as tp:
        d = tp.check("dana@example.com", "gl", "mr.create", PROJECT)
    assert d.decision == "unknown"
    assert "rejected the engine's credential (HTTP 401)" in d.reason
    assert "401 Unauthorized" in d.reason


def test_a_token_without_read_api_is_unknown(world: World) -> None:
    world.fake.add_token("glpat-narrow", world.admin, scopes=["read_user"])
    with world.engine(token=literal("glpat-narrow")) as tp:
        d = tp.check("dana@example.com", "gl", "mr.create", PROJECT)
    assert d.decision == "unknown"
    assert "HTTP 403" in d.reason


def test_a_member_without_access_level_is_unknown(tp: Toolpass, fake: FakeGitLab) -> None:
    fake.fail(200, body={"id": 1, "state": "active"}, path=rf"{API}/projects/.*/members/all/\d+")
    d = tp.check("dana@example.com", "gl", "mr.create", PROJECT)
    assert d.decision == "unknown"
    assert "access_level" in d.reason


def test_an_unmapped_identity_is_unknown(tp: Toolpass) -> None:
    d = tp.check("nobody@example.com", "gl", "project.read", PROJECT)
    assert d.decision == "unknown"
    assert "maps to no gitlab user" in d.reason


def test_a_bad_resource_is_unknown(tp: Toolpass, fake: FakeGitLab) -> None:
    for resource in ("acme/api", "project:../x", "branch:acme/api@a..b", "mr:acme/api!x"):
        d = tp.check("dana@example.com", "gl", "project.read", resource)
        assert d.decision == "unknown", resource
    assert fake.requests == []


# --- identity ----------------------------------------------------------------------------
def test_admin_lookup_keeps_only_an_exact_email(world: World, tp: Toolpass) -> None:
    # A fuzzy search also finds users whose name contains the text; only the email counts.
    world.fake.add_user("impostor", "imp@example.com")
    world.fake.users[max(world.fake.users)]["name"] = "dana@example.com fan"
    d = tp.check("DANA@example.com", "gl", "mr.create", PROJECT)
    assert d.allowed, d.reason
    search = world.fake.seen("GET", f"{API}/users")[0]
    assert search.arg("search") == "dana@example.com"


def test_a_look_alike_email_on_gitlab_is_no_ones(world: World, tp: Toolpass) -> None:
    # "\u212aim" casefolds to "kim": a GitLab user who spells their address with the
    # Kelvin sign must never be taken for kim (issue #8).
    world.fake.add_user("impostor", "\u212aim@example.com")
    world.fake.users[max(world.fake.users)]["name"] = "kim@example.com"
    d = tp.check("kim@example.com", "gl", "project.read", PROJECT)
    assert d.decision == "unknown"
    assert "maps to no gitlab user" in d.reason


def test_admin_lookup_with_no_exact_match_is_unknown(world: World, tp: Toolpass) -> None:
    world.fake.add_user("danny", "danny@example.com")
    world.fake.users[max(world.fake.users)]["name"] = "ghost@example.com"
    d = tp.check("ghost@example.com", "gl", "project.read", PROJECT)
    assert d.decision == "unknown"
    assert "maps to no gitlab user" in d.reason


def test_lookup_without_admin_reads_public_emails_back(world: World) -> None:
    with world.engine(token=literal(BOT_TOKEN)) as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
        # erin has no public email: the bot's search cannot find her
        d = tp.check("erin@example.com", "gl", "project.read", PROJECT)
        assert d.decision == "unknown"
    assert world.fake.seen("GET", rf"{API}/users/{world.dana}")


def test_identity_is_cached(tp: Toolpass, fake: FakeGitLab) -> None:
    tp.check("dana@example.com", "gl", "mr.create", PROJECT)
    tp.check("dana@example.com", "gl", "project.read", PROJECT)
    assert len(fake.seen("GET", f"{API}/users")) == 1


def test_saml_users_mode(world: World) -> None:
    world.fake.add_member("acme", world.admin, 50)
    world.fake.add_saml_identity("acme", "dana@example.com", world.dana)
    world.fake.add_saml_identity("acme", "E-2044", world.erin)
    with world.engine(identity={"mode": "saml"}, saml_group="acme") as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
        # erin's NameID is not an email, but her email is exact
        assert tp.check("erin@example.com", "gl", "project.read", PROJECT).allowed
        assert tp.check("zed@example.com", "gl", "project.read", PROJECT).decision == "unknown"
    assert world.fake.seen("GET", f"{API}/groups/acme/saml_users")


def test_saml_users_ambiguous_is_unknown(world: World) -> None:
    world.fake.add_saml_identity("acme", "dana@example.com", world.dana)
    world.fake.add_saml_identity("acme", "x-1", world.hank)
    world.fake.users[world.hank]["email"] = "dana@example.com"  # another user's email
    with world.engine(identity={"mode": "saml"}, saml_group="acme") as tp:
        d = tp.check("dana@example.com", "gl", "project.read", PROJECT)
    assert d.decision == "unknown"
    assert "refusing to guess" in d.reason


def test_saml_identity_mode(world: World) -> None:
    world.fake.add_saml_identity("acme", "dana@example.com", world.dana)
    with world.engine(identity={"mode": "saml_identity"}, saml_group="acme") as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
        assert tp.check("erin@example.com", "gl", "project.read", PROJECT).decision == "unknown"
    assert world.fake.seen("GET", f"{API}/groups/acme/saml/dana%40example.com")


def test_identity_modes_need_their_keys(world: World) -> None:
    with pytest.raises(ConfigError, match="saml_group"):
        world.engine(identity={"mode": "saml"})
    with pytest.raises(ConfigError, match="identity_provider"):
        world.engine(identity={"mode": "extern_uid"})


def test_saml_without_group_owner_rights_is_unknown(world: World) -> None:
    world.fake.add_member("acme", world.bot, 20)
    with world.engine(identity={"mode": "saml"}, saml_group="acme", token=literal(BOT_TOKEN)) as tp:
        d = tp.check("dana@example.com", "gl", "project.read", PROJECT)
    assert d.decision == "unknown"
    assert "HTTP 403" in d.reason


def test_extern_uid_mode(world: World) -> None:
    world.fake.users[world.dana]["identities"].append(
        {"provider": "openid_connect", "extern_uid": "dana@example.com"}
    )
    conn = {"identity": {"mode": "extern_uid"}, "identity_provider": "openid_connect"}
    with world.engine(**conn) as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
        assert tp.check("erin@example.com", "gl", "project.read", PROJECT).decision == "unknown"
    # Only administrators may look users up by extern_uid.
    with world.engine(token=literal(BOT_TOKEN), **conn) as tp:
        d = tp.check("dana@example.com", "gl", "mr.create", PROJECT)
    assert d.decision == "unknown"
    assert "HTTP 403" in d.reason


def test_template_mode_maps_to_usernames(world: World, fake: FakeGitLab) -> None:
    identity = {"mode": "template", "template": "{local}", "domains": ["example.com"]}
    with world.engine(identity=identity) as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
        assert tp.check("dana@example.com", "gl", "project.read", PROJECT).allowed
        d = tp.check("xena@partner.example", "gl", "project.read", PROJECT)
        assert d.decision == "unknown"
        assert "domain" in d.reason
        d = tp.check("zed@example.com", "gl", "project.read", PROJECT)
        assert d.decision == "unknown"
        assert "'zed'" in d.reason
    lookups = fake.seen("GET", f"{API}/users")
    assert [r.arg("username") for r in lookups] == ["dana", "zed"]  # the username is cached


def test_users_mapping_takes_ids_and_usernames(world: World, fake: FakeGitLab) -> None:
    identity = {
        "mode": "users",
        "users": {"dana@example.com": str(world.dana), "omar@example.com": "@omar"},
    }
    with world.engine(identity=identity) as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
        assert tp.check("omar@example.com", "gl", "project.delete", PROJECT).allowed
        assert tp.check("erin@example.com", "gl", "project.read", PROJECT).decision == "unknown"
    assert [r.arg("username") for r in fake.seen("GET", f"{API}/users")] == ["omar"]


def test_http_identity_service(world: World) -> None:
    with FakeServer() as service:

        @service.route("GET", "/who")
        def who(request: Request) -> dict[str, Any]:
            email = request.arg("email")
            if email == "twins@example.com":
                return {"users": ["dana", "erin"]}
            return {"user": "dana" if email == "dana@example.com" else None}

        identity = {"mode": "http", "url": f"{service.url}/who"}
        with world.engine(identity=identity) as tp:
            assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
            d = tp.check("twins@example.com", "gl", "project.read", PROJECT)
            assert d.decision == "unknown"
            assert "refusing to guess" in d.reason
        assert service.seen("GET", "/who")[0].arg("system") == "gitlab"


def test_callable_mode(world: World) -> None:
    def resolve(email: str) -> str | list[str] | None:
        return {"dana@example.com": "dana", "both@example.com": ["1", "2"]}.get(email)

    with world.engine(identity=resolve) as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
        assert tp.check("both@example.com", "gl", "project.read", PROJECT).decision == "unknown"
        assert tp.check("none@example.com", "gl", "project.read", PROJECT).decision == "unknown"


# --- authentication ----------------------------------------------------------------------
def test_oauth_sends_a_bearer_token(world: World) -> None:
    with world.engine(auth="oauth", token=literal(OAUTH_TOKEN)) as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
    sent = world.fake.requests[-1].headers
    assert sent["authorization"] == f"Bearer {OAUTH_TOKEN}"
    assert "private-token" not in sent
    with world.engine(auth="oauth", token=literal(ADMIN_TOKEN)) as tp:
        d = tp.check("dana@example.com", "gl", "mr.create", PROJECT)
    assert d.decision == "unknown"
    assert "invalid_token" in d.reason


def test_the_token_comes_from_a_file_reference(world: World, tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text(ADMIN_TOKEN + "\n")
    with world.engine(token=f"file:{secret}") as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
        secret.write_text("glpat-rotated-away\n")  # re-read on use
        d = tp.check("dana@example.com", "gl", "project.read", PROJECT)
        assert d.decision == "unknown"


def test_https_with_a_private_ca(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    with FakeGitLab(tls=(certs.cert_file, certs.key_file)) as fake:
        world = World(fake)
        assert fake.url.startswith("https://")
        with world.engine(ca_file=certs.ca_file) as tp:
            assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
        with world.engine() as tp:
            d = tp.check("dana@example.com", "gl", "mr.create", PROJECT)
            assert d.decision == "unknown"
            assert "not trusted" in d.reason


def test_through_a_proxy(world: World) -> None:
    with FakeProxy() as proxy, world.engine(proxy_url=proxy.url) as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
    assert any("/members/all/" in line for line in proxy.seen)
    assert all(line.startswith(f"GET {world.fake.url}/api/v4/") for line in proxy.seen)


def test_concurrent_identical_checks_ask_once(tp: Toolpass, fake: FakeGitLab) -> None:
    fake.slow(0.2, path=rf"{API}/projects/.*/members/all/\d+")
    results: list[bool] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(
                tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed
            )
        )
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 8
    assert len(fake.seen("GET", rf"{API}/projects/.*/members/all/\d+")) == 1


def test_a_url_ending_in_api_v4_is_not_doubled(world: World) -> None:
    with world.engine(url=world.fake.url + "/api/v4") as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed


# --- caching -----------------------------------------------------------------------------
def test_decisions_are_cached_and_fresh_asks_again(
    world: World, tp: Toolpass, fake: FakeGitLab
) -> None:
    first = tp.check("dana@example.com", "gl", "mr.create", PROJECT)
    count = len(fake.requests)
    again = tp.check("dana@example.com", "gl", "mr.create", PROJECT)
    assert again.allowed
    assert again.cached
    assert not first.cached
    assert len(fake.requests) == count
    fake.members[("group", "acme")].pop(world.dana)
    assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed  # still cached
    assert tp.check("dana@example.com", "gl", "mr.create", PROJECT, fresh=True).decision == "deny"


def test_unknown_is_never_cached(tp: Toolpass, fake: FakeGitLab) -> None:
    fake.fail(503, path=rf"{API}/projects/.*/members/all/\d+")
    assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).decision == "unknown"
    assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed


# --- probe -------------------------------------------------------------------------------
def test_probe_reports_the_identity_and_scopes(tp: Toolpass) -> None:
    result = tp.probe()["gl"]
    assert result.ok
    assert "as root (administrator)" in result.detail
    assert "read_api" in result.detail


def test_probe_fails_for_a_bad_token(world: World) -> None:
    with world.engine(token=literal("glpat-wrong")) as tp:
        result = tp.probe()["gl"]
    assert not result.ok
    assert "401" in result.detail


def test_probe_notes_a_token_that_is_not_an_admin(world: World) -> None:
    with world.engine(token=literal(BOT_TOKEN)) as tp:
        result = tp.probe()["gl"]
    assert result.ok
    assert "public emails only" in result.detail


def test_probe_fails_without_read_api(world: World) -> None:
    world.fake.add_token("glpat-user-only", world.admin, scopes=["read_user"])
    with world.engine(token=literal("glpat-user-only")) as tp:
        result = tp.probe()["gl"]
    assert not result.ok
    assert "lacks read_api" in result.detail


# --- configuration -----------------------------------------------------------------------
def test_the_registry_and_catalog(world: World) -> None:
    cls = get("gitlab")
    assert cls is GitLab
    assert cls.default_url == "https://gitlab.com"
    names = {a.name for a in cls.actions}
    assert {"project.read", "mr.merge", "branch.push", "project.delete"} <= names
    assert all(a.requires for a in cls.actions)
    keys = {k.name: k for k in cls.keys}
    assert keys["token"].secret
    assert keys["auth"].choices == ("token", "oauth")
    assert cls.action("project.delete") is not None
    assert cls.action("project.delete").effect == "destructive"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"levels": {"nope.read": 10}}, "not a gitlab action"),
        ({"levels": {"issue.update": 25}}, "access level"),
        ({"auth": "basic"}, "must be one of"),
        ({"not_found": "allow"}, "must be one of"),
        ({"max_pages": 0}, "1 or more"),
        ({"token": "glpat-inline"}, "token"),
    ],
)
def test_bad_configuration_is_an_error(world: World, extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        world.engine(**extra)


def test_yaml_configuration(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITLAB_TOKEN", ADMIN_TOKEN)
    config = tmp_path / "toolpass.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            connections:
              - id: gl
                integration: gitlab
                url: {world.fake.url}
                token: env:GITLAB_TOKEN
                not_found: deny
                levels:
                  issue.update: 15
                identity:
                  mode: lookup
            """
        )
    )
    with Toolpass.from_config(config) as tp:
        assert tp.check("dana@example.com", "gl", "mr.create", PROJECT).allowed


# --- the resource grammar ----------------------------------------------------------------
def test_resources_parse() -> None:
    t = parse_resource("branch:acme/platform/api@feature/login")
    assert (t.kind, t.path, t.branch, t.encoded) == (
        "branch",
        "acme/platform/api",
        "feature/login",
        "acme%2Fplatform%2Fapi",
    )
    assert parse_resource("mr:acme/api!12").iid == 12
    assert parse_resource("issue:acme/api#3").iid == 3
    assert parse_resource("project:1234").encoded == "1234"


def test_branch_patterns() -> None:
    assert branch_matches("main", "main")
    assert not branch_matches("main", "mainline")
    assert branch_matches("release/*", "release/1.0")
    assert branch_matches("*", "a/b")
    assert branch_matches("v*-stable", "v1.2-stable")
    assert not branch_matches("v*", "xv1")
    assert not branch_matches("re.ease", "release")


@given(st.text(max_size=60))
def test_hostile_resources_never_escape_the_path(text: str) -> None:
    for kind in ("project", "branch", "mr", "issue", "group"):
        try:
            target = parse_resource(f"{kind}:{text}")
        except LookupFailed:
            continue
        assert "/" not in target.encoded
        assert "?" not in target.encoded
        assert "#" not in target.encoded
        assert ".." not in target.path
        assert all(c.isascii() and c.isprintable() for c in target.encoded)
        if target.branch is not None:
            assert ".." not in target.branch
            assert not any(c.isspace() for c in target.branch)


# --- the fake is faithful: python-gitlab drives it ---------------------------------------
def test_python_gitlab_reads_the_fake(world: World) -> None:
    gl = gitlab.Gitlab(world.fake.url, private_token=ADMIN_TOKEN)
    gl.auth()
    assert gl.user is not None
    assert gl.user.username == "root"
    project = gl.projects.get("acme/platform/api")
    assert project.path_with_namespace == "acme/platform/api"
    member = project.members_all.get(world.dana)
    assert member.access_level == 30
    assert member.username == "dana"
    assert project.members_all.get(world.gina).access_level == 30  # via the invited group
    with pytest.raises(gitlab.exceptions.GitlabGetError) as err:
        project.members_all.get(world.xena)
    assert err.value.response_code == 404
    for n in range(45):
        world.fake.add_user(f"bulk{n}", f"bulk{n}@example.com")
    found = gl.users.list(search="bulk", get_all=True, per_page=20)
    assert len(found) == 45
    exact = gl.users.list(search="dana@example.com", get_all=True)
    assert [u.username for u in exact] == ["dana"]
    assert gl.users.get(world.frank).state == "blocked"
    world.fake.protect("acme/platform/api", "main")
    branches = project.protectedbranches.list(get_all=True)
    assert [b.name for b in branches] == ["main"]
    assert branches[0].push_access_levels[0]["access_level"] == 40
    with pytest.raises(gitlab.exceptions.GitlabGetError):
        gl.projects.get("secret/nope")
    group = gl.groups.get("acme")
    assert group.members_all.get(world.dana).access_level == 30


def test_python_gitlab_sees_the_fakes_auth_errors(world: World) -> None:
    gl = gitlab.Gitlab(world.fake.url, private_token="glpat-wrong")
    with pytest.raises(gitlab.exceptions.GitlabAuthenticationError):
        gl.auth()
    oauth = gitlab.Gitlab(world.fake.url, oauth_token=OAUTH_TOKEN)
    oauth.auth()
    assert oauth.user is not None
    assert oauth.user.username == "root"


# --- actions the route table added --------------------------------------------------------------
def test_instance_actions_need_an_administrator(world: World, tp: Toolpass) -> None:
    for action in ("instance.read", "instance.admin"):
        d = tp.check("root@example.com", "gl", action, "instance")
        assert d.decision == "allow", d.reason
        d = tp.check("dana@example.com", "gl", action, "instance")
        assert d.decision == "deny"
        assert "administrator" in d.reason
        assert tp.check("frank@example.com", "gl", action, "instance").decision == "deny"
        assert tp.check("root@example.com", "gl", action, PROJECT).decision == "unknown"
    assert tp.check("root@example.com", "gl", "project.read", "instance").decision == "unknown"
    assert parse_resource("instance").kind == "instance"


def test_instance_actions_are_unknown_when_the_token_cannot_tell(world: World) -> None:
    with world.engine(token=literal(BOT_TOKEN)) as engine:
        d = engine.check("dana@example.com", "gl", "instance.read", "instance")
    assert d.decision == "unknown"
    assert "administrator" in d.reason


def test_notes_need_a_maintainer(tp: Toolpass) -> None:
    assert tp.check("dana@example.com", "gl", "note.manage", PROJECT).decision == "deny"
    assert tp.check("omar@example.com", "gl", "note.manage", PROJECT).allowed  # Owner
    assert tp.check("hank@example.com", "gl", "snippet.write", PROJECT).allowed  # Reporter
    assert tp.check("dana@example.com", "gl", "pipeline.delete", PROJECT).decision == "deny"


def test_group_settings_need_the_groups_owner(tp: Toolpass) -> None:
    assert tp.check("gina@example.com", "gl", "group.settings", "group:partners").allowed
    assert tp.check("dana@example.com", "gl", "group.settings", "group:acme").decision == "deny"


def test_reading_every_issue_needs_reporter_even_where_guests_read(tp: Toolpass) -> None:
    """A list or search of issues returns confidential ones too: Reporter, in the project
    (or, across a group, in the group), whatever the project's visibility."""
    assert tp.check("erin@example.com", "gl", "issue.read", PROJECT).allowed  # a Guest
    d = tp.check("erin@example.com", "gl", "issue.read_all", PROJECT)
    assert d.decision == "deny", d.reason
    site = "project:acme/site"  # public; gina is no member
    assert tp.check("gina@example.com", "gl", "issue.read", site).allowed
    assert tp.check("gina@example.com", "gl", "issue.read_all", site).decision == "deny"
    assert tp.check("hank@example.com", "gl", "issue.read_all", PROJECT).allowed  # Reporter
    assert tp.check("hank@example.com", "gl", "group.read_all", "group:acme/platform").allowed
    assert tp.check("erin@example.com", "gl", "group.read_all", "group:acme").decision == "deny"


def test_gitlabs_merge_checks_bind_whoever_may_merge(world: World, tp: Toolpass) -> None:
    """An Owner may merge into an unprotected branch, but not a merge request GitLab's own
    merge checks refuse (approvals, pipelines, drafts, threads, conflicts)."""
    fake = world.fake
    fake.add_merge_request("acme/platform/api", 7, source="f7", status="not_approved")
    fake.add_merge_request("acme/platform/api", 8, source="f8", status="checking")
    fake.add_merge_request("acme/platform/api", 9, source="f9")
    merge = "mr:acme/platform/api!"
    d = tp.check("omar@example.com", "gl", "mr.merge", merge + "7")
    assert d.decision == "deny", d.reason
    assert "not_approved" in d.reason
    assert tp.check("omar@example.com", "gl", "mr.merge", merge + "8").decision == "unknown"
    assert tp.check("omar@example.com", "gl", "mr.merge", merge + "9").allowed


def test_a_merge_request_without_gitlabs_merge_status_is_unknown(
    world: World, tp: Toolpass
) -> None:
    """A merge request answer without ``detailed_merge_status`` (GitLab before 15.6, or a
    null) says nothing of GitLab's merge checks: unknown, not mergeable."""
    world.fake.add_merge_request("acme/platform/api", 11, source="f11", status=None)  # type: ignore[arg-type]
    d = tp.check("omar@example.com", "gl", "mr.merge", "mr:acme/platform/api!11")
    assert d.decision == "unknown", d.reason


def test_a_locked_discussion_takes_reporter_to_comment(world: World, tp: Toolpass) -> None:
    world.fake.add_issue("acme/platform/api", 40, author=world.erin, locked=True)
    issue = "issue:acme/platform/api#40"
    d = tp.check("erin@example.com", "gl", "issue.comment", issue)  # a Guest, its author
    assert d.decision == "deny", d.reason
    assert tp.check("hank@example.com", "gl", "issue.comment", issue).allowed  # Reporter


# --- protected tags (tags and releases) ----------------------------------------------------
TAG = "tag:acme/platform/api@"


@pytest.fixture
def tagged(world: World) -> World:
    fake = world.fake
    fake.protect_tag("acme/platform/api", "v*")  # Maintainers
    fake.protect_tag("acme/platform/api", "frozen-*", create=0)  # No one
    fake.protect_tag("acme/platform/api", "dana-*", create=[{"user_id": world.dana}])
    fake.protect_tag("acme/platform/api", "team-*", create=[{"group_id": 77}])
    fake.protect_tag("acme/platform/api", "ci-*", create=[{"deploy_key_id": 5}])
    return world


@pytest.mark.parametrize(
    ("who", "action", "tag", "expected"),
    [
        ("dana", "tag.create", "feature-1", "allow"),  # Developer, not protected
        ("dana", "tag.create", "v1.0", "deny"),  # Maintainers only
        ("omar", "tag.create", "v1.0", "allow"),
        ("omar", "tag.create", "frozen-1", "deny"),  # No one: not even the Owner
        ("dana", "tag.create", "dana-1", "allow"),  # a user entry
        ("omar", "tag.create", "dana-1", "deny"),  # ... names no one else
        ("omar", "tag.create", "team-1", "unknown"),  # a group entry is not evaluated
        ("omar", "tag.create", "ci-1", "deny"),  # a deploy key is no user
        ("hank", "tag.create", "feature-1", "deny"),  # Reporter
        ("dana", "release.create", "feature-1", "allow"),
        ("dana", "release.create", "v1.0", "deny"),  # a release for a protected tag
        ("omar", "release.create", "frozen-1", "deny"),
        ("dana", "tag.delete", "feature-1", "allow"),
        ("dana", "tag.delete", "v1.0", "deny"),  # a protected tag: Maintainer
        ("omar", "tag.delete", "v1.0", "allow"),
        ("frank", "tag.create", "feature-1", "deny"),  # blocked, whatever the role
    ],
)
def test_protected_tags_decide_tags_and_releases(
    tagged: World, tp: Toolpass, who: str, action: str, tag: str, expected: str
) -> None:
    d = tp.check(f"{who}@example.com", "gl", action, TAG + tag)
    assert d.decision == expected, d.reason


@pytest.mark.parametrize(
    ("who", "tag", "expected"),
    [
        ("omar", "frozen-1", "deny"),  # No one may create it: no one may delete it
        ("omar", "dana-1", "deny"),  # a Maintainer+ the rule does not name
        ("dana", "dana-1", "deny"),  # named, but a Developer: Maintainer too
        ("omar", "team-1", "unknown"),  # a group entry is not evaluated
        ("omar", "v1.0", "allow"),  # a Maintainer+ allowed to create it
    ],
)
def test_deleting_a_protected_tag_takes_maintainer_and_leave_to_create_it(
    tagged: World, tp: Toolpass, who: str, tag: str, expected: str
) -> None:
    """GitLab's push check (tag_check) refuses a protected tag's deletion to a user a matching
    rule's allowed-to-create list does not hold, Maintainer or not (gitlab-org/gitlab#455799,
    #584005): Maintainer alone was read as enough."""
    d = tp.check(f"{who}@example.com", "gl", "tag.delete", TAG + tag)
    assert d.decision == expected, d.reason


def test_tag_actions_on_a_project_are_unknown(tagged: World, tp: Toolpass) -> None:
    for action in ("tag.create", "tag.delete", "release.create"):
        d = tp.check("omar@example.com", "gl", action, PROJECT)
        assert d.decision == "unknown"
        assert "tag:group/project@name" in d.reason


def test_python_gitlab_cannot_create_a_tag_no_one_may(tagged: World) -> None:
    """Through the request hook: python-gitlab's tag and release writes are checked on their
    tag, and a refused one never reaches GitLab."""
    from toolpass import Session, Toolkit, intercept
    from toolpass.intercept import ActionRefused

    fake, events = tagged.fake, []
    with tagged.engine() as engine:
        kit = Toolkit(permissions=engine, audit=[events.append])

        @kit.tool()
        def release(tag: str) -> str:
            client = gitlab.Gitlab(fake.url, private_token=BOT_TOKEN)
            client.projects.get("acme/platform/api", lazy=True).releases.create(
                {"tag_name": tag, "ref": "main"}
            )
            return "released"

        try:
            with Session("omar@example.com").active(), pytest.raises(ActionRefused) as info:
                release("frozen-2")
            with Session("dana@example.com").active(), pytest.raises(ActionRefused):
                release("v2.0")
        finally:
            intercept.uninstall()
    assert info.value.code == "not_authorized"
    assert fake.seen("POST", rf"{API}/projects/.*/releases") == []
    [action] = events[0].actions
    assert (action["action"], action["resource"]) == (
        "release.create",
        "tag:acme/platform/api@frozen-2",
    )


def test_python_gitlab_cannot_list_a_milestones_issues_as_a_guest(world: World) -> None:
    """Through the request hook: a milestone's issues hold confidential ones the agent's
    token sees; a Guest, who may read the project, is refused before GitLab is asked."""
    from toolpass import Session, Toolkit, intercept
    from toolpass.intercept import ActionRefused

    fake, events = world.fake, []
    with world.engine() as engine:
        kit = Toolkit(permissions=engine, audit=[events.append])

        @kit.tool()
        def milestone_issues() -> int:
            client = gitlab.Gitlab(fake.url, private_token=BOT_TOKEN)
            project = client.projects.get("acme/platform/api", lazy=True)
            return len(project.milestones.get(3, lazy=True).issues())

        try:
            with Session("erin@example.com").active(), pytest.raises(ActionRefused):
                milestone_issues()
        finally:
            intercept.uninstall()
    assert fake.seen("GET", rf"{API}/projects/.*/milestones/3/issues") == []
    action = events[0].actions[-1]
    assert (action["action"], action["resource"]) == ("issue.read_all", PROJECT)


@pytest.mark.parametrize("own_tokens", ["unknown", "user"])
def test_python_gitlab_lists_what_the_sending_token_sees_only_with_own_tokens(
    world: World, own_tokens: str
) -> None:
    """Through the request hook (#19): user look-ups, to-dos and the instance CI lint answer
    what the sending token sees, so they are refused before they leave unless the connection
    says own_tokens: user; the agent's own profile (GET /user) goes either way."""
    from toolpass import Session, Toolkit, intercept
    from toolpass.intercept import ActionRefused

    fake, events = world.fake, []
    with world.engine(own_tokens=own_tokens) as engine:
        kit = Toolkit(permissions=engine, audit=[events.append])

        @kit.tool()
        def call(what: str) -> str:
            client = gitlab.Gitlab(fake.url, private_token=BOT_TOKEN)
            if what == "me":
                client.auth()
                return str(client.user.username if client.user else "")
            if what == "users":
                return str([u.username for u in client.users.list(search="dana")])
            if what == "todos":
                return str(client.todos.list())
            return str(client.http_post("/ci/lint", post_data={"content": "include: x"}))

        try:
            with Session("dana@example.com").active():
                assert call("me") == "toolpass_bot"
                if own_tokens == "user":
                    assert "dana" in call("users")
                    return
                for what in ("users", "todos", "lint"):
                    with pytest.raises(ActionRefused) as info:
                        call(what)
                    assert info.value.code == "authorization_error"
        finally:
            intercept.uninstall()
    assert fake.seen("GET", rf"{API}/todos") == []
    assert fake.seen("POST", rf"{API}/ci/lint") == []
    assert [r for r in fake.seen("GET", rf"{API}/users") if r.arg("search")] == []
    assert events[-1].actions[-1]["action"] == "sender_lists"


def test_sender_lists_is_unknown_without_own_tokens_and_needs_an_active_account(
    world: World,
) -> None:
    with world.engine() as engine:
        d = engine.check("dana@example.com", "gl", "sender_lists", "instance")
        assert d.decision == "unknown"
        assert "own_tokens" in d.reason
    with world.engine(own_tokens="user") as engine:
        assert engine.check("dana@example.com", "gl", "sender_lists", "instance").allowed
        d = engine.check("frank@example.com", "gl", "sender_lists", "instance")
        assert d.decision == "deny"


@given(st.text(min_size=1, max_size=40))
def test_hostile_tag_names_never_parse_into_another_resource(name: str) -> None:
    try:
        target = parse_resource(f"tag:acme/api@{name}")
    except LookupFailed:
        return
    assert (target.kind, target.path, target.branch) == ("tag", "acme/api", name)
    assert ".." not in name
    assert "\x00" not in name


# --- the shared conformance suite ----------------------------------------------------------
class TestGitLabConformance(IntegrationConformance):
    integration = "gitlab"
    user, action, resource = "dana@example.com", "mr.create", PROJECT
    system_user, template = "dana", "{local}"
    credential = ADMIN_TOKEN

    @pytest.fixture
    def api(self) -> Iterator[FakeGitLab]:
        with FakeGitLab() as fake:
            World(fake)
            yield fake

    def connection(self, api: FakeGitLab, **extra: Any) -> dict[str, Any]:
        return {
            "id": "gl",
            "integration": "gitlab",
            "url": api.url,
            "token": literal(ADMIN_TOKEN),
            **extra,
        }

    unsupported: ClassVar[dict[str, str]] = {
        "bind_admins": "no GitLab rule on mr.create binds administrators beyond the role; "
        "protected tags with No one do (test_protected_tags_decide_tags_and_releases)",
    }

    def _dana(self, api: FakeGitLab) -> int:
        return next(uid for uid, u in api.users.items() if u["username"] == "dana")

    def disable_account(self, api: FakeGitLab) -> None:
        api.users[self._dana(api)]["state"] = "deactivated"

    def make_read_only(self, api: FakeGitLab) -> str:
        api.projects["acme/platform/api"]["archived"] = True
        return "mr.create"

    def revoke(self, api: FakeGitLab) -> None:
        del api.members[("group", "acme")][self._dana(api)]
