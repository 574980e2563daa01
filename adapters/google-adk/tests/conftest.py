"""Offline: the scripted model is the only model, and no telemetry is sent."""

from __future__ import annotations

import os

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("ADK_DISABLE_TELEMETRY", "true")
os.environ.setdefault("GOOGLE_CLOUD_DISABLE_TELEMETRY", "true")
