"""Test helpers for toolpass: the adapter and integration conformance suites and a
scripted engine."""

from pytest_toolpass.conformance import AdapterConformance, Call, KitTools, Transcript
from pytest_toolpass.engine import ScriptedEngine
from pytest_toolpass.integration import IntegrationConformance

__all__ = [
    "AdapterConformance",
    "Call",
    "IntegrationConformance",
    "KitTools",
    "ScriptedEngine",
    "Transcript",
]
