"""The ``server:`` section: defaults, every key, and errors naming the file, line and key."""

from __future__ import annotations

import textwrap
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass.engine import ConfigError, literal
from toolpass.engine.config import load_config
from toolpass.server import ServerConfig, parse_server_config


def parse_yaml(tmp_path: Path, server: str) -> ServerConfig:
    path = tmp_path / "toolpass.yaml"
    path.write_text("connections: []\nserver:\n" + textwrap.indent(textwrap.dedent(server), "  "))
    config = load_config(path)
    return parse_server_config(config.server, source=str(path), base_dir=str(tmp_path))


def test_defaults_and_every_key(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_text("x")
    (tmp_path / "tls.key").write_text("x")
    minimal = parse_yaml(tmp_path, "api_keys: [env:TP_A]\n")
    assert minimal == ServerConfig(minimal.api_keys)
    assert (minimal.host, minimal.port, minimal.workers, minimal.max_body_bytes) == (
        "127.0.0.1",
        8080,
        1,
        16384,
    )
    assert (minimal.scheme, minimal.access_log, minimal.shutdown_timeout) == ("http", True, 30.0)
    full = parse_yaml(
        tmp_path,
        """\
        api_keys:
          - env:TP_A
          - name: deploy-bot
            key: file:keys/deploy
        host: 0.0.0.0
        port: 9000
        workers: 4
        threads: 8
        max_body_bytes: 4096
        access_log: false
        shutdown_timeout: 5
        keep_alive_timeout: 2.5
        tls_cert_file: tls.crt
        tls_key_file: tls.key
        """,
    )
    assert [(k.name, k.secret.reference) for k in full.api_keys] == [
        ("env:TP_A", "env:TP_A"),
        ("deploy-bot", f"file:{tmp_path}/keys/deploy"),
    ]
    assert (full.host, full.port, full.workers, full.max_body_bytes, full.access_log) == (
        "0.0.0.0",
        9000,
        4,
        4096,
        False,
    )
    assert (full.shutdown_timeout, full.keep_alive_timeout, full.threads) == (5.0, 2.5, 8)
    assert (full.tls_cert_file, full.scheme) == (str(tmp_path / "tls.crt"), "https")
    assert full.replace(port=1, host=None).port == 1
    assert full.replace(port=1, host=None).host == "0.0.0.0"


A = "api_keys: [env:A]\n"
ERRORS = [
    (A + "color: red\n", 4, "color", "unknown key (expected one of api_keys, host"),
    ("port: 8080\n", 3, "api_keys", "missing; the server needs at least one API key"),
    ("api_keys: env:A\n", 3, "api_keys", "must be a non-empty list"),
    ("api_keys: []\n", 3, "api_keys", "must be a non-empty list"),
    ("api_keys: [hunter2hunter2hunter2]\n", 3, "api_keys[0]", "a secret must be a reference"),
    ("api_keys:\n- name: a\n  key: plain-value\n", 5, "api_keys[0]", "a secret must be a"),
    ("api_keys:\n  - name: a\n", 4, "api_keys[0]", "missing 'key'"),
    ("api_keys:\n- key: env:A\n  role: x\n", 5, "api_keys[0].role", "unknown key (expected name"),
    ("api_keys:\n- {name: 'bad name', key: env:A}\n", 4, "api_keys[0].name", "a key name is"),
    ("api_keys:\n- env:A\n- {name: env:A, key: env:B}\n", 5, "api_keys[1].name", "duplicate"),
    (A + "port: 70000\n", 4, "port", "must be a whole number from 0 to 65535"),
    (A + "port: '8080'\n", 4, "port", "must be a whole number"),
    (A + "workers: 0\n", 4, "workers", "from 1 to 64"),
    (A + "threads: 0\n", 4, "threads", "from 1 to 1024"),
    (A + "max_body_bytes: true\n", 4, "max_body_bytes", "must be a whole number"),
    (A + "max_body_bytes: 10\n", 4, "max_body_bytes", "from 256 to"),
    (A + "access_log: 'yes'\n", 4, "access_log", "must be true or false"),
    (A + "shutdown_timeout: 0\n", 4, "shutdown_timeout", "more than 0"),
    (A + "host: ''\n", 4, "host", "must be a non-empty string"),
    (A + "tls_cert_file: c.pem\n", 4, "tls_cert_file", "needs tls_key_file as well"),
    (A + "public_url: toolpass.example.com\n", 4, "public_url", "must be an http(s) URL"),
    (A + "public_url: ftp://tp.example.com\n", 4, "public_url", "must be an http(s) URL"),
    (A + "public_url: https://tp.example.com/?a=1\n", 4, "public_url", "no query"),
    (A + "public_url: https://tp.example.com/#top\n", 4, "public_url", "no query"),
    (A + "public_url: https://me@tp.example.com\n", 4, "public_url", "no user"),
    (A + "public_url: 'https://tp.example.com:99999'\n", 4, "public_url", "must be an http(s)"),
    (A + "tls_cert_file: c.pem\ntls_key_file: k.pem\n", 4, "tls_cert_file", "no such file"),
]


@pytest.mark.parametrize(("server", "line", "key", "message"), ERRORS)
def test_errors_name_the_file_line_and_key(
    tmp_path: Path, server: str, line: int, key: str, message: str
) -> None:
    where = f"line {line}, server key {key!r}"
    with pytest.raises(ConfigError) as caught:
        parse_yaml(tmp_path, server)
    text = str(caught.value)
    assert text.startswith(f"{tmp_path / 'toolpass.yaml'}, ")
    assert f"{where}: " in text, text
    assert message in text.split(f"{where}: ", 1)[1]
    assert "hunter2" not in text
    assert "plain-value" not in text


def test_the_server_section_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError, match="'server' must be a mapping"):
        parse_server_config(["api_keys"])  # type: ignore[arg-type]


def test_in_code() -> None:
    config = parse_server_config({"api_keys": [literal("k" * 20), "env:TP_B"]})
    assert [k.name for k in config.api_keys] == ["key0", "env:TP_B"]
    assert "kkkk" not in repr(config)
    with pytest.raises(ConfigError, match=r"^server key 'port': must be a whole number"):
        parse_server_config({"api_keys": ["env:A"], "port": -1})
    with pytest.raises(ConfigError, match="a literal secret is not allowed here"):
        parse_server_config({"api_keys": [literal("k" * 20)]}, source="x.yaml")


def test_keys_resolve_late_and_by_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "deploy").write_text("deploy-key-0123456789abcdef\n")
    monkeypatch.setenv("TP_A", "a-key-0123456789abcdef")
    config = parse_yaml(
        tmp_path, "api_keys:\n  - env:TP_A\n  - name: deploy\n    key: file:keys/deploy\n"
    )
    names = [name for name, _ in config.resolve_keys()]
    assert names == ["env:TP_A", "deploy"]
    monkeypatch.delenv("TP_A")
    with pytest.raises(ConfigError) as caught:
        config.resolve_keys()
    assert str(caught.value) == (
        f"{tmp_path / 'toolpass.yaml'}, line 3, server key 'api_keys[0]': "
        "secret env:TP_A: environment variable is not set"
    )


def test_toolpass_validate_checks_the_server_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolpass.cli import main

    path = tmp_path / "toolpass.yaml"
    path.write_text("connections: []\nserver:\n  api_keys: [env:TP_VALIDATE_KEY]\n")
    monkeypatch.setenv("TP_VALIDATE_KEY", "short")
    assert main(["validate", "-config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "TP_VALIDATE_KEY" in err
    assert "at least" in err
    monkeypatch.delenv("TP_VALIDATE_KEY")
    assert main(["validate", "-config", str(path)]) == 1
    assert "TP_VALIDATE_KEY" in capsys.readouterr().err
    monkeypatch.setenv("TP_VALIDATE_KEY", "k" * 40)
    assert main(["validate", "-config", str(path)]) == 0
    assert "valid" in capsys.readouterr().out
    path.write_text("connections: []\nserver:\n  api_keys: [env:TP_VALIDATE_KEY]\n  prot: 1\n")
    assert main(["validate", "-config", str(path)]) == 1
    assert "prot" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("https://toolpass.example.com", "https://toolpass.example.com"),
        ("https://toolpass.example.com/", "https://toolpass.example.com"),
        ("http://10.0.0.5:8080/toolpass/", "http://10.0.0.5:8080/toolpass"),
        ("https://[2001:db8::1]:8443", "https://[2001:db8::1]:8443"),
    ],
)
def test_the_public_url_is_kept_without_a_trailing_slash(
    tmp_path: Path, written: str, kept: str
) -> None:
    assert parse_yaml(tmp_path, f"{A}public_url: '{written}'\n").public_url == kept


def test_toolpass_validate_accepts_and_rejects_the_public_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolpass.cli import main

    path = tmp_path / "toolpass.yaml"
    monkeypatch.setenv("TP_VALIDATE_KEY", "k" * 40)
    head = "connections: []\nserver:\n  api_keys: [env:TP_VALIDATE_KEY]\n"
    path.write_text(head + "  public_url: https://toolpass.example.com\n")
    assert main(["validate", "-config", str(path)]) == 0
    path.write_text(head + "  public_url: toolpass.example.com\n")
    assert main(["validate", "-config", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}, line 4, server key 'public_url': must be an http(s) URL" in err


@settings(max_examples=300, deadline=None)
@given(
    url=st.one_of(
        st.text(max_size=60),
        st.builds(
            "{}://{}{}".format,
            st.sampled_from(["http", "https", "HTTP", "ftp", ""]),
            st.text(alphabet="abc.:@[]1-", max_size=20),
            st.text(alphabet="/?#%ab ", max_size=12),
        ),
    )
)
def test_an_accepted_public_url_is_an_http_url_with_nothing_but_a_path(url: str) -> None:
    section = {"api_keys": ["env:A"], "public_url": url}
    try:
        kept = parse_server_config(section).public_url
    except ConfigError as refused:
        message = str(refused)
    else:
        message = ""
    if message:
        assert message.startswith("server key 'public_url': ")
        return
    assert kept is not None
    parts = urllib.parse.urlsplit(kept)
    assert parts.scheme in ("http", "https")
    assert parts.hostname
    assert (parts.username, parts.password, parts.query, parts.fragment) == (None, None, "", "")
    assert "?" not in kept
    assert "#" not in kept
    assert kept.isprintable()
    assert not kept.endswith("/")
