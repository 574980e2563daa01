"""Reading JSON-lines audit files: events, the lines that are not events, filters, counts.

What ``toolpass audit tail | filter | summary`` runs on. A line that is not an audit event
(a log line, a blank, broken JSON) is skipped and counted; a last line with no newline that
does not parse is a write in progress (torn), reported apart and never an error.
"""

from __future__ import annotations

import datetime
import fnmatch
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from toolpass.outcome.audit_text import plain

Record = dict[str, Any]
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h|d|w)")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass
class Tally:
    """What reading left aside: lines that were not events, and torn last lines."""

    skipped: int = 0
    torn: int = 0
    where: list[str] = field(default_factory=list)  # the first few skipped, as FILE:LINE

    def note(self, path: str, number: int) -> None:
        self.skipped += 1
        if len(self.where) < 5:
            self.where.append(f"{path}:{number}")

    def report(self) -> list[str]:
        """Sentences for stderr; none when nothing was left aside."""
        out = []
        if self.skipped:
            more = ", ..." if self.skipped > len(self.where) else ""
            out.append(
                f"skipped {self.skipped} line{'s' * (self.skipped != 1)} that "
                f"{'are' if self.skipped != 1 else 'is'} not audit events "
                f"({', '.join(self.where)}{more})"
            )
        if self.torn:
            out.append(f"left out {self.torn} torn last line(s) (a write in progress?)")
        return out


def event(text: str) -> Record | None:
    """The audit event a line holds, or None when it holds none."""
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    if not isinstance(record.get("tool"), str) or not isinstance(record.get("outcome"), str):
        return None
    return record


def read(paths: Iterable[str], tally: Tally) -> Iterator[Record]:
    """Every event of every file, in order. Raises ``OSError`` for a file that cannot be read."""
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, text in enumerate(f, 1):
                record = event(text)
                if record is not None:
                    yield record
                elif not text.endswith("\n"):
                    tally.torn += 1
                elif text.strip():
                    tally.note(path, number)


def follow(path: str, tally: Tally, poll: float = 0.2) -> Iterator[Record]:
    """The events appended to ``path`` from now on, forever (a torn last line is read once it
    is complete). A file truncated or replaced (rotated) is read again from its start."""
    f = open(path, "rb")  # noqa: SIM115 - reopened on rotation
    try:
        _after_last_line(f)
        pending = b""
        while True:
            chunk = f.readline()
            if chunk:
                pending += chunk
                if pending.endswith(b"\n"):
                    record = event(pending.decode("utf-8", "replace"))
                    if record is not None:
                        yield record
                    elif pending.strip():
                        tally.note(path, 0)
                    pending = b""
                continue
            time.sleep(poll)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                continue  # being rotated: wait for the new file
            if now.st_ino != os.fstat(f.fileno()).st_ino or now.st_size < f.tell():
                f.close()
                f = open(path, "rb")  # noqa: SIM115
                pending = b""
    finally:
        f.close()


def _after_last_line(f: Any) -> None:
    """Put ``f`` (binary) just after its last complete line."""
    end = f.seek(0, os.SEEK_END)
    back = min(end, 1 << 16)
    f.seek(end - back)
    tail = f.read(back)
    cut = tail.rfind(b"\n")
    if cut >= 0:
        f.seek(end - back + cut + 1)
    else:  # one torn line: from its start if it is the whole file, else from the end
        f.seek(0 if back == end else end)


def moment(value: str, now: float | None = None) -> float:
    """``--since``: an ISO-8601 time (UTC unless it says otherwise) or a duration back from
    now (``15m``, ``2h``, ``1d``, ``1h30m``). Raises ``ValueError`` with what is accepted."""
    text = value.strip()
    parts = _DURATION.findall(text)
    if parts and _DURATION.sub("", text).strip() == "":
        back = sum(float(n) * _SECONDS[unit] for n, unit in parts)
        return (time.time() if now is None else now) - back
    stamp = timestamp(text)
    if stamp is None:
        raise ValueError(
            f"{value!r} is neither an ISO-8601 time (2026-12-01T16:00:00Z) nor a duration "
            "(30s, 15m, 2h, 1d)"
        )
    return stamp


def timestamp(value: object) -> float | None:
    """Seconds since the epoch of a record's ``time`` (ISO-8601, or a number in older files)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def matcher(
    user: str | None = None,
    code: str | None = None,
    tool: str | None = None,
    outcome: str | None = None,
    since: float | None = None,
    would_refuse: bool = False,
) -> Callable[[Record], bool]:
    """A test for records: each given field must match (``tool`` and ``user`` may be shell
    patterns such as ``merge_*``; ``code`` also matches the outcome of a call with no code,
    so ``--code ok`` works). ``would_refuse``: only observed calls that enforcement would
    have refused, and ``code`` is one of what it would have refused."""

    def like(pattern: str | None, value: object) -> bool:
        return pattern is None or fnmatch.fnmatchcase(str(value or ""), pattern)

    def test(r: Record) -> bool:
        if not (like(user, r.get("user")) and like(tool, r.get("tool"))):
            return False
        if would_refuse:
            codes = would_refuse_codes(r)
            if not codes or (code is not None and code not in codes):
                return False
        elif code is not None and code not in (r.get("code"), r.get("outcome")):
            return False
        if outcome is not None and r.get("outcome") != outcome:
            return False
        if since is not None:
            when = timestamp(r.get("time"))
            return when is not None and when >= since
        return True

    return test


def would_refuse_codes(r: Record) -> list[str]:
    """What an observed call would have refused (its codes, each once, in order)."""
    found = r.get("would_refuse")
    if not isinstance(found, list):
        return []
    return list(dict.fromkeys(str(w.get("code")) for w in found if isinstance(w, dict)))


def _refused(r: Record) -> bool:
    return r.get("outcome") != "ok"


def summary(records: Iterable[Record]) -> dict[str, Any]:
    """Counts per outcome, code, tool and user. In each, what was refused (or failed) comes
    first: by how many were not ok, then by total."""
    counts: dict[str, Counter[str]] = {k: Counter() for k in ("outcome", "code", "tool", "user")}
    bad: dict[str, Counter[str]] = {k: Counter() for k in ("tool", "user")}
    would: dict[str, Counter[str]] = {k: Counter() for k in ("code", "tool", "user")}
    total = observed = 0
    for r in records:
        total += 1
        keys = {
            "outcome": str(r.get("outcome")),
            "code": str(r.get("code") or r.get("outcome")),
            "tool": str(r.get("tool")),
            "user": str(r.get("user") or "-"),
        }
        for name, key in keys.items():
            counts[name][key] += 1
        if _refused(r):
            for name in bad:
                bad[name][keys[name]] += 1
        codes = would_refuse_codes(r)
        if codes:
            observed += 1
            would["code"].update(codes)
            would["tool"][keys["tool"]] += 1
            would["user"][keys["user"]] += 1

    def order(name: str) -> list[dict[str, Any]]:
        def rank(item: tuple[str, int]) -> tuple[int, int, int, str]:
            key, n = item
            not_ok = bad[name][key] if name in bad else (n if key != "ok" else 0)
            return (key == "ok", -not_ok, -n, key)

        rows = []
        for key, n in sorted(counts[name].items(), key=rank):
            row: dict[str, Any] = {"name": key, "count": n}
            if name in bad:
                row["not_ok"] = bad[name][key]
            rows.append(row)
        return rows

    def most(counter: Counter[str]) -> list[dict[str, Any]]:
        return [{"name": k, "count": n} for k, n in sorted(counter.items(), key=_by_count)]

    would_refuse = {"events": observed, **{name: most(c) for name, c in would.items()}}
    return {"events": total, **{name: order(name) for name in counts}, "would_refuse": would_refuse}


def _by_count(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])


def summary_lines(s: dict[str, Any]) -> list[str]:
    """The summary as text."""
    out = [f"{s['events']} events"]
    for name in ("outcome", "code", "tool", "user"):
        out.append(f"\nby {name}:")
        width = max((len(row["name"]) for row in s[name]), default=0)
        for row in s[name]:
            extra = f"  ({row['not_ok']} not ok)" if row.get("not_ok") else ""
            out.append(f"  {plain(row['name']):<{width}}  {row['count']:>6}{extra}")
    would = s["would_refuse"]
    if would["events"]:
        out.append(f"\nwould refuse (observe mode): {would['events']} events")
        for name in ("code", "tool", "user"):
            out.append(f"\n  by {name}:")
            width = max(len(row["name"]) for row in would[name])
            out.extend(
                f"    {plain(row['name']):<{width}}  {row['count']:>6}" for row in would[name]
            )
    return out
