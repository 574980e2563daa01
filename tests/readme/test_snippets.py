"""Every ```python block of README.md runs as written, each in a fresh interpreter.

A block preceded by ``<!-- requires: a, b -->`` needs those modules (``toolpass.langchain``,
``github``): it is skipped only where one is absent (the ``readme`` nox session has them all).
Each block runs in a temporary folder holding the README's ``toolpass.yaml``, with the
environment variables the README names set to placeholder secrets, and no network: the
engine's look-ups fail there, which makes its decisions ``unknown``, as offline they are.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"(?:<!-- requires: (?P<needs>[^>]*?) -->\n)?```python\n(?P<code>.*?)```", re.S)
SECRETS = ("GITHUB_TOKEN", "KUBE_TOKEN", "TOOLPASS_API_KEY", "GITHUB_BOT_TOKEN")


def blocks() -> list[tuple[int, list[str], str]]:
    text = README.read_text(encoding="utf-8")
    return [
        (
            text.count("\n", 0, m.start("code")) + 1,
            [n.strip() for n in (m["needs"] or "").split(",") if n.strip()],
            m["code"],
        )
        for m in BLOCK.finditer(text)
    ]


def test_the_readme_has_python_blocks() -> None:
    assert len(blocks()) >= 4


@pytest.mark.parametrize(
    ("line", "needs", "code"), blocks(), ids=lambda v: f"line {v}" if isinstance(v, int) else ""
)
def test_the_block_runs_as_written(tmp_path: Path, line: int, needs: list[str], code: str) -> None:
    for module in needs:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module}")
    [config] = re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    (tmp_path / "toolpass.yaml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "TOOLPASS_"))}
    env.update({name: "placeholder-" + "x" * 32 for name in SECRETS})
    env["LANGSMITH_TRACING"] = "false"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"README.md line {line}:\n{code}\n{done.stderr[-3000:]}"
