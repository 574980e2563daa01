"""Settings for every core test (``core/tests`` and each system's ``tests`` folder under
``src/toolpass/integrations``), and its first tier (``--quick``).

``pytest core --quick`` (``python3 dev.py test --quick``) runs the tests that need
nothing beside toolpass-core, its extras and the test tools: it does not collect a test file
that imports another library (a vendor client, an HTTP client), itself or through a module of
core/tests it draws on (a fake, a conftest). The redis-server tests are not in it: their
conftest imports the redis client.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.statistics import collector

# Property tests must not fail because a shared machine was slow: no deadline, no timing
# health checks (each test still says how many examples it wants). In CI the examples are
# the same on every run (derandomized), so a run tests what was tested before it landed;
# elsewhere every run explores new ones. No example database: parallel workers would share it.
settings.register_profile(
    "toolpass",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    derandomize=bool(os.environ.get("CI")),
)
settings.load_profile("toolpass")

CORE = Path(__file__).resolve().parent
TESTS = CORE / "tests"
SYSTEMS = CORE / "src" / "toolpass" / "integrations"
# The shared test modules (``fakes``, whose ``fakes.<name>`` are the systems' fakes) import
# from here, also when only a system's own tests run.
sys.path.insert(0, str(TESTS))
#: Top-level packages a first-tier test may import: toolpass-core, its extras, the test tools.
CORE_ALONE = frozenset(
    {"toolpass", "yaml", "cryptography", "opentelemetry", "pytest", "hypothesis"}
    | set(sys.stdlib_module_names)
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help="only the tests that need no library beside toolpass-core and its extras",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if config.getoption("quick") and collection_path.name.startswith("test_"):
        return needs_vendor(collection_path.resolve()) or None
    return None


#: A memory address in a test's id: it differs in every process, so parallel workers would
#: collect different tests (pytest-xdist then stops).
ADDRESS = re.compile(r" at 0x")


@pytest.hookimpl(wrapper=True, trylast=True)  # inside Hypothesis's own wrapper
def pytest_runtest_call(item: pytest.Item) -> object:
    """A property test passes only if most of what it generated was accepted: its filters
    and ``assume`` calls let through at least as many inputs as they rejected, and it ran
    the examples it asks for (Hypothesis alone passes a test that accepted 2 inputs in 600)."""
    if not hasattr(getattr(item, "obj", None), "hypothesis"):
        return (yield)
    runs: list[dict[str, Any]] = []
    outer = collector.value

    def note(stats: dict[str, Any]) -> None:
        runs.append(stats)
        if outer is not None:
            outer(stats)

    with collector.with_value(note):
        result = yield
    for stats in runs:
        assert_mostly_accepted(stats)
    return result


def assert_mostly_accepted(stats: dict[str, Any]) -> None:
    """Fail when a property test's generate phase gave up on more inputs than it ran (an
    ``assume`` that failed, a filter that failed three draws in a row), or stopped because
    too few satisfied its assumptions."""
    cases = stats.get("generate-phase", {}).get("test-cases", [])
    accepted = sum(case["status"] == "valid" for case in cases)
    rejected = sum(case["status"] in ("invalid", "overrun") for case in cases)
    if accepted < rejected or "satisfied assumptions" in stats.get("stopped-because", ""):
        raise AssertionError(
            f"the property test accepted {accepted} generated inputs and rejected {rejected}"
            " (filters, assume): generate valid inputs instead of filtering them"
        )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    unstable = [item.nodeid for item in items if ADDRESS.search(item.nodeid)]
    if unstable:
        raise pytest.UsageError(
            "a test id names a memory address (give the parametrize stable ids):\n"
            + "\n".join(unstable)
        )


@cache
def needs_vendor(path: Path) -> bool:
    """Whether the module at ``path``, a conftest above it or a test module it imports (of
    core/tests, a fake, a system's tests) imports (anywhere in its text) a package outside
    ``CORE_ALONE``."""
    seen: set[Path] = set()
    pending = [path, *(d / "conftest.py" for d in path.parents if d.is_relative_to(CORE))]
    while pending:
        module = pending.pop()
        if module in seen or not module.is_file():
            continue
        seen.add(module)
        for name in imported(module):
            local = local_module(name, module.parent)
            if local is not None:
                pending.append(local)
            elif name.split(".")[0] not in CORE_ALONE:
                return True
    return False


def imported(module: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text(), str(module))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            dots, module = "." * node.level, f"{node.module}." if node.module else ""
            names.update(f"{dots}{module}{a.name}" for a in node.names)
    return names


def local_module(name: str, folder: Path) -> Path | None:
    """The test module (of core/tests, a fake, a system's tests) that ``import name`` (from
    ``folder``) finds, if any."""
    dots = len(name) - len(name.lstrip("."))
    start = folder.parents[dots - 2] if dots > 1 else folder if dots else TESTS
    parts = name.lstrip(".").split(".")
    bases = (start,) if dots else (TESTS, folder)
    if not dots and parts[0] == "fakes" and len(parts) > 1:
        parts, bases = [parts[1], "fake"], (SYSTEMS,)
    elif not dots and parts[:2] == ["toolpass", "integrations"] and "tests" in parts:
        parts, bases = parts[2:], (SYSTEMS,)
    for base in bases:
        for n in range(len(parts), 0, -1):
            candidate = base.joinpath(*parts[:n])
            for file in (candidate.with_suffix(".py"), candidate / "__init__.py"):
                if file.is_file():
                    return file
    return None
