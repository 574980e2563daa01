"""Integration tests: every adapter through its framework's real agent loop.

Each nox session runs the test module of one framework in that framework's own environment;
the fakes of vendor APIs are shared with core's tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
