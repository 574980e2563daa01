"""``toolpass validate`` checks the sections the installed companions read, as they read
them: ``server:`` with the file's ``store:`` (toolpass-server), ``mcp:`` with its rules
against the connections (toolpass-mcp). Each test runs where its companion is installed
(the server and the mcp adapter sessions)."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from toolpass.cli import main


def installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


CONNECTIONS = """\
connections:
  - id: gh
    integration: github
    url: http://127.0.0.1:9
    token: env:SECTIONS_GH_TOKEN
    identity: {mode: template, template: "{local}", domains: [example.com]}
"""


def validate(
    tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, list[str]]:
    path = tmp_path / "toolpass.yaml"
    path.write_text(CONNECTIONS + textwrap.dedent(text))
    status = main(["validate", "-config", str(path)])
    out, err = capsys.readouterr()
    return status, out, err.splitlines()


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECTIONS_GH_TOKEN", "ghp_sections")
    monkeypatch.setenv("SECTIONS_SERVICE", "tp-service-key-0123456789abcdef")
    monkeypatch.setenv("SECTIONS_APPROVER", "approver-lee-0123456789abcdef")


@pytest.mark.skipif(not installed("toolpass.server"), reason="needs toolpass-server")
def test_the_approvals_page_with_the_top_level_store_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, problems = validate(
        tmp_path,
        f"""\
        store: sqlite://{tmp_path}/state.db
        server:
          api_keys: [env:SECTIONS_SERVICE]
          approvals:
            api_keys: [env:SECTIONS_APPROVER]
        """,
        capsys,
    )
    assert (status, problems) == (0, [])
    assert out.endswith("valid (1 connections: gh)\n")


@pytest.mark.skipif(not installed("toolpass.mcp.proxy"), reason="needs toolpass-mcp")
def test_a_broken_mcp_section_is_every_problem_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, problems = validate(
        tmp_path,
        """\
        mcp:
          user: dana@example.com
          rules:
            merge_pr: {connection: gh, action: pr.mrege, resource: "repo:{repo}"}
            close_issue, reopen_issue:
              connection: ghub
              action: issue.write
              resource: "issue:{repo}#{number}"
        """,
        capsys,
    )
    path = tmp_path / "toolpass.yaml"
    assert (status, out) == (1, "")
    assert problems == [
        f"toolpass: {path}, line 10: the mcp rule for 'merge_pr': connection 'gh' (github) "
        "has no action 'pr.mrege' (did you mean 'pr.merge'?) (toolpass catalog github)",
        f"toolpass: {path}, line 11: the mcp rule for 'close_issue, reopen_issue': no "
        "connection 'ghub' (did you mean 'gh'?)",
    ]


@pytest.mark.skipif(not installed("toolpass.mcp.proxy"), reason="needs toolpass-mcp")
def test_an_unknown_mcp_key_is_named_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, problems = validate(
        tmp_path, "mcp:\n  user: dana@example.com\n  strcit: true\n", capsys
    )
    assert status == 1
    assert problems == [
        f"toolpass: {tmp_path / 'toolpass.yaml'}, line 9: unknown key 'strcit' in mcp "
        "(expected one of user, strict, audit, rules, upstream_env, approvals_url)"
    ]


@pytest.mark.skipif(installed("toolpass.mcp.proxy"), reason="toolpass-mcp is installed")
def test_an_mcp_section_without_toolpass_mcp_is_said_to_be_unchecked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = validate(tmp_path, "mcp:\n  user: dana@example.com\n", capsys)
    assert status == 0
    assert out.endswith("; mcp: not checked (needs toolpass-mcp)\n")
