"""The Kubernetes route table (generated from the kubernetes client) and its overrides."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from toolpass.engine import LookupFailed, literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.kubernetes import (
    Kubernetes,
    classify,
    parse_resource,
    review_attributes,
    structural_match,
)
from toolpass.integrations.routes import Match, Request, fill, load

REPO = Path(__file__).resolve().parents[6]
GENERATOR = REPO / "core/src/toolpass/integrations/kubernetes/generate.py"
TABLE = REPO / "core/src/toolpass/integrations/kubernetes/routes.json"
SAMPLES = {
    "namespace": "payments",
    "name": "web-0",
    "path": "metrics",
    "logpath": "kube-apiserver.log",
    "check": "etcd",
}


@pytest.fixture(scope="module")
def k8s() -> Kubernetes:
    (config,) = parse_connections(
        [
            {
                "id": "k8s",
                "integration": "kubernetes",
                "url": "https://k8s.example",
                "token": literal("engine-token"),
            }
        ]
    )
    return Kubernetes(config)


def request(
    method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> Request:
    path, _, query = url.partition("?")
    return Request(method, path, query, headers, body)


def sample_path(template: str) -> str:
    return re.sub(r"\{(\w+)\+?\}", lambda m: SAMPLES[m[1]], template)


def generator() -> ModuleType:
    return load_generator("kubernetes")


def installed_client() -> Path:
    found = importlib.util.find_spec("kubernetes")
    if found is None or found.origin is None:
        pytest.skip("the kubernetes client is not installed")
    return Path(found.origin).parent


# --- the table -----------------------------------------------------------------------------
def test_the_table_loads_with_its_source() -> None:
    document = json.loads(TABLE.read_text())
    assert document["source"].startswith("PyPI kubernetes ")
    assert document["generator"] == "core/src/toolpass/integrations/kubernetes/generate.py"
    table = load("toolpass.integrations.kubernetes")
    assert len(table) == len(document["routes"]) > 1000
    assert Kubernetes.route_table().routes == table.routes


def test_every_action_is_declared() -> None:
    declared = {a.name for a in Kubernetes.actions}
    used = {r.action for r in load("toolpass.integrations.kubernetes").routes}
    assert used <= declared
    assert {"get", "list", "watch", "create", "update", "patch", "delete"} <= used
    assert {"deletecollection", "exec", "attach", "portforward", "logs", "evict", "scale"} <= used


def test_every_resource_template_is_a_resource_the_integration_checks() -> None:
    for route in load("toolpass.integrations.kubernetes").routes:
        resource = fill(route.resource, SAMPLES, Request(route.method, "/"))
        assert resource is not None, route
        target = parse_resource(resource)
        verb, _ = review_attributes(route.action, target)  # shortcuts fit their resource
        assert verb, route


def test_rows_are_sorted_and_unique() -> None:
    rows = json.loads(TABLE.read_text())["routes"]
    assert rows == sorted(rows, key=lambda r: (r[1], r[0]))
    assert len({(r[0], r[1]) for r in rows}) == len(rows)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, Any, Any]:
    """The generator run on the installed client: its operations and the table it writes."""
    gen = generator()
    client = installed_client()
    out = tmp_path_factory.mktemp("routes") / "kubernetes.json"
    assert gen.main(["--source", str(client), "--out", str(out)]) == 0
    _version, ops = gen.operations(client)
    return gen, ops, json.loads(out.read_text())


def test_coverage_every_client_operation_is_a_row_or_an_excluded_custom_object(
    regenerated: tuple[ModuleType, Any, Any],
) -> None:
    gen, ops, _ = regenerated
    document = json.loads(TABLE.read_text())
    counts = document["operations"]
    rows = {(r[0], r[1]): r for r in document["routes"]}
    custom = [op for op in ops if op[0] == "custom_objects_api"]
    served = [op for op in ops if op[0] != "custom_objects_api"]
    assert len(custom) == counts["excluded_operations"] == 28
    assert len(served) == counts["rows"]
    assert len(rows) == counts["rows"] + counts["legacy_watch_rows"] + counts["curated_rows"]
    for _module, name, method, path in served:
        assert (method, gen.route_path(path)) in rows, name
    # the excluded custom-object operations are all placed by the structural fallback
    values = {"group": "stable.example.com", "version": "v1", "plural": "crontabs"}
    values |= {"resource_plural": "crontabs", **SAMPLES}
    for _module, name, method, path in custom:
        url = re.sub(r"\{(\w+)\}", lambda m: values[m[1]], path)
        assert load("toolpass.integrations.kubernetes").match(request(method, url)) is None, name
        found = structural_match(request(method, url))
        assert found is not None, name
        assert found.resource is not None, name
        parse_resource(found.resource)


def test_the_committed_table_is_what_the_generator_writes(
    regenerated: tuple[ModuleType, Any, Any],
) -> None:
    fresh, committed = regenerated[2], json.loads(TABLE.read_text())
    assert fresh["routes"] == committed["routes"]
    assert fresh["operations"] == committed["operations"]


# --- hand-checked against the Kubernetes API reference --------------------------------------
CHECKED = [
    # (method, url, action, resource, effect, flags)
    ("GET", "/api/v1/namespaces/payments/pods", "list", "namespaces/payments/pods", "read", "u"),
    ("GET", "/api/v1/pods", "list", "pods", "read", "u"),
    (
        "GET",
        "/api/v1/namespaces/payments/pods/web-0/log?container=app&tailLines=50",
        "logs",
        "namespaces/payments/pods/web-0/log",
        "read",
        "u",
    ),
    (
        "POST",
        "/api/v1/namespaces/payments/pods/web-0/exec?command=ls&stdout=true",
        "exec",
        "namespaces/payments/pods/web-0/exec",
        "write",
        "us",
    ),
    (
        "GET",
        "/api/v1/namespaces/payments/pods/web-0/exec?command=sh&stdin=true&tty=true",
        "exec",
        "namespaces/payments/pods/web-0/exec",
        "write",
        "us",
    ),
    (
        "POST",
        "/api/v1/namespaces/payments/pods/web-0/portforward?ports=8080",
        "portforward",
        "namespaces/payments/pods/web-0/portforward",
        "write",
        "us",
    ),
    (
        "POST",
        "/api/v1/namespaces/payments/pods/web-0/attach?stdin=true",
        "attach",
        "namespaces/payments/pods/web-0/attach",
        "write",
        "us",
    ),
    (
        "DELETE",
        "/api/v1/namespaces/payments/pods/web-0",
        "delete",
        "namespaces/payments/pods/web-0",
        "destructive",
        "",
    ),
    (
        "DELETE",
        "/api/v1/namespaces/payments/pods?labelSelector=app%3Dweb",
        "deletecollection",
        "namespaces/payments/pods",
        "destructive",
        "",
    ),
    (
        "POST",
        "/api/v1/namespaces/payments/pods/web-0/eviction",
        "evict",
        "namespaces/payments/pods/web-0/eviction",
        "destructive",
        "",
    ),
    (
        "GET",
        "/api/v1/namespaces/payments/secrets/db",
        "get",
        "namespaces/payments/secrets/db",
        "read",
        "",
    ),
    (
        "GET",
        "/api/v1/namespaces/payments/configmaps",
        "list",
        "namespaces/payments/configmaps",
        "read",
        "u",
    ),
    (
        "GET",
        "/apis/apps/v1/namespaces/payments/deployments/api",
        "get",
        "namespaces/payments/deployments.apps/api",
        "read",
        "",
    ),
    (
        "PATCH",
        "/apis/apps/v1/namespaces/payments/deployments/api",
        "patch",
        "namespaces/payments/deployments.apps/api",
        "write",
        "",
    ),
    (
        "PUT",
        "/apis/apps/v1/namespaces/payments/deployments/api",
        "update",
        "namespaces/payments/deployments.apps/api",
        "write",
        "",
    ),
    (
        "PATCH",
        "/apis/apps/v1/namespaces/payments/deployments/api/scale",
        "scale",
        "namespaces/payments/deployments.apps/api/scale",
        "write",
        "",
    ),
    (
        "PUT",
        "/apis/apps/v1/namespaces/payments/deployments/api/scale",
        "update",
        "namespaces/payments/deployments.apps/api/scale",
        "write",
        "",
    ),
    (
        "DELETE",
        "/apis/apps/v1/namespaces/payments/deployments/api",
        "delete",
        "namespaces/payments/deployments.apps/api",
        "destructive",
        "",
    ),
    (
        "POST",
        "/apis/batch/v1/namespaces/payments/jobs",
        "create",
        "namespaces/payments/jobs.batch",
        "write",
        "",
    ),
    ("GET", "/apis/apps/v1/deployments", "list", "deployments.apps", "read", ""),
    ("GET", "/api/v1/nodes/node-1", "get", "nodes/node-1", "read", ""),
    (
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/view",
        "get",
        "clusterroles.rbac.authorization.k8s.io/view",
        "read",
        "",
    ),
    ("GET", "/api/v1/namespaces/payments", "get", "namespaces/payments", "read", ""),
    (
        "PUT",
        "/api/v1/namespaces/payments/finalize",
        "update",
        "namespaces/payments/finalize",
        "write",
        "",
    ),
    (
        "PATCH",
        "/api/v1/namespaces/payments/status",
        "patch",
        "namespaces/payments/status",
        "write",
        "",
    ),
    (
        "POST",
        "/api/v1/namespaces/payments/serviceaccounts/build/token",
        "create",
        "namespaces/payments/serviceaccounts/build/token",
        "write",
        "",
    ),
    (
        "PUT",
        "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr-1/approval",
        "update",
        "certificatesigningrequests.certificates.k8s.io/csr-1/approval",
        "write",
        "",
    ),
    (
        "GET",
        "/api/v1/namespaces/payments/services/web:http/proxy/healthz",
        "get",
        "namespaces/payments/services/web:http/proxy",
        "read",
        "us",
    ),
    (
        "POST",
        "/api/v1/namespaces/payments/pods/web-0/proxy/api/orders",
        "create",
        "namespaces/payments/pods/web-0/proxy",
        "write",
        "us",
    ),
    ("GET", "/api/v1/nodes/node-1/proxy/pods", "get", "nodes/node-1/proxy", "write", "us"),
    (
        "GET",
        "/apis/events.k8s.io/v1/namespaces/payments/events",
        "list",
        "namespaces/payments/events.events.k8s.io",
        "read",
        "u",
    ),
    (
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        "create",
        "selfsubjectaccessreviews.authorization.k8s.io",
        "read",
        "a",
    ),
    (
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        "create",
        "selfsubjectreviews.authentication.k8s.io",
        "read",
        "a",
    ),
    (
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        "create",
        "subjectaccessreviews.authorization.k8s.io",
        "read",
        "",
    ),
    ("GET", "/version", "get", "/version/", "read", "a"),
    ("GET", "/apis", "get", "/apis/", "read", "a"),
    ("GET", "/apis/apps/v1", "get", "/apis/apps/v1/", "read", "a"),
    ("GET", "/openapi/v3/apis/apps/v1?hash=ab12", "get", "/openapi/v3/apis/apps/v1", "read", "a"),
    ("GET", "/logs/kube-apiserver.log", "get", "/logs/kube-apiserver.log", "read", "u"),
    (
        "GET",
        "/api/v1/watch/namespaces/payments/pods/web-0",
        "watch",
        "namespaces/payments/pods/web-0",
        "read",
        "u",
    ),
    (
        "GET",
        "/apis/apps/v1/watch/namespaces/payments/deployments",
        "watch",
        "namespaces/payments/deployments.apps",
        "read",
        "",
    ),
]


@pytest.mark.parametrize(("method", "url", "action", "resource", "effect", "flags"), CHECKED)
def test_hand_checked_requests(
    k8s: Kubernetes, method: str, url: str, action: str, resource: str, effect: str, flags: str
) -> None:
    found = k8s.match_request(request(method, url))
    assert found is not None
    assert (found.action, found.resource, found.effect, found.route.flags) == (
        action,
        resource,
        effect,
        flags,
    )
    assert (
        load("toolpass.integrations.kubernetes").match(request(method, url)) is not None
    )  # a row, no fallback


def test_a_request_matching_no_route() -> None:
    table = load("toolpass.integrations.kubernetes")
    assert table.match(request("GET", "/nothing/here")) is None
    assert table.match(request("POST", "/api/v1/namespaces/payments/pods/web-0/log")) is None
    assert table.match(request("TRACE", "/api/v1/pods")) is None


def test_writes_the_fallback_cannot_place_are_refused(k8s: Kubernetes) -> None:
    for method, url in [
        ("POST", "/healthz"),
        ("DELETE", "/version"),
        ("POST", "/apis"),
        ("PUT", "/apis/stable.example.com/v1"),
        ("POST", "/api/v1/proxy/namespaces/payments/pods/web-0"),  # legacy, no longer served
        ("TRACE", "/api/v1/namespaces/payments/pods"),
    ]:
        assert k8s.match_request(request(method, url)) is None, (method, url)


# --- overrides: ?watch= ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "action"),
    [
        ("watch=true", "watch"),
        ("watch=1", "watch"),
        ("watch=True&resourceVersion=10", "watch"),
        ("%77atch=true", "watch"),
        ("watch=false", "list"),
        ("watch=0", "list"),
        ("watch=", "list"),
        ("watch=false&watch=true", "list"),  # the first value counts, as for the API server
        ("labelSelector=app%3Dwatch", "list"),
        ("", "list"),
    ],
)
def test_watch_query_turns_a_list_into_a_watch(k8s: Kubernetes, query: str, action: str) -> None:
    found = k8s.match_request(request("GET", f"/api/v1/namespaces/payments/pods?{query}"))
    assert found is not None
    assert (found.action, found.resource, found.effect) == (
        action,
        "namespaces/payments/pods",
        "read",
    )
    assert found.route.untrusted


def test_watch_query_leaves_an_object_get_a_get(k8s: Kubernetes) -> None:
    found = k8s.match_request(request("GET", "/api/v1/namespaces/payments/pods/web-0?watch=true"))
    assert found is not None
    assert found.action == "get"


# --- overrides: custom resources and paths the table lacks --------------------------------
CRDS = [
    (
        "GET",
        "/apis/stable.example.com/v1/namespaces/payments/crontabs",
        "list",
        "namespaces/payments/crontabs.stable.example.com",
        "read",
    ),
    (
        "GET",
        "/apis/stable.example.com/v1/namespaces/payments/crontabs?watch=true",
        "watch",
        "namespaces/payments/crontabs.stable.example.com",
        "read",
    ),
    (
        "GET",
        "/apis/stable.example.com/v1/watch/namespaces/payments/crontabs",
        "watch",
        "namespaces/payments/crontabs.stable.example.com",
        "read",
    ),
    (
        "POST",
        "/apis/stable.example.com/v1/namespaces/payments/crontabs",
        "create",
        "namespaces/payments/crontabs.stable.example.com",
        "write",
    ),
    (
        "GET",
        "/apis/stable.example.com/v1/namespaces/payments/crontabs/nightly",
        "get",
        "namespaces/payments/crontabs.stable.example.com/nightly",
        "read",
    ),
    (
        "PATCH",
        "/apis/stable.example.com/v1/namespaces/payments/crontabs/nightly",
        "patch",
        "namespaces/payments/crontabs.stable.example.com/nightly",
        "write",
    ),
    (
        "PUT",
        "/apis/stable.example.com/v1/namespaces/payments/crontabs/nightly/status",
        "update",
        "namespaces/payments/crontabs.stable.example.com/nightly/status",
        "write",
    ),
    (
        "PATCH",
        "/apis/stable.example.com/v1/namespaces/payments/crontabs/nightly/scale",
        "scale",
        "namespaces/payments/crontabs.stable.example.com/nightly/scale",
        "write",
    ),
    (
        "DELETE",
        "/apis/stable.example.com/v1/namespaces/payments/crontabs/nightly",
        "delete",
        "namespaces/payments/crontabs.stable.example.com/nightly",
        "destructive",
    ),
    (
        "DELETE",
        "/apis/stable.example.com/v1/namespaces/payments/crontabs",
        "deletecollection",
        "namespaces/payments/crontabs.stable.example.com",
        "destructive",
    ),
    ("GET", "/apis/stable.example.com/v1/crontabs", "list", "crontabs.stable.example.com", "read"),
    (
        "DELETE",
        "/apis/cert-manager.io/v1/clusterissuers/letsencrypt",
        "delete",
        "clusterissuers.cert-manager.io/letsencrypt",
        "destructive",
    ),
    (
        "POST",
        "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications",
        "create",
        "namespaces/argocd/applications.argoproj.io",
        "write",
    ),
    # an aggregated API and versions the table does not carry
    (
        "GET",
        "/apis/metrics.k8s.io/v1beta1/namespaces/payments/pods/web-0",
        "get",
        "namespaces/payments/pods.metrics.k8s.io/web-0",
        "read",
    ),
    (
        "POST",
        "/apis/apps/v1beta2/namespaces/payments/deployments",
        "create",
        "namespaces/payments/deployments.apps",
        "write",
    ),
    (
        "PATCH",
        "/apis/apps/v1/namespaces/payments/deployments/api/newsub",
        "patch",
        "namespaces/payments/deployments.apps/api/newsub",
        "write",
    ),
]


@pytest.mark.parametrize(("method", "url", "action", "resource", "effect"), CRDS)
def test_custom_resources_are_checked_by_verb(
    k8s: Kubernetes, method: str, url: str, action: str, resource: str, effect: str
) -> None:
    assert load("toolpass.integrations.kubernetes").match(request(method, url)) is None
    found = k8s.match_request(request(method, url))
    assert found is not None
    assert (found.action, found.resource, found.effect) == (action, resource, effect)
    review_attributes(found.action, parse_resource(resource))


def test_unknown_versions_of_built_in_types_keep_their_flags(k8s: Kubernetes) -> None:
    events = k8s.match_request(
        request("GET", "/apis/events.k8s.io/v1beta1/namespaces/payments/events")
    )
    assert events is not None
    assert events.route.flags == "u"
    review = k8s.match_request(
        request("POST", "/apis/authorization.k8s.io/v1beta1/selfsubjectaccessreviews")
    )
    assert review is not None
    assert (review.effect, review.route.flags) == ("read", "a")
    exec_ = k8s.match_request(request("POST", "/api/v2/namespaces/payments/pods/web-0/exec"))
    assert exec_ is not None
    assert (exec_.action, exec_.route.flags) == ("exec", "us")


def test_non_resource_reads_and_discovery(k8s: Kubernetes) -> None:
    found = k8s.match_request(request("GET", "/apis/stable.example.com/v1"))
    assert found is not None
    assert (found.action, found.resource, found.route.flags) == (
        "get",
        "/apis/stable.example.com/v1",
        "a",
    )
    found = k8s.match_request(request("GET", "/debug/pprof/heap"))
    assert found is not None
    assert (found.action, found.resource, found.route.flags) == ("get", "/debug/pprof/heap", "")
    assert review_attributes("get", parse_resource("/debug/pprof/heap"))[0] == "get"


def test_every_row_agrees_with_the_structural_rules() -> None:
    """The generator and the integration's fallback derive verbs, effects and flags
    independently; every resource row must come out the same both ways."""
    for route in load("toolpass.integrations.kubernetes").routes:
        if route.resource.startswith("/"):
            continue  # non-resource rows: curated flags
        url = sample_path(route.path)
        found = structural_match(request(route.method, url))
        assert found is not None, route
        expected = fill(route.resource, SAMPLES, Request(route.method, "/"))
        got = (found.action, found.resource, found.effect, found.route.flags)
        assert got == (route.action, expected, route.effect, route.flags), route


def test_classify_names_only_declared_actions() -> None:
    declared = {a.name for a in Kubernetes.actions}
    for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        for group, resource in [("", "pods"), ("", "nodes"), ("apps", "deployments")]:
            for sub in ("", "exec", "log", "eviction", "scale", "proxy", "status"):
                for named in (True, False):
                    found = classify(method, group, resource, named, sub)
                    assert found is not None
                    assert found[0] in declared
    assert classify("TRACE", "", "pods", True, "") is None


# --- overrides: hostile paths ------------------------------------------------------------------
HOSTILE = [
    ("GET", "/api/v1/namespaces/payments/secrets/.."),
    ("GET", "/api/v1/namespaces/payments/secrets/%2E%2E"),
    ("DELETE", "/api/v1/namespaces/payments/pods/a%2Fb"),
    ("DELETE", "/api/v1/namespaces/%2E%2E/pods/web-0"),
    ("PATCH", "/apis/apps/v1/namespaces/payments/deployments/..%2Fsecrets"),
    ("DELETE", "/apis/stable.example.com/v1/namespaces/payments/crontabs/%2E%2E"),
    ("DELETE", "/apis/stable.example.com/v1/namespaces/pay%2Fments/crontabs/x"),
    ("PUT", "/apis/stable.example.com/v1/namespaces/payments/crontabs/a%5Cb"),
    ("GET", "/api/v1/namespaces/payments/pods/web-0/proxy/../../../secrets/db"),
    ("GET", "/api/v1/namespaces/payments/pods/web-0/proxy/%2E%2E/x"),
    ("POST", "/apis/stable.example.com/v1//crontabs"),
    ("GET", "/apis/stable.example.com/v1/namespaces//crontabs"),
    ("POST", "/apis/stable.example.com/v1/namespaces/payments/crontabs/%00"),
    ("DELETE", "/apis/stable.example.com/v1/namespaces/payments/crontabs/x\u2215y"),
]


@pytest.mark.parametrize(("method", "url"), HOSTILE)
def test_hostile_paths_name_no_resource(k8s: Kubernetes, method: str, url: str) -> None:
    found = k8s.match_request(request(method, url))
    assert found is None or found.resource is None


def test_a_doubled_slash_is_not_a_different_object(k8s: Kubernetes) -> None:
    # the matcher strips the ends only; an inner empty segment never names an object
    found = k8s.match_request(request("DELETE", "/api/v1/namespaces/payments//pods/web-0"))
    assert found is None or found.resource is None


def test_proxy_paths_the_client_encodes_keep_their_resource(k8s: Kubernetes) -> None:
    client_module = pytest.importorskip("kubernetes.client")
    client = client_module.ApiClient(client_module.Configuration(host="https://k8s.example"))
    _method, url, *_ = client.param_serialize(
        method="GET",
        resource_path="/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}",
        path_params={"namespace": "payments", "name": "web-0", "path": "api/v1/orders"},
    )
    path = url.removeprefix("https://k8s.example")
    assert "%2F" in path  # the client encodes the proxied path's slashes
    found = k8s.match_request(request("GET", path))
    assert found is not None
    assert (found.action, found.resource) == ("get", "namespaces/payments/pods/web-0/proxy")
    logs = k8s.match_request(request("GET", "/logs/pods%2Fweb.log"))
    assert logs is not None
    assert logs.resource == "/logs/pods/web.log"


# --- overrides: impersonation -------------------------------------------------------------------
def test_impersonating_a_user_is_checked_as_impersonate(k8s: Kubernetes) -> None:
    url = "/api/v1/namespaces/payments/pods"
    found = k8s.match_request(request("GET", url, headers={"Impersonate-User": "admin"}))
    assert found is not None
    assert (found.action, found.resource, found.effect) == ("impersonate", "users/admin", "write")
    assert found.route.untrusted  # the response is still the pods'
    found = k8s.match_request(
        request(
            "DELETE",
            url + "/web-0",
            headers={"Impersonate-User": "system:serviceaccount:payments:build"},
        )
    )
    assert found is not None
    assert (found.action, found.resource, found.effect) == (
        "impersonate",
        "namespaces/payments/serviceaccounts/build",
        "destructive",
    )
    assert found.resource is not None
    review_attributes(found.action, parse_resource(found.resource))


@pytest.mark.parametrize(
    "headers",
    [
        {"Impersonate-User": "dana", "Impersonate-Group": "system:masters"},
        {"Impersonate-Group": "system:masters"},
        {"Impersonate-User": "dana", "Impersonate-Uid": "1234"},
        {"Impersonate-User": "dana", "Impersonate-Extra-Scopes": "view"},
        {"Impersonate-User": "../admin"},
        {"Impersonate-User": ""},
    ],
)
def test_impersonation_that_one_check_cannot_cover_names_no_resource(
    k8s: Kubernetes, headers: dict[str, str]
) -> None:
    found = k8s.match_request(request("PATCH", "/api/v1/nodes/node-1", headers=headers))
    assert found is not None
    assert (found.action, found.resource) == ("impersonate", None)


# --- sanity of the helpers used above --------------------------------------------------------
def test_samples_fill_every_parameter() -> None:
    names: set[str] = set()
    for route in load("toolpass.integrations.kubernetes").routes:
        names |= set(re.findall(r"\{(\w+)\+?\}", route.path))
    assert names <= set(SAMPLES)


def test_rest_routes_are_only_proxies_logs_and_curated_reads() -> None:
    rest = {
        r.path for r in load("toolpass.integrations.kubernetes").routes if r.path.endswith("+}")
    }
    assert all(
        ("/proxy/" in p)
        or p.startswith(("/logs/", "/openapi/", "/healthz/", "/livez/", "/readyz/"))
        for p in rest
    )


def test_match_objects_are_routes_of_the_table(k8s: Kubernetes) -> None:
    found = k8s.match_request(request("GET", "/api/v1/namespaces/payments/pods/web-0"))
    assert isinstance(found, Match)
    assert (
        found.route in load("toolpass.integrations.kubernetes").routes
        or found.route in Kubernetes.route_table().routes
    )


def test_an_unparseable_resource_is_left_unresolved(k8s: Kubernetes) -> None:
    # a type that is not a DNS label: parse_resource refuses it, so no resource is named
    found = structural_match(
        request("POST", "/apis/stable.example.com/v1/namespaces/payments/Cron_Tabs")
    )
    assert found is not None
    assert found.resource is None
    with pytest.raises(LookupFailed):
        parse_resource("namespaces/payments/Cron_Tabs.stable.example.com")


def test_a_self_review_made_as_someone_else_is_not_about_the_agent(k8s: Kubernetes) -> None:
    url = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
    found = k8s.match_request(request("POST", url, headers={"Impersonate-User": "admin"}))
    assert found is not None
    assert (found.action, found.resource, found.route.agent) == (
        "impersonate",
        "users/admin",
        False,
    )
