"""The Microsoft 365 route table (Graph v1.0, generated from the PyPI package msgraph-sdk)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.microsoft365 import _SHAPES, Microsoft365
from toolpass.integrations.routes import Request, fields, load

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/microsoft365/routes.json.gz"
SAMPLE = {
    "drive-id": "b!abc",
    "driveItem-id": "01ABC",
    "user-id": "dana@example.com",
    "team-id": "bbbbbbbb-0000-4000-8000-000000000001",
    "group-id": "bbbbbbbb-0000-4000-8000-000000000001",
    "channel-id": "19:abc@thread.tacv2",
    "chat-id": "19:abc@unq.gbl.spaces",
}


def _table() -> dict[str, list[list[str]]]:
    return json.loads(gzip.decompress(TABLE.read_bytes()))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def m365() -> Microsoft365:
    (config,) = parse_connections(
        [
            {
                "id": "m365",
                "integration": "microsoft365",
                "tenant_id": "contoso.onmicrosoft.com",
                "client_id": "0b6c3a8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
                "client_secret": literal("s3cret"),
            }
        ]
    )
    return Microsoft365(config)


def test_the_table_loads_with_its_source() -> None:
    data = _table()
    assert data["generator"] == "core/src/toolpass/integrations/microsoft365/generate.py"
    assert str(data["source"]).startswith("PyPI msgraph-sdk 1.65.0 ")
    assert len(load("toolpass.integrations.microsoft365")) == len(data["routes"]) >= 16000
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    assert all(r[1].startswith("/v1.0/") for r in data["routes"])


def test_every_action_is_declared_and_every_area_is_routed() -> None:
    routed = {r.action for r in load("toolpass.integrations.microsoft365").routes}
    assert routed == {a.name for a in Microsoft365.actions}


def test_every_resource_template_is_one_the_check_takes() -> None:
    for route in load("toolpass.integrations.microsoft365").routes:
        assert not route.agent, route  # /me and search answer what the sender holds (#19)
        if route.resource == "me" or route.resource.startswith("me/"):
            continue  # the sending account's: checked on own_tokens
        resource = route.resource
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", SAMPLE.get(name, "x1"))
        area = route.action.partition(".")[0]
        assert _SHAPES[area].fullmatch(resource), route


def test_regenerating_from_the_package_gives_the_committed_table() -> None:
    msgraph = pytest.importorskip("msgraph")
    from importlib.metadata import version

    if version("msgraph-sdk") != "1.65.0":
        pytest.skip(f"the table is from msgraph-sdk 1.65.0, not {version('msgraph-sdk')}")
    built = load_generator("microsoft365").build(Path(msgraph.__file__).parents[1])
    assert built["routes"] == _table()["routes"]


@pytest.mark.parametrize(
    ("method", "path", "action", "resource", "effect", "flags"),
    [
        (
            "POST",
            "/v1.0/users/dana@example.com/sendMail",
            "mailbox.send",
            "users/dana@example.com",
            "write",
            "s",
        ),
        ("GET", "/v1.0/users/u1/messages/m1", "mailbox.read", "users/u1", "read", "u"),
        ("POST", "/v1.0/users/u1/messages/m1/forward", "mailbox.send", "users/u1", "write", "s"),
        ("DELETE", "/v1.0/users/u1/events/e1", "mailbox.write", "users/u1", "destructive", ""),
        (
            "GET",
            "/v1.0/drives/b!abc/items/01ABC/content",
            "files.read",
            "drives/b!abc/items/01ABC",
            "read",
            "u",
        ),
        (
            "DELETE",
            "/v1.0/drives/b!abc/items/01ABC",
            "files.delete",
            "drives/b!abc/items/01ABC",
            "destructive",
            "",
        ),
        ("POST", "/v1.0/drives/d/items/i/invite", "files.share", "drives/d/items/i", "write", "s"),
        (
            "POST",
            "/v1.0/drives/d/items/i/createLink",
            "files.share",
            "drives/d/items/i",
            "write",
            "s",
        ),
        (
            "PATCH",
            "/v1.0/drives/d/items/i/permissions/p1",
            "files.permissions",
            "drives/d/items/i",
            "write",
            "",
        ),
        (
            "PUT",
            "/v1.0/drives/d/items/p:/new.txt:/content",
            "files.write",
            "drives/d/items/p:/new.txt:/content",
            "write",
            "",
        ),
        ("GET", "/v1.0/drives/d/items/i/children", "files.read", "drives/d/items/i", "read", "u"),
        (
            "POST",
            "/v1.0/teams/t1/channels/19:c@thread.tacv2/messages",
            "teams.post",
            "teams/t1/channels/19:c@thread.tacv2",
            "write",
            "s",
        ),
        ("POST", "/v1.0/teams/t1/members", "teams.manage", "teams/t1", "write", ""),
        (
            "POST",
            "/v1.0/chats/19:x@unq.gbl.spaces/messages",
            "chats.post",
            "chats/19:x@unq.gbl.spaces",
            "write",
            "s",
        ),
        ("GET", "/v1.0/groups/g1/conversations", "groups.read", "groups/g1", "read", "u"),
        ("POST", "/v1.0/groups/g1/members/$ref", "groups.manage", "groups/g1", "write", ""),
        ("POST", "/v1.0/users", "tenant.admin", "tenant", "write", ""),
        ("GET", "/v1.0/users/u1/memberOf", "tenant.read", "tenant", "read", ""),
        ("POST", "/v1.0/directoryObjects/getByIds", "tenant.read", "tenant", "read", ""),
        ("GET", "/v1.0/me/messages", "mailbox.read", "me", "read", "u"),
        ("POST", "/v1.0/me/sendMail", "mailbox.send", "me", "write", "s"),
        ("GET", "/v1.0/me/drive/root:/a.txt", "files.read", "me/drive/root:/a.txt", "read", "u"),
        ("POST", "/v1.0/search/query", "tenant.search", "tenant", "read", "u"),
    ],
)
def test_requests_take_their_routes(
    m365: Microsoft365, method: str, path: str, action: str, resource: str, effect: str, flags: str
) -> None:
    found = m365.match_request(Request(method, path, "", None, b""))
    assert found is not None
    assert (found.action, found.resource, found.effect, found.route.flags) == (
        action,
        resource,
        effect,
        flags,
    )


@pytest.mark.parametrize(
    "path",
    [
        "/v1.0/drives/a%2F..%2F..%2Fusers/items/i",
        "/v1.0/users/..%2Fgroups/sendMail",
        "/v1.0/drives/%2e%2e/items/i",
    ],
)
def test_hostile_paths_name_no_resource(m365: Microsoft365, path: str) -> None:
    found = m365.match_request(Request("POST", path, "", None, b""))
    assert found is None or found.resource is None


@pytest.mark.parametrize("path", ["/beta/users/u1/sendMail", "/v1.0/$batch", "/v1.0/nosuch/thing"])
def test_what_graph_v1_does_not_describe_takes_no_route(m365: Microsoft365, path: str) -> None:
    assert m365.match_request(Request("POST", path, "", None, b"")) is None
