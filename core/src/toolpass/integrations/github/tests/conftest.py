"""The fake GitHub, as a fixture: acme/widgets with a team of every role."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes.github import FakeGitHub

ENGINE_TOKEN = "ghp_engine0000000000000000000000000000"


def seed(gh: FakeGitHub) -> FakeGitHub:
    gh.add_repo(
        "acme/widgets",
        {
            "dana": "write",
            "erin": "admin",
            "tess": "triage",
            "maya": "maintain",
            "rory": "read",
            "cora": "security-reviewer",
        },
        custom_roles={"security-reviewer": "read"},
        branches={"main": True, "feature": False},
    )
    gh.add_repo("acme/public", private=False)
    gh.add_repo("other/secret", {"dana": "admin"})
    gh.add_user("nora")
    gh.add_token(ENGINE_TOKEN)
    return gh


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        yield seed(gh)


@pytest.fixture
def ghes() -> Iterator[FakeGitHub]:
    with FakeGitHub(prefix="/api/v3") as gh:
        yield seed(gh)


@pytest.fixture
def engine_token(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("GITHUB_TOKEN", ENGINE_TOKEN)
    return "env:GITHUB_TOKEN"
