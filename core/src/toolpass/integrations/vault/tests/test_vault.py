"""HashiCorp Vault: sys/capabilities-accessor against a fake Vault, hvac against the same
fake, and the request hook."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from fakes.tls import make_certs
from fakes.vault import (
    DANA,
    DANA_TOKEN,
    ENGINE_TOKEN,
    ROLE_ID,
    ROOT,
    RORY,
    RORY_TOKEN,
    SECRET_ID,
    FakeVault,
    populate,
)
from pytest_toolpass import IntegrationConformance
from serving import connection, engine, served

from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import ConfigError, literal
from toolpass.intercept import ActionRefused

DB = "path:secret/data/app/db"
PEOPLE = {"dana@example.com": DANA, "rory@example.com": RORY, "root@example.com": ROOT}
CAPS = r"/v1/sys/capabilities-accessor"


fake = served(FakeVault, populate)
conn = connection(
    id="vault",
    integration="vault",
    token=literal(ENGINE_TOKEN),
    identity={"mode": "users", "users": PEOPLE},
)
tp = engine(conn)


def check(tp: Toolpass, user: str, action: str, resource: str, **kw: Any) -> Any:
    return tp.check(user, "vault", action, resource, **kw)


# --- capabilities ----------------------------------------------------------------------------
def test_read_asks_the_accessor_capabilities_on_the_path(tp: Toolpass, fake: FakeVault) -> None:
    d = check(tp, "dana@example.com", "read", DB)
    assert d.decision == "allow", d.reason
    (asked,) = fake.seen("POST", CAPS)
    assert asked.json() == {"accessor": DANA, "paths": ["secret/data/app/db"]}
    assert asked.headers["x-vault-token"] == ENGINE_TOKEN


def test_a_missing_capability_denies(tp: Toolpass) -> None:
    d = check(tp, "dana@example.com", "delete", DB)
    assert d.decision == "deny"
    assert "create, read, update" in d.reason
    assert check(tp, "rory@example.com", "update", DB).decision == "deny"


def test_deny_and_no_policy_deny(tp: Toolpass) -> None:
    d = check(tp, "dana@example.com", "read", "path:secret/data/app/admin")
    assert d.decision == "deny"
    assert "nothing" in d.reason
    assert check(tp, "rory@example.com", "read", "path:secret/data/other").decision == "deny"


def test_write_needs_create_and_update_else_unknown(tp: Toolpass) -> None:
    assert check(tp, "dana@example.com", "write", "path:secret/data/app/new").allowed
    d = check(tp, "rory@example.com", "write", "path:secret/data/team/create-only")
    assert d.decision == "unknown"
    assert "create for a new path" in d.reason
    assert check(tp, "rory@example.com", "create", "path:secret/data/team/create-only").allowed
    assert check(tp, "rory@example.com", "write", DB).decision == "deny"  # read only


def test_sudo_actions_need_sudo_too(tp: Toolpass, fake: FakeVault) -> None:
    d = check(tp, "dana@example.com", "sudo.update", "path:sys/audit/file")
    assert d.decision == "deny"
    assert "update+sudo" in d.reason
    fake.policies["app-rw"]["sys/audit/*"] = ["update", "sudo"]
    fresh = check(tp, "dana@example.com", "sudo.update", "path:sys/audit/syslog")
    assert fresh.allowed


def test_a_root_token_may_do_anything(tp: Toolpass) -> None:
    d = check(tp, "root@example.com", "sudo.delete", "path:sys/raw/core/keyring")
    assert d.allowed
    assert "root token" in d.reason


def test_constrained_paths_make_an_allow_unknown(fake: FakeVault) -> None:
    with Toolpass([conn(fake, constrained_paths=["secret/data/app/"])]) as tp:
        d = check(tp, "dana@example.com", "read", DB)
        assert d.decision == "unknown"
        assert "constrained" in d.reason
        assert check(tp, "dana@example.com", "delete", DB).decision == "deny"


def test_an_invalid_accessor_is_unknown(fake: FakeVault) -> None:
    people = {"gone@example.com": "NoSuchAccessor0000000000"}
    with Toolpass([conn(fake, identity={"mode": "users", "users": people})]) as tp:
        d = check(tp, "gone@example.com", "read", DB)
    assert d.decision == "unknown"
    assert "invalid accessor" in d.reason


def test_capabilities_are_kept_briefly(fake: FakeVault) -> None:
    with Toolpass([conn(fake, cache_ttl_allow=0, cache_ttl_deny=0)]) as tp:
        check(tp, "dana@example.com", "read", DB)
        check(tp, "dana@example.com", "update", DB)
    assert len(fake.seen("POST", CAPS)) == 1
    with Toolpass([conn(fake, cache_ttl_allow=0, cache_ttl_deny=0, capability_cache_ttl=0)]) as tp:
        check(tp, "dana@example.com", "read", DB)
        check(tp, "dana@example.com", "update", DB)
    assert len(fake.seen("POST", CAPS)) == 3


@pytest.mark.parametrize(
    "resource",
    [
        "secret/data/app/db",
        "path:",
        "path:/secret/x",
        "path:secret/../sys/raw",
        "path:a//b",
        "repo:x",
        "path:secret/data/app/db\n",
    ],
)
def test_bad_resources_are_unknown_before_any_request(
    tp: Toolpass, fake: FakeVault, resource: str
) -> None:
    d = check(tp, "dana@example.com", "read", resource)
    assert d.decision == "unknown"
    assert not fake.seen("POST", CAPS)


def test_an_identity_that_is_not_an_accessor_is_unknown(fake: FakeVault) -> None:
    people = {"dana@example.com": "not an accessor!"}
    with Toolpass([conn(fake, identity={"mode": "users", "users": people})]) as tp:
        d = check(tp, "dana@example.com", "read", DB)
    assert d.decision == "unknown"
    assert not fake.seen("POST", CAPS)


def test_unknown_capabilities_are_unknown(tp: Toolpass, fake: FakeVault) -> None:
    fake.fail(200, body={"secret/data/app/db": ["read", "teleport"]}, path=CAPS)
    d = check(tp, "dana@example.com", "read", DB)
    assert d.decision == "unknown"
    assert "teleport" in d.reason


def test_the_namespace_is_sent(fake: FakeVault) -> None:
    with Toolpass([conn(fake, namespace="team-a")]) as tp:
        check(tp, "dana@example.com", "read", DB)
    assert fake.seen("POST", CAPS)[0].headers["x-vault-namespace"] == "team-a"


def approle(fake: FakeVault, **extra: Any) -> dict[str, Any]:
    settings = conn(fake, auth="approle", role_id=ROLE_ID, secret_id=literal(SECRET_ID))
    del settings["token"]
    return {**settings, **extra}


def test_approle_logs_in_once_and_uses_its_token(fake: FakeVault) -> None:
    with Toolpass([approle(fake, cache_ttl_allow=0, capability_cache_ttl=0)]) as tp:
        assert check(tp, "dana@example.com", "read", DB).allowed
        assert check(tp, "dana@example.com", "read", DB).allowed
        (result,) = tp.probe().values()
    assert result.ok, result.detail
    (login,) = fake.seen("POST", r"/v1/auth/approle/login")
    assert login.json() == {"role_id": ROLE_ID, "secret_id": SECRET_ID}
    assert {r.headers["x-vault-token"] for r in fake.seen("POST", CAPS)} == {ENGINE_TOKEN}


def test_a_refused_approle_token_logs_in_again(fake: FakeVault) -> None:
    with Toolpass([approle(fake, cache_ttl_allow=0, capability_cache_ttl=0)]) as tp:
        assert check(tp, "dana@example.com", "read", DB).allowed
        fake.fail(403, body={"errors": ["permission denied"]}, path=CAPS)
        d = check(tp, "dana@example.com", "read", DB)
        assert d.decision == "unknown"
        assert SECRET_ID not in d.reason
        assert ENGINE_TOKEN not in d.reason
        assert check(tp, "dana@example.com", "read", DB).allowed
    assert len(fake.seen("POST", r"/v1/auth/approle/login")) == 2


def test_a_bad_secret_id_is_unknown_and_never_shown(fake: FakeVault) -> None:
    fake.approles[ROLE_ID] = ("another-secret-id", ENGINE_TOKEN)
    with Toolpass([approle(fake)]) as tp:
        d = check(tp, "dana@example.com", "read", DB)
    assert d.decision == "unknown"
    assert "invalid role or secret ID" in d.reason
    assert SECRET_ID not in d.reason


def test_probe(fake: FakeVault) -> None:
    with Toolpass([conn(fake)]) as tp:
        (result,) = tp.probe().values()
    assert result.ok, result.detail
    assert "token-toolpass" in result.detail
    fake.policies["toolpass-engine"] = {}
    with Toolpass([conn(fake)]) as tp:
        (result,) = tp.probe().values()
    assert not result.ok
    assert "sys/capabilities-accessor" in result.detail


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"token": None}, "token"),
        ({"token": None, "auth": "approle", "role_id": "r"}, "secret_id"),
        ({"approle_mount": "../x"}, "approle_mount"),
        ({"namespace": "../x"}, "namespace"),
        ({"constrained_paths": ["/abs"]}, "constrained_paths"),
        ({"capability_cache_ttl": -1}, "capability_cache_ttl"),
    ],
)
def test_configuration_errors_name_the_key(extra: dict[str, Any], key: str) -> None:
    settings = {"id": "vault", "integration": "vault", "token": literal(ENGINE_TOKEN), **extra}
    settings = {k: v for k, v in settings.items() if v is not None}
    with pytest.raises(ConfigError) as info:
        Toolpass([settings])
    assert key in str(info.value)


def test_tls_with_a_private_ca(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    with FakeVault(tls=(certs.cert_file, certs.key_file)) as fake:
        populate(fake)
        with Toolpass([conn(fake, ca_file=certs.ca_file)]) as tp:
            assert check(tp, "dana@example.com", "read", DB).allowed


# --- hvac, and the request hook -----------------------------------------------------------
@pytest.fixture
def tls_fake(tmp_path: Path) -> Iterator[tuple[FakeVault, str]]:
    certs = make_certs(tmp_path)
    with FakeVault(tls=(certs.cert_file, certs.key_file)) as server:
        yield populate(server), str(certs.ca_file)


def client(fake: FakeVault, ca_file: str, token: str) -> Any:
    hvac = pytest.importorskip("hvac")
    session = requests.Session()
    session.trust_env = False  # a CA bundle in the environment would override verify
    session.verify = ca_file
    return hvac.Client(url=fake.url, token=token, verify=ca_file, session=session)


def test_hvac_reads_the_fake(tls_fake: tuple[FakeVault, str]) -> None:
    fake, ca = tls_fake
    vault = client(fake, ca, DANA_TOKEN)
    assert vault.is_authenticated()
    assert vault.auth.token.lookup_self()["data"]["accessor"] == DANA
    secret = vault.secrets.kv.v2.read_secret_version(
        path="app/db", mount_point="secret", raise_on_deleted_version=True
    )
    assert secret["data"]["data"] == {"password": "s3cret"}
    vault.secrets.kv.v2.create_or_update_secret(path="app/new", secret={"k": "v"})
    assert fake.kv["app/new"] == {"k": "v"}
    engine = client(fake, ca, ENGINE_TOKEN)
    caps = engine.adapter.post(
        "/v1/sys/capabilities-accessor", json={"accessor": RORY, "paths": ["secret/data/app/db"]}
    )
    assert caps["capabilities"] == ["read"]
    hvac_exceptions = pytest.importorskip("hvac.exceptions")
    with pytest.raises(hvac_exceptions.Forbidden):
        client(fake, ca, RORY_TOKEN).secrets.kv.v2.create_or_update_secret(
            path="app/db", secret={"password": "stolen"}
        )


@pytest.fixture
def kit(tls_fake: tuple[FakeVault, str]) -> Iterator[Toolkit]:
    fake, ca = tls_fake
    engine = Toolpass([conn(fake, ca_file=ca)])
    yield Toolkit(permissions=engine)
    intercept.uninstall()
    engine.close()


def test_the_request_hook_lets_an_allowed_write_through_and_refuses_another(
    kit: Toolkit, tls_fake: tuple[FakeVault, str]
) -> None:
    fake, ca = tls_fake

    @kit.tool()
    def rotate(token: str, password: str) -> str:
        client(fake, ca, token).secrets.kv.v2.create_or_update_secret(
            path="app/db", secret={"password": password}
        )
        return "rotated"

    def writes() -> list[Any]:
        return fake.seen("POST", r"/v1/secret/data/.*")

    with Session("dana@example.com").active():
        assert rotate(DANA_TOKEN, "n3w") == "rotated"
    assert len(writes()) == 1
    assert fake.kv["app/db"] == {"password": "n3w"}
    with Session("rory@example.com").active(), pytest.raises(ActionRefused) as info:
        rotate(RORY_TOKEN, "evil")
    assert "write on path:secret/data/app/db" in info.value.message
    assert len(writes()) == 1  # never reached Vault
    assert fake.kv["app/db"] == {"password": "n3w"}


def test_the_request_hook_reads_a_list_query_as_list(
    kit: Toolkit, tls_fake: tuple[FakeVault, str]
) -> None:
    fake, ca = tls_fake

    @kit.tool()
    def keys(token: str) -> list[str]:  # names others wrote: marked untrusted
        session = requests.Session()
        session.trust_env = False
        answer = session.get(
            f"{fake.url}/v1/secret/metadata/app",
            params={"list": "true"},
            headers={"X-Vault-Token": token},
            verify=ca,
        )
        return list(answer.json()["data"]["keys"])

    with Session("dana@example.com").active():
        listed = str(keys(DANA_TOKEN))
    assert '["db"]' in listed
    assert "untrusted-content" in listed
    with Session("rory@example.com").active(), pytest.raises(ActionRefused) as info:
        keys(RORY_TOKEN)
    assert "list on path:secret/metadata/app" in info.value.message
    assert len(fake.seen("GET", r"/v1/secret/metadata/.*")) == 1


# --- the shared conformance suite ----------------------------------------------------------
class TestVaultConformance(IntegrationConformance):
    integration = "vault"
    user, action, resource = "dana@example.com", "read", DB
    system_user, template = DANA, None
    credential = ENGINE_TOKEN

    @pytest.fixture
    def api(self, fake: FakeVault) -> FakeVault:
        return fake

    def connection(self, api: FakeVault, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    def error_body(self, text: str) -> Any:
        return {"errors": [text]}

    unsupported = {
        "make_read_only": "a Vault path has no read-only state of its own: what a token may "
        "do there is its policies' capabilities (a sealed Vault or a locked namespace "
        "answers nothing at all)",
    }

    def disable_account(self, api: FakeVault) -> None:
        """Dana's identity entity is disabled: Vault refuses her token's capabilities."""
        api.tokens[DANA_TOKEN].entity_disabled = True

    def bind_admins(self, api: FakeVault) -> None:
        """Dana holds an admin policy (every capability on every path, sudo too); a policy
        that denies secret/data/app/db wins over it, as deny wins over every policy but
        root's."""
        every = ["create", "read", "update", "patch", "delete", "list", "sudo"]
        api.set_policy("admin", {"*": every})
        api.set_policy("no-db", {"secret/data/app/db": ["deny"]})
        api.tokens[DANA_TOKEN].policies += ["admin", "no-db"]

    def revoke(self, api: FakeVault) -> None:
        """Dana's token is revoked: its accessor is no longer valid."""
        del api.tokens[DANA_TOKEN]
