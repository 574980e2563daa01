"""What a new user trips on first, through the real ``toolpass`` command: ``--version``,
every command's ``--help``, the exit status of a malformed resource, ``audit filter``
finding nothing, ``routes`` and ``catalog`` as tables a terminal shows, ``lint`` of a file."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from unittest import mock

import pytest
from fakes.github import FakeGitHub
from hypothesis import example, given, settings
from hypothesis import strategies as st
from toolpass import __version__
from toolpass.cli import main


def toolpass(*argv: str) -> subprocess.CompletedProcess[str]:
    """The installed command, as a user runs it."""
    env = {**os.environ, "COLUMNS": "100", "TOOLPASS_AUDIT": "off"}
    return subprocess.run(
        [sys.executable, "-m", "toolpass.cli", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_version() -> None:
    done = toolpass("--version")
    assert (done.returncode, done.stdout) == (0, f"toolpass {__version__}\n")


@pytest.mark.parametrize(
    "command",
    [
        ["demo"],
        ["catalog"],
        ["routes"],
        ["validate"],
        ["lint"],
        ["audit"],
        ["audit", "filter"],
        ["audit", "tail"],
        ["audit", "summary"],
    ],
)
def test_every_command_says_what_it_does_in_its_help(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--help"]) == 0
    usage, description, *_ = capsys.readouterr().out.split("\n\n")
    assert usage.startswith("usage: toolpass")
    assert len(description.split()) >= 3, description


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        gh.add_repo("acme/widgets", {"dana": "write"})
        gh.add_token("ghp_first")
        yield gh


def test_check_a_malformed_resource_is_bad_usage(
    tmp_path: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIRST_GH_TOKEN", "ghp_first")
    config = tmp_path / "toolpass.yaml"
    config.write_text(
        textwrap.dedent(f"""\
            connections:
              - id: gh
                integration: github
                url: {github.api_url}
                token: env:FIRST_GH_TOKEN
                identity: {{mode: template, template: "{{local}}", domains: [example.com]}}
        """)
    )
    argv = ["check", "dana@example.com", "gh", "repo.read", "-config", str(config)]
    assert main([*argv, "widgets-without-an-owner"]) == 3
    assert main([*argv, "repo:acme/widgets"]) == 0


EVENT = {
    "time": "2026-01-01T00:00:00Z",
    "user": "dana@example.com",
    "tool": "merge_pr",
    "outcome": "ok",
    "code": None,
}


def test_audit_filter_with_no_match_says_so_and_exits_1_like_grep(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    log.write_text(json.dumps(EVENT) + "\n")
    none = toolpass("audit", "filter", "--user", "rory@*", str(log))
    assert (none.returncode, none.stdout, none.stderr) == (1, "", "toolpass: no event matched\n")
    one = toolpass("audit", "filter", "--user", "dana@*", str(log))
    assert (one.returncode, one.stderr) == (0, "")
    assert "merge_pr" in one.stdout


def test_routes_is_a_table_with_a_header_and_straight_columns() -> None:
    done = toolpass("routes", "github")
    header, *rows = done.stdout.splitlines()
    assert done.returncode == 0
    assert header.split() == ["METHOD", "PATH", "ACTION", "RESOURCE", "EFFECT", "FLAGS"]
    starts = [header.index(name) for name in header.split()]
    for row in rows:
        for start in starts[1:]:
            if len(row) > start:  # an empty last cell is left off
                assert row[start - 2 : start] == "  ", row  # each cell starts at its column
    assert len(rows) > 100


@given(columns=st.integers(min_value=80, max_value=200))
@example(columns=80)
@example(columns=200)
@settings(max_examples=3, deadline=None)  # each example lists the catalog three times
def test_catalog_wraps_to_the_terminal(columns: int) -> None:
    # In this process (a new one would spend most of its time importing): the width is
    # what the terminal says through COLUMNS, as shutil reads it in the command.
    for argv in (["catalog"], ["catalog", "argocd"], ["catalog", "zendesk"]):
        out = io.StringIO()
        with mock.patch.dict(os.environ, {"COLUMNS": str(columns)}), redirect_stdout(out):
            assert main(argv) == 0
        assert max(map(len, out.getvalue().splitlines())) <= columns, argv


LINTED = """\
from __future__ import annotations

from dataclasses import dataclass

from helper import RULES  # a module beside the file
from toolpass.adapting import Guard


@dataclass
class Repo:
    owner: str
    name: str | None = None


guard = Guard(None, RULES)
"""


def test_lint_a_file_beside_its_own_modules(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("RULES = {}\n")
    (tmp_path / "agent.py").write_text(LINTED)
    (tmp_path / "toolpass.yaml").write_text("connections: []\n")
    done = subprocess.run(
        [sys.executable, "-m", "toolpass.cli", "lint", str(tmp_path / "agent.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path.parent,
        env={**os.environ, "TOOLPASS_CONFIG": str(tmp_path / "toolpass.yaml")},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("guard:")
    assert "internal error" not in done.stderr


def test_lint_of_a_module_that_fails_to_import_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("import no_such_module_anywhere\n")
    done = toolpass("lint", str(tmp_path / "agent.py"))
    assert done.returncode == 3
    assert done.stderr == (
        f"toolpass: cannot import {tmp_path / 'agent.py'}: ModuleNotFoundError: "
        "No module named 'no_such_module_anywhere'\n"
    )
