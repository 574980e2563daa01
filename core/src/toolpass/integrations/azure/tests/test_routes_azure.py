"""The Azure route table (generic ARM rows, curated) and the operation the request hook
derives from any Resource Manager path."""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.azure import Azure, arm_scope
from toolpass.integrations.routes import Request, load

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/azure/routes.json"
S = "/subscriptions/11111111-2222-3333-4444-555555555555"
RG = f"{S}/resourceGroups/rg-App"
VM = f"{RG}/providers/Microsoft.Compute/virtualMachines/vm1"


@pytest.fixture(scope="module")
def az() -> Azure:
    (config,) = parse_connections(
        [
            {
                "id": "az",
                "integration": "azure",
                "tenant_id": "contoso.onmicrosoft.com",
                "client_id": "0b6c3a8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
                "client_secret": literal("s3cret"),
            }
        ]
    )
    return Azure(config)


def test_the_table_loads_with_its_source_and_regenerates() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/azure/generate.py"
    assert data["source"].startswith("curated: the generic Azure Resource Manager operation rule")
    assert len(load("toolpass.integrations.azure")) == len(data["routes"]) == 14
    assert load_generator("azure").build()["routes"] == data["routes"]


def test_every_routed_action_is_declared() -> None:
    assert all(
        Azure.action(r.action) is not None for r in load("toolpass.integrations.azure").routes
    )


@pytest.mark.parametrize(
    ("method", "path", "action", "resource", "effect"),
    [
        ("GET", VM, "Microsoft.Compute/virtualMachines/read", VM, "read"),
        ("HEAD", VM, "Microsoft.Compute/virtualMachines/read", VM, "read"),
        ("PUT", VM, "Microsoft.Compute/virtualMachines/write", VM, "write"),
        ("PATCH", VM, "Microsoft.Compute/virtualMachines/write", VM, "write"),
        ("DELETE", VM, "Microsoft.Compute/virtualMachines/delete", VM, "destructive"),
        (
            "POST",
            f"{VM}/powerOff",
            "Microsoft.Compute/virtualMachines/powerOff/action",
            VM,
            "write",
        ),
        (
            "POST",
            f"{VM}/runCommand",
            "Microsoft.Compute/virtualMachines/runCommand/action",
            VM,
            "write",
        ),
        (
            "GET",
            f"{RG}/providers/Microsoft.Compute/virtualMachines",
            "Microsoft.Compute/virtualMachines/read",
            RG,
            "read",
        ),
        (
            "PUT",
            f"{VM}/extensions/ext1",
            "Microsoft.Compute/virtualMachines/extensions/write",
            f"{VM}/extensions/ext1",
            "write",
        ),
        (
            "POST",
            f"{RG}/providers/Microsoft.Storage/storageAccounts/acct/listKeys",
            "Microsoft.Storage/storageAccounts/listKeys/action",
            f"{RG}/providers/Microsoft.Storage/storageAccounts/acct",
            "read",
        ),
        (
            "POST",
            f"{RG}/providers/Microsoft.Web/sites/app/config/appsettings/list",
            "Microsoft.Web/sites/config/list/action",
            f"{RG}/providers/Microsoft.Web/sites/app/config/appsettings",
            "read",
        ),
        (
            "PUT",
            f"{VM}/providers/Microsoft.Authorization/roleAssignments/ra1",
            "Microsoft.Authorization/roleAssignments/write",
            f"{VM}/providers/Microsoft.Authorization/roleAssignments/ra1",
            "write",
        ),
        ("GET", S, "Microsoft.Resources/subscriptions/read", S, "read"),
        (
            "GET",
            f"{S}/resourcegroups",
            "Microsoft.Resources/subscriptions/resourcegroups/read",
            S,
            "read",
        ),
        ("PUT", RG, "Microsoft.Resources/subscriptions/resourceGroups/write", RG, "write"),
        (
            "DELETE",
            RG,
            "Microsoft.Resources/subscriptions/resourceGroups/delete",
            RG,
            "destructive",
        ),
        (
            "POST",
            f"{RG}/exportTemplate",
            "Microsoft.Resources/subscriptions/resourceGroups/exportTemplate/action",
            RG,
            "write",
        ),
        (
            "PUT",
            f"{RG}/providers/Microsoft.Resources/deployments/d1",
            "Microsoft.Resources/deployments/write",
            f"{RG}/providers/Microsoft.Resources/deployments/d1",
            "write",
        ),
        (
            "POST",
            f"{S}/providers/Microsoft.Compute/register",
            "Microsoft.Compute/register/action",
            S,
            "write",
        ),
        (
            "GET",
            "/providers/Microsoft.Management/managementGroups/mg1",
            "Microsoft.Management/managementGroups/read",
            "/providers/Microsoft.Management/managementGroups/mg1",
            "read",
        ),
    ],
)
def test_requests_take_their_operations(
    az: Azure, method: str, path: str, action: str, resource: str, effect: str
) -> None:
    found = az.match_request(Request(method, path, "api-version=2024-07-01", None, b""))
    assert found is not None
    assert (found.action, found.resource, found.effect) == (action, resource.lower(), effect)
    assert not found.route.agent


@pytest.mark.parametrize(
    "path",
    ["/subscriptions", "/providers", "/providers/Microsoft.Compute/operations", f"{S}/providers"],
)
def test_metadata_reads_are_the_agents_own(az: Azure, path: str) -> None:
    found = az.match_request(Request("GET", path, "", None, b""))
    assert found is not None
    assert found.route.agent


def test_ids_compare_without_case(az: Azure) -> None:
    one = az.match_request(Request("DELETE", VM, "", None, b""))
    other = az.match_request(
        Request("DELETE", VM.upper().replace("/SUBSCRIPTIONS", "/subscriptions"), "", None, b"")
    )
    assert one is not None
    assert other is not None
    assert one.resource == other.resource == VM.lower()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/batch"),
        ("PUT", f"{RG}/providers/Microsoft.Compute/virtualMachines"),
        ("DELETE", "/subscriptions"),
        ("POST", VM),
        ("PUT", f"{VM}/a%2F..%2F..%2Fx"),
        ("PUT", f"{RG}/providers/Microsoft.Compute/virtualMachines/%2e%2e"),
        ("DELETE", "/subscriptions/..%5C/x"),
        ("PUT", "/tenants/x"),
        ("OPTIONS", VM),
    ],
)
def test_what_is_not_a_resource_request_takes_no_route(az: Azure, method: str, path: str) -> None:
    assert az.match_request(Request(method, path, "", None, b"")) is None


#: A path segment: never empty, so the path has no ``//`` (the hook matches paths without
#: empty segments: it drops them).
_SEG = st.text(st.sampled_from("aZ09._-()%\\~ ."), min_size=1, max_size=6)


@given(st.sampled_from(["GET", "PUT", "PATCH", "DELETE", "POST"]), st.lists(_SEG, max_size=12))
def test_a_derived_resource_is_a_clean_arm_id_inside_the_path(
    method: str, parts: list[str]
) -> None:
    path = f"{RG}/" + "/".join(parts)
    found = Azure.match_request(_AZ, Request(method, path, "", None, b""))
    if found is None or found.resource is None:
        return
    assert arm_scope(found.resource) == found.resource
    assert ".." not in found.resource.split("/")
    # Dot segments are resolved as the server resolves them (``RG/../x`` is the group ``x``).
    resolved = posixpath.normpath(path).lower()
    assert (resolved + "/").startswith(found.resource + "/") or found.resource in resolved


def _azure() -> Azure:
    (config,) = parse_connections(
        [
            {
                "id": "az",
                "integration": "azure",
                "tenant_id": "contoso.onmicrosoft.com",
                "client_id": "x",
                "client_secret": literal("s3cret"),
            }
        ]
    )
    return Azure(config)


_AZ = _azure()
