"""Argument rules: scope globs and predicates, ready-made validators, secret scanning."""

from toolpass.rules.scope import compile_scope, escapes, glob_to_regex, has_control
from toolpass.rules.secrets import find_secret, find_secret_in

__all__ = [
    "compile_scope",
    "escapes",
    "find_secret",
    "find_secret_in",
    "glob_to_regex",
    "has_control",
]
