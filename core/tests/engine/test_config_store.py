"""The configuration's ``store:`` key: a URL, or a secret reference to one (a Redis URL may
hold a password, so a deployment keeps it in a secret)."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolpass.engine.config import load_config
from toolpass.wire.errors import ConfigError

SECRET_URL = "redis://:s3cret-pass@redis.internal:6379/0"


def config(tmp_path: Path, store: str) -> Path:
    path = tmp_path / "toolpass.yaml"
    path.write_text(f"connections: []\nstore: {store}\n")
    return path


def test_a_plain_url(tmp_path: Path) -> None:
    assert load_config(config(tmp_path, "redis://r:6379/0")).store == "redis://r:6379/0"


def test_a_url_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_STORE_URL", SECRET_URL)
    loaded = load_config(config(tmp_path, "env:TP_STORE_URL"))
    assert loaded.store == SECRET_URL
    assert "s3cret" not in repr(loaded)


def test_a_url_from_a_file_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "store-url").write_text(f"sqlite:///{tmp_path}/state.db\n")
    assert load_config(config(tmp_path, "file:store-url")).store == f"sqlite:///{tmp_path}/state.db"


def test_a_missing_secret_is_an_error_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TP_STORE_URL", raising=False)
    with pytest.raises(ConfigError, match=r"line 2: 'store': secret env:TP_STORE_URL"):
        load_config(config(tmp_path, "env:TP_STORE_URL"))


def test_a_secret_that_is_no_store_url_is_not_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TP_STORE_URL", "postgres://u:s3cret-pass@db/x")
    with pytest.raises(ConfigError, match=r"the secret env:TP_STORE_URL is not a store URL") as e:
        load_config(config(tmp_path, "env:TP_STORE_URL"))
    assert "s3cret" not in str(e.value)
