"""The permission engine: asks the system that owns a resource whether a user may act on it."""

from toolpass.engine.decision import Decision, Verdict

__all__ = ["Decision", "Verdict"]
