"""``toolpass.adapting`` is a package of short parts, and the one import path of adapters:
every name an adapter (or anything else in the repository) imports from it is exported there,
and is the part's own object."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import toolpass.adapting

PACKAGE = Path(toolpass.adapting.__file__).parent
REPOSITORY = Path(__file__).resolve().parents[2]
PARTS = ("approvals", "guard", "rules", "sources")
#: The longest a part may grow (the brief's ~600 lines, with room for its imports).
LONGEST = 650


def imported_from_adapting(root: Path) -> set[str]:
    """The names every Python file under ``root`` imports from ``toolpass.adapting``."""
    names: set[str] = set()
    for path in root.rglob("*.py"):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue  # .nox, .git and other tool folders
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "toolpass.adapting":
                names |= {alias.name for alias in node.names}
    return names


def test_every_name_imported_from_adapting_is_exported() -> None:
    if not (REPOSITORY / "adapters").is_dir():
        pytest.skip("needs the repository's sources")
    imported = imported_from_adapting(REPOSITORY)
    assert {"Guard", "Rule", "Traits", "Answer", "Pending"} <= imported
    assert imported <= set(toolpass.adapting.__all__)


@pytest.mark.parametrize("name", toolpass.adapting.__all__)
def test_each_export_is_importable(name: str) -> None:
    assert getattr(toolpass.adapting, name) is not None


@pytest.mark.parametrize("part", PARTS)
def test_each_part_is_short_and_says_what_it_holds(part: str) -> None:
    module = importlib.import_module(f"toolpass.adapting.{part}")
    assert (module.__doc__ or "").strip()
    for name in set(toolpass.adapting.__all__) & set(vars(module)):
        if getattr(getattr(module, name), "__module__", None) == module.__name__:
            assert getattr(toolpass.adapting, name) is getattr(module, name)
    assert len((PACKAGE / f"{part}.py").read_text(encoding="utf-8").splitlines()) <= LONGEST
