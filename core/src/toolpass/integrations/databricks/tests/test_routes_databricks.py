"""The Databricks route table (generated from the PyPI package databricks-sdk)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.databricks import _OBJECT_ID, _UC_NAME, WORKSPACE, Databricks
from toolpass.integrations.routes import Request, fields, load

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/databricks/routes.json"
SAMPLES = {
    "full_name": "main.sales.orders",
    "table_name": "main.sales.orders",
    "catalog": "main",
    "schema": "sales",
    "volume": "raw",
    "query.job_id": "42",
    "body.job_id": "42",
    "body.cluster_id": "c-1",
    "body.catalog_name": "main",
    "body.schema_name": "sales",
}


@pytest.fixture(scope="module")
def databricks() -> Databricks:
    (config,) = parse_connections(
        [
            {
                "id": "dbx",
                "integration": "databricks",
                "url": "https://acme.cloud.databricks.com",
                "access_token": literal("token"),
            }
        ]
    )
    return Databricks(config)


def accepted(action: str, resource: str) -> bool:
    """What ``Databricks.check`` accepts for ``action``."""
    declared = Databricks.action(action)
    assert declared is not None, action
    scope, kind = declared.terms["scope"], declared.terms.get("kind")
    got, _, ref = resource.partition(":")
    if scope in ("workspace", "admin"):
        return resource == WORKSPACE
    if scope == "uc":
        return got == kind and _UC_NAME[str(kind)].fullmatch(ref) is not None
    return got == kind and _OBJECT_ID.fullmatch(ref) is not None


def _sample(route_resource: str, action: str) -> str:
    resource = route_resource
    for name in fields(route_resource):
        value = SAMPLES.get(name, "x-1")
        if name in ("full_name", "name") and "." in action:
            depth = {"catalog": 1, "schema": 2}.get(action.split(".")[0], 3)
            value = ".".join(["main", "sales", "orders"][:depth])
        resource = resource.replace("{" + name + "}", value)
    return resource


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/databricks/generate.py"
    assert data["source"].startswith("PyPI databricks-sdk 0.162.0 ")
    assert len(load("toolpass.integrations.databricks")) == len(data["routes"]) > 1000
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    assert not any(re.match(r"/api/2\.\d/accounts/", r[1]) for r in data["routes"])


def test_every_action_is_declared_and_every_resource_accepted() -> None:
    for route in load("toolpass.integrations.databricks").routes:
        assert Databricks.action(route.action) is not None, route
        assert accepted(route.action, _sample(route.resource, route.action)), route


def test_writes_default_to_the_workspace_admin() -> None:
    for route in load("toolpass.integrations.databricks").routes:
        if route.method not in ("GET", "HEAD") and route.action == "workspace.access":
            cancel = route.path.startswith("/api/2.0/sql/statements/")
            assert route.agent or route.effect == "read" or cancel, route


def test_regenerating_from_the_installed_sdk_gives_the_committed_table() -> None:
    sdk = pytest.importorskip("databricks.sdk.version")
    if sdk.__version__ != "0.162.0":
        pytest.skip(f"databricks-sdk {sdk.__version__} is installed, the table read 0.162.0")
    site = Path(sdk.__file__).resolve().parents[2]
    rows, _, version = load_generator("databricks").build(site)
    assert version == "0.162.0"
    assert rows == json.loads(TABLE.read_text())["routes"]


@pytest.mark.parametrize(
    ("method", "path", "query", "body", "action", "resource", "flags"),
    [
        ("GET", "/api/2.2/jobs/get", "job_id=42", None, "job.view", "jobs:42", ""),
        ("POST", "/api/2.2/jobs/run-now", "", {"job_id": 42}, "job.run", "jobs:42", "s"),
        ("POST", "/api/2.2/jobs/delete", "", {"job_id": 42}, "job.manage", "jobs:42", ""),
        ("POST", "/api/2.2/jobs/runs/submit", "", {}, "workspace.admin", "workspace", "s"),
        (
            "GET",
            "/api/2.2/jobs/runs/get-output",
            "run_id=1",
            None,
            "workspace.access",
            "workspace",
            "u",
        ),
        (
            "POST",
            "/api/2.1/clusters/start",
            "",
            {"cluster_id": "c-1"},
            "cluster.restart",
            "clusters:c-1",
            "",
        ),
        (
            "POST",
            "/api/2.1/clusters/permanent-delete",
            "",
            {"cluster_id": "c-1"},
            "cluster.manage",
            "clusters:c-1",
            "",
        ),
        ("POST", "/api/2.1/clusters/create", "", {}, "workspace.admin", "workspace", ""),
        (
            "POST",
            "/api/2.0/sql/warehouses/w-1/start",
            "",
            None,
            "warehouse.use",
            "warehouses:w-1",
            "",
        ),
        ("PATCH", "/api/2.0/permissions/jobs/42", "", {}, "job.manage", "jobs:42", ""),
        ("PATCH", "/api/2.0/permissions/experiments/9", "", {}, "workspace.admin", "workspace", ""),
        (
            "GET",
            "/api/2.1/unity-catalog/tables/main.sales.orders",
            "",
            None,
            "table.read",
            "table:main.sales.orders",
            "",
        ),
        (
            "DELETE",
            "/api/2.1/unity-catalog/tables/main.sales.orders",
            "",
            None,
            "table.manage",
            "table:main.sales.orders",
            "",
        ),
        (
            "POST",
            "/api/2.1/unity-catalog/tables",
            "",
            {"catalog_name": "main", "schema_name": "sales"},
            "schema.create_table",
            "schema:main.sales",
            "",
        ),
        (
            "PATCH",
            "/api/2.1/unity-catalog/permissions/table/main.sales.orders",
            "",
            {},
            "table.manage",
            "table:main.sales.orders",
            "",
        ),
        (
            "GET",
            "/api/2.0/fs/files/Volumes/main/sales/raw/a/b.csv",
            "",
            None,
            "volume.read",
            "volume:main.sales.raw",
            "u",
        ),
        (
            "PUT",
            "/api/2.0/fs/files/Volumes/main/sales/raw/a/b.csv",
            "",
            None,
            "volume.write",
            "volume:main.sales.raw",
            "",
        ),
        (
            "POST",
            "/serving-endpoints/chat/invocations",
            "",
            {},
            "serving.query",
            "serving-endpoints:chat",
            "u",
        ),
        ("GET", "/api/2.0/secrets/get", "scope=s&key=k", None, "workspace.admin", "workspace", ""),
        ("GET", "/api/2.0/workspace/export", "path=/x", None, "workspace.access", "workspace", "u"),
        (
            "POST",
            "/api/2.0/sql/statements",
            "",
            {"statement": "SELECT * FROM main.sales.orders", "warehouse_id": "w-1"},
            "table.read",
            "table:main.sales.orders",
            "u",
        ),
        (
            "POST",
            "/api/2.0/sql/statements",
            "",
            {"statement": "DROP TABLE main.sales.orders", "warehouse_id": "w-1"},
            "workspace.admin",
            "workspace",
            "u",
        ),
        ("GET", "/api/2.0/preview/scim/v2/Me", "", None, "workspace.access", "workspace", "a"),
        ("GET", "/.well-known/databricks-config", "", None, "workspace.access", "workspace", "a"),
    ],
)
def test_hand_checked_requests(
    databricks: Databricks,
    method: str,
    path: str,
    query: str,
    body: object,
    action: str,
    resource: str,
    flags: str,
) -> None:
    data = json.dumps(body).encode() if body is not None else b""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    found = databricks.match_request(Request(method, path, query, headers, data))
    assert found is not None
    assert (found.action, found.resource, found.route.flags) == (action, resource, flags)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/2.2/nothing"),
        ("PUT", "/api/2.0/fs/files/tmp/x"),  # only Volumes paths
        ("DELETE", "/api/2.0/fs/files/Volumes/main"),
        ("POST", "/api/2.0/accounts/abc/scim/v2/Users"),
    ],
)
def test_requests_matching_no_route(databricks: Databricks, method: str, path: str) -> None:
    assert databricks.match_request(Request(method, path)) is None


@pytest.mark.parametrize(
    "path",
    [
        "/api/2.1/unity-catalog/tables/main.sales..",
        "/api/2.1/unity-catalog/tables/..%2F..%2Fcatalogs%2Fmain",
        "/api/2.0/fs/files/Volumes/main/%2E%2E/raw/x",
        "/api/2.0/sql/warehouses/..%2Fw-1/start",
    ],
)
def test_hostile_parameters_name_nothing_the_check_takes(databricks: Databricks, path: str) -> None:
    found = databricks.match_request(Request("POST", path))
    if found is not None and found.resource is not None:
        assert not accepted(found.action, found.resource) or ".." not in found.resource
