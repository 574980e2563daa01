"""The route-table generators of scripts/routes/, loaded for the tests that check them.

They are loaded by path, never by putting scripts/routes/ on ``sys.path``, where their names
(gitlab.py, kubernetes.py, ...) would hide the client libraries of the same names.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[3]
SCRIPTS = REPO / "scripts" / "routes"


def _load(module_name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generator(name: str) -> ModuleType:
    """``scripts/routes/<name>.py`` as a module, with the shared modules it imports
    (``_table``, ``_discovery``)."""
    for shared in ("_table", "_discovery"):
        if shared not in sys.modules:
            sys.modules[shared] = _load(shared, SCRIPTS / f"{shared}.py")
    return _load(f"routes_{name}_generator", SCRIPTS / f"{name}.py")
