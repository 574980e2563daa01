"""One audit event per tool call, built lazily, and the sinks that receive it."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import IO, Any, Literal

from toolpass.outcome.audit_text import compose, iso, line, short, would_refuse_text
from toolpass.rules.redact import redact
from toolpass.rules.secrets import scrub, secret_name
from toolpass.rules.walk import plain

log = logging.getLogger("toolpass")


def _clean(value: Any, secrets: tuple[str, ...]) -> Any:
    """What an audit record may show of a value: JSON-friendly, values under secret-looking
    names redacted, credentials found by their shape and the call's own credential replaced."""
    return redact(scrub(plain(value, secret_name)), secrets)


class AuditEvent:
    """What happened in one call. Fields are filled as the call goes; ``to_dict`` formats.

    Building the dictionary (and redacting arguments) happens only when a sink asks for it.
    """

    # What most calls never set is a class default: an event costs only what it records.
    user: str | None = None
    session_id: str | None = None
    arguments: Mapping[str, Any] | None = None
    outcome = "refused"  # "ok", "refused", "error" or "cancelled"
    code: str | None = None
    message: str | None = None
    detail: str | None = None
    authorization: tuple[str, str] | None = None  # (decision, reason)
    approval_reasons: tuple[str, ...] = ()
    approval_id: str | None = None
    approved_by: str | None = None  # who approved the call that ran
    standing_approval: str | None = None  # the standing approval it ran under, if any
    preview: str | None = None  # what a person was asked to approve
    duration = 0.0
    secrets: tuple[str, ...] = ()
    mode = "enforce"  # "observe": nothing was refused; ``would_refuse`` says what would be
    would_refuse: tuple[dict[str, str | None], ...] = ()  # each code, message and detail
    task: str | None = None  # which rule of the task scope decided (``toolkit.task``)

    def __init__(self, tool: str, effect: str | None) -> None:
        #: When the call ended (``finish``; until then, when it began): events are written
        #: as calls end, so a file of them is in time order, a nested call before its caller.
        self.time = time.time()
        self._start = time.perf_counter()
        self.tool = tool
        self.effect = effect
        self.actions: list[dict[str, Any]] = []

    @property
    def reasons(self) -> list[str]:
        """Why the call went as it did: the authorization, then why approval was needed."""
        out = []
        if self.authorization is not None:
            decision, reason = self.authorization
            out.append(f"authorization: {decision}" + (f" ({reason})" if reason else ""))
        out.extend(self.approval_reasons)
        return out

    def would(self, code: str, message: str, detail: str | None) -> None:
        """Note what a check would have refused, had the call not been observed."""
        self.would_refuse += ({"code": code, "message": message, "detail": detail},)

    def finish(self) -> None:
        """The call ended: ``time`` is now, ``duration`` how long it took."""
        self.duration = time.perf_counter() - self._start
        self.time = time.time()

    def seal(self) -> None:
        """Redact the call's credential from what the event holds now, and forget it: a sink
        may keep the event, and nothing it keeps may hold the credential."""
        secrets = self.secrets
        if not secrets:
            return
        if self.arguments is not None:
            self.arguments = redact(self.arguments, secrets)
        self.message = redact(self.message, secrets)
        self.detail = redact(self.detail, secrets)
        self.actions = redact(self.actions, secrets)
        self.preview = redact(self.preview, secrets)
        self.would_refuse = redact(self.would_refuse, secrets)
        self.secrets = ()

    def to_dict(self) -> dict[str, Any]:
        secrets = self.secrets
        args: dict[str, Any] | None = None
        if self.arguments is not None:
            args = _clean(dict(self.arguments), secrets)
        record: dict[str, Any] = {
            "time": iso(self.time),
            "user": self.user,
            "session": self.session_id,
            "tool": self.tool,
            "effect": self.effect,
            "arguments": args,
            "outcome": self.outcome,
            "code": self.code,
            "message": _clean(self.message, secrets),
            "detail": _clean(self.detail, secrets),
            "reasons": self.reasons,
            "approval_id": self.approval_id,
            "approved_by": self.approved_by,
            "standing_approval": self.standing_approval,
            "preview": _clean(self.preview, secrets),
            "actions": [
                _clean({k: v for k, v in a.items() if k[:1] != "_"}, secrets) for a in self.actions
            ],
            "duration_ms": round(self.duration * 1000, 3),
        }
        if self.task is not None:
            record["task"] = self.task
        if self.mode == "observe":
            record["mode"] = self.mode
            record["would_refuse"] = [_clean(dict(w), secrets) for w in self.would_refuse]
        return record

    def line(self) -> str:
        """The readable line of ``audit_text.line(self.to_dict())``, built without the
        dictionary: only the reason it shows is cleaned."""
        secrets, why = self.secrets, ""
        if self.detail:
            why = _clean(self.detail, secrets)
        if not why and self.approval_reasons:  # the last of ``reasons``
            why = self.approval_reasons[-1]
        elif not why and self.authorization is not None:
            why = self.reasons[-1]
        why = why or _clean(self.message, secrets)
        code = self.code or (_would_refuse(self.would_refuse) if self.would_refuse else None)
        took = round(self.duration * 1000, 3)
        return compose(iso(self.time), self.user, self.tool, self.outcome, code, took, short(why))

    def __repr__(self) -> str:
        return (
            f"AuditEvent({self.tool!r}, user={self.user!r}, outcome={self.outcome!r}, "
            f"code={self.code!r})"
        )


def _would_refuse(found: tuple[dict[str, str | None], ...]) -> str:
    return would_refuse_text(w["code"] for w in found)


AuditSink = Callable[[AuditEvent], object]


class LogSink:
    """Sends events to Python logging (logger ``toolpass.audit``, level INFO) as JSON."""

    def __init__(self, logger: str | logging.Logger = "toolpass.audit", level: int = logging.INFO):
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.level = level

    def __call__(self, event: AuditEvent) -> None:
        if self.logger.isEnabledFor(self.level):
            record = event.to_dict()
            self.logger.log(
                self.level, json.dumps(record, default=repr), extra={"toolpass_audit": record}
            )


class JsonlSink:
    """Appends one JSON line per event to a file; safe for concurrent calls."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self._lock = threading.Lock()

    def __call__(self, event: AuditEvent) -> None:
        line = json.dumps(event.to_dict(), default=repr) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)


class StderrSink:
    """Writes one line per event to stderr (or ``stream``): readable text or JSON."""

    def __init__(self, format: Literal["text", "json"] = "text", stream: IO[str] | None = None):
        if format not in ("text", "json"):
            raise ValueError(f"format must be 'text' or 'json', not {format!r}")
        self.format = format
        self.stream = stream
        self._lock = threading.Lock()

    def __call__(self, event: AuditEvent) -> None:
        """Write the event's line and flush it: once the call returns, its line is with the
        operating system, so no exit, crash or kill of this process loses it."""
        if self.format == "text":
            text = event.line() + "\n"
        else:
            text = json.dumps(event.to_dict(), default=repr) + "\n"
        stream = self.stream or sys.stderr
        with self._lock:
            stream.write(text)
            stream.flush()


#: The values ``TOOLPASS_AUDIT`` takes (``auto`` when unset).
AUDIT_MODES = ("auto", "text", "json", "off")


class DefaultSink:
    """Where events go when a toolkit names no sink, as ``TOOLPASS_AUDIT`` says (read at
    each call). ``auto`` (unset): JSON through logging (``toolpass.audit``, INFO) when the
    application has configured logging, else one readable line on stderr. ``text`` or
    ``json``: that format, through logging when it is configured, else on stderr. ``off``:
    nowhere. An event goes one way only, never to both."""

    def __init__(self) -> None:
        self.logger = logging.getLogger("toolpass.audit")
        self._text, self._json = StderrSink("text"), StderrSink("json")
        self._warned = False

    def __call__(self, event: AuditEvent) -> None:
        mode = os.environ.get("TOOLPASS_AUDIT", "auto").strip().lower() or "auto"
        if mode == "off":
            return
        if mode not in AUDIT_MODES:
            if not self._warned:
                self._warned = True
                log.warning("TOOLPASS_AUDIT=%r is not one of %s; using auto", mode, AUDIT_MODES)
            mode = "auto"
        if self.logger.hasHandlers():
            if self.logger.isEnabledFor(logging.INFO):
                record = event.to_dict()
                text = line(record) if mode == "text" else json.dumps(record, default=repr)
                self.logger.info(text, extra={"toolpass_audit": record})
        elif mode == "json":
            self._json(event)
        else:
            self._text(event)


def emit(event: AuditEvent, sinks: tuple[AuditSink, ...]) -> None:
    """Give the event to every sink; a failing sink is logged and never changes the call."""
    for sink in sinks:
        try:
            sink(event)
        except Exception:
            log.exception("toolpass audit sink %r failed", sink)
