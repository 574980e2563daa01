"""The Zendesk integration, through ``Toolpass``, against a fake Zendesk on 127.0.0.1; and the
request hook under Zenpy (Zendesk's Python client, on requests)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.zendesk import FakeZendesk, populate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, environment, served
from zenpy import Zenpy
from zenpy.lib.api_objects import Comment, User

from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.intercept import ActionRefused

fake = served(FakeZendesk, populate)
secrets = environment(ZD_TOKEN="zd-api-token-1", ZD_OAUTH="zd-oauth-token")
conn = connection(
    id="zd",
    integration="zendesk",
    email="engine@example.com",
    api_token="env:ZD_TOKEN",
    identity={"mode": "email"},
)
tp = engine(conn)


@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("ada", "ticket.delete", "ticket:502", "allow"),  # an admin
        ("ada", "account.admin", "account", "allow"),
        ("ben", "ticket.view", "ticket:502", "allow"),  # an agent without restriction
        ("ben", "ticket.edit", "ticket:502", "allow"),
        ("ben", "ticket.comment_public", "ticket:502", "allow"),
        ("ben", "ticket.merge", "ticket:502", "allow"),
        ("ben", "ticket.delete", "ticket:502", "deny"),  # the account does not let agents
        ("ben", "account.read", "account", "allow"),
        ("ben", "account.write", "account", "allow"),
        ("ben", "account.admin", "account", "deny"),
        ("cam", "ticket.view", "ticket:501", "allow"),  # in the ticket's group
        ("cam", "ticket.view", "ticket:502", "deny"),
        ("dee", "ticket.edit", "ticket:501", "allow"),  # the assignee
        ("dee", "ticket.view", "ticket:502", "deny"),
        ("eli", "ticket.view", "ticket:501", "allow"),  # the ticket's organization
        ("eli", "ticket.view", "ticket:502", "deny"),
        ("fay", "ticket.view", "ticket:501", "allow"),  # a custom role: view only
        ("fay", "ticket.edit", "ticket:501", "deny"),
        ("fay", "ticket.comment_public", "ticket:501", "deny"),
        ("fay", "ticket.merge", "ticket:501", "deny"),
        ("fay", "ticket.delete", "ticket:501", "deny"),
        ("fay", "user.manage", "user:20", "deny"),
        ("gus", "ticket.edit", "ticket:501", "allow"),
        ("gus", "ticket.comment_public", "ticket:501", "deny"),  # private comments only
        ("hal", "ticket.view", "ticket:501", "deny"),  # suspended
        ("ivy", "ticket.view", "ticket:501", "allow"),  # the requester
        ("ivy", "ticket.comment_public", "ticket:501", "allow"),
        ("ivy", "ticket.edit", "ticket:501", "deny"),
        ("ivy", "ticket.view", "ticket:502", "deny"),
        ("ivy", "account.read", "account", "deny"),
        ("ivy", "ticket.create", "account", "allow"),
        ("jon", "ticket.view", "ticket:501", "allow"),  # a CC
        ("jon", "user.view", "user:20", "deny"),
        ("jon", "user.view", "user:21", "allow"),  # themself
        ("ben", "user.view", "user:20", "allow"),
        ("ben", "user.manage", "user:20", "allow"),  # an end user, no custom role
        ("ben", "user.manage", "user:10", "deny"),  # an admin
        ("ben", "user.delete", "user:20", "deny"),
        ("ada", "user.delete", "user:11", "allow"),
    ],
)
def test_roles_restrictions_and_tickets_decide(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = tp.check(f"{user}@example.com", "zd", action, resource)
    assert d.decision == decision, d.reason


@pytest.mark.parametrize("user", ["ada", "ben", "ivy"])  # an admin, an agent, the requester
@pytest.mark.parametrize("action", ["ticket.edit", "ticket.comment_public", "ticket.merge"])
def test_a_closed_ticket_takes_no_change_whoever_asks(
    tp: Toolpass, fake: FakeZendesk, user: str, action: str
) -> None:
    fake.tickets[501]["status"] = "closed"
    d = tp.check(f"{user}@example.com", "zd", action, "ticket:501")
    assert d.decision == "deny", d.reason
    assert "closed" in d.reason
    assert tp.check(f"{user}@example.com", "zd", "ticket.view", "ticket:501").allowed


_FIXTURES = [HealthCheck.function_scoped_fixture]


@given(status=st.sampled_from(["new", "open", "pending", "hold", "solved"]))
@settings(max_examples=10, deadline=None, suppress_health_check=_FIXTURES)
def test_only_a_closed_ticket_refuses_an_edit(fake: FakeZendesk, status: str) -> None:
    fake.tickets[501]["status"] = status
    with Toolpass([conn(fake)]) as tp:
        assert tp.check("ben@example.com", "zd", "ticket.edit", "ticket:501").allowed


def test_a_ticket_without_a_status_is_unknown_for_a_change(tp: Toolpass, fake: FakeZendesk) -> None:
    del fake.tickets[501]["status"]
    assert tp.check("ben@example.com", "zd", "ticket.edit", "ticket:501").decision == "unknown"
    assert tp.check("ben@example.com", "zd", "ticket.view", "ticket:501").allowed


def test_a_closed_ticket_may_still_be_deleted_by_an_admin(tp: Toolpass, fake: FakeZendesk) -> None:
    fake.tickets[502]["status"] = "closed"
    assert tp.check("ada@example.com", "zd", "ticket.delete", "ticket:502").allowed


def test_the_account_setting_lets_agents_delete(fake: FakeZendesk) -> None:
    fake.settings["tickets"]["agent_ticket_deletion"] = True
    with Toolpass([conn(fake)]) as tp:
        assert tp.check("ben@example.com", "zd", "ticket.delete", "ticket:502").allowed
        assert tp.check("fay@example.com", "zd", "ticket.delete", "ticket:501").decision == "deny"


def test_a_custom_role_may_see_public_groups(tp: Toolpass, fake: FakeZendesk) -> None:
    fake.roles[8] = {"ticket_access": "within-groups-and-public-groups", "ticket_editing": True}
    fake.add_user(18, "kit@example.com", ticket_restriction="groups", custom_role_id=8)
    fake.add_ticket(503, requester_id=21, group_id=100)
    assert tp.check("kit@example.com", "zd", "ticket.edit", "ticket:503").allowed  # public
    assert tp.check("kit@example.com", "zd", "ticket.view", "ticket:502").decision == "deny"


def test_end_user_profile_access_within_the_organization(tp: Toolpass, fake: FakeZendesk) -> None:
    fake.roles[9] = {"end_user_profile_access": "edit-within-org"}
    fake.add_user(19, "lea@example.com", custom_role_id=9, organization_id=500)
    assert tp.check("lea@example.com", "zd", "user.manage", "user:20").allowed
    assert tp.check("lea@example.com", "zd", "user.manage", "user:21").decision == "deny"


def test_group_memberships_and_custom_roles_are_read_page_by_page(fake: FakeZendesk) -> None:
    fake.per_page_max = 1
    fake.memberships[12] = [300, 301, 100]
    for rid in range(30, 33):
        fake.roles[rid] = {"ticket_access": "all"}
    with Toolpass([conn(fake)]) as tp:
        assert tp.check("cam@example.com", "zd", "ticket.view", "ticket:501").allowed
        assert tp.check("fay@example.com", "zd", "ticket.edit", "ticket:501").decision == "deny"
    assert len(fake.seen("GET", r"/api/v2/users/12/group_memberships")) == 3


def test_the_email_lookup_is_exact(tp: Toolpass, fake: FakeZendesk) -> None:
    fake.add_user(99, "xben@example.com", "admin")
    assert tp.check("ben@example.com", "zd", "account.admin", "account").decision == "deny"
    assert tp.check("nobody@example.com", "zd", "account.read", "account").decision == "unknown"


def test_the_engine_signs_in_with_its_api_token(tp: Toolpass, fake: FakeZendesk) -> None:
    tp.check("ben@example.com", "zd", "ticket.view", "ticket:501")
    [first, *_] = fake.seen("GET", r"/api/v2/users/search")
    assert first.headers["authorization"].startswith("Basic ")
    assert first.query["query"] == ["email:ben@example.com"]


def test_a_missing_ticket_is_unknown(tp: Toolpass) -> None:
    d = tp.check("ben@example.com", "zd", "ticket.view", "ticket:9999")
    assert d.decision == "unknown"
    assert "404" in d.reason


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("ticket.view", "account"),
        ("ticket.view", "ticket:abc"),
        ("ticket.view", "ticket:0"),
        ("account.read", "ticket:501"),
        ("user.view", "ticket:501"),
        ("ticket.view", "ticket:501/../502"),
    ],
)
def test_a_resource_of_the_wrong_kind_is_unknown_and_not_asked(
    tp: Toolpass, fake: FakeZendesk, action: str, resource: str
) -> None:
    before = len(fake.requests)
    d = tp.check("ben@example.com", "zd", action, resource)
    assert d.decision == "unknown"
    assert len(fake.requests) == before


def test_an_unknown_ticket_restriction_is_unknown(tp: Toolpass, fake: FakeZendesk) -> None:
    fake.add_user(40, "new@example.com", ticket_restriction="brand")
    d = tp.check("new@example.com", "zd", "ticket.view", "ticket:502")
    assert d.decision == "unknown"


def test_a_user_and_the_custom_roles_are_read_once(fake: FakeZendesk) -> None:
    with Toolpass([conn(fake, cache_ttl_allow=0, cache_ttl_deny=0)]) as tp:
        for _ in range(3):
            tp.check("fay@example.com", "zd", "ticket.view", "ticket:501")
    assert len(fake.seen("GET", r"/api/v2/users/15")) == 1
    assert len(fake.seen("GET", r"/api/v2/custom_roles")) == 1


def test_bearer_tokens(fake: FakeZendesk) -> None:
    fake.tokens.add("zd-oauth-token")
    with Toolpass([conn(fake, auth="bearer", access_token="env:ZD_OAUTH")]) as tp:
        assert tp.check("ben@example.com", "zd", "ticket.edit", "ticket:501").allowed


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"auth": "bearer"}, "access_token"),
        ({"email": None}, "email"),
        ({"ticket_cache_ttl": -1.0}, "ticket_cache_ttl"),
    ],
)
def test_bad_settings_are_refused(fake: FakeZendesk, extra: dict[str, Any], key: str) -> None:
    settings = {k: v for k, v in conn(fake, **extra).items() if v is not None}
    with pytest.raises(ConfigError) as info:
        Toolpass([settings])
    assert key in str(info.value)


def test_the_catalog_names_the_least_privileged_credential() -> None:
    description = get("zendesk").description
    assert "API token" in description
    assert "no check for another user" in description


def test_the_probe_refuses_a_restricted_agent(fake: FakeZendesk) -> None:
    fake.users[1]["role"], fake.users[1]["ticket_restriction"] = "agent", "groups"
    with Toolpass([conn(fake)]) as tp:
        (result,) = tp.probe().values()
    assert not result.ok
    assert "groups" in result.detail


# --- the request hook under Zenpy ----------------------------------------------------------
@pytest.fixture
def kit(
    fake: FakeZendesk, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Toolkit, list[Any], Zenpy]]:
    monkeypatch.setenv("ZENPY_FORCE_SCHEME", "http")
    monkeypatch.setenv("ZENPY_FORCE_NETLOC", f"127.0.0.1:{fake.port}")
    client = Zenpy(
        subdomain="acme", email="engine@example.com", token="zd-api-token-1", disable_cache=True
    )
    events: list[Any] = []
    engine = Toolpass([conn(fake)])
    yield Toolkit(permissions=engine, audit=[events.append]), events, client
    intercept.uninstall()
    engine.close()


def _comment(client: Zenpy, ticket_id: int, public: bool) -> str:
    ticket = client.tickets(id=ticket_id)
    ticket.subject = "Escalated"
    ticket.comment = Comment(body="Looking into it", public=public)
    client.tickets.update(ticket)
    return str(client.tickets(id=ticket_id).subject)


def test_the_hook_lets_an_allowed_update_through(
    kit: tuple[Toolkit, list[Any], Zenpy], fake: FakeZendesk
) -> None:
    toolkit, events, client = kit
    update = toolkit.tool()(lambda: _comment(client, 501, public=False))
    with Session("ben@example.com").active():
        assert "Escalated" in update()
    assert len(fake.seen("PUT", r"/api/v2/tickets/501\.json")) == 1
    [read, change, _] = events[-1].actions
    assert (change["action"], change["resource"]) == ("ticket.edit", "ticket:501")
    assert read["action"] == "ticket.view"


def test_the_hook_refuses_a_public_comment_before_it_is_sent(
    kit: tuple[Toolkit, list[Any], Zenpy], fake: FakeZendesk
) -> None:
    toolkit, events, client = kit
    update = toolkit.tool()(lambda: _comment(client, 501, public=True))
    with Session("gus@example.com").active(), pytest.raises(ActionRefused):
        update()
    assert fake.seen("PUT", r"/api/v2/tickets/501\.json") == []
    assert fake.tickets[501]["subject"] == "Ticket 501"
    assert events[-1].actions[-1]["action"] == "ticket.comment_public"
    assert events[-1].actions[-1]["verdict"] == "not_authorized"


def test_the_hook_refuses_a_ticket_the_user_cannot_see(
    kit: tuple[Toolkit, list[Any], Zenpy], fake: FakeZendesk
) -> None:
    toolkit, _, client = kit
    read = toolkit.tool()(lambda: client.tickets(id=502).subject)
    with Session("dee@example.com").active(), pytest.raises(ActionRefused):
        read()
    assert fake.seen("GET", r"/api/v2/tickets/502\.json") == []


def test_the_hook_refuses_an_update_of_a_closed_ticket(
    kit: tuple[Toolkit, list[Any], Zenpy], fake: FakeZendesk
) -> None:
    toolkit, events, client = kit
    fake.tickets[501]["status"] = "closed"
    update = toolkit.tool()(lambda: _comment(client, 501, public=False))
    with Session("ada@example.com").active(), pytest.raises(ActionRefused):
        update()
    assert fake.seen("PUT", r"/api/v2/tickets/501\.json") == []
    assert events[-1].actions[-1]["action"] == "ticket.edit"
    assert events[-1].actions[-1]["verdict"] == "not_authorized"


def _profile(client: Zenpy, uid: int, **fields: Any) -> str:
    user = client.users(id=uid)
    for name, value in fields.items():
        setattr(user, name, value)
    return str(client.users.update(user).name)


@pytest.mark.parametrize(
    ("who", "uid", "fields"),
    [
        ("ivy@example.com", 20, {"organization_id": 501}),  # an end user joining another org
        ("ivy@example.com", 20, {"tags": ["vip"]}),
        ("ivy@example.com", 20, {"notes": "trusted customer", "name": "Ivy"}),
        ("ben@example.com", 11, {"organization_id": 501}),  # an agent, on their own account
    ],
)
def test_the_hook_refuses_a_self_update_of_what_needs_an_admin(
    kit: tuple[Toolkit, list[Any], Zenpy],
    fake: FakeZendesk,
    who: str,
    uid: int,
    fields: dict[str, Any],
) -> None:
    toolkit, events, client = kit
    update = toolkit.tool()(lambda: _profile(client, uid, **fields))
    before = dict(fake.users[uid])
    with Session(who).active(), pytest.raises(ActionRefused):
        update()
    assert fake.seen("PUT", rf"/api/v2/users/{uid}\.json") == []
    assert fake.users[uid] == before
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("user.manage_restricted", f"user:{uid}")
    assert action["verdict"] == "not_authorized"


def test_the_hook_lets_a_user_change_their_own_name_and_time_zone(
    kit: tuple[Toolkit, list[Any], Zenpy], fake: FakeZendesk
) -> None:
    toolkit, events, client = kit
    update = toolkit.tool()(lambda: _profile(client, 20, name="Ivy B", time_zone="Berlin"))
    with Session("ivy@example.com").active():
        assert "Ivy B" in update()
    assert fake.users[20]["time_zone"] == "Berlin"
    action = events[-1].actions[-1]
    assert (action["action"], action["verdict"]) == ("user.manage", "allowed")


@pytest.mark.parametrize(
    "make",
    [
        lambda client: client.users.create(User(name="Mal", email="mal@example.com", role="admin")),
        lambda client: client.users.create(
            User(name="Mal", email="mal@example.com", moderator=True)
        ),
        # create_or_update changes the user its email names: here the admin, demoted
        lambda client: client.users.create_or_update(
            User(email="ada@example.com", role="end-user")
        ),
        lambda client: client.users.create_or_update(User(email="ada@example.com", name="Mal")),
    ],
)
def test_the_hook_refuses_an_agent_making_or_changing_accounts_an_admin_must(
    kit: tuple[Toolkit, list[Any], Zenpy], fake: FakeZendesk, make: Any
) -> None:
    toolkit, events, client = kit
    create = toolkit.tool()(lambda: make(client))
    with Session("ben@example.com").active(), pytest.raises(ActionRefused):
        create()  # ben is an agent: only an admin gives a role or changes another account
    assert fake.seen("POST", r"/api/v2/users.*") == []
    action = events[-1].actions[-1]
    assert (action["action"], action["verdict"]) == ("account.admin", "not_authorized")


def test_the_hook_reads_a_form_encoded_ticket_update_as_unresolved(
    kit: tuple[Toolkit, list[Any], Zenpy], fake: FakeZendesk
) -> None:
    import requests

    toolkit, events, _ = kit
    form = {"ticket[comment][body]": "Refund approved", "ticket[comment][public]": "true"}

    @toolkit.tool()
    def update() -> int:
        answer = requests.put(
            f"{fake.url}/api/v2/tickets/501.json",
            data=form,  # Rails reads bracketed fields as the ticket's public comment
            auth=("engine@example.com/token", "zd-api-token-1"),
            timeout=10,
        )
        return answer.status_code

    with Session("gus@example.com").active(), pytest.raises(ActionRefused):
        update()  # gus may edit the ticket, but comments only privately
    assert fake.seen("PUT", r"/api/v2/tickets/501.*") == []
    assert events[-1].actions[-1]["resource"] is None


class TestZendeskConformance(IntegrationConformance):
    integration = "zendesk"
    user, action, resource = "ben@example.com", "ticket.edit", "ticket:501"
    system_user, template = "11", None
    credential = "zd-api-token-1"

    @pytest.fixture
    def api(self, fake: FakeZendesk) -> FakeZendesk:
        return fake

    def error_body(self, text: str) -> Any:
        return {"error": "Unauthorized", "description": text}

    def connection(self, api: FakeZendesk, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    def disable_account(self, api: FakeZendesk) -> None:
        api.users[11]["suspended"] = True

    def make_read_only(self, api: FakeZendesk) -> str:
        api.tickets[501]["status"] = "closed"
        return "ticket.comment_public"

    def bind_admins(self, api: FakeZendesk) -> None:
        api.users[11]["role"] = "admin"
        api.tickets[501]["status"] = "closed"  # closed binds admins too

    def revoke(self, api: FakeZendesk) -> None:
        api.users[11]["ticket_restriction"] = "requested"


def test_the_hook_lets_a_search_through_only_for_a_user_who_sees_every_ticket(
    kit: tuple[Toolkit, list[Any], Zenpy], fake: FakeZendesk
) -> None:
    """Zenpy's search is sent with the agent's credential and answers every ticket it sees:
    it is ticket.view_all, refused for an agent restricted to their groups or assigned
    tickets before it is sent, let through for an agent who sees all tickets."""
    toolkit, events, client = kit
    search = toolkit.tool()(lambda: sorted(t.id for t in client.search("refund", type="ticket")))
    for restricted in ("cam@example.com", "dee@example.com", "ivy@example.com"):
        with Session(restricted).active(), pytest.raises(ActionRefused):
            search()
        assert events[-1].actions[-1]["verdict"] == "not_authorized"
    assert fake.seen("GET", r"/api/v2/search\.json") == []
    with Session("ben@example.com").active():
        assert search() == [501, 502]
    assert len(fake.seen("GET", r"/api/v2/search\.json")) == 1
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("ticket.view_all", "account")
