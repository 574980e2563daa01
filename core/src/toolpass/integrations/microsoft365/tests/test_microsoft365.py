"""The Microsoft 365 integration, through ``Toolpass``, against a fake Entra ID and Graph on
127.0.0.1; and the request hook under msgraph-sdk (httpx) and requests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import requests
from fakes.azure import CLIENT, ENGINEERS, SECRET, TENANT, oid
from fakes.microsoft365 import (
    CHAT,
    DANA_DRIVE,
    DRIVE,
    GROUP,
    PRIVATE,
    SALES,
    STANDARD,
    TEAM,
    FakeGraph,
    populate,
)
from fakes.tls import make_certs
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, environment, served

from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.intercept import ActionRefused

PLAN = f"drives/{DRIVE}/items/plan"
BUDGET = f"drives/{DRIVE}/items/budget"


fake = served(FakeGraph, populate)
secrets = environment(M365_SECRET=SECRET)
conn = connection(
    id="m365",
    integration="microsoft365",
    tenant_id=TENANT,
    client_id=CLIENT,
    client_secret="env:M365_SECRET",
    identity={"mode": "email"},
    urls=("authority_host",),
)
tp = engine(conn)


@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("dana", "files.write", PLAN, "allow"),
        ("dana", "files.permissions", PLAN, "deny"),
        ("erin", "files.read", PLAN, "deny"),
        ("frank", "files.read", PLAN, "allow"),
        ("frank", "files.write", PLAN, "deny"),
        ("hank", "files.write", PLAN, "allow"),
        ("hank", "files.permissions", PLAN, "deny"),
        ("erin", "files.read", f"drives/{DRIVE}/items/notes", "allow"),
        ("dana", "files.read", f"drives/{DRIVE}/items/notes", "deny"),
        ("dana", "files.write", BUDGET, "unknown"),
        ("dana", "files.permissions", BUDGET, "unknown"),
        ("dana", "files.permissions", f"drives/{DANA_DRIVE}/items/diary", "allow"),
        ("erin", "files.read", f"drives/{DANA_DRIVE}/items/diary", "deny"),
        ("dana", "files.read", f"drives/{DRIVE}/root:/docs/plan.docx:/content", "allow"),
        ("dana", "files.write", f"drives/{DRIVE}/items/folder:/new.txt:/content", "allow"),
        ("erin", "files.write", f"drives/{DRIVE}/items/folder:/new.txt:/content", "deny"),
        ("dana", "files.read", "shares/u!shared-plan", "allow"),
        ("gail", "files.read", PLAN, "deny"),
        ("dana", "mailbox.send", "users/dana@example.com", "allow"),
        ("dana", "mailbox.read", f"users/{oid(1)}", "allow"),
        ("dana", "mailbox.read", "users/erin@example.com", "unknown"),
        ("dana", "teams.manage", f"teams/{TEAM}", "allow"),
        ("erin", "teams.manage", f"teams/{TEAM}", "deny"),
        ("erin", "teams.post", f"teams/{TEAM}/channels/{STANDARD}", "allow"),
        ("frank", "teams.read", f"teams/{TEAM}", "deny"),
        ("erin", "teams.read", f"teams/{TEAM}/channels/{PRIVATE}", "deny"),
        ("dana", "teams.post", f"teams/{TEAM}/channels/{PRIVATE}", "allow"),
        ("guest", "teams.post", f"teams/{TEAM}/channels/{STANDARD}", "allow"),
        ("erin", "chats.post", f"chats/{CHAT}", "allow"),
        ("frank", "chats.read", f"chats/{CHAT}", "deny"),
        ("dana", "groups.read", f"groups/{GROUP}", "allow"),
        ("erin", "groups.read", f"groups/{GROUP}", "deny"),
        ("dana", "groups.manage", f"groups/{GROUP}", "allow"),
        ("hank", "groups.manage", f"groups/{SALES}", "deny"),
        ("dana", "sites.read", "sites/contoso.sharepoint.com,1,2", "unknown"),
        ("dana", "tenant.read", "tenant", "allow"),
        ("dana", "tenant.search", "tenant", "unknown"),
        ("dana", "mailbox.read", "me", "unknown"),
        ("dana", "files.read", "me/drive/root", "unknown"),
        ("guest", "tenant.read", "tenant", "deny"),
        ("frank", "tenant.admin", "tenant", "allow"),
        ("dana", "tenant.admin", "tenant", "deny"),
    ],
)
def test_grants_memberships_and_roles_decide(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = tp.check(f"{user}@example.com", "m365", action, resource)
    assert d.decision == decision, d.reason


def test_a_disabled_account_is_denied_and_an_untold_state_is_unknown(fake: FakeGraph) -> None:
    plan = f"drives/{DRIVE}/items/plan"
    users = {"dana@example.com": oid(1)}
    with Toolpass([conn(fake, identity={"mode": "users", "users": users})]) as tp:
        assert tp.check("dana@example.com", "m365", "files.write", plan).allowed
        fake.users[oid(1)]["enabled"] = None  # read without User.Read.All
        d = tp.check("dana@example.com", "m365", "files.write", plan, fresh=True)
        assert d.decision == "unknown", d.reason
        fake.users[oid(1)]["enabled"] = False
        d = tp.check("dana@example.com", "m365", "files.write", plan, fresh=True)
        assert d.decision == "deny", d.reason
        assert "disabled" in d.reason


def test_an_archived_team_takes_no_posts(tp: Toolpass, fake: FakeGraph) -> None:
    team = f"teams/{TEAM}"
    assert tp.check("dana@example.com", "m365", "teams.post", team).allowed
    fake.archived.add(TEAM)  # archived: read-only for everyone, owners included
    d = tp.check("dana@example.com", "m365", "teams.post", team, fresh=True)
    assert d.decision == "deny", d.reason
    assert tp.check("dana@example.com", "m365", "teams.read", team).allowed


def test_groups_are_asked_with_check_member_groups(tp: Toolpass, fake: FakeGraph) -> None:
    """hank is in no group the item names, but in SALES, which owns the drive."""
    assert tp.check("hank@example.com", "m365", "files.write", PLAN).allowed
    asked = fake.seen("POST", r"/v1\.0/directoryObjects/.*/checkMemberGroups")
    assert [a.json() for a in asked] == [{"groupIds": [ENGINEERS.lower()]}, {"groupIds": [SALES]}]


def test_permissions_are_read_page_by_page_and_kept(fake: FakeGraph) -> None:
    fake.page_size = 1
    with Toolpass([conn(fake, cache_ttl_allow=0)]) as tp:
        assert tp.check("frank@example.com", "m365", "files.read", PLAN).allowed
        assert tp.check("frank@example.com", "m365", "files.read", PLAN).allowed
    assert len(fake.seen("GET", r"/v1\.0/.*/plan/permissions")) == 3


def test_a_missing_item_is_unknown_or_deny_as_configured(fake: FakeGraph) -> None:
    with Toolpass([conn(fake)]) as tp:
        d = tp.check("dana@example.com", "m365", "files.read", f"drives/{DRIVE}/items/gone")
        assert d.decision == "unknown"
        assert "404" in d.reason
    with Toolpass([conn(fake, not_found="deny")]) as tp:
        d = tp.check("dana@example.com", "m365", "files.read", f"drives/{DRIVE}/items/gone")
        assert d.decision == "deny"


def test_the_email_lookup_is_exact(tp: Toolpass, fake: FakeGraph) -> None:
    fake.add_user(9, "guest2", upn="guest2_example.com#EXT#@contoso.onmicrosoft.com")
    fake.teams[TEAM][oid(9)] = []
    assert tp.check("guest2@example.com", "m365", "teams.read", f"teams/{TEAM}").allowed
    assert (
        tp.check("nobody@example.com", "m365", "teams.read", f"teams/{TEAM}").decision == "unknown"
    )


def test_only_graph_tokens_are_taken(tp: Toolpass, fake: FakeGraph) -> None:
    assert tp.check("dana@example.com", "m365", "files.write", PLAN).allowed
    [token] = fake.seen("POST", r"/.*/oauth2/v2\.0/token")
    assert "scope=https%3A%2F%2Fgraph.microsoft.com%2F.default" in token.body.decode()


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("files.read", "drives/../x/items/y"),
        ("files.read", "teams/t"),
        ("teams.read", f"chats/{CHAT}"),
        ("groups.read", "groups/not-a-guid"),
        ("tenant.read", "tenant/x"),
        ("nosuch.read", "tenant"),
    ],
)
def test_a_resource_of_the_wrong_shape_is_unknown_unasked(
    tp: Toolpass, fake: FakeGraph, action: str, resource: str
) -> None:
    before = len(fake.requests)
    assert tp.check("dana@example.com", "m365", action, resource).decision == "unknown"
    assert len(fake.requests) == before


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"admin_roles": ["x"]}, "admin_roles"),
        ({"client_secret": None}, "client_secret"),
        ({"url": "https://graph.microsoft.com", "cloud": "AzureChinaCloud"}, "url"),
        ({"permission_cache_ttl": -1.0}, "permission_cache_ttl"),
    ],
)
def test_bad_settings_are_refused(fake: FakeGraph, extra: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        Toolpass([conn(fake, **extra)])
    assert key in str(info.value)


def test_the_catalog_names_the_least_privileged_credential() -> None:
    description = get("microsoft365").description
    assert "Files.Read.All" in description
    assert "GroupMember.Read.All" in description


# --- the request hook: requests, and msgraph-sdk over TLS ----------------------------------
@pytest.fixture
def kit(fake: FakeGraph) -> Iterator[tuple[Toolkit, list[Any], str]]:
    events: list[Any] = []
    engine = Toolpass([conn(fake)])
    token = "eyJ0eXAi.graph.client"
    fake.tokens[token] = "https://graph.microsoft.com"
    yield Toolkit(permissions=engine, audit=[events.append]), events, token
    intercept.uninstall()
    engine.close()


def test_the_hook_lets_an_allowed_upload_through(
    kit: tuple[Toolkit, list[Any], str], fake: FakeGraph
) -> None:
    toolkit, events, token = kit
    url = f"{fake.url}/v1.0/drives/{DRIVE}/items/folder:/new.txt:/content"

    @toolkit.tool()
    def upload() -> int:
        answer = requests.put(url, data=b"hello", headers={"Authorization": f"Bearer {token}"})
        return answer.status_code

    with Session("dana@example.com").active():
        assert upload() == 201
    assert fake.files[f"drives/{DRIVE}/items/folder/new.txt"] == b"hello"
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == (
        "files.write",
        f"drives/{DRIVE}/items/folder:/new.txt:/content",
    )


def test_the_hook_refuses_mail_from_another_mailbox_before_it_is_sent(
    kit: tuple[Toolkit, list[Any], str], fake: FakeGraph
) -> None:
    toolkit, events, token = kit
    url = f"{fake.url}/v1.0/users/erin@example.com/sendMail"

    @toolkit.tool()
    def send() -> int:
        message = {"message": {"subject": "hi", "toRecipients": []}}
        return requests.post(
            url, json=message, headers={"Authorization": f"Bearer {token}"}
        ).status_code

    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        send()
    assert fake.seen("POST", r"/v1\.0/users/.*/sendMail") == []
    [action] = events[-1].actions
    assert action["action"] == "mailbox.send"


@pytest.mark.parametrize("own_tokens", ["unknown", "user"])
def test_the_hook_checks_what_the_sending_account_holds_and_lets_its_profile_go(
    fake: FakeGraph, own_tokens: str
) -> None:
    """/me/sendMail sends from, and /search/query answers with, the sending token's account:
    refused before they leave unless the agent sends each user's own token (own_tokens:
    user); the account's own profile (GET /me) goes either way."""
    import httpx

    token = "eyJ0eXAi.graph.client"
    fake.tokens[token] = "https://graph.microsoft.com"
    engine = Toolpass([conn(fake, own_tokens=own_tokens)])
    toolkit = Toolkit(permissions=engine)

    @toolkit.tool()
    def call(method: str, path: str, body: dict[str, Any] | None = None) -> int:
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as client:
            return client.request(method, f"{fake.url}/v1.0{path}", json=body).status_code

    mail = {"message": {"subject": "hi", "toRecipients": []}}
    search = {"requests": [{"entityTypes": ["driveItem"], "query": {"queryString": "budget"}}]}
    try:
        with Session("dana@example.com").active():
            assert "200" in str(call("GET", "/me"))
            if own_tokens == "user":
                assert "202" in str(call("POST", "/me/sendMail", mail))
                assert "200" in str(call("POST", "/search/query", search))
                return
            for path, body in (("/me/sendMail", mail), ("/search/query", search)):
                with pytest.raises(ActionRefused) as info:
                    call("POST", path, body)
                assert info.value.code == "authorization_error"
        assert fake.seen("POST", r"/v1\.0/(me/sendMail|search/query)") == []
    finally:
        intercept.uninstall()
        engine.close()


@pytest.fixture
def tls(tmp_path: Path) -> Iterator[tuple[FakeGraph, str]]:
    certs = make_certs(tmp_path)
    with FakeGraph(tls=(certs.cert_file, certs.key_file)) as server:
        yield populate(server), certs.ca_file


def _graph_client(fake: FakeGraph, ca_file: str) -> Any:
    """msgraph-sdk's GraphServiceClient signed in with azure-identity at the fake authority,
    its Graph base URL the fake's (a host the auth provider is allowed to send tokens to)."""
    import ssl

    import httpx
    from azure.core.pipeline.transport import RequestsTransport
    from azure.identity import ClientSecretCredential
    from kiota_authentication_azure.azure_identity_authentication_provider import (
        AzureIdentityAuthenticationProvider,
    )
    from msgraph import GraphRequestAdapter, GraphServiceClient

    credential = ClientSecretCredential(
        TENANT,
        CLIENT,
        SECRET,
        authority=fake.url,
        disable_instance_discovery=True,
        transport=RequestsTransport(connection_verify=ca_file),
    )
    credential.get_token("https://graph.microsoft.com/.default")  # signed in before the tool
    auth = AzureIdentityAuthenticationProvider(
        credential, scopes=["https://graph.microsoft.com/.default"], allowed_hosts=["127.0.0.1"]
    )
    trust = ssl.create_default_context(cafile=ca_file)
    adapter = GraphRequestAdapter(auth, client=httpx.AsyncClient(verify=trust))
    adapter.base_url = f"{fake.url}/v1.0"
    return GraphServiceClient(request_adapter=adapter)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kiota's own deprecations
def test_msgraph_sdk_reads_a_file_the_user_may_read_and_is_refused_another(
    tls: tuple[FakeGraph, str],
) -> None:
    import asyncio

    fake, ca_file = tls
    events: list[Any] = []
    engine = Toolpass([conn(fake, ca_file=ca_file)])
    toolkit = Toolkit(permissions=engine, audit=[events.append])
    client = _graph_client(fake, ca_file)

    @toolkit.tool()
    async def read(item: str) -> str:
        builder = client.drives.by_drive_id(DRIVE).items.by_drive_item_id(item)
        return bytes(await builder.content.get() or b"").decode()

    async def scenario() -> None:
        item = client.drives.by_drive_id(DRIVE).items.by_drive_item_id("plan")
        assert await item.content.get() == b"the plan"  # signed in, outside any tool
        with Session("frank@example.com").active():
            assert "the plan" in await read("plan")  # wrapped as untrusted content
        [action] = events[-1].actions
        assert (action["action"], action["resource"]) == ("files.read", PLAN)
        with Session("erin@example.com").active(), pytest.raises(ActionRefused):
            await read("plan")
        await client.request_adapter._http_client.aclose()

    try:
        asyncio.run(scenario())
        assert len(fake.seen("GET", r"/v1\.0/drives/.*/content")) == 2
    finally:
        intercept.uninstall()
        engine.close()


class TestMicrosoft365Conformance(IntegrationConformance):
    integration = "microsoft365"
    user, action, resource = "dana@example.com", "files.write", PLAN
    system_user, template = oid(1), None
    credential = SECRET

    @pytest.fixture
    def api(self, fake: FakeGraph) -> FakeGraph:
        return fake

    def error_body(self, text: str) -> Any:
        return {"error": {"code": "accessDenied", "message": text}}

    def connection(self, api: FakeGraph, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    unsupported: ClassVar[dict[str, str]] = {
        "make_read_only": "a drive item's read-only states (retention labels, checkout) "
        "are Limits toolpass does not read",
        "bind_admins": "sharing permissions have no rule binding tenant admins that Graph "
        "exposes (DLP and sensitivity labels are Limits)",
    }

    def disable_account(self, api: FakeGraph) -> None:
        api.users[oid(1)]["enabled"] = False

    def revoke(self, api: FakeGraph) -> None:
        def to_dana(p: dict[str, Any]) -> bool:
            return (p.get("grantedToV2") or {}).get("user", {}).get("id") == oid(1)

        api.permissions[PLAN][:] = [p for p in api.permissions[PLAN] if not to_dana(p)]
