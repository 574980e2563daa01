"""Offline: the CLI talks only to the fake Messages API on 127.0.0.1 and sends no telemetry."""

from __future__ import annotations

import os

os.environ.setdefault("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
os.environ.setdefault("DISABLE_TELEMETRY", "1")
os.environ.setdefault("DISABLE_ERROR_REPORTING", "1")
