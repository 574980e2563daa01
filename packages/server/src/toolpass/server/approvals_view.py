"""What the approvals page shows: the history's filters (read from the query, validated) and
the pending requests grouped by the call they ask for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from toolpass.toolkit.approval import same_person
from toolpass.toolkit.approval_history import STATES, HistoryEntry
from toolpass.toolkit.standing import Standing, StandingApproval

#: History rows on one page, and the pages one can go back.
PAGE_SIZE = 50
MAX_PAGE = 1000
_TEXT_LIMIT = 256


class BadQuery(ValueError):
    """A query the page does not read (its message says why, for the person)."""


@dataclass(frozen=True)
class Filters:
    """The history's filters: the user and the tool (exact names), the state, the page."""

    user: str = ""
    tool: str = ""
    state: str = ""
    page: int = 1

    @classmethod
    def parse(cls, query: Mapping[str, Sequence[str]]) -> Filters:
        """The filters in ``query`` (each name at most once); ``BadQuery`` for any value the
        page does not take. Other names (``id=`` from a notifier's link) are ignored."""
        one = {name: _one(query, name) for name in ("user", "tool", "state", "page")}
        for name in ("user", "tool"):
            text = one[name]
            if len(text) > _TEXT_LIMIT or not text.isprintable():
                raise BadQuery(f"A {name} filter is one line of at most {_TEXT_LIMIT} characters.")
        if one["state"] not in ("", *STATES):
            raise BadQuery(f"A state filter is one of: {', '.join(STATES)}.")
        page = one["page"] or "1"
        if not (page.isascii() and page.isdigit() and 1 <= int(page) <= MAX_PAGE):
            raise BadQuery(f"A page is a number from 1 to {MAX_PAGE}.")
        return cls(one["user"].strip(), one["tool"].strip(), one["state"], int(page))

    def link(self, page: int) -> str:
        """The page's address with these filters, at ``page``."""
        moved = replace(self, page=page)
        fields = {k: v for k, v in vars(moved).items() if v and (k != "page" or v != 1)}
        return "/approvals" + (f"?{urlencode(fields)}" if fields else "")


#: How far an approval given on the page reaches, as its form names each choice.
SCOPES = {
    "once": "this call only",
    "session": "for this session",
    "minutes": "for N minutes",
    "arguments": "for calls with these same arguments",
}


def standing_of(scope: str, minutes: str, longest: int) -> Standing | None:
    """The standing approval a decision's form asks for (None: this call only), at most
    ``longest`` minutes; ``BadQuery`` for anything else."""
    if scope == "once":
        return None
    if scope == "session":
        return Standing(session=True)
    if scope == "arguments":
        return Standing(same_arguments=True)
    if scope != "minutes":
        raise BadQuery(f"Choose how far the approval reaches: {', '.join(SCOPES.values())}.")
    if not (minutes.isascii() and minutes.isdigit() and 1 <= int(minutes) <= longest):
        raise BadQuery(f"Approve for a whole number of minutes from 1 to {longest}.")
    return Standing(minutes=int(minutes))


def may_revoke(name: str, grant: StandingApproval, *, self_approval: bool) -> bool:
    """Whether ``name`` may end ``grant``: its grantor, or one who may decide its tool's
    requests (its approvers; when it has none, anyone but its user unless
    ``self_approval``)."""
    if same_person(name, grant.by):
        return True
    if grant.approvers:
        return name in grant.approvers
    return self_approval or not same_person(name, grant.user)


def _one(query: Mapping[str, Sequence[str]], name: str) -> str:
    values = query.get(name) or []
    if len(values) > 1:
        raise BadQuery(f"Give the {name} filter once.")
    return values[0] if values else ""


def same_call(a: HistoryEntry, b: HistoryEntry) -> bool:
    """Whether two requests ask for the same call: the same exact call (user, session, tool,
    every argument, reasons and preview, by its digest), not only the same preview, which a
    tool's own preview may write for calls that differ; so one click never decides a call
    the person did not see, nor another session's."""
    return a.digest is not None and (a.digest, a.session_id, a.user, a.tool, a.preview) == (
        b.digest,
        b.session_id,
        b.user,
        b.tool,
        b.preview,
    )


def grouped(pending: Iterable[HistoryEntry]) -> list[list[HistoryEntry]]:
    """Pending requests for the same call together (newest first in each), the group last
    asked for first."""
    groups: list[list[HistoryEntry]] = []
    for entry in sorted(pending, key=lambda e: (e.created, e.id), reverse=True):
        group = next((g for g in groups if same_call(g[0], entry)), None)
        if group is None:
            groups.append([entry])
        else:
            group.append(entry)
    return sorted(groups, key=lambda g: max(e.last_attempt for e in g), reverse=True)
