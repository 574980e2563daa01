"""The PagerDuty integration, through ``Toolpass``, against a fake PagerDuty on 127.0.0.1; the
fake driven by PagerDuty's own client (pagerduty 7, on httpx2); and the request hook under
requests and under pagerduty 7's own httpx2."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pagerduty
import pytest
import requests
from fakes.pagerduty import KEY, FakePagerDuty, populate
from fakes.tls import make_certs
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, environment, hooked, served

from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.intercept import ActionRefused

fake = served(FakePagerDuty, populate)
secrets = environment(PD_KEY=KEY, PD_TOKEN="pd-oauth-token-1")
conn = connection(
    id="pd", integration="pagerduty", api_key="env:PD_KEY", identity={"mode": "email"}
)
tp = engine(conn)


@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("dana", "incidents.respond", "incident:PINCA01", "allow"),  # team responder
        ("dana", "incidents.respond", "incident:PINCB01", "deny"),  # private team
        ("dana", "incidents.read", "incident:PINCB01", "deny"),
        ("dana", "services.manage", "service:PSVCA01", "deny"),
        ("dana", "services.read", "service:PSVCN01", "allow"),  # no team: base role
        ("dana", "schedules.override", "schedule:PSCHA01", "allow"),  # responder on it
        ("dana", "schedules.override", "schedule:PSCHN01", "deny"),  # not on it
        ("erin", "incidents.read", "incident:PINCA01", "allow"),  # public team: base observer
        ("erin", "incidents.respond", "incident:PINCA01", "deny"),
        ("erin", "account.read", "account", "allow"),
        ("frank", "services.manage", "service:PSVCA01", "allow"),  # restricted, team manager
        ("frank", "escalation_policies.manage", "escalation_policy:PEPA001", "allow"),
        ("frank", "services.read", "service:PSVCN01", "deny"),  # restricted outside teams
        ("frank", "account.read", "account", "deny"),
        ("gail", "incidents.respond", "incident:PINCB01", "allow"),  # admin sees private teams
        ("gail", "users.manage", "account", "allow"),
        ("hank", "services.manage", "service:PSVCA01", "allow"),  # base manager, public team
        ("hank", "services.manage", "service:PSVCB01", "deny"),  # private team
        ("hank", "users.manage", "account", "deny"),
        ("dana", "users.manage", "user:PDANA01", "allow"),  # their own profile
        ("dana", "users.manage", "user:PERIN01", "deny"),
        ("dana", "teams.read", "team:PTEAMA1", "allow"),
        ("dana", "teams.manage", "team:PTEAMA1", "deny"),
        ("frank", "teams.manage", "team:PTEAMA1", "allow"),
    ],
)
def test_roles_decide_as_pagerduty_documents(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = tp.check(f"{user}@example.com", "pd", action, resource)
    assert d.decision == decision, d.reason


def test_without_team_roles_only_the_base_role_counts(fake: FakePagerDuty) -> None:
    with Toolpass([conn(fake, team_roles=False)]) as tp:
        assert (
            tp.check("frank@example.com", "pd", "services.manage", "service:PSVCA01").decision
            == "deny"
        )
        assert tp.check("hank@example.com", "pd", "services.manage", "service:PSVCB01").allowed


def test_an_unknown_role_is_unknown(tp: Toolpass, fake: FakePagerDuty) -> None:
    fake.users["PDANA01"]["role"] = "chief_wizard"
    d = tp.check("dana@example.com", "pd", "incidents.read", "incident:PINCA01")
    assert d.decision == "unknown"
    assert "chief_wizard" in d.reason


def test_the_email_lookup_is_exact(tp: Toolpass, fake: FakePagerDuty) -> None:
    fake.add_user("PXDAN01", "Dana Impostor", "dana@example.com.evil", "admin", {})
    assert (
        tp.check("dana@example.com", "pd", "services.manage", "service:PSVCA01").decision == "deny"
    )
    assert tp.check("nobody@example.com", "pd", "incidents.read", "account").decision == "unknown"


def test_many_team_members_are_paged(tp: Toolpass, fake: FakePagerDuty) -> None:
    for i in range(150):
        fake.teams["PTEAMA1"]["members"][f"PFILL{i:03d}"] = "observer"
    fake.teams["PTEAMA1"]["members"]["PDANA01"] = "responder"  # last
    assert tp.check("dana@example.com", "pd", "incidents.respond", "incident:PINCA01").allowed
    assert len(fake.seen("GET", r"/teams/PTEAMA1/members")) == 2


def test_the_checks_send_the_documented_headers(tp: Toolpass, fake: FakePagerDuty) -> None:
    tp.check("dana@example.com", "pd", "incidents.read", "incident:PINCA01")
    [req] = fake.seen("GET", r"/incidents/PINCA01")
    assert req.headers["authorization"] == f"Token token={KEY}"
    assert req.headers["accept"] == "application/vnd.pagerduty+json;version=2"


def test_bearer_tokens(fake: FakePagerDuty) -> None:
    fake.tokens.add("pd-oauth-token-1")
    with Toolpass([conn(fake, auth="bearer", access_token="env:PD_TOKEN")]) as tp:
        assert tp.check("dana@example.com", "pd", "incidents.respond", "incident:PINCA01").allowed


@pytest.mark.parametrize("resource", ["incident:../x", "service:PSVCA01", "account:x", "team:"])
def test_a_resource_of_the_wrong_kind_is_unknown(tp: Toolpass, resource: str) -> None:
    d = tp.check("dana@example.com", "pd", "incidents.create", resource)
    expected = "deny" if resource == "service:PSVCA01" else "unknown"
    assert d.decision in (expected, "allow"), d.reason
    if resource != "service:PSVCA01":
        assert d.decision == "unknown"


@pytest.mark.parametrize(
    ("extra", "key"),
    [({"auth": "bearer"}, "access_token"), ({"role_cache_ttl": -1.0}, "role_cache_ttl")],
)
def test_bad_settings_are_refused(fake: FakePagerDuty, extra: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        Toolpass([conn(fake, **extra)])
    assert key in str(info.value)


def test_the_catalog_names_the_least_privileged_credential() -> None:
    assert "Read-only" in get("pagerduty").description


def test_pagerdutys_own_client_reads_the_fake(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    with FakePagerDuty(tls=(certs.cert_file, certs.key_file)) as fake:
        populate(fake)
        client = pagerduty.RestApiV2Client(
            KEY, base_url=fake.url, verify=ssl.create_default_context(cafile=certs.ca_file)
        )
        try:
            _read_with_the_client(client)
        finally:
            client.close()
        with Toolpass([conn(fake, ca_file=certs.ca_file)]) as tp:
            d = tp.check("dana@example.com", "pd", "incidents.respond", "incident:PINCA01")
        assert d.allowed, d.reason


def _read_with_the_client(client: pagerduty.RestApiV2Client) -> None:
    found = client.find("users", "dana@example.com", attribute="email")
    assert found is not None
    assert found["id"] == "PDANA01"
    members = list(client.iter_all("teams/PTEAMA1/members"))
    assert {m["user"]["id"] for m in members} == {"PDANA01", "PFRAN01"}
    assert client.rget("/services/PSVCA01")["teams"][0]["id"] == "PTEAMA1"


# --- the request hook under requests ------------------------------------------------------
kit = hooked(conn)


def _acknowledge(fake: FakePagerDuty, incident: str) -> str:
    answer = requests.put(
        f"{fake.url}/incidents/{incident}",
        json={"incident": {"type": "incident_reference", "status": "acknowledged"}},
        headers={
            "Authorization": f"Token token={KEY}",
            "Accept": "application/vnd.pagerduty+json;version=2",
            "From": "dana@example.com",
        },
        timeout=5,
    )
    return str(answer.json()["incident"]["status"])


def test_the_hook_refuses_pagerdutys_own_client(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    with FakePagerDuty(tls=(certs.cert_file, certs.key_file)) as fake:
        populate(fake)
        engine = Toolpass([conn(fake, ca_file=certs.ca_file)])
        toolkit = Toolkit(permissions=engine)

        def ack() -> None:
            client = pagerduty.RestApiV2Client(
                KEY,
                default_from="dana@example.com",
                base_url=fake.url,
                verify=ssl.create_default_context(cafile=certs.ca_file),
            )
            body = {"type": "incident_reference", "status": "acknowledged"}
            try:
                client.rput("/incidents/PINCB01", json=body)
            finally:
                client.close()

        try:
            with Session("dana@example.com").active(), pytest.raises(ActionRefused):
                toolkit.tool()(ack)()
        finally:
            intercept.uninstall()
            engine.close()
        assert fake.updates == []


def test_the_hook_lets_an_allowed_acknowledgement_through(
    kit: tuple[Toolkit, list[Any]], fake: FakePagerDuty
) -> None:
    toolkit, events = kit
    ack = toolkit.tool()(lambda: _acknowledge(fake, "PINCA01"))
    with Session("dana@example.com").active():
        assert ack() == "acknowledged"
    assert fake.updates == [("PINCA01", "acknowledged")]
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("incidents.respond", "incident:PINCA01")


def test_the_hook_refuses_an_acknowledgement_before_it_is_sent(
    kit: tuple[Toolkit, list[Any]], fake: FakePagerDuty
) -> None:
    toolkit, events = kit
    ack = toolkit.tool()(lambda: _acknowledge(fake, "PINCB01"))
    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        ack()
    assert fake.updates == []
    [action] = events[-1].actions
    assert action["verdict"] == "not_authorized"


class TestPagerDutyConformance(IntegrationConformance):
    integration = "pagerduty"
    user, action, resource = "dana@example.com", "incidents.respond", "incident:PINCA01"
    system_user, template = "PDANA01", None
    credential = KEY

    @pytest.fixture
    def api(self, fake: FakePagerDuty) -> FakePagerDuty:
        return fake

    def error_body(self, text: str) -> Any:
        return {"error": {"message": text, "code": 2006, "errors": [text]}}

    def connection(self, api: FakePagerDuty, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    unsupported = {
        "make_read_only": "PagerDuty has no read-only incident: a resolved one still takes "
        "notes, status updates and responder requests (incidents.respond)",
        "bind_admins": "nothing in PagerDuty's roles binds an Admin or the Account Owner: "
        "team roles and private teams apply below the base role admin",
    }

    def disable_account(self, api: FakePagerDuty) -> None:
        """Dana is removed from the account (``DELETE /users/{id}``): gone from the users
        and from her teams."""
        del api.users["PDANA01"]
        for team in api.teams.values():
            team["members"].pop("PDANA01", None)

    def revoke(self, api: FakePagerDuty) -> None:
        """Dana's base role is lowered to Stakeholder (observer) and she leaves team A."""
        api.users["PDANA01"].update(role="observer", teams=[])
        del api.teams["PTEAMA1"]["members"]["PDANA01"]
