"""The PagerDuty route table (generated from PagerDuty/api-schema's REST openapiv3.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations._generate.sources import pinned_source
from toolpass.integrations.pagerduty import _ID, PagerDuty
from toolpass.integrations.routes import Request, fields, load

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/pagerduty/routes.json"


@pytest.fixture(scope="module")
def pd() -> PagerDuty:
    (config,) = parse_connections(
        [{"id": "pd", "integration": "pagerduty", "api_key": literal("key")}]
    )
    return PagerDuty(config)


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/pagerduty/generate.py"
    assert data["source"].startswith("PagerDuty/api-schema reference/REST/openapiv3.json at ")
    assert len(load("toolpass.integrations.pagerduty")) == len(data["routes"]) == 465
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_every_action_is_declared_and_routed() -> None:
    routed = {r.action for r in load("toolpass.integrations.pagerduty").routes}
    assert routed == {a.name for a in PagerDuty.actions}


def test_every_resource_is_one_the_check_accepts() -> None:
    for route in load("toolpass.integrations.pagerduty").routes:
        action = PagerDuty.action(route.action)
        assert action is not None
        kinds = action.terms["kinds"]
        resource = route.resource
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", "PABC123")
        kind, _, oid = resource.partition(":")
        assert kind in kinds, route
        assert kind in ("account", "self") or _ID.fullmatch(oid), route


def test_regenerating_from_the_openapi_gives_the_committed_table(tmp_path: Path) -> None:
    document = pinned_source("pagerduty", tmp_path)
    built = load_generator("pagerduty").build(json.loads(document.read_text()))
    assert built["routes"] == json.loads(TABLE.read_text())["routes"]


@pytest.mark.parametrize(
    ("method", "path", "action", "resource", "effect"),
    [
        ("GET", "/incidents", "incidents.read", "account", "read"),
        ("GET", "/incidents/PINC123", "incidents.read", "incident:PINC123", "read"),
        ("PUT", "/incidents/PINC123", "incidents.respond", "incident:PINC123", "write"),
        ("PUT", "/incidents", "incidents.respond", "account", "write"),
        ("POST", "/incidents", "incidents.create", "account", "write"),
        ("POST", "/incidents/PINC123/notes", "incidents.respond", "incident:PINC123", "write"),
        ("POST", "/incidents/PINC123/snooze", "incidents.respond", "incident:PINC123", "write"),
        ("DELETE", "/services/PSVC123", "services.manage", "service:PSVC123", "destructive"),
        ("POST", "/maintenance_windows", "services.manage", "account", "write"),
        ("POST", "/schedules/PSCH123/overrides", "schedules.override", "schedule:PSCH123", "write"),
        ("GET", "/oncalls", "schedules.read", "account", "read"),
        ("PUT", "/teams/PTEAM12/users/PUSER12", "teams.manage", "team:PTEAM12", "write"),
        ("POST", "/users", "users.manage", "account", "write"),
        ("POST", "/analytics/raw/incidents", "account.read", "account", "read"),
        ("POST", "/webhook_subscriptions", "account.manage", "account", "write"),
        ("GET", "/users/me", "session.read", "self", "read"),
        (
            "PUT",
            "/escalation_policies/PEP1234",
            "escalation_policies.manage",
            "escalation_policy:PEP1234",
            "write",
        ),
    ],
)
def test_hand_checked_requests(
    pd: PagerDuty, method: str, path: str, action: str, resource: str, effect: str
) -> None:
    found = pd.match_request(Request(method, path))
    assert found is not None
    assert (found.action, found.resource, found.route.effect) == (action, resource, effect)


def test_incidents_are_untrusted_and_paging_sends_out(pd: PagerDuty) -> None:
    read = pd.match_request(Request("GET", "/incidents/PINC123/alerts"))
    assert read is not None
    assert read.route.untrusted
    for path in ("/incidents", "/incidents/PINC123/status_updates"):
        found = pd.match_request(Request("POST", path))
        assert found is not None
        assert found.route.sends_out


@pytest.mark.parametrize(("method", "path"), [("POST", "/nothing"), ("DELETE", "/incidents")])
def test_requests_matching_no_route(pd: PagerDuty, method: str, path: str) -> None:
    assert pd.match_request(Request(method, path)) is None


@pytest.mark.parametrize("path", ["/incidents/..", "/incidents/a%2F..%2Fb"])
def test_hostile_ids_name_no_resource(pd: PagerDuty, path: str) -> None:
    found = pd.match_request(Request("PUT", path))
    assert found is None or found.resource is None or "/" not in found.resource
