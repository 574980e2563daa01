"""The permission engine: asks the system that owns a resource whether a user may act on it."""

from toolpass.engine.checker import Checker
from toolpass.engine.config import Config, load_config
from toolpass.engine.remote import RemoteToolpass
from toolpass.engine.toolpass import Toolpass
from toolpass.wire.decision import Decision, Verdict
from toolpass.wire.errors import (
    ConfigError,
    LookupFailed,
    PermissionDenied,
    SecretError,
    ToolpassError,
)
from toolpass.wire.secrets import Secret, env, file, literal

__all__ = [
    "Checker",
    "Config",
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
    "literal",
    "load_config",
]
