"""The fake GitHub satisfies PyGithub, the real client library."""

from __future__ import annotations

from collections.abc import Iterator

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
