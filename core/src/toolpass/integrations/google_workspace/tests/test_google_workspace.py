"""The Google Workspace integration, through ``Toolpass``, against a fake Workspace (token
endpoint, Admin SDK Directory, Drive, Calendar, Gmail) on 127.0.0.1; and the request hook
under google-api-python-client (httplib2, http.client)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.gcp import KEY_ID, key_file
from fakes.google_workspace import ADMIN, FakeWorkspace, populate
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, hooked, served, written

from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.intercept import ActionRefused

TEAM = "calendar:team@group.calendar.google.com"


fake = served(FakeWorkspace, populate)
key = written("key.json", lambda fake: key_file(f"{fake.url}/token"))
_settings = connection(
    id="gws", integration="google_workspace", subject=ADMIN, urls=("admin_url", "gmail_url")
)


def conn(fake: FakeWorkspace, key: Path, **extra: Any) -> dict[str, Any]:
    return _settings(fake, **{"credentials": f"file:{key}", **extra})


tp = engine(conn, "key")


@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("alice", "drive.file.write", "drive:file/doc1", "allow"),
        ("bob", "drive.file.write", "drive:file/doc1", "deny"),
        ("bob", "drive.file.read", "drive:file/doc1", "allow"),
        ("bob", "drive.file.download", "drive:file/doc1", "allow"),
        ("helpdesk", "drive.file.read", "drive:file/doc1", "deny"),  # not visible: 404
        ("carol", "drive.file.read", "drive:file/doc1", "deny"),  # suspended
        ("alice", "drive.drive.manage", "drive:drive/drv1", "allow"),
        ("alice", "drive.drive.delete", "drive:drive/drv1", "deny"),
        ("bob", "drive.create", "drive:root", "allow"),
        ("alice", "gmail.send", "gmail:user/alice@example.com", "allow"),
        ("alice", "gmail.read", "gmail:user/al@example.com", "allow"),  # her alias
        ("alice", "gmail.read", "gmail:user/bob@example.com", "allow"),  # a delegate
        ("bob", "gmail.read", "gmail:user/alice@example.com", "deny"),
        ("alice", "gmail.read", "gmail:user/me", "unknown"),
        ("alice", "calendar.write", TEAM, "allow"),
        ("bob", "calendar.read", TEAM, "allow"),
        ("bob", "calendar.write", TEAM, "deny"),
        ("helpdesk", "calendar.read", TEAM, "unknown"),  # not in their calendar list
        ("bob", "calendar.write", "calendar:bob@example.com", "allow"),
        ("alice", "admin.users.write", "customer", "allow"),
        ("alice", "admin.users.delete", "customer", "deny"),
        ("helpdesk", "admin.groups.write", "customer", "allow"),  # GROUPS_ALL through a group
        ("bob", "admin.users.write", "customer", "unknown"),  # an org unit's privilege only
        ("root", "admin.write", "customer", "allow"),  # super admin
        ("alice", "admin.write", "customer", "deny"),
        ("bob", "groups.member", "group:eng@example.com", "allow"),  # nested
        ("helpdesk", "groups.member", "group:eng@example.com", "deny"),
    ],
)
def test_each_area_decides(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = tp.check(f"{user}@example.com", "gws", action, resource)
    assert d.decision == decision, d.reason


def test_drive_is_asked_as_the_user(tp: Toolpass, fake: FakeWorkspace) -> None:
    assert tp.check("alice@example.com", "gws", "drive.file.share", "drive:file/doc1").allowed
    [req] = fake.seen("GET", r"/drive/v3/files/doc1")
    assert req.query["fields"] == ["capabilities"]
    assert fake.caller(req) == {
        "sub": "alice@example.com",
        "scope": "https://www.googleapis.com/auth/drive.metadata.readonly",
    }


SECURITY_GROUPS_ONLY = (
    "api.getAttribute('cloudidentity.googleapis.com/groups.labels', [])"
    ".hasAny(['groups.security']) && resource.type == 'cloudidentity.googleapis.com/Group'"
)


def test_a_conditional_role_assignment_is_not_a_customer_wide_privilege(
    tp: Toolpass, fake: FakeWorkspace
) -> None:
    """A role assignment with a ``condition`` (e.g. security groups only) takes effect only on
    the resources that meet it, so it grants the privilege for some groups, never for the
    whole customer: unknown, as a privilege held for an organizational unit only."""
    user = fake.users["bob@example.com"]["id"]
    fake.assignments.append(
        {
            "roleId": "r-groups",
            "assignedTo": user,
            "scopeType": "CUSTOMER",
            "condition": SECURITY_GROUPS_ONLY,
        }
    )
    d = tp.check("bob@example.com", "gws", "admin.groups.write", "customer")
    assert d.decision == "unknown", d.reason


def test_a_read_only_content_restriction_refuses_an_editor_a_content_change(
    tp: Toolpass,
) -> None:
    """A content restriction (``contentRestrictions.readOnly``) makes a file's content
    read-only for everyone while its editors keep ``canEdit`` and may still share or move it:
    a write needs ``canModifyContent`` too."""
    d = tp.check("alice@example.com", "gws", "drive.file.write", "drive:file/locked1")
    assert d.decision == "deny"
    assert "canModifyContent" in d.reason
    assert tp.check("alice@example.com", "gws", "drive.file.share", "drive:file/locked1").allowed
    assert tp.check("alice@example.com", "gws", "drive.file.write", "drive:file/doc1").allowed


def test_a_shared_drive_is_asked_with_the_scope_drives_get_takes(
    tp: Toolpass, fake: FakeWorkspace
) -> None:
    assert tp.check("alice@example.com", "gws", "drive.drive.manage", "drive:drive/drv1").allowed
    [req] = fake.seen("GET", r"/drive/v3/drives/drv1")
    assert fake.caller(req) == {
        "sub": "alice@example.com",
        "scope": "https://www.googleapis.com/auth/drive.readonly",
    }


def test_the_directory_is_asked_as_the_admin(tp: Toolpass, fake: FakeWorkspace) -> None:
    tp.check("alice@example.com", "gws", "admin.users.read", "customer")
    [req] = fake.seen("GET", r"/admin/directory/v1/customer/my_customer/roleassignments")
    assert req.arg("userKey") == "alice@example.com"
    assert req.arg("includeIndirectRoleAssignments") == "true"
    caller = fake.caller(req)
    assert caller is not None
    assert caller["sub"] == ADMIN


def test_the_directory_lookup_is_exact_and_maps_aliases(tp: Toolpass, fake: FakeWorkspace) -> None:
    assert tp.check("al@example.com", "gws", "drive.file.write", "drive:file/doc1").allowed
    d = tp.check("nobody@example.com", "gws", "drive.file.read", "drive:file/doc1")
    assert d.decision == "unknown"


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("drive.file.read", "drive:drive/drv1"),
        ("drive.file.read", "drive:file/../x"),
        ("gmail.read", "calendar:x"),
        ("admin.users.read", "group:eng@example.com"),
        ("calendar.read", "calendar:primary"),
    ],
)
def test_a_resource_of_the_wrong_kind_is_unknown(tp: Toolpass, action: str, resource: str) -> None:
    assert tp.check("alice@example.com", "gws", action, resource).decision == "unknown"


def test_a_token_without_delegation_cannot_ask_drive(
    fake: FakeWorkspace, key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.tokens["ya29.static"] = {"sub": ADMIN, "scope": ""}
    monkeypatch.setenv("GWS_TOKEN", "ya29.static")
    settings = conn(fake, key, auth="token", access_token="env:GWS_TOKEN")
    with Toolpass([settings]) as tp:
        assert tp.check("bob@example.com", "gws", "groups.member", "group:eng@example.com").allowed
        d = tp.check("bob@example.com", "gws", "drive.file.read", "drive:file/doc1")
        # a static token acts as its own account: Drive would answer for another user
        assert d.decision == "unknown"
        assert "domain-wide delegation" in d.reason


@pytest.mark.parametrize(
    ("extra", "bad"),
    [
        ({"subject": None}, "subject"),
        ({"customer": "a/b"}, "customer"),
        ({"admin_url": "x"}, "admin_url"),
    ],
)
def test_bad_settings_are_refused(
    fake: FakeWorkspace, key: Path, extra: dict[str, Any], bad: str
) -> None:
    settings = {k: v for k, v in conn(fake, key, **extra).items() if v is not None}
    with pytest.raises(ConfigError) as info:
        Toolpass([settings])
    assert bad in str(info.value)


def test_the_catalog_names_the_least_privileged_credential() -> None:
    description = get("google_workspace").description
    assert "drive.metadata.readonly" in description
    assert "Domain-wide delegation" in description


# --- the request hook under google-api-python-client ----------------------------------------
kit = hooked(conn, "key")


def _drive(fake: FakeWorkspace, key: Path) -> Any:
    from google.oauth2 import service_account
    from googleapiclient.discovery import build

    creds = service_account.Credentials.from_service_account_info(
        json.loads(key.read_text()), scopes=["https://www.googleapis.com/auth/drive"]
    )
    return build(
        "drive",
        "v3",
        credentials=creds,
        client_options={"api_endpoint": f"{fake.url}/drive/v3/"},
        static_discovery=True,
        cache_discovery=False,
    )


def _delete(fake: FakeWorkspace, key: Path, file_id: str) -> None:
    from google.oauth2 import service_account
    from googleapiclient.discovery import build

    creds = service_account.Credentials.from_service_account_info(
        json.loads(key.read_text()), scopes=["https://www.googleapis.com/auth/drive"]
    )
    drive = build(
        "drive",
        "v3",
        credentials=creds,
        client_options={"api_endpoint": f"{fake.url}/drive/v3/"},
        static_discovery=True,
        cache_discovery=False,
    )
    try:
        drive.files().delete(fileId=file_id).execute()
    finally:
        drive.close()


def test_the_hook_lets_an_allowed_delete_through(
    kit: tuple[Toolkit, list[Any]], fake: FakeWorkspace, key: Path
) -> None:
    toolkit, events = kit
    delete = toolkit.tool()(lambda: _delete(fake, key, "doc1"))
    with Session("alice@example.com").active():
        delete()
    assert "doc1" not in fake.files
    actions = [(a["action"], a["resource"]) for a in events[-1].actions]
    assert ("drive.file.delete", "drive:file/doc1") in actions


def test_the_hook_refuses_a_delete_before_it_is_sent(
    kit: tuple[Toolkit, list[Any]], fake: FakeWorkspace, key: Path
) -> None:
    toolkit, events = kit
    delete = toolkit.tool()(lambda: _delete(fake, key, "doc1"))
    with Session("bob@example.com").active(), pytest.raises(ActionRefused):
        delete()
    assert fake.seen("DELETE", r"/drive/v3/files/.*") == []
    assert "doc1" in fake.files
    [action] = [a for a in events[-1].actions if a["action"] == "drive.file.delete"]
    assert action["verdict"] == "not_authorized"


class TestGoogleWorkspaceConformance(IntegrationConformance):
    integration = "google_workspace"
    user, action, resource = "alice@example.com", "drive.file.write", "drive:file/doc1"
    system_user, template = "alice@example.com", "{email}"
    credential = KEY_ID

    @pytest.fixture
    def api(self, fake: FakeWorkspace, key: Path) -> FakeWorkspace:
        self._key = key
        return fake

    def error_body(self, text: str) -> Any:
        return {"error": {"code": 400, "message": text, "status": "FAILED_PRECONDITION"}}

    def connection(self, api: FakeWorkspace, **extra: Any) -> dict[str, Any]:
        return conn(api, self._key, **extra)

    def disable_account(self, api: FakeWorkspace) -> None:
        """Alice is suspended in the directory."""
        api.users["alice@example.com"]["suspended"] = True

    def make_read_only(self, api: FakeWorkspace) -> str:
        """doc1 gets a read-only content restriction: Drive answers ``canModifyContent:
        false`` to everyone, its editors too."""
        api.files["doc1"]["alice@example.com"]["canModifyContent"] = False
        return "drive.file.write"

    def bind_admins(self, api: FakeWorkspace) -> None:
        """Alice is a super admin; a read-only content restriction only an owner may lift
        (``ownerRestricted``) still holds her as the user Drive answers for."""
        api.users["alice@example.com"]["isAdmin"] = True
        api.files["doc1"]["alice@example.com"].update(canModifyContent=False, canEdit=True)

    def revoke(self, api: FakeWorkspace) -> None:
        """Alice's permission on doc1 is removed: as her, Drive no longer finds the file."""
        del api.files["doc1"]["alice@example.com"]


def _search(fake: FakeWorkspace, key: Path) -> list[str]:
    drive = _drive(fake, key)
    try:
        found = drive.files().list(q="fullText contains 'salary'").execute()
    finally:
        drive.close()
    return [f["id"] for f in found["files"]]


def test_the_hook_refuses_a_drive_search_sent_with_the_agents_credential(
    kit: tuple[Toolkit, list[Any]], fake: FakeWorkspace, key: Path
) -> None:
    """files.list answers what the sending credential sees (here the service account's: every
    file), not what the user sees: drive.list is unknown unless drive_tokens: user."""
    toolkit, events = kit
    search = toolkit.tool()(lambda: _search(fake, key))
    with Session("helpdesk@example.com").active(), pytest.raises(ActionRefused) as info:
        search()
    assert info.value.code == "authorization_error"
    assert fake.seen("GET", r"/drive/v3/files") == []
    [action] = [a for a in events[-1].actions if a["action"] == "drive.list"]
    assert action["resource"] == "drive:root"


def test_a_drive_search_is_allowed_when_the_agent_searches_with_the_users_credential(
    fake: FakeWorkspace, key: Path
) -> None:
    with Toolpass([conn(fake, key, drive_tokens="user")]) as engine:
        toolkit = Toolkit(permissions=engine)
        try:
            search = toolkit.tool()(lambda: _search(fake, key))
            with Session("bob@example.com").active():
                assert "doc1" in search()
            with Session("carol@example.com").active(), pytest.raises(ActionRefused):
                search()  # suspended
        finally:
            intercept.uninstall()
