"""Offline: no model request leaves the process, and no telemetry is sent."""

from __future__ import annotations

import os

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("LOGFIRE_SEND_TO_LOGFIRE", "false")

import pydantic_ai.models

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False  # only the scripted FunctionModel runs
