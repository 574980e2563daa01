"""Core's layers, and a check that every import points down.

Bottom to top (a layer may import only from the layers below it and from itself)::

    cli, demo       the command line and the demo: users of the public API
    testing         an offline engine answering from a table, for examples and tests
    __init__        the public API, re-exported
    adapting        what every adapter shares
    toolkit         Toolkit, secured_tool, the pipeline, Session, approval, limits, untrusted
    intercept       the request hook; it sees the call in progress through its own protocols
                    (``intercept.call.DeclaredTool``, ``intercept.call.CallSession``,
                    ``intercept.call.CallKit``), never through the toolkit
    engine          Toolpass, the decision cache, the remote client, config loading, Checker
    integrations    Integration base, one package per system, route types, tables, matching
    store           shared state: the Store protocol, memory, SQLite and Redis stores
    wire            the engine's HTTP client, secrets, Decision, identity, watched files,
                    config key types, engine errors, the check budget, JWT
    outcome         refusal codes and errors (ToolRefused, ActionRefused, ...), AuditEvent, sinks
    rules           argument rules, secret scanning and redaction, the value walk
    _version

The rule applies to what the wheel ships: a system's folder also holds its tests, its fake
and its route generator (excluded from the wheel in core's pyproject.toml), which may import
anything. Every ``import`` and ``from ... import`` counts, wherever it is written (module
level, inside a function, under ``TYPE_CHECKING``): an upward import is a cycle waiting to
happen even when it is lazy. Modules of other distributions sharing the ``toolpass``
namespace (the adapters, ``toolpass.server``) are not part of core and are not checked here.
"""

from __future__ import annotations

import ast
from pathlib import Path, PurePosixPath

import pytest
import tomllib
import toolpass

LAYERS: tuple[str, ...] = (
    "_version",
    "rules",
    "outcome",
    "wire",
    "store",
    "integrations",
    "engine",
    "intercept",
    "toolkit",
    "adapting",
    "__init__",
    "testing",
    "demo",
    "cli",
)

CORE = Path(next(p for p in toolpass.__path__ if (Path(p) / "_version.py").exists()))
PYPROJECT = CORE.parents[1] / "pyproject.toml"  # absent when core is installed from a wheel
#: What the wheel leaves out (patterns relative to core/, as hatch reads them).
NOT_SHIPPED: tuple[str, ...] = (
    tuple(
        tomllib.loads(PYPROJECT.read_text())["tool"]["hatch"]["build"]["targets"]["wheel"][
            "exclude"
        ]
    )
    if PYPROJECT.is_file()
    else ()
)


def shipped_modules(root: Path) -> list[Path]:
    """The modules under ``root`` (the ``toolpass`` folder) that the wheel ships, sorted."""
    return [p for p in sorted(root.rglob("*.py")) if _shipped(p.relative_to(root), root.name)]


def _shipped(relative: Path, package: str) -> bool:
    path = PurePosixPath("src", package, *relative.parts)
    return not any(p.match(pattern) for p in (path, *path.parents) for pattern in NOT_SHIPPED)


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module in ``path`` (``root`` is the ``toolpass`` folder)."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every module ``module`` imports, with its line; ``from a import b`` gives ``a.b``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")
                package = package[: len(package) - node.level + (1 if is_package else 0)]
                base = ".".join([*package, base] if base else package)
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def layer_of(target: str, root: Path) -> str | None:
    """The layer of the core module ``target`` names, or None when it is not core's."""
    parts = target.split(".")
    if parts[0] != root.name:
        return None
    if len(parts) == 1 or not ((root / parts[1]).is_dir() or (root / f"{parts[1]}.py").is_file()):
        return "__init__"  # `from toolpass import X` where X is a public name
    return parts[1]


def upward_imports(root: Path, layers: tuple[str, ...] = LAYERS) -> list[str]:
    """``file:line: a -> b`` for every import of ``b`` from a lower layer ``a``."""
    rank = {name: i for i, name in enumerate(layers)}
    problems: list[str] = []
    for path in shipped_modules(root):
        module = module_name(path, root)
        source = layer_of(module, root) if "." in module else "__init__"
        assert source in rank, f"{path}: its layer {source!r} is not in LAYERS"
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, target in imported(tree, module, path.name == "__init__.py"):
            layer = layer_of(target, root)
            if layer is None or layer == source:
                continue
            if rank.get(layer, len(layers)) > rank[source]:
                where = path.relative_to(root.parent)
                problems.append(f"{where}:{line}: {source} -> {layer} ({target})")
    return problems


def test_every_import_in_core_points_down() -> None:
    assert upward_imports(CORE) == []


def test_every_core_package_has_a_layer() -> None:
    names = {p.stem for p in CORE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert names <= set(LAYERS), names - set(LAYERS)


@pytest.mark.parametrize(
    ("where", "text", "expected"),
    [
        ("rules/bad.py", "from toolpass.toolkit import Toolkit\n", "1: rules -> toolkit"),
        (
            "outcome/bad.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from toolpass.intercept.context import CallScope\n",
            "3: outcome -> intercept",
        ),
        ("wire/bad.py", "def f():\n    import toolpass.engine.cache\n", "2: wire -> engine"),
        ("integrations/bad.py", "from toolpass import Toolkit\n", "1: integrations -> __init__"),
        ("intercept/sub/bad.py", "from ...toolkit import spec\n", "1: intercept -> toolkit"),
        ("engine/bad.py", "from toolpass import intercept\n", "1: engine -> intercept"),
    ],
)
def test_an_upward_import_is_reported_with_its_place(
    tmp_path: Path, where: str, text: str, expected: str
) -> None:
    root = tmp_path / "toolpass"
    for layer in ("rules", "outcome", "wire", "integrations", "engine", "intercept", "toolkit"):
        (root / layer / "sub").mkdir(parents=True)
        (root / layer / "__init__.py").write_text("")
    (root / "__init__.py").write_text("from toolpass.toolkit import Toolkit\n")
    (root / where).write_text(text)
    [problem] = upward_imports(root)
    assert problem.startswith(f"toolpass/{where}:{expected} (")


def test_imports_down_and_within_a_layer_pass(tmp_path: Path) -> None:
    root = tmp_path / "toolpass"
    (root / "toolkit").mkdir(parents=True)
    (root / "outcome").mkdir()
    (root / "__init__.py").write_text("from toolpass.toolkit import Toolkit\n")
    (root / "toolkit" / "__init__.py").write_text("from .a import Toolkit\nimport os\n")
    (root / "toolkit" / "a.py").write_text("from toolpass.outcome.errors import ToolRefused\n")
    (root / "outcome" / "__init__.py").write_text("from toolpass.outcome import errors\n")
    assert upward_imports(root) == []


#: Module import cycles inside one layer still to untie; the list only shrinks.
KNOWN_MODULE_CYCLES: list[list[str]] = []


def module_cycles(root: Path) -> list[list[str]]:
    """Every group of core modules that import each other, in a circle (sorted)."""
    files = {module_name(p, root): p for p in shipped_modules(root)}

    def resolve(target: str) -> str:
        while target and target not in files:
            target = target.rpartition(".")[0]
        return target

    graph = {
        module: {
            found
            for _, target in imported(
                ast.parse(path.read_text(encoding="utf-8")), module, path.name == "__init__.py"
            )
            if (found := resolve(target)) and found != module
        }
        for module, path in files.items()
    }
    reach = {module: _reachable(graph, module) for module in graph}
    groups = {frozenset(m for m in reach[a] if a in reach[m]) | {a} for a in graph}
    return sorted(sorted(g) for g in groups if len(g) > 1)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def test_no_new_module_cycle() -> None:
    assert module_cycles(CORE) == KNOWN_MODULE_CYCLES


def test_a_module_cycle_is_found(tmp_path: Path) -> None:
    root = tmp_path / "toolpass"
    (root / "integrations").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "integrations" / "__init__.py").write_text("")
    (root / "integrations" / "github.py").write_text("from . import _graphql\n")
    (root / "integrations" / "_graphql.py").write_text(
        "def f():\n    from toolpass.integrations.github import parse_resource\n"
    )
    assert module_cycles(root) == [
        ["toolpass.integrations._graphql", "toolpass.integrations.github"]
    ]
    assert upward_imports(root) == []  # within one layer: only the cycle test sees it


def foreign_imports(root: Path) -> list[str]:
    """``file:line: target`` for every import of a ``toolpass.<x>`` module that core does not
    ship (``toolpass.server``, an adapter): core depends on no other distribution, so such a
    module is reached only through ``importlib`` where it is optional."""
    own = {p.stem for p in root.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    problems: list[str] = []
    for path in shipped_modules(root):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == root.name and len(parts) > 1 and parts[1] not in own:
                    problems.append(f"{path.relative_to(root.parent)}:{node.lineno}: {name}")
    return problems


def test_core_imports_no_other_distribution() -> None:
    assert foreign_imports(CORE) == []


def test_an_import_of_another_distribution_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "toolpass"
    (root / "engine").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "engine" / "__init__.py").write_text("")
    (root / "cli.py").write_text(
        "import toolpass.engine\nfrom toolpass import engine\n"
        "def f():\n    from toolpass.server.config import parse\n"
    )
    assert foreign_imports(root) == ["toolpass/cli.py:4: toolpass.server.config"]


@pytest.mark.skipif(not NOT_SHIPPED, reason="core installed from a wheel: no pyproject.toml")
def test_a_systems_tests_fake_and_generator_may_import_anything(tmp_path: Path) -> None:
    root = tmp_path / "toolpass"
    system = root / "integrations" / "github"
    (system / "tests").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "integrations" / "__init__.py").write_text("")
    upward = "from toolpass import Toolkit\n"
    (system / "__init__.py").write_text("from toolpass.integrations import base\n")
    for unshipped in ("tests/test_github.py", "tests/conftest.py", "fake.py", "generate.py"):
        (system / unshipped).write_text(upward)
    assert upward_imports(root) == []
    (system / "_graphql.py").write_text(upward)
    [problem] = upward_imports(root)
    assert problem.startswith("toolpass/integrations/github/_graphql.py:1: integrations -> ")


def test_every_name_the_layer_list_gives_exists() -> None:
    """Each ``module.Name`` the docstring above names is in core, as named."""
    import importlib
    import re

    named = re.findall(r"``(?:toolpass\.)?((?:[a-z_]+\.)+)([A-Z]\w+)``", __doc__ or "")
    assert named, "the layer list names no class"
    missing = [
        f"{module}{name}"
        for module, name in named
        if not hasattr(importlib.import_module(f"toolpass.{module.rstrip('.')}"), name)
    ]
    assert missing == []


def cross_system_imports(root: Path) -> list[str]:
    """``file:line: target`` for every import, in a system's shipped modules, of another
    system's package: what two systems share lives in a shared module of ``integrations``
    (``_graphql``, ``_sql``, ``_google``, ...), never in one of them."""
    folder = root / "integrations"
    systems = {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    problems: list[str] = []
    for path in shipped_modules(root):
        parts = path.relative_to(folder).parts if path.is_relative_to(folder) else ()
        if len(parts) < 2:
            continue
        module = module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        others = systems - {parts[0]}
        for line, target in imported(tree, module, path.name == "__init__.py"):
            names = target.split(".")
            if names[:2] == [root.name, "integrations"] and names[2:3] and names[2] in others:
                problems.append(f"{path.relative_to(root.parent)}:{line}: {target}")
    return problems


def test_no_system_imports_another() -> None:
    assert cross_system_imports(CORE) == []


def test_a_system_importing_another_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "toolpass"
    for system in ("github", "linear"):
        (root / "integrations" / system).mkdir(parents=True)
        (root / "integrations" / system / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "integrations" / "__init__.py").write_text("")
    (root / "integrations" / "_graphql.py").write_text("")
    (root / "integrations" / "linear" / "_graphql.py").write_text(
        "from toolpass.integrations._graphql import operation\n"
        "from toolpass.integrations.linear import x\n"
        "from toolpass.integrations.github._graphql import _Walk\n"
    )
    assert cross_system_imports(root) == [
        "toolpass/integrations/linear/_graphql.py:3: toolpass.integrations.github._graphql._Walk"
    ]
