"""The Linear integration, through ``Toolpass``, against a fake Linear GraphQL API on 127.0.0.1
(graphql-core executing a part of Linear's schema); and the request hook under httpx (Linear
publishes no Python client)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from fakes.linear import FakeLinear, populate
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, environment, hooked, served

from toolpass import Session, Toolkit, Toolpass
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.intercept import ActionRefused

ANA = "00000000-0000-4000-8000-00000000000a"
ENG = "10000000-0000-4000-8000-000000000001"


fake = served(FakeLinear, populate)
secrets = environment(
    LINEAR_KEY="lin_api_engine", LINEAR_TOKEN="lin_oauth_given", LINEAR_SECRET="app-secret-1"
)
conn = connection(
    id="lin", integration="linear", api_key="env:LINEAR_KEY", identity={"mode": "email"}
)
tp = engine(conn)


@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("ana", "issue.read", "issue:SEC-1", "allow"),  # a member of the private team
        ("bo", "issue.read", "issue:SEC-1", "deny"),
        ("bo", "issue.read", "issue:ENG-1", "allow"),  # a public team
        ("bo", "issue.write", "team:ENG", "allow"),
        ("bo", "issue.write", f"team:{ENG}", "allow"),
        ("bo", "issue.delete", "issue:ENG-1", "allow"),
        ("bo", "team.manage", "team:ENG", "deny"),
        ("ana", "team.manage", "team:ENG", "allow"),  # a team owner
        ("ana", "team.manage", "team:SEC", "deny"),
        ("di", "team.manage", "team:ENG", "allow"),  # a workspace admin
        ("di", "issue.read", "issue:SEC-1", "deny"),  # admins are not members
        ("cy", "issue.read", "issue:ENG-1", "allow"),  # a guest in their own team
        ("cy", "workspace.read", "workspace", "deny"),
        ("cy", "team.read", "team:SEC", "deny"),
        ("bo", "workspace.read", "workspace", "allow"),
        ("bo", "workspace.write", "workspace", "allow"),
        ("bo", "workspace.admin", "workspace", "deny"),
        ("di", "workspace.admin", "workspace", "allow"),
        ("ex", "issue.read", "issue:ENG-1", "deny"),  # suspended
        ("ana", "comment.edit", "comment:comment-ana", "allow"),
        ("bo", "comment.edit", "comment:comment-ana", "deny"),
        ("di", "comment.delete", "comment:comment-ana", "allow"),
        ("bo", "comment.delete", "comment:comment-ana", "deny"),
        ("bo", "issue.write", "comment:comment-ana", "allow"),
        ("bo", "team.manage", "issueLabel:label-ws", "deny"),  # a workspace label
        ("di", "team.manage", "issueLabel:label-ws", "allow"),
        ("ana", "team.manage", "issueLabel:label-eng", "allow"),
        ("bo", "team.read", "issueLabel:label-eng", "allow"),
    ],
)
def test_roles_teams_and_memberships_decide(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = tp.check(f"{user}@example.com", "lin", action, resource)
    assert d.decision == decision, d.reason


def test_a_guest_is_denied_a_public_team_they_are_not_in(tp: Toolpass, fake: FakeLinear) -> None:
    fake.add_team("10000000-0000-4000-8000-000000000003", "OPS")
    d = tp.check("cy@example.com", "lin", "team.read", "team:OPS")
    assert d.decision == "deny"
    assert "guest" in d.reason


def test_a_restricted_team_is_for_its_members(tp: Toolpass, fake: FakeLinear) -> None:
    fake.add_team("10000000-0000-4000-8000-000000000004", "SUB", visibility="restricted")
    assert tp.check("bo@example.com", "lin", "team.read", "team:SUB").decision == "deny"


def test_memberships_are_read_page_by_page(fake: FakeLinear) -> None:
    fake.page_size = 1
    with Toolpass([conn(fake)]) as tp:
        assert tp.check("ana@example.com", "lin", "issue.read", "issue:SEC-1").allowed
    assert len(fake.seen("POST", r"/graphql")) >= 4  # the look-up, two pages, the issue


def test_the_email_lookup_is_exact_and_finds_suspended_users(
    tp: Toolpass, fake: FakeLinear
) -> None:
    fake.add_user("00000000-0000-4000-8000-0000000000ff", "bo@example.com.evil")
    assert tp.check("bo@example.com", "lin", "issue.read", "issue:ENG-1").allowed
    assert tp.check("nobody@example.com", "lin", "issue.read", "issue:ENG-1").decision == "unknown"
    assert tp.check("ex@example.com", "lin", "issue.read", "issue:ENG-1").decision == "deny"


def test_the_engine_sends_its_key_as_linear_wants_it(tp: Toolpass, fake: FakeLinear) -> None:
    tp.check("bo@example.com", "lin", "issue.read", "issue:ENG-1")
    assert {r.headers["authorization"] for r in fake.seen("POST", "/graphql")} == {"lin_api_engine"}


@pytest.mark.parametrize("resource", ["issue:NOPE-9", "team:NOPE", "comment:missing"])
def test_a_missing_resource_is_unknown(tp: Toolpass, resource: str) -> None:
    action = "issue.read" if not resource.startswith("team") else "team.read"
    d = tp.check("bo@example.com", "lin", action, resource)
    assert d.decision == "unknown", d.reason


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("issue.read", "team:ENG"),
        ("comment.edit", "issue:ENG-1"),
        ("workspace.read", "team:ENG"),
        ("issue.read", "issue:../x"),
        ("team.read", "project:abc"),
    ],
)
def test_a_resource_of_the_wrong_kind_is_unknown_and_not_asked(
    tp: Toolpass, fake: FakeLinear, action: str, resource: str
) -> None:
    before = len(fake.requests)
    d = tp.check("bo@example.com", "lin", action, resource)
    assert d.decision == "unknown"
    assert len(fake.requests) == before


def test_a_users_memberships_are_read_once(fake: FakeLinear) -> None:
    with Toolpass([conn(fake, cache_ttl_allow=0)]) as tp:
        for _ in range(3):
            assert tp.check("ana@example.com", "lin", "issue.read", "issue:SEC-1").allowed
    bodies = [r.json()["query"] for r in fake.seen("POST", "/graphql")]
    assert sum("teamMemberships" in b for b in bodies) == 1


def test_bearer_tokens(fake: FakeLinear) -> None:
    fake.tokens.add("lin_oauth_given")
    with Toolpass([conn(fake, auth="bearer", access_token="env:LINEAR_TOKEN")]) as tp:
        assert tp.check("ana@example.com", "lin", "issue.read", "issue:SEC-1").allowed
    assert fake.seen("POST", "/graphql")[0].headers["authorization"] == "Bearer lin_oauth_given"


def test_client_credentials_are_exchanged_once_and_replaced_when_refused(
    fake: FakeLinear,
) -> None:
    fake.clients["app-1"] = "app-secret-1"
    settings = conn(
        fake, auth="client_credentials", client_id="app-1", client_secret="env:LINEAR_SECRET"
    )
    with Toolpass([settings]) as tp:
        assert tp.check("ana@example.com", "lin", "issue.read", "issue:SEC-1").allowed
        fake.tokens.clear()  # revoked: the next request gets a new token once
        d = tp.check("bo@example.com", "lin", "issue.read", "issue:ENG-1", fresh=True)
        assert d.allowed, d.reason
    assert len(fake.seen("POST", "/oauth/token")) == 2
    [first, *_] = fake.seen("POST", "/oauth/token")
    assert b"scope=read" in first.body


def test_concurrent_checks_exchange_client_credentials_once(fake: FakeLinear) -> None:
    """Checks that start together while no token is held wait for one exchange (before,
    each exchanged its own once the lock was released)."""
    fake.clients["app-1"] = "app-secret-1"
    settings = conn(
        fake, auth="client_credentials", client_id="app-1", client_secret="env:LINEAR_SECRET"
    )
    fake.slow(0.3, times=6, path="/oauth/token")
    start = threading.Barrier(6)
    with Toolpass([settings]) as tp:

        def one(_: int) -> bool:
            start.wait()
            return tp.check(
                "ana@example.com", "lin", "issue.read", "issue:SEC-1", fresh=True
            ).allowed

        with ThreadPoolExecutor(6) as pool:
            assert all(pool.map(one, range(6)))
    assert len(fake.seen("POST", "/oauth/token")) == 1


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"auth": "bearer"}, "access_token"),
        ({"auth": "client_credentials", "client_secret": "env:LINEAR_SECRET"}, "client_id"),
        ({"user_cache_ttl": -1.0}, "user_cache_ttl"),
    ],
)
def test_bad_settings_are_refused(fake: FakeLinear, extra: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        Toolpass([conn(fake, **extra)])
    assert key in str(info.value)


def test_the_catalog_names_the_least_privileged_credential() -> None:
    description = get("linear").description
    assert "Read permission" in description
    assert "no check for another user" in description


def test_a_graphql_error_is_unknown_and_says_what_linear_said(
    tp: Toolpass, fake: FakeLinear
) -> None:
    fake.fail(
        400, body={"errors": [{"message": "Rate limit", "extensions": {"code": "RATELIMITED"}}]}
    )
    d = tp.check("bo@example.com", "lin", "issue.read", "issue:ENG-1")
    assert d.decision == "unknown"
    assert "RATELIMITED" in d.reason


def test_the_probe_refuses_a_guest_credential(fake: FakeLinear) -> None:
    fake.users[fake.viewer]["guest"] = True
    with Toolpass([conn(fake)]) as tp:
        (result,) = tp.probe().values()
    assert not result.ok


# --- the request hook under httpx ----------------------------------------------------------


kit = hooked(conn)


def _rename(fake: FakeLinear, identifier: str) -> Any:
    query = (
        "mutation Rename($id: String!, $t: String) "
        "{ issueUpdate(id: $id, input: {title: $t}) { success issue { title } } }"
    )
    body = {"query": query, "variables": {"id": identifier, "t": "Renamed"}}
    headers = {"Authorization": "lin_api_engine"}
    with httpx.Client(base_url=fake.url) as client:
        return client.post("/graphql", json=body, headers=headers).json()


def test_the_hook_lets_an_allowed_update_through(
    kit: tuple[Toolkit, list[Any]], fake: FakeLinear
) -> None:
    toolkit, events = kit
    rename = toolkit.tool()(lambda: _rename(fake, "ENG-1"))
    with Session("bo@example.com").active():
        answer = rename()
    assert answer["data"]["issueUpdate"]["issue"]["title"] == "Renamed"
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("issue.write", "issue:ENG-1")


def test_the_hook_refuses_an_update_before_it_is_sent(
    kit: tuple[Toolkit, list[Any]], fake: FakeLinear
) -> None:
    toolkit, events = kit
    rename = toolkit.tool()(lambda: _rename(fake, "SEC-1"))
    with Session("bo@example.com").active(), pytest.raises(ActionRefused):
        rename()
    assert not [r for r in fake.seen("POST", "/graphql") if "issueUpdate" in r.body.decode()]
    assert fake.issues["SEC-1"]["title"] == "Embargoed vulnerability"
    [action] = events[-1].actions
    assert action["verdict"] == "not_authorized"


def test_the_hook_refuses_a_mutation_it_cannot_place(
    kit: tuple[Toolkit, list[Any]], fake: FakeLinear
) -> None:
    toolkit, _ = kit

    def send() -> Any:
        body = {"query": 'mutation { somethingNew(id: "x") { success } }'}
        with httpx.Client(base_url=fake.url) as client:
            return client.post("/graphql", json=body, headers={"Authorization": "lin_api_engine"})

    with Session("ana@example.com").active(), pytest.raises(ActionRefused):
        toolkit.tool()(send)()
    assert not [r for r in fake.seen("POST", "/graphql") if b"somethingNew" in r.body]


def _query(fake: FakeLinear, query: str) -> Any:
    with httpx.Client(base_url=fake.url) as client:
        body = {"query": query}
        return client.post("/graphql", json=body, headers={"Authorization": "lin_api_engine"})


@pytest.mark.parametrize(
    "query",
    [
        "{ issues { nodes { identifier title } } }",
        "{ teams { nodes { key issues { nodes { identifier title } } } } }",
        "{ viewer { assignedIssues { nodes { identifier title } } } }",
        '{ issues(filter: {team: {key: {eq: "SEC"}}}) { nodes { identifier title } } }',
    ],
)
def test_the_hook_refuses_a_root_list_that_reaches_a_private_team(
    kit: tuple[Toolkit, list[Any]], fake: FakeLinear, query: str
) -> None:
    toolkit, events = kit
    read = toolkit.tool()(lambda: _query(fake, query))
    with Session("bo@example.com").active(), pytest.raises(ActionRefused):
        read()  # bo is no member of the private team SEC
    assert not [r for r in fake.seen("POST", "/graphql") if query.encode() in r.body]
    [action] = events[-1].actions
    assert action["action"] == "team.read"


def test_the_hook_lets_a_root_list_bounded_to_a_visible_team_through(
    kit: tuple[Toolkit, list[Any]], fake: FakeLinear
) -> None:
    toolkit, events = kit
    query = '{ issues(filter: {team: {key: {eq: "%s"}}}) { nodes { identifier } } }'
    read = toolkit.tool()(lambda team: _query(fake, query % team).json())
    with Session("bo@example.com").active():
        assert "ENG-1" in str(read("ENG"))
    assert (events[-1].actions[0]["action"], events[-1].actions[0]["resource"]) == (
        "team.read",
        "team:ENG",
    )
    with Session("ana@example.com").active():
        assert "SEC-1" in str(read("SEC"))  # ana is a member of SEC


class TestLinearConformance(IntegrationConformance):
    integration = "linear"
    user, action, resource = "ana@example.com", "issue.write", "issue:ENG-1"
    system_user, template = ANA, None
    credential = "lin_api_engine"

    @pytest.fixture
    def api(self, fake: FakeLinear) -> FakeLinear:
        return fake

    def error_body(self, text: str) -> Any:
        return {"errors": [{"message": text, "extensions": {"code": "FORBIDDEN"}}]}

    def connection(self, api: FakeLinear, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    unsupported = {
        "make_read_only": "not read: Linear's archived issues and retired teams (archivedAt) "
        "are not in what the integration asks",
    }

    def disable_account(self, api: FakeLinear) -> None:
        """Ana is suspended (``active: false``)."""
        api.users[ANA]["active"] = False

    def bind_admins(self, api: FakeLinear) -> None:
        """Ana is a workspace admin, and ENG becomes a private team she is not a member of:
        a private team binds admins too (they see only the private teams they belong to)."""
        api.users[ANA]["admin"] = True
        api.teams[ENG].update(private=True, visibility="private")
        del api.members[(ANA, ENG)]

    def revoke(self, api: FakeLinear) -> None:
        """Ana becomes a guest and leaves ENG: a guest sees only the teams they belong to."""
        api.users[ANA]["guest"] = True
        del api.members[(ANA, ENG)]
