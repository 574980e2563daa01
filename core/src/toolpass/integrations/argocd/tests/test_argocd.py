"""The Argo CD integration, through ``Toolpass``, against a fake Argo CD (and the Kubernetes
API's argocd-rbac-cm) on 127.0.0.1; and the request hook under httpx and requests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from fakes.argocd import KUBE_TOKEN, TOKEN, FakeArgoCD, populate
from pytest_toolpass import IntegrationConformance
from serving import connection, environment, hooked, served

from toolpass import Session, Toolkit, Toolpass
from toolpass.engine import ConfigError
from toolpass.integrations import get
from toolpass.integrations.argocd import ArgoCD
from toolpass.integrations.argocd._rbac import Policy, _glob, parse_policy
from toolpass.intercept import ActionRefused

PEOPLE = {
    "dana@example.com": "dana",
    "erin@example.com": "erin",
    "frank@example.com": "frank",
    "sam@example.com": "sam",
    "ann@example.com": "ann",
}
GROUPS = {"sam@example.com": ["sre"], "ann@example.com": ["auditors"], "dana@example.com": []}


fake = served(FakeArgoCD, populate)
secrets = environment(ARGOCD_TOKEN=TOKEN, KUBE_TOKEN=KUBE_TOKEN)
conn = connection(
    id="argo",
    integration="argocd",
    token="env:ARGOCD_TOKEN",
    kubernetes_token="env:KUBE_TOKEN",
    identity={"mode": "users", "users": PEOPLE},
    groups=GROUPS,
    urls=("kubernetes_url",),
)


@pytest.fixture
def tp(fake: FakeArgoCD) -> Iterator[Toolpass]:
    with Toolpass(
        [conn(fake, groups={**GROUPS, "erin@example.com": [], "frank@example.com": []})]
    ) as engine:
        yield engine


@pytest.mark.parametrize(
    ("user", "action", "resource", "decision"),
    [
        ("dana", "applications.sync", "app:guestbook", "allow"),
        ("dana", "applications.sync", "team-a/guestbook", "allow"),
        ("dana", "applications.sync", "app:frozen", "deny"),  # deny wins for the subject
        ("dana", "applications.sync", "app:billing", "deny"),
        ("dana", "applications.delete", "app:guestbook", "deny"),
        ("dana", "applications.get", "app:apps/guestbook", "allow"),  # * matches team-a/apps/x
        ("dana", "logs.get", "app:guestbook", "allow"),
        ("dana", "applications.rollback", "app:guestbook", "allow"),  # rollback is sync
        ("dana", "applications.override", "app:guestbook", "deny"),
        ("dana", "applications.action/apps/Deployment/restart", "app:guestbook", "allow"),
        ("dana", "applications.action/apps/StatefulSet/restart", "app:guestbook", "deny"),
        ("dana", "applications.update//ConfigMap/web/settings", "app:guestbook", "allow"),
        ("dana", "applications.delete//ConfigMap/web/settings", "app:guestbook", "deny"),
        ("sam", "applications.delete", "app:billing", "allow"),  # group sre -> role:admin
        ("sam", "clusters.delete", "https://prod.example.com", "allow"),
        ("ann", "applications.get", "app:guestbook", "allow"),  # project role group
        ("ann", "applications.sync", "app:guestbook", "deny"),
        ("ann", "projects.get", "team-a", "allow"),  # project roles get their project
        ("ann", "projects.get", "team-b", "deny"),
        ("erin", "clusters.get", "cluster:https://prod.example.com", "allow"),
        ("erin", "clusters.get", "cluster-name:prod", "allow"),
        ("erin", "clusters.update", "cluster:https://prod.example.com", "deny"),
        ("frank", "projects.get", "team-b", "allow"),  # {a,b} alternatives
        ("frank", "projects.get", "default", "deny"),
        ("frank", "repositories.get", "repo:https://git.example.com/a.git", "allow"),  # team-?/*
        ("dana", "applicationsets.get", "appset:fleet", "deny"),
        ("sam", "applicationsets.update", "appset:fleet", "allow"),
        ("sam", "certificates.create", "*", "allow"),
        ("dana", "certificates.get", "*", "deny"),
        ("dana", "session.read", "self", "allow"),
    ],
)
def test_the_policy_decides_as_argo_cd_does(
    tp: Toolpass, user: str, action: str, resource: str, decision: str
) -> None:
    d = tp.check(f"{user}@example.com", "argo", action, resource)
    assert d.decision == decision, d.reason


def test_the_default_role_and_the_readonly_role(fake: FakeArgoCD) -> None:
    fake.rbac["policy.default"] = "role:readonly"
    with Toolpass([conn(fake, groups={"erin@example.com": []})]) as tp:
        assert tp.check("erin@example.com", "argo", "applications.get", "app:billing").allowed
        d = tp.check("erin@example.com", "argo", "applications.sync", "app:billing")
        assert d.decision == "deny"


def test_a_deny_for_a_subject_does_not_stop_a_group_that_allows(fake: FakeArgoCD) -> None:
    fake.rbac["policy.csv"] += (
        "\np, dana, applications, get, team-b/*, deny\ng, platform, role:admin\n"
    )
    with Toolpass([conn(fake, groups={"dana@example.com": ["platform"]})]) as tp:
        d = tp.check("dana@example.com", "argo", "applications.get", "app:billing")
    assert d.allowed, d.reason
    assert "platform" in d.reason


def test_a_group_with_no_g_line_grants_nothing(fake: FakeArgoCD) -> None:
    fake.rbac["policy.csv"] += "\np, direct-group, applications, get, */*, allow\n"
    with Toolpass([conn(fake, groups={"erin@example.com": ["direct-group"]})]) as tp:
        assert (
            tp.check("erin@example.com", "argo", "applications.get", "app:billing").decision
            == "deny"
        )


def test_the_email_scope_is_a_group(fake: FakeArgoCD) -> None:
    fake.rbac["policy.csv"] += "\ng, erin@example.com, role:readonly\n"
    with Toolpass([conn(fake, groups={"erin@example.com": []})]) as tp:
        assert tp.check("erin@example.com", "argo", "applications.get", "app:billing").allowed
    fake.rbac["scopes"] = "[groups]"
    with Toolpass([conn(fake, groups={"erin@example.com": []})]) as tp:
        assert (
            tp.check("erin@example.com", "argo", "applications.get", "app:billing").decision
            == "deny"
        )


def test_overlays_and_regex_mode(fake: FakeArgoCD) -> None:
    fake.rbac["policy.extra.csv"] = "p, erin, applications, get, team-b/.*, allow"
    fake.rbac["policy.matchMode"] = "regex"
    fake.rbac["policy.csv"] = ""
    with Toolpass([conn(fake, groups={"erin@example.com": []})]) as tp:
        assert tp.check("erin@example.com", "argo", "applications.get", "app:billing").allowed
        assert (
            tp.check("erin@example.com", "argo", "applications.get", "app:guestbook").decision
            == "deny"
        )


def test_an_invalid_policy_line_is_unknown(fake: FakeArgoCD) -> None:
    fake.rbac["policy.csv"] += "\np, dana, applications, get\n"
    with Toolpass([conn(fake)]) as tp:
        d = tp.check("dana@example.com", "argo", "applications.get", "app:guestbook")
    assert d.decision == "unknown"
    assert "invalid RBAC policy" in d.reason


def test_a_missing_application_is_unknown(tp: Toolpass) -> None:
    d = tp.check("sam@example.com", "argo", "applications.get", "app:nothing")
    assert d.decision == "unknown"
    assert "HTTP 403" in d.reason


def test_unknown_groups_are_unknown(fake: FakeArgoCD) -> None:
    with Toolpass([conn(fake, groups={"dana@example.com": []})]) as tp:
        d = tp.check("sam@example.com", "argo", "applications.get", "app:guestbook")
    assert d.decision == "unknown"


def test_groups_from_a_callable(fake: FakeArgoCD) -> None:
    settings = conn(fake, groups=None, groups_resolve={"sam@example.com": ["sre"]}.get)
    with Toolpass([settings]) as tp:
        assert tp.check("sam@example.com", "argo", "applications.delete", "app:billing").allowed
        assert (
            tp.check("erin@example.com", "argo", "applications.get", "app:billing").decision
            == "unknown"
        )


def test_groups_from_a_file(fake: FakeArgoCD, tmp_path: Path) -> None:
    path = tmp_path / "groups.json"
    path.write_text('{"Sam@Example.com": ["sre"]}')
    with Toolpass([conn(fake, groups=None, groups_file=str(path))]) as tp:
        assert tp.check("sam@example.com", "argo", "applications.delete", "app:billing").allowed
        d = tp.check("erin@example.com", "argo", "applications.get", "app:billing")
        assert d.decision == "unknown"


def test_a_moved_application_needs_both_projects(tp: Toolpass) -> None:
    assert tp.check("dana@example.com", "argo", "applications.sync", "app:guestbook@team-a").allowed
    d = tp.check("dana@example.com", "argo", "applications.sync", "app:guestbook@team-b")
    assert d.decision == "deny"


@pytest.mark.parametrize("action", ["applications.sync", "applications.override"])
@pytest.mark.parametrize("resource", ["app:guestbook", "team-a/guestbook", "app:apps/guestbook"])
def test_a_sync_window_that_blocks_a_sync_refuses_even_an_admin(
    fake: FakeArgoCD, tp: Toolpass, action: str, resource: str
) -> None:
    """Argo CD's Sync refuses a manual sync that a sync window of the project blocks, before
    RBAC and whoever asks (``PermissionDenied: cannot sync: blocked by sync window``)."""
    namespace = "apps" if "apps/" in resource else "argocd"
    assert tp.check("sam@example.com", "argo", action, resource, fresh=True).allowed
    fake.blocked.add((namespace, "guestbook"))
    d = tp.check("sam@example.com", "argo", action, resource, fresh=True)
    assert d.decision == "deny"
    assert "sync window" in d.reason
    assert tp.check("sam@example.com", "argo", "applications.get", resource).allowed


def test_a_sync_of_no_one_application_or_a_malformed_window_answer_is_unknown(
    fake: FakeArgoCD, tp: Toolpass
) -> None:
    assert tp.check("sam@example.com", "argo", "applications.sync", "team-a/*").decision == (
        "unknown"
    )
    fake.fail(200, body={"activeWindows": []}, path=r"/api/v1/applications/guestbook/syncwindows")
    d = tp.check("sam@example.com", "argo", "applications.sync", "app:guestbook", fresh=True)
    assert d.decision == "unknown"


def test_the_generic_fine_grained_actions_need_a_name(tp: Toolpass) -> None:
    d = tp.check("sam@example.com", "argo", "applications.action", "app:guestbook")
    assert d.decision == "unknown"


def test_a_mounted_configmap(fake: FakeArgoCD, tmp_path: Path) -> None:
    (tmp_path / "policy.csv").write_text("g, erin, role:readonly\n")
    settings = conn(
        fake, policy_from="dir", policy_dir=str(tmp_path), groups={"erin@example.com": []}
    )
    with Toolpass([settings]) as tp:
        assert tp.check("erin@example.com", "argo", "applications.get", "app:billing").allowed
    assert fake.seen("GET", r"/api/v1/namespaces/.*") == []


def test_the_policy_is_read_once_within_its_lifetime(fake: FakeArgoCD) -> None:
    with Toolpass([conn(fake, cache_ttl_allow=0)]) as tp:
        for _ in range(3):
            assert tp.check(
                "dana@example.com", "argo", "applications.sync", "app:guestbook"
            ).allowed
    assert len(fake.seen("GET", r"/api/v1/namespaces/argocd/configmaps/argocd-rbac-cm")) == 1
    assert len(fake.seen("GET", r"/api/v1/projects/team-a")) == 1


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"token": None}, "token"),
        ({"policy_from": "dir"}, "policy_dir"),
        ({"policy_cache_ttl": -1.0}, "policy_cache_ttl"),
        ({"groups_url": "http://127.0.0.1:9/g", "groups_resolve": print}, "groups_resolve"),
    ],
)
def test_bad_settings_are_refused(fake: FakeArgoCD, extra: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        Toolpass([conn(fake, **extra)])
    assert key in str(info.value)


def test_the_catalog_names_the_least_privileged_credential() -> None:
    description = get("argocd").description
    assert "generate-token" in description
    assert "argocd-rbac-cm" in description


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("*", "", True),
        ("*", "a/b/c", True),
        ("team-a/*", "team-a/x/y", True),
        ("team-?/*", "team-b/x", True),
        ("team-?/*", "team-bb/x", False),
        ("[!a]*", "b", True),
        ("[!a]*", "a", False),
        ("{x,y}/z", "y/z", True),
        ("a\\*", "a*", True),
        ("a\\*", "ab", False),
        ("[", "[", False),
        ("a.b", "axb", False),
    ],
)
def test_glob_matching_is_gobwas(pattern: str, text: str, matches: bool) -> None:
    compiled = _glob(pattern)
    assert bool(compiled and compiled.fullmatch(text)) == matches


def test_roles_are_followed_ten_levels() -> None:
    lines = "\n".join(f"g, r{i}, r{i + 1}" for i in range(12))
    rows = parse_policy(lines + "\np, r10, a, get, *, allow\np, r12, b, get, *, allow", "t")
    policy = Policy(rows, regex=False)
    assert policy.enforce("r0", "a", "get", "x")
    assert not policy.enforce("r0", "b", "get", "x")


# --- the request hook ----------------------------------------------------------------------
kit = hooked(conn)


def _sync_with_httpx(fake: FakeArgoCD, app: str) -> int:
    answer = httpx.post(
        f"{fake.url}/api/v1/applications/{app}/sync",
        json={"name": app, "prune": False},
        headers={"Authorization": "Bearer agent-token"},
    )
    return answer.status_code


def test_the_hook_lets_an_allowed_sync_through(
    kit: tuple[Toolkit, list[Any]], fake: FakeArgoCD
) -> None:
    toolkit, events = kit
    sync = toolkit.tool()(lambda: _sync_with_httpx(fake, "guestbook"))
    with Session("dana@example.com").active():
        assert sync() == 200
    assert fake.synced == ["guestbook"]
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("applications.sync", "app:guestbook")


def test_the_hook_refuses_a_sync_before_it_is_sent(
    kit: tuple[Toolkit, list[Any]], fake: FakeArgoCD
) -> None:
    toolkit, events = kit
    sync = toolkit.tool()(lambda: _sync_with_httpx(fake, "frozen"))
    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        sync()
    assert fake.synced == []
    [action] = events[-1].actions
    assert action["verdict"] == "not_authorized"


def test_the_hook_refuses_under_requests_too(
    kit: tuple[Toolkit, list[Any]], fake: FakeArgoCD
) -> None:
    toolkit, _ = kit

    def sync() -> int:
        url = f"{fake.url}/api/v1/applications/billing/sync"
        return requests.post(url, json={"name": "billing"}, timeout=5).status_code

    with Session("dana@example.com").active(), pytest.raises(ActionRefused):
        toolkit.tool()(sync)()
    assert fake.synced == []


class TestArgoCDConformance(IntegrationConformance):
    integration = "argocd"
    user, action, resource = "dana@example.com", "applications.sync", "app:guestbook"
    system_user, template = "dana", "{local}"
    credential = TOKEN
    other_secrets = (KUBE_TOKEN,)

    @pytest.fixture
    def api(self, fake: FakeArgoCD) -> FakeArgoCD:
        return fake

    def error_body(self, text: str) -> Any:
        return {"error": text, "code": 16, "message": text}

    def connection(self, api: FakeArgoCD, **extra: Any) -> dict[str, Any]:
        return conn(api, **extra)

    unsupported = {
        "disable_account": "dana signs in through SSO, whose provider disables her; a local "
        "account's accounts.<name>.enabled in argocd-cm is not read (only argocd-rbac-cm)",
    }

    def make_read_only(self, api: FakeArgoCD) -> str:
        """An active deny sync window on guestbook (``canSync: false``)."""
        api.blocked.add(("argocd", "guestbook"))
        return "applications.sync"

    def bind_admins(self, api: FakeArgoCD) -> None:
        """Dana holds role:admin, and a deny for her on guestbook wins over every allow of
        her roles (Argo CD's policy effect: an allow and no deny)."""
        api.rbac["policy.csv"] += (
            "\ng, dana, role:admin\np, dana, applications, sync, team-a/guestbook, deny\n"
        )

    def revoke(self, api: FakeArgoCD) -> None:
        """Dana loses role:deployer in argocd-rbac-cm."""
        api.rbac["policy.csv"] = api.rbac["policy.csv"].replace("g, dana, role:deployer\n", "")


_ = ArgoCD
