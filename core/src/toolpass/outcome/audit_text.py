"""Audit records as people read them: ISO-8601 UTC times and one short line per event."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_REASON = 160  # characters of reason a line shows


def iso(timestamp: float) -> str:
    """``timestamp`` (seconds since the epoch) as ISO-8601 UTC with milliseconds."""
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def plain(value: object) -> str:
    """One line of text: control characters (a newline, a terminal escape) shown escaped."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(value))


def reason(record: Mapping[str, Any]) -> str:
    """Why the call went as it did, shortly: the refusal's detail, else the last reason,
    else the message."""
    reasons = record.get("reasons") or []
    text = record.get("detail") or (reasons[-1] if reasons else "") or record.get("message")
    text = " ".join(plain(text or "").split())
    return text if len(text) <= _REASON else text[: _REASON - 3] + "..."


def line(record: Mapping[str, Any]) -> str:
    """One readable line: time, user, tool, outcome and code, duration, short reason."""
    outcome = plain(record.get("outcome") or "?")
    if record.get("code"):
        outcome += f" {plain(record['code'])}"
    when = record.get("time")
    when = iso(when) if isinstance(when, (int, float)) else plain(when or "-")
    took = record.get("duration_ms")
    took = f" ({took:g} ms)" if isinstance(took, (int, float)) else ""
    why = reason(record)
    return (
        f"{when} toolpass: {plain(record.get('user') or '-')} {plain(record.get('tool'))}"
        f" {outcome}{took}" + (f": {why}" if why else "")
    )
