from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakes.tls import make_certs
from toolpass.engine import ConfigError, Secret, Toolpass, env, literal
from toolpass.engine.config import load_config, parse_connections

from .conftest import Demo

pytestmark = pytest.mark.usefixtures("registered")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toolpass.yaml"
    path.write_text(textwrap.dedent(text))
    return path


GOOD = """\
connections:
  - id: demo-main
    integration: demo
    url: https://demo.example.com/api/
    token: env:DEMO_TOKEN
    timeout: 3
    cache_ttl_allow: 30
    identity:
      mode: template
      template: "{local}"
      domains: [example.com]
server:
  api_keys: [env:SERVER_KEY]
"""


def test_a_good_file(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    (conn,) = config.connections
    assert (conn.id, conn.integration, conn.url, conn.timeout) == (
        "demo-main",
        Demo,
        "https://demo.example.com/api",
        3.0,
    )
    assert (conn.cache_ttl_allow, conn.cache_ttl_deny) == (30.0, 15.0)
    assert conn.options == {"token": env("DEMO_TOKEN"), "mode": "strict"}
    assert conn.identity.mode == "template"
    assert conn.identity.domains == ("example.com",)
    assert config.server == {"api_keys": ["env:SERVER_KEY"]}
    assert config.mcp == {}
    assert Toolpass.from_config(config.path or "").connections == ("demo-main",)


def test_the_mcp_section_is_kept_for_its_owner(tmp_path: Path) -> None:
    """toolpass-mcp's proxy validates it (with the lines kept here); core only keeps it."""
    config = load_config(write(tmp_path, GOOD + "mcp:\n  user: dana@example.com\n"))
    assert config.mcp == {"user": "dana@example.com"}
    assert config.mcp.lines == {"user": 15}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("    timeout: 3\n", "    timout: 3\n"),
            r"line 6, connection 'demo-main', key 'timout': unknown key",
        ),
        (
            ("    token: env:DEMO_TOKEN\n", ""),
            r"line 2, connection 'demo-main', key 'token': missing required key",
        ),
        (
            ("env:DEMO_TOKEN", "ghp_0123456789abcdef"),
            r"line 5, connection 'demo-main', key 'token': a secret must be a reference",
        ),
        (("env:DEMO_TOKEN", "vault:x"), r"line 5, .*key 'token'"),
        (
            ("https://demo.example.com/api/", "http://demo.example.com"),
            r"line 4, .*key 'url': must be https://",
        ),
        (
            ("integration: demo", "integration: nosuch"),
            r"line 3, .*key 'integration': no integration named 'nosuch'",
        ),
        (("timeout: 3", "timeout: soon"), r"line 6, .*key 'timeout': must be a number"),
        (("timeout: 3", "timeout: 0"), r"line 6, .*key 'timeout': must be more than 0"),
        (
            ("mode: template", "mode: guess"),
            r"line 9, .*key 'identity.mode': must be one of lookup, template",
        ),
        (
            ("domains: [example.com]", "domains: []"),
            r"line 11, .*key 'identity.domains': a template needs",
        ),
        (('template: "{local}"', 'template: "{local.upper}"'), r"key 'identity.template'"),
        (
            ("    timeout: 3\n", "    timeout: 3\n    timeout: 4\n"),
            r"line 7: duplicate key 'timeout'",
        ),
        (("server:", "sever:"), r"line 12: unknown top-level key 'sever'"),
        (("server:\n  api_keys: [env:SERVER_KEY]", "mcp: [user]"), r"line 12: 'mcp' must be a"),
        (("    url:", "   url:"), r"line 4: not valid YAML"),
    ],
)
def test_errors_name_the_file_line_and_key(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    text = GOOD.replace(*change)
    assert text != GOOD
    path = write(tmp_path, text)
    with pytest.raises(
        ConfigError, match=rf"^{path}, {message}" if "line" in message[:5] else message
    ):
        load_config(path)


def test_duplicate_ids(tmp_path: Path) -> None:
    conn = GOOD.split("connections:\n")[1].split("server:")[0]
    path = write(tmp_path, "connections:\n" + conn + conn)
    with pytest.raises(
        ConfigError, match=r"line 12: duplicate connection id 'demo-main' \(first at .*line 2\)"
    ):
        load_config(path)


def test_choices_and_types(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"key 'mode': must be one of strict, lax"):
        load_config(write(tmp_path, GOOD.replace("    timeout: 3\n", "    mode: loose\n")))
    with pytest.raises(ConfigError, match=r"key 'mode': must be a str"):
        load_config(write(tmp_path, GOOD.replace("    timeout: 3\n", "    mode: 3\n")))


def test_not_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(write(tmp_path, "- 1\n"))
    with pytest.raises(ConfigError, match=r"line 1: 'connections' must be a list"):
        load_config(write(tmp_path, "connections: {}\n"))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"absent.yaml: cannot read"):
        load_config(tmp_path / "absent.yaml")


def test_relative_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    (tmp_path / "token").write_text("t0k\n")
    text = GOOD.replace("env:DEMO_TOKEN", "file:token").replace(
        "    timeout: 3\n", "    ca_file: ca.pem\n"
    )
    (conn,) = load_config(write(tmp_path, text)).connections
    assert conn.net.ca_file == certs.ca_file
    secret = conn.options["token"]
    assert isinstance(secret, Secret)
    assert secret.get() == "t0k"


def test_bad_ca_file(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    text = GOOD.replace("    timeout: 3\n", "    ca_file: ca.pem\n")
    with pytest.raises(ConfigError, match=r"line 6, .*key 'ca_file': cannot load CA file"):
        load_config(write(tmp_path, text))


def test_yaml_extra_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)
    with pytest.raises(ConfigError, match=r"pip install 'toolpass-core\[yaml\]'"):
        load_config(write(tmp_path, GOOD))


def conn(**extra: Any) -> dict[str, Any]:
    return {"id": "d", "integration": Demo, "url": "http://127.0.0.1:1", "token": "env:T", **extra}


def test_code_mappings() -> None:
    (c,) = parse_connections([conn(token=literal("x"), proxy_url="http://127.0.0.1:3128")])
    assert c.origin == "connections[0]"
    assert c.net.proxy_url == "http://127.0.0.1:3128"
    (c,) = parse_connections([{**conn(), "integration": "demo"}])
    assert c.integration is Demo


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"token": "plain"}, r"connections\[0\], connection 'd', key 'token': .*toolpass.literal"),
        ({"url": "https://u:p@x.example"}, "must not carry credentials"),
        ({"url": "ftp://x.example"}, "must be an https:// URL"),
        ({"id": "a b"}, "key 'id': must be letters"),
        ({"proxy_url": "socks5://p:1"}, "key 'proxy_url'"),
        ({"proxy_url": "http://u:p@p:1"}, "proxy credentials are not supported"),
        ({"tls_server_name": ""}, "key 'tls_server_name'"),
        ({"cache_ttl_deny": -1}, "key 'cache_ttl_deny'"),
        ({"identity": {"mode": "http"}}, "mode http needs identity.url"),
        ({"identity": {"resolve": "x"}}, "key 'identity.resolve': must be a callable"),
        ({"identity": {"token": "raw"}}, "key 'identity.token'"),
        ({"identity": {"bogus": 1}}, "key 'identity.bogus': unknown key"),
        ({"integration": object}, "key 'integration': must be an integration name"),
    ],
)
def test_code_errors(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_connections([conn(**extra)])


def test_missing_id_and_url() -> None:
    with pytest.raises(ConfigError, match=r"connections\[0\]: missing required key 'id'"):
        parse_connections([{"integration": Demo}])
    with pytest.raises(ConfigError, match="key 'url': missing required key"):
        parse_connections([{"id": "d", "integration": Demo, "token": "env:T"}])
    with pytest.raises(ConfigError, match="must be a mapping"):
        parse_connections(["demo"])


def test_read_config_gives_the_valid_part_and_every_problem(tmp_path: Path) -> None:
    """What ``toolpass validate`` reports: every connection's problem, not the first only."""
    from toolpass.engine.config import read_config

    broken = GOOD.replace("    timeout: 3\n", "    timout: 3\n")
    second = "  - id: other\n    integration: demoo\n  - id: demo-main\n    integration: demo\n"
    path = write(tmp_path, broken.replace("server:\n", second + "server:\n") + "mcpp: {}\n")
    config, problems = read_config(path)
    assert config.connections == ()
    assert [p.split(": ", 1)[1] for p in problems] == [
        "unknown top-level key 'mcpp' (did you mean 'mcp'?) "
        "(expected connections, server, mcp, store, mode)",
        problems[1].split(": ", 1)[1],
        problems[2].split(": ", 1)[1],
        problems[3].split(": ", 1)[1],
    ]
    assert "key 'timout': unknown key (did you mean 'timeout'?)" in problems[1]
    assert "no integration named 'demoo'" in problems[2]
    assert "key 'token': missing required key" in problems[3]
    with pytest.raises(ConfigError) as first:
        load_config(path)
    assert str(first.value) == problems[0]
