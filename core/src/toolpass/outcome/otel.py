"""OpenTelemetry export: a span per tool call, the decision as its attributes, an event per
request the request hook checked. Needs the ``otel`` extra (``opentelemetry-api``); core
imports it only when an ``OtelSink`` is made."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from typing import Any

from toolpass._version import __version__
from toolpass.outcome.audit import AuditEvent

_SCALAR = (str, bool, int, float)
log = logging.getLogger("toolpass")


def _value(value: Any) -> Any:
    """An attribute value OpenTelemetry accepts: a scalar, or the value as text."""
    return value if isinstance(value, _SCALAR) else str(value)


def _where(actions: list[dict[str, Any]]) -> Mapping[str, Any]:
    """The request that decided the call: the one refused, else the last one checked."""
    checked = [a for a in actions if a.get("connection")]
    refused = [a for a in checked if a.get("verdict") not in (None, "allowed")]
    return (refused or checked or [{}])[-1]


class OtelSink:
    """An audit sink that records each call as a finished span (``execute_tool NAME``), a
    child of the span current where the tool was called, timed as the call was.

    Attributes: ``gen_ai.operation.name``, ``gen_ai.tool.name``, and ``toolpass.tool``,
    ``.effect``, ``.outcome``, ``.code``, ``.user``, ``.session``, ``.reason``,
    ``.approval_id`` and, where a checked request names them, ``.connection``, ``.action``,
    ``.resource``; each request the hook checked is an event ``toolpass.request`` carrying
    its method, host, path, connection, action, resource and verdict. A refusal or error
    sets the span's status to error. Values are the audit record's, already redacted.
    ``tracer``: a tracer of your own (default: the global provider's ``toolpass`` tracer).
    """

    def __init__(self, tracer: Any = None) -> None:
        try:  # an optional dependency: imported by name, so core type-checks without it
            trace = importlib.import_module("opentelemetry.trace")
        except ImportError:
            raise ImportError(
                "OtelSink needs OpenTelemetry: pip install 'toolpass-core[otel]'"
            ) from None
        self.tracer = tracer or trace.get_tracer("toolpass", __version__)
        self._status, self._error = trace.Status, trace.StatusCode.ERROR
        self._trace, self._default, self._checked = trace, tracer is None, False

    def _warn_if_nowhere(self) -> None:
        """Say once (logger ``toolpass``) when spans go nowhere: the API alone, no tracer
        provider set (``trace.set_tracer_provider`` of ``opentelemetry-sdk``, or an agent)."""
        self._checked = True
        trace = self._trace
        noop = isinstance(self.tracer, trace.NoOpTracer)
        if self._default:
            unset = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
            noop = noop or isinstance(trace.get_tracer_provider(), unset)
        if noop:
            log.warning(
                "toolpass OtelSink: no OpenTelemetry tracer provider is set, so tool call "
                "spans go nowhere; install opentelemetry-sdk and call "
                "trace.set_tracer_provider(...) (or run under an OpenTelemetry agent)"
            )

    def __call__(self, event: AuditEvent) -> None:
        if not self._checked:
            self._warn_if_nowhere()
        record = event.to_dict()
        end = int(event.time * 1e9)  # the event's time is when the call ended
        start = end - int(event.duration * 1e9)
        where = _where(record["actions"])
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": record["tool"],
            **{
                f"toolpass.{key}": _value(record[name])
                for key, name in (
                    ("tool", "tool"),
                    ("effect", "effect"),
                    ("outcome", "outcome"),
                    ("code", "code"),
                    ("user", "user"),
                    ("session", "session"),
                    ("approval_id", "approval_id"),
                )
                if record.get(name) is not None
            },
            **{
                f"toolpass.{key}": _value(where[key])
                for key in ("connection", "action", "resource")
                if where.get(key)
            },
        }
        reason = record["detail"] or "; ".join(record["reasons"]) or record["message"]
        if reason:
            attributes["toolpass.reason"] = _value(reason)
        span = self.tracer.start_span(
            f"execute_tool {record['tool']}", start_time=start, attributes=attributes
        )
        for action in record["actions"]:
            span.add_event(
                "toolpass.request",
                {k: _value(v) for k, v in action.items() if v is not None},
                timestamp=end,  # requests carry no time of their own: within the span
            )
        if record["outcome"] not in ("ok", "unchecked"):
            span.set_status(self._status(self._error, record["code"] or record["outcome"]))
        span.end(end_time=end)
