"""A broken third-party distribution breaks only its own integration: one whose metadata
cannot be read (a malformed entry_points.txt, of any group) leaves every other integration,
core's included, loadable and listed; one that exits at import is reported as not loadable,
and ``toolpass catalog`` lists the rest after it."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolpass import Toolpass, integrations
from toolpass.cli import main
from toolpass.integrations.github import GitHub
from toolpass.wire.errors import ConfigError


def _installed(site: Path, name: str, entry_points: str, files: dict[str, str]) -> None:
    """An installed distribution: its files and its .dist-info."""
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.mark.parametrize(
    "entry_points",
    [
        "[toolpass.integrations]\nthis line is no entry point\n",
        "[some.other.group]\njust words\n",
    ],
)
def test_a_distribution_with_unreadable_entry_points_breaks_no_other(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    entry_points: str,
) -> None:
    _installed(tmp_path, "acme-garbled", entry_points, {})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert integrations.get("github") is GitHub
    assert "github" in integrations.available()
    monkeypatch.setenv("GH_TOKEN", "t")
    connection = {"id": "gh", "integration": "github", "token": "env:GH_TOKEN"}
    connection["identity"] = {"mode": "users", "users": {"dana@example.com": "dana"}}
    with Toolpass([connection]) as engine:
        assert engine.connections == ("gh",)
    assert main(["catalog"]) == 0
    assert " github " in " ".join(capsys.readouterr().out.split())


def test_a_plugin_that_exits_at_import_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _installed(
        tmp_path,
        "acme-exits",
        "[toolpass.integrations]\naaexits = acme_exits:INTEGRATION\n",
        {"acme_exits/__init__.py": "import sys\nsys.exit(3)\n"},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"'aaexits' .*acme-exits 1\.0.* cannot be loaded"):
        integrations.get("aaexits")
    assert main(["catalog"]) == 0  # before: the process exited with 3 at 'aaexits'
    out = " ".join(capsys.readouterr().out.split())
    assert "aaexits (cannot be loaded" in out
    assert " github " in out
    assert " zendesk " in out
