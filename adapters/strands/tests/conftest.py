"""Offline: no model request leaves the process, and no telemetry is sent."""

from __future__ import annotations

import os

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("STRANDS_TELEMETRY_DISABLED", "true")
