"""The Databricks integration, through ``Toolpass``, against a fake workspace on 127.0.0.1;
and the request hook under databricks-sdk's WorkspaceClient."""

from __future__ import annotations

from typing import Any

import pytest
from fakes.databricks import FakeDatabricks, populate
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, environment, hooked, served

from toolpass import Session, Toolkit, Toolpass
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.integrations.databricks import Databricks, plain_select
from toolpass.intercept import ActionRefused

EFFECTIVE = r"/api/2\.1/unity-catalog/effective-permissions/.*"
JOB_ACL = r"/api/2\.0/permissions/jobs/42"


fake = served(FakeDatabricks, populate)
secrets = environment(DBX_TOKEN="dbx-engine-token", DBX_SECRET="dbx-client-secret")
conn = connection(id="dbx", integration="databricks", access_token="env:DBX_TOKEN")
tp = engine(conn)
kit = hooked(conn)


def check(tp: Toolpass, user: str, action: str, resource: str) -> Any:
    return tp.check(user, "dbx", action, resource)


# --- workspace object ACLs ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("dana", "job.view", "jobs:42", "allow"),
        ("dana", "job.run", "jobs:42", "allow"),  # through the analysts group
        ("dana", "job.manage", "jobs:42", "deny"),
        ("erin", "job.manage", "jobs:42", "allow"),  # admins, inherited
        ("frank", "job.view", "jobs:42", "allow"),
        ("frank", "job.run", "jobs:42", "deny"),
        ("frank", "cluster.attach", "clusters:c-1", "allow"),  # every user, group users
        ("frank", "cluster.restart", "clusters:c-1", "deny"),
        ("erin", "cluster.manage", "clusters:c-1", "allow"),
        ("dana", "warehouse.use", "warehouses:w-1", "allow"),
        ("frank", "warehouse.use", "warehouses:w-1", "deny"),
        ("dana", "serving.query", "serving-endpoints:chat", "allow"),
        ("frank", "serving.query", "serving-endpoints:chat", "deny"),
    ],
)
def test_the_objects_acl_decides(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = check(tp, f"{user}@example.com", action, resource)
    assert d.decision == decision, d.reason


def test_a_deny_says_what_the_user_holds(tp: Toolpass) -> None:
    d = check(tp, "frank@example.com", "job.run", "jobs:42")
    assert "holds only CAN_VIEW" in d.reason
    d = check(tp, "frank@example.com", "warehouse.use", "warehouses:w-1")
    assert "holds no permission" in d.reason


def test_the_acl_is_read_once_for_every_user(tp: Toolpass, fake: FakeDatabricks) -> None:
    for user in ("dana", "erin", "frank"):
        check(tp, f"{user}@example.com", "job.view", "jobs:42")
    (sent,) = fake.seen("GET", JOB_ACL)
    assert sent.headers["authorization"] == "Bearer dbx-engine-token"


def test_the_user_is_found_by_exact_username_through_scim(
    tp: Toolpass, fake: FakeDatabricks
) -> None:
    assert check(tp, "Dana@Example.com", "job.view", "jobs:42").allowed
    (sent, *_) = fake.seen("GET", r"/api/2\.0/preview/scim/v2/Users")
    assert sent.arg("filter") == 'userName eq "dana@example.com"'


def test_an_unknown_or_inactive_user_is_denied_or_unknown(tp: Toolpass) -> None:
    d = check(tp, "nobody@example.com", "job.view", "jobs:42")
    assert d.decision == "unknown"
    assert "no user" in d.reason
    d = check(tp, "gail@example.com", "job.view", "jobs:42")
    assert d.decision == "deny"
    assert "not an active" in d.reason


def test_an_unknown_object_is_unknown_or_deny_when_set(fake: FakeDatabricks) -> None:
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, "dana@example.com", "job.view", "jobs:7")
    assert d.decision == "unknown"
    assert "404" in d.reason
    with Toolpass([conn(fake, not_found="deny")]) as tp:
        assert check(tp, "dana@example.com", "job.view", "jobs:7").decision == "deny"


def test_an_engine_that_is_no_admin_is_unknown_with_databricks_words(
    fake: FakeDatabricks,
) -> None:
    fake.users["engine@example.com"].groups = ["users"]
    with Toolpass([conn(fake)]) as tp:
        d = check(tp, "dana@example.com", "job.view", "jobs:42")
    assert d.decision == "unknown"
    assert "HTTP 403" in d.reason
    assert "PERMISSION_DENIED" in d.reason


def test_workspace_access_and_admin(tp: Toolpass) -> None:
    assert check(tp, "frank@example.com", "workspace.access", "workspace").allowed
    assert check(tp, "erin@example.com", "workspace.admin", "workspace").allowed
    d = check(tp, "dana@example.com", "workspace.admin", "workspace")
    assert d.decision == "deny"
    assert "admins group" in d.reason


# --- Unity Catalog -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("dana", "table.read", "table:main.sales.orders", "allow"),
        ("dana", "table.modify", "table:main.sales.orders", "deny"),
        ("dana", "schema.use", "schema:main.sales", "allow"),
        ("dana", "catalog.use", "catalog:main", "allow"),  # account users
        ("frank", "table.read", "table:main.sales.orders", "deny"),
        ("frank", "table.read", "table:main.sales.refunds", "allow"),  # its owner
        ("frank", "table.manage", "table:main.sales.refunds", "allow"),
        ("erin", "table.modify", "table:main.sales.orders", "allow"),  # owns the parents
        ("dana", "catalog.manage", "catalog:main", "deny"),
    ],
)
def test_effective_privileges_decide(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = check(tp, f"{user}@example.com", action, resource)
    assert d.decision == decision, d.reason


def test_a_table_needs_the_use_privileges_of_its_parents(
    tp: Toolpass, fake: FakeDatabricks
) -> None:
    fake.grant("table", "main.sales.orders", "frank@example.com", "SELECT")
    fake.grants[("schema", "main.sales")].pop("frank@example.com")
    d = check(tp, "frank@example.com", "table.read", "table:main.sales.orders")
    assert d.decision == "deny"
    assert "USE_SCHEMA on schema main.sales" in d.reason


def test_all_privileges_is_not_manage(tp: Toolpass, fake: FakeDatabricks) -> None:
    fake.grant("schema", "main.sales", "erin@example.com", "USE_SCHEMA")
    fake.owners[("table", "main.sales.orders")] = "someone@example.com"
    assert check(tp, "erin@example.com", "table.modify", "table:main.sales.orders").allowed
    d = check(tp, "erin@example.com", "table.manage", "table:main.sales.orders")
    assert d.decision == "deny"
    assert "MANAGE" in d.reason


def test_every_page_is_read_even_after_an_empty_one(fake: FakeDatabricks) -> None:
    fake.page_cap = 1
    with Toolpass([conn(fake)]) as tp:
        assert check(tp, "dana@example.com", "table.read", "table:main.sales.orders").allowed
    tokens = [
        r.arg("page_token")
        for r in fake.seen("GET", r".*/effective-permissions/table/main\.sales\.orders")
    ]
    assert tokens[:2] == [None, "p0"]
    assert len(tokens) > 2
    assert all(r.arg("max_results") == "0" for r in fake.seen("GET", EFFECTIVE))


def test_an_unknown_securable_is_unknown(tp: Toolpass) -> None:
    d = check(tp, "dana@example.com", "table.read", "table:main.sales.nope")
    assert d.decision == "unknown"


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("table.read", "table:main.sales"),
        ("table.read", "schema:main.sales"),
        ("table.read", "table:main.sales.orders.x"),
        ("table.read", "table:main..orders"),
        ("schema.use", "schema:main/../x.y"),
        ("job.view", "jobs:../42"),
        ("job.view", "clusters:42"),
        ("workspace.access", "jobs:42"),
        ("no.such", "workspace"),
    ],
)
def test_a_resource_of_the_wrong_kind_is_unknown_and_asks_nothing(
    tp: Toolpass, fake: FakeDatabricks, action: str, resource: str
) -> None:
    d = check(tp, "dana@example.com", action, resource)
    assert d.decision == "unknown"
    assert fake.requests == []


# --- authentication and settings -----------------------------------------------------------
def test_oauth_m2m_is_exchanged_once(fake: FakeDatabricks) -> None:
    fake.oauth_client("sp-app-id", "dbx-client-secret", "engine@example.com")
    settings = conn(fake, auth="oauth", client_id="sp-app-id", client_secret="env:DBX_SECRET")
    del settings["access_token"]
    with Toolpass([settings]) as tp:
        assert check(tp, "dana@example.com", "job.run", "jobs:42").allowed
        assert check(tp, "dana@example.com", "table.read", "table:main.sales.orders").allowed
    (sent,) = fake.seen("POST", r"/oidc/v1/token")
    assert b"scope=all-apis" in sent.body
    assert fake.seen("GET", JOB_ACL)[0].headers["authorization"].startswith("Bearer m2m-token-")


def test_a_rejected_oauth_client_is_unknown_without_its_secret(fake: FakeDatabricks) -> None:
    settings = conn(fake, auth="oauth", client_id="sp-app-id", client_secret="env:DBX_SECRET")
    with Toolpass([settings]) as tp:
        d = check(tp, "dana@example.com", "job.run", "jobs:42")
    assert d.decision == "unknown"
    assert "dbx-client-secret" not in d.reason


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"auth": "oauth"}, "client_id"),
        ({"access_token": None}, "access_token"),
        ({"permission_cache_ttl": -1.0}, "permission_cache_ttl"),
    ],
)
def test_bad_settings_are_refused(fake: FakeDatabricks, extra: dict[str, Any], key: str) -> None:
    settings = conn(fake, **extra)
    if settings.get("access_token") is None:
        settings.pop("access_token")
    with pytest.raises(ConfigError) as info:
        Toolpass([settings])
    assert key in str(info.value)


def test_the_probe_needs_a_workspace_admin(fake: FakeDatabricks) -> None:
    with Toolpass([conn(fake)]) as tp:
        (result,) = tp.probe().values()
    assert result.ok, result.detail
    fake.users["engine@example.com"].groups = ["users"]
    with Toolpass([conn(fake)]) as tp:
        (result,) = tp.probe().values()
    assert not result.ok
    assert "not a workspace admin" in result.detail


def test_the_catalog_names_the_least_privileged_credential() -> None:
    cls = get("databricks")
    assert cls is Databricks
    assert "service principal" in cls.description
    assert cls.identity_modes == ("email",)


# --- SQL statements ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("sql", "table"),
    [
        ("SELECT * FROM main.sales.orders", "main.sales.orders"),
        (
            "select id, count(*) from `main`.`sales`.`orders` where x > 1 limit 5;",
            "main.sales.orders",
        ),
        ("SELECT a FROM main.sales.orders o ORDER BY a", "main.sales.orders"),
        ("SELECT * FROM sales.orders", None),
        ("SELECT * FROM main.sales.orders JOIN main.hr.pay", None),
        ("SELECT * FROM main.sales.orders, main.hr.pay", None),
        ("SELECT * FROM main.sales.orders WHERE id IN (SELECT id FROM main.hr.pay)", None),
        ("SELECT * FROM main.sales.orders UNION SELECT * FROM main.hr.pay", None),
        ("SELECT * FROM main.sales.orders; DROP TABLE main.sales.orders", None),
        ("SELECT http_request('x') FROM main.sales.orders", None),
        ("SELECT * FROM main.sales.orders -- comment", "main.sales.orders"),
        ("DELETE FROM main.sales.orders", None),
        ("WITH x AS (SELECT 1) SELECT * FROM main.sales.orders", "main.sales.orders"),
        ("WITH x AS (SELECT * FROM main.hr.pay) SELECT * FROM main.sales.orders", None),
        ("SELECT * FROM main.sales.orders;\nDROP TABLE main.sales.orders", None),
        ("SELECT * FROM main.sales.orders WHERE id > 0;\n\tDELETE FROM main.sales.orders", None),
        ("SELECT `http_request`('x') FROM main.sales.orders", None),
        ("SELECT `main`.`sales`.`f`(a) FROM main.sales.orders", None),
        ("SELECT a FROM main.sales.orders WHERE b = ';\nDROP TABLE x'", "main.sales.orders"),
        ("SELECT a FROM main.sales.orders /* unterminated", None),
        ("SELECT a FROM main.sales.orders WHERE b = 'x\\'; DROP TABLE t; --'", "main.sales.orders"),
        ("SELECT a FROM main.sales.orders WHERE b = 'x\\\\'; DROP TABLE t; --'", None),
        ("SELECT ARRAY(SELECT x FROM main.hr.pay) FROM main.sales.orders", None),
        ("SELECT $$x$$ FROM main.sales.orders", None),
        (None, None),
    ],
)
def test_a_statement_is_narrowed_only_when_plain(sql: str | None, table: str | None) -> None:
    assert plain_select(sql) == table


# --- the request hook under databricks-sdk -------------------------------------------------
def _client(fake: FakeDatabricks) -> Any:
    from databricks.sdk import WorkspaceClient

    fake.add_user("tool@example.com", "users")
    fake.bearer("tool-token", "tool@example.com")
    return WorkspaceClient(host=fake.url, token="tool-token", auth_type="pat")


def test_the_hook_lets_an_allowed_run_through(
    kit: tuple[Toolkit, list[Any]], fake: FakeDatabricks
) -> None:
    toolkit, events = kit

    @toolkit.tool()
    def run_job() -> str:
        return f"run {_client(fake).jobs.run_now(job_id=42).run_id}"

    with Session("dana@example.com").active():
        assert run_job().startswith("run ")
    assert [r["job_id"] for r in fake.runs] == [42]
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("job.run", "jobs:42")
    assert action["verdict"] == "allowed"


def test_the_hook_refuses_a_run_before_it_is_sent(
    kit: tuple[Toolkit, list[Any]], fake: FakeDatabricks
) -> None:
    toolkit, events = kit

    @toolkit.tool()
    def run_job() -> str:
        _client(fake).jobs.run_now(job_id=42)
        return "ran"

    with Session("frank@example.com").active(), pytest.raises(ActionRefused):
        run_job()
    assert fake.seen("POST", r"/api/2\.2/jobs/run-now") == []
    assert fake.runs == []
    assert fake.seen("GET", JOB_ACL)  # the engine asked; the tool's request never left
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("job.run", "jobs:42")
    assert action["verdict"] == "not_authorized"


def test_a_plain_select_is_checked_as_a_table_read(
    kit: tuple[Toolkit, list[Any]], fake: FakeDatabricks
) -> None:
    toolkit, events = kit

    @toolkit.tool()
    def query(sql: str) -> str:
        answer = _client(fake).statement_execution.execute_statement(
            statement=sql, warehouse_id="w-1"
        )
        return str(answer.result.data_array if answer.result else None)

    with Session("dana@example.com").active():
        assert "42" in query("SELECT count(*) FROM main.sales.orders")
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("table.read", "table:main.sales.orders")
    with Session("frank@example.com").active(), pytest.raises(ActionRefused):
        query("SELECT * FROM main.sales.orders")
    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        query("DELETE FROM main.sales.orders")  # any other SQL is an admin's
    assert fake.statements == ["SELECT count(*) FROM main.sales.orders"]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM main.sales.orders WHERE id > 0;\nDROP TABLE main.sales.orders",
        "SELECT `http_request`('https://example.com', 'GET') FROM main.sales.orders",
        "SELECT * FROM main.sales.orders o JOIN (main.hr.pay) p ON true",
        "SELECT * FROM (main.sales.orders o JOIN main.hr.pay p ON true)",
        "SELECT * FROM main.sales.orders o, (WITH pay AS (SELECT 1) SELECT * FROM pay) x, pay",
        "WITH pay AS (SELECT * FROM pay) SELECT * FROM main.sales.orders, pay",
    ],
)
def test_a_second_statement_or_a_quoted_function_is_no_table_read(
    kit: tuple[Toolkit, list[Any]], fake: FakeDatabricks, sql: str
) -> None:
    toolkit, events = kit

    @toolkit.tool()
    def query() -> None:
        _client(fake).statement_execution.execute_statement(statement=sql, warehouse_id="w-1")

    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        query()  # dana may read the table, but this is not only a read of it
    assert fake.statements == []
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("workspace.admin", "workspace")


class TestDatabricksConformance(IntegrationConformance):
    integration = "databricks"
    user, action, resource = "dana@example.com", "job.run", "jobs:42"
    system_user, template = "dana@example.com", "{email}"
    credential = "dbx-engine-token"

    @pytest.fixture
    def api(self, fake: FakeDatabricks) -> FakeDatabricks:
        return fake

    def connection(self, api: FakeDatabricks, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    unsupported = {
        "make_read_only": "a job has no read-only state: a paused schedule still takes run-now, "
        "and only the job's ACL says who may run or change it",
        "bind_admins": "workspace admins hold CAN_MANAGE on every job (inherited from the "
        "admins group, which no job ACL can take away): nothing about a job binds them",
    }

    def disable_account(self, api: FakeDatabricks) -> None:
        """Dana is deactivated (SCIM ``active: false``); she stays in her groups."""
        api.users["dana@example.com"].active = False

    def revoke(self, api: FakeDatabricks) -> None:
        """Dana is removed from the analysts group, which the job's ACL names."""
        api.users["dana@example.com"].groups.remove("analysts")
