"""The Kubernetes integration against a fake API server on 127.0.0.1 (and the real client)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.kubernetes import (
    API,
    ENGINE_TOKEN,
    ENGINE_USER,
    FakeKubernetes,
    Rule,
    status_reply,
)
from fakes.proxy import FakeProxy
from fakes.server import FakeServer, Reply, Request
from fakes.tls import make_certs
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest_toolpass import IntegrationConformance

from toolpass import integrations
from toolpass.engine import ConfigError, LookupFailed, Toolpass, literal
from toolpass.integrations.kubernetes import Kubernetes, Target, parse_resource, review_attributes

DANA = "dana@example.com"  # in payments-devs; views nodes and /healthz herself
ERIN = "erin@example.com"  # in no groups
DEPLOY = "namespaces/payments/deployments.apps/api"


@pytest.fixture
def k8s() -> Iterator[FakeKubernetes]:
    with FakeKubernetes() as fake:
        fake.engine()
        fake.bind(
            "payments-devs",
            [
                Rule(["get", "list", "watch"], ["apps"], ["deployments"]),
                Rule(["update", "patch"], ["apps"], ["deployments/scale"]),
                Rule(["get", "list"], [""], ["pods", "pods/log"]),
                Rule(["create"], [""], ["pods/exec"]),
            ],
            groups=["payments-devs"],
            namespace="payments",
        )
        fake.bind(
            "dana-cluster",
            [
                Rule(["get", "list"], [""], ["nodes"]),
                Rule(["get"], [], non_resource_urls=["/healthz", "/metrics"]),
            ],
            users=[DANA],
        )
        yield fake


def conn(url: str, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "k8s",
        "integration": "kubernetes",
        "url": url,
        "token": literal(ENGINE_TOKEN),
        "groups": {DANA: ["payments-devs"], ERIN: []},
    }
    base.update(extra)
    return {k: v for k, v in base.items() if v is not None}


@pytest.fixture
def tp(k8s: FakeKubernetes) -> Iterator[Toolpass]:
    with Toolpass([conn(k8s.url)]) as engine:
        yield engine


# --- allow, deny and what the review carries ----------------------------------------------
def test_allow_sends_a_subject_access_review_with_user_groups_and_attributes(
    tp: Toolpass, k8s: FakeKubernetes
) -> None:
    d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "allow", d.reason
    assert "RBAC: allowed by RoleBinding" in d.reason
    (sent,) = k8s.seen("POST", f"{API}/subjectaccessreviews")
    assert sent.headers["authorization"] == f"Bearer {ENGINE_TOKEN}"
    assert sent.json() == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": DANA,
            "groups": ["payments-devs", "system:authenticated"],
            "resourceAttributes": {
                "namespace": "payments",
                "verb": "get",
                "group": "apps",
                "resource": "deployments",
                "name": "api",
            },
        },
    }


def test_no_authorizer_allowing_is_deny(tp: Toolpass) -> None:
    d = tp.check(DANA, "k8s", "delete", DEPLOY)
    assert d.decision == "deny"
    assert "no Kubernetes authorizer allows dana@example.com to delete" in d.reason
    assert not d.allowed


def test_groups_decide(tp: Toolpass) -> None:
    assert tp.check(ERIN, "k8s", "get", DEPLOY).decision == "deny"
    assert tp.check(DANA, "k8s", "list", "namespaces/payments/deployments.apps").allowed
    assert tp.check(DANA, "k8s", "list", "namespaces/billing/deployments.apps").decision == "deny"


def test_explicit_deny_from_a_webhook(k8s: FakeKubernetes, tp: Toolpass) -> None:
    k8s.deny("create", "pods/exec", users=[DANA], reason="exec is off during the freeze")
    d = tp.check(DANA, "k8s", "exec", "namespaces/payments/pods/web-0")
    assert d.decision == "deny"
    assert "exec is off during the freeze" in d.reason
    assert k8s.reviews()[-1]["spec"]["resourceAttributes"]["subresource"] == "exec"


def test_evaluation_error_without_allow_is_unknown(k8s: FakeKubernetes, tp: Toolpass) -> None:
    k8s.bind("stale", None, groups=["payments-devs"], role="deleted-role")
    d = tp.check(DANA, "k8s", "delete", DEPLOY)
    assert d.decision == "unknown"
    assert 'clusterrole.rbac.authorization.k8s.io "deleted-role" not found' in d.reason
    # an allow despite an evaluation error is still an allow (the documented meaning)
    assert tp.check(DANA, "k8s", "get", DEPLOY).allowed


def test_evaluation_error_may_be_taken_as_deny(k8s: FakeKubernetes) -> None:
    k8s.bind("stale", None, groups=["payments-devs"], role="deleted-role")
    with Toolpass([conn(k8s.url, on_evaluation_error="deny")]) as tp:
        assert tp.check(DANA, "k8s", "delete", DEPLOY).decision == "deny"


def test_allowed_and_denied_together_is_unknown(k8s: FakeKubernetes, tp: Toolpass) -> None:
    body = {"kind": "SubjectAccessReview", "status": {"allowed": True, "denied": True}}
    k8s.fail(201, body=body)
    assert tp.check(DANA, "k8s", "get", DEPLOY).decision == "unknown"


# --- each kind of unknown -----------------------------------------------------------------
def test_rejected_token_is_unknown(k8s: FakeKubernetes) -> None:
    with Toolpass([conn(k8s.url, token=literal("stale"))]) as tp:
        d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert "rejected the engine's credential (HTTP 401)" in d.reason


def test_engine_without_permission_to_review_is_unknown() -> None:
    with FakeKubernetes() as k8s:
        k8s.engine(may_review=False)
        with Toolpass([conn(k8s.url)]) as tp:
            d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert "HTTP 403" in d.reason
    assert f'User "{ENGINE_USER}" cannot create resource "subjectaccessreviews"' in d.reason


@pytest.mark.parametrize(
    ("status", "reason", "expect"),
    [
        (404, "NotFound", "HTTP 404"),
        (422, "Invalid", "HTTP 422"),
        (500, "InternalError", "failed (HTTP 500)"),
        (503, "ServiceUnavailable", "failed (HTTP 503)"),
    ],
)
def test_error_status_is_unknown(
    k8s: FakeKubernetes, tp: Toolpass, status: int, reason: str, expect: str
) -> None:
    reply = status_reply(status, reason, f"injected {reason}")
    k8s.fail(status, body=reply.body)
    d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert expect in d.reason
    assert f"injected {reason}" in d.reason


def test_throttled_is_unknown_and_says_when_to_retry(k8s: FakeKubernetes, tp: Toolpass) -> None:
    body = status_reply(429, "TooManyRequests", "Too many requests, please try again later.")
    k8s.fail(429, body=body.body, retry_after=1)
    d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert "rate-limited the engine (retry after 1s)" in d.reason


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "SubjectAccessReview"},
        {"kind": "SubjectAccessReview", "status": {}},
        {"kind": "SubjectAccessReview", "status": {"allowed": "true"}},
        {"kind": "SubjectAccessReview", "status": {"allowed": False, "denied": "yes"}},
        ["not", "an", "object"],
    ],
)
def test_malformed_review_is_unknown(k8s: FakeKubernetes, tp: Toolpass, body: Any) -> None:
    k8s.fail(201, body=body)
    d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert "status" in d.reason or "answer" in d.reason


def test_non_json_body_is_unknown(k8s: FakeKubernetes, tp: Toolpass) -> None:
    k8s.not_json(status=201)
    d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert "not JSON" in d.reason


def test_unknown_is_not_cached_and_allow_is(k8s: FakeKubernetes, tp: Toolpass) -> None:
    k8s.fail(503)
    assert tp.check(DANA, "k8s", "get", DEPLOY).decision == "unknown"
    first = tp.check(DANA, "k8s", "get", DEPLOY)
    second = tp.check(DANA, "k8s", "get", DEPLOY)
    assert first.allowed
    assert second.allowed
    assert second.cached
    assert len(k8s.reviews()) == 2
    assert tp.check(DANA, "k8s", "get", DEPLOY, fresh=True).allowed
    assert len(k8s.reviews()) == 3


async def test_concurrent_async_checks_share_one_review(k8s: FakeKubernetes) -> None:
    import asyncio

    k8s.slow(0.2, path=f"{API}/subjectaccessreviews")
    with Toolpass([conn(k8s.url)]) as tp:
        decisions = await asyncio.gather(*(tp.acheck(DANA, "k8s", "get", DEPLOY) for _ in range(8)))
    assert all(d.allowed for d in decisions)
    assert len(k8s.reviews()) == 1


def test_rbac_change_is_seen_after_the_deny_lifetime(k8s: FakeKubernetes) -> None:
    with Toolpass([conn(k8s.url, cache_ttl_deny=0)]) as tp:
        assert tp.check(ERIN, "k8s", "get", DEPLOY).decision == "deny"
        k8s.bind("erin", [Rule(["get"], ["apps"], ["deployments"])], users=[ERIN])
        assert tp.check(ERIN, "k8s", "get", DEPLOY).allowed


# --- identity: users and groups -----------------------------------------------------------
def test_unmapped_user_is_unknown_without_a_request(k8s: FakeKubernetes) -> None:
    with Toolpass([conn(k8s.url, identity={"mode": "users", "users": {DANA: DANA}})]) as tp:
        d = tp.check(ERIN, "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert "maps to no kubernetes user" in d.reason
    assert k8s.reviews() == []


def test_ambiguous_user_is_unknown(k8s: FakeKubernetes) -> None:
    identity = {"mode": "callable", "resolve": lambda email: ["dana", "dana2"]}
    with Toolpass([conn(k8s.url, identity=identity)]) as tp:
        d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert "refusing to guess" in d.reason
    assert k8s.reviews() == []


def test_user_the_groups_source_does_not_know_is_unknown(k8s: FakeKubernetes, tp: Toolpass) -> None:
    d = tp.check("frank@example.com", "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert "groups of frank@example.com are not known" in d.reason
    assert k8s.reviews() == []


def test_groups_missing_none_reviews_without_groups(k8s: FakeKubernetes) -> None:
    with Toolpass([conn(k8s.url, groups_missing="none")]) as tp:
        assert tp.check("frank@example.com", "k8s", "get", DEPLOY).decision == "deny"
    assert k8s.reviews()[0]["spec"]["groups"] == ["system:authenticated"]


def test_no_groups_source_reviews_only_the_authenticated_group(k8s: FakeKubernetes) -> None:
    with Toolpass([conn(k8s.url, groups=None)]) as tp:
        assert tp.check(DANA, "k8s", "list", "nodes").allowed
        assert tp.check(DANA, "k8s", "get", DEPLOY).decision == "deny"
    assert k8s.reviews()[0]["spec"]["groups"] == ["system:authenticated"]


def test_prefixes_as_the_oidc_authenticator_applies_them(k8s: FakeKubernetes) -> None:
    k8s.bind("oidc", [Rule(["get"], ["apps"], ["deployments"])], groups=["oidc:sre"])
    extra = {"username_prefix": "oidc:", "group_prefix": "oidc:", "groups": {DANA: ["sre"]}}
    with Toolpass([conn(k8s.url, **extra)]) as tp:
        assert tp.check(DANA, "k8s", "get", DEPLOY).allowed
    spec = k8s.reviews()[0]["spec"]
    assert spec["user"] == "oidc:dana@example.com"
    assert spec["groups"] == ["oidc:sre", "system:authenticated"]


def test_dash_prefix_means_none_and_authenticated_group_can_be_left_out(
    k8s: FakeKubernetes,
) -> None:
    extra = {"username_prefix": "-", "group_prefix": "-", "authenticated_group": False}
    with Toolpass([conn(k8s.url, **extra)]) as tp:
        tp.check(DANA, "k8s", "get", DEPLOY)
        tp.check(ERIN, "k8s", "get", DEPLOY)
    dana, erin = (r["spec"] for r in k8s.reviews())
    assert dana == {**dana, "user": DANA, "groups": ["payments-devs"]}
    assert erin["user"] == ERIN
    assert "groups" not in erin


def test_identity_template_limited_to_domains(k8s: FakeKubernetes) -> None:
    k8s.bind("jdoe", [Rule(["list"], [""], ["nodes"])], users=["corp:dana"])
    identity = {"mode": "template", "template": "corp:{local}", "domains": ["example.com"]}
    with Toolpass([conn(k8s.url, identity=identity, groups=None)]) as tp:
        assert tp.check(DANA, "k8s", "list", "nodes").allowed
        outside = tp.check("dana@elsewhere.org", "k8s", "list", "nodes")
    assert outside.decision == "unknown"
    assert "not in an email domain" in outside.reason
    assert [r["spec"]["user"] for r in k8s.reviews()] == ["corp:dana"]


def test_identity_file_is_reread_when_it_changes(k8s: FakeKubernetes, tmp_path: Path) -> None:
    k8s.bind("sub", [Rule(["list"], [""], ["nodes"])], users=["sub-1"])
    mapping = tmp_path / "users.json"
    mapping.write_text(json.dumps({DANA: "sub-0"}))
    identity = {"mode": "file", "file": str(mapping)}
    with Toolpass([conn(k8s.url, identity=identity, groups=None)]) as tp:
        assert tp.check(DANA, "k8s", "list", "nodes").decision == "deny"
        mapping.write_text(json.dumps({DANA: "sub-1", "x@example.com": "sub-10"}))
        os.utime(mapping, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
        assert tp.check(DANA, "k8s", "list", "nodes", fresh=True).allowed


def test_identity_http_service(k8s: FakeKubernetes) -> None:
    with FakeServer() as directory:

        @directory.route("GET", "/who")
        def who(request: Request) -> dict[str, Any] | Reply:
            found = {DANA: "sub-dana"}.get(request.arg("email") or "")
            return {"user": found} if found else Reply(404, {"error": "no such user"})

        k8s.bind("sub", [Rule(["list"], [""], ["nodes"])], users=["sub-dana"])
        identity = {"mode": "http", "url": f"{directory.url}/who"}
        with Toolpass([conn(k8s.url, identity=identity, groups=None)]) as tp:
            assert tp.check(DANA, "k8s", "list", "nodes").allowed
            assert tp.check(ERIN, "k8s", "list", "nodes").decision == "unknown"
        assert directory.seen("GET")[0].query["system"] == ["kubernetes"]


def test_groups_file_is_reread_when_it_changes(k8s: FakeKubernetes, tmp_path: Path) -> None:
    groups = tmp_path / "groups.yaml"
    groups.write_text("dana@example.com: [contractors]\n")
    with Toolpass([conn(k8s.url, groups=None, groups_file=str(groups))]) as tp:
        assert tp.check(DANA, "k8s", "get", DEPLOY).decision == "deny"
        groups.write_text("dana@example.com: [payments-devs]\nerin@example.com: []\n")
        os.utime(groups, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
        assert tp.check(DANA, "k8s", "get", DEPLOY, fresh=True).allowed
        assert tp.check("x@example.com", "k8s", "get", DEPLOY).decision == "unknown"
        groups.write_text("{not yaml: [")
        os.utime(groups, ns=(time.time_ns() + 2 * 10**9, time.time_ns() + 2 * 10**9))
        broken = tp.check(DANA, "k8s", "get", DEPLOY, fresh=True)
    assert broken.decision == "unknown"
    assert "cannot be parsed" in broken.reason


@pytest.fixture
def groups_service() -> Iterator[FakeServer]:
    with FakeServer() as service:

        @service.route("GET", "/groups")
        def groups(request: Request) -> dict[str, Any] | Reply:
            if request.headers.get("authorization") != "Bearer dir-token":
                return Reply(401, {"error": "unauthorized"})
            email = request.arg("email")
            if email == DANA:
                return {"groups": ["payments-devs"]}
            if email == ERIN:
                return {"groups": None}
            return Reply(404, {"error": "unknown"})

        yield service


def test_groups_from_an_http_service_are_cached(
    k8s: FakeKubernetes, groups_service: FakeServer
) -> None:
    extra = {
        "groups": None,
        "groups_url": f"{groups_service.url}/groups",
        "groups_token": literal("dir-token"),
    }
    with Toolpass([conn(k8s.url, **extra)]) as tp:
        assert tp.check(DANA, "k8s", "get", DEPLOY).allowed
        assert tp.check(DANA, "k8s", "list", "namespaces/payments/pods").allowed
        assert tp.check(ERIN, "k8s", "get", DEPLOY).decision == "unknown"
        assert tp.check("x@example.com", "k8s", "get", DEPLOY).decision == "unknown"
        groups_service.fail(500, times=2)
        pods = "namespaces/payments/pods/api-0"
        assert tp.check(DANA, "k8s", "get", pods).allowed  # groups from the cache
        d = tp.check(DANA, "k8s", "get", DEPLOY, fresh=True)  # fresh asks the groups again
    assert d.decision == "unknown", d.reason
    assert "groups service answered HTTP 500" in d.reason
    asked = [r.query["email"][0] for r in groups_service.seen("GET")]
    assert asked == [DANA, ERIN, "x@example.com", DANA]


def test_groups_service_failure_is_unknown(k8s: FakeKubernetes, groups_service: FakeServer) -> None:
    extra = {"groups": None, "groups_url": f"{groups_service.url}/groups", "groups_token": None}
    with Toolpass([conn(k8s.url, **extra)]) as tp:
        d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert "groups service answered HTTP 401" in d.reason
    assert k8s.reviews() == []


def test_groups_from_a_callable(k8s: FakeKubernetes) -> None:
    def resolve(email: str) -> list[str] | None:
        if email == "boom@example.com":
            raise RuntimeError("directory down")
        return ["payments-devs"] if email == DANA else None

    with Toolpass([conn(k8s.url, groups=None, groups_resolve=resolve)]) as tp:
        assert tp.check(DANA, "k8s", "get", DEPLOY).allowed
        assert tp.check(ERIN, "k8s", "get", DEPLOY).decision == "unknown"
        boom = tp.check("boom@example.com", "k8s", "get", DEPLOY)
    assert boom.decision == "unknown"
    assert "directory down" in boom.reason


# --- the resource syntax and the actions --------------------------------------------------
@pytest.mark.parametrize(
    ("resource", "target"),
    [
        (DEPLOY, Target("deployments", "apps", "", "payments", "api")),
        (f"{DEPLOY}/scale", Target("deployments", "apps", "", "payments", "api", "scale")),
        ("namespaces/payments/pods", Target("pods", namespace="payments")),
        ("namespaces/payments/pods/web-0/log", Target("pods", "", "", "payments", "web-0", "log")),
        ("nodes/node-1", Target("nodes", name="node-1")),
        (
            "clusterroles.rbac.authorization.k8s.io/system:aggregate-to-view",
            Target("clusterroles", "rbac.authorization.k8s.io", name="system:aggregate-to-view"),
        ),
        ("namespaces/payments", Target("namespaces", namespace="payments", name="payments")),
        (
            "namespaces/payments/status",
            Target("namespaces", namespace="payments", name="payments", subresource="status"),
        ),
        ("namespaces", Target("namespaces")),
        ("deployments.apps", Target("deployments", "apps")),
        ("*.*", Target("*", "*")),
        (
            "/apis/apps/v1/namespaces/payments/deployments/api/scale",
            Target("deployments", "apps", "v1", "payments", "api", "scale"),
        ),
        ("/api/v1/nodes/node-1", Target("nodes", "", "v1", name="node-1")),
        ("/api/v1/namespaces/payments/pods/", Target("pods", "", "v1", "payments")),
        (
            "namespaces/payments/services/web/proxy/metrics/x",
            Target("services", "", "", "payments", "web", "proxy"),
        ),
        ("/healthz", Target(path="/healthz")),
        ("/apis/apps/v1", Target(path="/apis/apps/v1")),
        ("/metrics/*", Target(path="/metrics/*")),
    ],
)
def test_resource_syntax(resource: str, target: Target) -> None:
    assert parse_resource(resource) == target


@pytest.mark.parametrize(
    "resource",
    [
        "",
        "namespaces/payments/",
        "namespaces//pods",
        "deployments./x",
        ".apps/x",
        "pods/a/b/c",
        "namespaces/payments/pods/../secrets",
        "pods/we b",
        "pods/a%2Fb",
        "pods/a\x00",
        "//healthz",
        "Pods/x",
        "pods..apps/x",
        "namespaces/Payments/pods",
        "namespaces/*/pods",
        "/apis/Apps/v1/deployments",
    ],
)
def test_bad_resources_are_unknown_without_a_request(
    k8s: FakeKubernetes, tp: Toolpass, resource: str
) -> None:
    with pytest.raises(LookupFailed):
        parse_resource(resource)
    if resource:
        d = tp.check(DANA, "k8s", "get", resource)
        assert d.decision == "unknown"
        assert "not a Kubernetes resource" in d.reason
    assert k8s.reviews() == []


@given(st.text(alphabet=st.sampled_from(list("aAb./%* :\x00\u200b\u0430-_")), max_size=40))
@settings(max_examples=300, deadline=None)
def test_parsing_never_yields_a_segment_that_could_smuggle_a_path(resource: str) -> None:
    try:
        t = parse_resource(resource)
    except LookupFailed:
        return
    for value in (t.resource, t.group, t.namespace, t.name, t.subresource):
        assert "/" not in value
        assert value not in (".", "..")
        assert "%" not in value
        assert not any(c.isspace() or c == "\x00" for c in value)
    assert bool(t.path) != bool(t.resource)
    assert not t.group.startswith(".")
    assert ".." not in t.group
    assert not t.group.endswith(".")


@pytest.mark.parametrize(
    ("action", "resource", "attributes"),
    [
        ("scale", DEPLOY, ("patch", "deployments", "scale", "api")),
        ("exec", "namespaces/payments/pods/web-0", ("create", "pods", "exec", "web-0")),
        ("attach", "namespaces/payments/pods/web-0", ("create", "pods", "attach", "web-0")),
        ("portforward", "namespaces/x/pods/p", ("create", "pods", "portforward", "p")),
        ("logs", "namespaces/payments/pods/web-0", ("get", "pods", "log", "web-0")),
        ("logs", "namespaces/payments/pods/web-0/log", ("get", "pods", "log", "web-0")),
        ("evict", "namespaces/payments/pods/web-0", ("create", "pods", "eviction", "web-0")),
        ("patch", f"{DEPLOY}/status", ("patch", "deployments", "status", "api")),
    ],
)
def test_shortcut_actions(action: str, resource: str, attributes: tuple[str, ...]) -> None:
    verb, t = review_attributes(action, parse_resource(resource))
    assert (verb, t.resource, t.subresource, t.name) == attributes


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("exec", DEPLOY),
        ("exec", "namespaces/payments/pods"),
        ("logs", "namespaces/payments/pods/web-0/exec"),
        ("scale", "namespaces/payments/deployments.apps"),
        ("list", "/healthz"),
        ("scale", "/healthz"),
    ],
)
def test_shortcut_on_the_wrong_resource_is_unknown(
    k8s: FakeKubernetes, tp: Toolpass, action: str, resource: str
) -> None:
    assert tp.check(DANA, "k8s", action, resource).decision == "unknown"
    assert k8s.reviews() == []


def test_shortcuts_through_the_api(tp: Toolpass, k8s: FakeKubernetes) -> None:
    assert tp.check(DANA, "k8s", "scale", DEPLOY).allowed
    assert tp.check(DANA, "k8s", "logs", "namespaces/payments/pods/web-0").allowed
    assert tp.check(DANA, "k8s", "exec", "namespaces/payments/pods/web-0").allowed
    assert tp.check(DANA, "k8s", "attach", "namespaces/payments/pods/web-0").decision == "deny"
    assert k8s.reviews()[0]["spec"]["resourceAttributes"] == {
        "namespace": "payments",
        "verb": "patch",
        "group": "apps",
        "resource": "deployments",
        "subresource": "scale",
        "name": "api",
    }


def test_non_resource_urls(tp: Toolpass, k8s: FakeKubernetes) -> None:
    assert tp.check(DANA, "k8s", "get", "/healthz").allowed
    assert tp.check(DANA, "k8s", "create", "/healthz").decision == "deny"
    assert tp.check(ERIN, "k8s", "get", "/metrics").decision == "deny"
    specs = [r["spec"] for r in k8s.reviews()]
    assert specs[0]["nonResourceAttributes"] == {"path": "/healthz", "verb": "get"}
    assert specs[1]["nonResourceAttributes"] == {"path": "/healthz", "verb": "post"}


def test_cluster_scoped_and_all_namespaces(tp: Toolpass, k8s: FakeKubernetes) -> None:
    assert tp.check(DANA, "k8s", "get", "nodes/node-1").allowed
    # a RoleBinding in payments does not grant deployments in every namespace
    assert tp.check(DANA, "k8s", "list", "deployments.apps").decision == "deny"
    attributes = [r["spec"]["resourceAttributes"] for r in k8s.reviews()]
    assert attributes == [
        {"verb": "get", "resource": "nodes", "name": "node-1"},
        {"verb": "list", "group": "apps", "resource": "deployments"},
    ]


# --- the local review ---------------------------------------------------------------------
def test_local_subject_access_review() -> None:
    with FakeKubernetes() as k8s:
        k8s.engine(may_review=False, local_in=["payments"])
        k8s.bind(
            "devs",
            [Rule(["get"], ["apps"], ["deployments"])],
            groups=["payments-devs"],
            namespace="payments",
        )
        with Toolpass([conn(k8s.url, review="local")]) as tp:
            assert tp.check(DANA, "k8s", "get", DEPLOY).allowed
            assert tp.check(DANA, "k8s", "delete", DEPLOY).decision == "deny"
            other = tp.check(DANA, "k8s", "get", "namespaces/billing/deployments.apps/x")
            cluster = tp.check(DANA, "k8s", "get", "nodes/node-1")
        assert other.decision == "unknown"
        assert "HTTP 403" in other.reason
        assert cluster.decision == "unknown"
        assert "namespaced resource" in cluster.reason
        (first, *_) = k8s.seen("POST")
        assert first.path == f"{API}/namespaces/payments/localsubjectaccessreviews"
        assert first.json()["kind"] == "LocalSubjectAccessReview"
        assert first.json()["metadata"] == {"namespace": "payments"}


# --- the engine's credential and the network ----------------------------------------------
def test_token_from_the_environment(k8s: FakeKubernetes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K8S_TOKEN", ENGINE_TOKEN)
    with Toolpass([conn(k8s.url, token="env:K8S_TOKEN")]) as tp:
        assert tp.check(DANA, "k8s", "get", DEPLOY).allowed
    monkeypatch.delenv("K8S_TOKEN")
    with Toolpass([conn(k8s.url, token="env:K8S_TOKEN")]) as tp:
        d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert "K8S_TOKEN" in d.reason
    assert ENGINE_TOKEN not in d.reason


def test_token_file_is_reread_when_it_rotates(k8s: FakeKubernetes, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old-token\n")
    with Toolpass([conn(k8s.url, token=None, token_file=str(token))]) as tp:
        assert tp.check(DANA, "k8s", "get", DEPLOY).decision == "unknown"
        token.write_text(f"{ENGINE_TOKEN}\n")
        os.utime(token, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
        assert tp.check(DANA, "k8s", "get", DEPLOY).allowed
        token.unlink()
        gone = tp.check(DANA, "k8s", "get", DEPLOY, fresh=True)
    assert gone.decision == "unknown"
    assert "cannot be read" in gone.reason
    tokens = [r.headers["authorization"] for r in k8s.seen("POST")]
    assert tokens == ["Bearer old-token", f"Bearer {ENGINE_TOKEN}"]


def test_in_cluster_service_account_mount_gives_token_and_ca(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    mount = tmp_path / "serviceaccount"
    mount.mkdir()
    (mount / "token").write_text(ENGINE_TOKEN)
    (mount / "ca.crt").write_text(Path(certs.ca_file).read_text())
    with FakeKubernetes(tls=(certs.cert_file, certs.key_file)) as k8s:
        k8s.engine()
        k8s.bind("n", [Rule(["list"], [""], ["nodes"])], users=[DANA])
        extra = {"token": None, "serviceaccount_dir": str(mount), "groups": None}
        with Toolpass([conn(k8s.url, **extra)]) as tp:
            assert tp.check(DANA, "k8s", "list", "nodes").allowed
        # an explicit token does not use the mount's CA: the fake's certificate is not trusted
        with Toolpass([conn(k8s.url, serviceaccount_dir=str(mount), groups=None)]) as tp:
            d = tp.check(DANA, "k8s", "list", "nodes")
        assert d.decision == "unknown"
        assert "certificate" in d.reason


def test_no_credential_outside_a_cluster_is_unknown(k8s: FakeKubernetes, tmp_path: Path) -> None:
    extra = {"token": None, "serviceaccount_dir": str(tmp_path / "none")}
    with Toolpass([conn(k8s.url, **extra)]) as tp:
        d = tp.check(DANA, "k8s", "get", DEPLOY)
    assert d.decision == "unknown"
    assert "not running in a cluster" in d.reason


def test_tls_with_a_ca_file_and_a_proxy(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    with FakeKubernetes(tls=(certs.cert_file, certs.key_file)) as k8s, FakeProxy() as proxy:
        k8s.engine()
        k8s.bind("n", [Rule(["list"], [""], ["nodes"])], users=[DANA])
        extra = {"ca_file": certs.ca_file, "proxy_url": proxy.url, "groups": None}
        with Toolpass([conn(k8s.url, **extra)]) as tp:
            assert tp.check(DANA, "k8s", "list", "nodes").allowed
        assert proxy.seen == [f"CONNECT 127.0.0.1:{k8s.port}"]


# --- the probe ----------------------------------------------------------------------------
def test_probe(k8s: FakeKubernetes, tp: Toolpass) -> None:
    result = tp.probe("k8s")["k8s"]
    assert result.ok, result.detail
    assert "v1.31.2" in result.detail
    assert "may create subjectaccessreviews" in result.detail
    ssar = k8s.seen("POST", f"{API}/selfsubjectaccessreviews")[0].json()
    assert ssar["spec"]["resourceAttributes"] == {
        "verb": "create",
        "group": "authorization.k8s.io",
        "resource": "subjectaccessreviews",
    }


def test_probe_reports_a_credential_that_may_not_review() -> None:
    with FakeKubernetes() as k8s:
        k8s.engine(may_review=False)
        with Toolpass([conn(k8s.url)]) as tp:
            result = tp.probe("k8s")["k8s"]
    assert not result.ok
    assert "may not create subjectaccessreviews" in result.detail


def test_probe_reports_a_rejected_token(k8s: FakeKubernetes) -> None:
    with Toolpass([conn(k8s.url, token=literal("nope"))]) as tp:
        result = tp.probe("k8s")["k8s"]
    assert not result.ok
    assert "HTTP 401" in result.detail


# --- configuration and catalog ------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"token_file": "/x"}, "token_file"),
        ({"groups_file": "/x", "groups_url": "https://dir.example.com"}, "groups_url"),
        ({"groups": {DANA: "payments-devs"}}, "groups"),
        ({"groups_url": "http://dir.example.com/groups"}, "groups_url"),
        ({"groups_token": literal("t")}, "groups_token"),
        ({"groups_resolve": "module.function"}, "groups_resolve"),
        ({"review": "namespace"}, "review"),
        ({"username_prefix": "oidc: "}, "username_prefix"),
        ({"on_evaluation_error": "allow"}, "on_evaluation_error"),
    ],
)
def test_configuration_errors_name_the_key(extra: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        Toolpass([conn("https://k8s.example.com", **extra)])


def test_yaml_configuration(tmp_path: Path, k8s: FakeKubernetes) -> None:
    (tmp_path / "token").write_text(ENGINE_TOKEN)
    (tmp_path / "toolpass.yaml").write_text(
        "connections:\n"
        "  - id: prod\n"
        "    integration: kubernetes\n"
        f"    url: {k8s.url}\n"
        "    token: file:token\n"
        "    group_prefix: 'oidc:'\n"
        "    groups:\n"
        "      dana@example.com: [payments-devs]\n"
    )
    k8s.bind("oidc", [Rule(["get"], ["apps"], ["deployments"])], groups=["oidc:payments-devs"])
    with Toolpass.from_config(tmp_path / "toolpass.yaml") as tp:
        assert tp.check(DANA, "prod", "get", DEPLOY).allowed


def test_catalog() -> None:
    assert integrations.get("kubernetes") is Kubernetes
    names = [a.name for a in Kubernetes.actions]
    assert len(names) == len(set(names))
    for verb in ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"):
        assert verb in names
    effects = {a.name: a.effect for a in Kubernetes.actions}
    assert effects["get"] == "read"
    assert effects["exec"] == "write"
    assert effects["delete"] == "destructive"
    assert effects["logs"] == "read"
    assert all(a.description and a.requires for a in Kubernetes.actions)
    assert all(k.description for k in Kubernetes.keys)
    assert {k.name for k in Kubernetes.keys if k.secret} == {"token", "groups_token"}
    assert Kubernetes.default_url == "https://kubernetes.default.svc"
    assert "pods/exec" in (Kubernetes.action("exec") or Kubernetes.actions[0]).requires


# --- the real client agrees with the fake -------------------------------------------------
@pytest.fixture
def client_api(k8s: FakeKubernetes) -> Iterator[Any]:
    from kubernetes import client

    config = client.Configuration(host=k8s.url)
    config.api_key = {"authorization": ENGINE_TOKEN}
    config.api_key_prefix = {"authorization": "Bearer"}
    with client.ApiClient(config) as api:
        yield api


def test_kubernetes_client_subject_access_review(client_api: Any) -> None:
    from kubernetes import client

    api = client.AuthorizationV1Api(client_api)

    def review(verb: str, groups: list[str]) -> Any:
        body = client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(
                user=DANA,
                groups=groups,
                resource_attributes=client.V1ResourceAttributes(
                    namespace="payments",
                    verb=verb,
                    group="apps",
                    resource="deployments",
                    name="api",
                ),
            )
        )
        return api.create_subject_access_review(body)

    allowed = review("get", ["payments-devs"])
    assert allowed.status.allowed is True
    assert "RBAC" in allowed.status.reason
    assert allowed.spec.resource_attributes.name == "api"
    denied = review("delete", ["payments-devs"])
    assert denied.status.allowed is False
    assert not denied.status.denied

    non = api.create_subject_access_review(
        client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(
                user=DANA,
                non_resource_attributes=client.V1NonResourceAttributes(path="/healthz", verb="get"),
            )
        )
    )
    assert non.status.allowed is True


def test_kubernetes_client_local_and_self_reviews_and_version(
    client_api: Any, k8s: FakeKubernetes
) -> None:
    from kubernetes import client

    k8s.bind(
        "local",
        [Rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"])],
        users=[ENGINE_USER],
        namespace="payments",
    )
    api = client.AuthorizationV1Api(client_api)
    local = api.create_namespaced_local_subject_access_review(
        "payments",
        client.V1LocalSubjectAccessReview(
            metadata=client.V1ObjectMeta(namespace="payments"),
            spec=client.V1SubjectAccessReviewSpec(
                user=DANA,
                groups=["payments-devs"],
                resource_attributes=client.V1ResourceAttributes(
                    namespace="payments", verb="list", group="apps", resource="deployments"
                ),
            ),
        ),
    )
    assert local.status.allowed is True
    me = api.create_self_subject_access_review(
        client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    verb="create", group="authorization.k8s.io", resource="subjectaccessreviews"
                )
            )
        )
    )
    assert me.status.allowed is True
    version = client.VersionApi(client_api).get_code()
    assert version.git_version == "v1.31.2"


def test_kubernetes_client_sees_the_fakes_errors(k8s: FakeKubernetes) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    config = client.Configuration(host=k8s.url)
    config.api_key = {"authorization": "not-a-token"}
    config.api_key_prefix = {"authorization": "Bearer"}
    body = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=DANA, resource_attributes=client.V1ResourceAttributes(verb="get", resource="pods")
        )
    )
    with client.ApiClient(config) as api, pytest.raises(ApiException) as unauthorized:
        client.AuthorizationV1Api(api).create_subject_access_review(body)
    assert unauthorized.value.status == 401
    assert json.loads(unauthorized.value.body)["reason"] == "Unauthorized"

    k8s.add_token("weak", "system:serviceaccount:default:weak")
    config.api_key = {"authorization": "weak"}
    with client.ApiClient(config) as api:
        with pytest.raises(ApiException) as forbidden:
            client.AuthorizationV1Api(api).create_subject_access_review(body)
        invalid_body = client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec())
        config.api_key = {"authorization": ENGINE_TOKEN}
        with pytest.raises(ApiException) as invalid:
            client.AuthorizationV1Api(api).create_subject_access_review(invalid_body)
    status = json.loads(forbidden.value.body)
    assert (forbidden.value.status, status["reason"], status["code"]) == (403, "Forbidden", 403)
    assert invalid.value.status == 422
    causes = json.loads(invalid.value.body)["details"]["causes"]
    assert {c["field"] for c in causes} == {"spec", "spec.user"}


# --- the shared conformance suite ----------------------------------------------------------
class TestKubernetesConformance(IntegrationConformance):
    integration = "kubernetes"
    user, action, resource = DANA, "get", DEPLOY
    system_user, template = DANA, "{email}"
    credential = ENGINE_TOKEN

    @pytest.fixture
    def api(self, k8s: FakeKubernetes) -> FakeKubernetes:
        return k8s

    def connection(self, api: FakeKubernetes, **extra: Any) -> dict[str, Any]:
        return conn(**{"url": api.url, **extra})

    unsupported = {
        "disable_account": "Kubernetes has no user accounts: a user is the name an "
        "authenticator outside the API server asserts, and RBAC has nothing to disable",
        "make_read_only": "a Deployment has no read-only state RBAC knows of; refusing writes "
        "to one is admission control, which a SubjectAccessReview does not evaluate",
    }

    def bind_admins(self, api: FakeKubernetes) -> None:
        """Dana is bound to cluster-admin; a webhook authorizer, consulted before RBAC,
        denies her reading the Deployment (``denied: true``), which no RBAC allow lifts."""
        api.bind("dana-admin", [Rule(["*"], ["*"], ["*"])], users=[DANA], role="cluster-admin")
        api.deny("get", "deployments", users=[DANA], reason="change freeze on payments")

    def revoke(self, api: FakeKubernetes) -> None:
        """The RoleBinding that grants payments-devs the Deployments is deleted."""
        api.bindings = [b for b in api.bindings if b.name != "payments-devs"]
