"""The secure-tools API: every tool call passes one ordered pipeline of checks."""

from toolpass.outcome.audit import AuditEvent, DefaultSink, JsonlSink, LogSink, StderrSink
from toolpass.outcome.errors import CODES, ApprovalPending, ToolError, ToolRefused
from toolpass.outcome.otel import OtelSink
from toolpass.toolkit.approval import ApprovalQueue, ApprovalRequest
from toolpass.toolkit.authorize import PermissionCheck, permission_check
from toolpass.toolkit.session import Session, current_session
from toolpass.toolkit.settings import (
    CustomEffect,
    Effect,
    PermissionEngine,
    Settings,
    ToolkitOptions,
    ToolOptions,
)
from toolpass.toolkit.spec import ToolCall, ToolSpec
from toolpass.toolkit.toolkit import Toolkit, configure, default_toolkit, secured_tool, tool
from toolpass.toolkit.untrusted import fence

__all__ = [
    "CODES",
    "ApprovalPending",
    "ApprovalQueue",
    "ApprovalRequest",
    "AuditEvent",
    "CustomEffect",
    "DefaultSink",
    "Effect",
    "JsonlSink",
    "LogSink",
    "OtelSink",
    "PermissionCheck",
    "PermissionEngine",
    "Session",
    "Settings",
    "StderrSink",
    "ToolCall",
    "ToolError",
    "ToolOptions",
    "ToolRefused",
    "ToolSpec",
    "Toolkit",
    "ToolkitOptions",
    "configure",
    "current_session",
    "default_toolkit",
    "fence",
    "permission_check",
    "secured_tool",
    "tool",
]
