"""An external AuthZEN decision point: the evaluation against a fake PDP built from the
specification's shapes, the free-form and declared actions, the optional route table, and
the conformance suite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.authzen import DANA, ENGINE_TOKEN, FakePDP, populate
from pytest_toolpass import IntegrationConformance

from toolpass import Toolpass
from toolpass.engine import ConfigError, literal
from toolpass.integrations import get
from toolpass.integrations.routes import Request

PLAN = "document:plan.md"
EVAL = r"/access/v1/evaluation"


@pytest.fixture
def pdp() -> Iterator[FakePDP]:
    with FakePDP() as server:
        yield populate(server)


def conn(pdp: FakePDP, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "policy",
        "integration": "authzen",
        "url": pdp.url,
        "token": literal(ENGINE_TOKEN),
        "identity": {"mode": "template", "template": "{email}", "domains": ["example.com"]},
    }
    base.update(extra)
    return base


@pytest.fixture
def tp(pdp: FakePDP) -> Iterator[Toolpass]:
    with Toolpass([conn(pdp)]) as engine:
        yield engine


def test_the_evaluation_request_is_the_specifications(tp: Toolpass, pdp: FakePDP) -> None:
    d = tp.check(DANA, "policy", "can_update", PLAN)
    assert d.decision == "allow", d.reason
    (asked,) = pdp.seen("POST", EVAL)
    assert asked.json() == {
        "subject": {"type": "user", "id": DANA},
        "action": {"name": "can_update"},
        "resource": {"type": "document", "id": "plan.md"},
    }
    assert asked.headers["authorization"] == f"Bearer {ENGINE_TOKEN}"
    assert asked.headers["content-type"].startswith("application/json")
    assert asked.headers["x-request-id"]


def test_false_is_deny_with_the_decision_points_reason(tp: Toolpass) -> None:
    d = tp.check(DANA, "policy", "can_update", "document:budget.xlsx")
    assert d.decision == "deny"
    assert "no policy permits this" in d.reason
    assert tp.check(DANA, "policy", "can_update", "document:budget.xlsx").cached


@pytest.mark.parametrize(
    "body",
    [
        {"decision": "true"},
        {"decision": 1},
        {"decision": None},
        {},
        {"evaluations": [{"decision": True}]},
    ],
)
def test_an_answer_without_a_boolean_decision_is_unknown(pdp: FakePDP, body: Any) -> None:
    pdp.fail(200, body=body, times=10)
    with Toolpass([conn(pdp)]) as tp:
        d = tp.check(DANA, "policy", "can_read", PLAN)
    assert d.decision == "unknown"
    assert "no boolean decision" in d.reason


def test_a_400_from_the_decision_point_is_unknown_with_its_words(pdp: FakePDP) -> None:
    pdp.fail(400, body={"error": "subject.type is required"}, times=10)
    with Toolpass([conn(pdp)]) as tp:
        d = tp.check(DANA, "policy", "can_read", PLAN)
    assert d.decision == "unknown"
    assert "HTTP 400" in d.reason
    assert "subject.type is required" in d.reason


def test_actions_are_free_form_with_an_effect_from_their_verb(pdp: FakePDP) -> None:
    cls = get("authzen")
    assert [(n, cls.action(n).effect) for n in ("doc.view", "purge", "approve")] == [  # type: ignore[union-attr]
        ("doc.view", "read"),
        ("purge", "destructive"),
        ("approve", "write"),
    ]
    assert cls.action("bad name") is None
    pdp.grant(DANA, "approve", "invoice")
    with Toolpass([conn(pdp)]) as tp:
        assert tp.check(DANA, "policy", "approve", "invoice:42").allowed
        assert tp.configured("policy", "approve")


def test_declared_actions_make_any_other_unknown_without_asking(pdp: FakePDP) -> None:
    with Toolpass([conn(pdp, actions=["can_read"])]) as tp:
        assert tp.check(DANA, "policy", "can_read", PLAN).allowed
        d = tp.check(DANA, "policy", "can_raed", PLAN)
    assert d.decision == "unknown"
    assert "asks only can_read" in d.reason
    assert len(pdp.seen("POST", EVAL)) == 1


@pytest.mark.parametrize("resource", ["plan.md", ":plan.md", "document:"])
def test_a_resource_that_is_not_kind_id_is_unknown(
    tp: Toolpass, pdp: FakePDP, resource: str
) -> None:
    d = tp.check(DANA, "policy", "can_read", resource)
    assert d.decision == "unknown"
    assert "KIND:ID" in d.reason
    assert not pdp.requests


def test_a_decision_point_without_a_token_gets_no_authorization(pdp: FakePDP) -> None:
    pdp.token = None
    plain = {k: v for k, v in conn(pdp).items() if k != "token"}
    with Toolpass([plain]) as tp:
        assert tp.check(DANA, "policy", "can_read", PLAN).allowed
    assert "authorization" not in pdp.requests[0].headers


def test_subject_type_is_sent(pdp: FakePDP) -> None:
    with Toolpass([conn(pdp, subject_type="employee")]) as tp:
        d = tp.check(DANA, "policy", "can_read", PLAN)
    assert d.decision == "deny"  # the fake grants users only
    assert pdp.requests[0].json()["subject"]["type"] == "employee"


def test_no_route_table_unless_configured(pdp: FakePDP) -> None:
    request = Request("DELETE", "/docs/plan.md")
    with Toolpass([conn(pdp)]) as tp:
        assert get("authzen").route_table().routes == ()
        assert tp.integration("policy").match_request(request) is None
    routes = [["DELETE", "/docs/{name}", "can_delete", "document:{name}", "destructive"]]
    with Toolpass([conn(pdp, routes=routes)]) as tp:
        found = tp.integration("policy").match_request(request)
    assert found is not None
    assert (found.action, found.resource) == ("can_delete", "document:plan.md")


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"routes": [["GET", "/x"]]}, "a route is [method"),
        ({"routes": ["GET /x can_read doc:x read"]}, "a route is [method"),
        ({"routes": [["GET", "/x", "can_read", "doc:x", "maybe"]]}, "effect"),
        (
            {"routes": [["GET", "/x", "approve", "doc:x", "read"]], "actions": ["can_read"]},
            "undeclared",
        ),
        ({"actions": ["bad name"]}, "not an action name"),
        ({"subject_type": ""}, "subject type"),
    ],
)
def test_bad_settings_are_refused_when_loaded(
    pdp: FakePDP, extra: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        Toolpass([conn(pdp, **extra)])
    assert says in str(raised.value)


class TestAuthZENConformance(IntegrationConformance):
    integration = "authzen"
    user, action, resource = DANA, "can_read", PLAN
    system_user, template = DANA, "{email}"
    credential = ENGINE_TOKEN

    @pytest.fixture
    def api(self, pdp: FakePDP) -> FakePDP:
        return pdp

    def connection(self, api: FakePDP, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    unsupported = {
        "disable_account": "the decision point's policy is the whole answer: an account's "
        "state is the policy's to read, toolpass reads none of its own here",
        "make_read_only": "a resource's state is the policy's to read (it can be sent as "
        "resource properties by a decision point's own PEP, not by toolpass)",
        "bind_admins": "administrators are whatever the policy says they are",
    }

    def revoke(self, api: FakePDP) -> None:
        api.revoke(DANA, "can_read", "document")
