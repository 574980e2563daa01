"""Moved to :mod:`toolpass.outcome.audit`; this path stays for ``toolpass.adapting``."""

from toolpass.outcome.audit import AuditEvent, AuditSink, JsonlSink, LogSink, emit

__all__ = ["AuditEvent", "AuditSink", "JsonlSink", "LogSink", "emit"]
