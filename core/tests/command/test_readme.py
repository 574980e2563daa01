"""What the README shows works as shown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from toolpass import Toolpass
from toolpass.cli import main

README = Path(__file__).resolve().parents[3] / "README.md"


def test_the_readme_configuration_is_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    [block] = re.findall(r"```yaml\n(.*?)```", README.read_text(), re.S)
    config = tmp_path / "toolpass.yaml"
    config.write_text(block)
    for name in ("GITHUB_TOKEN", "KUBE_TOKEN", "TOOLPASS_API_KEY"):
        monkeypatch.setenv(name, "x" * 20)
    assert main(["validate", "-config", str(config)]) == 0, capsys.readouterr()
    with Toolpass.from_config(config) as tp:
        assert tp.connections == ("github", "cluster")
        assert tp.config.server["api_keys"] == ["env:TOOLPASS_API_KEY"]


def test_the_readme_quickstart_is_what_ci_runs() -> None:
    text = README.read_text()
    quickstart = text[text.index("## Quickstart") :].split("## ", 2)[1]
    commands = re.findall(r"^(python3 dev\.py \w+)", quickstart, re.M)
    assert commands == ["python3 dev.py demo", "python3 dev.py test"]
    ci = (README.parent / ".ci" / "run").read_text()
    assert "python3 dev.py test" in ci
