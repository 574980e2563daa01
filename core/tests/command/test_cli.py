from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.github import FakeGitHub
from toolpass.cli import main

TOKEN = "ghp_cli"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        gh.add_repo("acme/widgets", {"dana": "write", "rory": "read"})
        gh.add_token(TOKEN)
        yield gh


@pytest.fixture
def config(tmp_path: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CLI_GH_TOKEN", TOKEN)
    path = tmp_path / "toolpass.yaml"
    path.write_text(
        textwrap.dedent(f"""\
            connections:
              - id: gh
                integration: github
                url: {github.api_url}
                token: env:CLI_GH_TOKEN
                identity:
                  mode: template
                  template: "{{local}}"
                  domains: [example.com]
        """)
    )
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_check_exit_status(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(
        capsys,
        "check",
        "dana@example.com",
        "gh",
        "pr.merge",
        "repo:acme/widgets",
        "-config",
        config,
    ) == (
        0,
        "allow: dana has the write role on acme/widgets; pr.merge needs write\n",
        "",
    )
    status, out, _ = run(
        capsys,
        "check",
        "rory@example.com",
        "gh",
        "pr.merge",
        "repo:acme/widgets",
        "--config",
        config,
    )
    assert (status, out.split(":")[0]) == (1, "deny")
    status, out, _ = run(
        capsys,
        "check",
        "rory@elsewhere.io",
        "gh",
        "repo.read",
        "repo:acme/widgets",
        "-config",
        config,
        "-fresh",
    )
    assert (status, out.split(":")[0]) == (2, "unknown")
    for connection, action in (("nope", "repo.read"), ("gh", "repo.teleport")):
        status, out, _ = run(
            capsys,
            "check",
            "dana@example.com",
            connection,
            action,
            "repo:acme/widgets",
            "-config",
            config,
        )
        assert (status, out.split(":")[0]) == (4, "unknown")  # not configured: an operator's
    status, _, err = run(capsys, "check", "dana@example.com", "-config", config)
    assert status == 3  # bad usage
    assert "toolpass:" in err
    status, out, _ = run(
        capsys,
        "check",
        "-json",
        "--config",
        config,
        "dana@example.com",
        "gh",
        "repo.read",
        "repo:acme/widgets",
    )
    assert status == 0
    assert json.loads(out)["decision"] == "allow"


def test_config_from_the_environment(
    config: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPASS_CONFIG", config)
    assert run(capsys, "check", "dana@example.com", "gh", "repo.read", "repo:acme/widgets")[0] == 0


def test_validate(
    config: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(capsys, "validate", "-config", config) == (
        0,
        f"{config}: valid (1 connections: gh)\n",
        "",
    )
    monkeypatch.delenv("CLI_GH_TOKEN")
    status, out, err = run(capsys, "validate", "-config", config)
    assert (status, out) == (1, "")
    assert (
        err == f"toolpass: {config}, line 2, connection 'gh': "
        "secret env:CLI_GH_TOKEN: environment variable is not set\n"
    )
    Path(config).write_text(Path(config).read_text().replace("token:", "tokn:"))
    status, _, err = run(capsys, "validate", "-config", config)
    assert status == 1
    assert "line 5, connection 'gh', key 'tokn': unknown key" in err
    assert err.count("\n") == 1


def test_validate_checks_identity_files(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = Path(config).read_text().split("    identity:")[0]
    Path(config).write_text(text + "    identity:\n      mode: file\n      file: users.json\n")
    status, _, err = run(capsys, "validate", "-config", config)
    assert status == 1
    assert "identity file" in err
    (tmp_path / "users.json").write_text('{"dana@example.com": "dana"}')
    assert run(capsys, "validate", "-config", config)[0] == 0


def test_probe(config: str, github: FakeGitHub, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "probe", "-config", config) == (
        0,
        "gh: ok: token accepted; 4999/5000 requests left\n",
        "",
    )
    github.fail(401, body={"message": "Bad credentials"})
    status, out, _ = run(capsys, "probe", "-config", config, "gh")
    assert status == 1
    assert out.startswith("gh: FAILED: github rejected the engine's credential (HTTP 401)")
    assert run(capsys, "probe", "-config", config, "nope") == (
        3,
        "",
        f"toolpass: no connection 'nope' in {config}\n",
    )


def test_catalog(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # a line per row (test_first_use: it wraps)
    status, out, _ = run(capsys, "catalog")
    assert status == 0
    names = [line.split()[0] for line in out.splitlines() if line[:1].strip()]
    # every shipped integration, sorted (issue #12 adds systems one by one)
    assert names == sorted(names)
    assert {"aws", "confluence", "github", "gitlab", "jira", "kubernetes", "slack"} <= set(names)
    status, out, _ = run(capsys, "catalog", "github")
    assert status == 0
    assert "default url: https://api.github.com" in out
    assert "  not_found              What a 404" in out
    assert "[str, default unknown, one of unknown|deny]" in out
    assert "[secret reference]" in out
    assert "  pr.merge               write        Merge a pull request" in out
    assert run(capsys, "catalog", "nosuch")[0] == 3


@pytest.mark.parametrize(
    ("system", "default"), [("slack", "lookup"), ("kubernetes", "email"), ("bitbucket", "users")]
)
def test_catalog_names_the_identity_mode_a_connection_gets_by_default(
    capsys: pytest.CaptureFixture[str], system: str, default: str
) -> None:
    """What the config gives a connection that names no mode: the system's own look-up, else
    an explicit users mapping (the catalog said "template" for systems without a look-up)."""
    from toolpass import integrations
    from toolpass.wire.identity import parse_identity

    status, out, _ = run(capsys, "catalog", system)
    assert status == 0
    line = next(x for x in out.splitlines() if x.startswith("identity modes:"))
    own = integrations.get(system).identity_modes
    assert line.endswith(f"(default {default})")
    assert parse_identity(None, own, in_code=False).mode == default


def test_serve_without_the_server(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "toolpass.server", None)
    assert run(capsys, "serve", "-config", "x.yaml") == (
        3,
        "",
        "toolpass: serve needs the toolpass-server distribution: pip install toolpass-server\n",
    )


def test_mcp_proxy_without_the_mcp_adapter(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "toolpass.mcp.proxy", None)
    assert run(capsys, "mcp-proxy", "-config", "x.yaml", "--", "server") == (
        3,
        "",
        "toolpass: mcp-proxy needs the toolpass-mcp distribution: "
        "pip install 'toolpass-mcp[proxy]'\n",
    )


def test_mcp_proxy_hands_its_arguments_to_the_proxy(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    proxy = types.ModuleType("toolpass.mcp.proxy")
    proxy.main = lambda argv: seen.append(argv) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toolpass.mcp.proxy", proxy)
    assert run(capsys, "mcp-proxy", "-config", "x.yaml", "--", "srv", "-v")[0] == 0
    assert seen == [["-config", "x.yaml", "--", "srv", "-v"]]


def test_serve_hands_its_arguments_to_the_server(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    server = types.ModuleType("toolpass.server")
    server.main = lambda argv: seen.append(argv) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toolpass.server", server)
    assert run(capsys, "serve", "-config", "x.yaml", "--port", "8080")[0] == 0
    assert seen == [["-config", "x.yaml", "--port", "8080"]]


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["check", "a", "b"],
        ["check", "a", "b", "c", "d", "--fast"],
        ["validate", "-config"],
    ],
)
def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    status, _, err = run(capsys, *argv)
    assert status == 3
    assert err.startswith("toolpass: ")
    assert err.count("\n") == 1


def test_missing_config_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "absent.yaml"
    assert run(capsys, "check", "u@x.io", "gh", "repo.read", "repo:a/b", "-config", str(path)) == (
        3,
        "",
        f"toolpass: {path}: cannot read (No such file or directory)\n",
    )


def test_as_a_real_process(config: str) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    allowed = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolpass.cli",
            "check",
            "dana@example.com",
            "gh",
            "pr.create",
            "repo:acme/widgets",
            "-config",
            config,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert (allowed.returncode, allowed.stdout.split(":")[0], allowed.stderr) == (0, "allow", "")
    broken = subprocess.run(
        [sys.executable, "-m", "toolpass.cli", "validate", "-config", config + ".missing"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert broken.returncode == 1
    assert "Traceback" not in broken.stderr
    assert broken.stderr.count("\n") == 1


def test_routes_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "routes", "kubernetes", "-action", "scale")
    assert status == 0
    header, *rows = out.splitlines()
    assert header.split() == ["METHOD", "PATH", "ACTION", "RESOURCE", "EFFECT", "FLAGS"]
    assert rows
    assert all(" scale " in row for row in rows)
    assert any("/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale" in r for r in rows)
    assert f"{len(rows)} routes" in err


def test_routes_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "routes", "kubernetes", "--json")
    assert status == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) > 1000
    assert ["GET", "/version/", "get", "/version/", "read", "a"] in rows


def test_routes_of_an_unknown_integration(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "routes", "nosuch")
    assert out == ""
    assert status == 3
    assert err.startswith("toolpass: no integration named 'nosuch'")


def test_demo_prints_the_transcript_and_the_audit_log(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "demo")
    assert status == 0
    assert "refused: exfiltration" in out
    assert "refused: untrusted_input" in out
    assert "open_gitops_pr     ok" in out
    assert "refused: not_authorized" in out


def test_validate_says_when_the_server_section_is_not_checked(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if importlib.util.find_spec("toolpass.server") is not None:
        pytest.skip("toolpass-server is installed: its own tests check the section")
    Path(config).write_text(Path(config).read_text() + "server:\n  api_keys: [env:NOPE]\n")
    status, out, _ = run(capsys, "validate", "-config", config)
    assert status == 0
    assert "server: not checked (needs toolpass-server)" in out
