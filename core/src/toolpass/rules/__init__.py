"""Argument rules: scope globs and predicates."""

from toolpass.rules.scope import compile_scope, escapes, glob_to_regex, has_control

__all__ = ["compile_scope", "escapes", "glob_to_regex", "has_control"]
