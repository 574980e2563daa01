"""The Snowflake route table (generated from snowflakedb/snowflake-rest-api-specs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations._generate.sources import pinned_source
from toolpass.integrations.routes import Request, fields, load
from toolpass.integrations.snowflake import Snowflake, names

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/snowflake/routes.json"
COMMIT = "42671a90c8d81760351a956f68e41ad228b1c93c"
SAMPLES = {"database": "SALES", "schema": "PUBLIC", "name": "ORDERS"}


@pytest.fixture(scope="module")
def snowflake() -> Snowflake:
    (config,) = parse_connections(
        [
            {
                "id": "sf",
                "integration": "snowflake",
                "url": "https://myorg-acme.snowflakecomputing.com",
                "auth": "pat",
                "access_token": literal("token"),
            }
        ]
    )
    return Snowflake(config)


def accepted(action: str, resource: str) -> bool:
    """What ``Snowflake.check`` accepts for ``action``."""
    declared = Snowflake.action(action)
    assert declared is not None, action
    kind = str(declared.terms["kind"])
    if kind == "account":
        return resource == "account"
    got, _, ref = resource.partition(":")
    return got == kind and names(ref, kind) is not None


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/snowflake/generate.py"
    assert data["source"].startswith(f"github snowflakedb/snowflake-rest-api-specs {COMMIT} ")
    assert len(load("toolpass.integrations.snowflake")) == len(data["routes"]) == 408
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_every_action_is_declared_and_every_resource_accepted() -> None:
    for route in load("toolpass.integrations.snowflake").routes:
        resource = route.resource
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", SAMPLES.get(name, "X"))
        assert accepted(route.action, resource), route


def test_writes_never_take_a_read_action() -> None:
    reads = {a.name for a in Snowflake.actions if a.effect == "read"} - {"account.access"}
    for route in load("toolpass.integrations.snowflake").routes:
        if route.method != "GET":
            assert route.action not in reads or route.flags == "u", route
            if route.action == "account.access":
                assert route.path.endswith("/cancel"), route


def test_regenerating_from_the_specs_gives_the_committed_table(tmp_path: Path) -> None:
    pinned_source("snowflake", tmp_path)  # tmp_path/specifications
    rows, count = load_generator("snowflake").build(tmp_path)
    assert count == 408
    assert rows == json.loads(TABLE.read_text())["routes"]


@pytest.mark.parametrize(
    ("method", "path", "body", "action", "resource", "flags"),
    [
        (
            "GET",
            "/api/v2/databases/SALES/schemas/PUBLIC/tables/ORDERS",
            None,
            "table.read",
            "table:SALES.PUBLIC.ORDERS",
            "",
        ),
        (
            "DELETE",
            "/api/v2/databases/SALES/schemas/PUBLIC/tables/%22my%20t%22",
            None,
            "table.manage",
            'table:SALES.PUBLIC."my t"',
            "",
        ),
        (
            "POST",
            "/api/v2/databases/SALES/schemas/PUBLIC/tables",
            {},
            "schema.create_table",
            "schema:SALES.PUBLIC",
            "",
        ),
        (
            "POST",
            "/api/v2/databases/SALES/schemas/PUBLIC/tables:as-select",
            {},
            "account.admin",
            "account",
            "",
        ),
        (
            "POST",
            "/api/v2/databases/SALES/schemas/PUBLIC/procedures/p(int):call",
            {},
            "account.admin",
            "account",
            "",
        ),
        (
            "GET",
            "/api/v2/databases/SALES/schemas/PUBLIC",
            None,
            "schema.use",
            "schema:SALES.PUBLIC",
            "",
        ),
        ("PUT", "/api/v2/databases/SALES", {}, "database.manage", "database:SALES", ""),
        ("POST", "/api/v2/databases", {}, "account.create_database", "account", ""),
        ("POST", "/api/v2/warehouses/WH:resume", None, "warehouse.operate", "warehouse:WH", ""),
        ("PUT", "/api/v2/warehouses/WH", {}, "warehouse.manage", "warehouse:WH", ""),
        ("POST", "/api/v2/roles/ANALYST/grants", {}, "account.admin", "account", ""),
        ("POST", "/api/v2/users/DANA/grants", {}, "account.admin", "account", ""),
        ("POST", "/api/v2/users", {}, "account.create_user", "account", ""),
        ("GET", "/api/v2/users/DANA/grants", None, "account.access", "account", ""),
        ("POST", "/api/v2/cortex/inference:complete", {}, "account.cortex", "account", "u"),
        ("GET", "/api/v2/statements/01b-1", None, "account.access", "account", "u"),
        ("GET", "/api/v2/results/01b-1", None, "account.access", "account", "u"),
        (
            "POST",
            "/api/v2/statements",
            {"statement": "select * from sales.public.orders", "warehouse": "WH"},
            "table.read",
            "table:sales.public.orders",
            "u",
        ),
        (
            "POST",
            "/api/v2/statements",
            {"statement": "TRUNCATE TABLE sales.public.orders"},
            "table.truncate",
            "table:sales.public.orders",
            "u",
        ),
        (
            "POST",
            "/api/v2/statements",
            {"statement": "ALTER USER dana SET DISABLED = TRUE"},
            "account.admin",
            "account",
            "u",
        ),
        (
            "POST",
            "/api/v2/statements",
            {"statement": ["select 1"]},
            "account.admin",
            "account",
            "u",
        ),
    ],
)
def test_hand_checked_requests(
    snowflake: Snowflake,
    method: str,
    path: str,
    body: object,
    action: str,
    resource: str,
    flags: str,
) -> None:
    data = json.dumps(body).encode() if body is not None else b""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    found = snowflake.match_request(Request(method, path, "", headers, data))
    assert found is not None
    assert (found.action, found.resource, found.route.flags) == (action, resource, flags)


def test_a_statement_given_twice_stays_account_admin(snowflake: Snowflake) -> None:
    body = b'{"statement": "select * from a.b.c", "statement": "drop table a.b.c"}'
    found = snowflake.match_request(
        Request("POST", "/api/v2/statements", "", {"Content-Type": "application/json"}, body)
    )
    assert found is not None
    assert found.action == "account.admin"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v2/nothing"),
        ("PATCH", "/api/v2/databases/SALES"),
        ("POST", "/session/v1/login-request"),  # the connector's own protocol
        ("POST", "/queries/v1/query-request"),
    ],
)
def test_requests_matching_no_route(snowflake: Snowflake, method: str, path: str) -> None:
    assert snowflake.match_request(Request(method, path)) is None


@pytest.mark.parametrize(
    "path",
    [
        "/api/v2/databases/SALES/schemas/PUBLIC/tables/..%2F..%2FX",
        "/api/v2/databases/SALES/schemas/..%2FX/tables/T",
        "/api/v2/warehouses/WH%2F..:resume",
        "/api/v2/databases/A.B/schemas/C/tables/D",
    ],
)
def test_hostile_parameters_name_nothing_the_check_takes(snowflake: Snowflake, path: str) -> None:
    found = snowflake.match_request(Request("POST", path, "", {}, b""))
    if found is not None and found.resource is not None:
        assert not accepted(found.action, found.resource)
