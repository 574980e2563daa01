"""The Jira Cloud integration, through ``Toolpass``, against a fake Jira on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from fakes.jira import GLOBAL_PERMISSIONS, PROJECT_PERMISSIONS, FakeJira, populate
from fakes.proxy import FakeProxy
from fakes.server import FakeServer, Reply, Request
from fakes.tls import make_certs
from pytest_toolpass import IntegrationConformance

from toolpass.engine import ConfigError, Toolpass
from toolpass.integrations import get
from toolpass.integrations.jira import Jira

CHECK = r".*/rest/api/3/permissions/check"
SEARCH = r".*/rest/api/3/user/search"


@pytest.fixture
def fake() -> Iterator[FakeJira]:
    with FakeJira() as server:
        yield populate(server)


@pytest.fixture(autouse=True)
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIRA_TOKEN", "classic-token")
    monkeypatch.setenv("JIRA_SCOPED_TOKEN", "scoped-token")
    monkeypatch.setenv("JIRA_CLIENT_SECRET", "client-secret")


def conn(fake: FakeJira, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "jira-main",
        "integration": "jira",
        "url": fake.url,
        "email": "engine@example.com",
        "api_token": "env:JIRA_TOKEN",
    }
    base.update(extra)
    return base


def scoped(fake: FakeJira, **extra: Any) -> dict[str, Any]:
    return conn(
        fake, auth="scoped", api_token="env:JIRA_SCOPED_TOKEN", gateway_url=fake.url, **extra
    )


def oauth(fake: FakeJira, **extra: Any) -> dict[str, Any]:
    settings = conn(
        fake,
        auth="oauth",
        client_id="client-1",
        client_secret="env:JIRA_CLIENT_SECRET",
        gateway_url=fake.url,
        token_url=f"{fake.url}/oauth/token",
        **extra,
    )
    del settings["email"], settings["api_token"]
    return settings


@pytest.fixture
def tp(fake: FakeJira) -> Iterator[Toolpass]:
    with Toolpass([conn(fake)]) as engine:
        yield engine


def check(tp: Toolpass, user: str, action: str, resource: str, **kw: Any) -> Any:
    return tp.check(user, "jira-main", action, resource, **kw)


# --- searches ----------------------------------------------------------------------------
def test_a_project_search_needs_a_project_without_security_levels(
    tp: Toolpass, fake: FakeJira
) -> None:
    """A search bounded to a project returns what the agent's account sees there, issues
    under security levels included: allowed only where the project has no issue security
    scheme (or the search says level IS EMPTY, which the hook asks as project:KEY)."""
    assert check(tp, "dana@example.com", "BROWSE_PROJECTS", "project:PAY").allowed
    d = check(tp, "dana@example.com", "BROWSE_PROJECTS", "search:PAY")
    assert d.decision == "deny", d.reason
    assert "issue security scheme" in d.reason
    assert check(tp, "dana@example.com", "BROWSE_PROJECTS", "search:OPS").allowed
    assert check(tp, "erin@example.com", "BROWSE_PROJECTS", "search:OPS").decision == "deny"
    assert check(tp, "dana@example.com", "EDIT_ISSUES", "search:OPS").decision == "unknown"
    [read] = fake.seen("GET", r".*/issuesecurityschemes/project")[-1:]
    assert read.arg("projectId") == fake.projects["OPS"]


def test_the_jira_library_cannot_search_a_secured_project(fake: FakeJira) -> None:
    """Through the request hook: the jira library's search of a project with security levels
    is refused before it leaves; narrowed with level IS EMPTY it goes through."""
    from toolpass import Session, Toolkit, intercept
    from toolpass.intercept import ActionRefused

    events: list[Any] = []
    with Toolpass([conn(fake)]) as engine:
        kit = Toolkit(permissions=engine, audit=[events.append])

        @kit.tool()
        def search(jql: str) -> int:
            client = jira_client(fake, basic_auth=("engine@example.com", "classic-token"))
            url = client._get_url("search/jql")
            return int(client._session.post(url, json={"jql": jql}).status_code)

        try:
            with Session("dana@example.com").active(), pytest.raises(ActionRefused) as info:
                search("project = PAY ORDER BY key")
        finally:
            intercept.uninstall()
    assert info.value.code == "not_authorized"
    assert fake.seen(None, r".*/rest/api/3/search.*") == []
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("BROWSE_PROJECTS", "search:PAY")


@pytest.mark.parametrize("own_tokens", ["unknown", "user"])
def test_the_jira_library_lists_and_looks_up_users_only_as_the_user_may(
    fake: FakeJira, own_tokens: str
) -> None:
    """Through the request hook (#19): a user look-up needs the user's own Browse users and
    groups (dana has none: refused before it leaves); a project list answers what the sending
    account sees, so it is unknown unless own_tokens: user; the agent's own account
    (myself) goes either way."""
    from toolpass import Session, Toolkit, intercept
    from toolpass.intercept import ActionRefused

    with Toolpass([conn(fake, own_tokens=own_tokens)]) as engine:
        kit = Toolkit(permissions=engine)

        @kit.tool()
        def call(what: str) -> str:
            client = jira_client(fake, basic_auth=("engine@example.com", "classic-token"))
            if what == "myself":
                return str(client.myself()["accountId"])
            if what == "users":
                return str(client.search_users(query="erin@example.com"))
            url = client._get_url("project/search")
            return str(client._session.get(url).status_code)

        def refused(what: str) -> str:
            with pytest.raises(ActionRefused) as info:
                call(what)
            return info.value.code

        try:
            with Session("dana@example.com").active():
                assert "engine-1" in call("myself")
                assert refused("users") == "not_authorized"
                if own_tokens == "user":
                    assert "200" in call("projects")
                    return
                assert refused("projects") == "authorization_error"
        finally:
            intercept.uninstall()
    assert fake.seen("GET", r".*/rest/api/3/project/search") == []
    looked_up = [r.arg("query") for r in fake.seen("GET", r".*/rest/api/3/user/search")]
    assert "erin@example.com" not in looked_up  # only the engine's look-up of dana went


# --- allow and deny ---------------------------------------------------------------------
def test_allow_asks_the_bulk_check_for_the_users_account_and_issue_id(
    tp: Toolpass, fake: FakeJira
) -> None:
    d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "allow", d.reason
    assert "acc-dana" in d.reason
    assert "PAY-123" in d.reason
    (sent,) = fake.seen("POST", CHECK)
    assert sent.json() == {
        "accountId": "acc-dana",
        "projectPermissions": [
            {"permissions": ["EDIT_ISSUES"], "issues": [int(fake.issues["PAY-123"].id)]}
        ],
    }
    assert sent.headers["authorization"].startswith("Basic ")
    (looked,) = fake.seen("GET", r"/rest/api/3/issue/PAY-123")
    assert looked.arg("fields") == "project"
    searches = fake.seen("GET", SEARCH)  # paged until an empty page
    assert [(r.arg("query"), r.arg("startAt")) for r in searches] == [
        ("dana@example.com", "0"),
        ("dana@example.com", "1"),
    ]


def test_deny_when_jira_lists_no_grant(tp: Toolpass) -> None:
    d = check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-123")
    assert d.decision == "deny", d.reason
    assert not d.allowed
    assert "does not grant" in d.reason


def test_issue_level_grants_are_per_issue(tp: Toolpass) -> None:
    assert check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-9").decision == "allow"
    assert check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-123").decision == "deny"


def test_project_resources_and_numeric_ids(tp: Toolpass, fake: FakeJira) -> None:
    assert check(tp, "dana@example.com", "BROWSE_PROJECTS", "project:PAY").allowed
    assert check(tp, "dana@example.com", "ADMINISTER_PROJECTS", "project:PAY").decision == "deny"
    assert check(tp, "erin@example.com", "ADMINISTER_PROJECTS", "project:PAY").allowed
    pid = fake.projects["PAY"]
    assert check(tp, "dana@example.com", "BROWSE_PROJECTS", f"project:{pid}").allowed
    iid = fake.issues["PAY-123"].id
    d = check(tp, "dana@example.com", "EDIT_ISSUES", f"issue:{iid}")
    assert d.allowed
    assert "PAY-123" in d.reason
    sent = fake.seen("POST", CHECK)[0].json()
    assert sent["projectPermissions"][0]["projects"] == [int(pid)]


def test_global_permissions_on_site(tp: Toolpass, fake: FakeJira) -> None:
    assert check(tp, "erin@example.com", "ADMINISTER", "site").allowed
    assert check(tp, "dana@example.com", "ADMINISTER", "site").decision == "deny"
    assert fake.seen("POST", CHECK)[-1].json() == {
        "accountId": "acc-dana",
        "globalPermissions": ["ADMINISTER"],
    }


@pytest.mark.parametrize(
    ("action", "resource", "text"),
    [
        ("ADMINISTER", "project:PAY", "global permission"),
        ("EDIT_ISSUES", "site", "issue:KEY-123"),
        ("EDIT_ISSUES", "issue:PAY", "issue:KEY-123"),
        ("EDIT_ISSUES", "issue:../../myself", "issue:KEY-123"),
        ("EDIT_ISSUES", "board:1", "issue:KEY-123"),
    ],
)
def test_malformed_resources_are_unknown_before_any_request(
    tp: Toolpass, fake: FakeJira, action: str, resource: str, text: str
) -> None:
    d = check(tp, "dana@example.com", action, resource)
    assert d.decision == "unknown"
    assert text in d.reason
    assert fake.seen("POST", CHECK) == []


def test_undeclared_actions_are_unknown(tp: Toolpass) -> None:
    d = check(tp, "dana@example.com", "TELEPORT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "no action" in d.reason


# --- 404: unknown by default, deny when the operator says so ------------------------------
def test_missing_issue_is_unknown_and_never_checked(tp: Toolpass, fake: FakeJira) -> None:
    d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-999")
    assert d.decision == "unknown"
    assert "404" in d.reason
    assert fake.seen("POST", CHECK) == []  # an invalid id would be silently ignored there


def test_issue_the_engine_cannot_browse_is_unknown(tp: Toolpass) -> None:
    d = check(tp, "erin@example.com", "EDIT_ISSUES", "issue:PAY-7")
    assert d.decision == "unknown"


def test_missing_project_is_unknown(tp: Toolpass) -> None:
    assert check(tp, "dana@example.com", "BROWSE_PROJECTS", "project:NOPE").decision == "unknown"


def test_not_found_deny_setting(fake: FakeJira) -> None:
    with Toolpass([conn(fake, not_found="deny")]) as tp:
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-999")
        assert d.decision == "deny"
        assert "404" in d.reason


# --- each kind of unknown -------------------------------------------------------------------
def test_rejected_credential_is_unknown(fake: FakeJira, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIRA_TOKEN", "wrong")
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "HTTP 401" in d.reason
    assert "rejected" in d.reason


def test_engine_without_administer_jira_gets_403_and_unknown(fake: FakeJira) -> None:
    fake.global_grants.discard(("engine-1", "ADMINISTER"))
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "HTTP 403" in d.reason
    assert "Administer Jira" in d.reason


def test_401_on_the_check_call_itself(tp: Toolpass, fake: FakeJira) -> None:
    fake.fail(401, path=CHECK, body=b"Client must be authenticated to access this resource.")
    d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "HTTP 401" in d.reason


def test_429_is_unknown_with_retry_after_and_not_cached(tp: Toolpass, fake: FakeJira) -> None:
    fake.fail(429, retry_after=30, path=CHECK, body={"message": "Rate limit exceeded"})
    d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "retry after 30" in d.reason
    again = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert again.decision == "allow"
    assert not again.cached


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_unknown(tp: Toolpass, fake: FakeJira, status: int) -> None:
    fake.fail(status, path=CHECK, body={"errorMessages": ["Internal server error"], "errors": {}})
    d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert f"HTTP {status}" in d.reason
    assert "Internal server error" in d.reason


def test_error_on_the_issue_lookup_is_unknown(tp: Toolpass, fake: FakeJira) -> None:
    fake.fail(503, path=r".*/issue/PAY-123")
    assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").decision == "unknown"


def test_bad_request_is_unknown(fake: FakeJira) -> None:
    users = {"mode": "users", "users": {"ghost@example.com": "acc-ghost"}}
    fake.add_user("acc-ghost", "ghost@example.com")
    with Toolpass([conn(fake, identity=users)]) as tp:
        fake.fail(400, path=CHECK, body={"errorMessages": ["Invalid account ID: acc-ghost"]})
        d = check(tp, "ghost@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "HTTP 400" in d.reason
    assert "Invalid account" in d.reason


def test_a_slow_answer_is_unknown_within_the_time_budget(fake: FakeJira) -> None:
    with Toolpass([conn(fake, timeout=0.3)]) as tp:
        fake.slow(1.0, path=CHECK)
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "0.3" in d.reason or "budget" in d.reason or "no answer" in d.reason


def test_a_non_json_answer_is_unknown(tp: Toolpass, fake: FakeJira) -> None:
    fake.not_json(path=CHECK)
    d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "not JSON" in d.reason


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"globalPermissions": []},
        {"projectPermissions": "all"},
        {"projectPermissions": [{"permission": "EDIT_ISSUES"}]},
        {"projectPermissions": [{"issues": [1]}]},
    ],
)
def test_malformed_grants_are_unknown(tp: Toolpass, fake: FakeJira, body: Any) -> None:
    fake.fail(200, path=CHECK, body=body)
    assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").decision == "unknown"


def test_malformed_global_answer_is_unknown(tp: Toolpass, fake: FakeJira) -> None:
    fake.fail(200, path=CHECK, body={"projectPermissions": []})
    assert check(tp, "erin@example.com", "ADMINISTER", "site").decision == "unknown"


# --- identity: Jira's own look-up --------------------------------------------------------------
def test_email_match_is_exact_and_case_insensitive(tp: Toolpass, fake: FakeJira) -> None:
    fake.add_user("acc-pat-au", "pat@example.com.au", "Pat Down Under")
    d = check(tp, "pat@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "no account" in d.reason
    assert len(fake.seen("GET", SEARCH)) >= 1  # the prefix match was returned, and refused
    # Jira stores Erin@Example.com; the application says erin@example.com
    assert check(tp, "erin@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed


def test_a_longer_address_never_shadows_the_exact_one(tp: Toolpass, fake: FakeJira) -> None:
    fake.add_user("acc-dana-au", "dana@example.com.au", "Dana Other")
    assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed


def test_unmapped_user_is_unknown(tp: Toolpass, fake: FakeJira) -> None:
    d = check(tp, "nobody@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "nobody@example.com" in d.reason
    assert fake.seen("POST", CHECK) == []


def test_ambiguous_user_is_unknown(tp: Toolpass, fake: FakeJira) -> None:
    fake.add_user("acc-twin-1", "twin@example.com", "Twin One")
    fake.add_user("acc-twin-2", "twin@example.com", "Twin Two", account_type="customer")
    d = check(tp, "twin@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "refusing to guess" in d.reason


def test_hidden_email_is_unknown(tp: Toolpass, fake: FakeJira) -> None:
    fake.add_user("acc-hank", "hank@example.com", "Hank Hidden", hidden_email=True)
    fake.grant("acc-hank", "EDIT_ISSUES", project="PAY")
    d = check(tp, "hank@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "hidden" in d.reason


def test_engine_without_browse_users_finds_no_one(fake: FakeJira) -> None:
    fake.global_grants.discard(("engine-1", "USER_PICKER"))
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "Browse users" in d.reason


def test_deactivated_account_is_denied(tp: Toolpass, fake: FakeJira) -> None:
    # Jira's search lists active accounts only: a deactivated one is then no one (unknown)
    assert check(tp, "olga@example.com", "EDIT_ISSUES", "issue:PAY-123").decision == "unknown"
    fake.search_inactive = True
    d = check(tp, "olga@example.com", "EDIT_ISSUES", "issue:PAY-123", fresh=True)
    assert d.decision == "deny"
    assert "deactivated" in d.reason
    assert fake.seen("POST", CHECK) == []


def test_search_errors_are_unknown(tp: Toolpass, fake: FakeJira) -> None:
    fake.fail(503, path=SEARCH)
    assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").decision == "unknown"
    fake.fail(200, path=SEARCH, body={"users": []})
    d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "not a list" in d.reason
    fake.fail(200, path=SEARCH, body=[{"emailAddress": "dana@example.com"}])
    assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").decision == "unknown"


def test_user_search_is_paged_until_exhausted(tp: Toolpass, fake: FakeJira) -> None:
    fake.page_cap = 20  # the server returns fewer than asked for: paging must go on
    del fake.users["acc-dana"]
    for n in range(45):
        fake.add_user(f"acc-x{n}", f"dana@example.com.x{n}", f"X {n}")
    fake.add_user("acc-dana", "dana@example.com", "Dana Scully")
    assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
    starts = [r.arg("startAt") for r in fake.seen("GET", SEARCH)]
    assert starts == ["0", "20", "40", "46"]


def test_more_candidates_than_jira_scans_is_unknown(tp: Toolpass, fake: FakeJira) -> None:
    for n in range(1001):
        fake.add_user(f"acc-y{n}", f"dana@example.com.y{n}", f"Y {n}")
    d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "1000" in d.reason


# --- identity: the shared modes --------------------------------------------------------------
def test_users_mapping_with_account_verification(fake: FakeJira) -> None:
    identity = {
        "mode": "users",
        "users": {
            "dana@example.com": "acc-dana",
            "olga@example.com": "acc-olga",
            "ghost@example.com": "acc-ghost",
        },
    }
    with Toolpass([conn(fake, identity=identity)]) as tp:
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        olga = check(tp, "olga@example.com", "EDIT_ISSUES", "issue:PAY-123")
        assert olga.decision == "deny"
        assert "deactivated" in olga.reason
        ghost = check(tp, "ghost@example.com", "EDIT_ISSUES", "issue:PAY-123")
        assert ghost.decision == "unknown"
        assert "no account acc-ghost" in ghost.reason
        # the account state is cached with the identity
        check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-9")
    assert [r.arg("accountId") for r in fake.seen("GET", r"/rest/api/3/user")] == [
        "acc-dana",
        "acc-olga",
        "acc-ghost",
    ]
    assert fake.seen("GET", SEARCH) == []


def test_verify_account_off_is_unknown_rather_than_assumed_active(fake: FakeJira) -> None:
    identity = {"mode": "users", "users": {"dana@example.com": "acc-dana"}}
    with Toolpass([conn(fake, identity=identity, verify_account=False)]) as tp:
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "verify_account" in d.reason
    assert fake.seen("GET", r"/rest/api/3/user") == []


@pytest.mark.parametrize("verify", [True, False])
def test_a_deactivated_account_gets_nothing_its_groups_still_hold(
    fake: FakeJira, verify: bool
) -> None:
    """Deactivating an account leaves its groups and roles in place: whatever the bulk check
    still reports, the account is refused, in every identity mode."""
    fake.state_blind = True
    identity = {"mode": "users", "users": {"olga@example.com": "acc-olga"}}
    with Toolpass([conn(fake, identity=identity, verify_account=verify)]) as tp:
        d = check(tp, "olga@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert not d.allowed
    assert d.decision == ("deny" if verify else "unknown"), d.reason


def test_fresh_reads_the_account_state_again(fake: FakeJira) -> None:
    fake.state_blind = True
    identity = {"mode": "users", "users": {"dana@example.com": "acc-dana"}}
    with Toolpass([conn(fake, identity=identity)]) as tp:
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        fake.users["acc-dana"].active = False  # deactivated by an administrator
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123", fresh=True)
    assert d.decision == "deny", d.reason
    assert "deactivated" in d.reason


def test_template_mode_limited_to_domains(fake: FakeJira) -> None:
    identity = {"mode": "template", "template": "acc-{local}", "domains": ["example.com"]}
    with Toolpass([conn(fake, identity=identity)]) as tp:
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        other = check(tp, "dana@elsewhere.org", "EDIT_ISSUES", "issue:PAY-123")
        assert other.decision == "unknown"
        assert "domain" in other.reason


def test_template_mapping_to_a_non_account_id_is_unknown(fake: FakeJira) -> None:
    identity = {"mode": "template", "template": "{email}", "domains": ["example.com"]}
    with Toolpass([conn(fake, identity=identity)]) as tp:
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "not an Atlassian accountId" in d.reason


def test_mapping_file_mode_rereads_the_file(fake: FakeJira, tmp_path: Path) -> None:
    path = tmp_path / "people.json"
    path.write_text(json.dumps({"dana@example.com": "acc-dana"}))
    identity = {"mode": "file", "file": str(path)}
    with Toolpass([conn(fake, identity=identity)]) as tp:
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        path.write_text(json.dumps({"dana@example.com": "acc-erin", "x@example.com": "acc-x"}))
        d = check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-123")
        assert d.allowed
        assert "acc-erin" in d.reason


def test_http_identity_service_mode(fake: FakeJira) -> None:
    with FakeServer() as service:

        @service.route("GET", "/who")
        def who(request: Request) -> Reply | dict[str, Any]:
            if request.arg("system") != "jira" or request.arg("connection") != "jira-main":
                return Reply(400, {"message": "bad"})
            found = {"dana@example.com": "acc-dana"}.get(request.arg("email") or "")
            return {"user": found} if found else Reply(404, {"user": None})

        identity = {"mode": "http", "url": f"{service.url}/who"}
        with Toolpass([conn(fake, identity=identity)]) as tp:
            assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
            assert check(tp, "x@example.com", "EDIT_ISSUES", "issue:PAY-123").decision == "unknown"


def test_callable_mode(fake: FakeJira) -> None:
    def resolve(email: str) -> str | list[str] | None:
        return {"dana@example.com": "acc-dana", "twin@example.com": ["a", "b"]}.get(email)

    with Toolpass([conn(fake, identity=resolve)]) as tp:
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        assert check(tp, "twin@example.com", "EDIT_ISSUES", "issue:PAY-123").decision == "unknown"
        assert check(tp, "none@example.com", "EDIT_ISSUES", "issue:PAY-123").decision == "unknown"


# --- authentication modes -------------------------------------------------------------------
def test_basic_auth_talks_to_the_site(tp: Toolpass, fake: FakeJira) -> None:
    assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
    assert all(not r.path.startswith("/ex/") for r in fake.requests)
    assert fake.seen("GET", "/_edge/tenant_info") == []


def test_scoped_token_uses_the_gateway_and_discovers_the_cloud_id(fake: FakeJira) -> None:
    with Toolpass([scoped(fake)]) as tp:
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        assert check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-9").allowed
    assert len(fake.seen("GET", "/_edge/tenant_info")) == 1
    (sent, _) = fake.seen("POST", CHECK)
    assert sent.path == f"/ex/jira/{fake.cloud_id}/rest/api/3/permissions/check"


def test_scoped_token_with_a_given_cloud_id(fake: FakeJira) -> None:
    with Toolpass([scoped(fake, cloud_id=fake.cloud_id)]) as tp:
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
    assert fake.seen("GET", "/_edge/tenant_info") == []


def test_scoped_token_against_the_site_is_rejected(fake: FakeJira) -> None:
    settings = conn(fake, api_token="env:JIRA_SCOPED_TOKEN")  # auth basic: the site URL
    with Toolpass([settings]) as tp:
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "HTTP 401" in d.reason


def test_wrong_cloud_id_is_unknown(fake: FakeJira) -> None:
    with Toolpass([scoped(fake, cloud_id="0000-not-this-site")]) as tp:
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").decision == "unknown"


def test_broken_tenant_info_is_unknown(fake: FakeJira) -> None:
    fake.fail(200, path="/_edge/tenant_info", body={"cloudId": "../../evil"})
    with Toolpass([scoped(fake)]) as tp:
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "cloudId" in d.reason


def test_oauth_client_credentials_token_is_cached(fake: FakeJira) -> None:
    with Toolpass([oauth(fake, cloud_id=fake.cloud_id)]) as tp:
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        assert check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-9").allowed
    (token,) = fake.seen("POST", "/oauth/token")
    assert token.json() == {
        "grant_type": "client_credentials",
        "client_id": "client-1",
        "client_secret": "client-secret",
    }
    for sent in fake.seen("POST", CHECK):
        assert sent.headers["authorization"] == "Bearer oauth-token-1"
        assert sent.path.startswith(f"/ex/jira/{fake.cloud_id}/")


def test_oauth_token_is_refreshed_before_it_expires(fake: FakeJira) -> None:
    fake.oauth_clients["client-1"].lifetime = 100  # refreshed a tenth early: after 90 s
    now = [1000.0]
    with Toolpass([oauth(fake, cloud_id=fake.cloud_id)]) as tp:
        tp.integration("jira-main").clock = lambda: now[0]
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        now[0] += 89.9
        assert check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-9").allowed
        now[0] += 0.2
        assert check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-9", fresh=True).allowed
    assert len(fake.seen("POST", "/oauth/token")) == 2
    tokens = [r.headers["authorization"] for r in fake.seen("POST", CHECK)]
    assert tokens == ["Bearer oauth-token-1", "Bearer oauth-token-1", "Bearer oauth-token-2"]


def test_oauth_revoked_token_is_replaced_once(fake: FakeJira) -> None:
    with Toolpass([oauth(fake, cloud_id=fake.cloud_id)]) as tp:
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        fake.access_tokens.clear()  # revoked
        assert check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-9").allowed
    assert len(fake.seen("POST", "/oauth/token")) == 2


def test_oauth_bad_client_secret_is_unknown(
    fake: FakeJira, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JIRA_CLIENT_SECRET", "wrong")
    with Toolpass([oauth(fake, cloud_id=fake.cloud_id)]) as tp:
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "OAuth" in d.reason
    assert "access_denied" in d.reason


def test_oauth_token_endpoint_without_a_token_is_unknown(fake: FakeJira) -> None:
    fake.fail(200, path="/oauth/token", body={"token_type": "Bearer"})
    with Toolpass([oauth(fake, cloud_id=fake.cloud_id)]) as tp:
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "access_token" in d.reason


def test_missing_secret_is_unknown_not_a_crash(
    fake: FakeJira, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JIRA_TOKEN")
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert d.decision == "unknown"
    assert "JIRA_TOKEN" in d.reason
    assert "classic-token" not in d.reason


# --- caching ---------------------------------------------------------------------------------
def test_decisions_identity_and_ids_are_cached(tp: Toolpass, fake: FakeJira) -> None:
    first = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    second = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
    assert first.allowed
    assert second.allowed
    assert second.cached
    assert len(fake.seen("POST", CHECK)) == 1
    fresh = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123", fresh=True)
    assert fresh.allowed
    assert not fresh.cached
    assert len(fake.seen("POST", CHECK)) == 2
    assert len(fake.seen("GET", SEARCH)) == 4  # fresh looks the user up anew too
    assert len(fake.seen("GET", r".*/issue/PAY-123")) == 2  # and the key's id
    denied = check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-123")
    assert denied.decision == "deny"
    assert check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-123").cached


def test_a_grant_change_shows_after_fresh(tp: Toolpass, fake: FakeJira) -> None:
    assert check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-123").decision == "deny"
    fake.grant("acc-dana", "DELETE_ISSUES", project="PAY")
    assert check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-123").decision == "deny"
    assert check(tp, "dana@example.com", "DELETE_ISSUES", "issue:PAY-123", fresh=True).allowed


def test_resource_cache_can_be_turned_off(fake: FakeJira) -> None:
    with Toolpass([conn(fake, resource_cache_ttl=0)]) as tp:
        check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
        check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123", fresh=True)
    assert len(fake.seen("GET", r".*/issue/PAY-123")) == 2


def test_zero_decision_ttl(fake: FakeJira) -> None:
    with Toolpass([conn(fake, cache_ttl_allow=0)]) as tp:
        check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
        assert not check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").cached
    assert len(fake.seen("POST", CHECK)) == 2


async def test_async_check(tp: Toolpass) -> None:
    d = await tp.acheck("dana@example.com", "jira-main", "EDIT_ISSUES", "issue:PAY-123")
    assert d.allowed


# --- network settings ------------------------------------------------------------------------
def test_tls_with_a_private_ca(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    with FakeJira(tls=(certs.cert_file, certs.key_file)) as fake:
        populate(fake)
        with Toolpass([conn(fake, ca_file=certs.ca_file)]) as tp:
            assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        with Toolpass([conn(fake)]) as tp:  # the system's roots do not trust it
            d = check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123")
            assert d.decision == "unknown"
            assert "TLS" in d.reason


def test_through_a_proxy(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    with (
        FakeJira(tls=(certs.cert_file, certs.key_file)) as fake,
        FakeProxy() as proxy,
    ):
        populate(fake)
        settings = conn(fake, ca_file=certs.ca_file, proxy_url=proxy.url)
        with Toolpass([settings]) as tp:
            assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        assert f"CONNECT 127.0.0.1:{fake.port}" in proxy.seen


# --- the probe -------------------------------------------------------------------------------
def test_probe_ok(tp: Toolpass, fake: FakeJira) -> None:
    result = tp.probe()["jira-main"]
    assert result.ok, result.detail
    assert "engine-1" in result.detail
    assert "Administer Jira" in result.detail


def test_probe_reports_a_missing_administer_jira(fake: FakeJira) -> None:
    fake.global_grants.discard(("engine-1", "ADMINISTER"))
    with Toolpass([conn(fake)]) as tp:
        result = tp.probe()["jira-main"]
    assert not result.ok
    assert "Administer Jira" in result.detail


def test_probe_reports_a_missing_browse_users(fake: FakeJira) -> None:
    fake.global_grants.discard(("engine-1", "USER_PICKER"))
    with Toolpass([conn(fake)]) as tp:
        result = tp.probe()["jira-main"]
    assert not result.ok
    assert "Browse users" in result.detail


def test_probe_with_a_rejected_credential(fake: FakeJira, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIRA_TOKEN", "wrong")
    with Toolpass([conn(fake)]) as tp:
        result = tp.probe()["jira-main"]
    assert not result.ok
    assert "HTTP 401" in result.detail


@pytest.mark.parametrize("mode", ["scoped", "oauth"])
def test_probe_through_the_gateway(fake: FakeJira, mode: str) -> None:
    settings = scoped(fake) if mode == "scoped" else oauth(fake)
    with Toolpass([settings]) as tp:
        result = tp.probe()["jira-main"]
    assert result.ok, result.detail
    assert f"/ex/jira/{fake.cloud_id}" in result.detail


# --- configuration ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"auth": "oauth"}, "client_id"),
        ({"auth": "oauth", "client_id": "c"}, "client_secret"),
        ({"auth": "magic"}, "auth"),
        ({"gateway_url": "ftp://gw"}, "gateway_url"),
        ({"token_url": "http://auth.example.com/token"}, "token_url"),
        ({"cloud_id": "../x"}, "cloud_id"),
        ({"not_found": "allow"}, "not_found"),
        ({"api_token": "classic-token"}, "api_token"),
    ],
)
def test_configuration_errors_name_the_key(extra: dict[str, Any], key: str) -> None:
    settings = {
        "id": "j",
        "integration": "jira",
        "url": "https://example.atlassian.net",
        "email": "engine@example.com",
        "api_token": "env:JIRA_TOKEN",
        **extra,
    }
    with pytest.raises(ConfigError, match=key):
        Toolpass([settings])


def test_basic_auth_needs_email() -> None:
    settings = {"id": "j", "integration": "jira", "url": "https://x.atlassian.net"}
    with pytest.raises(ConfigError, match="email"):
        Toolpass([{**settings, "api_token": "env:JIRA_TOKEN"}])


def test_yaml_configuration(fake: FakeJira, tmp_path: Path) -> None:
    path = tmp_path / "toolpass.yaml"
    path.write_text(
        "connections:\n"
        "  - id: jira-main\n"
        "    integration: jira\n"
        f"    url: {fake.url}\n"
        "    auth: scoped\n"
        "    email: engine@example.com\n"
        "    api_token: env:JIRA_SCOPED_TOKEN\n"
        f"    gateway_url: {fake.url}\n"
        "    not_found: deny\n"
        "    identity:\n"
        "      mode: lookup\n"
        "      cache_ttl: 60\n"
    )
    with Toolpass.from_config(path) as tp:
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-404").decision == "deny"


def test_catalog_declares_every_documented_permission() -> None:
    cls = get("jira")
    assert cls is Jira
    names = {a.name for a in cls.actions}
    assert names == PROJECT_PERMISSIONS | GLOBAL_PERMISSIONS | {"JIRA_ACCESS", "SENDER_LISTS"}
    for action in cls.actions:
        assert action.description
        assert action.requires
        assert action.effect in ("read", "write", "destructive")
    effects = {a.name: a.effect for a in cls.actions}
    assert effects["BROWSE_PROJECTS"] == "read"
    assert effects["EDIT_ISSUES"] == "write"
    assert effects["DELETE_ISSUES"] == "destructive"
    keys = {k.name: k for k in cls.keys}
    assert keys["api_token"].secret
    assert keys["client_secret"].secret
    assert not keys["email"].secret
    assert keys["auth"].choices == ("basic", "scoped", "oauth")
    assert cls.identity_modes == ("lookup",)


# --- the fake satisfies the real client library (pycontribs ``jira``) -------------------------
def jira_client(fake: FakeJira, **kw: Any) -> Any:
    jira = pytest.importorskip("jira")  # not in core's test group yet: skipped when absent
    options = {"rest_api_version": "3"}
    return jira.JIRA(server=kw.pop("server", fake.url), options=options, max_retries=0, **kw)


def test_the_jira_library_reads_the_fake(fake: FakeJira) -> None:
    client = jira_client(fake, basic_auth=("engine@example.com", "classic-token"))
    assert client._is_cloud  # from serverInfo's deploymentType
    assert client.myself()["accountId"] == "engine-1"
    found = client.search_users(query="dana@example.com")
    assert [(u.accountId, u.emailAddress, u.active) for u in found] == [
        ("acc-dana", "dana@example.com", True)
    ]
    issue = client.issue("PAY-123", fields="project")
    assert (issue.id, issue.key, issue.fields.project.key) == (
        fake.issues["PAY-123"].id,
        "PAY-123",
        "PAY",
    )
    assert client.project("PAY").id == fake.projects["PAY"]
    mine = client.my_permissions(permissions="ADMINISTER,USER_PICKER")["permissions"]
    assert mine["ADMINISTER"]["havePermission"] is True
    assert client.user("acc-olga").active is False
    answer = client._session.post(
        client._get_url("permissions/check"),
        json={
            "accountId": "acc-dana",
            "projectPermissions": [{"permissions": ["EDIT_ISSUES"], "issues": [int(issue.id)]}],
        },
    ).json()
    assert answer == {
        "globalPermissions": [],
        "projectPermissions": [
            {"permission": "EDIT_ISSUES", "issues": [int(issue.id)], "projects": []}
        ],
    }


def test_the_jira_library_pages_user_search(fake: FakeJira) -> None:
    fake.page_cap = 20
    for n in range(45):
        fake.add_user(f"acc-x{n}", f"dana@example.com.x{n}", f"X {n}")
    client = jira_client(fake, basic_auth=("engine@example.com", "classic-token"))
    # user/search answers a bare array (no total): the library cannot page it by itself,
    # so walk startAt as the integration does, until an empty page.
    everyone: list[Any] = []
    while page := client.search_users(query="dana@example.com", startAt=len(everyone)):
        assert len(page) <= 20
        everyone.extend(page)
    assert len(everyone) == 46
    assert "acc-dana" in {u.accountId for u in everyone}


def test_the_jira_library_sees_jiras_errors(fake: FakeJira) -> None:
    jira = pytest.importorskip("jira")
    client = jira_client(fake, basic_auth=("engine@example.com", "classic-token"))
    with pytest.raises(jira.JIRAError) as missing:
        client.issue("PAY-999")
    assert missing.value.status_code == 404
    assert "Issue does not exist" in missing.value.text
    fake.global_grants.discard(("engine-1", "ADMINISTER"))
    with pytest.raises(jira.JIRAError) as refused:
        client._session.post(
            client._get_url("permissions/check"),
            json={"accountId": "acc-dana", "globalPermissions": ["ADMINISTER"]},
        )
    assert refused.value.status_code == 403
    assert "Administer Jira" in refused.value.text
    with pytest.raises(jira.JIRAError) as rejected:
        jira_client(fake, basic_auth=("engine@example.com", "wrong"))
    assert rejected.value.status_code == 401


def test_the_jira_library_through_the_gateway(fake: FakeJira) -> None:
    gateway = f"{fake.url}/ex/jira/{fake.cloud_id}"
    client = jira_client(fake, server=gateway, basic_auth=("engine@example.com", "scoped-token"))
    assert client.myself()["accountId"] == "engine-1"
    with Toolpass([oauth(fake, cloud_id=fake.cloud_id)]) as tp:  # obtains a Bearer token
        assert check(tp, "dana@example.com", "EDIT_ISSUES", "issue:PAY-123").allowed
    bearer = next(iter(fake.access_tokens))
    client = jira_client(fake, server=gateway, token_auth=bearer)
    assert client.issue("PAY-123", fields="project").key == "PAY-123"


# --- JIRA_ACCESS: the route table's action for what any account may do -----------------------
def test_jira_access_allows_an_active_account_and_denies_a_deactivated_one(
    tp: Toolpass, fake: FakeJira
) -> None:
    d = check(tp, "dana@example.com", "JIRA_ACCESS", "site")
    assert d.decision == "allow"
    assert "active" in d.reason
    assert fake.seen("POST", CHECK) == []
    assert check(tp, "dana@example.com", "JIRA_ACCESS", "project:PAY").decision == "unknown"
    fake.search_inactive = True
    assert check(tp, "olga@example.com", "JIRA_ACCESS", "site").decision == "deny"


# --- the shared conformance suite ----------------------------------------------------------
class TestJiraConformance(IntegrationConformance):
    integration = "jira"
    user, action, resource = "dana@example.com", "EDIT_ISSUES", "issue:PAY-123"
    system_user, template = "acc-dana", "acc-{local}"
    credential = "classic-token"

    @pytest.fixture
    def api(self, fake: FakeJira) -> FakeJira:
        return fake

    def connection(self, api: FakeJira, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    unsupported: ClassVar[dict[str, str]] = {
        "make_read_only": "Jira's read-only states (archived projects, workflow status "
        "properties) are Limits toolpass does not read",
    }

    def disable_account(self, api: FakeJira) -> None:
        api.users["acc-dana"].active = False
        api.state_blind = True  # the bulk check alone would still grant it

    def bind_admins(self, api: FakeJira) -> None:
        api.grant_global("acc-dana", "ADMINISTER")
        api.restrict("PAY-123", "acc-erin")  # a security level binds administrators too

    def revoke(self, api: FakeJira) -> None:
        api.project_grants.discard(("acc-dana", "EDIT_ISSUES", "PAY"))


def test_a_token_the_engine_was_issued_is_kept_out_of_reasons(fake: FakeJira) -> None:
    """The kit keeps ``issued`` (an OAuth access token, a Vault client token) among the
    connection's secrets, for every system that holds one."""
    with Toolpass([conn(fake)]) as tp:
        site = tp.integration("jira-main")
        assert "minted-token" not in list(site.secret_values())
        site.issued = ("minted-token", 0.0)
        assert "minted-token" in list(site.secret_values())
        assert "classic-token" in list(site.secret_values())
