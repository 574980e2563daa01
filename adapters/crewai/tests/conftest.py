"""Offline: no model request leaves the process, and no telemetry, tracing or version check
is sent (set before CrewAI is imported)."""

from __future__ import annotations

import os

for _name in (
    "CREWAI_DISABLE_TELEMETRY",
    "CREWAI_DISABLE_TRACKING",
    "CREWAI_DISABLE_VERSION_CHECK",
    "OTEL_SDK_DISABLED",
):
    os.environ[_name] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"

import warnings

# CrewAI 1.15's import of crewai.rag.embeddings warns (ImportWarning: "Cannot set an attribute
# on 'crewai.rag' for child module 'embeddings'"); warnings are errors in the tests, so it is
# imported once here with that one warning silenced.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=ImportWarning)
    import crewai  # noqa: F401

import pytest

#: CrewAI 1.15 reads its own deprecated fields (function_calling_llm, multimodal, ...) in every
#: kickoff; those DeprecationWarnings come from CrewAI's modules, not from toolpass.
CREWAI_DEPRECATIONS = r"ignore::DeprecationWarning:crewai\..*"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("filterwarnings", CREWAI_DEPRECATIONS)
