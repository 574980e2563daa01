"""Moved to :mod:`toolpass.outcome.errors`; this path stays for ``toolpass.adapting``."""

from toolpass.outcome.errors import CODES, ActionRefused, ApprovalPending, ToolError, ToolRefused

__all__ = ["CODES", "ActionRefused", "ApprovalPending", "ToolError", "ToolRefused"]
