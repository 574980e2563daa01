"""The Confluence route table (generated from confluence.js) and the request hook under real
HTTP clients (requests, atlassian-python-api) against the fake site."""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from fakes.confluence import FakeConfluence

from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.confluence import _ID, _SPACE_KEY, CONTENT_KINDS, SITE, Confluence
from toolpass.integrations.routes import Request, fields, load
from toolpass.intercept import ActionRefused

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/confluence/routes.json"
JSON = {"content-type": "application/json"}
DANA, RORY = "dana@example.com", "rory@example.com"


def connect(**options: object) -> Confluence:
    (config,) = parse_connections(
        [
            {
                "id": "wiki",
                "integration": "confluence",
                "url": "https://acme.atlassian.net",
                "email": "engine@example.com",
                "api_token": literal("token"),
                **options,
            }
        ]
    )
    return Confluence(config)


@pytest.fixture(scope="module")
def wiki() -> Confluence:
    return connect()


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/confluence/generate.py"
    assert data["source"].startswith("npm confluence.js 3.2.0 (dist/v1, dist/v2) and 2.1.0 ")
    m = re.search(r"(\d+) operations, (\d+) listed twice", data["source"])
    assert m is not None
    assert (
        len(load("toolpass.integrations.confluence"))
        == len(data["routes"])
        == int(m.group(1)) - int(m.group(2))
    )
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_every_resource_template_is_a_resource_the_check_accepts() -> None:
    samples = {"body.space.key": "DEV"}
    for route in load("toolpass.integrations.confluence").routes:
        resource = route.resource
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", samples.get(name, "123"))
        assert Confluence.action(route.action) is not None, route
        kind, _, ref = resource.partition(":")
        if resource == SITE:
            assert Confluence.action(route.action).terms["check"] in ("site", "admin", "sender"), (
                route
            )
        elif kind == "space":
            assert Confluence.action(route.action).terms["check"] == "space", route
            assert _SPACE_KEY.fullmatch(ref), route
        else:
            assert kind in CONTENT_KINDS, route
            assert _ID.fullmatch(ref), route


@pytest.mark.skipif("TOOLPASS_CONFLUENCE_JS" not in os.environ, reason="needs confluence.js")
def test_regenerating_from_confluence_js_gives_the_committed_table() -> None:
    """TOOLPASS_CONFLUENCE_JS=<3.2.0 package>:<2.1.0 package>."""
    module = load_generator("confluence")
    new, old = os.environ["TOOLPASS_CONFLUENCE_JS"].split(":")
    rows, _ = module.build(Path(new), Path(old))
    assert rows == json.loads(TABLE.read_text())["routes"]


@pytest.mark.parametrize(
    ("method", "path", "payload", "expected"),
    [
        ("GET", "/wiki/api/v2/pages/123", None, ("read", "content:123", "read", "u")),
        ("PUT", "/wiki/api/v2/pages/123", {}, ("update", "content:123", "write", "s")),
        ("DELETE", "/wiki/api/v2/pages/123", None, ("delete", "content:123", "destructive", "")),
        ("GET", "/wiki/rest/api/content/123", None, ("read", "content:123", "read", "u")),
        ("PUT", "/wiki/rest/api/content/123", {}, ("update", "content:123", "write", "s")),
        (
            "POST",
            "/wiki/api/v2/pages",
            {"spaceId": "98306", "title": "x"},
            ("create_page", "space:98306", "write", "s"),
        ),
        (
            "POST",
            "/wiki/rest/api/content",
            {"type": "page", "space": {"key": "DEV"}},
            ("create_page", "space:DEV", "write", "s"),
        ),
        (
            "POST",
            "/wiki/api/v2/footer-comments",
            {"pageId": "123", "body": {}},
            ("comment", "content:123", "write", "s"),
        ),
        (
            "POST",
            "/wiki/api/v2/inline-comments",
            {"blogPostId": "77", "body": {}},
            ("comment", "content:77", "write", "s"),
        ),
        (
            "POST",
            "/wiki/rest/api/content/123/child/attachment",
            None,
            ("attach", "content:123", "write", ""),
        ),
        (
            "GET",
            "/wiki/rest/api/content/123/child/attachment/att9/download",
            None,
            ("read", "content:123", "read", "u"),
        ),
        (
            "GET",
            "/wiki/api/v2/spaces/98306/pages",
            None,
            ("read_space", "space:98306", "read", "u"),
        ),
        (
            "DELETE",
            "/wiki/rest/api/space/DEV",
            None,
            ("administer_space", "space:DEV", "destructive", ""),
        ),
        ("GET", "/wiki/rest/api/search", None, ("administer", "site", "read", "u")),
        ("GET", "/wiki/rest/api/user/current", None, ("use", "site", "read", "a")),
        ("GET", "/wiki/rest/api/user/watch/space/DEV", None, ("use", "site", "read", "a")),
        ("GET", "/wiki/rest/api/group/g-dev/member", None, ("use", "site", "read", "")),
        ("GET", "/wiki/rest/api/search/user", None, ("use", "site", "read", "")),
        ("POST", "/wiki/api/v2/users-bulk", {}, ("use", "site", "read", "")),
        ("GET", "/wiki/api/v2/spaces", None, ("sender_lists", "site", "read", "u")),
        ("GET", "/wiki/rest/api/space", None, ("sender_lists", "site", "read", "u")),
        ("GET", "/wiki/rest/api/label", None, ("sender_lists", "site", "read", "u")),
    ],
)
def test_hand_checked_requests(
    wiki: Confluence, method: str, path: str, payload: object, expected: tuple[str, ...]
) -> None:
    data = None if payload is None else json.dumps(payload).encode()
    found = wiki.match_request(Request(method, path, "", JSON, data))
    assert found is not None
    assert (found.action, found.resource, found.effect, found.route.flags) == expected


def test_the_gateway_form_and_another_sites_cloud_id() -> None:
    wiki = connect(auth="scoped", cloud_id="site-one")
    found = wiki.match_request(Request("GET", "/ex/confluence/site-one/wiki/api/v2/pages/7"))
    assert found is not None
    assert found.resource == "content:7"
    found = wiki.match_request(Request("GET", "/ex/confluence/site-two/wiki/api/v2/pages/7"))
    assert found is not None
    assert found.resource is None


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/wiki/api/v2/nothing"), ("PATCH", "/wiki/api/v2/pages/1"), ("GET", "/wiki/x")],
)
def test_requests_matching_no_route(wiki: Confluence, method: str, path: str) -> None:
    assert wiki.match_request(Request(method, path)) is None


def test_a_hostile_id_names_no_resource(wiki: Confluence) -> None:
    found = wiki.match_request(Request("DELETE", "/wiki/api/v2/pages/%2E%2E"))
    assert found is not None
    assert found.action == "delete"
    assert found.resource is None


# --- the request hook, under real clients ------------------------------------------------
@pytest.fixture
def fake() -> Iterator[FakeConfluence]:
    with FakeConfluence() as server:
        server.add_engine()
        server.tokens["tool-token"] = ("tool@example.com", "acc-tool", False)
        server.add_user("acc-tool", "tool@example.com")
        server.add_user("acc-dana", DANA, "g-dev")
        server.add_user("acc-rory", RORY)
        server.add_space("DEV")
        server.add_page("DEV", "Runbook")
        for who in ("g-dev", "acc-rory", "acc-tool", "engine-1"):
            server.grant("DEV", who, "read", "space")
        server.grant("DEV", "g-dev", "create", "page")
        server.grant("DEV", "g-dev", "delete", "page")
        yield server


@pytest.fixture
def events() -> list[Any]:
    return []


@pytest.fixture
def kit(fake: FakeConfluence, events: list[Any]) -> Iterator[Toolkit]:
    connection = {
        "id": "wiki",
        "integration": "confluence",
        "url": fake.url,
        "email": "engine@example.com",
        "api_token": literal("classic-token"),
    }
    with Toolpass([connection]) as engine:
        yield Toolkit(permissions=engine, audit=[events.append])
        intercept.uninstall()


def test_requests_delete_refused_before_it_is_sent(
    kit: Toolkit, fake: FakeConfluence, events: list[Any]
) -> None:
    page = next(iter(fake.pages))

    @kit.tool()
    def remove() -> int:
        answer = requests.delete(
            f"{fake.url}/wiki/api/v2/pages/{page}", auth=("tool@example.com", "tool-token")
        )
        return answer.status_code

    with Session(RORY).active(), pytest.raises(ActionRefused) as info:
        remove()
    assert info.value.code == "not_authorized"
    assert f"delete on content:{page}" in info.value.message
    assert fake.seen("DELETE") == []  # never reached Confluence
    assert page in fake.pages
    assert fake.seen("POST", r".*/permission/check")  # the engine's check did
    with Session(DANA).active():
        assert remove() == 204
    assert [r.path for r in fake.seen("DELETE")] == [f"/wiki/api/v2/pages/{page}"]
    assert page not in fake.pages
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("delete", f"content:{page}")
    assert action["verdict"] == "allowed"


def test_atlassian_python_api_edit_refused_then_allowed(kit: Toolkit, fake: FakeConfluence) -> None:
    atlassian = pytest.importorskip("atlassian")
    page = next(iter(fake.pages))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = atlassian.Confluence(
            url=fake.url + "/wiki", username="tool@example.com", password="tool-token"
        )

    @kit.tool()
    def rename(title: str) -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            client.update_page(page, title, "<p>body</p>")
        return fake.pages[page].title

    with Session(RORY).active(), pytest.raises(ActionRefused):
        rename("Hijacked")
    assert fake.seen("PUT") == []
    with Session(DANA).active():
        result = rename("Runbook v2")
    assert "Runbook v2" in result
    assert "<untrusted-content" in result  # the tool read the page: its output is fenced
    assert fake.pages[page].title == "Runbook v2"
    assert len(fake.seen("PUT")) == 1


def test_atlassian_python_api_edit_of_an_archived_page_is_refused(
    kit: Toolkit, fake: FakeConfluence, events: list[Any]
) -> None:
    atlassian = pytest.importorskip("atlassian")
    page = next(iter(fake.pages))
    fake.pages[page].status = "archived"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = atlassian.Confluence(
            url=fake.url + "/wiki", username="tool@example.com", password="tool-token"
        )

    @kit.tool()
    def rename(title: str) -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            client.update_page(page, title, "<p>body</p>")
        return fake.pages[page].title

    with Session(DANA).active(), pytest.raises(ActionRefused):
        rename("Runbook v2")
    assert fake.seen("PUT") == []
    assert events[-1].actions[-1]["action"] == "update"
    assert events[-1].actions[-1]["verdict"] == "not_authorized"


@pytest.mark.parametrize("own_tokens", ["unknown", "user"])
def test_atlassian_python_api_lists_and_looks_up_only_as_the_user_may(
    fake: FakeConfluence, events: list[Any], own_tokens: str
) -> None:
    """Through the request hook (#19): the space list answers what the sending account sees,
    so it is refused before it leaves unless own_tokens: user; a group's members need the
    user's own site access (rory has none); the agent's own account goes either way."""
    atlassian = pytest.importorskip("atlassian")
    fake.users["acc-rory"].can_use = False
    connection = {
        "id": "wiki",
        "integration": "confluence",
        "url": fake.url,
        "email": "engine@example.com",
        "api_token": literal("classic-token"),
        "own_tokens": own_tokens,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = atlassian.Confluence(
            url=fake.url + "/wiki", username="tool@example.com", password="tool-token"
        )

    def refused(call: Any, user: str) -> str:
        with Session(user).active(), pytest.raises(ActionRefused) as info:
            call()
        return info.value.code

    with Toolpass([connection]) as engine:
        kit = Toolkit(permissions=engine, audit=[events.append])
        me = kit.tool()(lambda: str(client.get_current_user()["accountId"]))
        spaces = kit.tool()(lambda: str(client.get_all_spaces()))
        members = kit.tool()(lambda: str(client.get_group_members("g-dev")))
        try:
            with Session(DANA).active():
                assert "acc-tool" in me()
            assert refused(members, RORY) == "not_authorized"
            if own_tokens == "unknown":
                assert refused(spaces, DANA) == "authorization_error"
        finally:
            intercept.uninstall()
    assert fake.seen("GET", r"/wiki/rest/api/(space|group/.*)") == []
    assert any(a["action"] == "use" for e in events for a in e.actions)
