"""A fresh machine follows the README's "Use it" block literally: a new virtual environment,
the packages installed from the checkout, an example run. The commands are read from
README.md and run one by one with bash, in a copy of the checkout's folders they name."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JUNK = shutil.ignore_patterns(
    "__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", "build", "dist", "*.egg-info"
)


def commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Use it\n") :].split("\n## ", 2)[1]
    [block] = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [line for line in block.splitlines() if line.strip()]


def test_the_use_it_block_installs_and_runs_an_example(tmp_path: Path) -> None:
    steps = commands()
    assert steps[0].startswith("python3 -m venv ")
    # Copy every folder of the checkout the commands name (./core, ./adapters/x, examples/).
    named = set(
        re.findall(
            r"(?:\./)?((?:core|adapters/[\w-]+|packages/[\w-]+|examples))\b", "\n".join(steps)
        )
    )
    assert "examples" in named
    for folder in sorted(named):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=JUNK)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "VIRTUAL_ENV"))}
    out = ""
    for step in steps:
        done = subprocess.run(
            ["bash", "-ec", step],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{step}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        out = done.stdout
    # The last command ran the example: the story, told through the framework's loop.
    assert "deleted PAY-1" in out
    assert "Refused by toolpass (not_authorized)" in out
    assert "Refused by toolpass (exfiltration)" in out
    assert "deployed payments-api 2.4.1" in out
