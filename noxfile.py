"""Every check of the repository, one session each; `nox` runs them all.

Each session builds its own environment (with uv when it is there), so the frameworks of
different adapters never share one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True
nox.options.sessions = ["lint", "typecheck", "core", "server", "wheels", "demo"]
PYTHON = "3.11"


def test_group(project: Path) -> list[str]:
    return nox.project.dependency_groups(nox.project.load_toml(project / "pyproject.toml"), "test")


@nox.session(python=PYTHON)
def core(session: nox.Session) -> None:
    """toolpass-core's tests."""
    session.install("-e", "core[yaml,crypto]", *test_group(ROOT / "core"))
    session.run("pytest", "core/tests", "-q", *session.posargs)


@nox.session(python=PYTHON)
def server(session: nox.Session) -> None:
    """toolpass-server's tests: the server as a real process, the app, deploy/ linted."""
    session.install(
        "-e", "core[yaml]", "-e", "packages/server", *test_group(ROOT / "packages/server")
    )
    session.run("pytest", "packages/server/tests", "-q", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    session.install("ruff>=0.8")
    session.run("ruff", "check", ".")
    session.run(
        "ruff", "format", "--check", "core", "packages", "tests", "bench", "examples", "noxfile.py"
    )


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict on core."""
    session.install("mypy>=1.11", "types-PyYAML", "-e", "core[yaml,crypto]")
    session.run("mypy", "--strict", "core/src/toolpass")
    session.install("-e", "packages/server")
    session.run("mypy", "--strict", "-p", "toolpass.server")


@nox.session(python=PYTHON)
def wheels(session: nox.Session) -> None:
    """Build every distribution; check metadata and the shared `toolpass` namespace."""
    session.install("pytest>=8", "uv")
    session.run("pytest", "tests/packaging", "-q", *session.posargs)


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The scripted ops-agent session of examples/ops_agent.py."""
    session.install("-e", "core")
    session.run("python", "examples/ops_agent.py")


@nox.session(python=PYTHON, default=False)
def bench(session: nox.Session) -> None:
    """Overheads, as ratios against a baseline measured in the same run."""
    session.install("-e", "core[yaml,crypto]", "-e", "packages/server")
    for script in sorted((ROOT / "bench").glob("bench_*.py")):
        session.run("python", str(script.relative_to(ROOT)), *session.posargs)


@nox.session(python=False, default=False)
def clean(session: nox.Session) -> None:
    """Remove nox environments and build output."""
    for path in (".nox", "dist", "build"):
        shutil.rmtree(ROOT / path, ignore_errors=True)
