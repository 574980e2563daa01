"""The fake GitHub satisfies PyGithub, the real client library."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.github import FakeGitHub, rsa_key
from github import Auth, Github, GithubException, GithubIntegration

from .conftest import ENGINE_TOKEN


@pytest.fixture
def client(github: FakeGitHub) -> Iterator[Github]:
    g = Github(
        base_url=github.api_url,
        auth=Auth.Token(ENGINE_TOKEN),
        retry=None,
        seconds_between_requests=0,
        seconds_between_writes=0,
    )
    yield g
    g.close()


def test_repository_permission_and_pull(client: Github, github: FakeGitHub) -> None:
    repo = client.get_repo("acme/widgets")
    assert (repo.full_name, repo.private, repo.owner.login) == ("acme/widgets", True, "acme")
    assert repo.get_collaborator_permission("dana") == "write"
    assert repo.get_collaborator_permission("tess") == "read"  # triage reports as read
    pull = repo.create_pull(title="Fix", body="Details", head="feature", base="main")
    assert (pull.number, pull.title, pull.head.ref) == (1, "Fix", "feature")
    assert repo.get_pull(1).title == "Fix"
    assert github.seen("POST", "/repos/acme/widgets/pulls")[0].json()["head"] == "feature"


def test_pagination_follows_link_headers(client: Github, github: FakeGitHub) -> None:
    client.per_page = 2
    logins = [u.login for u in client.get_repo("acme/widgets").get_collaborators()]
    assert logins == sorted(["dana", "erin", "tess", "maya", "rory", "cora"])
    pages = github.seen("GET", "/repos/acme/widgets/collaborators")
    assert [p.arg("page", "1") for p in pages] == ["1", "2", "3"]


def test_errors_reach_pygithub_as_documented(github: FakeGitHub) -> None:
    g = Github(
        base_url=github.api_url,
        auth=Auth.Token("ghp_wrong"),
        retry=None,
        seconds_between_requests=0,
        seconds_between_writes=0,
    )
    with pytest.raises(GithubException) as info:
        g.get_repo("acme/widgets")
    assert info.value.status == 401
    assert info.value.data["message"] == "Bad credentials"
    g.close()
    g = Github(
        base_url=github.api_url,
        auth=Auth.Token(ENGINE_TOKEN),
        retry=None,
        seconds_between_requests=0,
        seconds_between_writes=0,
    )
    with pytest.raises(GithubException) as info:
        g.get_repo("acme/nothing")
    assert info.value.status == 404
    g.close()


def test_enterprise_base_url(ghes: FakeGitHub) -> None:
    g = Github(
        base_url=ghes.api_url,
        auth=Auth.Token(ENGINE_TOKEN),
        retry=None,
        seconds_between_requests=0,
        seconds_between_writes=0,
    )
    assert g.get_repo("acme/widgets").get_collaborator_permission("erin") == "admin"
    g.close()


def test_app_auth(github: FakeGitHub) -> None:
    pem, public = rsa_key()
    github.add_app(42, public, {7: "acme"})
    integration = GithubIntegration(auth=Auth.AppAuth(42, pem), base_url=github.api_url)
    installation = integration.get_repo_installation("acme", "widgets")
    assert installation.id == 7
    token = integration.get_access_token(7).token
    g = Github(
        base_url=github.api_url,
        auth=Auth.Token(token),
        retry=None,
        seconds_between_requests=0,
        seconds_between_writes=0,
    )
    assert g.get_repo("acme/widgets").get_collaborator_permission("dana") == "write"
    g.close()
    integration.close()


def test_a_search_through_the_hook_is_checked_on_the_one_repository_it_is_bounded_to(
    github: FakeGitHub, engine_token: str
) -> None:
    """PyGithub's search_issues, sent with the agent's token, answers what the agent sees: it
    is issue.read on the repository its query names, and refused when it names none (or
    several), before it leaves."""
    from toolpass import Session, Toolkit, intercept
    from toolpass.engine import Toolpass
    from toolpass.intercept import ActionRefused

    users = {"nora@example.com": "nora", "rory@example.com": "rory"}
    conn = {
        "id": "gh",
        "integration": "github",
        "url": github.api_url,
        "token": engine_token,
        "identity": {"mode": "users", "users": users},
    }
    events: list[Any] = []
    with Toolpass([conn]) as tp:
        kit = Toolkit(permissions=tp, audit=[events.append])

        @kit.tool()
        def search(query: str) -> str:
            g = Github(base_url=github.api_url, auth=Auth.Token(ENGINE_TOKEN), retry=None)
            return json.dumps([issue.html_url for issue in g.search_issues(query)])

        def refused(user: str, query: str) -> str:
            with Session(user).active(), pytest.raises(ActionRefused) as info:
                search(query)
            return info.value.code

        try:
            assert refused("nora@example.com", "salary") == "unresolved_resource"
            assert refused("rory@example.com", "repo:acme/widgets repo:other/secret") == (
                "unresolved_resource"
            )
            assert refused("rory@example.com", "repo:acme/widgets OR is:open") == (
                "unresolved_resource"
            )
            assert github.seen("GET", "/search/issues") == []
            assert refused("nora@example.com", "bug repo:acme/widgets") == "not_authorized"
            with Session("rory@example.com").active():
                found = search("bug repo:acme/widgets is:open")
        finally:
            intercept.uninstall()
    assert f'["{github.url}/acme/widgets/issues/1"]' in found  # fenced: others wrote it
    action = events[-1].actions[-1]
    assert (action["action"], action["resource"]) == ("issue.read", "repo:acme/widgets")


def test_a_list_across_the_agents_token_is_checked_and_its_own_profile_goes(
    github: FakeGitHub, engine_token: str
) -> None:
    """PyGithub's get_user().get_repos() (GET /user/repos) answers every repository the
    agent's token sees: account.list, refused before it leaves unless the connection says
    own_tokens: user; the agent's own profile (GET /user) goes unchecked."""
    from toolpass import Session, Toolkit, intercept
    from toolpass.engine import Toolpass
    from toolpass.intercept import ActionRefused

    def connection(own_tokens: str) -> dict[str, Any]:
        return {
            "id": "gh",
            "integration": "github",
            "url": github.api_url,
            "token": engine_token,
            "identity": {"mode": "users", "users": {"nora@example.com": "nora"}},
            "own_tokens": own_tokens,
        }

    def repos(tp: Toolpass) -> tuple[str, Any]:
        kit = Toolkit(permissions=tp)

        @kit.tool()
        def run(what: str) -> str:
            g = Github(base_url=github.api_url, auth=Auth.Token(ENGINE_TOKEN), retry=None)
            if what == "profile":
                return g.get_user().login
            return json.dumps([r.full_name for r in g.get_user().get_repos()])

        with Session("nora@example.com").active():
            login = run("profile")
            try:
                return login, run("repos")
            except ActionRefused as refused:
                return login, refused.code

    try:
        with Toolpass([connection("unknown")]) as tp:
            login, code = repos(tp)
        assert "\nengine-bot\n" in login  # fenced: the profile is the account's own text
        assert code == "authorization_error"
        assert github.seen("GET", "/user/repos") == []
        with Toolpass([connection("user")]) as tp:
            login, listed = repos(tp)
        assert "acme/widgets" in listed
    finally:
        intercept.uninstall()
