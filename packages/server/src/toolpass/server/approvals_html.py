"""The approvals page's HTML: plain server-rendered markup, every value escaped.

Previews, reasons, tool and user names are attacker-influenced text: each goes through
:func:`esc` (``html.escape`` with quotes) and nowhere else; nothing is marked safe.
"""

from __future__ import annotations

import html
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from toolpass.outcome.audit_text import iso, plain, reason
from toolpass.server.approvals_view import SCOPES, Filters
from toolpass.toolkit.approval import printable, shown_text
from toolpass.toolkit.approval_history import HistoryEntry
from toolpass.toolkit.standing import StandingApproval

STATIC = "/approvals/static"


def esc(value: object) -> str:
    """``value`` as text inside HTML (element content or a quoted attribute), with every
    character that would not show as itself (a bidi override, a zero-width space, a control
    character) written as its escape."""
    return html.escape(printable("" if value is None else str(value)), quote=True)


def esc_lines(value: object) -> str:
    """:func:`esc`, except that a line break stays a line break (for a ``<pre>``): every
    other character that would not show as itself is still written as its escape."""
    return "\n".join(esc(line) for line in ("" if value is None else str(value)).split("\n"))


def document(title: str, body: str) -> str:
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title>"
        f'<link rel=stylesheet href="{STATIC}/approvals.css">'
        f'<script src="{STATIC}/approvals.js" defer></script>'
        f"</head><body>{body}</body></html>\n"
    )


def login(token: str, problem: str = "") -> str:
    note = f"<p class=problem role=alert id=problem>{esc(problem)}</p>" if problem else ""
    return document(
        "Sign in: toolpass approvals",
        "<main class=narrow><h1>toolpass approvals</h1>"
        f"{note}"
        '<form method=post action="/approvals/login" id=login>'
        f'<input type=hidden name=token value="{esc(token)}">'
        "<label for=key>Your approver key</label>"
        "<input type=password name=key id=key autocomplete=current-password required>"
        "<button type=submit>Sign in</button></form></main>",
    )


def _when(seconds: float | None) -> str:
    return iso(seconds) if isinstance(seconds, (int, float)) else "-"


#: How the history names each state.
STATE_LABELS = {
    "pending": "waiting",
    "approved": "approved, not yet run",
    "edited": "approved with changed arguments",
    "ran": "approved and run",
    "denied": "denied",
    "expired": "expired",
}


def _reach(request_id: str, longest: int) -> str:
    """The choice of how far an approval reaches (this call only by default)."""
    options = "".join(f'<option value="{esc(k)}">{esc(v)}</option>' for k, v in SCOPES.items())
    return (
        f'<label for="scope-{esc(request_id)}">Approve</label>'
        f'<select name=scope id="scope-{esc(request_id)}">{options}</select>'
        f'<label for="minutes-{esc(request_id)}">N minutes (at most {longest})</label>'
        f'<input type=number name=minutes id="minutes-{esc(request_id)}" min=1 max={longest}>'
    )


def _pending(group: list[HistoryEntry], csrf: str, ttl: float, longest: int = 480) -> str:
    """One card for the requests of one call (the newest decides them all)."""
    r = group[0]
    reasons = "".join(f"<li>{esc(x)}</li>" for x in r.reasons) or "<li>-</li>"
    left = max(0, int(r.created + ttl - time.time()))
    effect = f" <span class=effect>{esc(r.effect)}</span>" if r.effect else ""
    attempts = sum(e.attempts for e in group)
    latest = max(e.last_attempt for e in group)
    sessions = ", ".join(
        f"<code>{esc(s)}</code>" for s in dict.fromkeys(e.session_id for e in group)
    )
    more = (
        f"<p class=meta>{len(group)} requests for this same call; your decision applies to "
        f"each: {' '.join(f'<code>{esc(e.id)}</code>' for e in group)}</p>"
        if len(group) > 1
        else ""
    )
    return (
        f'<article class=request id="request-{esc(r.id)}" data-id="{esc(r.id)}">'
        f"<h3><span class=user>{esc(r.user)}</span> wants to run "
        f"<code class=tool>{esc(r.tool)}</code>{effect}</h3>"
        f"<p class=meta>request <code>{esc(r.id)}</code> · asked {esc(_when(r.created))}"
        f" · expires in {left // 60} min · session {sessions}</p>"
        f"<p class=meta>asked <span class=attempts>{attempts}</span>"
        f" time{'s' if attempts != 1 else ''} · latest <span class=latest>{esc(_when(latest))}"
        f"</span></p>{more}"
        f"<h4>Why approval is needed</h4><ul class=reasons>{reasons}</ul>"
        f"<h4>Preview</h4><pre class=preview>{esc_lines(r.preview)}</pre>"
        '<form method=post action="/approvals/decide" class=decide>'
        f'<input type=hidden name=csrf value="{esc(csrf)}">'
        f'<input type=hidden name=id value="{esc(r.id)}">'
        f'<label for="reason-{esc(r.id)}">Reason (required to deny)</label>'
        f'<input type=text name=reason id="reason-{esc(r.id)}" maxlength=500>'
        f"{_reach(r.id, longest)}"
        "<button type=submit name=decision value=approve class=approve>Approve</button>"
        "<button type=submit name=decision value=deny class=deny>Deny</button>"
        "</form></article>"
    )


def _row(r: HistoryEntry, granted: Mapping[str, str] | None = None) -> str:
    """One request of the history: the call, who decided (and any standing approval they
    granted with it, in ``granted`` by request id), when, why, whether it ran."""
    stands = (granted or {}).get(r.id)
    ran = f" at {_when(r.ran_at)}" if r.ran_at else ""
    return (
        f'<tr data-id="{esc(r.id)}" data-state="{esc(r.state)}">'
        f"<td>{esc(_when(r.created))}</td><td><code>{esc(r.id)}</code></td>"
        f"<td>{esc(r.user)}</td><td><code>{esc(r.tool)}</code></td>"
        f"<td><pre class=preview>{esc_lines(r.preview)}</pre></td>"
        f"<td class=status>{esc(STATE_LABELS.get(r.state, r.state) + ran)}</td>"
        f"<td>{esc(_decider(r) + (f' ({stands})' if stands else ''))}</td>"
        f"<td>{esc(_when(r.decided_at))}</td>"
        f"<td>{esc(r.reason)}</td><td class=attempts>{r.attempts}</td></tr>"
    )


def _decider(r: HistoryEntry) -> str:
    """Who decided: the person, and what of theirs approved a call they were not shown."""
    if r.decided_by is None:
        return "-"
    if r.standing is None:
        return r.decided_by
    through = "standing approval" if r.standing_grant else "edited request"
    return f"{r.decided_by} (through {through} {r.standing})"


def _filters(f: Filters) -> str:
    options = "".join(
        f'<option value="{esc(state)}"{" selected" if state == f.state else ""}>'
        f"{esc(label)}</option>"
        for state, label in (("", "any state"), *STATE_LABELS.items())
    )
    return (
        '<form method=get action="/approvals" class=filters id=filters>'
        f'<label for=f-user>User</label><input type=text name=user id=f-user value="{esc(f.user)}"'
        " maxlength=256>"
        f'<label for=f-tool>Tool</label><input type=text name=tool id=f-tool value="{esc(f.tool)}"'
        " maxlength=256>"
        f"<label for=f-state>State</label><select name=state id=f-state>{options}</select>"
        '<button type=submit>Filter</button> <a href="/approvals">clear</a></form>'
    )


def _history(
    rows: list[HistoryEntry],
    f: Filters,
    more: bool,
    days: int,
    granted: Mapping[str, str] | None = None,
) -> str:
    heads = "".join(
        f"<th>{h}</th>"
        for h in (
            "asked",
            "id",
            "user",
            "tool",
            "call",
            "state",
            "decided by",
            "at",
            "reason",
            "attempts",
        )
    )
    table = (
        f"<table class=decided><thead><tr>{heads}</tr></thead><tbody>"
        + "".join(_row(r, granted) for r in rows)
        + "</tbody></table>"
        if rows
        else "<p class=meta id=no-history>No requests match.</p>"
    )
    pages = []
    if f.page > 1:
        pages.append(f'<a rel=prev href="{esc(f.link(f.page - 1))}">newer</a>')
    if more:
        pages.append(f'<a rel=next href="{esc(f.link(f.page + 1))}">older</a>')
    nav = f"<nav class=pages>page {f.page} {' '.join(pages)}</nav>"
    return (
        f"<p class=meta>Every request of the last {days} days, newest first.</p>"
        f"{_filters(f)}{table}{nav}"
    )


def audit_row(record: Mapping[str, Any]) -> dict[str, str]:
    """One audit event as the strings the tail shows."""
    outcome = plain(record.get("outcome") or "?")
    when = record.get("time")
    return {
        "time": iso(when) if isinstance(when, (int, float)) else plain(when or "-"),
        "user": plain(record.get("user") or "-"),
        "tool": plain(record.get("tool") or "-"),
        "outcome": outcome + (f" {plain(record['code'])}" if record.get("code") else ""),
        "why": reason(record),
    }


def _audit(rows: Iterable[Mapping[str, str]], configured: bool) -> str:
    if not configured:
        return "<p class=meta>No audit file is configured (approvals.audit_file).</p>"
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(row[k])}</td>" for k in AUDIT_COLUMNS) + "</tr>" for row in rows
    )
    heads = "".join(f"<th>{esc(k)}</th>" for k in AUDIT_COLUMNS)
    return (
        f"<table class=audit><thead><tr>{heads}</tr></thead>"
        f"<tbody id=audit-rows>{body}</tbody></table>"
    )


AUDIT_COLUMNS = ("time", "user", "tool", "outcome", "why")


def covers(grant: StandingApproval) -> str:
    """What a standing approval approves: its session, arguments and reasons."""
    session = f"session {grant.session_id}" if grant.session_id else "any session"
    match = [f"{name} = {shown_text(name, text)}" for name, text in grant.match.items()]
    arguments = f"with {'; '.join(match)}" if match else "any arguments"
    return f"{session}; {arguments}; needing approval for: {'; '.join(grant.reasons) or '-'}"


def _standing_row(grant: StandingApproval, runs: int, csrf: str, revocable: bool) -> str:
    form = (
        '<form method=post action="/approvals/revoke" class=revoke>'
        f'<input type=hidden name=csrf value="{esc(csrf)}">'
        f'<input type=hidden name=id value="{esc(grant.id)}">'
        "<button type=submit>Revoke</button></form>"
        if revocable
        else ""
    )
    return (
        f'<tr data-standing="{esc(grant.id)}"><td><code>{esc(grant.id)}</code></td>'
        f"<td>{esc(grant.by)}</td><td>{esc(grant.user)}</td>"
        f"<td><code>{esc(grant.tool)}</code></td><td>{esc(covers(grant))}</td>"
        f"<td>{esc(_when(grant.expires))}</td><td class=runs>{runs}</td><td>{form}</td></tr>"
    )


def _revoked_row(record: Mapping[str, Any]) -> str:
    grant = StandingApproval.from_dict(
        {k: v for k, v in record.items() if k not in ("revoked_by", "revoked_at", "runs")}
    )
    return (
        f'<tr data-revoked="{esc(grant.id)}"><td><code>{esc(grant.id)}</code></td>'
        f"<td>{esc(grant.by)}</td><td>{esc(grant.user)}</td>"
        f"<td><code>{esc(grant.tool)}</code></td><td>{esc(covers(grant))}</td>"
        f"<td>revoked by {esc(record['revoked_by'])} at {esc(_when(record['revoked_at']))}"
        f"</td><td class=runs>{esc(record.get('runs', 0))}</td><td></td></tr>"
    )


def _standing(
    grants: list[StandingApproval],
    revoked: Sequence[Mapping[str, Any]],
    runs: Mapping[str | None, int],
    csrf: str,
    revocable: Collection[str],
) -> str:
    if not grants and not revoked:
        return "<p class=meta id=no-standing>No standing approvals.</p>"
    heads = "".join(
        f"<th>{h}</th>"
        for h in ("id", "granted by", "for", "tool", "covers", "until", "calls run", "")
    )
    body = "".join(_standing_row(g, runs.get(g.id, 0), csrf, g.id in revocable) for g in grants)
    body += "".join(_revoked_row(r) for r in revoked)
    return f"<table class=standing><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table>"


def granted_notes(
    grants: Iterable[StandingApproval], revoked: Iterable[Mapping[str, Any]]
) -> dict[str, str]:
    """For the history: what each request's approval granted beyond its call, by its id."""
    notes = {g.request_id: f"granted standing approval {g.id}" for g in grants}
    for r in revoked:
        ended = f"revoked by {r['revoked_by']} at {_when(r['revoked_at'])}"
        notes[str(r["request_id"])] = f"granted standing approval {r['id']}, {ended}"
    return notes


def page(
    *,
    user: str,
    via: str,
    csrf: str,
    pending: list[list[HistoryEntry]],
    history: list[HistoryEntry],
    more: bool,
    filters: Filters,
    history_days: int,
    audit: list[dict[str, str]],
    audit_configured: bool,
    ttl: float,
    problem: str = "",
    flash: str = "",
    standing: list[StandingApproval] | None = None,
    revoked: Sequence[Mapping[str, Any]] | None = None,
    runs: Mapping[str | None, int] | None = None,
    revocable: Collection[str] = (),
    max_standing: int = 480,
) -> str:
    grants, ended = standing or [], revoked or []
    note = f"<p class=problem role=alert id=problem>{esc(problem)}</p>" if problem else ""
    if flash:
        note += f"<p class=flash role=status id=flash>{esc(flash)}</p>"
    pending_html = "".join(_pending(g, csrf, ttl, max_standing) for g in pending) or (
        "<p class=meta id=none-pending>Nothing is waiting for approval.</p>"
    )
    ids = " ".join(e.id for g in pending for e in g)
    logout = (
        '<form method=post action="/approvals/logout" class=logout>'
        f'<input type=hidden name=csrf value="{esc(csrf)}"><button type=submit>Sign out</button>'
        "</form>"
        if via == "key"
        else ""
    )
    return document(
        "toolpass approvals",
        f"<header><h1>toolpass approvals</h1><p>Signed in as <strong id=me>{esc(user)}</strong>"
        f" ({esc('API key' if via == 'key' else 'your sign-in proxy')})</p>{logout}</header>"
        f'<main data-pending="{esc(ids)}">{note}'
        f"<section id=pending><h2>Waiting for a decision ({len(pending)})</h2>"
        f"<p class=meta id=new-requests hidden>New requests are waiting: "
        f'<a href="/approvals">reload</a>.</p>{pending_html}</section>'
        f"<section id=standing><h2>Standing approvals ({len(grants)})</h2>"
        f"{_standing(grants, ended, runs or {}, csrf, revocable)}</section>"
        f"<section id=decided><h2>History</h2>"
        f"{_history(history, filters, more, history_days, granted_notes(grants, ended))}"
        "</section>"
        f"<section id=audit><h2>Audit (latest first)</h2>"
        f"{_audit(audit, audit_configured)}</section></main>",
    )


def message(title: str, text: str) -> str:
    return document(title, f"<main class=narrow><h1>{esc(title)}</h1><p>{esc(text)}</p></main>")
