from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt as pyjwt
import pytest
from fakes.github import FakeGitHub, rsa_key
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pytest_toolpass import IntegrationConformance

from toolpass.engine import ConfigError, Toolpass, literal
from toolpass.integrations.base import ProbeResult

from .conftest import ENGINE_TOKEN

USERS = {
    f"{login}@example.com": login
    for login in ("dana", "erin", "tess", "maya", "rory", "cora", "nora", "ghost")
}


def connection(gh: FakeGitHub, **extra: Any) -> dict[str, Any]:
    return {
        "id": "gh",
        "integration": "github",
        "url": gh.api_url,
        "token": "env:GITHUB_TOKEN",
        "identity": {"mode": "users", "users": USERS},
        **extra,
    }


@pytest.fixture
def tp(github: FakeGitHub, engine_token: str) -> Iterator[Toolpass]:
    with Toolpass([connection(github)]) as engine:
        yield engine


def check(tp: Toolpass, login: str, action: str, resource: str = "repo:acme/widgets") -> Any:
    return tp.check(f"{login}@example.com", "gh", action, resource)


@pytest.mark.parametrize(
    ("login", "action", "verdict"),
    [
        ("rory", "repo.read", "allow"),
        ("rory", "issue.comment", "allow"),
        ("rory", "issue.update", "deny"),
        ("tess", "issue.update", "allow"),
        ("tess", "pr.create", "deny"),
        ("dana", "pr.create", "allow"),
        ("dana", "pr.merge", "allow"),
        ("dana", "repo.manage", "deny"),
        ("maya", "repo.manage", "allow"),
        ("maya", "collaborator.add", "deny"),
        ("erin", "repo.delete", "allow"),
        ("cora", "repo.read", "allow"),  # a custom role counts as its base role
        ("cora", "contents.write", "deny"),
        ("nora", "repo.read", "deny"),  # no role on a private repository
    ],
)
def test_roles(tp: Toolpass, login: str, action: str, verdict: str) -> None:
    assert check(tp, login, action).decision == verdict


def test_reasons_and_request(tp: Toolpass, github: FakeGitHub) -> None:
    allow = check(tp, "dana", "pr.merge", "repo:acme/widgets")
    assert allow.reason == "dana has the write role on acme/widgets; pr.merge needs write"
    deny = check(tp, "nora", "issue.create")
    assert (
        deny.reason == "nora has no role on acme/widgets; issue.create on acme/widgets needs read"
    )
    (sent, _) = github.seen(path="/repos/acme/widgets/collaborators/.*/permission")
    assert sent.path == "/repos/acme/widgets/collaborators/dana/permission"
    assert sent.headers["authorization"] == f"Bearer {ENGINE_TOKEN}"
    assert sent.headers["x-github-api-version"] == "2022-11-28"
    assert sent.headers["accept"] == "application/vnd.github+json"


def test_public_repository_reads(tp: Toolpass) -> None:
    assert check(tp, "nora", "issue.create", "repo:acme/public").allowed
    assert not check(tp, "nora", "pr.merge", "repo:acme/public").allowed


def test_protected_branches(tp: Toolpass, github: FakeGitHub) -> None:
    main = check(tp, "dana", "contents.write", "ref:acme/widgets@main")
    assert main.decision == "deny"
    assert "on the branch main of acme/widgets changes must go through a pull request" in (
        main.reason
    )
    assert check(tp, "erin", "contents.write", "ref:acme/widgets@main").allowed
    assert check(tp, "dana", "contents.write", "ref:acme/widgets@feature").allowed
    assert check(tp, "dana", "contents.write", "ref:acme/widgets@new/branch").allowed
    assert github.seen(path="/repos/acme/widgets/branches/new%2Fbranch")
    # merging into main needs approving reviews: only a named pull request has them
    assert check(tp, "dana", "pr.merge", "ref:acme/widgets@main").decision == "unknown"


def test_a_protected_branch_is_deleted_by_no_one(tp: Toolpass, github: FakeGitHub) -> None:
    """Classic protection forbids deleting the branch unless allow_deletions, admins too."""
    for login in ("dana", "erin"):
        decision = check(tp, login, "branch.delete", "ref:acme/widgets@main")
        assert decision.decision == "deny"
        assert "main of acme/widgets it may not be deleted" in decision.reason
    github.repos["acme/widgets"].protections["main"] = {"allow_deletions": True}
    assert tp.check(
        "dana@example.com", "gh", "branch.delete", "ref:acme/widgets@main", fresh=True
    ).allowed


@pytest.mark.parametrize(
    "resource",
    [
        "acme/widgets",
        "repo:acme",
        "repo:acme/..",
        "repo:acme/w?x=1",
        "issue:acme/widgets#0",
        "ref:acme/widgets@",
        "repo:-acme/x",
        "org:@me",
        "site:other",
        "team:acme",
        "enterprise:#3",
        "user:",
        "repo:acme/widgets/extra",
        "repo:acme/widgets@main",
        "issue:acme/widgets",
        "pr:acme/widgets@main",
        "ref:acme/widgets#3",
    ],
)
def test_bad_resources_are_unknown(tp: Toolpass, github: FakeGitHub, resource: str) -> None:
    decision = check(tp, "dana", "repo.read", resource)
    assert decision.decision == "unknown"
    assert "is not a github resource" in decision.reason
    assert github.requests == []


@pytest.mark.parametrize(
    ("inject", "reason"),
    [
        (
            lambda gh: gh.fail(
                403, headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000000"}
            ),
            r"rate-limited the engine \(HTTP 403, resets at 1700000000\)",
        ),
        (
            lambda gh: gh.fail(200, body={"permission": "superuser"}),
            r"no known role \('superuser'\)",
        ),
        (lambda gh: gh.fail(200, body=["admin"]), r"not an object"),
    ],
)
def test_failures_are_unknown(
    github: FakeGitHub, engine_token: str, inject: Any, reason: str
) -> None:
    inject(github)
    with Toolpass([connection(github, timeout=0.5)]) as tp:
        decision = check(tp, "erin", "repo.read")
    assert decision.decision == "unknown"
    assert re.search(reason, decision.reason), decision.reason


def test_credential_without_push_access_is_unknown(
    github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    github.add_token("ghp_readonly", push=False)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_readonly")
    with Toolpass([connection(github)]) as tp:
        decision = check(tp, "erin", "repo.read")
    assert decision.decision == "unknown"
    assert "refused the engine's credential (HTTP 403)" in decision.reason
    assert "push access" in decision.reason


def test_hidden_repository_404_is_unknown_or_deny_by_setting(
    github: FakeGitHub, engine_token: str
) -> None:
    github.add_token(ENGINE_TOKEN, repos={"acme/widgets"})
    with Toolpass([connection(github), connection(github, id="strict", not_found="deny")]) as tp:
        hidden = tp.check("dana@example.com", "gh", "repo.read", "repo:other/secret")
        strict = tp.check("dana@example.com", "strict", "repo.read", "repo:other/secret")
        ghost = tp.check("ghost@example.com", "gh", "repo.read", "repo:acme/widgets")
    assert hidden.decision == "unknown"
    assert "github answered 404 for dana on other/secret" in hidden.reason
    assert strict.decision == "deny"
    assert strict.reason.endswith("(not_found: deny)")
    assert ghost.decision == "unknown"  # no such GitHub user


def test_a_mapped_name_that_is_no_login_is_unknown(github: FakeGitHub, engine_token: str) -> None:
    with Toolpass(
        [
            connection(
                github,
                identity={"mode": "template", "template": "{local}/x", "domains": ["example.com"]},
            )
        ]
    ) as bad:
        assert (
            "is not a github login"
            in bad.check("dana@example.com", "gh", "repo.read", "repo:acme/widgets").reason
        )
    assert github.seen(path=".*/permission") == []


def test_decisions_are_cached(tp: Toolpass, github: FakeGitHub) -> None:
    for _ in range(3):
        assert check(tp, "dana", "pr.create").allowed
    assert len(github.seen(path=".*/permission")) == 1


class TestSAML:
    def saml_tp(self, gh: FakeGitHub, **extra: Any) -> Toolpass:
        conn = connection(gh, saml_org="acme", **extra)
        del conn["identity"]
        return Toolpass([conn])

    def test_exact_name_id_only(self, github: FakeGitHub, engine_token: str) -> None:
        github.saml["acme"] = [
            ("dana@example.com", "dana"),
            ("dana@example.com.evil", "erin"),
            ("unlinked@example.com", None),
            ("twin@example.com", "dana"),
            ("TWIN@example.com", "erin"),
        ]
        with self.saml_tp(github) as tp:
            assert tp.check("Dana@Example.com", "gh", "pr.create", "repo:acme/widgets").allowed
            unlinked = tp.check("unlinked@example.com", "gh", "repo.read", "repo:acme/widgets")
            twin = tp.check("twin@example.com", "gh", "repo.read", "repo:acme/widgets")
            tp.check("dana@example.com", "gh", "repo.read", "repo:acme/widgets")
        assert unlinked.decision == "unknown"
        assert "maps to no github user (saml)" in unlinked.reason
        assert twin.decision == "unknown"
        assert "maps to 2 github users (saml)" in twin.reason
        first = github.seen("POST", "/graphql")[0].json()
        assert first["variables"] == {"org": "acme", "nameId": "dana@example.com"}
        assert len(github.seen("POST", "/graphql")) == 3  # dana's login was cached

    def test_org_without_saml_and_unknown_org(self, github: FakeGitHub, engine_token: str) -> None:
        github.saml["acme"] = None
        with self.saml_tp(github) as tp:
            no_idp = tp.check("dana@example.com", "gh", "repo.read", "repo:acme/widgets")
        assert "github organization acme has no SAML identity provider" in no_idp.reason
        del github.saml["acme"]
        with self.saml_tp(github) as tp:
            missing = tp.check("dana@example.com", "gh", "repo.read", "repo:acme/widgets")
        assert "Could not resolve to an Organization" in missing.reason

    def test_saml_needs_an_org(self, github: FakeGitHub, engine_token: str) -> None:
        conn = connection(github)
        del conn["identity"]
        with pytest.raises(
            ConfigError,
            match=r"connections\[0\], connection 'gh', key 'saml_org': identity mode saml",
        ):
            Toolpass([conn])


class TestApp:
    @pytest.fixture
    def key(self) -> tuple[str, Any]:
        return rsa_key()

    def app_conn(self, gh: FakeGitHub, pem: str, **extra: Any) -> dict[str, Any]:
        conn = connection(gh, app_id=42, private_key=literal(pem), **extra)
        del conn["token"]
        return conn

    def test_installation_found_token_minted_and_reused(
        self, github: FakeGitHub, key: tuple[str, Any]
    ) -> None:
        pem, public = key
        app = github.add_app(42, public, {7: "acme", 8: "other"})
        with Toolpass([self.app_conn(github, pem)]) as tp:
            assert check(tp, "dana", "pr.create").allowed
            assert check(tp, "erin", "repo.delete").allowed
            assert tp.check("dana@example.com", "gh", "repo.delete", "repo:other/secret").allowed
        assert app.minted == [7, 8]
        assert len(github.seen("GET", r"/repos/acme/widgets/installation")) == 1
        perm = github.seen(path=".*/permission")[0]
        assert perm.headers["authorization"].startswith("Bearer ghs_")

    def test_jwt_is_a_valid_rs256_token(self, github: FakeGitHub, key: tuple[str, Any]) -> None:
        pem, public = key
        github.add_app(42, public, {7: "acme"})
        with Toolpass([self.app_conn(github, pem)]) as tp:
            check(tp, "dana", "repo.read")
        token = github.seen("POST", r"/app/installations/7/access_tokens")[0].headers[
            "authorization"
        ]
        claims = pyjwt.decode(token.split()[1], public, algorithms=["RS256"])
        assert claims["iss"] == "42"
        assert 0 < claims["exp"] - claims["iat"] <= 600

    def test_token_refreshed_before_expiry(self, github: FakeGitHub, key: tuple[str, Any]) -> None:
        pem, public = key
        app = github.add_app(42, public, {7: "acme"}, token_ttl=120)  # inside the refresh margin
        with Toolpass([self.app_conn(github, pem, installation_id=7)]) as tp:
            check(tp, "dana", "repo.read")
            check(tp, "erin", "repo.read")
        assert app.minted == [7, 7]
        assert github.seen(path=".*/installation") == []

    def test_not_installed_and_wrong_key(self, github: FakeGitHub, key: tuple[str, Any]) -> None:
        pem, public = key
        github.add_app(42, public, {8: "other"})
        with Toolpass([self.app_conn(github, pem)]) as tp:
            decision = check(tp, "dana", "repo.read")
        assert decision.decision == "unknown"
        assert "the GitHub App is not installed on acme" in decision.reason
        other_pem, _ = rsa_key()
        with Toolpass([self.app_conn(github, other_pem)]) as tp:
            decision = check(tp, "dana", "repo.read")
        assert "rejected the engine's credential (HTTP 401)" in decision.reason
        assert "JSON web token" in decision.reason

    def test_probe(self, github: FakeGitHub, key: tuple[str, Any]) -> None:
        pem, public = key
        github.add_app(42, public, {7: "acme"})
        with Toolpass([self.app_conn(github, pem, installation_id=7)]) as tp:
            assert tp.probe() == {
                "gh": ProbeResult(True, "GitHub App app-42; installation 7 token minted")
            }

    def test_bad_private_key(self, github: FakeGitHub) -> None:
        with Toolpass([self.app_conn(github, "not a key")]) as tp:
            decision = check(tp, "dana", "repo.read")
        assert decision.decision == "unknown"
        assert "not an unencrypted PEM private key" in decision.reason


def test_token_probe(tp: Toolpass) -> None:
    assert tp.probe() == {"gh": ProbeResult(True, "token accepted; 4999/5000 requests left")}


def test_enterprise_server(ghes: FakeGitHub, engine_token: str) -> None:
    ghes.saml["acme"] = [("dana@example.com", "dana")]
    conn = connection(ghes, saml_org="acme")
    del conn["identity"]
    with Toolpass([conn]) as tp:
        assert tp.check("dana@example.com", "gh", "pr.create", "repo:acme/widgets").allowed
    assert ghes.seen("POST", "/api/graphql")
    assert ghes.seen("GET", "/api/v3/repos/acme/widgets/collaborators/dana/permission")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"app_id": 1, "private_key": "env:K"}, "key 'token': give either token or app_id"),
        ({"token": None}, "key 'token': missing: token, or app_id and private_key"),
        ({"token": None, "app_id": 1}, "key 'private_key': a GitHub App needs"),
        ({"installation_id": 3}, "key 'installation_id': only for a GitHub App"),
        ({"token": None, "app_id": "", "private_key": "env:K"}, "key 'app_id': must be"),
        ({"not_found": "allow"}, "key 'not_found': must be one of unknown, deny"),
        ({"protected_branch_role": "owner"}, "key 'protected_branch_role'"),
    ],
)
def test_config_errors(github: FakeGitHub, extra: dict[str, Any], message: str) -> None:
    conn = {k: v for k, v in {**connection(github), **extra}.items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        Toolpass([conn])


def test_yaml_and_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pem, _ = rsa_key()
    (tmp_path / "app.pem").write_text(pem)
    path = tmp_path / "toolpass.yaml"
    path.write_text(
        textwrap.dedent("""\
        connections:
          - id: github
            integration: github
            app_id: 42
            private_key: file:app.pem
            saml_org: acme
    """)
    )
    tp = Toolpass.from_config(path)
    conn = tp.config.connections[0]
    assert conn.url == "https://api.github.com"
    assert conn.options["private_key"].get() == pem.rstrip("\n")
    path.write_text(path.read_text().replace("saml_org: acme", "saml_org: acme\n    app_key: x"))
    with pytest.raises(
        ConfigError, match=r"toolpass.yaml, line 7, connection 'github', key 'app_key': unknown key"
    ):
        Toolpass.from_config(path)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.text(alphabet=st.sampled_from(list("ab/.#@?%: \t\x00\u200b\u0430-_")), max_size=30).map(
        lambda tail: f"repo:acme/{tail}"
    )
)
def test_hostile_resources_never_leave_the_repository_path(
    tp: Toolpass, github: FakeGitHub, resource: str
) -> None:
    before = len(github.requests)
    check(tp, "dana", "contents.write", resource)
    for request in github.requests[before:]:
        assert re.fullmatch(
            r"/repos/acme/[A-Za-z0-9._-]+/(collaborators/dana/permission|branches/[^/]+)",
            request.path,
        ), request.path
        assert request.path.split("/")[3] not in (".", "..")


# --- resources above the repository (the request hook's org, user and site routes) --------
@pytest.fixture
def org(github: FakeGitHub) -> FakeGitHub:
    github.add_org(
        "acme",
        {
            "engine-bot": "admin",
            "erin": "admin",
            "dana": "member",
            "tess": "billing_manager",
            "rory": "member",
        },
        pending=("rory",),
    )
    return github


@pytest.mark.parametrize(
    ("login", "action", "verdict"),
    [
        ("dana", "org.read", "allow"),
        ("dana", "repo.create", "allow"),  # members may create repositories
        ("dana", "org.manage", "deny"),
        ("dana", "collaborator.add", "deny"),
        ("dana", "secret.manage", "deny"),
        ("dana", "security.read", "deny"),  # org-wide alerts: owners only
        ("erin", "org.manage", "allow"),
        ("erin", "org.delete", "allow"),
        ("erin", "org.audit", "allow"),
        ("tess", "org.read", "deny"),  # a billing manager is no member
        ("rory", "org.read", "deny"),  # a pending invitation is no membership
    ],
)
def test_organization_roles(
    tp: Toolpass, org: FakeGitHub, login: str, action: str, verdict: str
) -> None:
    decision = check(tp, login, action, "org:acme")
    assert decision.decision == verdict, decision.reason
    assert org.seen("GET", f"/orgs/acme/memberships/{login}")


def test_organization_reasons_and_hidden_members(tp: Toolpass, org: FakeGitHub) -> None:
    allow = check(tp, "erin", "org.manage", "org:acme")
    assert allow.reason == "erin is an organization owner of acme; org.manage needs owner"
    deny = check(tp, "dana", "org.manage", "org:acme")
    assert (
        deny.reason
        == "dana is an organization member of acme; org.manage needs an organization owner"
    )
    hidden = check(tp, "nora", "org.read", "org:acme")  # 404: no member, or hidden
    assert hidden.decision == "unknown"
    assert "404" in hidden.reason
    other = check(tp, "dana", "org.read", "org:other")  # the engine is no member there
    assert other.decision == "unknown"


def test_organization_not_found_deny(org: FakeGitHub, engine_token: str) -> None:
    with Toolpass([connection(org, not_found="deny")]) as tp:
        decision = check(tp, "nora", "org.read", "org:acme")
    assert decision.decision == "deny"
    assert "not_found: deny" in decision.reason


@pytest.mark.parametrize(
    ("login", "action", "resource", "verdict"),
    [
        ("dana", "account.manage", "user:dana", "allow"),  # one's own account
        ("dana", "account.manage", "user:DANA", "allow"),
        ("dana", "account.manage", "user:erin", "deny"),
        ("dana", "user.read", "user:erin", "allow"),  # public account data
        ("nora", "site.read", "site:public", "allow"),
        ("nora", "user.read", "user:@me", "allow"),
        ("nora", "account.manage", "user:@me", "unknown"),  # whose credential? unknowable
        ("erin", "enterprise.read", "enterprise:acme-corp", "unknown"),
        ("erin", "org.manage", "team:#5", "unknown"),
        ("erin", "org.read", "org:#9", "unknown"),
        ("erin", "account.manage", "user:#42", "unknown"),
        ("erin", "account.manage", "site:public", "unknown"),
    ],
)
def test_accounts_and_public_data(
    tp: Toolpass, github: FakeGitHub, login: str, action: str, resource: str, verdict: str
) -> None:
    decision = check(tp, login, action, resource)
    assert decision.decision == verdict, decision.reason
    assert github.requests == []  # decided without asking GitHub


def test_site_administration(tp: Toolpass, github: FakeGitHub) -> None:
    github.site_admins.add("erin")
    allow = check(tp, "erin", "site.admin", "site:admin")
    assert allow.decision == "allow"
    assert allow.reason == "erin is a site administrator; site.admin needs one"
    deny = check(tp, "dana", "site.admin", "site:admin")
    assert deny.decision == "deny"
    assert [r.path for r in github.requests] == ["/users/erin", "/users/dana"]


def test_head_is_the_default_branch(tp: Toolpass, github: FakeGitHub) -> None:
    """A contents write naming no branch goes to the default branch (main, protected)."""
    head = check(tp, "dana", "contents.write", "ref:acme/widgets@HEAD")
    assert head.decision == "deny"
    assert "the branch main of acme/widgets changes must go through a pull request" in head.reason
    assert check(tp, "erin", "contents.write", "ref:acme/widgets@HEAD").decision == "allow"
    paths = [r.path for r in github.requests]
    assert "/repos/acme/widgets" in paths
    assert "/repos/acme/widgets/branches/main" in paths
    assert check(tp, "dana", "contents.read", "ref:acme/widgets@HEAD").decision == "allow"


# --- the shared conformance suite ----------------------------------------------------------
class TestGitHubConformance(IntegrationConformance):
    integration = "github"
    user, action, resource = "dana@example.com", "pr.create", "repo:acme/widgets"
    system_user, template = "dana", "{local}"
    credential = ENGINE_TOKEN

    @pytest.fixture
    def api(self, github: FakeGitHub, engine_token: str) -> FakeGitHub:
        return github

    def connection(self, api: FakeGitHub, **extra: Any) -> dict[str, Any]:
        return connection(api, **extra)

    unsupported = {
        "bind_admins": "no GitHub rule binds opening a pull request; rulesets and "
        "enforce_admins binding admins on merges and pushes are in test_github_rules.py",
        "disable_account": "github.com shows no suspension (its login answers 404: unknown); "
        "GHES's suspended_at is tested in test_github_rules.py",
    }

    def make_read_only(self, api: FakeGitHub) -> str:
        api.repos["acme/widgets"].archived = True
        return "pr.create"

    def revoke(self, api: FakeGitHub) -> None:
        api.repos["acme/widgets"].roles["dana"] = "read"
