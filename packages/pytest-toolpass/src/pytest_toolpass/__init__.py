"""Test helpers for toolpass: the adapter conformance suite and a scripted engine."""

from pytest_toolpass.conformance import AdapterConformance, Call, KitTools, Transcript
from pytest_toolpass.engine import ScriptedEngine

__all__ = ["AdapterConformance", "Call", "KitTools", "ScriptedEngine", "Transcript"]
