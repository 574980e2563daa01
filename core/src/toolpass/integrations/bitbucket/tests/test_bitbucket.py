"""The Bitbucket Cloud integration, through ``Toolpass``, against a fake Bitbucket on
127.0.0.1; and the request hook under atlassian-python-api's Bitbucket Cloud client."""

from __future__ import annotations

from typing import Any

import pytest
from atlassian.bitbucket import Cloud
from fakes.bitbucket import FakeBitbucket, populate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, environment, hooked, served

from toolpass import Session, Toolkit, Toolpass
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.integrations.bitbucket import Bitbucket
from toolpass.intercept import ActionRefused

PERMS = r"/2.0/workspaces/acme/permissions/repositories/api"
_FIXTURES = [HealthCheck.function_scoped_fixture]
PEOPLE = {
    f"{name}@example.com": f"acc-{name}" for name in ("dana", "erin", "frank", "gail", "engine")
}


fake = served(FakeBitbucket, populate)
secrets = environment(
    BB_TOKEN="bb-api-token", BB_ACCESS="bb-access-token", BB_CLIENT_SECRET="bb-client-secret"
)
conn = connection(
    id="bb",
    integration="bitbucket",
    username="engine@example.com",
    api_token="env:BB_TOKEN",
    identity={"mode": "users", "users": PEOPLE},
)
tp = engine(conn)
kit = hooked(conn)


def check(tp: Toolpass, user: str, action: str, resource: str) -> Any:
    return tp.check(user, "bb", action, resource)


# --- repositories ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("user", "action", "decision"),
    [
        ("dana", "read", "allow"),
        ("dana", "write", "allow"),
        ("dana", "admin", "deny"),
        ("erin", "admin", "allow"),
        ("frank", "read", "allow"),
        ("frank", "write", "deny"),
        ("gail", "read", "deny"),
        ("gail", "write", "deny"),
    ],
)
def test_the_effective_permission_decides(
    tp: Toolpass, user: str, action: str, decision: str
) -> None:
    d = check(tp, f"{user}@example.com", action, "repo:acme/api")
    assert d.decision == decision, d.reason


def test_the_check_reads_the_repositorys_permission_list_with_the_engines_credential(
    tp: Toolpass, fake: FakeBitbucket
) -> None:
    d = check(tp, "dana@example.com", "write", "repo:acme/api")
    assert "acc-dana" in d.reason
    assert "write" in d.reason
    (sent,) = fake.seen("GET", PERMS)
    assert sent.arg("pagelen") == "100"
    assert sent.headers["authorization"].startswith("Basic ")


def test_a_deny_says_what_the_user_holds(tp: Toolpass) -> None:
    d = check(tp, "frank@example.com", "admin", "repo:acme/api")
    assert "holds only read" in d.reason
    d = check(tp, "gail@example.com", "read", "repo:acme/api")
    assert "holds no permission" in d.reason


def test_the_list_is_read_once_for_every_user(tp: Toolpass, fake: FakeBitbucket) -> None:
    for user in ("dana", "erin", "frank", "gail"):
        check(tp, f"{user}@example.com", "write", "repo:acme/api")
    assert len(fake.seen("GET", PERMS)) == 1


def test_every_page_is_read_following_next_links(fake: FakeBitbucket) -> None:
    fake.page_cap = 2
    with Toolpass([conn(fake)]) as tp:
        assert check(tp, "frank@example.com", "read", "repo:acme/api").allowed
    pages = fake.seen("GET", PERMS)
    assert [r.arg("page") for r in pages] == [None, "2"]


def test_a_next_link_to_another_origin_is_unknown(fake: FakeBitbucket) -> None:
    fake.fail(
        200,
        body={"values": [], "next": "https://evil.example/2.0/x?page=2"},
        path=PERMS,
    )
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, "dana@example.com", "read", "repo:acme/api")
    assert d.decision == "unknown"
    assert "another origin" in d.reason


def test_past_page_limit_is_unknown(fake: FakeBitbucket) -> None:
    fake.page_cap = 1
    with Toolpass([conn(fake, page_limit=2)]) as tp:
        d = check(tp, "gail@example.com", "read", "repo:acme/api")
    assert d.decision == "unknown"
    assert "page_limit" in d.reason


def test_a_public_repository_is_readable_by_anyone(tp: Toolpass, fake: FakeBitbucket) -> None:
    d = check(tp, "gail@example.com", "read", "repo:acme/site")
    assert d.decision == "allow", d.reason
    assert "public" in d.reason
    assert check(tp, "gail@example.com", "write", "repo:acme/site").decision == "deny"


def test_an_unknown_repository_is_unknown_or_deny_when_set(fake: FakeBitbucket) -> None:
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, "dana@example.com", "read", "repo:acme/nope")
    assert d.decision == "unknown"
    assert "404" in d.reason
    with Toolpass([conn(fake, not_found="deny")]) as tp:
        assert check(tp, "dana@example.com", "read", "repo:acme/nope").decision == "deny"


def test_an_engine_that_does_not_administer_the_repository_is_unknown(
    fake: FakeBitbucket,
) -> None:
    fake.grant("acme", "api", "acc-engine", "write")
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, "dana@example.com", "read", "repo:acme/api")
    assert d.decision == "unknown"
    assert "HTTP 403" in d.reason
    assert "must be an admin" in d.reason  # Bitbucket's own words, from its error body


def test_an_unknown_permission_level_is_unknown(fake: FakeBitbucket) -> None:
    fake.grant("acme", "api", "acc-dana", "superuser")
    with Toolpass([conn(fake)]) as tp:
        assert check(tp, "dana@example.com", "read", "repo:acme/api").decision == "unknown"


def test_a_user_named_by_uuid_matches(fake: FakeBitbucket) -> None:
    uuid = fake.users["acc-dana"].uuid
    identity = {"mode": "users", "users": {"dana@example.com": uuid}}
    with Toolpass([conn(fake, identity=identity)]) as tp:
        assert check(tp, "dana@example.com", "write", "repo:acme/api").allowed


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("read", "repo:acme"),
        ("read", "workspace:acme"),
        ("read", "repo:acme/api/extra"),
        ("member", "repo:acme/api"),
        ("access", "repo:acme/api"),
    ],
)
def test_a_resource_of_the_wrong_kind_is_unknown_and_asks_nothing(
    tp: Toolpass, fake: FakeBitbucket, action: str, resource: str
) -> None:
    d = check(tp, "dana@example.com", action, resource)
    assert d.decision == "unknown"
    assert fake.requests == []


def test_an_id_that_is_no_account_is_unknown(fake: FakeBitbucket) -> None:
    identity = {"mode": "users", "users": {"dana@example.com": "dana scully"}}
    with Toolpass([conn(fake, identity=identity)]) as tp:
        d = check(tp, "dana@example.com", "read", "repo:acme/api")
    assert d.decision == "unknown"
    assert "not an Atlassian account_id" in d.reason


# --- workspaces and accounts ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("user", "action", "decision"),
    [
        ("erin", "owner", "allow"),
        ("erin", "member", "allow"),
        ("dana", "member", "allow"),
        ("frank", "member", "allow"),  # a collaborator
        ("dana", "owner", "deny"),
        ("gail", "member", "deny"),
    ],
)
def test_the_workspace_role_decides(tp: Toolpass, user: str, action: str, decision: str) -> None:
    d = check(tp, f"{user}@example.com", action, "workspace:acme")
    assert d.decision == decision, d.reason


def test_an_account_exists_or_is_denied(tp: Toolpass, fake: FakeBitbucket) -> None:
    assert check(tp, "dana@example.com", "access", "site").allowed
    del fake.users["acc-gail"]
    assert check(tp, "gail@example.com", "access", "site").decision == "deny"


# --- authentication ----------------------------------------------------------------------
def test_bearer_access_tokens(fake: FakeBitbucket) -> None:
    fake.bearer("bb-access-token", "acc-engine")
    settings = conn(fake, auth="bearer", access_token="env:BB_ACCESS")
    del settings["username"], settings["api_token"]
    with Toolpass([settings]) as tp:
        assert check(tp, "dana@example.com", "write", "repo:acme/api").allowed
    assert fake.requests[-1].headers["authorization"] == "Bearer bb-access-token"


def test_oauth_client_credentials_are_exchanged_once(fake: FakeBitbucket) -> None:
    fake.oauth_client("consumer-1", "bb-client-secret", "acc-engine")
    settings = conn(
        fake,
        auth="oauth",
        client_id="consumer-1",
        client_secret="env:BB_CLIENT_SECRET",
        token_url=f"{fake.url}/site/oauth2/access_token",
    )
    del settings["username"], settings["api_token"]
    with Toolpass([settings]) as tp:
        assert check(tp, "dana@example.com", "write", "repo:acme/api").allowed
        assert check(tp, "erin@example.com", "owner", "workspace:acme").allowed
    assert len(fake.seen("POST", r"/site/oauth2/access_token")) == 1
    assert fake.seen("GET", PERMS)[0].headers["authorization"] == "Bearer oauth-token-1"


def test_a_rejected_oauth_client_is_unknown_without_its_secret(fake: FakeBitbucket) -> None:
    settings = conn(
        fake,
        auth="oauth",
        client_id="consumer-1",
        client_secret="env:BB_CLIENT_SECRET",
        token_url=f"{fake.url}/site/oauth2/access_token",
    )
    with Toolpass([settings]) as tp:
        d = check(tp, "dana@example.com", "read", "repo:acme/api")
    assert d.decision == "unknown"
    assert "bb-client-secret" not in d.reason


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"auth": "bearer"}, "access_token"),
        ({"auth": "oauth"}, "client_id"),
        ({"workspace": "no such/space"}, "workspace"),
        ({"page_limit": 0}, "page_limit"),
        ({"permission_cache_ttl": -1.0}, "permission_cache_ttl"),
    ],
)
def test_bad_settings_are_refused(fake: FakeBitbucket, extra: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        Toolpass([conn(fake, **extra)])
    assert key in str(info.value)


def test_the_probe_checks_the_workspace_administration(fake: FakeBitbucket) -> None:
    with Toolpass([conn(fake, workspace="acme")]) as tp:
        (result,) = tp.probe().values()
    assert result.ok, result.detail
    assert "Engine Bot" in result.detail
    fake.member("acme", "acc-engine", "member")
    with Toolpass([conn(fake, workspace="acme")]) as tp:
        (result,) = tp.probe().values()
    assert not result.ok
    assert "HTTP 403" in result.detail


def test_the_catalog_names_the_least_privileged_credential() -> None:
    cls = get("bitbucket")
    assert cls is Bitbucket
    assert "admin:repository:bitbucket" in cls.description
    assert cls.default_url == "https://api.bitbucket.org"


# --- branch restrictions and account state -------------------------------------------------
MAIN, RELEASE, PULL = (
    "branch:acme/api/main",
    "branch:acme/api/release/1.0",
    "pullrequest:acme/api/7",
)


@pytest.mark.parametrize(
    ("kind", "action", "resource"),
    [
        ("push", "write", MAIN),
        ("push", "write", "branch:acme/api/"),  # the main branch
        ("delete", "delete_branch", MAIN),
        ("restrict_merges", "write", PULL),  # pull request 7 merges into main
    ],
)
def test_a_branch_restriction_binds_a_writer_and_an_admin(
    fake: FakeBitbucket, kind: str, action: str, resource: str
) -> None:
    with Toolpass([conn(fake)]) as tp:
        assert tp.check("dana@example.com", "bb", action, resource).allowed
    fake.restrict("acme", "api", kind, "main")
    with Toolpass([conn(fake)]) as tp:
        for who in ("dana", "erin"):  # write, and admin
            d = tp.check(f"{who}@example.com", "bb", action, resource)
            assert d.decision == "deny", d.reason
            assert kind in d.reason
        assert tp.check("dana@example.com", "bb", action, "branch:acme/api/feature/x").allowed


def test_the_users_a_push_restriction_lists_are_exempt(fake: FakeBitbucket) -> None:
    fake.restrict("acme", "api", "push", "release/*", users=["acc-erin"])
    fake.restrict("acme", "api", "delete", "release/*", users=["acc-erin"])  # binds everyone
    with Toolpass([conn(fake)]) as tp:
        assert tp.check("erin@example.com", "bb", "write", RELEASE).allowed
        assert tp.check("dana@example.com", "bb", "write", RELEASE).decision == "deny"
        assert tp.check("erin@example.com", "bb", "delete_branch", RELEASE).decision == "deny"


def test_a_restriction_exempting_groups_is_unknown_for_others(fake: FakeBitbucket) -> None:
    fake.restrict("acme", "api", "restrict_merges", "main", groups=["leads"])
    with Toolpass([conn(fake)]) as tp:
        assert tp.check("dana@example.com", "bb", "write", PULL).decision == "unknown"


@pytest.mark.parametrize(
    ("restrictions", "decision"),
    [
        ([("enforce_merge_checks", "main"), ("require_approvals_to_merge", "main")], "unknown"),
        ([("enforce_merge_checks", "*"), ("require_passing_builds_to_merge", "ma*")], "unknown"),
        ([("enforce_merge_checks", "main"), ("require_tasks_to_be_completed", "main")], "unknown"),
        ([("require_approvals_to_merge", "main")], "allow"),  # not enforced: a warning
        ([("enforce_merge_checks", "main"), ("require_approvals_to_merge", "dev")], "allow"),
    ],
)
def test_enforced_merge_checks_leave_a_merge_unknown(
    fake: FakeBitbucket, restrictions: list[tuple[str, str]], decision: str
) -> None:
    """Premium's "prevent a merge with unresolved merge checks" (``enforce_merge_checks``)
    makes Bitbucket refuse a merge whose checks (approvals, builds, tasks, ...) are unmet,
    to an administrator too: the engine does not evaluate them, so it cannot allow."""
    for kind, pattern in restrictions:
        fake.restrict("acme", "api", kind, pattern, value=2)
    with Toolpass([conn(fake)]) as tp:
        d = tp.check("erin@example.com", "bb", "write", PULL)  # an admin, into main
        assert d.decision == decision, d.reason
        assert tp.check("erin@example.com", "bb", "write", MAIN).allowed  # a push: no PR


@pytest.mark.parametrize(
    ("branch_type", "branch", "decision"),
    [
        ("production", "main", "deny"),
        ("development", "develop", "deny"),
        ("development", "main", "allow"),
        ("release", "release/1.0", "deny"),
        ("feature", "feature/x", "allow"),  # no feature prefix in the model
    ],
)
def test_a_branching_model_restriction_names_its_branches(
    fake: FakeBitbucket, branch_type: str, branch: str, decision: str
) -> None:
    fake.restrict("acme", "api", "push", branch_type=branch_type)
    with Toolpass([conn(fake)]) as tp:
        d = tp.check("dana@example.com", "bb", "write", f"branch:acme/api/{branch}")
    assert d.decision == decision, d.reason


@pytest.mark.parametrize(
    ("production", "decision"),
    [
        ({"use_mainbranch": True}, "deny"),  # the main branch, main, by another name
        ({"enabled": True}, "unknown"),  # no branch named: it may be this one
        ({"enabled": False}, "allow"),
    ],
)
def test_a_model_branch_without_a_name_is_never_read_as_another_branch(
    fake: FakeBitbucket, production: dict[str, object], decision: str
) -> None:
    """A production (or development) branch the effective model enables without naming it
    was read as matching no branch: a restriction on it bound nothing."""
    fake.repos[("acme", "api")].model["production"] = production
    fake.restrict("acme", "api", "push", branch_type="production")
    with Toolpass([conn(fake)]) as tp:
        d = tp.check("dana@example.com", "bb", "write", MAIN)
    assert d.decision == decision, d.reason


@given(
    branch=st.text(
        st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="*?"),
        min_size=1,
        max_size=30,
    )
)
@settings(max_examples=40, deadline=None, suppress_health_check=_FIXTURES)
def test_a_glob_restriction_matches_the_branch_it_names(fake: FakeBitbucket, branch: str) -> None:
    fake.repos[("acme", "api")].restrictions.clear()
    fake.restrict("acme", "api", "push", branch)  # a literal pattern
    fake.restrict("acme", "api", "push", "wip/*")
    with Toolpass([conn(fake, permission_cache_ttl=0)]) as tp:
        d = tp.check("dana@example.com", "bb", "write", f"branch:acme/api/{branch}")
        assert d.decision == "deny", d.reason
        d = tp.check("dana@example.com", "bb", "write", f"branch:acme/api/wip/{branch}")
        assert d.decision == "deny", d.reason


def test_unreadable_restrictions_are_unknown(fake: FakeBitbucket) -> None:
    fake.restrict("acme", "api", "push", branch_match_kind="regex", pattern="m.*")
    with Toolpass([conn(fake)]) as tp:
        assert tp.check("dana@example.com", "bb", "write", MAIN).decision == "unknown"
        assert tp.check("dana@example.com", "bb", "write", "repo:acme/api").allowed


@pytest.mark.parametrize("status", ["inactive", "closed"])
@pytest.mark.parametrize(
    ("action", "resource"),
    [("write", "repo:acme/api"), ("write", MAIN), ("member", "workspace:acme"), ("access", "site")],
)
def test_an_account_that_is_not_active_is_denied(
    tp: Toolpass, fake: FakeBitbucket, status: str, action: str, resource: str
) -> None:
    fake.users["acc-dana"].account_status = status
    d = tp.check("dana@example.com", "bb", action, resource)
    assert d.decision == "deny", d.reason
    assert status in d.reason


# --- the route table ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path", "action", "resource", "flags"),
    [
        ("GET", "/2.0/repositories/acme/api", "read", "repo:acme/api", "u"),
        ("GET", "/2.0/repositories/acme/api/src/main/README.md", "read", "repo:acme/api", "u"),
        ("POST", "/2.0/repositories/acme/api/src", "write", "repo:acme/api", ""),
        ("POST", "/2.0/repositories/acme/api/pullrequests", "write", "repo:acme/api", "s"),
        (
            "POST",
            "/2.0/repositories/acme/api/pullrequests/7/comments",
            "read",
            "repo:acme/api",
            "s",
        ),
        ("POST", "/2.0/repositories/acme/api/pullrequests/7/merge", "write", "repo:acme/api", ""),
        (
            "PUT",
            "/2.0/repositories/acme/api/permissions-config/users/acc-x",
            "admin",
            "repo:acme/api",
            "",
        ),
        ("DELETE", "/2.0/repositories/acme/api", "admin", "repo:acme/api", ""),
        ("POST", "/2.0/repositories/acme/api/hooks", "admin", "repo:acme/api", "s"),
        ("GET", "/2.0/workspaces/acme/permissions", "owner", "workspace:acme", ""),
        ("GET", "/2.0/workspaces/acme/members", "member", "workspace:acme", ""),
        ("GET", "/2.0/user", "access", "site", "a"),
    ],
)
def test_routes(method: str, path: str, action: str, resource: str, flags: str) -> None:
    from toolpass.integrations.routes import Request

    found = Bitbucket.route_table().match(Request(method, path, "", None, b""))
    assert found is not None
    assert (found.route.action, found.resource, found.route.flags) == (action, resource, flags)


def test_the_table_is_generated_from_the_openapi_client() -> None:
    from toolpass.integrations.routes import load

    table = load("toolpass.integrations.bitbucket")
    assert len(table.routes) >= 300
    assert {r.effect for r in table.routes if r.method == "DELETE"} == {"destructive"}


# --- the request hook under atlassian-python-api ------------------------------------------
def _client(fake: FakeBitbucket) -> Cloud:
    fake.bearer("tool-token", "acc-engine")
    return Cloud(url=fake.url, token="tool-token")


def test_the_hook_checks_a_list_across_the_agents_workspaces_and_lets_its_account_go(
    kit: tuple[Toolkit, list[Any]], fake: FakeBitbucket
) -> None:
    """atlassian-python-api's Cloud: GET /2.0/workspaces and /2.0/snippets answer what the
    sending account sees (#19): sender_lists, refused before they leave without
    own_tokens: user; the account's own profile (GET /2.0/user) goes."""
    toolkit, events = kit

    @toolkit.tool()
    def get(path: str) -> str:
        return str(_client(fake).get(path))

    with Session("dana@example.com").active():
        assert "acc-engine" in get("user")
        for path in ("workspaces", "snippets", "repositories?role=member"):
            with pytest.raises(ActionRefused) as info:
                get(path)
            assert info.value.code == "authorization_error"
    assert fake.seen("GET", r"/2.0/(workspaces|snippets|repositories)") == []
    assert events[-1].actions[-1]["action"] == "sender_lists"


def test_the_hook_lets_an_allowed_pull_request_through(
    kit: tuple[Toolkit, list[Any]], fake: FakeBitbucket
) -> None:
    toolkit, events = kit

    @toolkit.tool()
    def open_pull() -> str:
        client = _client(fake)
        answer = client.post(
            "repositories/acme/api/pullrequests",
            data={"title": "Fix", "source": {"branch": {"name": "fix"}}},
        )
        return f"opened #{answer['id']}"

    with Session("dana@example.com").active():
        assert open_pull() == "opened #1"
    assert len(fake.seen("POST", r"/2.0/repositories/acme/api/pullrequests")) == 1
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("write", "repo:acme/api")
    assert action["verdict"] == "allowed"


def test_the_hook_refuses_a_pull_request_before_it_is_sent(
    kit: tuple[Toolkit, list[Any]], fake: FakeBitbucket
) -> None:
    toolkit, events = kit

    @toolkit.tool()
    def open_pull() -> str:
        client = _client(fake)
        client.post("repositories/acme/api/pullrequests", data={"title": "Fix"})
        return "opened"

    with Session("frank@example.com").active(), pytest.raises(ActionRefused):
        open_pull()
    assert fake.seen("POST", r"/2.0/repositories/acme/api/pullrequests") == []
    assert fake.pulls == []
    assert fake.seen("GET", PERMS)  # the engine asked; the tool's request never left
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("write", "repo:acme/api")
    assert action["verdict"] == "not_authorized"


def test_the_hook_refuses_a_merge_into_a_restricted_branch(
    kit: tuple[Toolkit, list[Any]], fake: FakeBitbucket
) -> None:
    toolkit, events = kit
    fake.restrict("acme", "api", "restrict_merges", "main", users=["acc-erin"])

    @toolkit.tool()
    def merge() -> str:
        answer = _client(fake).post("repositories/acme/api/pullrequests/7/merge", data={})
        return str(answer["state"])

    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        merge()
    assert fake.seen("POST", r"/2.0/repositories/acme/api/pullrequests/7/merge") == []
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("write", "pullrequest:acme/api/7")
    assert action["verdict"] == "not_authorized"
    with Session("erin@example.com").active():
        assert "MERGED" in merge()


def test_the_hook_refuses_deleting_a_protected_branch(
    kit: tuple[Toolkit, list[Any]], fake: FakeBitbucket
) -> None:
    toolkit, events = kit
    fake.repos[("acme", "api")].branches |= {"rel-1", "wip"}
    fake.restrict("acme", "api", "delete", "rel-*")

    @toolkit.tool()
    def delete(branch: str) -> str:
        _client(fake).delete(f"repositories/acme/api/refs/branches/{branch}")
        return "deleted"

    with Session("erin@example.com").active(), pytest.raises(ActionRefused):
        delete("rel-1")  # an admin too
    assert "rel-1" in fake.repos[("acme", "api")].branches
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("delete_branch", "branch:acme/api/rel-1")
    assert action["verdict"] == "not_authorized"
    with Session("dana@example.com").active():
        assert delete("wip") == "deleted"
    assert "wip" not in fake.repos[("acme", "api")].branches


def test_the_vendor_client_reads_a_repository_through_the_hook(
    kit: tuple[Toolkit, list[Any]], fake: FakeBitbucket
) -> None:
    toolkit, _ = kit

    @toolkit.tool()
    def describe() -> str:
        repo = _client(fake).repositories.get("acme", "api")
        return str(repo.name)

    with Session("frank@example.com").active():
        result = describe()
    assert "\napi\n" in result
    assert "<untrusted-content" in result  # the route reads content others wrote
    assert fake.seen("GET", r"/2.0/repositories/acme/api")


class TestBitbucketConformance(IntegrationConformance):
    integration = "bitbucket"
    user, action, resource = "dana@example.com", "write", "branch:acme/api/main"
    system_user, template = "acc-dana", "acc-{local}"
    credential = "bb-api-token"

    @pytest.fixture
    def api(self, fake: FakeBitbucket) -> FakeBitbucket:
        return fake

    def disable_account(self, api: FakeBitbucket) -> None:
        api.users["acc-dana"].account_status = "inactive"

    def make_read_only(self, api: FakeBitbucket) -> str:
        api.restrict("acme", "api", "push", "*")  # no one pushes to any branch
        return "write"

    def bind_admins(self, api: FakeBitbucket) -> None:
        api.grant("acme", "api", "acc-dana", "admin")
        api.users["acc-dana"].account_status = "closed"

    def revoke(self, api: FakeBitbucket) -> None:
        api.grant("acme", "api", "acc-dana", "read")

    def connection(self, api: FakeBitbucket, **extra: Any) -> dict[str, Any]:
        settings = conn(api, **extra)
        if "identity" not in extra:
            settings.pop("identity")
            settings["identity"] = {"mode": "users", "users": {self.user: self.system_user}}
        return settings
