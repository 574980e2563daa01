"""Every check of the repository, one session each; `nox` runs them all.

Each session builds its own environment (with uv when it is there), so the frameworks of
different adapters never share one.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True
PYTHON = "3.11"
#: adapters/<folder> -> the module it adds (toolpass.<module>) and its integration test.
ADAPTERS = {
    folder: folder.replace("-", "_")
    for folder in sorted(p.parent.name for p in ROOT.glob("adapters/*/pyproject.toml"))
}
#: `nox` alone runs each adapter once, from built wheels (the shape users install); the
#: workspace (editable) variant is for development, by its name:
#:     nox -s "adapter(name='mcp', install='workspace')"
nox.options.sessions = [
    "lint",
    "typecheck",
    "core",
    "server",
    "kit",
    *(f"adapter(name='{name}', install='wheels')" for name in ADAPTERS),
    "wheels",
    "demo",
    "readme",
    "docs",
]
#: What the shared scenario of integration-tests/ needs beside the adapter's own test group.
#: `toolpass validate`'s tests of the sections a companion distribution reads (server:, mcp:),
#: run where that companion is installed (core's own session has neither).
VALIDATE_SECTIONS = "core/tests/command/test_validate_sections.py"
SCENARIO = ["PyGithub>=2.3", "cryptography>=42", "pytest>=8", "pytest-asyncio>=0.24"]


def test_group(project: Path) -> list[str]:
    return nox.project.dependency_groups(nox.project.load_toml(project / "pyproject.toml"), "test")


@nox.session(python=PYTHON)
def core(session: nox.Session) -> None:
    """toolpass-core's tests."""
    session.install(
        "-e", "core[yaml,crypto]", "-e", "packages/pytest-toolpass", *test_group(ROOT / "core")
    )
    # Two processes on this 2-core machine; more wherever there are more cores.
    session.run("pytest", "core/tests", "-q", "-n", "auto", *session.posargs)


@nox.session(python=PYTHON, default=False)
def quick(session: nox.Session) -> None:
    """Core's first tier (`python3 dev.py test --quick`), where no vendor library is
    installed: the test files that import nothing beside toolpass-core, its extras and the
    test tools (core/tests/conftest.py picks them)."""
    tools = ["pytest>=8", "pytest-asyncio>=0.24", "hypothesis>=6.100", "pytest-xdist>=3.5"]
    # The otel extra's tests configure a tracer provider: the SDK is theirs.
    session.install("-e", "core[yaml,crypto,otel]", "opentelemetry-sdk>=1.20", *tools)
    session.run("pytest", "core/tests", "--quick", "-q", "-n", "auto", *session.posargs)


@nox.session(python=PYTHON)
def server(session: nox.Session) -> None:
    """toolpass-server's tests: the server as a real process, the app, deploy/ linted."""
    session.install(
        "-e", "core[yaml]", "-e", "packages/server", *test_group(ROOT / "packages/server")
    )
    session.run("pytest", "packages/server/tests", "-q", *session.posargs)
    session.run("pytest", VALIDATE_SECTIONS, "-q", "-p", "no:cacheprovider", "--noconftest")
    session.install("mypy>=1.11")
    session.run("mypy", "--strict", "-p", "toolpass.server")


@nox.session(python=PYTHON)
def kit(session: nox.Session) -> None:
    """pytest-toolpass: the conformance suite, against a reference loop and broken adapters."""
    session.install(
        "-e",
        "core",
        "-e",
        "packages/pytest-toolpass",
        *test_group(ROOT / "packages/pytest-toolpass"),
    )
    session.run("pytest", "packages/pytest-toolpass/tests", "-q", *session.posargs)
    session.install("mypy>=1.11")
    session.run("mypy", "--strict", "-p", "pytest_toolpass")


@nox.session(python=PYTHON)
@nox.parametrize("install", ["wheels", "workspace"])
@nox.parametrize("name", list(ADAPTERS))
def adapter(session: nox.Session, name: str, install: str) -> None:
    """One adapter in its own environment: its tests (the conformance suite through the
    framework's real loop), its integration test, its example (examples/) and mypy --strict
    on the installed package (typed like core, against the framework's own types), from
    built wheels or the workspace (editable; not in the default list)."""
    projects = [ROOT / "core", ROOT / "adapters" / name, ROOT / "packages/pytest-toolpass"]
    deps = [*test_group(ROOT / "adapters" / name), *SCENARIO]
    if install == "wheels":
        out = Path(tempfile.mkdtemp(prefix="toolpass-wheels-"))
        for project in projects:
            session.run("uv", "build", "-q", "--wheel", "-o", str(out), str(project), external=True)
        session.install(*map(str, sorted(out.glob("*.whl"))), *deps)
    else:
        session.install(*(a for p in projects for a in ("-e", str(p))), *deps)
    module = ADAPTERS[name]
    session.run(
        "pytest",
        f"adapters/{name}/tests",
        f"integration-tests/test_{module}.py",
        "integration-tests/test_examples.py",  # runs examples/<module>_agent.py
        "-q",
        "-p",
        "no:cacheprovider",
        # Both paths make the repository's root the rootdir, whose pytest settings do not
        # name pytest-asyncio's loop scope; unset, it warns, and warnings are errors.
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        *session.posargs,
    )
    if name == "mcp":  # `toolpass validate` reads the mcp: section through toolpass-mcp
        session.run("pytest", VALIDATE_SECTIONS, "-q", "-p", "no:cacheprovider", "--noconftest")
    session.install("mypy>=1.11")
    session.run("mypy", "--strict", "-p", f"toolpass.{module}")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    session.install("ruff>=0.8")
    session.run("ruff", "check", ".")
    session.run(
        "ruff",
        "format",
        "--check",
        "core",
        "packages",
        "adapters",
        "integration-tests",
        "tests",
        "bench",
        "examples",
        "noxfile.py",
    )


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict on core, alone: no other distribution installed beside it, so an
    import of one (core depends on none) fails here. Server and kit type-check in theirs."""
    # The HTTP libraries whose hooks core holds (imported only when installed).
    session.install(
        "mypy>=1.11",
        "types-PyYAML",
        "-e",
        "core[yaml,crypto,redis]",
        "urllib3>=2",
        "httpx>=0.27",
        "httpx2>=2.16",
        "aiohttp>=3.9",
        "websocket-client>=1.6",
        "websockets>=14",
    )
    session.run("mypy", "--strict", "core/src/toolpass")


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


@nox.session(python=PYTHON)
def readme(session: nox.Session) -> None:
    """README.md as a new user reads it: every python block runs as written, and its "Use it"
    block, followed literally in a new virtual environment, installs from the checkout and
    runs an example."""
    session.install("-e", "core[yaml]", "-e", "adapters/langchain", "PyGithub>=2.3", "pytest>=8")
    session.run("pytest", "tests/readme", "-q", "-p", "no:cacheprovider", *session.posargs)


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """The documentation site (docs/, mkdocs.yml): every python block runs, every YAML block
    passes `toolpass validate`, the CLI page covers every command; then `mkdocs build
    --strict` into a temporary folder (the CLI's usage and each system's catalog are
    generated then, by docs/hooks.py)."""
    session.install(
        "mkdocs>=1.6", "mkdocs-material>=9.5", "pytest>=8", "httpx>=0.27", "PyGithub>=2.3",
        "-e", "core[yaml]", "-e", "packages/server", "-e", "adapters/mcp",
        "-e", "adapters/langchain",
    )  # fmt: skip
    session.run("pytest", "tests/docs", "-q", "-p", "no:cacheprovider", *session.posargs)
    site = Path(session.create_tmp()) / "site"
    quiet = {"NO_MKDOCS_2_WARNING": "1"}  # Material's notice of its successor, not a warning
    session.run("mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site), env=quiet)


@nox.session(python=PYTHON, default=False)
def bench(session: nox.Session) -> None:
    """Overheads, as ratios against a baseline measured in the same run."""
    session.install("-e", "core[yaml,crypto]", "-e", "packages/server")
    for script in sorted((ROOT / "bench").glob("bench_*.py")):
        if script.name.startswith("bench_adapter_"):
            continue  # each needs its framework: the bench_adapter session runs it
        session.run("python", str(script.relative_to(ROOT)), *session.posargs)


@nox.session(python=PYTHON, default=False)
@nox.parametrize("name", list(ADAPTERS))
def bench_adapter(session: nox.Session, name: str) -> None:
    """One adapter's added time per tool call, against the same agent run without it."""
    projects = [ROOT / "core", ROOT / "adapters" / name, ROOT / "packages/pytest-toolpass"]
    session.install(
        *(a for p in projects for a in ("-e", str(p))), *test_group(ROOT / "adapters" / name)
    )
    session.run("python", f"bench/bench_adapter_{ADAPTERS[name]}.py", *session.posargs)


@nox.session(python=False, default=False)
def clean(session: nox.Session) -> None:
    """Remove nox environments and build output."""
    for path in (".nox", "dist", "build"):
        shutil.rmtree(ROOT / path, ignore_errors=True)


#: The MCP conformance harness (mcp_conformance), the version the MCP Python SDK's CI pins (its
#: .github/workflows/conformance.yml); it needs Node 22.
HARNESS = "@modelcontextprotocol/conformance@0.2.0-alpha.11"


@nox.session(python=PYTHON, default=False)
def mcp_conformance(session: nox.Session) -> None:
    """The MCP conformance harness against the SDK's "everything" server: directly, through
    toolpass's middleware, through mcp-proxy; a scenario failing only with toolpass fails.
    Needs MCP_EVERYTHING_SERVER (the SDK's examples/servers/everything-server folder) and
    npm (Node 22 comes from the registry when the system's is older); skipped without."""
    import os
    import subprocess

    runs = "2 of 2 conformance runs (2025-11-25, 2026-07-28)"
    everything = os.environ.get("MCP_EVERYTHING_SERVER", "")
    if not (Path(everything) / "mcp_everything_server").is_dir():
        session.skip(f"{runs} skipped: MCP_EVERYTHING_SERVER is not set")
    npm = shutil.which("npm")
    if npm is None:
        session.skip(f"{runs} skipped: no npm to install Node 22 and the harness")
    tools = Path(session.virtualenv.location) / "node"
    done = subprocess.run(
        [npm, "install", "--prefix", str(tools), "--no-audit", "--no-fund", "node@22", HARNESS],
        capture_output=True,
        text=True,
    )
    node = tools / "node_modules/node/bin/node"
    if done.returncode or not node.exists():
        why = (done.stderr.strip().splitlines() or ["no node binary"])[-1]
        session.skip(f"{runs} skipped: npm could not install Node 22 and the harness ({why})")
    session.install("-e", "core[yaml]", "-e", "adapters/mcp", "click", "uvicorn")
    session.run(
        "python",
        "adapters/mcp/tests/conformance_run.py",
        "--everything",
        everything,
        "--node",
        str(node),
        "--harness",
        str(tools / "node_modules/.bin/conformance"),
        *session.posargs,
    )
