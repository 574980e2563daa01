"""The Datadog route table (generated from the PyPI package datadog-api-client)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.datadog import _ID, Datadog
from toolpass.integrations.routes import Request, fields, load

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/datadog/routes.json"


@pytest.fixture(scope="module")
def datadog() -> Datadog:
    (config,) = parse_connections(
        [
            {
                "id": "dd",
                "integration": "datadog",
                "api_key": literal("api-key"),
                "app_key": literal("app-key"),
            }
        ]
    )
    return Datadog(config)


def accepted(action: str, resource: str) -> bool:
    """What ``Datadog.check`` accepts for ``action``."""
    found = Datadog.action(action)
    assert found is not None
    kind = str(found.terms.get("type") or "")
    rtype, _, rid = resource.partition(":")
    return resource == "org" or (bool(kind) and rtype == kind and _ID.fullmatch(rid) is not None)


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/datadog/generate.py"
    assert data["source"].startswith("PyPI datadog-api-client 2.62.0 ")
    assert len(load("toolpass.integrations.datadog")) == len(data["routes"]) >= 1800
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    assert all(r[1].startswith("/api/") for r in data["routes"])


def test_every_action_is_declared_and_every_area_is_routed() -> None:
    routed = {r.action for r in load("toolpass.integrations.datadog").routes}
    assert routed == {a.name for a in Datadog.actions}


def test_every_resource_template_is_a_resource_the_check_accepts() -> None:
    for route in load("toolpass.integrations.datadog").routes:
        resource = route.resource
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", "abc-123")
        assert accepted(route.action, resource), route


def test_regenerating_from_the_package_gives_the_committed_table() -> None:
    pytest.importorskip("datadog_api_client")
    from datadog_api_client.version import __version__

    if __version__ != "2.62.0":
        pytest.skip(f"the table is from datadog-api-client 2.62.0, not {__version__}")
    built = load_generator("datadog").build()
    assert built["routes"] == json.loads(TABLE.read_text())["routes"]


@pytest.mark.parametrize(
    ("method", "path", "action", "resource", "effect"),
    [
        ("GET", "/api/v1/monitor/42", "monitors.read", "monitor:42", "read"),
        ("PUT", "/api/v1/monitor/42", "monitors.write", "monitor:42", "write"),
        ("DELETE", "/api/v1/monitor/42", "monitors.write", "monitor:42", "destructive"),
        ("POST", "/api/v1/monitor", "monitors.write", "org", "write"),
        (
            "GET",
            "/api/v1/dashboard/abc-def-ghi",
            "dashboards.read",
            "dashboard:abc-def-ghi",
            "read",
        ),
        (
            "DELETE",
            "/api/v1/dashboard/abc-def-ghi",
            "dashboards.write",
            "dashboard:abc-def-ghi",
            "destructive",
        ),
        ("POST", "/api/v2/logs/events/search", "logs.read", "org", "read"),
        ("POST", "/api/v2/logs/analytics/aggregate", "logs.read", "org", "read"),
        ("GET", "/api/v1/slo/abc", "slos.read", "slo:abc", "read"),
        ("POST", "/api/v2/incidents", "incidents.write", "org", "write"),
        ("POST", "/api/v2/users", "users.write", "org", "write"),
        ("GET", "/api/v1/query", "org.read", "org", "read"),
        ("POST", "/api/v1/events", "org.manage", "org", "write"),
        ("DELETE", "/api/v2/restriction_policy/dashboard:abc", "org.manage", "org", "destructive"),
    ],
)
def test_hand_checked_requests(
    datadog: Datadog, method: str, path: str, action: str, resource: str, effect: str
) -> None:
    found = datadog.match_request(Request(method, path))
    assert found is not None
    assert (found.action, found.resource, found.route.effect) == (action, resource, effect)


def test_a_log_search_reads_untrusted_text_and_events_are_sent_out(datadog: Datadog) -> None:
    search = datadog.match_request(Request("POST", "/api/v2/logs/events/search"))
    assert search is not None
    assert search.route.untrusted
    event = datadog.match_request(Request("POST", "/api/v1/events"))
    assert event is not None
    assert event.route.sends_out


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/api/v9/monitor"), ("DELETE", "/monitor/42"), ("PATCH", "/api/v1/nothing")],
)
def test_requests_matching_no_route(datadog: Datadog, method: str, path: str) -> None:
    assert datadog.match_request(Request(method, path)) is None


@pytest.mark.parametrize("path", ["/api/v1/monitor/..", "/api/v1/monitor/1%2F..%2F2"])
def test_hostile_parameters_name_no_resource(datadog: Datadog, path: str) -> None:
    found = datadog.match_request(Request("DELETE", path))
    if found is not None and found.resource is not None:
        assert "/" not in found.resource
        assert accepted(found.action, found.resource) or found.resource == "monitor:.."
