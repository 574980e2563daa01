"""The Google Cloud route table (generated from google-api-python-client's discovery documents)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.gcp import _RESOURCE, PERMISSION, GoogleCloud
from toolpass.integrations.routes import Request, load

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/gcp/routes.json"
BUCKET = "//storage.googleapis.com/projects/_/buckets/data-bkt"


@pytest.fixture(scope="module")
def gcp() -> GoogleCloud:
    (config,) = parse_connections(
        [{"id": "gcp", "integration": "gcp", "credentials": literal("{}")}]
    )
    return GoogleCloud(config)


def place(gcp: GoogleCloud, method: str, url: str) -> tuple[str, str | None] | None:
    parts = urlsplit(url)
    found = gcp.match_request(Request(method, parts.path, parts.query, host=parts.hostname or ""))
    return None if found is None else (found.action, found.resource)


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/gcp/generate.py"
    assert data["source"].startswith("PyPI google-api-python-client ")
    assert len(load("toolpass.integrations.gcp")) == len(data["routes"]) >= 2000
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    assert all(r[1].split("/")[1].endswith(".googleapis.com") for r in data["routes"])
    assert {r[4] for r in data["routes"] if r[0] == "DELETE"} == {"destructive"}


def test_every_action_is_a_permission_or_declared() -> None:
    for route in load("toolpass.integrations.gcp").routes:
        assert PERMISSION.fullmatch(route.action) or GoogleCloud.action(route.action), route


def test_every_resource_is_a_full_resource_name_or_names_the_service_only() -> None:
    for route in load("toolpass.integrations.gcp").routes:
        example = route.resource.replace("{", "").replace("}", "")
        assert _RESOURCE.fullmatch(example) or route.resource.endswith(".googleapis.com/"), route


def test_regenerating_from_the_package_gives_the_committed_table() -> None:
    pytest.importorskip("googleapiclient")
    from importlib.metadata import version

    data = json.loads(TABLE.read_text())
    if f"google-api-python-client {version('google-api-python-client')} " not in data["source"]:
        pytest.skip("the table is from another google-api-python-client")
    built = load_generator("gcp").build()
    assert built["routes"] == data["routes"]


@pytest.mark.parametrize(
    ("method", "url", "action", "resource"),
    [
        (
            "DELETE",
            "https://storage.googleapis.com/storage/v1/b/data-bkt/o/logs%2Fa.txt",
            "storage.objects.delete",
            f"{BUCKET}/objects/logs/a.txt",
        ),
        (
            "GET",
            "https://storage.googleapis.com/storage/v1/b/data-bkt/o/r.csv?alt=media",
            "storage.objects.get",
            f"{BUCKET}/objects/r.csv",
        ),
        (
            "POST",
            "https://storage.googleapis.com/upload/storage/v1/b/data-bkt/o",
            "storage.objects.create",
            BUCKET,
        ),
        (
            "POST",
            "https://storage.googleapis.com/storage/v1/b?project=p1",
            "storage.buckets.create",
            "//cloudresourcemanager.googleapis.com/projects/p1",
        ),
        (
            "POST",
            "https://compute.googleapis.com/compute/v1/projects/p1/zones/z1/instances/vm/stop",
            "compute.instances.stop",
            "//compute.googleapis.com/projects/p1/zones/z1/instances/vm",
        ),
        (
            "POST",
            "https://compute.googleapis.com/compute/v1/projects/p1/zones/z1/instances",
            "compute.instances.create",
            "//cloudresourcemanager.googleapis.com/projects/p1",
        ),
        (
            "GET",
            "https://secretmanager.googleapis.com/v1/projects/p1/secrets/s/versions/2:access",
            "secretmanager.versions.access",
            "//secretmanager.googleapis.com/projects/p1/secrets/s/versions/2",
        ),
        (
            "POST",
            "https://secretmanager.googleapis.com/v1/projects/p1/secrets/s:addVersion",
            "secretmanager.versions.add",
            "//secretmanager.googleapis.com/projects/p1/secrets/s",
        ),
        (
            "POST",
            "https://cloudresourcemanager.googleapis.com/v3/projects/p1:setIamPolicy",
            "resourcemanager.projects.setIamPolicy",
            "//cloudresourcemanager.googleapis.com/projects/p1",
        ),
        (
            "GET",
            "https://bigquery.googleapis.com/bigquery/v2/projects/p1/datasets/d/tables/t/data",
            "bigquery.tables.getData",
            "//bigquery.googleapis.com/projects/p1/datasets/d/tables/t",
        ),
        (
            "POST",
            "https://pubsub.googleapis.com/v1/projects/p1/topics/t:publish",
            "pubsub.topics.publish",
            "//pubsub.googleapis.com/projects/p1/topics/t",
        ),
        (
            "DELETE",
            "https://sqladmin.googleapis.com/v1/projects/p1/instances/db",
            "cloudsql.instances.delete",
            "//cloudsql.googleapis.com/projects/p1/instances/db",
        ),
        ("POST", "https://oauth2.googleapis.com/token", "agent.token", "//oauth2.googleapis.com/"),
    ],
)
def test_requests_take_their_routes(
    gcp: GoogleCloud, method: str, url: str, action: str, resource: str
) -> None:
    assert place(gcp, method, url) == (action, resource)


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("POST", "https://storage.googleapis.com/batch/storage/v1"),
        ("POST", "https://unknown-api.googleapis.com/v1/projects/p/things"),
        ("POST", "https://bigquery.googleapis.com/upload/bigquery/v2/projects/p1/jobs"),
    ],
)
def test_unknown_requests_take_no_route(gcp: GoogleCloud, method: str, url: str) -> None:
    assert place(gcp, method, url) is None


@pytest.mark.parametrize(
    "url",
    [
        "https://storage.googleapis.com/storage/v1/b/data-bkt/o/a%2F..%2Fb",
        "https://storage.googleapis.com/storage/v1/b/data-bkt/o/a%2F%2Fb",
        "https://storage.googleapis.com/storage/v1/b/..%2Fx/o/a",
    ],
)
def test_hostile_object_names_name_nothing(gcp: GoogleCloud, url: str) -> None:
    found = place(gcp, "DELETE", url)
    assert found is not None
    assert found[1] is None


def test_a_private_endpoint_places_a_path_one_service_routes(gcp: GoogleCloud) -> None:
    stop = "/compute/v1/projects/p1/zones/z1/instances/vm/stop"
    assert gcp.match_request(Request("POST", stop, host="10.1.2.3")) is not None
    # run.v1 and run.v2 both have v1/v2 paths; one path both cloudfunctions versions share
    shared = [r for r in GoogleCloud._by_path().routes if not r.action]
    for route in shared[:5]:
        path = route.path.replace("{", "x").replace("}", "")
        assert gcp.match_request(Request(route.method, path, host="10.1.2.3")) is None


def test_googleapis_hosts_are_served(gcp: GoogleCloud) -> None:
    assert gcp.serves("https", "storage.googleapis.com", 443)
    assert not gcp.serves("https", "storage.googleapis.com.evil.example", 443)
    assert not gcp.serves("http", "storage.googleapis.com", 80)
