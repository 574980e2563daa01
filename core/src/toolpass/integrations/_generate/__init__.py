"""What the route-table generators share (``table``, ``discovery``); not in the wheel.

Each system's generator is ``integrations/<name>/generate.py``, run from a source checkout
(``python core/src/toolpass/integrations/<name>/generate.py --help``).
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType


def generator(name: str) -> ModuleType:
    """The route-table generator of system ``name``, as a module (for the tests)."""
    return import_module(f"toolpass.integrations.{name}.generate")
