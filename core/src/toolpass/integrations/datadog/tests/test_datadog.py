"""The Datadog integration, through ``Toolpass``, against a fake Datadog on 127.0.0.1; and the
request hook under datadog-api-client (urllib3)."""

from __future__ import annotations

from typing import Any

import pytest
from datadog_api_client import ApiClient, Configuration
from datadog_api_client.v1.api.monitors_api import MonitorsApi
from datadog_api_client.v1.model.monitor_update_request import MonitorUpdateRequest
from fakes.datadog import FakeDatadog, populate
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, environment, hooked, served

from toolpass import Session, Toolkit, Toolpass
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.intercept import ActionRefused

fake = served(FakeDatadog, populate)
secrets = environment(DD_API="dd-api-key-1", DD_APP="dd-app-key-1", DD_TOKEN="dd-oauth-token")
conn = connection(
    id="dd",
    integration="datadog",
    api_key="env:DD_API",
    app_key="env:DD_APP",
    identity={"mode": "email"},
)
tp = engine(conn)


@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("dana", "monitors.write", "monitor:42", "allow"),
        ("erin", "monitors.write", "monitor:42", "deny"),
        ("erin", "monitors.read", "org", "allow"),
        ("dana", "dashboards.read", "dashboard:abc-123", "allow"),
        ("dana", "dashboards.write", "dashboard:abc-123", "deny"),
        ("frank", "dashboards.write", "dashboard:abc-123", "allow"),
        ("erin", "dashboards.write", "dashboard:abc-123", "deny"),
        ("gail", "monitors.read", "org", "deny"),
        ("dana", "org.manage", "org", "deny"),
        ("dana", "org.read", "org", "allow"),
    ],
)
def test_role_permissions_and_restriction_policies_decide(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = tp.check(f"{user}@example.com", "dd", action, resource)
    assert d.decision == decision, d.reason


def test_a_user_or_role_principal_grants_the_relation(tp: Toolpass, fake: FakeDatadog) -> None:
    fake.monitors["7"] = {**fake.monitors["42"], "id": 7}
    fake.policies["monitor:7"] = [{"relation": "editor", "principals": ["user:aaaaaaaa-0001"]}]
    fake.policies["slo:s1"] = [{"relation": "viewer", "principals": ["role:role-ro"]}]
    fake.roles["role-ro"].add("slos_read")
    fake.roles["role-std"].add("slos_read")
    assert tp.check("dana@example.com", "dd", "monitors.write", "monitor:7").allowed
    assert tp.check("frank@example.com", "dd", "monitors.write", "monitor:7").decision == "deny"
    assert tp.check("frank@example.com", "dd", "monitors.read", "monitor:7").allowed
    assert tp.check("erin@example.com", "dd", "slos.read", "slo:s1").allowed
    assert tp.check("dana@example.com", "dd", "slos.read", "slo:s1").decision == "deny"


@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("dana", "monitors.write", "monitor:42", "deny"),  # role-std is not named
        ("dana", "monitors.read", "monitor:42", "allow"),  # a monitor's restrict editing only
        ("erin", "monitors.read", "monitor:42", "allow"),
        ("frank", "monitors.write", "monitor:42", "allow"),  # role-oncall
        ("dana", "dashboards.write", "dashboard:xyz-789", "deny"),
        ("dana", "dashboards.read", "dashboard:xyz-789", "allow"),
        ("frank", "dashboards.write", "dashboard:xyz-789", "allow"),
        ("erin", "dashboards.write", "dashboard:own-456", "allow"),  # the author is exempt
        ("dana", "synthetics.read", "synthetics-test:syn-abc-def", "deny"),  # reads too
        ("frank", "synthetics.write", "synthetics-test:syn-abc-def", "allow"),
    ],
)
def test_legacy_restricted_roles_bind_whatever_the_role_permissions(
    tp: Toolpass, fake: FakeDatadog, user: str, action: str, resource: str, decision: str
) -> None:
    for role in ("role-std", "role-ro", "role-oncall"):
        fake.roles.setdefault(role, set()).update(
            {"synthetics_read", "synthetics_write", "dashboards_write", "monitors_write"}
        )
    fake.users["aaaaaaaa-0003"]["roles"].append("role-oncall")
    fake.monitors["42"]["restricted_roles"] = ["role-oncall"]
    base = {"layout_type": "ordered", "widgets": [], "restricted_roles": ["role-oncall"]}
    fake.dashboards["xyz-789"] = {**base, "id": "xyz-789", "author_handle": "x@example.com"}
    fake.dashboards["own-456"] = {**base, "id": "own-456", "author_handle": "erin@example.com"}
    fake.tests["syn-abc-def"]["options"]["restricted_roles"] = ["role-oncall"]
    d = tp.check(f"{user}@example.com", "dd", action, resource)
    assert d.decision == decision, d.reason


@pytest.mark.parametrize("roles", [None, []])
def test_no_restricted_roles_restrict_nothing(
    tp: Toolpass, fake: FakeDatadog, roles: list[str] | None
) -> None:
    fake.monitors["42"]["restricted_roles"] = roles
    assert tp.check("dana@example.com", "dd", "monitors.write", "monitor:42").allowed


@pytest.mark.parametrize("roles", ["role-std", [1], {"id": "role-std"}])
def test_malformed_restricted_roles_are_unknown(
    tp: Toolpass, fake: FakeDatadog, roles: Any
) -> None:
    fake.monitors["42"]["restricted_roles"] = roles
    d = tp.check("dana@example.com", "dd", "monitors.write", "monitor:42")
    assert d.decision == "unknown", d.reason


def test_a_read_only_dashboard_is_its_authors_alone(tp: Toolpass, fake: FakeDatadog) -> None:
    fake.dashboards["abc-123"]["is_read_only"] = True  # author: frank
    assert tp.check("frank@example.com", "dd", "dashboards.write", "dashboard:abc-123").allowed
    fake.dashboards["abc-123"]["author_handle"] = "x@example.com"
    with Toolpass([conn(fake)]) as again:
        d = again.check("frank@example.com", "dd", "dashboards.write", "dashboard:abc-123")
    assert d.decision == "deny", d.reason


def test_an_author_without_a_handle_is_not_exempt(tp: Toolpass, fake: FakeDatadog) -> None:
    fake.dashboards["xyz-789"] = {"id": "xyz-789", "restricted_roles": ["role-x"]}
    fake.roles["role-std"].add("dashboards_write")
    d = tp.check("dana@example.com", "dd", "dashboards.write", "dashboard:xyz-789")
    assert d.decision == "deny", d.reason


def test_a_malformed_policy_is_unknown(tp: Toolpass, fake: FakeDatadog) -> None:
    fake.monitors["9"] = {**fake.monitors["42"], "id": 9}
    fake.policies["monitor:9"] = [{"relation": "editor", "principals": "user:x"}]
    d = tp.check("dana@example.com", "dd", "monitors.write", "monitor:9")
    assert d.decision == "unknown", d.reason


def test_a_users_permissions_are_read_once(fake: FakeDatadog) -> None:
    with Toolpass([conn(fake, cache_ttl_allow=0)]) as tp:
        for _ in range(3):
            assert tp.check("dana@example.com", "dd", "monitors.write", "org").allowed
    assert len(fake.seen("GET", r"/api/v2/users/aaaaaaaa-0001/permissions")) == 1


def test_the_email_lookup_is_exact(tp: Toolpass, fake: FakeDatadog) -> None:
    fake.add_user("aaaaaaaa-0009", "xdana@example.com.evil", ["role-std"])
    assert tp.check("dana@example.com", "dd", "monitors.write", "org").allowed
    assert tp.check("nobody@example.com", "dd", "monitors.read", "org").decision == "unknown"


def test_the_checks_send_the_keys(tp: Toolpass, fake: FakeDatadog) -> None:
    tp.check("dana@example.com", "dd", "monitors.read", "monitor:42")
    [req] = fake.seen("GET", r"/api/v2/restriction_policy/monitor:42")
    assert req.headers["dd-api-key"] == "dd-api-key-1"
    assert req.headers["dd-application-key"] == "dd-app-key-1"


def test_a_resource_of_the_wrong_kind_is_unknown(tp: Toolpass, fake: FakeDatadog) -> None:
    before = len(fake.requests)
    d = tp.check("dana@example.com", "dd", "monitors.read", "dashboard:abc-123")
    assert d.decision == "unknown"
    assert len(fake.requests) == before


def test_bearer_tokens(fake: FakeDatadog) -> None:
    fake.tokens.add("dd-oauth-token")
    settings = conn(fake, auth="bearer", access_token="env:DD_TOKEN")
    with Toolpass([settings]) as tp:
        assert tp.check("dana@example.com", "dd", "monitors.write", "monitor:42").allowed


@pytest.mark.parametrize(
    ("extra", "key"),
    [({"auth": "bearer"}, "access_token"), ({"policy_cache_ttl": -1.0}, "policy_cache_ttl")],
)
def test_bad_settings_are_refused(fake: FakeDatadog, extra: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        Toolpass([conn(fake, **extra)])
    assert key in str(info.value)


def test_the_catalog_names_the_least_privileged_credential() -> None:
    assert "user_access_read" in get("datadog").description


def test_the_table_is_generated_from_the_vendor_client() -> None:
    from toolpass.integrations.routes import load

    table = load("toolpass.integrations.datadog")
    assert len(table.routes) >= 1500
    assert {r.effect for r in table.routes if r.method == "DELETE"} == {"destructive"}


# --- the request hook under datadog-api-client ---------------------------------------------
kit = hooked(conn)


def _client(fake: FakeDatadog) -> ApiClient:
    config = Configuration(host=fake.url)
    config.api_key["apiKeyAuth"] = "dd-api-key-1"
    config.api_key["appKeyAuth"] = "dd-app-key-1"
    return ApiClient(config)


def _rename(fake: FakeDatadog) -> str:
    with _client(fake) as client:
        answer = MonitorsApi(client).update_monitor(42, MonitorUpdateRequest(name="CPU very high"))
    return str(answer["name"] if isinstance(answer, dict) else answer.name)


def test_the_hook_lets_an_allowed_update_through(
    kit: tuple[Toolkit, list[Any]], fake: FakeDatadog
) -> None:
    toolkit, events = kit
    rename = toolkit.tool()(lambda: _rename(fake))
    with Session("dana@example.com").active():
        assert "CPU very high" in rename()
    assert len(fake.seen("PUT", r"/api/v1/monitor/42")) == 1
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("monitors.write", "monitor:42")


def test_the_hook_refuses_an_update_before_it_is_sent(
    kit: tuple[Toolkit, list[Any]], fake: FakeDatadog
) -> None:
    toolkit, events = kit
    rename = toolkit.tool()(lambda: _rename(fake))
    with Session("erin@example.com").active(), pytest.raises(ActionRefused):
        rename()
    assert fake.seen("PUT", r"/api/v1/monitor/42") == []
    assert fake.monitors["42"]["name"] == "CPU high"
    [action] = events[-1].actions
    assert action["verdict"] == "not_authorized"


def test_the_hook_refuses_an_update_the_restricted_roles_forbid(
    kit: tuple[Toolkit, list[Any]], fake: FakeDatadog
) -> None:
    toolkit, events = kit
    fake.monitors["42"]["restricted_roles"] = ["role-oncall"]
    rename = toolkit.tool()(lambda: _rename(fake))
    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        rename()
    assert fake.seen("PUT", r"/api/v1/monitor/42") == []
    assert events[-1].actions[-1]["verdict"] == "not_authorized"


class TestDatadogConformance(IntegrationConformance):
    integration = "datadog"
    user, action, resource = "dana@example.com", "monitors.write", "monitor:42"
    system_user, template = "aaaaaaaa-0001", None
    credential = "dd-app-key-1"
    other_secrets = ("dd-api-key-1",)

    @pytest.fixture
    def api(self, fake: FakeDatadog) -> FakeDatadog:
        return fake

    def error_body(self, text: str) -> Any:
        return {"errors": [text]}

    def connection(self, api: FakeDatadog, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    def disable_account(self, api: FakeDatadog) -> None:
        api.users["aaaaaaaa-0001"]["status"] = "Disabled"

    def make_read_only(self, api: FakeDatadog) -> str:
        api.monitors["42"]["restricted_roles"] = ["role-oncall"]  # editable by on-call only
        return "monitors.write"

    def bind_admins(self, api: FakeDatadog) -> None:
        api.roles["role-admin"] = {"monitors_write", "user_access_manage", "org_management"}
        api.users["aaaaaaaa-0001"]["roles"] = ["role-admin"]
        api.policies["monitor:42"] = [{"relation": "editor", "principals": ["team:team-sre"]}]

    def revoke(self, api: FakeDatadog) -> None:
        api.users["aaaaaaaa-0001"]["roles"] = ["role-ro"]
