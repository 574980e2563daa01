"""Offline: nothing leaves the machine, no telemetry."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
sys.path.insert(0, str(Path(__file__).resolve().parent))
# The fakes of vendor APIs are core's test fakes.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "core" / "tests"))
