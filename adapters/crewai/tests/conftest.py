"""Offline: no model request leaves the process, and no telemetry, tracing or version check
is sent (set before CrewAI is imported)."""

from __future__ import annotations

import os
import warnings

import pytest

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
os.environ["CREWAI_DISABLE_VERSION_CHECK"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["OTEL_SDK_DISABLED"] = "true"

# CrewAI 1.15's import of crewai.rag.embeddings warns (ImportWarning: "Cannot set an attribute
# on 'crewai.rag' for child module 'embeddings'"); warnings are errors in the tests, so it is
# imported once here with that one warning silenced.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=ImportWarning)
    import crewai  # noqa: F401

#: CrewAI 1.15 reads its own deprecated fields (function_calling_llm, multimodal, ...) in every
#: kickoff; those DeprecationWarnings come from CrewAI's modules, not from toolpass.
CREWAI_DEPRECATIONS = r"ignore::DeprecationWarning:crewai\..*"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("filterwarnings", CREWAI_DEPRECATIONS)
