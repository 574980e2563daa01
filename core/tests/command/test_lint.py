"""``toolpass lint``: each guard a module builds, every tool and its rule, the tools that run
unchecked, and rules the configuration cannot answer; and the adapter interface itself
(adapters import only ``toolpass.adapting`` of toolpass)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from toolpass.cli import main

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("LINT_GH_TOKEN", "ghp_" + "0" * 36)
    path = tmp_path / "toolpass.yaml"
    path.write_text(
        textwrap.dedent("""\
            connections:
              - id: gh
                integration: github
                url: http://127.0.0.1:9
                token: env:LINT_GH_TOKEN
                identity: {mode: template, template: "{local}", domains: [example.com]}
        """)
    )
    return str(path)


AGENT = """
from toolpass import Toolpass
from toolpass.adapting import Guard, Rule

class Adapter:  # what every adapter is: an object holding its Guard
    def __init__(self, guard):
        self.guard = guard

engine = Toolpass.remote("http://127.0.0.1:9", "k" * 40)
adapter = Adapter(Guard(engine, {"open_pr": Rule("gh", "%s", "repo:{repo}")}))
adapter.guard.add_tools({"open_pr": ["repo", "title"], "read_file": ["path"]})
"""


def lint(
    tmp_path: Path, config: str, action: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    module = tmp_path / "agent.py"
    module.write_text(AGENT % action)
    status = main(["lint", str(module), "-config", config])
    out, err = capsys.readouterr()
    return status, out + err


def test_lint_lists_every_tool_and_the_unchecked_ones(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = lint(tmp_path, config, "pr.create", capsys)
    assert status == 0, out
    assert "adapter:" in out
    assert "open_pr    gh pr.create repo:{repo}" in out
    assert "read_file  UNCHECKED (no rule)" in out
    assert "problem" not in out


def test_lint_finds_an_action_the_configuration_lacks(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = lint(tmp_path, config, "pr.craete", capsys)
    assert status == 1
    assert "problem: the rule for 'open_pr': connection 'gh' has no action 'pr.craete'" in out


def test_lint_reports_a_guard_that_fails_as_it_is_built(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "broken.py"
    module.write_text(
        "from toolpass.adapting import Guard, Rule\n"
        "guard = Guard(object(), {'t': Rule('gh', 'pr.create', 'repo:{repo}')})\n"
    )
    assert main(["lint", str(module), "-config", config]) == 1
    assert "permission engine" in capsys.readouterr().err


def test_lint_without_a_guard_is_bad_usage(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "empty.py"
    module.write_text("x = 1\n")
    assert main(["lint", str(module), "-config", config]) == 3
    assert "no toolpass guard" in capsys.readouterr().err


def test_adapters_import_only_the_adapter_interface_of_toolpass() -> None:
    """Everything an adapter needs comes from ``toolpass.adapting`` (and its own package); a
    program an adapter ships (``toolpass.mcp.proxy``) uses the public API, ``toolpass``."""
    sources = sorted(ROOT.glob("adapters/*/src/toolpass/*/*.py"))
    assert sources
    found: dict[str, set[str]] = {}
    for source in sources:
        own = f"toolpass.{source.parent.name}"
        allowed = (
            {"toolpass.adapting", "toolpass"} if source.stem == "proxy" else {"toolpass.adapting"}
        )
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] != "toolpass" or name == own or name.startswith(own + "."):
                    continue
                if name not in allowed:
                    found.setdefault(str(source.relative_to(ROOT)), set()).add(name)
    assert found == {}
