"""Every check of the repository, one session each; `nox` runs them all.

Each session builds its own environment (with uv when it is there), so the frameworks of
different adapters never share one.
"""

from __future__ import annotations

import filecmp
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from xml.etree import ElementTree

import nox
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

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
#: The default runs of each adapter (the "workspace" variant runs by name only).
VARIANTS = ("wheels", "oldest")
#: `nox` alone runs each adapter from built wheels (the shape users install), twice: at the
#: newest versions (its lock, locks/<adapter>.txt) and at the oldest its framework
#: requirements allow (each `>=` floor installed); the workspace (editable) variant is for
#: development, by its name:
#:     nox -s "adapter(name='mcp', install='workspace')"
nox.options.sessions = [
    "lint",
    "locks",
    "routes",
    "typecheck",
    "core",
    "floors",
    "server",
    "kit",
    *(f"adapter(name='{name}', install='{how}')" for name in ADAPTERS for how in VARIANTS),
    "mcp_conformance",
    "wheels",
    "demo",
    "readme",
    "docs",
]
#: Where each adapter's own lock lives (`python3 dev.py lock` writes them, with uv.lock).
LOCKS = ROOT / "locks"
#: Built wheels, shared by the sessions that install them.
WHEELS = ROOT / ".nox" / ".wheels"
#: Toolpass's own distributions: never pinned, never fetched from an index.
OURS = ("toolpass-core", *(f"toolpass-{name}" for name in ADAPTERS), "pytest-toolpass")
#: What the shared scenario of integration-tests/ needs beside the adapter's own test group.
#: `toolpass validate`'s tests of the sections a companion distribution reads (server:, mcp:),
#: run where that companion is installed (core's own session has neither).
VALIDATE_SECTIONS = "core/tests/command/test_validate_sections.py"
SCENARIO = ["PyGithub>=2.3", "cryptography>=42", "pytest>=8", "pytest-asyncio>=0.24"]


#: mypy's caches, one per session (their environments differ: one cache shared by all would be
#: rewritten by each), kept outside the checkout as uv's is: a new clone checks again only
#: what changed (mypy compares each file's hash).
MYPY_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolpass-mypy"


def mypy(session: nox.Session, *args: str) -> None:
    """mypy with ``args``, its cache this session's own."""
    cache = MYPY_CACHE / re.sub(r"[^\w.-]+", "-", session.name).strip("-")
    session.run("mypy", "--cache-dir", str(cache), *args)


def test_group(project: Path) -> list[str]:
    return group(project, "test")


def group(project: Path, name: str) -> list[str]:
    """A dependency group of ``project``'s pyproject.toml."""
    return nox.project.dependency_groups(nox.project.load_toml(project / "pyproject.toml"), name)


def locked(session: nox.Session) -> list[str]:
    """``-c FILE``: the versions uv.lock pins for the development workspace (core, server,
    kit, their test groups, the tools), as constraints of an install."""
    out = Path(session.create_tmp()) / "uv-lock.txt"
    export = ["uv", "export", "--frozen", "--quiet", "--no-hashes", "--no-header"]
    scope = ["--all-packages", "--all-groups", "--all-extras", "--no-emit-workspace"]
    session.run(*export, *scope, "--no-annotate", "-o", str(out), external=True, silent=True)
    return ["-c", str(out)]


def floor_pins(requirements: list[str]) -> list[str]:
    """``name==X`` for each ``name>=X`` of ``requirements`` (toolpass's own left out): the
    oldest versions they allow, installed for real."""
    pins = []
    for line in requirements:
        requirement = Requirement(line)
        if requirement.name in OURS or not (
            requirement.marker is None or requirement.marker.evaluate()
        ):
            continue
        pins += [
            f"{canonicalize_name(requirement.name)}=={s.version}"
            for s in requirement.specifier
            if s.operator == ">="
        ]
    return pins


def locked_pins(lock: Path) -> set[str]:
    """The ``name==version`` lines of a lock (names lower-case, markers left out)."""
    lines = (line.split(";")[0].strip() for line in lock.read_text().splitlines())
    return {line.lower() for line in lines if "==" in line}


def built(session: nox.Session, projects: list[Path]) -> list[str]:
    """The wheel of each project, built once per state of its files and shared by every
    session (.nox/.wheels/<project>-<digest>/)."""
    wheels = []
    for project in projects:
        home = WHEELS / f"{project.name}-{digest(project)}"
        if not any(home.glob("*.whl")):
            WHEELS.mkdir(parents=True, exist_ok=True)
            fresh = Path(tempfile.mkdtemp(dir=WHEELS))
            session.run(
                "uv", "build", "-q", "--wheel", "-o", str(fresh), str(project), external=True
            )
            try:
                fresh.rename(home)
            except OSError:  # another session built it meanwhile
                shutil.rmtree(fresh)
        wheels += map(str, home.glob("*.whl"))
    return wheels


def digest(project: Path) -> str:
    """A digest of a project's files (names and contents)."""
    files = sorted(f for f in project.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
    found = hashlib.sha256()
    for file in files:
        found.update(f"{file.relative_to(project)}\0".encode() + file.read_bytes())
    return found.hexdigest()[:16]


def lock_input(name: str) -> str:
    """What an adapter's environment installs, as a requirements file's text."""
    projects = [ROOT / "core", ROOT / "adapters" / name, ROOT / "packages/pytest-toolpass"]
    return "\n".join([*map(str, projects), *test_group(ROOT / "adapters" / name), *SCENARIO])


def compile_lock(session: nox.Session, name: str, out: Path) -> None:
    """Resolve adapter ``name``'s environment into ``out`` (a pinned requirements file, for
    every platform), keeping the versions ``out`` already pins where they still fit."""
    source = Path(tempfile.mkdtemp()) / f"{name}.in"
    source.write_text(lock_input(name) + "\n")
    leave_out = [a for project in OURS for a in ("--no-emit-package", project)]
    compile_ = ["uv", "pip", "compile", "--quiet", "--universal", "--python-version", PYTHON]
    session.run(
        *compile_,
        "--no-header",
        "--no-annotate",
        *leave_out,
        "-o",
        str(out),
        str(source),
        external=True,
    )


@nox.session(python=PYTHON)
def core(session: nox.Session) -> None:
    """toolpass-core's tests."""
    session.install(
        *locked(session),
        "-e",
        "core[yaml,crypto]",
        "-e",
        "packages/pytest-toolpass",
        *test_group(ROOT / "core"),
    )
    # Two processes on this 2-core machine; more wherever there are more cores. The route
    # tables' regenerations run in the routes session, against their pinned sources.
    session.run(
        "pytest",
        "core",
        "-q",
        "-rs",
        "-n",
        "auto",
        "-k",
        f"not ({REGENERATIONS})",
        "--durations=20",  # the slowest tests, in the log: where the session's time goes
        *session.posargs,
    )


@nox.session(python=PYTHON, default=False)
def quick(session: nox.Session) -> None:
    """Core's first tier (`python3 dev.py test --quick`), where no vendor library is
    installed: the test files that import nothing beside toolpass-core, its extras and the
    test tools (core/conftest.py picks them)."""
    tools = ["pytest>=8", "pytest-asyncio>=0.24", "hypothesis>=6.100", "pytest-xdist>=3.5"]
    # The otel extra's tests configure a tracer provider: the SDK is theirs.
    session.install(
        *locked(session), "-e", "core[yaml,crypto,otel]", "opentelemetry-sdk>=1.20", *tools
    )
    session.run("pytest", "core", "--quick", "-q", "-n", "auto", *session.posargs)


@nox.session(python=PYTHON)
def server(session: nox.Session) -> None:
    """toolpass-server's tests: the server as a real process, the app, deploy/ linted."""
    session.install(
        *locked(session),
        "-e",
        "core[yaml]",
        "-e",
        "packages/server",
        *test_group(ROOT / "packages/server"),
    )
    session.run("pytest", "packages/server/tests", "-q", *session.posargs)
    session.run("pytest", VALIDATE_SECTIONS, "-q", "-p", "no:cacheprovider", "--noconftest")
    session.install(*locked(session), "mypy>=1.11")
    mypy(session, "--strict", "-p", "toolpass.server")


@nox.session(python=PYTHON)
def kit(session: nox.Session) -> None:
    """pytest-toolpass: the conformance suite, against a reference loop and broken adapters."""
    session.install(
        *locked(session),
        "-e",
        "core",
        "-e",
        "packages/pytest-toolpass",
        *test_group(ROOT / "packages/pytest-toolpass"),
    )
    session.run("pytest", "packages/pytest-toolpass/tests", "-q", *session.posargs)
    session.install(*locked(session), "mypy>=1.11")
    mypy(session, "--strict", "-p", "pytest_toolpass")


@nox.session(python=PYTHON)
@nox.parametrize("install", [*VARIANTS, "workspace"])
@nox.parametrize("name", list(ADAPTERS))
def adapter(session: nox.Session, name: str, install: str) -> None:
    """One adapter in its own environment: its tests (the conformance suite through the
    framework's real loop), its integration test, its example (examples/) and mypy --strict
    on the installed package (typed like core, against the framework's own types).

    ``wheels``: built wheels, at the versions of the adapter's lock (locks/<name>.txt);
    ``oldest``: built wheels, each framework requirement at its ``>=`` floor (what a user
    with the oldest allowed release gets), running the conformance suite and the shared
    scenario only: they drive every hook of the adapter through the framework's real loop,
    and the rest (its own finer tests, example, mypy) would double the adapters' time;
    ``workspace``: editable, locked (by name only, for development)."""
    projects = [ROOT / "core", ROOT / "adapters" / name, ROOT / "packages/pytest-toolpass"]
    deps = [*test_group(ROOT / "adapters" / name), *SCENARIO]
    project = nox.project.load_toml(ROOT / "adapters" / name / "pyproject.toml")["project"]
    pins = floor_pins(project["dependencies"]) if install == "oldest" else []
    lock = [] if pins else ["-c", str(LOCKS / f"{name}.txt")]
    if pins and set(pins) <= locked_pins(LOCKS / f"{name}.txt"):
        session.skip(
            f"{name}'s floors ({', '.join(pins)}) are its locked versions: tested by its wheels run"
        )
    if install == "workspace":
        session.install(*lock, *(a for p in projects for a in ("-e", str(p))), *deps)
    else:
        session.install(*lock, *built(session, projects), *deps, *pins)
    module = ADAPTERS[name]
    tests = [f"adapters/{name}/tests", f"integration-tests/test_{module}.py"]
    if pins:
        tests[:1] = map(str, sorted((ROOT / tests[0]).glob("test_*conformance*.py")))
    else:
        tests += [
            "integration-tests/test_examples.py",  # runs examples/<module>_agent.py
            "integration-tests/test_approvals_two_processes.py",  # LangChain's env only
        ]
    session.run(
        "pytest",
        *tests,
        "-q",
        "-p",
        "no:cacheprovider",
        # Both paths make the repository's root the rootdir, whose pytest settings do not
        # name pytest-asyncio's loop scope; unset, it warns, and warnings are errors.
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        # At the floors, a framework's notice of its own coming changes is shown, not an
        # error: the newest versions (the wheels run) are where deprecations must be met.
        *(["-W", "default::DeprecationWarning"] if pins else []),
        *session.posargs,
        env=own_data(session),
    )
    if pins:
        return
    if name == "mcp":  # `toolpass validate` reads the mcp: section through toolpass-mcp
        session.run("pytest", VALIDATE_SECTIONS, "-q", "-p", "no:cacheprovider", "--noconftest")
    session.install("mypy>=1.11")
    mypy(session, "--strict", "-p", f"toolpass.{module}")


def own_data(session: nox.Session) -> dict[str, str]:
    """An environment whose user data folder (XDG_DATA_HOME) is this session's own: a
    framework keeping files there (CrewAI's SQLite store of a crew's task outputs, named after
    the working folder) shares them with no other session, such as the same framework at
    another version in the next lane, whose schema differs."""
    return {"XDG_DATA_HOME": str(Path(session.create_tmp()) / "data")}


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    session.install(*locked(session), "ruff")
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
        "dev.py",
    )


@nox.session(python=False)
def locks(session: nox.Session) -> None:
    """Fail when uv.lock or an adapter's lock no longer fits what the projects require
    (a requirement changed since it was written): `python3 dev.py lock` brings them up to date."""
    stale = "is out of date with the projects' requirements: run `python3 dev.py lock`"
    if subprocess.run(["uv", "lock", "--check", "--quiet"], cwd=ROOT).returncode:
        session.error(f"uv.lock {stale}")
    for name in ADAPTERS:
        lock = LOCKS / f"{name}.txt"
        if not lock.is_file():
            session.error(f"locks/{name}.txt is missing: run `python3 dev.py lock`")
        again = Path(tempfile.mkdtemp()) / lock.name
        shutil.copyfile(lock, again)
        compile_lock(session, name, again)
        if not filecmp.cmp(lock, again, shallow=False):
            session.error(f"locks/{name}.txt {stale}")


@nox.session(python=False, default=False)
def lock(session: nox.Session) -> None:
    """Write uv.lock and each adapter's lock, keeping pinned versions that still fit
    (`python3 dev.py lock`; `-- --upgrade` moves everything to the newest releases)."""
    upgrade = ["--upgrade"] if "--upgrade" in session.posargs else []
    session.run("uv", "lock", *upgrade, external=True)
    LOCKS.mkdir(exist_ok=True)
    for name in ADAPTERS:
        if upgrade:
            (LOCKS / f"{name}.txt").unlink(missing_ok=True)
        compile_lock(session, name, LOCKS / f"{name}.txt")


@nox.session(python=PYTHON)
def floors(session: nox.Session) -> None:
    """The request hook's tests with each HTTP client library at the oldest version its
    ``TESTED`` range allows (core/src/toolpass/intercept/clients/) that installs beside the
    others: where two floors cannot meet (httpcore 1.0 needs h11 < 0.15, httpcore2 2.16
    h11 >= 0.16) the resolver raises one to the oldest that fits, and the session says so.
    Not locked: the floors hold back what they depend on."""
    session.install(
        "-e",
        "core[yaml,crypto]",
        "-e",
        "packages/pytest-toolpass",
        *test_group(ROOT / "core"),
        *oldest_together(session, tested_ranges()),
    )
    for test, why in NOT_AT_FLOORS.items():
        session.warn(f"not run at the floors: {test}: {why}")
    left_out = [a for test in NOT_AT_FLOORS for a in ("--deselect", test)]
    session.run("pytest", "core/tests/intercept", "-q", "-n", "auto", *left_out, *session.posargs)


#: The hook's tests that fail at the floors for a reason not yet traced to toolpass or to
#: the library (a visible, counted exception, until it is); ids from core/, pytest's rootdir.
NOT_AT_FLOORS = {
    "tests/intercept/test_websockets.py::test_kubernetes_exec_is_checked": (
        "the kubernetes client's exec under websocket-client 1.6.0 and urllib3 2.0.2 fails"
        " in the tool's body (AttributeError: 'NoneType' object has no attribute 'decode')"
    ),
    "tests/intercept/test_vendor_clients.py::"
    "test_kubernetes_allowed_scale_reaches_the_api_server": (
        "the kubernetes client under urllib3 2.0.2 warns (HTTPResponse.getheaders() is"
        " deprecated), and warnings are errors"
    ),
}


def tested_ranges() -> list[str]:
    """``name>=X,<Y`` for each hooked library: its ``TESTED`` range."""
    ranges = []
    for client in sorted((ROOT / "core/src/toolpass/intercept/clients").glob("*.py")):
        text = client.read_text()
        name = re.search(r'^DISTRIBUTION = "([^"]+)"', text, re.M)
        tested = re.search(r'^TESTED = "([^"]*)"', text, re.M)
        if name and tested:
            ranges.append(f"{name[1]}{tested[1]}")
    return ranges


def oldest_together(session: nox.Session, ranges: list[str]) -> list[str]:
    """``name==X`` for each of ``ranges``: the oldest versions that install together."""
    source = Path(tempfile.mkdtemp()) / "ranges.in"
    source.write_text("\n".join(ranges) + "\n")
    compile_ = ["uv", "pip", "compile", "--quiet", "--resolution", "lowest-direct"]
    found = session.run(
        *compile_,
        "--python-version",
        PYTHON,
        "--no-header",
        "--no-annotate",
        str(source),
        external=True,
        silent=True,
    )
    resolved = {canonicalize_name(line.split("==")[0]): line for line in str(found).split()}
    pins = [resolved[canonicalize_name(Requirement(r).name)] for r in ranges]
    for wanted, pin in zip(floor_pins(ranges), pins, strict=True):
        if Version(wanted.split("==")[1]) != Version(pin.split("==")[1]):
            session.log(f"{pin}, not {wanted}: the oldest that installs beside the others")
    return pins


#: npm packages the route tables are generated from: the environment variable each
#: regeneration test reads, and the packages it names (unpacked folders, joined by ":";
#: GitHub's generator reads the tarball itself).
NPM_SOURCES = {
    "OCTOKIT_OPENAPI": ["@octokit/openapi@23.0.2"],
    "TOOLPASS_JIRA_JS": ["jira.js@5.4.0"],
    "TOOLPASS_BITBUCKET_JS": ["bitbucket@2.12.0"],
    "TOOLPASS_CONFLUENCE_JS": ["confluence.js@3.2.0", "confluence.js@2.1.0"],
}
#: The tests that regenerate a route table from its source, or hold the table against every
#: operation of its source (by name: -k).
REGENERATIONS = "regenerat or generator_writes or coverage_every"
#: Fetched sources, kept between runs.
SOURCES = ROOT / ".nox" / ".sources"
#: How the skip of a regeneration whose pinned source is not on the machine begins
#: (integrations/_generate/sources.py's UNSHIPPED).
UNSHIPPED = "no copy of a source no registry ships"


@nox.session(python=PYTHON)
def routes(session: nox.Session) -> None:
    """Every generated route table regenerated from its source and compared with the
    committed one: the npm packages (fetched once into .nox/.sources), the PyPI
    distributions at the versions each table names ("source"), and the files of public
    repositories no registry ships, pinned by git object id (integrations/_generate/
    sources.py: read from TOOLPASS_ROUTE_SOURCES, else shared/route-sources beside the
    checkout; such files are not committed here). Every skip is listed with its reason
    (-rs) and counted; in CI (CI=true) any skip fails the session but that of a pinned copy
    not on the machine, which fails it too when TOOLPASS_ROUTE_SOURCES names a folder."""
    env = {variable: fetched(session, packages) for variable, packages in NPM_SOURCES.items()}
    session.install(
        "-e",
        "core[yaml,crypto]",
        "-e",
        "packages/pytest-toolpass",
        *test_group(ROOT / "core"),
    )
    # Each at the version its table names, whatever the others need around it (botocore
    # and kubernetes disagree on python-dateutil): the generators read their files.
    session.install("--no-deps", *table_sources())
    tests = sorted(
        map(str, (ROOT / "core/src/toolpass/integrations").glob("*/tests/test_routes_*.py"))
    )
    # The regenerations only: the rest of these files runs in the core session.
    report = Path(session.create_tmp()) / "routes.xml"
    session.run(
        "pytest",
        *tests,
        "-q",
        "-rs",
        "-k",
        REGENERATIONS,
        f"--junitxml={report}",
        *session.posargs,
        env=env,
    )
    tree = ElementTree.parse(report)  # noqa: S314 - pytest's own report
    reasons = [skip.get("message", "") for skip in tree.iter("skipped")]
    unshipped = [r for r in reasons if UNSHIPPED in r]
    if unshipped:
        session.warn(
            f"{len(unshipped)} route-table regenerations skipped: their sources are files of "
            "public repositories no registry ships, not committed here; set "
            "TOOLPASS_ROUTE_SOURCES to a folder of pinned copies to run them"
        )
    if len(reasons) > len(unshipped):
        session.warn(f"{len(reasons) - len(unshipped)} route-table regenerations skipped")
    required = (
        len(reasons) if os.environ.get("TOOLPASS_ROUTE_SOURCES") else len(reasons) - len(unshipped)
    )
    if required and os.environ.get("CI", "").lower() not in ("", "0", "false"):
        session.error(
            f"{required} route-table regenerations skipped (listed above): in CI they must run"
        )


def fetched(session: nox.Session, packages: list[str]) -> str:
    """The npm ``packages`` (name@version), fetched once: GitHub's the tarball, the others
    unpacked; their paths joined by ":"."""
    npm = shutil.which("npm")
    if npm is None:
        session.error("the routes session needs npm to fetch the route tables' sources")
    paths = []
    for package in packages:
        home = SOURCES / package.replace("/", "+")
        if not any(home.glob("*.tgz")):
            home.mkdir(parents=True, exist_ok=True)
            session.run(
                npm, "pack", "--silent", package, "--pack-destination", str(home), external=True
            )
            with tarfile.open(next(home.glob("*.tgz"))) as tar:
                tar.extractall(home, filter="data")
        tarball = next(home.glob("*.tgz"))
        paths.append(str(tarball if package.startswith("@octokit/") else home / "package"))
    return ":".join(paths)


def table_sources() -> list[str]:
    """``name==version`` of each PyPI distribution a route table names as its source."""
    pins = set()
    for table in (ROOT / "core/src/toolpass/integrations").glob("*/routes.json*"):
        opener = gzip.open if table.suffix == ".gz" else open
        with opener(table, "rt") as file:
            source = json.load(file).get("source", "")
        found = re.match(r"PyPI (\S+) (\d\S*) ", source)
        if found:
            pins.add(f"{found[1]}=={found[2]}")
    return sorted(pins)


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict on core, alone: no other distribution installed beside it, so an
    import of one (core depends on none) fails here. Server and kit type-check in theirs.
    Core says it runs on Python 3.10 while only 3.11 runs here: mypy checks it as 3.10
    (typeshed knows which standard library names are newer; ruff's target-version, py310,
    catches newer syntax)."""
    # mypy, and the HTTP libraries whose hooks core holds (imported only when installed).
    session.install(*locked(session), "-e", "core[yaml,crypto,redis]", *group(ROOT, "dev"))
    mypy(session, "--strict", "--python-version", "3.10", "core/src/toolpass")


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
#: .github/workflows/conformance.yml), and the Node 22 it runs on (npm serves Node itself as
#: the package `node`): installed once per pair into .nox/.node/.
HARNESS = "@modelcontextprotocol/conformance@0.2.0-alpha.11"
NODE = "node@22.23.3"
#: The SDK's reference "everything" server, vendored at the mcp release locks/mcp.txt pins.
EVERYTHING = ROOT / "adapters/mcp/tests/everything_server"


@nox.session(python=PYTHON)
def mcp_conformance(session: nox.Session) -> None:
    """The MCP conformance harness against the SDK's "everything" server, on both protocol
    versions: directly, through toolpass's middleware, through `toolpass mcp-proxy`; a
    scenario that passes directly and fails with toolpass fails the session."""
    tools = node_tools(session)
    server = nox.project.load_toml(EVERYTHING / "pyproject.toml")["project"]["dependencies"]
    lock = ["-c", str(LOCKS / "mcp.txt")]
    session.install(*lock, "-e", "core[yaml]", "-e", "adapters/mcp", *server)
    session.run(
        "python",
        "adapters/mcp/tests/conformance_run.py",
        "--everything",
        str(EVERYTHING),
        "--node",
        str(tools / "node_modules/node/bin/node"),
        "--harness",
        str(tools / "node_modules/.bin/conformance"),
        *session.posargs,
    )


def node_tools(session: nox.Session) -> Path:
    """The npm prefix holding NODE and HARNESS, installed on first use."""
    npm = shutil.which("npm")
    if npm is None:
        session.error(
            "mcp_conformance needs npm to install Node 22 and the MCP conformance harness:"
            " install it (on Debian or Ubuntu: sudo apt-get install npm)"
        )
    home = ROOT / ".nox" / ".node" / f"{NODE}+{HARNESS}".replace("/", "+")
    if not all(
        (home / "node_modules" / tool).exists() for tool in ("node/bin/node", ".bin/conformance")
    ):
        home.parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(dir=home.parent))
        install = ["install", "--prefix", str(fresh), "--save-exact", "--no-audit", "--no-fund"]
        session.run(npm, *install, NODE, HARNESS, external=True)
        shutil.rmtree(home, ignore_errors=True)  # an earlier install, left incomplete
        fresh.rename(home)
    return home
