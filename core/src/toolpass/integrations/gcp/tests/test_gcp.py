"""The Google Cloud integration, through ``Toolpass``, against a fake Policy Troubleshooter and
token endpoint on 127.0.0.1; google-auth against the same token endpoint; and the request hook
under google-api-python-client (httplib2, http.client)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.gcp import KEY_ID, FakeGcp, key_file, populate
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, hooked, served, written

from toolpass import Session, Toolkit, Toolpass
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.intercept import ActionRefused

BUCKET = "//storage.googleapis.com/projects/_/buckets/data-bkt"
OBJECT = f"{BUCKET}/objects/report.csv"
PROJECT = "//cloudresourcemanager.googleapis.com/projects/proj-1"


fake = served(FakeGcp, populate)
key = written("key.json", lambda fake: key_file(f"{fake.url}/token"))
_settings = connection(id="gcp", integration="gcp")


def conn(fake: FakeGcp, key: Path, **extra: Any) -> dict[str, Any]:
    return _settings(fake, **{"credentials": f"file:{key}", **extra})


tp = engine(conn, "key")


@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("alice", "storage.objects.delete", OBJECT, "allow"),  # inherited from the project
        ("alice", "storage.objects.get", BUCKET, "allow"),
        ("bob", "storage.objects.get", OBJECT, "allow"),  # through group:readers
        ("bob", "storage.objects.delete", OBJECT, "deny"),
        ("carol", "storage.objects.delete", OBJECT, "deny"),  # a deny policy wins
        ("dave", "storage.objects.get", OBJECT, "unknown"),  # UNKNOWN_INFO
        ("alice", "compute.instances.delete", PROJECT, "deny"),
    ],
)
def test_policy_troubleshooter_decides(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = tp.check(f"{user}@example.com", "gcp", action, resource)
    assert d.decision == decision, d.reason


def test_the_access_tuple_is_sent_as_documented(tp: Toolpass, fake: FakeGcp) -> None:
    tp.check("Alice@Example.com", "gcp", "storage.objects.delete", OBJECT)
    [req] = fake.seen("POST", r"/v3/iam:troubleshoot")
    assert req.json() == {
        "accessTuple": {
            "principal": "alice@example.com",
            "fullResourceName": OBJECT,
            "permission": "storage.objects.delete",
        }
    }
    assert req.headers["authorization"].startswith("Bearer ya29.fake-")


def test_the_engine_signs_a_jwt_once_for_many_checks(tp: Toolpass, fake: FakeGcp) -> None:
    for action in ("storage.objects.get", "storage.objects.delete", "storage.objects.list"):
        tp.check("alice@example.com", "gcp", action, OBJECT)
    assert len(fake.seen("POST", r"/token")) == 1
    [grant] = fake.tokens.values()
    assert grant == {"sub": None, "scope": "https://www.googleapis.com/auth/cloud-platform"}


def test_a_rejected_token_is_replaced_once(tp: Toolpass, fake: FakeGcp) -> None:
    assert tp.check("alice@example.com", "gcp", "storage.objects.get", OBJECT).allowed
    fake.tokens.clear()
    d = tp.check("alice@example.com", "gcp", "storage.objects.delete", OBJECT)
    assert d.allowed, d.reason
    assert len(fake.seen("POST", r"/token")) == 2


def test_any_iam_permission_is_an_action() -> None:
    cls = get("gcp")
    assert cls.action("spanner.databases.drop").effect == "write"  # type: ignore[union-attr]
    assert cls.action("compute.disks.delete").effect == "destructive"  # type: ignore[union-attr]
    assert cls.action("bigquery.tables.getData").effect == "read"  # type: ignore[union-attr]
    assert cls.action("not an action") is None


@pytest.mark.parametrize(
    "resource",
    ["projects/proj-1", "//evil.example.com/x", "//storage.googleapis.com/a/../b", "bucket:x"],
)
def test_a_resource_that_is_no_full_resource_name_is_unknown(
    tp: Toolpass, fake: FakeGcp, resource: str
) -> None:
    d = tp.check("alice@example.com", "gcp", "storage.objects.get", resource)
    assert d.decision == "unknown"
    assert fake.seen("POST", r"/v3/iam:troubleshoot") == []


def test_conditional_access_can_be_read_as_deny(fake: FakeGcp, key: Path) -> None:
    @fake.route("POST", r"/v3/iam:troubleshoot")
    def conditional(request: Any) -> dict[str, Any]:
        return {"overallAccessState": "UNKNOWN_CONDITIONAL"}

    fake._routes.insert(0, fake._routes.pop())
    with Toolpass([conn(fake, key)]) as tp:
        assert tp.check("alice@example.com", "gcp", "a.b.get", OBJECT).decision == "unknown"
    with Toolpass([conn(fake, key, conditional="deny")]) as tp:
        assert tp.check("alice@example.com", "gcp", "a.b.get", OBJECT).decision == "deny"


def test_a_static_token(fake: FakeGcp, key: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.tokens["ya29.static"] = {"sub": None, "scope": ""}
    monkeypatch.setenv("GCP_TOKEN", "ya29.static")
    with Toolpass([conn(fake, key, auth="token", access_token="env:GCP_TOKEN")]) as tp:
        assert tp.check("alice@example.com", "gcp", "storage.objects.get", OBJECT).allowed
    assert fake.seen("POST", r"/token") == []


def test_the_metadata_servers_token(fake: FakeGcp, key: Path) -> None:
    fake.tokens["ya29.metadata"] = {"sub": None, "scope": ""}

    @fake.route("GET", r"/computeMetadata/v1/instance/service-accounts/default/token")
    def metadata(request: Any) -> dict[str, Any]:
        assert request.headers["metadata-flavor"] == "Google"
        return {"access_token": "ya29.metadata", "expires_in": 3000, "token_type": "Bearer"}

    url = f"{fake.url}/computeMetadata/v1/instance/service-accounts/default/token"
    with Toolpass([conn(fake, key, auth="metadata", metadata_url=url)]) as tp:
        assert tp.check("alice@example.com", "gcp", "storage.objects.get", OBJECT).allowed
        assert tp.check("bob@example.com", "gcp", "storage.objects.get", OBJECT).allowed
    assert len(fake.seen("GET", r"/computeMetadata/.*")) == 1


@pytest.mark.parametrize(
    ("extra", "bad"),
    [
        ({"auth": "token"}, "access_token"),
        ({"token_uri": "http://example.com/token"}, "token_uri"),
        ({"metadata_url": "http://example.com/x"}, "metadata_url"),
        ({"project": "Not A Project"}, "project"),
    ],
)
def test_bad_settings_are_refused(
    fake: FakeGcp, key: Path, extra: dict[str, Any], bad: str
) -> None:
    with pytest.raises(ConfigError) as info:
        Toolpass([conn(fake, key, **extra)])
    assert bad in str(info.value)


def test_the_catalog_names_the_least_privileged_credential() -> None:
    description = get("gcp").description
    assert "roles/iam.securityReviewer" in description
    assert "iam:troubleshoot" in description


# --- google-auth against the fake token endpoint --------------------------------------------
def test_google_auth_gets_a_token_from_the_fake(fake: FakeGcp, key: Path) -> None:
    import google.auth.transport.requests
    import requests
    from google.oauth2 import service_account

    info = json.loads(key.read_text())
    creds = service_account.Credentials.from_service_account_info(
        info, scopes=["https://www.googleapis.com/auth/cloud-platform"]
    )
    with requests.Session() as session:
        creds.refresh(google.auth.transport.requests.Request(session))
    assert creds.token in fake.tokens


# --- the request hook under google-api-python-client ----------------------------------------
kit = hooked(conn, "key")


def _delete(fake: FakeGcp, key: Path, name: str) -> None:
    from google.oauth2 import service_account
    from googleapiclient.discovery import build

    creds = service_account.Credentials.from_service_account_info(
        json.loads(key.read_text()),
        scopes=["https://www.googleapis.com/auth/devstorage.full_control"],
    )
    storage = build(
        "storage",
        "v1",
        credentials=creds,
        client_options={"api_endpoint": f"{fake.url}/storage/v1/"},
        static_discovery=True,
        cache_discovery=False,
    )
    try:
        storage.objects().delete(bucket="data-bkt", object=name).execute()
    finally:
        storage.close()
        creds_http = getattr(creds, "_http", None)
        if creds_http is not None:
            creds_http.close()


def test_the_hook_lets_an_allowed_delete_through(
    kit: tuple[Toolkit, list[Any]], fake: FakeGcp, key: Path
) -> None:
    toolkit, events = kit
    delete = toolkit.tool()(lambda: _delete(fake, key, "report.csv"))
    with Session("alice@example.com").active():
        delete()
    assert ("data-bkt", "report.csv") not in fake.objects
    actions = [(a["action"], a["resource"]) for a in events[-1].actions]
    assert ("storage.objects.delete", OBJECT) in actions


def test_the_hook_refuses_a_delete_before_it_is_sent(
    kit: tuple[Toolkit, list[Any]], fake: FakeGcp, key: Path
) -> None:
    toolkit, events = kit
    delete = toolkit.tool()(lambda: _delete(fake, key, "logs/a.txt"))
    with Session("bob@example.com").active(), pytest.raises(ActionRefused):
        delete()
    assert fake.seen("DELETE", r"/storage/v1/b/.*") == []
    [action] = [a for a in events[-1].actions if a["action"] == "storage.objects.delete"]
    assert action["verdict"] == "not_authorized"
    assert ("data-bkt", "logs/a.txt") in fake.objects


# --- BigQuery jobs under google-api-python-client ------------------------------------------
@contextlib.contextmanager
def _bigquery(fake: FakeGcp, key: Path) -> Iterator[Any]:
    from google.oauth2 import service_account
    from googleapiclient.discovery import build

    creds = service_account.Credentials.from_service_account_info(
        json.loads(key.read_text()), scopes=["https://www.googleapis.com/auth/bigquery"]
    )
    service = build(
        "bigquery",
        "v2",
        credentials=creds,
        client_options={"api_endpoint": f"{fake.url}/bigquery/v2/"},
        static_discovery=True,
        cache_discovery=False,
    )
    try:
        yield service
    finally:
        service.close()
        creds_http = getattr(creds, "_http", None)
        if creds_http is not None:
            creds_http.close()


def _sql(fake: FakeGcp, key: Path, sql: str) -> Any:
    body = {"query": sql, "useLegacySql": False}
    with _bigquery(fake, key) as bigquery:
        return bigquery.jobs().query(projectId="proj-1", body=body).execute()


def _insert(fake: FakeGcp, key: Path, configuration: dict[str, Any]) -> Any:
    body = {"configuration": configuration}
    with _bigquery(fake, key) as bigquery:
        return bigquery.jobs().insert(projectId="proj-1", body=body).execute()


SALES = "//bigquery.googleapis.com/projects/proj-1/datasets/sales"


def test_a_query_is_checked_on_every_table_it_reads(
    kit: tuple[Toolkit, list[Any]], fake: FakeGcp, key: Path
) -> None:
    toolkit, events = kit
    query = toolkit.tool(effect="read")(lambda sql: _sql(fake, key, sql))
    with Session("alice@example.com").active():
        assert "42" in str(query("SELECT count(*) FROM sales.orders"))
    [action] = [a for a in events[-1].actions if a["action"] == "bigquery.jobs.create"]
    assert action["resource"] == (f"{PROJECT} +bigquery.tables.getData {SALES}/tables/orders")
    with Session("alice@example.com").active(), pytest.raises(ActionRefused):
        query("SELECT * FROM sales.orders JOIN `other-proj.hr.pay` USING (id)")
    assert [j["query"] for j in fake.jobs] == ["SELECT count(*) FROM sales.orders"]
    asked = [json.loads(r.body)["accessTuple"] for r in fake.seen("POST", r"/v3/iam:troubleshoot")]
    assert {
        "principal": "alice@example.com",
        "fullResourceName": "//bigquery.googleapis.com/projects/other-proj/datasets/hr/tables/pay",
        "permission": "bigquery.tables.getData",
    } in asked


def test_a_name_not_given_in_full_in_a_session_is_refused(
    kit: tuple[Toolkit, list[Any]], fake: FakeGcp, key: Path
) -> None:
    """In a session, ``SET @@dataset_project_id`` run earlier moves ``d.t`` to another
    project: only a name in full is placed."""
    toolkit, _ = kit
    session = [{"key": "session_id", "value": "CgwKBnByb2otMRABGAE"}]

    @toolkit.tool(effect="read")
    def query(sql: str) -> Any:
        body = {"query": sql, "useLegacySql": False, "connectionProperties": session}
        with _bigquery(fake, key) as bigquery:
            return bigquery.jobs().query(projectId="proj-1", body=body).execute()

    with Session("alice@example.com").active(), pytest.raises(ActionRefused):
        query("SELECT count(*) FROM sales.orders")
    assert fake.jobs == []
    with Session("alice@example.com").active():
        assert "42" in str(query("SELECT count(*) FROM `proj-1.sales.orders`"))


def test_a_default_dataset_places_only_unqualified_tables(
    kit: tuple[Toolkit, list[Any]], fake: FakeGcp, key: Path
) -> None:
    """``defaultDataset`` names the dataset of a bare ``t``; ``d.t`` stays in the job's
    project whatever project the default dataset is in (BigQuery: it "does not alter
    behavior of unqualified dataset names")."""
    toolkit, events = kit
    body = {
        "query": "SELECT count(*) FROM sales.orders",
        "useLegacySql": False,
        "defaultDataset": {"projectId": "other-proj", "datasetId": "hr"},
    }

    @toolkit.tool(effect="read")
    def query() -> Any:
        with _bigquery(fake, key) as bigquery:
            return bigquery.jobs().query(projectId="proj-1", body=body).execute()

    with Session("alice@example.com").active():
        assert "42" in str(query())
    [action] = [a for a in events[-1].actions if a["action"] == "bigquery.jobs.create"]
    assert action["resource"] == (f"{PROJECT} +bigquery.tables.getData {SALES}/tables/orders")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM sales.orders o JOIN (`other-proj.hr.pay`) p ON true",
        "SELECT * FROM (sales.orders), ((other-proj.hr.pay))",
    ],
)
def test_a_table_in_parentheses_is_checked_too(
    kit: tuple[Toolkit, list[Any]], fake: FakeGcp, key: Path, sql: str
) -> None:
    toolkit, _ = kit
    query = toolkit.tool(effect="read")(lambda sql: _sql(fake, key, sql))
    with Session("alice@example.com").active(), pytest.raises(ActionRefused):
        query(sql)  # alice reads sales.orders, not other-proj's hr.pay
    assert fake.jobs == []
    asked = [json.loads(r.body)["accessTuple"] for r in fake.seen("POST", r"/v3/iam:troubleshoot")]
    assert f"{SALES}/tables/orders" in [a["fullResourceName"] for a in asked]
    assert "//bigquery.googleapis.com/projects/other-proj/datasets/hr/tables/pay" in [
        a["fullResourceName"] for a in asked
    ]


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE sales.orders",
        "DELETE FROM sales.orders WHERE true",
        "SELECT 1;\n DROP TABLE sales.orders",
        "SELECT 1 # comment\n; TRUNCATE TABLE sales.orders",
        "EXPORT DATA OPTIONS (uri = 'gs://out/*.csv') AS SELECT * FROM sales.orders",
        "SELECT 1 /* unterminated",
        "DECLARE x INT64; SET x = 1",
    ],
)
def test_a_write_is_never_a_read_of_the_billing_project(
    kit: tuple[Toolkit, list[Any]], fake: FakeGcp, key: Path, sql: str
) -> None:
    toolkit, events = kit
    query = toolkit.tool(effect="read")(lambda: _sql(fake, key, sql))
    with Session("alice@example.com").active(), pytest.raises(ActionRefused):
        query()  # alice may create jobs in proj-1 and read sales, nothing more
    assert fake.jobs == []
    [action] = [a for a in events[-1].actions if a["action"] == "bigquery.jobs.create"]
    assert action["verdict"] in ("effect_mismatch", "not_authorized", "unresolved_resource")


def test_an_inserted_job_is_placed_by_its_configuration(
    kit: tuple[Toolkit, list[Any]], fake: FakeGcp, key: Path
) -> None:
    toolkit, events = kit
    insert = toolkit.tool()(lambda configuration: _insert(fake, key, configuration))

    read = {"query": {"query": "SELECT * FROM sales.orders", "useLegacySql": False}}
    with Session("alice@example.com").active():
        assert "DONE" in str(insert(read))
    extract = {
        "extract": {
            "sourceTable": {"projectId": "proj-1", "datasetId": "sales", "tableId": "orders"},
            "destinationUris": ["gs://elsewhere/orders-*.csv"],
        }
    }
    drop = {"query": {"query": "DROP TABLE sales.orders", "useLegacySql": False}}
    for configuration, effect in ((extract, "write"), (drop, "destructive")):
        with Session("alice@example.com").active(), pytest.raises(ActionRefused):
            insert(configuration)
        [action] = [a for a in events[-1].actions if a["action"] == "bigquery.jobs.create"]
        assert action["effect"] == effect
    assert len(fake.jobs) == 1


class TestGcpConformance(IntegrationConformance):
    integration = "gcp"
    user, action, resource = "alice@example.com", "storage.objects.delete", OBJECT
    system_user, template = "alice@example.com", "{email}"
    credential = KEY_ID
    other_secrets = ()

    @pytest.fixture
    def api(self, fake: FakeGcp, key: Path) -> FakeGcp:
        self._key = key
        return fake

    def error_body(self, text: str) -> Any:
        return {"error": {"code": 400, "message": text, "status": "FAILED_PRECONDITION"}}

    def connection(self, api: FakeGcp, **extra: Any) -> dict[str, Any]:
        return conn(api, self._key, **extra)

    unsupported = {
        "make_read_only": "not read: a bucket's retention policy and an object's holds "
        "(temporaryHold, eventBasedHold) refuse deletes that IAM, which the Policy "
        "Troubleshooter answers for, allows",
    }

    def disable_account(self, api: FakeGcp) -> None:
        """Alice's Google account is deleted: IAM rewrites her bindings to
        ``deleted:user:...?uid=`` principals, which grant nothing."""
        api.grants = {
            (f"deleted:{p}?uid=123456789" if p == "user:alice@example.com" else p, perm, res)
            for p, perm, res in api.grants
        }

    def bind_admins(self, api: FakeGcp) -> None:
        """Alice is made an owner of the project (setIamPolicy stands for roles/owner's
        permissions); an IAM deny policy on the bucket denies her deleting objects, and deny
        policies bind owners too."""
        api.grants.add(("user:alice@example.com", "resourcemanager.projects.setIamPolicy", PROJECT))
        api.denies.add(("user:alice@example.com", "storage.objects.delete", BUCKET))

    def revoke(self, api: FakeGcp) -> None:
        """Alice's project binding that grants deleting objects is removed."""
        api.grants.discard(("user:alice@example.com", "storage.objects.delete", PROJECT))
