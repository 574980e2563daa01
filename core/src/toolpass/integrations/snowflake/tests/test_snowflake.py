"""The Snowflake integration, through ``Toolpass``, against a fake account on 127.0.0.1; and
the request hook under a real HTTP client (requests) speaking the SQL API."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from fakes.snowflake import FakeSnowflake, grant, populate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, environment, hooked, served

from toolpass import Session, Toolkit, Toolpass
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.integrations.snowflake import Snowflake, canonical, names
from toolpass.integrations.snowflake._sql import plain
from toolpass.intercept import ActionRefused

ORDERS = "table:SALES.PUBLIC.ORDERS"
_FIXTURES = [HealthCheck.function_scoped_fixture]


fake = served(FakeSnowflake, populate)
secrets = environment(SF_TOKEN="sf-engine-token")
conn = connection(id="sf", integration="snowflake", auth="pat", access_token="env:SF_TOKEN")
tp = engine(conn)


def check(tp: Toolpass, user: str, action: str, resource: str) -> Any:
    return tp.check(f"{user}@example.com", "sf", action, resource)


# --- the grant graph ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("dana", "table.read", ORDERS, "allow"),
        ("dana", "table.read", 'table:sales.public."ORDERS"', "allow"),  # folded as Snowflake
        ("dana", "table.read", 'table:SALES.PUBLIC."orders"', "deny"),  # quoted is exact
        ("dana", "table.insert", ORDERS, "deny"),
        ("dana", "schema.use", "schema:SALES.PUBLIC", "allow"),
        ("dana", "warehouse.use", "warehouse:wh", "allow"),
        ("dana", "warehouse.operate", "warehouse:WH", "deny"),
        ("frank", "table.insert", ORDERS, "allow"),  # through the database role SALES.WRITER
        ("frank", "table.read", ORDERS, "allow"),  # ANALYST, a secondary role
        ("erin", "table.manage", ORDERS, "allow"),  # OWNERSHIP
        ("erin", "table.delete", ORDERS, "allow"),  # OWNERSHIP holds every privilege
        ("erin", "table.read", ORDERS, "allow"),  # ANALYST below SALES_OWNER
        ("dana", "table.manage", ORDERS, "deny"),
        ("erin", "account.create_database", "account", "allow"),
        ("dana", "account.create_database", "account", "deny"),
        ("dana", "account.cortex", "account", "allow"),  # PUBLIC holds SNOWFLAKE.CORTEX_USER
        ("dana", "account.admin", "account", "deny"),
        ("dana", "account.access", "account", "allow"),
        ("gail", "table.read", ORDERS, "deny"),  # disabled
    ],
)
def test_the_grant_graph_decides(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = check(tp, user, action, resource)
    assert d.decision == decision, d.reason


_PAST, _AHEAD = "2020-01-01T00:00:00+00:00", "2999-01-01T00:00:00Z"


@pytest.mark.parametrize(
    "state",
    [
        {"mins_to_unlock": 14},  # locked after failed logins
        {"mins_to_unlock": "3"},  # as DESCRIBE USER writes it
        {"locked_until": _AHEAD},
        {"days_to_expiry": -7.1},  # expired
        {"days_to_expiry": 0},
        {"expires_at": _PAST},
        {"snowflake_lock": True},
        {"disabled": "true"},
    ],
)
def test_a_locked_or_expired_user_is_refused_whatever_their_roles(
    tp: Toolpass, fake: FakeSnowflake, state: dict[str, Any]
) -> None:
    fake.users["ERIN"].update(state)  # the owner
    for action in ("table.read", "table.manage", "account.access"):
        d = check(tp, "erin", action, "account" if action == "account.access" else ORDERS)
        assert d.decision == "deny", d.reason


@given(
    unlock=st.one_of(st.none(), st.just(""), st.integers(-5, 0)),
    days=st.one_of(st.none(), st.just(""), st.floats(0.01, 1e6)),
    until=st.sampled_from([None, "", _PAST]),
    expires=st.sampled_from([None, "", _AHEAD]),
)
@settings(max_examples=25, deadline=None, suppress_health_check=_FIXTURES)
def test_a_user_neither_locked_nor_expired_is_decided_by_grants(
    fake: FakeSnowflake, unlock: Any, days: Any, until: Any, expires: Any
) -> None:
    fake.users["DANA"].update(
        mins_to_unlock=unlock, days_to_expiry=days, locked_until=until, expires_at=expires
    )
    with Toolpass([conn(fake)]) as tp:
        assert check(tp, "dana", "table.read", ORDERS).allowed


@pytest.mark.parametrize(
    "state",
    [
        {"mins_to_unlock": "soon"},
        {"days_to_expiry": True},
        {"expires_at": "tomorrow"},
        {"disabled": "maybe"},
    ],
)
def test_an_account_state_of_another_shape_is_unknown(
    tp: Toolpass, fake: FakeSnowflake, state: dict[str, Any]
) -> None:
    fake.users["DANA"].update(state)
    assert check(tp, "dana", "table.read", ORDERS).decision == "unknown"


def test_a_table_needs_usage_on_its_database_and_schema(tp: Toolpass, fake: FakeSnowflake) -> None:
    fake.role_grants["ANALYST"] = [
        r for r in fake.role_grants["ANALYST"] if r["securable_type"] != "SCHEMA"
    ]
    d = check(tp, "dana", "table.read", ORDERS)
    assert d.decision == "deny"
    assert "USAGE on schema SALES.PUBLIC" in d.reason


def test_secondary_roles_follow_default_secondary_roles(fake: FakeSnowflake) -> None:
    fake.users["FRANK"]["default_secondary_roles"] = "NONE"
    with Toolpass([conn(fake)]) as tp:
        assert check(tp, "frank", "table.insert", ORDERS).allowed  # primary LOADER
        d = check(tp, "frank", "table.read", ORDERS)
    assert d.decision == "deny"
    fake.users["FRANK"]["default_secondary_roles"] = '["ALL"]'
    with Toolpass([conn(fake)]) as tp:
        assert check(tp, "frank", "table.read", ORDERS).allowed
    with Toolpass([conn(fake, roles="any")]) as tp:
        fake.users["FRANK"]["default_secondary_roles"] = "NONE"
        assert check(tp, "frank", "table.read", ORDERS).allowed


def test_unsaid_secondary_roles_are_unknown_only_when_they_matter(fake: FakeSnowflake) -> None:
    del fake.users["FRANK"]["default_secondary_roles"]
    with Toolpass([conn(fake)]) as tp:
        assert check(tp, "frank", "table.insert", ORDERS).allowed
        d = check(tp, "frank", "table.read", ORDERS)
    assert d.decision == "unknown"
    assert "DEFAULT_SECONDARY_ROLES" in d.reason


def test_create_counts_from_the_primary_role_only(fake: FakeSnowflake) -> None:
    fake.add_user("HAL", "ANALYST", "SALES_OWNER", email="hal@example.com", default_role="ANALYST")
    with Toolpass([conn(fake)]) as tp:
        assert check(tp, "hal", "table.manage", ORDERS).allowed  # a secondary role's OWNERSHIP
        d = check(tp, "hal", "account.create_database", "account")
    assert d.decision == "deny"
    assert "by the primary role" in d.reason
    with Toolpass([conn(fake, roles="any")]) as tp:
        assert check(tp, "hal", "account.create_database", "account").allowed


def test_a_default_role_not_granted_is_public(fake: FakeSnowflake) -> None:
    fake.users["DANA"].update(default_role="SALES_OWNER", default_secondary_roles="NONE")
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, "dana", "table.read", ORDERS)
    assert d.decision == "deny"
    assert "PUBLIC" in d.reason


def test_a_default_role_held_through_another_is_the_primary(fake: FakeSnowflake) -> None:
    fake.users["ERIN"].update(default_role="ANALYST", default_secondary_roles="NONE")
    with Toolpass([conn(fake)]) as tp:
        assert check(tp, "erin", "table.read", ORDERS).allowed  # ANALYST, below SALES_OWNER
        d = check(tp, "erin", "table.manage", ORDERS)
    assert d.decision == "deny"


def test_role_grants_with_or_without_usage_and_ownership_of_a_role(
    tp: Toolpass, fake: FakeSnowflake
) -> None:
    fake.role("AUDITOR", grant("ROLE", "ANALYST", privileges=()))
    fake.role("ROLE_ADMIN", grant("ROLE", "SALES_OWNER", privileges=("OWNERSHIP",)))
    fake.add_user("IVY", "AUDITOR", "ROLE_ADMIN", email="ivy@example.com")
    assert check(tp, "ivy", "table.read", ORDERS).allowed  # a role named with no privilege
    d = check(tp, "ivy", "table.manage", ORDERS)  # owning a role is not holding it
    assert d.decision == "deny"


def test_a_database_named_by_its_database_field(tp: Toolpass, fake: FakeSnowflake) -> None:
    row = grant("DATABASE", "OTHER")
    row["securable"] = {"database": "OTHER"}
    fake.role("ANALYST", row)
    assert check(tp, "dana", "database.use", "database:other").allowed


def test_imported_privileges_hold_the_reads_of_a_shared_database(
    tp: Toolpass, fake: FakeSnowflake
) -> None:
    fake.role("ANALYST", grant("DATABASE", "SHARED", privileges=("IMPORTED PRIVILEGES",)))
    assert check(tp, "dana", "table.read", "table:SHARED.S.T").allowed
    assert check(tp, "dana", "table.insert", "table:SHARED.S.T").decision == "deny"


def test_a_role_cycle_and_a_dropped_role_end(tp: Toolpass, fake: FakeSnowflake) -> None:
    fake.role("ANALYST", grant("ROLE", "SALES_OWNER"), grant("ROLE", "GONE"))
    assert check(tp, "dana", "table.manage", ORDERS).allowed


def test_grants_are_read_once_and_kept(tp: Toolpass, fake: FakeSnowflake) -> None:
    for _ in range(2):
        check(tp, "dana", "table.read", ORDERS)
        check(tp, "dana", "table.insert", ORDERS)
    assert len(fake.seen("GET", r"/api/v2/roles/ANALYST/grants")) == 1
    (sent, *_) = fake.seen("GET", r"/api/v2/users/DANA")
    assert sent.headers["authorization"] == "Bearer sf-engine-token"
    assert sent.headers["x-snowflake-authorization-token-type"] == "PROGRAMMATIC_ACCESS_TOKEN"


def test_paged_and_asynchronous_answers_are_read_whole(fake: FakeSnowflake) -> None:
    fake.page_cap = 1
    fake.asynchronous = True
    with Toolpass([conn(fake)]) as tp:
        assert check(tp, "dana", "table.read", ORDERS).allowed
    pages = [r.arg("page") for r in fake.seen("GET", r"/api/v2/results/.*")]
    assert "1" in pages
    assert "3" in pages  # ANALYST's four grants, one a page


def test_a_next_link_elsewhere_is_unknown(fake: FakeSnowflake) -> None:
    fake.fail(200, body=[], headers={"Link": '<https://evil.example/x>; rel="next"'})
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, "dana", "table.read", ORDERS)
    assert d.decision == "unknown"


def test_users_are_found_by_exact_email_or_login_name(fake: FakeSnowflake) -> None:
    fake.add_user("DANIELLE", email="dana@example.com.evil")
    with Toolpass([conn(fake)]) as tp:
        assert tp.check("Dana@Example.com", "sf", "table.read", ORDERS).allowed
        d = tp.check("nobody@example.com", "sf", "table.read", ORDERS)
    assert d.decision == "unknown"
    fake.users["ERIN"]["login_name"] = "erin.login@example.com"
    with Toolpass([conn(fake, identity={"mode": "login_name"})]) as tp:
        assert tp.check("erin.login@example.com", "sf", "table.manage", ORDERS).allowed


def test_every_page_of_users_is_read(fake: FakeSnowflake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolpass.integrations.snowflake._USERS_PAGE", 2)
    with Toolpass([conn(fake)]) as tp:
        assert tp.check("gail@example.com", "sf", "table.read", ORDERS).decision == "deny"
    assert len(fake.seen("GET", r"/api/v2/users")) >= 3


def test_a_lower_case_user_name_is_folded_once(fake: FakeSnowflake) -> None:
    fake.add_user('"kim"', "ANALYST", email="kim@example.com", default_role="ANALYST")
    fake.add_user("KIM", email="other@example.com")
    with Toolpass([conn(fake)]) as tp:
        assert tp.check("kim@example.com", "sf", "table.read", ORDERS).allowed
    assert fake.seen("GET", r"/api/v2/users/%22kim%22")


def test_a_quoted_user_name_is_asked_quoted(tp: Toolpass, fake: FakeSnowflake) -> None:
    check(tp, "gail", "table.read", ORDERS)
    assert fake.seen("GET", r"/api/v2/users/%22gail%40example\.com%22")


def test_an_unknown_user_is_unknown_or_deny_when_set(fake: FakeSnowflake) -> None:
    identity = {"mode": "users", "users": {"x@example.com": "NOSUCH"}}
    with Toolpass([conn(fake, identity=identity)]) as tp:
        d = tp.check("x@example.com", "sf", "table.read", ORDERS)
    assert d.decision == "unknown"
    assert "404" in d.reason
    with Toolpass([conn(fake, identity=identity, not_found="deny")]) as tp:
        assert tp.check("x@example.com", "sf", "table.read", ORDERS).decision == "deny"


def test_an_engine_without_manage_grants_is_unknown(fake: FakeSnowflake) -> None:
    fake.engine_manages_grants = False
    identity = {"mode": "users", "users": {"dana@example.com": "DANA"}}
    with Toolpass([conn(fake, identity=identity)]) as tp:
        d = check(tp, "dana", "table.read", ORDERS)
        (probe,) = tp.probe().values()
    assert d.decision == "unknown"
    assert "HTTP 403" in d.reason
    assert "Insufficient privileges" in d.reason
    assert not probe.ok
    assert "MANAGE GRANTS" in probe.detail


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("table.read", "table:SALES.PUBLIC"),
        ("table.read", "schema:SALES.PUBLIC"),
        ("table.read", "table:SALES.PUBLIC.ORDERS.X"),
        ("table.read", "table:SALES..ORDERS"),
        ("table.read", "table:SALES.PUBLIC.ORD ERS"),
        ("table.read", 'table:SALES.PUBLIC."ORDERS'),
        ("schema.use", "schema:SALES/../X.Y"),
        ("warehouse.use", "warehouse:WH.X"),
        ("account.access", "warehouse:WH"),
        ("table.read", "account"),
        ("no.such", "account"),
    ],
)
def test_a_resource_of_the_wrong_shape_is_unknown_and_asks_nothing(
    tp: Toolpass, fake: FakeSnowflake, action: str, resource: str
) -> None:
    d = check(tp, "dana", action, resource)
    assert d.decision == "unknown"
    assert fake.requests == []


def test_identifiers_fold_as_snowflake_folds_them() -> None:
    assert canonical("orders") == "ORDERS"
    assert canonical('"orders"') == "orders"
    assert canonical('"a""b"') == 'a"b'
    assert names('db."My.Schema".t', "table") == ("DB", "My.Schema", "T")
    assert names("db.s", "table") is None


# --- authentication and settings -----------------------------------------------------------
def _key() -> tuple[Any, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return key, pem


def test_a_key_pair_jwt_signs_in(fake: FakeSnowflake, monkeypatch: pytest.MonkeyPatch) -> None:
    key, pem = _key()
    monkeypatch.setenv("SF_KEY", pem)
    fake.key_pair("MYORG-ACME", "TOOLPASS_ENGINE", key.public_key())
    settings = conn(
        fake,
        auth="keypair",
        account="myorg-acme",
        user="toolpass_engine",
        private_key="env:SF_KEY",
    )
    del settings["access_token"]
    with Toolpass([settings]) as tp:
        assert check(tp, "dana", "table.read", ORDERS).allowed
        assert check(tp, "dana", "warehouse.use", "warehouse:WH").allowed
    sent = fake.seen("GET", r"/api/v2/users/DANA")[0]
    assert sent.headers["x-snowflake-authorization-token-type"] == "KEYPAIR_JWT"
    token = sent.headers["authorization"][7:]
    body = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    assert claims["sub"] == "MYORG-ACME.TOOLPASS_ENGINE"
    assert claims["iss"].startswith("MYORG-ACME.TOOLPASS_ENGINE.SHA256:")
    assert claims["exp"] - claims["iat"] == 3600
    tokens = {r.headers["authorization"] for r in fake.requests}
    assert len(tokens) == 1  # one JWT, kept


def test_a_key_the_account_does_not_know_is_unknown_without_the_key(
    fake: FakeSnowflake, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, pem = _key()
    monkeypatch.setenv("SF_KEY", pem)
    settings = conn(fake, auth="keypair", account="acme", user="x", private_key="env:SF_KEY")
    with Toolpass([settings]) as tp:
        d = check(tp, "dana", "table.read", ORDERS)
    assert d.decision == "unknown"
    assert "HTTP 401" in d.reason
    assert "PRIVATE KEY" not in d.reason


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"auth": "keypair", "user": "x", "private_key": "env:SF_TOKEN"}, "account"),
        ({"access_token": None}, "access_token"),
        ({"grant_cache_ttl": -1.0}, "grant_cache_ttl"),
    ],
)
def test_bad_settings_are_refused(fake: FakeSnowflake, extra: dict[str, Any], key: str) -> None:
    settings = conn(fake, **extra)
    if settings.get("access_token") is None:
        settings.pop("access_token")
    with pytest.raises(ConfigError) as info:
        Toolpass([settings])
    assert key in str(info.value)


def test_oauth_sends_its_token_type(fake: FakeSnowflake) -> None:
    with Toolpass([conn(fake, auth="oauth")]) as tp:
        assert check(tp, "dana", "table.read", ORDERS).allowed
    assert fake.requests[0].headers["x-snowflake-authorization-token-type"] == "OAUTH"


def test_the_catalog_names_the_least_privileged_credential() -> None:
    cls = get("snowflake")
    assert cls is Snowflake
    assert "MANAGE GRANTS" in cls.description
    assert "TYPE = SERVICE" in cls.description
    assert cls.identity_modes == ("email", "login_name")


# --- SQL statements ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT * FROM sales.public.orders", ("table.read", "sales.public.orders")),
        (
            'select id, count(*) from SALES.PUBLIC."o" o where x > 1 limit 5;',
            ("table.read", 'SALES.PUBLIC."o"'),
        ),
        ("DESC TABLE sales.public.orders", ("table.read", "sales.public.orders")),
        ("SHOW TABLES IN SCHEMA sales.public", ("schema.use", "sales.public")),
        ("SHOW SCHEMAS IN DATABASE sales", ("database.use", "sales")),
        (
            "INSERT INTO sales.public.orders (a, b) VALUES (?, ?)",
            ("table.insert", "sales.public.orders"),
        ),
        (
            "UPDATE sales.public.orders SET a = 1 WHERE b = 2",
            ("table.update", "sales.public.orders"),
        ),
        ("DELETE FROM sales.public.orders WHERE a = 1", ("table.delete", "sales.public.orders")),
        ("TRUNCATE TABLE sales.public.orders", ("table.truncate", "sales.public.orders")),
        ("SELECT * FROM public.orders", None),
        ("SELECT * FROM sales.public.orders JOIN sales.hr.pay", None),
        ("SELECT * FROM sales.public.orders, sales.hr.pay", None),
        ("SELECT * FROM sales.public.orders WHERE id IN (SELECT id FROM sales.hr.pay)", None),
        ("SELECT * FROM sales.public.orders UNION SELECT * FROM sales.hr.pay", None),
        ("SELECT * FROM sales.public.orders; DROP TABLE sales.public.orders", None),
        ("SELECT system$whitelist() FROM sales.public.orders", None),
        ("SELECT snowflake.cortex.complete('m', x) FROM sales.public.orders", None),
        ("SELECT * FROM sales.public.orders // comment", None),
        ("SELECT * FROM sales.public.orders /* c */", None),
        ("INSERT INTO sales.public.orders SELECT * FROM sales.hr.pay", None),
        ("UPDATE sales.public.orders SET a = b.x FROM sales.hr.pay b", None),
        ("DELETE FROM sales.public.orders USING sales.hr.pay", None),
        ("WITH x AS (SELECT 1) SELECT * FROM sales.public.orders", None),
        ("SELECT * FROM TABLE(sales.public.f())", None),
        ("GRANT ROLE accountadmin TO USER dana", None),
        ("CALL sales.public.p()", None),
        ("SELECT \"SYSTEM$SEND_EMAIL\"('i', 'ops', 's', x) FROM sales.public.orders", None),
        ('SELECT sales.public."fn"(x) FROM sales.public.orders', None),
        ('SELECT "UPPER"(x) FROM sales.public.orders', None),
        ("SELECT * FROM sales.public.orders WHERE a = 'x;'", ("table.read", "sales.public.orders")),
        ("SELECT * FROM sales.public.orders WHERE a = 1;\n DROP TABLE t", None),
        ("SELECT * FROM sales.public.orders WHERE a = $$x$$", None),
        ("SELECT sales.public.ids.nextval FROM sales.public.orders", None),  # a write
        ("SELECT * FROM sales.public.orders WHERE id = sales.public.ids.NEXTVAL", None),
        (None, None),
    ],
)
def test_a_statement_is_narrowed_only_when_plain(sql: str | None, expected: Any) -> None:
    got = plain(sql)
    assert (None if got is None else (got[0], got[3])) == expected


# --- the request hook under requests -------------------------------------------------------
kit = hooked(conn)


def _run(fake: FakeSnowflake, sql: str) -> Any:
    import requests

    fake.tokens.add("tool-token")
    answer = requests.post(
        f"{fake.url}/api/v2/statements",
        json={"statement": sql, "warehouse": "WH", "timeout": 60},
        headers={
            "Authorization": "Bearer tool-token",
            "X-Snowflake-Authorization-Token-Type": "PROGRAMMATIC_ACCESS_TOKEN",
        },
        timeout=10,
    )
    answer.raise_for_status()
    return answer.json()["data"]


def test_the_hook_lets_a_plain_select_through_as_a_table_read(
    kit: tuple[Toolkit, list[Any]], fake: FakeSnowflake
) -> None:
    toolkit, events = kit

    @toolkit.tool()
    def query(sql: str) -> str:
        return str(_run(fake, sql))

    with Session("dana@example.com").active():
        assert "42" in query("SELECT count(*) FROM sales.public.orders")
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("table.read", "table:sales.public.orders")
    assert action["verdict"] == "allowed"
    assert [s["statement"] for s in fake.statements] == ["SELECT count(*) FROM sales.public.orders"]


def test_the_hook_refuses_before_sending(
    kit: tuple[Toolkit, list[Any]], fake: FakeSnowflake
) -> None:
    toolkit, events = kit

    @toolkit.tool()
    def query(sql: str) -> str:
        return str(_run(fake, sql))

    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        query("DELETE FROM sales.public.orders")
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("table.delete", "table:sales.public.orders")
    assert action["verdict"] == "not_authorized"
    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        query("DROP TABLE sales.public.orders")  # any other SQL is account.admin
    assert events[-1].actions[-1]["action"] == "account.admin"
    assert fake.statements == []
    assert fake.seen("GET", r"/api/v2/roles/ANALYST/grants")  # the engine asked


def test_the_hook_refuses_a_statement_of_a_locked_user(
    kit: tuple[Toolkit, list[Any]], fake: FakeSnowflake
) -> None:
    toolkit, events = kit
    fake.users["DANA"]["mins_to_unlock"] = 12

    @toolkit.tool()
    def query(sql: str) -> str:
        return str(_run(fake, sql))

    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        query("SELECT count(*) FROM sales.public.orders")
    assert events[-1].actions[-1]["verdict"] == "not_authorized"
    assert fake.statements == []


def test_the_hook_refuses_a_quoted_function_in_a_select(
    kit: tuple[Toolkit, list[Any]], fake: FakeSnowflake
) -> None:
    toolkit, events = kit

    @toolkit.tool()
    def query(sql: str) -> str:
        return str(_run(fake, sql))

    sql = 'SELECT "POST_TO_WEBHOOK"(id, amount) FROM sales.public.orders'
    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        query(sql)  # dana may read the table; an external function may send it out
    assert events[-1].actions[-1]["action"] == "account.admin"
    assert fake.statements == []


def test_the_hook_checks_rest_resource_calls_under_httpx(
    kit: tuple[Toolkit, list[Any]], fake: FakeSnowflake
) -> None:
    import httpx

    toolkit, events = kit
    fake.tokens.add("tool-token")
    headers = {
        "Authorization": "Bearer tool-token",
        "X-Snowflake-Authorization-Token-Type": "PROGRAMMATIC_ACCESS_TOKEN",
    }

    @toolkit.tool()
    def drop_table() -> int:
        url = f"{fake.url}/api/v2/databases/SALES/schemas/PUBLIC/tables/ORDERS"
        return httpx.delete(url, headers=headers, timeout=10).status_code

    @toolkit.tool()
    def users() -> int:
        return httpx.get(f"{fake.url}/api/v2/users", headers=headers, timeout=10).status_code

    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        drop_table()
    assert fake.seen("DELETE") == []
    refused = events[-1].actions[-1]
    assert (refused["action"], refused["resource"]) == ("table.manage", ORDERS)
    with Session("erin@example.com").active():
        assert drop_table() == 404  # the owner's request is sent (the fake has no such route)
        assert users() == 200
    assert len(fake.seen("DELETE")) == 1


class TestSnowflakeConformance(IntegrationConformance):
    integration = "snowflake"
    user, action, resource = "dana@example.com", "table.read", ORDERS
    system_user, template = "DANA", "{local}"  # dana folds to DANA
    credential = "sf-engine-token"

    @pytest.fixture
    def api(self, fake: FakeSnowflake) -> FakeSnowflake:
        return fake

    def connection(self, api: FakeSnowflake, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    unsupported = {
        "make_read_only": "a Snowflake table has no read-only state of its own: a shared "
        "database takes only IMPORTED PRIVILEGES, which hold reads alone (evaluated)",
    }

    def disable_account(self, api: FakeSnowflake) -> None:
        api.users["DANA"]["mins_to_unlock"] = 15  # locked after failed logins

    def bind_admins(self, api: FakeSnowflake) -> None:
        api.user_grants["DANA"].append(grant("ROLE", "SALES_OWNER", privileges=()))
        api.users["DANA"]["default_role"] = "SALES_OWNER"  # the owner of the table
        api.users["DANA"]["days_to_expiry"] = -1  # expired: no role helps

    def revoke(self, api: FakeSnowflake) -> None:
        api.role_grants["ANALYST"] = [
            r for r in api.role_grants["ANALYST"] if r["securable_type"] != "TABLE"
        ]
