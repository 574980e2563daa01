"""What a call comes to: refusal codes and errors, and the audit event that records it.

The lowest layer the toolkit and the request hook share; it knows nothing of either.
"""

from toolpass.outcome.audit import AuditEvent, DefaultSink, JsonlSink, LogSink, StderrSink, emit
from toolpass.outcome.errors import CODES, ActionRefused, ApprovalPending, ToolError, ToolRefused
from toolpass.outcome.otel import OtelSink

__all__ = [
    "CODES",
    "ActionRefused",
    "ApprovalPending",
    "AuditEvent",
    "DefaultSink",
    "JsonlSink",
    "LogSink",
    "OtelSink",
    "StderrSink",
    "ToolError",
    "ToolRefused",
    "emit",
]
