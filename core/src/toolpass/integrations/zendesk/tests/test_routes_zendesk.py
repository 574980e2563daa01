"""The Zendesk route table (generated from Zendesk's OpenAPI description)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations._generate.sources import pinned_source
from toolpass.integrations.routes import Request, fields, load
from toolpass.integrations.zendesk import _ID, Zendesk

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/zendesk/routes.json"
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def zendesk() -> Zendesk:
    (config,) = parse_connections(
        [
            {
                "id": "zd",
                "integration": "zendesk",
                "url": "https://acme.zendesk.com",
                "email": "agent@example.com",
                "api_token": literal("zd-token"),
            }
        ]
    )
    return Zendesk(config)


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/zendesk/generate.py"
    assert "api-evangelist/zendesk openapi/_original at aaa548006c2a" in data["source"]
    assert len(load("toolpass.integrations.zendesk")) == len(data["routes"]) >= 500
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_every_action_is_declared_and_routed() -> None:
    routed = {r.action for r in load("toolpass.integrations.zendesk").routes}
    assert routed | {"ticket.comment_public"} == {a.name for a in Zendesk.actions}


def test_every_resource_template_is_a_resource_the_check_accepts() -> None:
    for route in load("toolpass.integrations.zendesk").routes:
        resource = route.resource
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", "42")
        scope = Zendesk.action(route.action).terms["scope"]  # type: ignore[union-attr]
        kind, _, rid = resource.partition(":")
        if scope == "account":
            assert resource == "account", route
        else:
            assert kind == scope, route
            assert _ID.fullmatch(rid), route


def test_every_delete_is_destructive_and_every_get_reads() -> None:
    for route in load("toolpass.integrations.zendesk").routes:
        if route.method == "DELETE":
            assert route.effect == "destructive", route
        if route.method == "GET":
            assert route.effect == "read", route


def test_regenerating_from_the_description_gives_the_committed_table(tmp_path: Path) -> None:
    built = load_generator("zendesk").build(pinned_source("zendesk", tmp_path))
    assert built["routes"] == json.loads(TABLE.read_text())["routes"]


@pytest.mark.parametrize(
    ("method", "path", "action", "resource", "flags"),
    [
        ("GET", "/api/v2/tickets/42", "ticket.view", "ticket:42", "u"),
        ("GET", "/api/v2/tickets/42.json", "ticket.view", "ticket:42", "u"),
        ("GET", "/api/v2/tickets/42/comments", "ticket.view", "ticket:42", "u"),
        ("DELETE", "/api/v2/tickets/42", "ticket.delete", "ticket:42", ""),
        ("PUT", "/api/v2/tickets/42/mark_as_spam", "ticket.delete", "ticket:42", ""),
        ("POST", "/api/v2/tickets/42/merge", "ticket.merge", "ticket:42", ""),
        ("PUT", "/api/v2/tickets/42/tags", "ticket.edit", "ticket:42", ""),
        ("PUT", "/api/v2/tickets/42/comments/7/redact", "ticket.edit", "ticket:42", ""),
        ("POST", "/api/v2/tickets", "ticket.create", "account", "s"),
        ("POST", "/api/v2/requests.json", "ticket.create", "account", "s"),
        ("PUT", "/api/v2/requests/42", "ticket.comment_public", "ticket:42", "s"),
        ("GET", "/api/v2/requests/42/comments", "ticket.view", "ticket:42", "u"),
        ("PUT", "/api/v2/tickets/update_many", "account.admin", "account", ""),
        ("DELETE", "/api/v2/tickets/destroy_many", "account.admin", "account", ""),
        ("GET", "/api/v2/tickets", "ticket.view_all", "account", "u"),
        ("GET", "/api/v2/search", "ticket.view_all", "account", "u"),
        ("GET", "/api/v2/search/export", "ticket.view_all", "account", "u"),
        ("GET", "/api/v2/views/3/execute", "ticket.view_all", "account", "u"),
        ("GET", "/api/v2/incremental/tickets/cursor", "ticket.view_all", "account", "u"),
        ("GET", "/api/v2/users/search", "account.read", "account", "u"),
        ("GET", "/api/v2/users/me", "account.read", "account", "a"),
        ("GET", "/api/v2/users/7", "user.view", "user:7", "u"),
        ("PUT", "/api/v2/users/7/identities/3", "user.manage", "user:7", ""),
        (
            "POST",
            "/api/v2/users/7/organization_memberships",
            "user.manage_restricted",
            "user:7",
            "",
        ),
        ("DELETE", "/api/v2/users/7", "user.delete", "user:7", ""),
        ("GET", "/api/v2/users/7/tickets/requested", "ticket.view_all", "account", "u"),
        ("POST", "/api/v2/users/7/password", "account.admin", "account", ""),
        ("PUT", "/api/v2/users/7/identities/3/request_verification", "user.manage", "user:7", "s"),
        ("POST", "/api/v2/users", "account.write", None, ""),  # no user object: unresolved
        ("POST", "/api/v2/macros", "account.write", "account", ""),
        ("PUT", "/api/v2/organizations/5", "account.write", "account", ""),
        ("POST", "/api/v2/triggers", "account.admin", "account", ""),
        ("PUT", "/api/v2/custom_roles/3", "account.admin", "account", ""),
        ("POST", "/api/v2/group_memberships", "account.admin", "account", ""),
        ("POST", "/api/v2/users/7/group_memberships", "account.admin", "account", ""),
        ("GET", "/api/v2/audit_logs", "account.admin", "account", "u"),
        ("POST", "/api/v2/views/preview", "account.read", "account", "u"),
        ("PUT", "/api/v2/chat_redactions/42", "ticket.edit", "ticket:42", ""),
    ],
)
def test_hand_checked_requests(
    zendesk: Zendesk, method: str, path: str, action: str, resource: str, flags: str
) -> None:
    found = zendesk.match_request(Request(method, path))
    assert found is not None
    assert (found.action, found.resource, found.route.flags) == (action, resource, flags)


@pytest.mark.parametrize(
    ("path", "body", "expected"),
    [
        ("/api/v2/users", {"user": {"name": "N", "email": "n@x.io"}}, "account.write"),
        ("/api/v2/users", {"user": {"name": "N", "role": "end-user"}}, "account.write"),
        ("/api/v2/users", {"user": {"name": "N", "role": "agent"}}, "account.admin"),
        ("/api/v2/users", {"user": {"name": "N", "custom_role_id": 7}}, "account.admin"),
        ("/api/v2/users.json", {"user": {"name": "N", "role": "admin"}}, "account.admin"),
        ("/api/v2/users", {"user": {"name": "N"}, "users": [{"role": "admin"}]}, None),
        ("/api/v2/users/create_or_update", {"user": {"email": "a@x.io"}}, "account.admin"),
    ],
)
def test_a_user_created_with_an_admins_field_is_an_admins(
    zendesk: Zendesk, path: str, body: dict[str, Any], expected: str | None
) -> None:
    request = Request(
        "POST", path, "", {"content-type": "application/json"}, json.dumps(body).encode()
    )
    found = zendesk.match_request(request)
    assert found is not None
    assert (found.action if found.resource else None) == expected


@pytest.mark.parametrize(
    ("body", "action"),
    [
        ({"ticket": {"status": "solved"}}, "ticket.edit"),
        ({"ticket": {"comment": {"body": "x", "public": False}}}, "ticket.edit"),
        ({"ticket": {"comment": {"body": "x"}}}, "ticket.comment_public"),
        (
            {"ticket": {"comment": {"body": "x", "public": True}, "status": "open"}},
            "ticket.comment_public",
        ),
        ({"ticket": {"comment": "x"}}, "ticket.comment_public"),
    ],
)
def test_a_ticket_update_with_a_public_comment_is_a_public_comment(
    zendesk: Zendesk, body: dict[str, object], action: str
) -> None:
    request = Request("PUT", "/api/v2/tickets/42.json", "", JSON, json.dumps(body).encode())
    found = zendesk.match_request(request)
    assert found is not None
    assert (found.action, found.resource) == (action, "ticket:42")
    assert found.route.sends_out == (action == "ticket.comment_public")


@pytest.mark.parametrize(
    ("body", "action", "resource"),
    [
        ({"user": {"name": "Ivy", "locale": "de", "time_zone": "Berlin"}}, "user.manage", "user:7"),
        ({"user": {"id": 7, "name": "Ivy"}}, "user.manage", "user:7"),
        ({"user": {"id": 8, "name": "Ivy"}}, "user.manage_restricted", "user:7"),
        ({"user": {"name": "Ivy", "phone": "123"}}, "user.manage_restricted", "user:7"),
        ({"user": {"organization_id": 5}}, "user.manage_restricted", "user:7"),
        ({"user": {"organization_ids": [5, 6]}}, "user.manage_restricted", "user:7"),
        ({"user": {"tags": ["vip"], "notes": "x"}}, "user.manage_restricted", "user:7"),
        ({"user": {"user_fields": {"tier": "gold"}}}, "user.manage_restricted", "user:7"),
        ({"user": {"email": "b@example.com"}}, "user.manage_restricted", "user:7"),
        ({"user": {"name": "Ivy"}, "role": "admin"}, None, None),
        ({"user": ["name"]}, None, None),
        ({}, None, None),
        ({"user": {"role": "admin"}}, "account.admin", "account"),
        ({"user": {"name": "x", "custom_role_id": 3}}, "account.admin", "account"),
        ({"user": {"suspended": False}}, "account.admin", "account"),
    ],
)
def test_a_profile_update_setting_a_role_administers_the_account(
    zendesk: Zendesk, body: dict[str, object], action: str, resource: str
) -> None:
    request = Request("PUT", "/api/v2/users/7.json", "", JSON, json.dumps(body).encode())
    found = zendesk.match_request(request)
    assert found is not None
    assert found.resource == resource
    if resource is not None:
        assert found.action == action


@pytest.mark.parametrize(
    ("query", "headers", "body"),
    [
        ("user[role]=admin", JSON, b'{"user": {"name": "Ivy"}}'),
        ("", {"Content-Type": "application/x-www-form-urlencoded"}, b"user[role]=admin"),
        ("", {"Content-Type": "text/plain"}, b'{"user": {"name": "Ivy"}}'),
    ],
)
def test_a_profile_update_read_otherwise_than_as_one_user_object_is_unresolved(
    zendesk: Zendesk, query: str, headers: dict[str, str], body: bytes
) -> None:
    found = zendesk.match_request(Request("PUT", "/api/v2/users/7", query, headers, body))
    assert found is not None
    assert found.resource is None


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({"Content-Type": "text/plain"}, b'{"ticket": {}}'),
        (JSON, b'{"ticket": {"status": "open"}, "ticket": {"comment": {"body": "x"}}}'),
    ],
)
def test_a_ticket_update_that_cannot_be_read_is_unresolved(
    zendesk: Zendesk, headers: dict[str, str], body: bytes
) -> None:
    found = zendesk.match_request(Request("PUT", "/api/v2/tickets/42", "", headers, body))
    assert found is not None
    assert found.resource is None


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/api/v9/tickets"), ("DELETE", "/tickets/42"), ("PATCH", "/api/v2/tickets/42")],
)
def test_requests_matching_no_route(zendesk: Zendesk, method: str, path: str) -> None:
    assert zendesk.match_request(Request(method, path)) is None


@pytest.mark.parametrize("path", ["/api/v2/tickets/..", "/api/v2/tickets/1%2F..%2F2"])
def test_hostile_parameters_name_no_ticket(zendesk: Zendesk, path: str) -> None:
    found = zendesk.match_request(Request("DELETE", path))
    if found is not None and found.resource is not None:
        assert _ID.fullmatch(found.resource.partition(":")[2]) is None
