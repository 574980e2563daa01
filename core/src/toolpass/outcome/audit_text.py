"""Audit records as people read them: ISO-8601 UTC times and one short line per event."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from typing import Any

from toolpass.rules.lazy import lazy_pattern

_CONTROL = lazy_pattern(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_REASON = 160  # characters of reason a line shows


_SECOND = [0, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(0))]  # the last second shown


def iso(timestamp: float) -> str:
    """``timestamp`` (seconds since the epoch) as ISO-8601 UTC with milliseconds (rounded to
    the microsecond, then cut, as ``datetime`` does)."""
    whole = math.floor(timestamp)
    micros = round((timestamp - whole) * 1e6)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    second, shown = _SECOND
    if second != whole:
        shown = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
        _SECOND[:] = whole, shown  # one assignment: a thread reads a matching pair
    return f"{shown}.{micros // 1000:03d}Z"


def plain(value: object) -> str:
    """One line of text: control characters (a newline, a terminal escape) shown escaped."""
    text = str(value)
    if text.isprintable():  # the usual case: no control character (they are not printable)
        return text
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def short(text: object) -> str:
    """``text`` on one line, its spacing collapsed, cut to the length a line shows."""
    text = str(text or "")
    # Printable text has no spacing but the space: it is collapsed already when no two
    # spaces meet and none ends it.
    if not text.isprintable() or "  " in text or text[:1] == " " or text[-1:] == " ":
        text = " ".join(plain(text).split())
    return text if len(text) <= _REASON else text[: _REASON - 3] + "..."


def reason(record: Mapping[str, Any]) -> str:
    """Why the call went as it did, shortly: the refusal's detail, else the last reason,
    else the message."""
    reasons = record.get("reasons") or []
    return short(record.get("detail") or (reasons[-1] if reasons else "") or record.get("message"))


def compose(
    when: str, user: object, tool: object, outcome: object, code: object, took: object, why: str
) -> str:
    """The line of one event from its parts (``why`` already short)."""
    took = f" ({took:g} ms)" if isinstance(took, (int, float)) else ""
    code = f" {code}" if code else ""
    text = f"{when} toolpass: {user or '-'} {tool} {outcome or '?'}{code}{took}"
    text += f": {why}" if why else ""
    if text.isprintable():  # the usual case: no part holds a control character
        return text
    shown = plain(outcome or "?") + (f" {plain(code[1:])}" if code else "")
    return f"{plain(when)} toolpass: {plain(user or '-')} {plain(tool)} {shown}{took}" + (
        f": {why}" if why else ""
    )


def line(record: Mapping[str, Any]) -> str:
    """One readable line: time, user, tool, outcome and code, duration, short reason."""
    when = record.get("time")
    when = iso(when) if isinstance(when, (int, float)) else plain(when or "-")
    return compose(
        when,
        record.get("user"),
        record.get("tool"),
        record.get("outcome"),
        record.get("code") or would_refuse_text(_codes(record)),
        record.get("duration_ms"),
        reason(record),
    )


def would_refuse_text(codes: Iterable[object]) -> str:
    """What an observed call would have refused, as its line shows it (empty: nothing)."""
    shown = ", ".join(dict.fromkeys(map(str, codes)))
    return f"(would refuse {shown})" if shown else ""


def _codes(record: Mapping[str, Any]) -> list[object]:
    found = record.get("would_refuse")
    return [w.get("code") for w in found if isinstance(w, dict)] if isinstance(found, list) else []
