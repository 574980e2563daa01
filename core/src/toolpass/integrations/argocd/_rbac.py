"""Argo CD's RBAC model, as its API server evaluates it (Argo CD 3.x).

``assets/model.conf``: a request ``(sub, res, act, obj)`` is allowed when some ``p`` line
whose subject is ``sub`` or a role ``sub`` reaches through ``g`` lines (Casbin's role
manager: 10 levels) matches res, act and obj with ``allow``, and none matches with ``deny``
(``some(where (p.eft == allow)) && !some(where (p.eft == deny))``); an effect other than
``allow`` or ``deny`` counts for neither. Matching is ``globOrRegexMatch``: gobwas/glob
without separators (``util/glob``; ``*`` also matches ``/``), or with ``policy.matchMode:
regex`` Go's ``regexp.MatchString`` (unanchored). Lines are read as ``util/rbac``'s adapter
reads them: one CSV record a line (leading spaces trimmed, ``#`` comments), ``p`` with 6
fields and ``g`` with 3, anything else a policy Argo CD refuses to load.
"""

from __future__ import annotations

import csv
import re

from toolpass.wire.errors import LookupFailed

__all__ = ["BUILTIN_POLICY", "Policy", "parse_policy", "parse_scopes"]

#: ``assets/builtin-policy.csv`` of argoproj/argo-cd (VERSION 3.6.0), verbatim.
BUILTIN_POLICY = """\
# Built-in policy which defines two roles: role:readonly and role:admin,
# and additionally assigns the admin user to the role:admin role.
# There are two policy formats:
# 1. Applications, applicationsets, logs, and exec (which belong to a project):
# p, <role/user/group>, <resource>, <action>, <project>/<object>, <allow/deny>
# 2. All other resources:
# p, <role/user/group>, <resource>, <action>, <object>, <allow/deny>

p, role:readonly, applications, get, */*, allow
p, role:readonly, applicationsets, get, */*, allow
p, role:readonly, certificates, get, *, allow
p, role:readonly, clusters, get, *, allow
p, role:readonly, repositories, get, *, allow
p, role:readonly, write-repositories, get, *, allow
p, role:readonly, projects, get, *, allow
p, role:readonly, accounts, get, *, allow
p, role:readonly, gpgkeys, get, *, allow
p, role:readonly, logs, get, */*, allow

p, role:admin, applications, create, */*, allow
p, role:admin, applications, update, */*, allow
p, role:admin, applications, update/*, */*, allow
p, role:admin, applications, delete, */*, allow
p, role:admin, applications, delete/*, */*, allow
p, role:admin, applications, sync, */*, allow
p, role:admin, applications, rollback, */*, allow
p, role:admin, applications, override, */*, allow
p, role:admin, applications, action/*, */*, allow
p, role:admin, applicationsets, get, */*, allow
p, role:admin, applicationsets, create, */*, allow
p, role:admin, applicationsets, update, */*, allow
p, role:admin, applicationsets, delete, */*, allow
p, role:admin, certificates, create, *, allow
p, role:admin, certificates, update, *, allow
p, role:admin, certificates, delete, *, allow
p, role:admin, clusters, create, *, allow
p, role:admin, clusters, update, *, allow
p, role:admin, clusters, delete, *, allow
p, role:admin, repositories, create, *, allow
p, role:admin, repositories, update, *, allow
p, role:admin, repositories, delete, *, allow
p, role:admin, write-repositories, create, *, allow
p, role:admin, write-repositories, update, *, allow
p, role:admin, write-repositories, delete, *, allow
p, role:admin, projects, create, *, allow
p, role:admin, projects, update, *, allow
p, role:admin, projects, delete, *, allow
p, role:admin, accounts, update, *, allow
p, role:admin, gpgkeys, create, *, allow
p, role:admin, gpgkeys, delete, *, allow
p, role:admin, exec, create, */*, allow

g, role:admin, role:readonly
g, admin, role:admin
"""


def _glob(pattern: str) -> re.Pattern[str] | None:
    """gobwas/glob without separators (``*``, ``?``, ``[a-z]``, ``[!a]``, ``{a,b}``, ``\\``)
    as a regex; None for a pattern it does not compile (Argo CD: no match)."""
    out, i, depth = [], 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 == len(pattern):
                return None
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0 or end == i + 1:
                return None
            body = pattern[i + 1 : end]
            neg = body.startswith("!")
            body = body[1:] if neg else body
            if not body:
                return None
            chars = "".join("\\" + ch if ch in "\\]^[" else ch for ch in body)
            out.append(f"[{'^' if neg else ''}{chars}]")
            i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        return None
    try:
        return re.compile("".join(out), re.DOTALL)
    except re.error:
        return None


def parse_policy(text: str, where: str) -> list[list[str]]:
    """Policy lines as Argo CD's adapter loads them (CSV, leading spaces trimmed); a line it
    would refuse is :class:`LookupFailed`."""
    rows = []
    for raw in text.split("\n"):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            tokens = next(csv.reader([line], skipinitialspace=True, strict=True))
        except (csv.Error, StopIteration):
            raise LookupFailed(f"{where} has a policy line Argo CD cannot parse: {line[:80]!r}")
        if not ((tokens[0] == "p" and len(tokens) == 6) or (tokens[0] == "g" and len(tokens) == 3)):
            raise LookupFailed(f"{where} has an invalid RBAC policy line: {line[:80]!r}")
        rows.append(tokens)
    return rows


def parse_scopes(text: str | None) -> list[str]:
    """The ``scopes`` setting (a YAML list, ``[groups, email]``); default ``[groups]``."""
    if text is None:
        return ["groups"]
    value = text.strip()
    if value.startswith("[") and value.endswith("]"):
        items = value[1:-1].split(",")
    elif all(line.strip().startswith("- ") for line in value.splitlines() if line.strip()):
        items = [line.strip()[2:] for line in value.splitlines() if line.strip()]
    else:
        raise LookupFailed(f"argocd-rbac-cm scopes {value[:60]!r} is not a list")
    return [s.strip().strip("'\"") for s in items if s.strip()]


class Policy:
    """Casbin's Argo CD model over a set of policy lines, with glob or regex matching."""

    def __init__(self, rows: list[list[str]], regex: bool) -> None:
        self.p = [r[1:] for r in rows if r[0] == "p"]
        self.links: dict[str, list[str]] = {}
        for r in rows:
            if r[0] == "g":
                self.links.setdefault(r[1], []).append(r[2])
        self.regex = regex
        self._compiled: dict[str, re.Pattern[str] | None] = {}

    def grouped(self) -> set[str]:
        """The subjects some ``g`` line names first (Argo CD's prefilter for groups)."""
        return set(self.links)

    def _match(self, value: str, pattern: str) -> bool:
        if pattern not in self._compiled:
            if self.regex:
                if re.search(r"\(\?[=!<]|\\[1-9]", pattern):
                    raise LookupFailed(f"the regex {pattern[:60]!r} is not one Go accepts")
                try:
                    self._compiled[pattern] = re.compile(pattern)
                except re.error:
                    raise LookupFailed(f"the regex {pattern[:60]!r} does not compile") from None
            else:
                self._compiled[pattern] = _glob(pattern)
        found = self._compiled[pattern]
        if found is None:
            return False
        return bool(found.search(value) if self.regex else found.fullmatch(value))

    def _reach(self, subject: str) -> set[str]:
        seen, level = {subject}, [subject]
        for _ in range(10):
            level = [r for s in level for r in self.links.get(s, ()) if r not in seen]
            seen.update(level)
        return seen

    def enforce(self, subject: str, res: str, act: str, obj: str) -> bool:
        roles = self._reach(subject)
        allow = deny = False
        for sub, p_res, p_act, p_obj, eft in self.p:
            if eft not in ("allow", "deny") or sub not in roles:
                continue
            if self._match(res, p_res) and self._match(act, p_act) and self._match(obj, p_obj):
                allow |= eft == "allow"
                deny |= eft == "deny"
        return allow and not deny
