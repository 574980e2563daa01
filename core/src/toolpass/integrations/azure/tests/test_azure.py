"""The Azure integration, through ``Toolpass``, against a fake Entra ID, Graph and Resource
Manager on 127.0.0.1; and the request hook under azure-mgmt-authorization (requests)."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from fakes.azure import (
    CLIENT,
    ENGINEERS,
    OWNER,
    READER,
    RG,
    SUB,
    TENANT,
    VM,
    FakeAzure,
    oid,
    populate,
)
from fakes.tls import make_certs
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, environment, served

from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.intercept import ActionRefused

SUBSCRIPTION = f"/subscriptions/{SUB}"
LOCKED = f"{SUBSCRIPTION}/resourceGroups/rg-locked"
BLOBS = "data:Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"
CONTAINER = (
    f"{RG}/providers/Microsoft.Storage/storageAccounts/acct/blobServices/default/containers/c1"
)


fake = served(FakeAzure, populate)
secrets = environment(AZ_SECRET="azure-client-secret-1")
conn = connection(
    id="az",
    integration="azure",
    tenant_id=TENANT,
    client_id=CLIENT,
    client_secret="env:AZ_SECRET",
    identity={"mode": "email"},
    urls=("authority_host", "graph_url"),
)
tp = engine(conn)


@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("dana", "Microsoft.Compute/virtualMachines/write", VM, "allow"),
        ("dana", "Microsoft.Compute/virtualMachines/powerOff/action", VM, "allow"),
        ("dana", "Microsoft.Compute/virtualMachines/read", RG, "allow"),
        ("dana", "Microsoft.Authorization/roleAssignments/write", RG, "deny"),
        ("dana", "Microsoft.Compute/virtualMachines/write", f"{LOCKED}/x", "deny"),
        ("dana", "Microsoft.Compute/virtualMachines/write", SUBSCRIPTION, "deny"),
        ("erin", "Microsoft.Compute/virtualMachines/read", VM, "allow"),
        ("erin", "Microsoft.Compute/virtualMachines/write", VM, "deny"),
        ("frank", "Microsoft.Authorization/roleAssignments/write", RG, "allow"),
        ("frank", "Microsoft.Resources/subscriptions/resourceGroups/delete", LOCKED, "deny"),
        ("frank", "Microsoft.Resources/subscriptions/resourceGroups/delete", RG, "allow"),
        ("frank", "Microsoft.Compute/virtualMachines/write", f"{LOCKED}/x", "allow"),
        ("gail", "Microsoft.Compute/virtualMachines/read", VM, "deny"),
        ("hank", BLOBS, CONTAINER, "unknown"),
        ("erin", BLOBS, CONTAINER, "deny"),
        ("frank", BLOBS, CONTAINER, "deny"),
    ],
)
def test_role_and_deny_assignments_decide(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = tp.check(f"{user}@example.com", "az", action, resource)
    assert d.decision == decision, d.reason


def test_a_disabled_account_is_denied_in_every_identity_mode(fake: FakeAzure) -> None:
    """Resource Manager keeps a disabled account's role assignments: the account is read
    for every check (not only by the email look-up), and asked anew with fresh=True."""
    write = "Microsoft.Compute/virtualMachines/write"
    users = {"gail@example.com": oid(4), "dana@example.com": oid(1)}
    with Toolpass([conn(fake, identity={"mode": "users", "users": users})]) as tp:
        d = tp.check("gail@example.com", "az", write, VM)  # Owner of the subscription
        assert d.decision == "deny", d.reason
        assert "disabled" in d.reason
        assert tp.check("dana@example.com", "az", write, VM).allowed
        fake.users[oid(1)]["enabled"] = False  # disabled by an administrator
        d = tp.check("dana@example.com", "az", write, VM, fresh=True)
        assert d.decision == "deny", d.reason
        fake.users[oid(1)]["enabled"] = None  # Graph no longer tells
        d = tp.check("dana@example.com", "az", write, VM, fresh=True)
        assert d.decision == "unknown", d.reason
        assert "User.Read.All" in d.reason


def test_names_and_wildcards_compare_without_case(tp: Toolpass) -> None:
    assert tp.check(
        "erin@example.com", "az", "microsoft.compute/VIRTUALMACHINES/READ", VM.upper()
    ).allowed
    d = tp.check("dana@example.com", "az", "Microsoft.Authorization/roleAssignments/delete", VM)
    assert d.decision == "deny", d.reason


def test_a_deny_excluding_the_user_or_their_group_does_not_deny(
    tp: Toolpass, fake: FakeAzure
) -> None:
    everyone = "00000000-0000-0000-0000-000000000000"
    fake.deny(RG, ["Microsoft.Compute/*"], [everyone], exclude=[(ENGINEERS, "Group")])
    assert tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM).allowed
    [asked] = fake.seen("POST", r"/v1\.0/directoryObjects/.*/checkMemberGroups")
    assert asked.json() == {"groupIds": [ENGINEERS]}
    fake.deny(SUBSCRIPTION, ["*/write"], [everyone], exclude=[(oid(2), "User")])
    fake.assign(oid(2), OWNER, RG)
    assert (
        tp.check(
            "erin@example.com", "az", "Microsoft.Network/virtualNetworks/write", RG + "/x"
        ).decision
        == "allow"
    )


def test_a_deny_for_everyone_but_others_denies(tp: Toolpass, fake: FakeAzure) -> None:
    everyone = "00000000-0000-0000-0000-000000000000"
    fake.deny(
        RG, ["Microsoft.Compute/virtualMachines/write"], [everyone], exclude=[(oid(3), "User")]
    )
    d = tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM)
    assert d.decision == "deny"
    assert "deny assignment" in d.reason


def test_a_deny_for_its_own_scope_only_spares_children(tp: Toolpass, fake: FakeAzure) -> None:
    fake.deny(RG, ["*"], [oid(1)], children=False)
    assert tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM).allowed
    assert (
        tp.check(
            "dana@example.com", "az", "Microsoft.Resources/subscriptions/resourceGroups/write", RG
        ).decision
        == "deny"
    )


def test_deny_not_actions_leave_the_rest(tp: Toolpass, fake: FakeAzure) -> None:
    fake.deny(RG, ["*"], [oid(1)], not_actions=["*/read"])
    assert tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/read", VM).allowed
    assert (
        tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM).decision
        == "deny"
    )


def test_conditions_are_unknown_unless_an_unconditional_grant_or_deny_decides(
    tp: Toolpass, fake: FakeAzure
) -> None:
    fake.deny(
        RG,
        ["Microsoft.Compute/virtualMachines/write"],
        [oid(1)],
        condition="@Request[x] StringEquals 'y'",
    )
    d = tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM)
    assert d.decision == "unknown"
    assert "conditional" in d.reason
    fake.assign(oid(5), READER, SUBSCRIPTION)
    d = tp.check(
        "hank@example.com",
        "az",
        "Microsoft.Storage/storageAccounts/blobServices/containers/read",
        CONTAINER,
    )
    assert d.allowed, d.reason
    d = tp.check("hank@example.com", "az", BLOBS, CONTAINER)
    assert d.decision == "unknown"
    assert "condition" in d.reason


def test_assignments_are_read_at_the_scope_with_the_documented_filter(
    tp: Toolpass, fake: FakeAzure
) -> None:
    tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM)
    [listed] = fake.seen(
        "GET", r"(?i).*/virtualmachines/vm1/providers/Microsoft.Authorization/roleAssignments"
    )
    assert listed.arg("$filter") == f"assignedTo('{oid(1)}')"
    assert listed.arg("api-version") == "2022-04-01"
    [denies] = fake.seen("GET", r"(?i).*/vm1/providers/Microsoft.Authorization/denyAssignments")
    assert denies.arg("$filter") == "atScope()"


def test_a_deny_for_a_group_of_the_user_denies(tp: Toolpass, fake: FakeAzure) -> None:
    fake.deny(RG, ["*/write"], [(ENGINEERS, "Group")])
    d = tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM)
    assert d.decision == "deny", d.reason
    assert tp.check(
        "frank@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM
    ).allowed


def test_an_assignment_below_the_scope_grants_nothing_there(tp: Toolpass, fake: FakeAzure) -> None:
    d = tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", RG + "x")
    assert d.decision == "deny", d.reason


def test_management_groups(tp: Toolpass, fake: FakeAzure) -> None:
    root = "/providers/Microsoft.Management/managementGroups/contoso"
    other = "/providers/Microsoft.Management/managementGroups/other"
    fake.assign(oid(2), OWNER, root)
    assert tp.check("erin@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM).allowed
    assert tp.check(
        "erin@example.com", "az", "Microsoft.Management/managementGroups/write", root
    ).allowed
    d = tp.check("erin@example.com", "az", "Microsoft.Management/managementGroups/write", other)
    assert d.decision == "unknown", d.reason
    assert "management group" in d.reason


def test_pages_are_followed_and_definitions_kept(fake: FakeAzure) -> None:
    fake.page_size = 1
    for _ in range(3):
        fake.assign(oid(1), READER, f"{SUBSCRIPTION}/resourceGroups/other")
    with Toolpass([conn(fake, cache_ttl_allow=0, permission_cache_ttl=0)]) as tp:
        for _ in range(2):
            assert tp.check(
                "erin@example.com", "az", "Microsoft.Compute/virtualMachines/read", VM
            ).allowed
    assert len(fake.seen("GET", r"(?i).*/roleDefinitions/.*")) == 1


def test_a_next_link_to_another_host_is_unknown(tp: Toolpass, fake: FakeAzure) -> None:
    def evil(request: Any) -> dict[str, Any]:
        return {"value": [], "nextLink": "https://evil.example/steal"}

    fake.add(
        "GET", r"(?i)/subscriptions/[^/]+/providers/Microsoft.Authorization/roleAssignments", evil
    )
    fake._routes.insert(0, fake._routes.pop())  # before the fake's own list

    d = tp.check("erin@example.com", "az", "Microsoft.Compute/virtualMachines/read", SUBSCRIPTION)
    assert d.decision == "unknown"
    assert "another host" in d.reason


def test_the_email_lookup_is_exact(tp: Toolpass, fake: FakeAzure) -> None:
    fake.add_user(9, "guest", upn="guest_example.com#EXT#@contoso.onmicrosoft.com")
    fake.assign(oid(9), READER, SUBSCRIPTION)
    assert tp.check("guest@example.com", "az", "Microsoft.Compute/virtualMachines/read", VM).allowed
    d = tp.check("nobody@example.com", "az", "Microsoft.Compute/virtualMachines/read", VM)
    assert d.decision == "unknown"


def test_tokens_are_taken_once_per_api_and_again_when_rejected(
    tp: Toolpass, fake: FakeAzure
) -> None:
    assert tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM).allowed
    tokens = fake.seen("POST", r"/.*/oauth2/v2\.0/token")
    assert sorted(r.body.decode().split("scope=")[1].split("&")[0] for r in tokens) == [
        "https%3A%2F%2Fgraph.microsoft.com%2F.default",
        "https%3A%2F%2Fmanagement.azure.com%2F.default",
    ]
    fake.tokens.clear()  # revoked
    assert tp.check("erin@example.com", "az", "Microsoft.Compute/virtualMachines/read", VM).allowed
    assert len(fake.seen("POST", r"/.*/oauth2/v2\.0/token")) == 4


def _certificate(tmp_path: Path) -> tuple[str, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "toolpass engine")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ) + cert.public_bytes(serialization.Encoding.PEM)
    path = tmp_path / "engine.pem"
    path.write_bytes(pem)
    return f"file:{path}", key.public_key()


def test_a_certificate_signs_the_client_assertion(fake: FakeAzure, tmp_path: Path) -> None:
    secret, public = _certificate(tmp_path)
    fake.certificates[CLIENT] = public
    settings = conn(fake, auth="certificate", certificate=secret, client_secret=None)
    with Toolpass([settings]) as tp:
        d = tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM)
    assert d.allowed, d.reason
    body = fake.seen("POST", r"/.*/token")[0].body.decode()
    assert (
        "client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"
        in body
    )
    assert "client_secret" not in body


def test_a_workload_identity_reads_its_federated_token(fake: FakeAzure, tmp_path: Path) -> None:
    token_file = tmp_path / "azure-identity-token"
    token_file.write_text("federated-" + uuid.uuid4().hex)
    fake.federated.add(token_file.read_text())
    settings = conn(fake, auth="workload_identity", federated_token_file=str(token_file))
    with Toolpass([settings]) as tp:
        assert tp.check(
            "dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM
        ).allowed
        token_file.unlink()
    with Toolpass([settings]) as tp:
        d = tp.check("dana@example.com", "az", "Microsoft.Compute/virtualMachines/write", VM)
    assert d.decision == "unknown"
    assert "federated token file" in d.reason


def test_a_resource_or_action_that_is_not_azures_is_unknown_unasked(
    tp: Toolpass, fake: FakeAzure
) -> None:
    before = len(fake.requests)
    for action, resource in [
        ("Microsoft.Compute/virtualMachines/read", "vm1"),
        ("Microsoft.Compute/virtualMachines/read", "/subscriptions/x/../y"),
        ("Microsoft.Compute/*", VM),
        ("{namespace}/{types}/read", VM),
    ]:
        assert tp.check("dana@example.com", "az", action, resource).decision == "unknown"
    assert len(fake.requests) == before


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"auth": "certificate"}, "certificate"),
        ({"auth": "workload_identity"}, "federated_token_file"),
        ({"client_secret": None}, "client_secret"),
        ({"permission_cache_ttl": -1.0}, "permission_cache_ttl"),
        ({"url": "https://management.azure.com", "cloud": "AzureUSGovernment"}, "url"),
        ({"authority_host": "http://login.example.com"}, "authority_host"),
    ],
)
def test_bad_settings_are_refused(fake: FakeAzure, extra: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        Toolpass([conn(fake, **extra)])
    assert key in str(info.value)


def test_the_catalog_names_the_least_privileged_credential() -> None:
    description = get("azure").description
    assert "Reader" in description
    assert "Microsoft.Authorization/*/read" in description


# --- azure-identity and azure-mgmt-authorization, over TLS, through the request hook -------
@pytest.fixture
def tls(tmp_path: Path) -> Iterator[tuple[FakeAzure, str]]:
    certs = make_certs(tmp_path)
    with FakeAzure(tls=(certs.cert_file, certs.key_file)) as server:
        yield populate(server), certs.ca_file


class _Client:
    """azure-identity's ClientSecretCredential at the fake authority, and the authorization
    client on the fake Resource Manager (both trusting the test CA)."""

    def __init__(self, fake: FakeAzure, ca_file: str) -> None:
        from azure.core.pipeline.transport import RequestsTransport
        from azure.identity import ClientSecretCredential
        from azure.mgmt.authorization import AuthorizationManagementClient

        credential = ClientSecretCredential(
            TENANT,
            CLIENT,
            "azure-client-secret-1",
            authority=fake.url,
            disable_instance_discovery=True,
            transport=RequestsTransport(connection_verify=ca_file),
        )
        # Signed in before the tool runs: the authority is another host in Azure.
        credential.get_token("https://management.azure.com/.default")
        self.api = AuthorizationManagementClient(
            credential,
            SUB,
            base_url=fake.url,
            transport=RequestsTransport(connection_verify=ca_file),
        )

    def grant(self) -> str:
        from azure.mgmt.authorization.models import RoleAssignmentCreateParameters

        made = self.api.role_assignments.create(
            RG,
            str(uuid.uuid4()),
            RoleAssignmentCreateParameters(role_definition_id=READER, principal_id=oid(2)),
        )
        return str(made.principal_id)

    def listing(self) -> int:
        return len(list(self.api.role_assignments.list_for_scope(RG)))


@pytest.fixture
def kit(tls: tuple[FakeAzure, str]) -> Iterator[tuple[Toolkit, list[Any], _Client]]:
    fake, ca_file = tls
    events: list[Any] = []
    engine = Toolpass([conn(fake, ca_file=ca_file)])
    client = _Client(fake, ca_file)
    yield Toolkit(permissions=engine, audit=[events.append]), events, client
    intercept.uninstall()
    engine.close()


def test_azure_identity_signs_in_at_the_fake_authority(tls: tuple[FakeAzure, str]) -> None:
    fake, ca_file = tls
    assert _Client(fake, ca_file).listing() >= 1
    assert fake.seen("GET", r"/.*/v2\.0/\.well-known/openid-configuration")


def test_the_hook_lets_an_allowed_grant_through(
    kit: tuple[Toolkit, list[Any], _Client], tls: tuple[FakeAzure, str]
) -> None:
    toolkit, events, client = kit
    grant = toolkit.tool()(client.grant)
    with Session("frank@example.com").active():
        assert grant() == oid(2)
    [sent] = tls[0].seen("PUT", r"(?i).*/roleAssignments/.*")
    [action] = events[-1].actions
    assert action["action"] == "Microsoft.Authorization/roleAssignments/write"
    assert action["resource"] == sent.path.lower()


def test_the_hook_refuses_a_grant_before_it_is_sent(
    kit: tuple[Toolkit, list[Any], _Client], tls: tuple[FakeAzure, str]
) -> None:
    toolkit, events, client = kit
    grant = toolkit.tool()(client.grant)
    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        grant()
    assert tls[0].seen("PUT") == []
    [action] = events[-1].actions
    assert action["verdict"] == "not_authorized"


def test_the_hook_checks_a_list_as_a_read_of_its_scope(
    kit: tuple[Toolkit, list[Any], _Client],
) -> None:
    toolkit, events, client = kit
    listing = toolkit.tool()(client.listing)
    with Session("erin@example.com").active():
        assert listing() >= 1
    [action] = events[-1].actions
    assert action["action"] == "Microsoft.Authorization/roleAssignments/read"
    assert action["resource"] == RG.lower()


class TestAzureConformance(IntegrationConformance):
    integration = "azure"
    user, action, resource = "dana@example.com", "Microsoft.Compute/virtualMachines/write", VM
    system_user, template = oid(1), None
    credential = "azure-client-secret-1"

    @pytest.fixture
    def api(self, fake: FakeAzure) -> FakeAzure:
        return fake

    def error_body(self, text: str) -> Any:
        return {"error": {"code": "AuthorizationFailed", "message": text}}

    def connection(self, api: FakeAzure, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    unsupported: ClassVar[dict[str, str]] = {
        "make_read_only": "resource locks (ReadOnly, CanNotDelete) are a Limit toolpass "
        "does not read",
    }

    def disable_account(self, api: FakeAzure) -> None:
        api.users[oid(1)]["enabled"] = False

    def bind_admins(self, api: FakeAzure) -> None:
        api.assign(oid(1), OWNER, f"/subscriptions/{SUB}")
        api.deny(RG, ["*"], [oid(1)])  # a deny assignment binds Owners too

    def revoke(self, api: FakeAzure) -> None:
        api.assignments[:] = [
            a for a in api.assignments if a["properties"]["principalId"] != ENGINEERS
        ]
