"""Jira Cloud: the bulk permission check for another user, asked live.

``POST /rest/api/3/permissions/check`` with the user's Atlassian ``accountId`` answers, for
each project permission, the project and issue ids it holds on (and which global permissions
the user has). Invalid ids are silently ignored there, so an issue key or project key is first
resolved to its id (``GET /rest/api/3/issue/{key}?fields=project``,
``GET /rest/api/3/project/{key}``): a 404 is unknown by default, because Jira answers it both
for what does not exist and for what the engine's account cannot browse.

Checking another user needs the *Administer Jira* global permission; finding a user by email
needs *Browse users and groups* (``USER_PICKER``). The engine's account therefore is a Jira
administrator even though it only reads: keep its credential away from the agent.

Resources: ``project:PAY`` (key or numeric id), ``issue:PAY-123`` (key or numeric id),
``search:PAY`` (every issue a search bounded to project PAY can return: ``BROWSE_PROJECTS``,
and no issue security scheme in the project), and ``site`` for the global permissions
(``ADMINISTER``, ``USER_PICKER``, ...). A deactivated account is denied everything, whatever
its groups and roles still hold.

Authentication of the engine (``auth``):

- ``basic``: email + API token against the site (``url``, ``https://<site>.atlassian.net``);
- ``scoped``: email + a scoped API token against the Atlassian API gateway,
  ``{gateway_url}/ex/jira/{cloud_id}``;
- ``oauth``: a service account's OAuth 2.0 client credentials, exchanged at ``token_url`` for an
  access token (cached, refreshed before it expires), against the same gateway.

The cloud id is discovered from ``{url}/_edge/tenant_info`` when ``cloud_id`` is not given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from toolpass.integrations import _fields
from toolpass.integrations._atlassian import AtlassianSite, auth_keys
from toolpass.integrations._kit import Cache, UserIds, asked, mapped_user, ttl_key
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import Match, Request, Route, fields
from toolpass.wire.identity import same_email

__all__ = ["Jira"]

_API = "/rest/api/3"
_PAGE = 50
_SCAN_LIMIT = 1000  # user search only ever scans up to the 1,000th user
_ACCOUNT_ID = re.compile(r"[A-Za-z0-9:_-]{1,128}")
_PROJECT = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}|[0-9]{1,19}")
_ISSUE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}-[0-9]{1,19}|[0-9]{1,19}")
SITE = "site"

ACTIONS: tuple[Action, ...] = load_actions(__name__)
_GLOBAL = frozenset(a.name for a in ACTIONS if a.terms["scope"] != "project")

_GATEWAY = re.compile(r"/ex/jira/([^/]+)(/.*)?")
_SEARCH = re.compile(r"/rest/api/[23]/search(/jql|/id|/approximate-count)?")
_JQL_TOKEN = re.compile(
    r"""\s*(?:("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(!=|!~|>=|<=|&&|\|\||[()=~<>!,])"""
    r"""|([^\s()"'=!~<>,&|]+))"""
)


def _jql_tokens(jql: str) -> list[tuple[str, str]] | None:
    """(kind, text) tokens: ``s`` a quoted string (unquoted), ``p`` punctuation, ``w`` a word;
    None when the text does not tokenize."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(jql):
        if jql[pos:].strip() == "":
            break
        m = _JQL_TOKEN.match(jql, pos)
        if m is None or m.end() == pos:
            return None
        pos = m.end()
        if m.group(1) is not None:
            out.append(("s", re.sub(r"\\(.)", r"\1", m.group(1)[1:-1])))
        elif m.group(2) is not None:
            out.append(("p", m.group(2)))
        else:
            out.append(("w", m.group(3)))
    return out


def _top_clauses(jql: str) -> list[list[tuple[str, str]]] | None:
    """The top-level ``AND`` clauses of ``jql`` (before ``ORDER BY``); None when it does not
    tokenize, its parentheses do not balance, or it has a top-level ``OR``."""
    tokens = _jql_tokens(jql)
    if tokens is None:
        return None
    clauses: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for i, (kind, text) in enumerate(tokens):
        word = text.lower() if kind == "w" else None
        if kind == "p" and text == "(":
            depth += 1
        elif kind == "p" and text == ")":
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and (word == "or" or (kind == "p" and text == "||")):
            return None
        elif (
            depth == 0
            and word == "order"
            and i + 1 < len(tokens)
            and tokens[i + 1][0] == "w"
            and tokens[i + 1][1].lower() == "by"
        ):
            break
        if depth == 0 and (word == "and" or (kind == "p" and text == "&&")):
            clauses.append([])
            continue
        clauses[-1].append((kind, text))
    return clauses if depth == 0 else None


def jql_unsecured(jql: str) -> bool:
    """Whether ``jql`` matches only issues without an issue security level: a top-level
    ``AND`` clause ``level IS EMPTY`` (or ``IS NULL``, ``= EMPTY``)."""
    unsecured = (
        [("w", "level"), ("w", "is"), ("w", "empty")],
        [("w", "level"), ("w", "is"), ("w", "null")],
        [("w", "level"), ("p", "="), ("w", "empty")],
    )
    clauses = _top_clauses(jql) or []
    return any([(k, t.lower()) for k, t in clause] in unsecured for clause in clauses)


def jql_bound(jql: str) -> tuple[str, str] | None:
    """``("project", KEY)`` or ``("issue", KEY-1)`` when every issue ``jql`` can match must be
    in that one project or be that one issue: a top-level ``AND`` clause ``project = X``,
    ``project in (X)`` or ``issue|key = X`` with no top-level ``OR``. None otherwise."""
    clauses = _top_clauses(jql)
    if clauses is None:
        return None
    for clause in clauses:
        if len(clause) < 3 or clause[0][0] not in ("w", "s"):
            continue
        field = clause[0][1].lower()
        kinds = {"project": "project", "issue": "issue", "key": "issue", "issuekey": "issue"}
        if field not in kinds:
            continue
        op = clause[1][1].lower()
        if op == "=" and len(clause) == 3 and clause[2][0] in ("w", "s"):
            value = clause[2][1]
        elif (
            op == "in"
            and len(clause) == 5
            and [t for _, t in (clause[2], clause[4])]
            == [
                "(",
                ")",
            ]
        ):
            value = clause[3][1] if clause[3][0] in ("w", "s") else ""
        else:
            continue
        pattern = _PROJECT if kinds[field] == "project" else _ISSUE
        if pattern.fullmatch(value):
            return kinds[field], value.upper()
    return None


USER_IDS = UserIds(_ACCOUNT_ID, "an Atlassian accountId")


def _misasked(action: str, resource: str, refused: Decision) -> Decision:
    """Jira's own words for a resource ``action`` does not take (its kinds in
    ``actions.json``)."""
    declared = Jira.action(action)
    if declared is None or refused.cause != "resource":
        return refused
    if resource.startswith("search:"):
        text = f"search:KEY is asked with BROWSE_PROJECTS only, not {action} on {resource!r}"
    elif "site" in declared.terms["kinds"]:
        text = f"{action} is a global permission: ask it on resource 'site'"
    else:
        text = f"jira resources are issue:KEY-123, project:KEY or site, not {resource!r}"
    return Decision.unknown(text, cause="resource")


class Jira(AtlassianSite):
    """Jira Cloud, through the bulk permission check for another account."""

    name = "jira"
    description = (
        "Jira Cloud: project, issue and global permissions of a user, asked live with "
        "POST /rest/api/3/permissions/check (the engine's account needs Administer Jira)."
    )
    default_url = None
    identity_modes = ("lookup",)
    keys = (
        *auth_keys("jira"),
        ConfigKey(
            "not_found",
            "What a 404 for the project or issue means: Jira answers it both for one that "
            "does not exist and for one the engine's account cannot browse. unknown (the "
            "default) or deny.",
            default="unknown",
            choices=("unknown", "deny"),
        ),
        ConfigKey(
            "verify_account",
            "When the user was mapped without Jira's own look-up (users, template, file, "
            "http, callable), fetch the account first: an unknown account is unknown, a "
            "deactivated one is denied. When off, such a user's checks are all unknown "
            "(whether the account is active is never assumed).",
            default=True,
        ),
        ConfigKey(
            "own_tokens",
            "Whose credential the agent sends (project, shared filter and dashboard lists "
            "answer what that account sees): user (each user's own) or unknown "
            "(SENDER_LISTS is unknown).",
            default="unknown",
            choices=("user", "unknown"),
        ),
        ttl_key("resource", "an issue or project key", 300.0, kept="stays resolved to its id"),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ids: Cache[tuple[str, str], tuple[str, str] | None] = Cache.option(
            self, "resource_cache_ttl", 10_000, keep_none=False
        )
        self._accounts: Cache[str, bool | None] = Cache(
            lambda: self.config.identity.cache_ttl, 10_000, keep_none=False
        )

    # --- the request hook --------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The operation's route (``jira/routes.json``), for the site's own paths, the API
        gateway's (``/ex/jira/<cloudId>/rest/...``; another site's cloud id names no
        resource) and ``/rest/api/latest`` (v2). Resources nested in the JSON body are read
        here (``fields.project``, ``issueIdsOrKeys``); a body naming several projects or
        issues needs ``ADMINISTER`` on ``site``. A JQL search bounded to one issue needs
        ``BROWSE_PROJECTS`` on it; bounded to one project, ``BROWSE_PROJECTS`` on
        ``search:KEY`` (every issue it can return: see :meth:`check`), or on ``project:KEY``
        when it also says ``level IS EMPTY``; any other search ``ADMINISTER``."""
        path, foreign = request.path, False
        gateway = _GATEWAY.fullmatch(path)
        if gateway is not None:
            known = self._cloud_id or self.options.get("cloud_id")
            foreign = known is not None and gateway.group(1) != known
            path = gateway.group(2) or "/"
        if path.startswith("/rest/api/latest/"):
            path = "/rest/api/2/" + path[len("/rest/api/latest/") :]
        if path != request.path:
            moved = Request(request.method, path, request.query_string, None, request.body)
            moved.headers = request.headers
            request = moved
        found = self.route_table().match(request)
        if found is None:
            return None
        if foreign:
            return Match(found.route, found.params, None)
        route = found.route
        if route.action == "ADMINISTER" and _SEARCH.fullmatch(path):
            return self._search(request, found)
        if ".body." not in "." + route.resource.replace("{", "."):
            return found
        values: list[str] = []
        for name in fields(route.resource):
            got = _body_refs(request, name) if name.startswith("body.") else None
            if got is None:
                return Match(route, found.params, None)
            values.append(name)
            if len(got) > 1:  # several projects or issues: only an administrator may
                admin = Route(
                    route.method,
                    route.path,
                    "ADMINISTER",
                    SITE,
                    route.effect,
                    route.untrusted,
                    route.sends_out,
                    route.agent,
                )
                return Match(admin, found.params, SITE)
            values[-1] = got[0]
        resource = route.resource
        for name, value in zip(fields(route.resource), values, strict=True):
            resource = resource.replace("{" + name + "}", value, 1)
        return Match(route, found.params, resource)

    def _search(self, request: Request, found: Match) -> Match:
        jql = _fields.form(request).get("jql") if request.method == "POST" else None
        if request.method != "POST":
            values = request.query.get("jql") or []
            jql = values[0] if len(set(values)) == 1 else None
        if not isinstance(jql, str):
            return found
        bound = jql_bound(jql)
        if bound is None:
            return found
        kind, value = bound
        if kind == "project" and not jql_unsecured(jql):
            kind = "search"  # it can return issues under any security level of the project
        route = found.route
        narrowed = Route(
            route.method,
            route.path,
            "BROWSE_PROJECTS",
            f"{kind}:{{jql}}",
            "read",
            route.untrusted,
            route.sends_out,
            route.agent,
        )
        return Match(narrowed, found.params, f"{kind}:{value}")

    # --- requests (signing in, the gateway: ``AtlassianSite``) ---------------------------
    def _get(self, path: str, what: str, **params: str) -> Any:
        return self._api("GET", path, what=what, params=params)

    # --- identity ----------------------------------------------------------------------
    def lookup_lookup(self, email: str) -> Sequence[str]:
        """Atlassian user search, accepting only an exact ``emailAddress`` match."""
        found: dict[str, bool] = {}
        hidden = 0
        start = 0
        while True:
            page = self._get(
                f"{_API}/user/search",
                "find the user by email",
                query=email,
                startAt=str(start),
                maxResults=str(_PAGE),
            )
            if not isinstance(page, list):
                raise LookupFailed("jira's user search answer is not a list of users")
            for user in page:
                if not isinstance(user, dict) or not isinstance(user.get("accountId"), str):
                    raise LookupFailed("jira's user search answer holds a user without accountId")
                address = user.get("emailAddress")
                if not isinstance(address, str) or not address:
                    hidden += 1  # profile visibility hides it: never guess
                    continue
                if not same_email(address, email):
                    continue
                active = user.get("active")
                if not isinstance(active, bool):
                    raise LookupFailed("jira's user search answer has no active flag")
                found[user["accountId"]] = active
            if not page:
                break
            start += len(page)
            if start >= _SCAN_LIMIT:
                raise LookupFailed(
                    f"jira's user search for {email} matched {_SCAN_LIMIT} or more users; "
                    "it scans no further, so an exact match cannot be ruled out"
                )
        if not found and hidden:
            raise LookupFailed(
                f"jira's user search for {email} found {hidden} account(s) whose email "
                "address is hidden by profile visibility; cannot confirm which, if any, it is"
            )
        if not found:
            raise LookupFailed(
                f"jira's user search found no account with the email {email} (it lists "
                "active accounts only, and none without Browse users and groups)"
            )
        for account, active in found.items():
            self._accounts.put(account, active)
        return list(found)

    def _active(self, account: str) -> bool | None:
        """Whether ``account`` is active; None when not known and not to be verified."""
        return self._accounts.get(account, lambda: self._read_active(account))

    def _read_active(self, account: str) -> bool | None:
        if not self.options.get("verify_account", True):
            return None
        params = {"accountId": account}
        what = "fetch the mapped account"
        data = self._api("GET", f"{_API}/user", what=what, params=params, absent=(404,))
        if data is None:
            raise LookupFailed(f"jira has no account {account}")
        active = data.get("active") if isinstance(data, dict) else None
        if not isinstance(active, bool) or data.get("accountId") != account:
            raise LookupFailed("jira's account answer has no accountId or active flag")
        return active

    # --- resources ---------------------------------------------------------------------
    def _resolve(self, kind: str, ref: str) -> tuple[str, str] | None:
        """(id, label) of an issue or project; None when Jira answers 404."""
        return self._ids.get((kind, ref), lambda: self._read_id(kind, ref))

    def _read_id(self, kind: str, ref: str) -> tuple[str, str] | None:
        what = f"resolve {kind} {ref}"
        params = {"fields": "project"} if kind == "issue" else None
        path = f"{_API}/{kind}/{quote(ref)}"
        data = self._api("GET", path, what=what, params=params, absent=(404,))
        if data is None:
            return None
        found = data.get("id") if isinstance(data, dict) else None
        key = data.get("key") if isinstance(data, dict) else None
        if not isinstance(found, (str, int)) or isinstance(found, bool):
            raise LookupFailed(f"jira's {kind} answer has no id")
        found = str(found)
        if not found.isdigit():
            raise LookupFailed(f"jira's {kind} answer has a non-numeric id")
        label = f"{kind} {key}" if isinstance(key, str) and key else f"{kind} {ref}"
        return found, label

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        """See the module; ``search:KEY`` (what a JQL search bounded to project KEY can
        return) is ``BROWSE_PROJECTS`` there while the project has no issue security scheme:
        with one, the search may return issues under levels the user is not in (the engine
        cannot tell whose they are), so it is denied; ``level IS EMPTY`` narrows it."""
        ask = asked(self, action, resource)
        if isinstance(ask, Decision):
            return _misasked(action, resource, ask)
        kind, ref, terms = ask.on.kind, ask.on.id, ask.terms
        if kind == "search":
            decided = self.check(user, action, f"project:{ref}")
            return decided if not decided.allowed else self._unsecured(ref, decided)
        account = mapped_user(self, user, USER_IDS)
        if isinstance(account, Decision):
            return account
        active = self._active(account)
        if active is False:
            return Decision.deny(f"{user}'s Jira account {account} is deactivated")
        if active is None:
            return Decision.unknown(
                f"whether {user}'s Jira account {account} is active was not verified "
                "(verify_account is off)"
            )
        if terms.get("answers_for") == "sender" and self.options.get("own_tokens") != "user":
            return Decision.unknown(
                "Jira answers this list with what the sending account can see, not what this "
                "user can (set own_tokens: user when the agent sends each user's own credential)"
            )
        if terms.get("needs") == "active":  # JIRA_ACCESS, SENDER_LISTS
            return Decision.allow(f"{user}'s Jira account {account} is active")
        if kind == SITE:
            body: dict[str, Any] = {"accountId": account, "globalPermissions": [action]}
            grants = self._bulk_check(body)
            held = grants.get("globalPermissions")
            if not isinstance(held, list):
                raise LookupFailed("jira's permission check answer has no globalPermissions list")
            if action in held:
                return Decision.allow(f"Jira grants {account} the global permission {action}")
            return Decision.deny(f"Jira does not grant {account} the global permission {action}")
        resolved = self._resolve(kind, ref)
        if resolved is None:
            text = f"Jira has no {kind} {ref} that the engine's account can see (HTTP 404)"
            if self.options.get("not_found") == "deny":
                return Decision.deny(text)
            return Decision.unknown(text)
        target, label = resolved
        field = "issues" if kind == "issue" else "projects"
        body = {
            "accountId": account,
            "projectPermissions": [{"permissions": [action], field: [int(target)]}],
        }
        grants = self._bulk_check(body)
        entries = grants.get("projectPermissions")
        if not isinstance(entries, list):
            raise LookupFailed("jira's permission check answer has no projectPermissions list")
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("permission"), str):
                raise LookupFailed("jira's permission check answer holds a malformed grant")
            if entry["permission"] != action:
                continue
            ids = entry.get(field)
            if not isinstance(ids, list):
                raise LookupFailed(f"jira's permission check answer has no {field} list")
            if any(str(i) == target for i in ids if not isinstance(i, bool)):
                return Decision.allow(f"Jira grants {account} {action} on {label}")
        return Decision.deny(f"Jira does not grant {account} {action} on {label}")

    def _unsecured(self, key: str, browse: Decision) -> Decision:
        """``browse`` when project ``key`` uses no issue security scheme
        (``GET /issuesecurityschemes/project?projectId=``), else a deny."""
        resolved = self._resolve("project", key)
        if resolved is None:  # resolved a moment ago: gone since
            return Decision.unknown(f"Jira has no project {key} that the engine's account can see")
        what = f"read the issue security scheme of project {key}"
        params = {"projectId": resolved[0], "maxResults": "1"}
        data = self._api("GET", f"{_API}/issuesecurityschemes/project", what=what, params=params)
        used = data.get("values") if isinstance(data, dict) else None
        if not isinstance(used, list):
            raise LookupFailed("jira's issue security scheme answer has no values list")
        if not used:
            return Decision.allow(f"{browse.reason}; project {key} has no issue security levels")
        return Decision.deny(
            f"project {key} uses an issue security scheme: a search there can return issues "
            "under security levels the user is not in; search with level IS EMPTY, or open "
            "the issues by key"
        )

    def _bulk_check(self, body: dict[str, Any]) -> dict[str, Any]:
        what = "check the user's permissions"
        data = self._api("POST", f"{_API}/permissions/check", what=what, json=body)
        if not isinstance(data, dict):
            raise LookupFailed("jira's permission check answer is not an object")
        return data

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        me = self._get(f"{_API}/myself", "tell who the engine is")
        if not isinstance(me, dict) or not isinstance(me.get("accountId"), str):
            return ProbeResult(False, "jira's /myself answer has no accountId")
        who = f"{me.get('displayName') or me['accountId']} ({me['accountId']})"
        mine = self._get(
            f"{_API}/mypermissions",
            "list the engine's permissions",
            permissions="ADMINISTER,USER_PICKER",
        )
        perms = mine.get("permissions") if isinstance(mine, dict) else None
        if not isinstance(perms, dict):
            return ProbeResult(False, f"signed in as {who}, but /mypermissions is malformed")

        def has(key: str) -> bool:
            entry = perms.get(key)
            return isinstance(entry, dict) and entry.get("havePermission") is True

        where = self._base()
        needed = [("ADMINISTER", "Administer Jira (to check other users)")]
        if self.config.identity.mode == "lookup" or self.options.get("verify_account", True):
            needed.append(("USER_PICKER", "Browse users and groups (to look users up)"))
        missing = [text for key, text in needed if not has(key)]
        if missing:
            return ProbeResult(
                False, f"signed in to {where} as {who}, but lacks {' and '.join(missing)}"
            )
        held = " and ".join(text.split(" (")[0] for _, text in needed)
        return ProbeResult(True, f"signed in to {where} as {who}, with {held}")


def _body_refs(request: Request, name: str) -> list[str] | None:
    """The distinct ids or keys a dotted body field names (through lists, and through
    ``{"key": ...}`` / ``{"id": ...}`` objects); None when one is missing or ambiguous."""
    found: list[Any] = [_fields.form(request)]
    for part in name.split(".")[1:]:
        step: list[Any] = []
        for item in found:
            items = item if isinstance(item, list) else [item]
            for each in items:
                if not isinstance(each, Mapping) or part not in each:
                    return None
                step.append(each[part])
        found = step
    flat = [v for item in found for v in (item if isinstance(item, list) else [item])]
    refs: list[str] = []
    for value in flat:
        if isinstance(value, Mapping):
            key, ident = value.get("key"), value.get("id")
            if (key is None) == (ident is None):
                return None  # neither, or both (which would Jira use?)
            value = key if key is not None else ident
        text = _fields.scalar(value)
        if text is None:
            return None
        refs.append(text.upper())
    distinct = list(dict.fromkeys(refs))
    return distinct or None


INTEGRATION = Jira
