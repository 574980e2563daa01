"""Offline: nothing leaves the machine, no telemetry."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
sys.path.insert(0, str(Path(__file__).resolve().parent))
# The fakes of vendor APIs are core's test fakes.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "core" / "tests"))

import warm_python


@pytest.fixture(scope="session", autouse=True)
def warm_servers() -> Iterator[None]:
    """The fork server of the test MCP servers' processes (warm_python.py), stopped at the
    end."""
    yield
    warm_python.stop_server()
