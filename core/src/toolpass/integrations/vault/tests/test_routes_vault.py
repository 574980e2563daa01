"""The Vault route table (curated from Vault's API documentation) and Vault's override, which
reads ``GET ?list=true`` as LIST and a request to another namespace as naming nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.routes import Request, fields, load
from toolpass.integrations.vault import Vault

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/vault/routes.json"


def vault(**extra: object) -> Vault:
    settings = {"id": "vault", "integration": "vault", "url": "https://vault.example:8200"}
    (config,) = parse_connections([{**settings, "token": literal("t0ken-value"), **extra}])
    return Vault(config)


@pytest.fixture(scope="module")
def v() -> Vault:
    return vault()


def test_the_table_loads_with_its_source_and_regenerates() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/vault/generate.py"
    assert data["source"].startswith("curated from the Vault API documentation")
    assert load_generator("vault").build() == data["routes"]
    assert len(load("toolpass.integrations.vault")) == len(data["routes"]) > 150
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_every_route_names_a_declared_action_and_its_own_path() -> None:
    """The resource of every route is ``path:`` and the request's path without /v1: Vault
    checks capabilities on the API path itself."""
    for route in load("toolpass.integrations.vault").routes:
        assert Vault.action(route.action) is not None, route
        resource = route.resource
        path = route.path.replace("+}", "}")
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", f"<{name}>")
            path = path.replace("{" + name + "}", f"<{name}>")
        assert path.startswith("/v1/"), route
        assert resource == "path:" + path[4:], route


@pytest.mark.parametrize(
    ("method", "path", "query", "action", "resource"),
    [
        ("GET", "/v1/secret/data/app/db", "version=2", "read", "path:secret/data/app/db"),
        ("POST", "/v1/secret/data/app/db", "", "write", "path:secret/data/app/db"),
        ("PATCH", "/v1/secret/data/app/db", "", "patch", "path:secret/data/app/db"),
        ("DELETE", "/v1/secret/metadata/app/db", "", "delete", "path:secret/metadata/app/db"),
        ("POST", "/v1/secret/destroy/app/db", "", "update", "path:secret/destroy/app/db"),
        ("LIST", "/v1/secret/metadata/app", "", "list", "path:secret/metadata/app"),
        ("GET", "/v1/secret/metadata/app", "list=true", "list", "path:secret/metadata/app"),
        ("GET", "/v1/secret/metadata/app", "list=1", "list", "path:secret/metadata/app"),
        ("GET", "/v1/secret/metadata/app", "list=false", "read", "path:secret/metadata/app"),
        ("GET", "/v1/kv/team/a", "", "read", "path:kv/team/a"),
        ("PUT", "/v1/kv/team/a", "", "write", "path:kv/team/a"),
        ("GET", "/v1/database/creds/app", "", "read", "path:database/creds/app"),
        ("POST", "/v1/transit/encrypt/orders", "", "update", "path:transit/encrypt/orders"),
        ("POST", "/v1/pki/issue/web", "", "update", "path:pki/issue/web"),
        ("POST", "/v1/sys/audit/file", "", "sudo.update", "path:sys/audit/file"),
        ("DELETE", "/v1/sys/auth/ldap", "", "sudo.delete", "path:sys/auth/ldap"),
        ("LIST", "/v1/auth/token/accessors", "", "sudo.list", "path:auth/token/accessors"),
        ("PUT", "/v1/sys/policies/acl/admin", "", "write", "path:sys/policies/acl/admin"),
        ("DELETE", "/v1/sys/policies/acl/admin", "", "delete", "path:sys/policies/acl/admin"),
        ("POST", "/v1/sys/mounts/team/kv", "", "write", "path:sys/mounts/team/kv"),
        ("GET", "/v1/auth/token/lookup-self", "", "read", "path:auth/token/lookup-self"),
        ("POST", "/v1/auth/approle/login", "", "update", "path:auth/approle/login"),
    ],
)
def test_requests_take_their_routes(
    v: Vault, method: str, path: str, query: str, action: str, resource: str
) -> None:
    found = v.match_request(Request(method, path, query, None, b""))
    assert found is not None
    assert (found.route.action, found.resource) == (action, resource)


def test_hand_checked_effects_and_flags(v: Vault) -> None:
    def route(method: str, path: str) -> tuple[str, str]:
        found = v.match_request(Request(method, path, "", None, b""))
        assert found is not None
        return found.effect, found.route.flags

    assert route("GET", "/v1/secret/data/app/db") == ("read", "u")
    assert route("POST", "/v1/secret/destroy/app/db") == ("destructive", "")
    assert route("DELETE", "/v1/secret/metadata/app/db") == ("destructive", "")
    assert route("POST", "/v1/sys/seal") == ("destructive", "")
    assert route("GET", "/v1/sys/health") == ("read", "a")


@pytest.mark.parametrize("query", ["list=maybe", "list=true&list=false", "list=TRUE&list=x"])
def test_an_unclear_list_parameter_names_no_resource(v: Vault, query: str) -> None:
    found = v.match_request(Request("GET", "/v1/secret/metadata/app", query, None, b""))
    assert found is not None
    assert found.resource is None


def test_another_namespace_names_no_resource() -> None:
    plain = vault()
    headers = {"X-Vault-Namespace": "team-b"}
    found = plain.match_request(Request("GET", "/v1/secret/data/x", "", headers, b""))
    assert found is not None
    assert found.resource is None
    team = vault(namespace="team-b")
    found = team.match_request(Request("GET", "/v1/secret/data/x", "", headers, b""))
    assert found is not None
    assert found.resource == "path:secret/data/x"
    assert team.match_request(Request("GET", "/v1/secret/data/x", "", None, b"")).resource is None


@pytest.mark.parametrize(
    "path", ["/v1/secret/data/a%2F..%2Fsys", "/v1/secret/data/..", "/v1/secret/%2e%2e/x"]
)
def test_hostile_paths_name_no_resource(v: Vault, path: str) -> None:
    found = v.match_request(Request("GET", path, "", None, b""))
    assert found is None or found.resource is None


@pytest.mark.parametrize("method", ["GET", "LIST", "POST", "PUT", "PATCH", "DELETE"])
def test_every_path_under_v1_takes_a_route(v: Vault, method: str) -> None:
    found = v.match_request(Request(method, "/v1/anything/at/all", "", None, b""))
    assert found is not None
    assert found.resource == "path:anything/at/all"


@given(st.text(alphabet="ab/.%2F+*-_ ", max_size=30))
def test_a_resolved_resource_never_climbs(v: Vault, tail: str) -> None:
    found = v.match_request(Request("GET", "/v1/" + tail, "", None, b""))
    if found is None or found.resource is None:
        return
    assert found.resource.startswith("path:")
    assert ".." not in found.resource[5:].split("/")
