"""The scripted permission engine, now core's ``toolpass.testing.ScriptedEngine``; this name
is kept so that ``from pytest_toolpass.engine import ScriptedEngine`` goes on working."""

from toolpass.testing import ScriptedEngine

__all__ = ["ScriptedEngine"]
