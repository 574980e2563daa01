"""Who a request's decider is: the same person under any spelling of a name or address, and
the requests only their own user may answer (confirm the plan drafted from their request)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

#: How the task scope's check words a plan to confirm and a call outside it (``toolkit.task``).
PLAN_REASON = "confirm the plan: "
OUTSIDE_REASON = "outside what you asked for: "


def confirms_a_plan_only(reasons: Sequence[str]) -> bool:
    """Whether a request asks its user only about their own task (confirm the plan drafted
    from their request, or a call outside what they asked for): the user may answer it,
    where any other reason needs another person (``self_approval`` aside)."""
    mine = (PLAN_REASON, OUTSIDE_REASON)
    return bool(reasons) and all(str(r).startswith(mine) for r in reasons)


def same_person(name: str, user: str) -> bool:
    """Whether approver ``name`` is ``user``, under any spelling of either: compared after
    NFKC, case folding and dropping accents, spaces and invisible characters; a name written
    ``Name <address>`` matches by either part; an address matches without its ``+tag``,
    ``mailto:`` or the domain's trailing dot, and a bare name matches an address's local
    part. (A false match only means another person must approve.)"""
    ours, theirs = _identities(name), _identities(user)
    return bool(ours[0] & theirs[0] or ours[0] & theirs[1] or ours[1] & theirs[0])


def _identities(text: str) -> tuple[set[str], set[str]]:
    """The forms ``text`` names a person by, and the local parts of its addresses."""
    folded = unicodedata.normalize("NFKD", text).casefold()
    kept = (c for c in folded if unicodedata.category(c)[0] not in "CMZ")
    text = unicodedata.normalize("NFKC", "".join(kept)).strip('"')
    parts = {text}
    if text.endswith(">") and "<" in text:
        shown, _, address = text[:-1].rpartition("<")
        parts = {shown.strip('"'), address}
    names, locals_ = set(), set()
    for part in parts - {""}:
        part = part.removeprefix("mailto:")
        local, at, domain = part.rpartition("@")
        if at and local:
            local = local.split("+")[0]
            names.add(f"{local}@{domain.rstrip('.')}")
            locals_.add(local)
        else:
            names.add(part)
    return names, locals_
