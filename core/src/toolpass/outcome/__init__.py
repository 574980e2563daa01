"""What a call comes to: refusal codes and errors, and the audit event that records it.

The lowest layer the toolkit and the request hook share; it knows nothing of either.
"""

from toolpass.outcome.audit import AuditEvent, JsonlSink, LogSink, emit
from toolpass.outcome.errors import CODES, ActionRefused, ApprovalPending, ToolError, ToolRefused

__all__ = [
    "CODES",
    "ActionRefused",
    "ApprovalPending",
    "AuditEvent",
    "JsonlSink",
    "LogSink",
    "ToolError",
    "ToolRefused",
    "emit",
]
