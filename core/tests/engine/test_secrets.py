from __future__ import annotations

from pathlib import Path

import pytest
from toolpass.engine import Secret, SecretError, env, file, literal
from toolpass.wire.secrets import parse_secret


def test_env_is_read_when_used(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = env("TP_TOKEN")
    monkeypatch.setenv("TP_TOKEN", "first")
    assert secret.get() == "first"
    monkeypatch.setenv("TP_TOKEN", "rotated")
    assert secret.get() == "rotated"


def test_missing_env_names_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TP_MISSING", raising=False)
    with pytest.raises(SecretError, match=r"env:TP_MISSING: environment variable is not set"):
        env("TP_MISSING").get()


def test_file_drops_trailing_newline(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("abc123\n")
    assert file(path).get() == "abc123"


def test_unreadable_file_names_the_path_not_a_value(tmp_path: Path) -> None:
    path = tmp_path / "absent"
    with pytest.raises(SecretError, match=rf"file:{path}: cannot read the file"):
        file(path).get()


def test_empty_value_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_text("\n")
    with pytest.raises(SecretError, match="empty"):
        file(path).get()


def test_repr_never_shows_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_TOKEN", "hunter2")
    for secret in (env("TP_TOKEN"), literal("hunter2")):
        assert "hunter2" not in repr(secret)
        assert "hunter2" not in str(secret)
        assert "hunter2" not in f"{[secret]}"
    assert repr(literal("hunter2")) == "Secret(literal(***))"
    assert repr(env("TP_TOKEN")) == "Secret(env:TP_TOKEN)"


def test_parse_accepts_references() -> None:
    assert parse_secret("env:A_B", allow_literal=False) == env("A_B")
    assert parse_secret("file:/run/x", allow_literal=False) == file("/run/x")
    assert parse_secret(literal("v"), allow_literal=True).get() == "v"


@pytest.mark.parametrize("value", ["ghp_plain_token_value", "env:", "file:", "vault:x", 42, None])
def test_parse_rejects_values_without_echoing_them(value: object) -> None:
    with pytest.raises(SecretError) as info:
        parse_secret(value, allow_literal=False)
    assert "ghp_plain" not in str(info.value)
    assert "env:NAME or file:/path" in str(info.value)


def test_literal_only_where_allowed() -> None:
    with pytest.raises(SecretError, match="literal secret is not allowed"):
        parse_secret(literal("x"), allow_literal=False)


def test_bad_env_name() -> None:
    with pytest.raises(SecretError, match="variable name"):
        env("has space")


def test_secret_is_hashable_and_comparable() -> None:
    assert {env("A"), env("A"), file("/a")} == {env("A"), Secret("file", "/a")}
