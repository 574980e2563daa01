"""Fakes of vendor APIs on 127.0.0.1 for the tests: ``server.FakeServer`` is the base.

What every fake shares lives here (``server``, ``tls``, ``proxy``); each system's fake lives
in its folder, ``core/src/toolpass/integrations/<name>/fake.py`` (outside the wheel), and is
imported as ``fakes.<name>``, found by path: so it imports the same whether toolpass is
installed from a wheel (which has no fakes) or editable.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

SYSTEMS = Path(__file__).resolve().parents[2] / "src" / "toolpass" / "integrations"


class SystemFakes(MetaPathFinder):
    """Finds ``fakes.<name>`` at ``integrations/<name>/fake.py``."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        package, _, name = fullname.partition(".")
        file = SYSTEMS / name / "fake.py"
        if package != __name__ or not name.isidentifier() or not file.is_file():
            return None
        return importlib.util.spec_from_file_location(fullname, file)


if not any(isinstance(f, SystemFakes) for f in sys.meta_path):
    sys.meta_path.append(SystemFakes())
