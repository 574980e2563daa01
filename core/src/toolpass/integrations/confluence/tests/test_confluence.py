"""Confluence Cloud: the content permission check, space permissions and site access, asked
live against a fake site on 127.0.0.1; atlassian-python-api reads the same fake."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.confluence import FakeConfluence
from pytest_toolpass import IntegrationConformance

from toolpass.engine import ConfigError, Toolpass
from toolpass.integrations import get

CHECK = r".*/wiki/rest/api/content/\d+/permission/check"
DANA, RORY = "dana@example.com", "rory@example.com"


def populate(fake: FakeConfluence) -> FakeConfluence:
    fake.add_engine()
    fake.add_user("acc-dana", DANA, "g-dev")
    fake.add_user("acc-rory", RORY)
    fake.add_space("DEV")
    fake.add_space("OPS")
    fake.add_page("DEV", "Runbook")  # id 65542
    fake.add_page("OPS", "Secrets")  # id 65543
    fake.grant("DEV", "g-dev", "read", "space")
    fake.grant("DEV", "g-dev", "create", "page")
    fake.grant("DEV", "acc-dana", "create", "comment")
    fake.grant("DEV", "acc-rory", "read", "space")
    fake.grant("DEV", "engine-1", "read", "space")
    return fake


@pytest.fixture
def fake() -> Iterator[FakeConfluence]:
    with FakeConfluence() as server:
        yield populate(server)


@pytest.fixture(autouse=True)
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFLUENCE_TOKEN", "classic-token")
    monkeypatch.setenv("CONFLUENCE_SCOPED_TOKEN", "scoped-token")
    monkeypatch.setenv("CONFLUENCE_CLIENT_SECRET", "client-secret")


def conn(fake: FakeConfluence, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "wiki",
        "integration": "confluence",
        "url": fake.url,
        "email": "engine@example.com",
        "api_token": "env:CONFLUENCE_TOKEN",
    }
    base.update(extra)
    return base


@pytest.fixture
def tp(fake: FakeConfluence) -> Iterator[Toolpass]:
    with Toolpass([conn(fake)]) as engine:
        yield engine


def page(fake: FakeConfluence, title: str) -> str:
    return next(p.id for p in fake.pages.values() if p.title == title)


def check(tp: Toolpass, user: str, action: str, resource: str, **kw: Any) -> Any:
    return tp.check(user, "wiki", action, resource, **kw)


# --- the content permission check --------------------------------------------------------
def test_read_asks_the_content_check_for_the_users_account(
    tp: Toolpass, fake: FakeConfluence
) -> None:
    runbook = page(fake, "Runbook")
    d = check(tp, DANA, "read", f"page:{runbook}")
    assert d.decision == "allow", d.reason
    (sent,) = fake.seen("POST", CHECK)
    assert sent.path == f"/wiki/rest/api/content/{runbook}/permission/check"
    assert sent.json() == {
        "subject": {"type": "user", "identifier": "acc-dana"},
        "operation": "read",
    }
    assert sent.headers["x-atlassian-token"] == "no-check"
    assert sent.headers["authorization"].startswith("Basic ")
    assert fake.seen("GET", r"/rest/api/3/user/search")[0].arg("query") == DANA


def test_deny_carries_confluences_reason(tp: Toolpass, fake: FakeConfluence) -> None:
    d = check(tp, RORY, "update", f"content:{page(fake, 'Runbook')}")
    assert d.decision == "deny", d.reason
    assert "User does not have permission to the space" in d.reason
    d = check(tp, DANA, "read", f"page:{page(fake, 'Secrets')}")
    assert d.decision == "deny"


def test_update_and_delete_are_separate_operations(tp: Toolpass, fake: FakeConfluence) -> None:
    runbook = page(fake, "Runbook")
    assert check(tp, DANA, "update", f"page:{runbook}").decision == "allow"
    assert check(tp, DANA, "delete", f"page:{runbook}").decision == "deny"
    ops = [r.json()["operation"] for r in fake.seen("POST", CHECK)]
    assert ops == ["update", "delete"]


def test_a_content_restriction_denies(tp: Toolpass, fake: FakeConfluence) -> None:
    runbook = page(fake, "Runbook")
    fake.restrict(runbook, "read", "acc-rory")
    d = check(tp, DANA, "read", f"page:{runbook}")
    assert d.decision == "deny"
    assert "permission to the content" in d.reason


def test_a_user_who_cannot_use_confluence_is_denied(tp: Toolpass, fake: FakeConfluence) -> None:
    fake.users["acc-dana"].can_use = False
    d = check(tp, DANA, "read", f"page:{page(fake, 'Runbook')}")
    assert d.decision == "deny"
    assert "not allowed to use Confluence" in d.reason


def test_attachment_ids_lose_their_prefix(tp: Toolpass, fake: FakeConfluence) -> None:
    runbook = page(fake, "Runbook")
    assert check(tp, DANA, "read", f"attachment:att{runbook}").decision == "allow"
    assert fake.seen("POST", CHECK)[0].path.endswith(f"/content/{runbook}/permission/check")


def test_missing_content_is_unknown_or_denied_by_setting(fake: FakeConfluence) -> None:
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, DANA, "read", "page:999")
    assert d.decision == "unknown"
    assert "404" in d.reason
    with Toolpass([conn(fake, not_found="deny")]) as tp:
        assert check(tp, DANA, "read", "page:999").decision == "deny"


def test_an_engine_that_is_not_an_administrator_is_unknown(fake: FakeConfluence) -> None:
    fake.admins.clear()
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, DANA, "read", f"page:{page(fake, 'Runbook')}")
    assert d.decision == "unknown"
    assert "HTTP 403" in d.reason
    assert "Only Confluence admins" in d.reason


@pytest.mark.parametrize(
    "body", [{}, {"hasPermission": "yes"}, {"hasPermission": None, "errors": []}]
)
def test_a_malformed_answer_is_unknown(tp: Toolpass, fake: FakeConfluence, body: Any) -> None:
    fake.fail(200, body=body, path=CHECK)
    assert check(tp, DANA, "read", f"page:{page(fake, 'Runbook')}").decision == "unknown"


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("read", "page:DEV"),
        ("read", "space:DEV"),
        ("read", "site"),
        ("create_page", "site"),
        ("use", "page:1"),
        ("read", "page:1/../2"),
        ("nonsense", "page:1"),
    ],
)
def test_malformed_resources_are_unknown_before_any_request(
    tp: Toolpass, fake: FakeConfluence, action: str, resource: str
) -> None:
    assert check(tp, DANA, action, resource).decision == "unknown"
    assert fake.seen("POST", CHECK) == []


# --- space permissions -------------------------------------------------------------------
def test_create_page_through_a_group_grant(tp: Toolpass, fake: FakeConfluence) -> None:
    d = check(tp, DANA, "create_page", "space:DEV")
    assert d.decision == "allow", d.reason
    assert "g-dev" in d.reason
    assert fake.seen("GET", r"/wiki/api/v2/spaces")[0].arg("keys") == "DEV"
    assert fake.seen("GET", r"/wiki/rest/api/user/memberof")[0].arg("accountId") == "acc-dana"
    # the grants are read page by page (two a page in the fake), following _links.next
    assert check(tp, DANA, "comment", "space:DEV").decision == "allow"
    cursors = [r.arg("cursor") for r in fake.seen("GET", r"/wiki/api/v2/spaces/\d+/permissions")]
    assert cursors == [None, None, "2"]


def test_space_actions_deny_without_a_grant(tp: Toolpass, fake: FakeConfluence) -> None:
    assert check(tp, RORY, "create_page", "space:DEV").decision == "deny"
    assert check(tp, DANA, "administer_space", "space:DEV").decision == "deny"
    assert check(tp, DANA, "read_space", "space:OPS").decision == "deny"
    space_id = fake.spaces["DEV"].id
    assert check(tp, DANA, "read_space", f"space:{space_id}").decision == "allow"


def test_space_actions_need_site_access(tp: Toolpass, fake: FakeConfluence) -> None:
    fake.users["acc-dana"].can_use = False
    d = check(tp, DANA, "create_page", "space:DEV")
    assert d.decision == "deny"
    assert "no access to the Confluence site" in d.reason
    assert fake.seen("GET", r"/wiki/api/v2/spaces/\d+/permissions") == []


def test_a_grant_to_a_role_is_unknown_not_denied(tp: Toolpass, fake: FakeConfluence) -> None:
    fake.grant("OPS", "role-editor", "create", "page", kind="role")
    d = check(tp, DANA, "create_page", "space:OPS")
    assert d.decision == "unknown"
    assert "role" in d.reason


def test_comment_needs_read_on_the_page_and_the_space_grant(
    tp: Toolpass, fake: FakeConfluence
) -> None:
    runbook = page(fake, "Runbook")
    assert check(tp, DANA, "comment", f"page:{runbook}").decision == "allow"
    assert fake.seen("GET", rf"/wiki/rest/api/content/{runbook}")[0].arg("expand") == "space"
    assert check(tp, RORY, "comment", f"page:{runbook}").decision == "deny"
    d = check(tp, DANA, "comment", f"page:{page(fake, 'Secrets')}")
    assert d.decision == "deny"  # cannot read it: no space look-up needed


def test_attach_needs_update_on_the_page(tp: Toolpass, fake: FakeConfluence) -> None:
    runbook = page(fake, "Runbook")
    fake.grant("DEV", "acc-dana", "create", "attachment")
    assert check(tp, DANA, "attach", f"page:{runbook}").decision == "allow"
    assert [r.json()["operation"] for r in fake.seen("POST", CHECK)] == ["update"]


def test_missing_space_is_unknown(tp: Toolpass) -> None:
    d = check(tp, DANA, "create_page", "space:NOPE")
    assert d.decision == "unknown"
    assert "404" in d.reason


# --- site access and administration ------------------------------------------------------
def test_use_asks_site_access_by_email(tp: Toolpass, fake: FakeConfluence) -> None:
    assert check(tp, DANA, "use", "site").decision == "allow"
    (sent,) = fake.seen("POST", r"/wiki/api/v2/user/access/check-access-by-email")
    assert sent.json() == {"emails": [DANA]}
    fake.users["acc-rory"].can_use = False
    assert check(tp, RORY, "use", "site").decision == "deny"


def test_sender_lists_is_unknown_unless_own_tokens_then_site_access(fake: FakeConfluence) -> None:
    with Toolpass([conn(fake)]) as engine:
        d = check(engine, DANA, "sender_lists", "site")
        assert d.decision == "unknown"
        assert "own_tokens" in d.reason
    assert fake.requests == []
    fake.users["acc-rory"].can_use = False
    with Toolpass([conn(fake, own_tokens="user")]) as engine:
        assert check(engine, DANA, "sender_lists", "site").decision == "allow"
        assert check(engine, RORY, "sender_lists", "site").decision == "deny"


def test_administer_is_always_unknown(tp: Toolpass, fake: FakeConfluence) -> None:
    d = check(tp, DANA, "administer", "site")
    assert d.decision == "unknown"
    assert "administrator" in d.reason
    assert fake.requests == []


# --- identity ------------------------------------------------------------------------------
def test_email_lookup_is_exact(tp: Toolpass, fake: FakeConfluence) -> None:
    fake.add_user("acc-dana2", "dana@example.com.evil.test")
    assert check(tp, DANA, "read", f"page:{page(fake, 'Runbook')}").decision == "allow"
    d = check(tp, "dan@example.com", "read", f"page:{page(fake, 'Runbook')}")
    assert d.decision == "unknown"
    assert "no account" in d.reason


def test_ambiguous_email_is_unknown(tp: Toolpass, fake: FakeConfluence) -> None:
    fake.add_user("acc-dana-again", DANA)
    d = check(tp, DANA, "read", f"page:{page(fake, 'Runbook')}")
    assert d.decision == "unknown"


# --- authentication ------------------------------------------------------------------------
def test_scoped_token_uses_the_gateway_and_discovers_the_cloud_id(fake: FakeConfluence) -> None:
    settings = conn(fake, auth="scoped", api_token="env:CONFLUENCE_SCOPED_TOKEN")
    settings["gateway_url"] = fake.url
    with Toolpass([settings]) as tp:
        assert check(tp, DANA, "read", f"page:{page(fake, 'Runbook')}").decision == "allow"
    assert fake.seen("GET", "/_edge/tenant_info")
    (sent,) = fake.seen("POST", CHECK)
    assert sent.path.startswith(f"/ex/confluence/{fake.cloud_id}/wiki/")


def test_oauth_client_credentials(fake: FakeConfluence) -> None:
    settings = conn(
        fake,
        auth="oauth",
        client_id="client-1",
        client_secret="env:CONFLUENCE_CLIENT_SECRET",
        gateway_url=fake.url,
        token_url=f"{fake.url}/oauth/token",
        cloud_id=fake.cloud_id,
    )
    del settings["email"], settings["api_token"]
    with Toolpass([settings]) as tp:
        assert check(tp, DANA, "read", f"page:{page(fake, 'Runbook')}").decision == "allow"
        assert check(tp, DANA, "update", f"page:{page(fake, 'Runbook')}").decision == "allow"
    assert len(fake.seen("POST", "/oauth/token")) == 1
    assert fake.seen("POST", CHECK)[0].headers["authorization"] == "Bearer oauth-1"


def test_a_revoked_oauth_token_is_replaced_once(fake: FakeConfluence) -> None:
    settings = conn(
        fake,
        auth="oauth",
        client_id="client-1",
        client_secret="env:CONFLUENCE_CLIENT_SECRET",
        gateway_url=fake.url,
        token_url=f"{fake.url}/oauth/token",
        cloud_id=fake.cloud_id,
    )
    with Toolpass([settings]) as tp:
        assert check(tp, DANA, "read", f"page:{page(fake, 'Runbook')}").decision == "allow"
        fake.access_tokens.clear()
        d = check(tp, DANA, "update", f"page:{page(fake, 'Runbook')}")
    assert d.decision == "allow", d.reason
    assert len(fake.seen("POST", "/oauth/token")) == 2


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"auth": "oauth"}, "client_id"),
        ({"cloud_id": "bad id!"}, "cloud_id"),
        ({"resource_cache_ttl": -1}, "resource_cache_ttl"),
        ({"not_found": "maybe"}, "not_found"),
    ],
)
def test_configuration_errors_name_the_key(
    fake: FakeConfluence, extra: dict[str, Any], key: str
) -> None:
    with pytest.raises(ConfigError) as info:
        Toolpass([conn(fake, **extra)])
    assert key in str(info.value)


def test_probe_names_the_engine_and_its_administrator_permission(tp: Toolpass) -> None:
    (result,) = tp.probe().values()
    assert result.ok, result.detail
    assert "engine-1" in result.detail
    assert "with Confluence Administrator" in result.detail


def test_probe_reports_a_missing_administrator_permission(fake: FakeConfluence) -> None:
    fake.admins.clear()
    with Toolpass([conn(fake)]) as tp:
        (result,) = tp.probe().values()
    assert not result.ok
    assert "lacks Confluence Administrator" in result.detail


@pytest.mark.parametrize("action", ["update", "comment", "attach"])
def test_an_archived_page_takes_no_change(tp: Toolpass, fake: FakeConfluence, action: str) -> None:
    fake.grant("DEV", "acc-dana", "create", "attachment")
    runbook = page(fake, "Runbook")
    assert check(tp, DANA, action, f"page:{runbook}").allowed
    fake.pages[runbook].status = "archived"
    d = check(tp, DANA, action, f"page:{runbook}", fresh=True)
    assert d.decision == "deny", d.reason
    assert "archived" in d.reason
    assert check(tp, DANA, "read", f"page:{runbook}", fresh=True).allowed


@pytest.mark.parametrize("status", ["current", "draft", "trashed"])
def test_only_an_archived_page_refuses_an_update(
    tp: Toolpass, fake: FakeConfluence, status: str
) -> None:
    runbook = page(fake, "Runbook")
    fake.pages[runbook].status = status
    assert check(tp, DANA, "update", f"page:{runbook}").allowed


@pytest.mark.parametrize("status", ["inactive", "closed", "unknown"])
@pytest.mark.parametrize(
    ("action", "resource"), [("read", "page:65542"), ("create_page", "space:DEV")]
)
def test_an_account_that_is_not_active_is_denied(
    tp: Toolpass, fake: FakeConfluence, status: str, action: str, resource: str
) -> None:
    fake.users["acc-dana"].status = status
    d = check(tp, DANA, action, resource)
    assert d.decision == "deny", d.reason
    assert status in d.reason


def test_an_account_without_a_status_is_unknown(tp: Toolpass, fake: FakeConfluence) -> None:
    fake.users["acc-dana"].status = ""
    assert check(tp, DANA, "read", "page:65542").decision == "unknown"


def test_lookups_are_kept_and_fresh_reads_them_again(fake: FakeConfluence) -> None:
    with Toolpass([conn(fake, cache_ttl_allow=0, cache_ttl_deny=0)]) as tp:
        for _ in range(2):
            assert check(tp, DANA, "create_page", "space:DEV").decision == "allow"
        assert len(fake.seen("GET", r"/wiki/api/v2/spaces")) == 1  # the key stays resolved
        assert len(fake.seen("GET", r"/wiki/rest/api/user/memberof")) == 1
        assert len(fake.seen("POST", r"/wiki/api/v2/users-bulk")) == 1
        assert check(tp, DANA, "create_page", "space:DEV", fresh=True).decision == "allow"
    assert len(fake.seen("GET", r"/wiki/rest/api/user/memberof")) == 2
    assert len(fake.seen("POST", r"/wiki/api/v2/users-bulk")) == 2


def test_catalog_names_the_credential() -> None:
    cls = get("confluence")
    email = next(k for k in cls.keys if k.name == "email")
    assert "Confluence Administrator" in email.description
    assert "api-tokens" in email.description


# --- the vendor's client ---------------------------------------------------------------
def test_atlassian_python_api_reads_and_edits_the_fake(fake: FakeConfluence) -> None:
    atlassian = pytest.importorskip("atlassian")
    runbook = page(fake, "Runbook")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = atlassian.Confluence(
            url=fake.url + "/wiki", username="engine@example.com", password="classic-token"
        )
        got = client.get_page_by_id(runbook, expand="space,body.storage")
        assert got["title"] == "Runbook"
        assert got["space"]["key"] == "DEV"
        client.update_page(runbook, "Runbook v2", "<p>new</p>")
    assert fake.pages[runbook].title == "Runbook v2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(atlassian.errors.ApiError, match="no content"):  # the fake's 404
            client.get_page_by_id("999")


# --- the conformance suite ----------------------------------------------------------------
class TestConfluenceConformance(IntegrationConformance):
    integration = "confluence"
    user, action, resource = DANA, "read", "page:65542"
    system_user, template = "acc-dana", "acc-{local}"
    credential = "classic-token"

    @pytest.fixture
    def api(self, fake: FakeConfluence) -> FakeConfluence:
        assert page(fake, "Runbook") == "65542"
        return fake

    def connection(self, api: FakeConfluence, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    def disable_account(self, api: FakeConfluence) -> None:
        api.users["acc-dana"].status = "inactive"

    def make_read_only(self, api: FakeConfluence) -> str:
        api.pages["65542"].status = "archived"
        return "update"

    def bind_admins(self, api: FakeConfluence) -> None:
        api.admins.add("acc-dana")  # a Confluence administrator
        api.users["acc-dana"].status = "closed"  # a closed account binds administrators too

    def revoke(self, api: FakeConfluence) -> None:
        api.users["acc-dana"].groups.remove("g-dev")
