"""The Google Workspace route table (generated from google-api-python-client's discovery
documents: Drive, Gmail, Calendar, Admin SDK Directory, Docs, Sheets)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.google_workspace import GoogleWorkspace, _target
from toolpass.integrations.routes import Request, load

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/google_workspace/routes.json"


@pytest.fixture(scope="module")
def gws() -> GoogleWorkspace:
    (config,) = parse_connections(
        [
            {
                "id": "gws",
                "integration": "google_workspace",
                "credentials": literal("{}"),
                "subject": "admin@example.com",
            }
        ]
    )
    return GoogleWorkspace(config)


def place(gws: GoogleWorkspace, method: str, url: str) -> tuple[str, str | None] | None:
    parts = urlsplit(url)
    found = gws.match_request(Request(method, parts.path, parts.query, host=parts.hostname or ""))
    return None if found is None else (found.action, found.resource)


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/google_workspace/generate.py"
    assert data["source"].startswith("PyPI google-api-python-client ")
    assert len(load("toolpass.integrations.google_workspace")) == len(data["routes"]) >= 300
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    assert {r[4] for r in data["routes"] if r[0] == "DELETE"} == {"destructive"}


def test_every_action_is_declared_and_every_resource_is_of_its_kind() -> None:
    for route in load("toolpass.integrations.google_workspace").routes:
        action = GoogleWorkspace.action(route.action)
        assert action is not None, route
        example = route.resource.replace("{", "").replace("}", "")
        assert _target(str(action.terms["kind"]), example) is not None, route


def test_regenerating_from_the_package_gives_the_committed_table() -> None:
    pytest.importorskip("googleapiclient")
    from importlib.metadata import version

    data = json.loads(TABLE.read_text())
    if f"google-api-python-client {version('google-api-python-client')} " not in data["source"]:
        pytest.skip("the table is from another google-api-python-client")
    built = load_generator("google_workspace").build()
    assert built["routes"] == data["routes"]


@pytest.mark.parametrize(
    ("method", "url", "action", "resource"),
    [
        (
            "GET",
            "https://www.googleapis.com/drive/v3/files/abc?alt=media",
            "drive.file.read",
            "drive:file/abc",
        ),
        (
            "PATCH",
            "https://www.googleapis.com/upload/drive/v3/files/abc",
            "drive.file.write",
            "drive:file/abc",
        ),
        (
            "DELETE",
            "https://www.googleapis.com/drive/v3/files/abc",
            "drive.file.delete",
            "drive:file/abc",
        ),
        (
            "POST",
            "https://www.googleapis.com/drive/v3/files/abc/permissions",
            "drive.file.share",
            "drive:file/abc",
        ),
        (
            "POST",
            "https://www.googleapis.com/drive/v3/files/abc/copy",
            "drive.file.copy",
            "drive:file/abc",
        ),
        ("POST", "https://www.googleapis.com/upload/drive/v3/files", "drive.create", "drive:root"),
        (
            "POST",
            "https://gmail.googleapis.com/gmail/v1/users/bob%40example.com/messages/send",
            "gmail.send",
            "gmail:user/bob@example.com",
        ),
        (
            "DELETE",
            "https://gmail.googleapis.com/gmail/v1/users/me/messages/m1",
            "gmail.delete",
            "gmail:user/me",
        ),
        (
            "POST",
            "https://www.googleapis.com/calendar/v3/calendars/team%40x.com/events",
            "calendar.write",
            "calendar:team@x.com",
        ),
        (
            "POST",
            "https://docs.googleapis.com/v1/documents/d1:batchUpdate",
            "drive.file.write",
            "drive:file/d1",
        ),
        (
            "GET",
            "https://sheets.googleapis.com/v4/spreadsheets/s1/values/A1",
            "drive.file.read",
            "drive:file/s1",
        ),
        (
            "POST",
            "https://admin.googleapis.com/admin/directory/v1/groups/g%40x.com/members",
            "admin.groups.write",
            "customer",
        ),
        (
            "DELETE",
            "https://admin.googleapis.com/admin/directory/v1/users/u%40x.com",
            "admin.users.delete",
            "customer",
        ),
        ("POST", "https://oauth2.googleapis.com/token", "agent.token", "site"),
    ],
)
def test_requests_take_their_routes(
    gws: GoogleWorkspace, method: str, url: str, action: str, resource: str
) -> None:
    assert place(gws, method, url) == (action, resource)


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("POST", "https://www.googleapis.com/batch/drive/v3"),
        ("POST", "https://gmail.googleapis.com/batch/gmail/v1"),
        ("DELETE", "https://www.googleapis.com/drive/v3/files/abc/unknown"),
    ],
)
def test_unknown_requests_take_no_route(gws: GoogleWorkspace, method: str, url: str) -> None:
    assert place(gws, method, url) is None


def test_sending_mail_and_sharing_are_flagged() -> None:
    table = load("toolpass.integrations.google_workspace")
    send = [r for r in table.routes if r.action == "gmail.send"]
    assert send
    assert all(r.sends_out for r in send)
    assert all(r.untrusted for r in table.routes if r.action == "gmail.read")


def test_a_private_endpoint_places_a_path_one_host_routes(gws: GoogleWorkspace) -> None:
    found = gws.match_request(Request("DELETE", "/drive/v3/files/abc", host="10.1.2.3"))
    assert found is not None
    assert (found.action, found.resource) == ("drive.file.delete", "drive:file/abc")
