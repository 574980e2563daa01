"""Salesforce: UserRecordAccess and ObjectPermissions against a fake org, simple-salesforce
against the same fake, and the request hook."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from fakes.salesforce import (
    ACME,
    DANA,
    ENGINE,
    ENGINE_TOKEN,
    RORY,
    FakeSalesforce,
    populate,
)
from fakes.tls import make_certs
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, served

from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import ConfigError, literal
from toolpass.intercept import ActionRefused

RECORD = f"record:Account/{ACME}"
QUERY = r".*/query/?"


fake = served(FakeSalesforce, populate)
conn = connection(id="sf", integration="salesforce", access_token=literal(ENGINE_TOKEN))
tp = engine(conn)


def check(tp: Toolpass, user: str, action: str, resource: str, **kw: Any) -> Any:
    return tp.check(user, "sf", action, resource, **kw)


def queries(fake: FakeSalesforce) -> list[str]:
    return [r.arg("q") or "" for r in fake.seen("GET", QUERY)]


# --- records -------------------------------------------------------------------------------
def test_record_edit_asks_user_record_access_and_object_permissions(
    tp: Toolpass, fake: FakeSalesforce
) -> None:
    d = check(tp, "dana@example.com", "record.edit", RECORD)
    assert d.decision == "allow", d.reason
    asked = queries(fake)
    assert any("FROM User WHERE Email = 'dana@example.com'" in q for q in asked)
    assert any(
        f"FROM UserRecordAccess WHERE UserId = '{DANA}' AND RecordId = '{ACME}'" in q for q in asked
    )
    assert any("FROM ObjectPermissions WHERE SobjectType = 'Account'" in q for q in asked)
    assert all(r.headers["authorization"] == f"Bearer {ENGINE_TOKEN}" for r in fake.requests)


def test_sharing_read_only_denies_edit(tp: Toolpass) -> None:
    d = check(tp, "rory@example.com", "record.edit", RECORD)
    assert d.decision == "deny"
    assert "Read access" in d.reason
    assert check(tp, "rory@example.com", "record.read", RECORD).allowed


def test_sharing_without_object_permission_denies(tp: Toolpass, fake: FakeSalesforce) -> None:
    fake.share(RORY, ACME, "All")  # sharing says yes, the profile cannot delete Accounts
    d = check(tp, "rory@example.com", "record.delete", RECORD)
    assert d.decision == "deny"
    assert "PermissionsDelete" in d.reason


def test_permission_set_grants_count(tp: Toolpass, fake: FakeSalesforce) -> None:
    fake.share(RORY, ACME, "Delete")
    fake.grant_object(RORY, "Account", "Delete", via="0PS00000000000XAAA")
    assert check(tp, "rory@example.com", "record.delete", RECORD).allowed


def test_transfer_and_share_need_their_levels(tp: Toolpass) -> None:
    assert check(tp, "dana@example.com", "record.transfer", RECORD).decision == "deny"
    assert check(tp, "dana@example.com", "record.share", RECORD).decision == "deny"


def test_a_record_salesforce_does_not_list_is_unknown_or_denied(fake: FakeSalesforce) -> None:
    missing = "record:Account/001000000000999AAA"
    with Toolpass([conn(fake)]) as tp:
        assert check(tp, "dana@example.com", "record.read", missing).decision == "unknown"
    with Toolpass([conn(fake, not_found="deny")]) as tp:
        assert check(tp, "dana@example.com", "record.read", missing).decision == "deny"


def test_restriction_rules_make_allowed_reads_unknown(fake: FakeSalesforce) -> None:
    with Toolpass([conn(fake, restriction_rules=["Account"])]) as tp:
        d = check(tp, "rory@example.com", "record.read", RECORD)
        assert d.decision == "unknown"
        assert "restriction rules" in d.reason
        assert check(tp, "rory@example.com", "record.edit", RECORD).decision == "deny"


def test_malformed_user_record_access_is_unknown(tp: Toolpass, fake: FakeSalesforce) -> None:
    fake.fail(
        200,
        body={"totalSize": 1, "done": True, "records": [{"RecordId": ACME}]},
        path=r".*/query/?",
        times=1000,
    )
    assert check(tp, "dana@example.com", "record.read", RECORD).decision == "unknown"


# --- objects and the org ---------------------------------------------------------------
def test_object_permissions(tp: Toolpass) -> None:
    assert check(tp, "dana@example.com", "object.create", "object:Account").allowed
    d = check(tp, "rory@example.com", "object.create", "object:Account")
    assert d.decision == "deny"
    assert check(tp, "dana@example.com", "object.read", "object:Contact").decision == "deny"


def test_modify_all_data(tp: Toolpass, fake: FakeSalesforce) -> None:
    assert check(tp, "dana@example.com", "org.admin", "org").decision == "deny"
    fake.permission_sets[fake.users[DANA].permission_sets[0]].modify_all_data = True
    assert check(tp, "dana@example.com", "org.admin", "org", fresh=True).allowed


def test_org_access_and_an_inactive_user(tp: Toolpass) -> None:
    assert check(tp, "dana@example.com", "org.access", "org").allowed
    d = check(tp, "olga@example.com", "record.read", RECORD)
    assert d.decision == "deny"
    assert "inactive" in d.reason


@pytest.mark.parametrize(
    ("action", "resource"),
    [("record.edit", RECORD), ("object.read", "object:Account"), ("org.access", "org")],
)
def test_a_frozen_user_is_denied_when_frozen_users_is_on(
    fake: FakeSalesforce, action: str, resource: str
) -> None:
    fake.users[DANA].frozen = True
    with Toolpass([conn(fake, frozen_users=True)]) as tp:
        d = check(tp, "dana@example.com", action, resource)
        assert d.decision == "deny", d.reason
        assert "frozen" in d.reason
        assert check(tp, "rory@example.com", "record.read", RECORD).allowed


def test_frozen_users_unread_is_unknown_and_off_is_not_asked(fake: FakeSalesforce) -> None:
    fake.users[ENGINE].manage_users = False  # the engine may not read UserLogin
    with Toolpass([conn(fake, frozen_users=True)]) as tp:
        d = check(tp, "dana@example.com", "record.edit", RECORD)
    assert d.decision == "unknown", d.reason
    assert "UserLogin" in d.reason
    with Toolpass([conn(fake)]) as tp:  # off: UserLogin is not asked
        assert check(tp, "dana@example.com", "record.edit", RECORD).allowed
    assert len([r for r in fake.seen("GET") if "UserLogin" in str(r.query)]) == 1


def test_an_inactive_user_is_denied_for_every_action(tp: Toolpass) -> None:
    for action, resource in (("object.read", "object:Account"), ("org.access", "org")):
        d = check(tp, "olga@example.com", action, resource)
        assert d.decision == "deny", d.reason


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("record.read", "object:Account"),
        ("record.read", "record:Account/bad'id"),
        ("object.read", f"record:Account/{ACME}"),
        ("object.read", "object:Acc'ount"),
        ("org.admin", "object:Account"),
        ("no.such", "org"),
    ],
)
def test_bad_resources_are_unknown_before_any_request(
    tp: Toolpass, fake: FakeSalesforce, action: str, resource: str
) -> None:
    d = check(tp, "dana@example.com", action, resource)
    assert d.decision == "unknown"
    assert fake.requests == []


# --- identity ----------------------------------------------------------------------------
def test_several_users_with_one_email_is_unknown(tp: Toolpass, fake: FakeSalesforce) -> None:
    fake.add_user("005000000000009AAA", "dana@example.com", username="dana2@example.com")
    assert check(tp, "dana@example.com", "record.read", RECORD).decision == "unknown"


def test_username_and_federation_modes(fake: FakeSalesforce) -> None:
    identity = {"mode": "federation"}
    with Toolpass([conn(fake, identity=identity)]) as tp:
        assert check(tp, "dana@example.com", "record.read", RECORD).allowed
        assert check(tp, "rory@example.com", "record.read", RECORD).decision == "unknown"
    fake.users[DANA].username = "dana@example.com"
    with Toolpass([conn(fake, identity={"mode": "username"})]) as tp:
        assert check(tp, "dana@example.com", "record.read", RECORD).allowed


def test_a_quote_in_an_email_is_escaped(tp: Toolpass, fake: FakeSalesforce) -> None:
    fake.add_user("005000000000008AAA", "o'brien@example.com")
    fake.grant_object("005000000000008AAA", "Account", "Read")
    assert check(tp, "o'brien@example.com", "object.read", "object:Account").allowed
    assert any("Email = 'o\\'brien@example.com'" in q for q in queries(fake))


def test_unknown_user_is_unknown(tp: Toolpass) -> None:
    assert check(tp, "nobody@example.com", "record.read", RECORD).decision == "unknown"


# --- auth, paging, probe, config --------------------------------------------------------------
def test_client_credentials_token_is_fetched_cached_and_replaced_once(
    fake: FakeSalesforce,
) -> None:
    settings = conn(
        fake,
        auth="client_credentials",
        client_id="client-1",
        client_secret=literal("client-secret"),
    )
    del settings["access_token"]
    with Toolpass([settings]) as tp:
        assert check(tp, "dana@example.com", "record.edit", RECORD).allowed
        assert len(fake.seen("POST", r"/services/oauth2/token")) == 1
        fake.tokens = {t: u for t, u in fake.tokens.items() if not t.startswith("00D!")}
        assert check(tp, "rory@example.com", "record.read", RECORD).allowed
        assert len(fake.seen("POST", r"/services/oauth2/token")) == 2
    settings["client_secret"] = literal("wrong-secret")
    with Toolpass([settings]) as tp:
        d = check(tp, "dana@example.com", "record.edit", RECORD)
        assert d.decision == "unknown"
        assert "invalid client credentials" in d.reason
        assert "wrong-secret" not in d.reason


def test_concurrent_checks_fetch_one_client_credentials_token(fake: FakeSalesforce) -> None:
    """Checks that start together while no token is held wait for one fetch (the kit's
    IssuedToken): before, each fetched its own once the lock was released."""
    settings = conn(
        fake,
        auth="client_credentials",
        client_id="client-1",
        client_secret=literal("client-secret"),
    )
    del settings["access_token"]
    fake.slow(0.3, times=6, path=r"/services/oauth2/token")
    start = threading.Barrier(6)
    with Toolpass([settings]) as tp:

        def one(_: int) -> str:
            start.wait()
            return check(tp, "dana@example.com", "record.edit", RECORD, fresh=True).decision

        with ThreadPoolExecutor(6) as pool:
            decisions = list(pool.map(one, range(6)))
    assert decisions == ["allow"] * 6
    assert len(fake.seen("POST", r"/services/oauth2/token")) == 1


def test_an_issued_token_echoed_in_an_error_stays_out_of_the_reason(
    fake: FakeSalesforce,
) -> None:
    settings = conn(
        fake,
        auth="client_credentials",
        client_id="client-1",
        client_secret=literal("client-secret"),
    )
    del settings["access_token"]
    with Toolpass([settings]) as tp:
        assert check(tp, "dana@example.com", "record.edit", RECORD).allowed
        (issued,) = (t for t in fake.tokens if t.startswith("00D!"))
        echo = [{"message": f"session {issued} is locked", "errorCode": "LOCKED"}]
        fake.fail(500, body=echo, path=r".*/query")
        d = check(tp, "rory@example.com", "record.read", RECORD, fresh=True)
        assert d.decision == "unknown"
        assert "is locked" in d.reason
        assert issued not in d.reason


def test_query_pages_are_followed(tp: Toolpass, fake: FakeSalesforce) -> None:
    fake.page_size = 1
    fake.grant_object(DANA, "Contact", "Read", via="0PS00000000000YAAA")
    fake.grant_object(DANA, "Contact", "Edit", via="0PS00000000000ZAAA")
    assert check(tp, "dana@example.com", "object.edit", "object:Contact").allowed
    assert fake.seen("GET", r".*/query/01g.*")


def test_probe(fake: FakeSalesforce) -> None:
    with Toolpass([conn(fake)]) as tp:
        (result,) = tp.probe().values()
    assert result.ok, result.detail
    assert "engine@example.com" in result.detail
    fake.users[ENGINE].view_setup = False
    with Toolpass([conn(fake)]) as tp:
        (result,) = tp.probe().values()
    assert not result.ok
    assert "View Setup and Configuration" in result.detail


def test_without_view_setup_checks_are_unknown(tp: Toolpass, fake: FakeSalesforce) -> None:
    fake.users[ENGINE].view_setup = False
    d = check(tp, "dana@example.com", "object.read", "object:Account")
    assert d.decision == "unknown"
    assert "INVALID_TYPE" in d.reason


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"auth": "client_credentials"}, "client_id"),
        ({"api_version": "sixty"}, "api_version"),
        ({"restriction_rules": ["bad name"]}, "restriction_rules"),
    ],
)
def test_configuration_errors_name_the_key(extra: dict[str, Any], key: str) -> None:
    settings = {
        "id": "sf",
        "integration": "salesforce",
        "url": "https://acme.my.salesforce.com",
        "access_token": literal("t"),
        **extra,
    }
    with pytest.raises(ConfigError) as info:
        Toolpass([settings])
    assert key in str(info.value)


def test_tls_with_a_private_ca(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    with FakeSalesforce(tls=(certs.cert_file, certs.key_file)) as fake:
        populate(fake)
        with Toolpass([conn(fake, ca_file=certs.ca_file)]) as tp:
            assert check(tp, "dana@example.com", "record.edit", RECORD).allowed


# --- simple-salesforce, and the request hook ----------------------------------------------
@pytest.fixture
def tls_fake(tmp_path: Path) -> Iterator[tuple[FakeSalesforce, str]]:
    certs = make_certs(tmp_path)
    with FakeSalesforce(tls=(certs.cert_file, certs.key_file)) as server:
        yield populate(server), str(certs.ca_file)


def simple(fake: FakeSalesforce, ca_file: str, token: str = ENGINE_TOKEN) -> Any:
    simple_salesforce = pytest.importorskip("simple_salesforce")
    session = requests.Session()
    session.trust_env = False  # a CA bundle in the environment would override verify
    session.verify = ca_file
    return simple_salesforce.Salesforce(
        instance_url=fake.url, session_id=token, session=session, version="62.0"
    )


def test_simple_salesforce_reads_the_fake(tls_fake: tuple[FakeSalesforce, str]) -> None:
    fake, ca = tls_fake
    sf = simple(fake, ca)
    answer = sf.query(f"SELECT Id, IsActive FROM User WHERE Id = '{DANA}'")
    assert answer["totalSize"] == 1
    assert answer["records"][0]["IsActive"] is True
    access = sf.query(
        "SELECT RecordId, HasReadAccess, HasEditAccess, HasDeleteAccess, HasTransferAccess, "
        f"HasAllAccess, MaxAccessLevel FROM UserRecordAccess WHERE UserId = '{RORY}' AND "
        f"RecordId = '{ACME}'"
    )
    assert access["records"][0]["MaxAccessLevel"] == "Read"
    assert sf.Account.get(ACME)["Name"] == "Acme"
    fake.page_size = 1
    fake.add_record("001000000000002AAA", "Account", Name="Globex")
    assert len(sf.query_all("SELECT Id, Name FROM Account")["records"]) == 2
    bad = simple(fake, ca, token="not-a-token")
    exceptions = pytest.importorskip("simple_salesforce.exceptions")
    with pytest.raises(exceptions.SalesforceExpiredSession):
        bad.query("SELECT Id FROM Account")


@pytest.fixture
def kit(tls_fake: tuple[FakeSalesforce, str]) -> Iterator[Toolkit]:
    fake, ca = tls_fake
    engine = Toolpass([conn(fake, ca_file=ca)])
    yield Toolkit(permissions=engine)
    intercept.uninstall()
    engine.close()


def test_the_request_hook_lets_an_allowed_edit_through_and_refuses_another(
    kit: Toolkit, tls_fake: tuple[FakeSalesforce, str]
) -> None:
    fake, ca = tls_fake
    fake.add_token("00D000000000001!tool-token", DANA)

    @kit.tool()
    def rename(name: str) -> str:
        sf = simple(fake, ca, token="00D000000000001!tool-token")
        sf.Account.update(ACME, {"Name": name})
        return "renamed"

    def patches() -> list[Any]:
        return fake.seen("PATCH", r".*/sobjects/Account/.*")

    with Session("dana@example.com").active():
        assert rename("Acme Corp") == "renamed"
    assert len(patches()) == 1
    assert fake.records[ACME]["Name"] == "Acme Corp"
    with Session("rory@example.com").active(), pytest.raises(ActionRefused) as info:
        rename("Evil Corp")
    assert f"record.edit on {RECORD}" in info.value.message
    assert len(patches()) == 1  # never reached Salesforce
    assert fake.records[ACME]["Name"] == "Acme Corp"


def test_the_request_hook_refuses_a_frozen_users_edit(
    tls_fake: tuple[FakeSalesforce, str],
) -> None:
    fake, ca = tls_fake
    fake.add_token("00D000000000001!tool-token", DANA)
    fake.users[DANA].frozen = True
    engine = Toolpass([conn(fake, ca_file=ca, frozen_users=True)])
    kit = Toolkit(permissions=engine)

    @kit.tool()
    def rename(name: str) -> str:
        sf = simple(fake, ca, token="00D000000000001!tool-token")
        sf.Account.update(ACME, {"Name": name})
        return "renamed"

    try:
        with Session("dana@example.com").active(), pytest.raises(ActionRefused) as info:
            rename("Acme Corp")
    finally:
        intercept.uninstall()
        engine.close()
    assert info.value.code == "not_authorized"
    assert fake.seen("PATCH", r".*/sobjects/Account/.*") == []
    assert fake.records[ACME]["Name"] == "Acme"


def test_the_request_hook_checks_a_soql_query_by_its_object(
    kit: Toolkit, tls_fake: tuple[FakeSalesforce, str]
) -> None:
    """A query sent with the agent's token answers every record the agent sees: it needs
    View All Records on its object; Read on the object (sharing decides which records) does
    not pass, and the query never reaches Salesforce."""
    fake, ca = tls_fake
    fake.add_token("00D000000000001!tool-token", DANA)
    fake.grant_object(DANA, "Account", "ViewAllRecords")

    @kit.tool()
    def names(soql: str) -> int:
        return int(simple(fake, ca, "00D000000000001!tool-token").query(soql)["totalSize"])

    with Session("dana@example.com").active():
        assert names("SELECT Id, Name FROM Account") == 1
        with pytest.raises(ActionRefused):
            names("SELECT Id FROM Contact")
    with Session("rory@example.com").active(), pytest.raises(ActionRefused) as info:
        names("SELECT Id, Name FROM Account WHERE Name != null")  # Rory has Read only
    assert info.value.code == "not_authorized"
    assert "SELECT Id FROM Contact" not in queries(fake)  # never reached Salesforce
    assert "SELECT Id, Name FROM Account WHERE Name != null" not in queries(fake)
    assert "SELECT Id, Name FROM Account" in queries(fake)


# --- the shared conformance suite ----------------------------------------------------------
class TestSalesforceConformance(IntegrationConformance):
    integration = "salesforce"
    user, action, resource = "dana@example.com", "record.edit", RECORD
    system_user, template = DANA, None
    credential = ENGINE_TOKEN

    @pytest.fixture
    def api(self, fake: FakeSalesforce) -> FakeSalesforce:
        return fake

    def connection(self, api: FakeSalesforce, **extra: Any) -> dict[str, Any]:
        return conn(api, **{"frozen_users": True, **extra})

    unsupported = {
        "make_read_only": "a Salesforce record's read-only states (a locked approval, a "
        "closed period) are not read: see docs/permissions/salesforce.md, Limits",
    }

    def disable_account(self, api: FakeSalesforce) -> None:
        api.users[DANA].frozen = True

    def bind_admins(self, api: FakeSalesforce) -> None:
        api.permission_sets[api.users[DANA].permission_sets[0]].modify_all_data = True
        api.users[DANA].active = False  # an inactive administrator signs in no more

    def revoke(self, api: FakeSalesforce) -> None:
        api.access.pop((DANA, ACME))
