"""The permission engine: asks the system that owns a resource whether a user may act on it."""

from toolpass.engine.checker import Checker
from toolpass.engine.decision import Decision, Verdict
from toolpass.engine.errors import (
    ConfigError,
    LookupFailed,
    PermissionDenied,
    SecretError,
    ToolpassError,
)
from toolpass.engine.guarded import guarded
from toolpass.engine.remote import RemoteToolpass
from toolpass.engine.secrets import Secret, env, file, literal
from toolpass.engine.toolpass import Toolpass

__all__ = [
    "Checker",
    "ConfigError",
    "Decision",
    "LookupFailed",
    "PermissionDenied",
    "RemoteToolpass",
    "Secret",
    "SecretError",
    "Toolpass",
    "ToolpassError",
    "Verdict",
    "env",
    "file",
    "guarded",
    "literal",
]
