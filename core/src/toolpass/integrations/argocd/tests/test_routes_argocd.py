"""The Argo CD route table (generated from Argo CD's assets/swagger.json) and the request
hook's completion of its resources (integrations/_argocd_routes.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations._generate.sources import pinned_source
from toolpass.integrations.argocd import ArgoCD
from toolpass.integrations.routes import Request, load

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/argocd/routes.json"


@pytest.fixture(scope="module")
def argocd() -> ArgoCD:
    (config,) = parse_connections(
        [{"id": "argo", "integration": "argocd", "token": literal("engine-token")}]
    )
    return ArgoCD(config)


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/argocd/generate.py"
    assert data["source"].startswith("argoproj/argo-cd assets/swagger.json at 37ee0097cf85")
    assert len(load("toolpass.integrations.argocd")) == len(data["routes"]) == 106
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_every_routed_action_is_declared() -> None:
    routed = {r.action for r in load("toolpass.integrations.argocd").routes}
    assert not [a for a in routed if ArgoCD.action(a) is None]
    deletes = {
        r.effect
        for r in load("toolpass.integrations.argocd").routes
        if r.method == "DELETE" and not r.agent
    }
    assert deletes == {"destructive"}


def test_regenerating_from_the_swagger_gives_the_committed_table(tmp_path: Path) -> None:
    swagger = pinned_source("argocd", tmp_path)
    built = load_generator("argocd").build(json.loads(swagger.read_text()))
    assert built["routes"] == json.loads(TABLE.read_text())["routes"]


def _json(method: str, path: str, body: object, query: str = "") -> Request:
    headers = {"content-type": "application/json"}
    return Request(method, path, query, headers, json.dumps(body).encode())


@pytest.mark.parametrize(
    ("request_", "action", "resource", "effect"),
    [
        (
            Request("GET", "/api/v1/applications/guestbook"),
            "applications.get",
            "app:guestbook",
            "read",
        ),
        (
            Request("GET", "/api/v1/applications/guestbook", "appNamespace=apps"),
            "applications.get",
            "app:apps/guestbook",
            "read",
        ),
        (
            _json("POST", "/api/v1/applications/guestbook/sync", {"name": "guestbook"}),
            "applications.sync",
            "app:guestbook",
            "write",
        ),
        (
            _json("POST", "/api/v1/applications/g/sync", {"name": "g", "appNamespace": "apps"}),
            "applications.sync",
            "app:apps/g",
            "write",
        ),
        (
            Request("DELETE", "/api/v1/applications/guestbook"),
            "applications.delete",
            "app:guestbook",
            "destructive",
        ),
        (Request("GET", "/api/v1/applications"), "applications.get", "*/*", "read"),
        (
            _json(
                "POST",
                "/api/v1/applications",
                {"metadata": {"name": "web"}, "spec": {"project": "team-a"}},
            ),
            "applications.create",
            "team-a/web",
            "write",
        ),
        (
            _json(
                "POST",
                "/api/v1/applications",
                {"metadata": {"name": "web", "namespace": "apps"}, "spec": {"project": "team-a"}},
            ),
            "applications.create",
            "team-a/apps/web",
            "write",
        ),
        (
            _json(
                "PUT",
                "/api/v1/applications/web",
                {"metadata": {"name": "web"}, "spec": {"project": "team-b"}},
            ),
            "applications.update",
            "app:web@team-b",
            "write",
        ),
        (
            Request(
                "POST",
                "/api/v1/applications/web/resource/actions",
                "group=apps&kind=Deployment&action=restart&resourceName=web&namespace=prod",
            ),
            "applications.action/apps/Deployment/restart",
            "app:web",
            "write",
        ),
        (
            Request(
                "DELETE",
                "/api/v1/applications/web/resource",
                "kind=ConfigMap&namespace=prod&resourceName=settings&version=v1",
            ),
            "applications.delete//ConfigMap/prod/settings",
            "app:web",
            "destructive",
        ),
        (Request("GET", "/api/v1/applications/web/logs"), "logs.get", "app:web", "read"),
        (
            Request("GET", "/api/v1/clusters/https%3A%2F%2Fprod.example.com"),
            "clusters.get",
            "cluster:https://prod.example.com",
            "read",
        ),
        (
            Request("DELETE", "/api/v1/clusters/prod", "id.type=name"),
            "clusters.delete",
            "cluster-name:prod",
            "destructive",
        ),
        (
            Request("GET", "/api/v1/repositories/https%3A%2F%2Fgit.example.com%2Fa.git"),
            "repositories.get",
            "repo:https://git.example.com/a.git",
            "read",
        ),
        (
            _json(
                "POST",
                "/api/v1/repositories",
                {"repo": "https://git.example.com/b.git", "project": "team-a"},
            ),
            "repositories.create",
            "team-a/https://git.example.com/b.git",
            "write",
        ),
        (Request("DELETE", "/api/v1/projects/team-a"), "projects.delete", "team-a", "destructive"),
        (
            _json("POST", "/api/v1/projects", {"project": {"metadata": {"name": "team-c"}}}),
            "projects.create",
            "team-c",
            "write",
        ),
        (
            Request("POST", "/api/v1/projects/team-a/roles/ci/token"),
            "projects.update",
            "team-a",
            "write",
        ),
        (Request("POST", "/api/v1/account/ci/token"), "accounts.update", "ci", "write"),
        (Request("DELETE", "/api/v1/gpgkeys", "keyID=ABC"), "gpgkeys.delete", "*", "destructive"),
        (
            Request("GET", "/api/v1/applicationsets/fleet"),
            "applicationsets.get",
            "appset:fleet",
            "read",
        ),
    ],
)
def test_hand_checked_requests(
    argocd: ArgoCD, request_: Request, action: str, resource: str, effect: str
) -> None:
    found = argocd.match_request(request_)
    assert found is not None
    assert (found.action, found.resource, found.route.effect) == (action, resource, effect)


def test_a_sync_with_local_manifests_needs_override(argocd: ArgoCD) -> None:
    body = {"name": "web", "manifests": ["kind: ConfigMap"]}
    found = argocd.match_request(_json("POST", "/api/v1/applications/web/sync", body))
    assert found is not None
    assert (found.action, found.resource) == ("applications.override", "app:web")
    plain = argocd.match_request(_json("POST", "/api/v1/applications/web/sync", {"revision": "v2"}))
    assert plain is not None
    assert plain.action == "applications.sync"


def test_logs_and_manifests_are_untrusted_and_the_session_is_the_agents(argocd: ArgoCD) -> None:
    for path in ("/api/v1/applications/web/logs", "/api/v1/applications/web/manifests"):
        found = argocd.match_request(Request("GET", path))
        assert found is not None
        assert found.route.untrusted
    session = argocd.match_request(Request("GET", "/api/v1/session/userinfo"))
    assert session is not None
    assert session.route.agent


@pytest.mark.parametrize(
    "request_",
    [
        Request("GET", "/api/v1/applications/web", "appNamespace=a&appNamespace=b"),
        _json("POST", "/api/v1/applications/web/sync", {"appNamespace": "b"}, "appNamespace=a"),
        _json("PATCH", "/api/v1/applications/web", {"patch": '{"spec":{"project":"x"}}'}),
        _json("POST", "/api/v1/applications", {"metadata": {"name": "web"}}, "upsert=true"),
        _json("POST", "/api/v1/applications", {"spec": {"project": "a"}}),
        Request("POST", "/api/v1/applications/web/resource/actions", "kind=Deployment"),
        Request("DELETE", "/api/v1/clusters/x", "id.type=other"),
        Request("GET", "/api/v1/applications/..%2Fx"),
        Request("POST", "/api/v1/repositories/https%3A%2F%2Fa/validate"),
        Request(
            "POST", "/api/v1/applications/web/sync", "", {"content-type": "application/json"}, b"{"
        ),
    ],
)
def test_unclear_requests_name_no_resource(argocd: ArgoCD, request_: Request) -> None:
    found = argocd.match_request(request_)
    assert found is not None
    assert found.resource is None


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/api/v2/applications"), ("DELETE", "/api/v1/nothing"), ("POST", "/terminal")],
)
def test_requests_matching_no_route(argocd: ArgoCD, method: str, path: str) -> None:
    assert argocd.match_request(Request(method, path)) is None
