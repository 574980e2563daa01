"""The Bitbucket Cloud route table (generated from the npm package bitbucket)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.bitbucket import _RANK, _REPO, _ROLES, _WORKSPACE, SITE, Bitbucket
from toolpass.integrations.routes import Request, fields, load

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/bitbucket/routes.json"
SAMPLES = {"workspace": "acme", "repo_slug": "api", "username": "acme"}


@pytest.fixture(scope="module")
def bitbucket() -> Bitbucket:
    (config,) = parse_connections(
        [
            {
                "id": "bb",
                "integration": "bitbucket",
                "username": "engine@example.com",
                "api_token": literal("token"),
            }
        ]
    )
    return Bitbucket(config)


def accepted(action: str, resource: str) -> bool:
    """What ``Bitbucket.check`` accepts for ``action``."""
    kind, _, ref = resource.partition(":")
    if action in _RANK:
        return kind == "repo" and _REPO.fullmatch(ref) is not None
    if action in _ROLES:
        return kind == "workspace" and _WORKSPACE.fullmatch(ref) is not None
    return resource == SITE


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/bitbucket/generate.py"
    assert data["source"].startswith("npm bitbucket 2.12.0 ")
    assert "306 operations" in data["source"]
    assert len(load("toolpass.integrations.bitbucket")) == len(data["routes"]) == 306
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    assert all(r[1].startswith("/2.0/") for r in data["routes"])


def test_every_action_is_declared() -> None:
    declared = {a.name for a in Bitbucket.actions}
    narrowed = {"delete_branch"}  # the hook's own narrowing of a branch's deletion
    assert {r.action for r in load("toolpass.integrations.bitbucket").routes} | narrowed == declared


def test_every_resource_template_is_a_resource_the_check_accepts() -> None:
    for route in load("toolpass.integrations.bitbucket").routes:
        resource = route.resource
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", SAMPLES[name])
        assert accepted(route.action, resource), route


def test_the_agents_own_routes_name_no_workspace() -> None:
    for route in load("toolpass.integrations.bitbucket").routes:
        assert route.agent == (route.action == "access"), route


@pytest.mark.skipif(
    "TOOLPASS_BITBUCKET_JS" not in os.environ, reason="needs the npm bitbucket package unpacked"
)
def test_regenerating_from_the_package_gives_the_committed_table() -> None:
    module = load_generator("bitbucket")
    rows, _ = module.build(Path(os.environ["TOOLPASS_BITBUCKET_JS"]))
    assert rows == json.loads(TABLE.read_text())["routes"]


@pytest.mark.parametrize(
    ("method", "path", "action", "resource", "effect"),
    [
        ("GET", "/2.0/repositories/acme/api/pullrequests/7/diff", "read", "repo:acme/api", "read"),
        ("POST", "/2.0/repositories/acme/api/forks", "read", "repo:acme/api", "write"),
        ("POST", "/2.0/repositories/acme/api/issues", "read", "repo:acme/api", "write"),
        ("PUT", "/2.0/repositories/acme/api", "admin", "repo:acme/api", "write"),
        ("POST", "/2.0/repositories/acme/new", "member", "workspace:acme", "write"),
        ("POST", "/2.0/repositories/acme/api/refs/branches", "write", "repo:acme/api", "write"),
        (
            "DELETE",
            "/2.0/repositories/acme/api/refs/branches/main",
            "delete_branch",
            "branch:acme/api/main",
            "destructive",
        ),
        ("POST", "/2.0/repositories/acme/api/pipelines", "write", "repo:acme/api", "write"),
        (
            "POST",
            "/2.0/repositories/acme/api/pullrequests/7/merge",
            "write",
            "pullrequest:acme/api/7",
            "write",
        ),
        ("POST", "/2.0/repositories/acme/api/src", "write", "branch:acme/api/", "write"),
        (
            "GET",
            "/2.0/repositories/acme/api/pipelines_config/variables",
            "admin",
            "repo:acme/api",
            "read",
        ),
        ("POST", "/2.0/repositories/acme/api/deploy-keys", "admin", "repo:acme/api", "write"),
        ("POST", "/2.0/workspaces/acme/projects", "owner", "workspace:acme", "write"),
        ("GET", "/2.0/workspaces/acme/projects/PRJ", "member", "workspace:acme", "read"),
        ("GET", "/2.0/teams/acme/search/code", "member", "workspace:acme", "read"),
        ("GET", "/2.0/snippets/acme/abc/files/x.py", "member", "workspace:acme", "read"),
        ("POST", "/2.0/users/me/ssh-keys", "access", "site", "write"),
        ("GET", "/2.0/user", "access", "site", "read"),
        ("GET", "/2.0/workspaces", "sender_lists", "site", "read"),
        ("GET", "/2.0/repositories", "sender_lists", "site", "read"),
        ("GET", "/2.0/snippets", "sender_lists", "site", "read"),
        ("GET", "/2.0/pullrequests/dana", "sender_lists", "site", "read"),
        ("GET", "/2.0/user/permissions/repositories", "sender_lists", "site", "read"),
    ],
)
def test_hand_checked_requests(
    bitbucket: Bitbucket, method: str, path: str, action: str, resource: str, effect: str
) -> None:
    found = bitbucket.match_request(Request(method, path))
    assert found is not None
    assert (found.action, found.resource, found.route.effect) == (action, resource, effect)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/2.0/nothing"),
        ("DELETE", "/1.0/repositories/acme/api"),
        ("POST", "/repositories/acme/api/pullrequests"),
        ("PATCH", "/2.0/repositories/acme/api"),
        ("POST", "/2.0//repositories/acme/api/pullrequests"),
    ],
)
def test_requests_matching_no_route(bitbucket: Bitbucket, method: str, path: str) -> None:
    assert bitbucket.match_request(Request(method, path)) is None


@pytest.mark.parametrize(
    "path",
    [
        "/2.0/repositories/acme/..",
        "/2.0/repositories/acme/api%2F..%2F..%2Fother%2Frepo",
        "/2.0/repositories/acme/%2E%2E",
    ],
)
def test_hostile_parameters_name_no_resource(bitbucket: Bitbucket, path: str) -> None:
    found = bitbucket.match_request(Request("DELETE", path))
    assert found is None or found.resource is None or accepted(found.action, found.resource)
    if found is not None and found.resource is not None:
        assert ".." not in found.resource


@pytest.mark.parametrize("ref", ["acme/..", "../api", "./.", "acme/api/x", "acme", "a b/c"])
def test_the_check_takes_no_dot_segments_or_odd_slugs(ref: str) -> None:
    assert not accepted("read", f"repo:{ref}")
