"""A fake GitHub, an engine that asks it, and a toolkit whose tools' requests are checked.

The integration under test is GitHub with a few routes of its own (``Hub``), so these tests
of the hook do not depend on the generated table.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.github import FakeGitHub
from toolpass import Toolkit, Toolpass, intercept
from toolpass.integrations.github import GitHub
from toolpass.integrations.routes import Route

TOKEN = "ghp_tool00000000000000000000000000000000"
USERS = {"dana@example.com": "dana", "rory@example.com": "rory"}
README = "# widgets\nThe widget service."


class Hub(GitHub):
    name = "hub_under_test"  # ships no table: only the routes below
    routes = tuple(
        Route.row(r)
        for r in [
            ["GET", "/repos/{owner}/{repo}", "repo.read", "repo:{owner}/{repo}", "read"],
            [
                "GET",
                "/repos/{owner}/{repo}/contents/{path+}",
                "contents.read",
                "repo:{owner}/{repo}",
                "read",
                "u",
            ],
            ["POST", "/repos/{owner}/{repo}/pulls", "pr.create", "repo:{owner}/{repo}", "write"],
            [
                "GET",
                "/repos/{owner}/{repo}/pulls/{number}",
                "pr.read",
                "repo:{owner}/{repo}",
                "read",
                "u",
            ],
            [
                "DELETE",
                "/repos/{owner}/{repo}",
                "repo.delete",
                "repo:{owner}/{repo}",
                "destructive",
            ],
            [
                "POST",
                "/repos/{owner}/{repo}/issues",
                "issue.create",
                "repo:{owner}/{repo}",
                "write",
                "s",
            ],
            ["GET", "/user", "repo.read", "self", "read", "a"],
            ["GET", "/rate_limit", "repo.read", "self", "read", "a"],
            ["GET", "/search/code", "repo.read", "site:public", "read", "ua"],
        ]
    )


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        gh.add_repo("acme/widgets", {"dana": "write", "rory": "read"}, files={"README.md": README})
        gh.add_token(TOKEN)
        yield gh


@pytest.fixture
def engine(github: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> Iterator[Toolpass]:
    monkeypatch.setenv("TOOLPASS_TEST_GITHUB_TOKEN", TOKEN)
    conn = {
        "id": "github",
        "integration": Hub,
        "url": github.api_url,
        "token": "env:TOOLPASS_TEST_GITHUB_TOKEN",
        "identity": {"mode": "users", "users": USERS},
    }
    with Toolpass([conn]) as tp:
        yield tp


@pytest.fixture
def events() -> list[Any]:
    return []


@pytest.fixture
def kit(engine: Toolpass, events: list[Any]) -> Iterator[Toolkit]:
    yield Toolkit(permissions=engine, audit=[events.append])
    intercept.uninstall()


def posted(github: FakeGitHub) -> list[str]:
    """The paths of the pull requests that reached the fake."""
    return [r.path for r in github.requests if r.method == "POST" and r.path.endswith("/pulls")]


@pytest.fixture
def no_ambient_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3 sees none of this machine's AWS settings and never asks instance metadata."""
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_RETRY_MODE",
        "AWS_MAX_ATTEMPTS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/toolpass-test")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/toolpass-test")
