"""The shape of a github resource: ``repo:owner/name``, ``issue:owner/name#1``, ``org:name``...

``run:owner/name#1`` is a workflow run (its pending deployments), ``advisory:owner/name@GHSA-...``
a repository security advisory.

Shared by the integration's check and its GraphQL placement, below both.
"""

from __future__ import annotations

import re

RESOURCE = re.compile(
    r"(?P<kind>repo|issue|pr|ref|run|advisory):(?P<owner>[A-Za-z0-9][A-Za-z0-9-]{0,38})/"
    r"(?P<repo>[A-Za-z0-9._-]{1,100})(?:#(?P<number>[1-9][0-9]{0,18})|@(?P<ref>[^\s?#@]{1,255}))?"
)
ACCOUNT = re.compile(
    r"(?P<kind>org|user|team|enterprise|site):"
    r"(?:#(?P<id>[1-9][0-9]{0,19})|(?P<me>@me)|(?P<name>[A-Za-z0-9][A-Za-z0-9_-]{0,99}))"
)
SITE = ("public", "admin")
_GHSA = re.compile(r"GHSA(?:-[a-z0-9]{4}){3}")


def account_fits(match: re.Match[str]) -> bool:
    """org: takes a name or #id, user: also @me, team: only #id, site: public or admin."""
    kind = match["kind"]
    if kind == "site":
        return match["name"] in SITE
    if kind == "team":
        return match["id"] is not None
    if kind in ("org", "enterprise") and match["me"]:
        return False
    return not (kind == "enterprise" and match["id"])


def parse_resource(resource: str) -> re.Match[str] | None:
    """The parts of a github resource, or None when ``check`` would refuse it."""
    match = RESOURCE.fullmatch(resource)
    if match is not None and match["repo"] not in (".", "..") and shape_fits(match):
        return match
    account = ACCOUNT.fullmatch(resource)
    return account if account is not None and account_fits(account) else None


def shape_fits(match: re.Match[str]) -> bool:
    """issue:, pr: and run: need ``#number``, ref: needs ``@branch``, advisory: ``@GHSA-...``,
    repo: neither."""
    kind, ref = match["kind"], match["ref"]
    if kind == "advisory" and not (ref and _GHSA.fullmatch(ref)):
        return False
    return (match["number"] is not None) == (kind in ("issue", "pr", "run")) and (
        ref is not None
    ) == (kind in ("ref", "advisory"))
