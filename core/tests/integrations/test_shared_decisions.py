"""A shared store lets the engines of several processes reuse each other's decisions: one
asks the system, the others answer from the store until the decision expires. A store that
fails is a miss, never an answer."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from fakes.github import FakeGitHub
from toolpass.engine import ConfigError, Toolpass
from toolpass.integrations.github.tests.test_github import connection
from toolpass.store import MemoryStore, StoreUnavailable


def permission_lookups(github: FakeGitHub) -> int:
    return len(github.seen("GET", r".*/collaborators/.*/permission"))


def test_a_decision_one_engine_looked_up_serves_another(
    github: FakeGitHub, engine_token: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/state.db"
    with Toolpass([connection(github)], store=url) as first:
        assert first.check("dana@example.com", "gh", "pr.create", "repo:acme/widgets").allowed
    asked = permission_lookups(github)
    assert asked >= 1
    with Toolpass([connection(github)], store=url) as second:
        again = second.check("dana@example.com", "gh", "pr.create", "repo:acme/widgets")
        denied = second.check("rory@example.com", "gh", "issue.update", "repo:acme/widgets")
    assert again.allowed
    assert again.cached
    assert permission_lookups(github) > asked  # rory was asked live; dana was not
    assert denied.decision == "deny"
    with Toolpass([connection(github)], store=url) as third:
        assert third.check("rory@example.com", "gh", "issue.update", "repo:acme/widgets").cached


def test_unknown_is_never_shared(github: FakeGitHub, engine_token: str) -> None:
    store = MemoryStore()
    github.fail(503, times=10)
    with Toolpass([connection(github)], store=store) as first:
        assert first.check("dana@example.com", "gh", "pr.create", "repo:acme/x").decision == (
            "unknown"
        )
    assert store.keys("decision:") == []


class BrokenStore(MemoryStore):
    def get(self, key: str) -> object:
        raise StoreUnavailable("down")

    def update(self, key: str, change: object, *, ttl: float | None = None) -> object:
        raise StoreUnavailable("down")


def test_a_failing_store_is_a_miss_and_the_system_is_asked(
    github: FakeGitHub, engine_token: str, caplog: pytest.LogCaptureFixture
) -> None:
    with Toolpass([connection(github)], store=BrokenStore()) as tp:
        d = tp.check("rory@example.com", "gh", "issue.update", "repo:acme/widgets")
    assert d.decision == "deny"
    assert not d.cached
    assert permission_lookups(github) >= 1
    assert "shared decision cache" in caplog.text


def test_the_config_files_store_key(github: FakeGitHub, engine_token: str, tmp_path: Path) -> None:
    config = tmp_path / "toolpass.yaml"
    body = textwrap.dedent(
        f"""
        store: sqlite:///{tmp_path}/state.db
        connections:
          - id: gh
            integration: github
            url: {github.api_url}
            token: env:GITHUB_TOKEN
            identity: {{mode: users, users: {{dana@example.com: dana}}}}
        """
    )
    config.write_text(body)
    with Toolpass.from_config(config) as first:
        assert first.config.store == f"sqlite:///{tmp_path}/state.db"
        assert first.check("dana@example.com", "gh", "pr.create", "repo:acme/widgets").allowed
    with Toolpass.from_config(config) as second:
        assert second.check("dana@example.com", "gh", "pr.create", "repo:acme/widgets").cached
    config.write_text(body.replace(f"sqlite:///{tmp_path}/state.db", "postgres://db"))
    with pytest.raises(ConfigError, match=r"line 2: 'store': not a store URL"):
        Toolpass.from_config(config)
