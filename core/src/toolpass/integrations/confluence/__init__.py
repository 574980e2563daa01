"""Confluence Cloud: the content permission check for another user, asked live.

``POST /wiki/rest/api/content/{id}/permission/check`` with ``{"subject": {"type": "user",
"identifier": <accountId>}, "operation": "read" | "update" | "delete"}`` answers
``hasPermission`` after Confluence has evaluated the site permission ("can use"), the space
permissions and the content restrictions. Asking it for another user needs the *Confluence
Administrator* global permission: the engine's account is an administrator even though it
only reads, so keep its credential away from the agent.

What that check does not cover (creating content in a space, commenting, attaching,
administering a space) is read from the space's permission assignments
(``GET /wiki/api/v2/spaces/{id}/permissions``), granted to the user or to one of their groups
(``GET /wiki/rest/api/user/memberof``). A grant to a principal the engine cannot evaluate (a
role, an access class) leaves the answer unknown rather than denied. Site access ("can use")
is asked with ``POST /wiki/api/v2/user/access/check-access-by-email``. The Confluence
Administrator permission itself has no API answering for another user: ``administer`` is
always unknown.

Rules above the permissions: an account whose ``accountStatus`` (``POST
/wiki/api/v2/users-bulk``) is not ``active`` is denied; an archived page (the content's
``status``, ``GET /wiki/rest/api/content/{id}``) takes no update, comment or attachment.

Resources: ``content:ID`` (or ``page:``, ``blogpost:``, ``comment:``, ``attachment:``, ...),
``space:KEY`` or ``space:ID``, ``site``. Authentication (``auth``) is Atlassian's: ``basic``
(email + API token, against the site), ``scoped`` (email + scoped API token) or ``oauth``
(OAuth 2.0 client credentials), both against ``{gateway_url}/ex/confluence/{cloud_id}``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar
from urllib.parse import quote

from toolpass.integrations import _fields
from toolpass.integrations._atlassian import AtlassianSite, auth_keys
from toolpass.integrations._kit import Cache, UserIds, declared, mapped_user, paged, target, ttl_key
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import Match, Request
from toolpass.wire.identity import same_email

__all__ = ["Confluence"]

V1, V2 = "/wiki/rest/api", "/wiki/api/v2"
ACTIONS: tuple[Action, ...] = load_actions(__name__)
#: The resource kinds ``actions.json`` declares: content kinds (numeric ids), space and site.
KINDS: dict[str, str | None] = declared(__name__, "kinds")
SITE = "site"
CONTENT_KINDS = frozenset(KINDS) - {"space", SITE}
_ID = re.compile(str(KINDS["content"]))
_SPACE_KEY = re.compile(str(KINDS["space"]))
_ACCOUNT_ID = re.compile(r"[A-Za-z0-9:_-]{1,128}")
_GATEWAY = re.compile(r"/ex/confluence/([^/]+)(/.*)?")
_PARENTS = ("pageId", "blogPostId", "attachmentId", "customContentId", "parentCommentId")
_PAGES = 20  # pages of 250 permission assignments, or of 200 groups, read at most


USER_IDS = UserIds(_ACCOUNT_ID, "an Atlassian accountId")


class Confluence(AtlassianSite):
    """Confluence Cloud, through the content permission check and space permissions."""

    name = "confluence"
    description = (
        "Confluence Cloud: content read/update/delete asked live with POST "
        "/wiki/rest/api/content/{id}/permission/check, space permissions from "
        "/wiki/api/v2/spaces/{id}/permissions (the engine's account needs Confluence "
        "Administrator)."
    )
    identity_modes = ("lookup",)
    keys = (
        *auth_keys(
            "confluence",
            " The least privilege that works: a dedicated account holding the Confluence "
            "Administrator global permission (Confluence answers the check for another user "
            "to administrators only) and nothing else; create its API token at "
            "https://id.atlassian.com/manage-profile/security/api-tokens (a scoped token: "
            "read:content.permission:confluence, read:content-details:confluence, "
            "read:space:confluence, read:space.permission:confluence, read:user:confluence, "
            "read:group:confluence).",
        ),
        ConfigKey(
            "not_found",
            "What a 404 for the content or space means: Confluence answers it both for what "
            "does not exist and for what the engine's account cannot see. unknown (the "
            "default) or deny.",
            default="unknown",
            choices=("unknown", "deny"),
        ),
        ConfigKey(
            "own_tokens",
            "Whose credential the agent sends (space and label lists answer what that "
            "account sees): user (each user's own) or unknown (sender_lists is unknown).",
            default="unknown",
            choices=("user", "unknown"),
        ),
        ttl_key(
            "resource",
            "a space key, a content's space and a user's groups",
            300.0,
            kept="stay known",
        ),
    )
    actions = ACTIONS
    request_headers: ClassVar[Mapping[str, str]] = {"X-Atlassian-Token": "no-check"}
    answers: ClassVar[type | None] = dict

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kept = partial(Cache.option, self, "resource_cache_ttl")
        self._spaces: Cache[str, str | None] = kept(keep_none=False)  # key -> id
        self._contents: Cache[str, tuple[str, str] | None] = kept(keep_none=False)
        self._statuses: Cache[str, str] = kept()  # account -> accountStatus
        self._group_ids: Cache[str, frozenset[str]] = kept()  # account -> group ids

    # --- the request hook --------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The operation's route (``confluence/routes.json``), for the site's own paths and
        the API gateway's (``/ex/confluence/<cloudId>/wiki/...``; another site's cloud id
        names no resource)."""
        gateway = _GATEWAY.fullmatch(request.path)
        if gateway is not None:
            moved = Request(
                request.method, gateway.group(2) or "/", request.query_string, None, request.body
            )
            moved.headers = request.headers
            request = moved
        found = self.route_table().match(request)
        if found is None or found.resource is not None or "{body." not in found.route.resource:
            pass
        elif found.route.resource == "space:{body.space.key}":  # v1 create: a nested key
            key = _fields.scalar(_fields.nested(request, "space.key"))
            found = Match(found.route, found.params, f"space:{key}" if key else None)
        elif found.route.action == "comment":  # v2 comments name one parent, of any kind
            parents = [_fields.scalar(_fields.form(request).get(f)) for f in _PARENTS]
            named = [p for p in parents if p is not None]
            found = Match(
                found.route, found.params, f"content:{named[0]}" if len(named) == 1 else None
            )
        foreign = gateway is not None and self._cloud_id not in (None, gateway.group(1))
        if found is not None and foreign:
            return Match(found.route, found.params, None)
        return found

    # --- requests (signing in, the gateway: ``AtlassianSite``) ---------------------------
    def _listing(self, path: str, params: Mapping[str, str], what: str) -> Iterator[Any]:
        """The ``results`` of a paged list, following ``_links.next`` on the same site."""
        return paged(
            self,
            path,
            what=what,
            too_many=f"confluence's answer to {what} has more than {_PAGES} pages",
            style="next_url",
            items="results",
            params=params,
            pages=_PAGES,
            next_at="_links.next",
            origin=self._base(),
            get=partial(self._api, "GET"),
        )

    # --- identity ----------------------------------------------------------------------
    def lookup_lookup(self, email: str) -> Sequence[str]:
        """The site's Atlassian user search (``GET /rest/api/3/user/search``, on sites with
        Jira: Confluence's own user search matches names, never email addresses), accepting
        only an exact ``emailAddress`` match."""
        what = "find the user by email"
        answer = self.answer(
            "GET",
            self._base() + "/rest/api/3/user/search",
            what=what,
            params={"query": email, "maxResults": "1000"},
            headers={"Authorization": self._authorization()},
        )
        if answer.status != 200:
            raise self.failure(answer, what)
        users = self.parse(answer, what, list)
        found = [
            u["accountId"]
            for u in users
            if isinstance(u, dict)
            and isinstance(u.get("accountId"), str)
            and same_email(u.get("emailAddress"), email)
        ]
        if not found:
            raise LookupFailed(
                f"the site's user search found no account with the email {email} (or its "
                "profile visibility hides the address)"
            )
        return list(dict.fromkeys(found))

    # --- resources ---------------------------------------------------------------------
    def _space_id(self, ref: str) -> str | None:
        """The numeric id of space ``ref`` (a key or an id); None when none is found."""
        return ref if _ID.fullmatch(ref) else self._spaces.get(ref, lambda: self._find_space(ref))

    def _find_space(self, ref: str) -> str | None:
        data = self._api("GET", f"{V2}/spaces", what=f"find space {ref}", params={"keys": ref})
        results = data.get("results")
        if not isinstance(results, list):
            raise LookupFailed("confluence's spaces answer has no results list")
        ids = [s.get("id") for s in results if isinstance(s, dict) and s.get("key") == ref]
        if len(ids) > 1 or (ids and not (isinstance(ids[0], str) and _ID.fullmatch(ids[0]))):
            raise LookupFailed(f"confluence's answer for space {ref} has no single valid id")
        return str(ids[0]) if ids else None

    def _content_space(self, content: str) -> str | None:
        """The id of the space holding ``content``; None when Confluence answers 404."""
        found = self._content_info(content)
        return None if found is None else found[0]

    def _content_info(self, content: str) -> tuple[str, str] | None:
        """The id of the space holding ``content`` and the content's ``status`` (current,
        archived, ...); None when Confluence answers 404."""
        return self._contents.get(content, lambda: self._read_content(content))

    def _read_content(self, content: str) -> tuple[str, str] | None:
        what = f"find the space of content {content}"
        path = f"{V1}/content/{quote(content)}"
        data = self._api("GET", path, what=what, params={"expand": "space"}, absent=(404,))
        if data is None:
            return None
        space = data.get("space") if isinstance(data.get("space"), dict) else {}
        found = space.get("id")
        if isinstance(found, int) and not isinstance(found, bool):
            found = str(found)
        if not isinstance(found, str) or not _ID.fullmatch(found):
            raise LookupFailed(f"confluence's answer for content {content} has no space id")
        status = data.get("status")
        if not isinstance(status, str) or not status:
            raise LookupFailed(f"confluence's answer for content {content} has no status")
        return found, status

    def _archived(self, content: str, action: str) -> Decision | None:
        """A denial when ``content`` is archived (Confluence takes no change, comment or
        attachment on it), else None."""
        found = self._content_info(content)
        if found is None:
            return self._missing(f"Confluence has no content {content} the engine can see")
        if found[1] != "archived":
            return None
        return Decision.deny(
            f"content {content} is archived: Confluence takes no {action} on an archived page "
            "(a space administrator can restore it)"
        )

    def _account_status(self, account: str) -> str:
        """The Atlassian account's ``accountStatus`` (active, inactive, closed, unknown), from
        ``POST /wiki/api/v2/users-bulk``."""
        return self._statuses.get(account, lambda: self._read_status(account))

    def _read_status(self, account: str) -> str:
        what = f"read the account status of {account}"
        data = self._api("POST", f"{V2}/users-bulk", what=what, json={"accountIds": [account]})
        results = data.get("results")
        found = [
            u.get("accountStatus")
            for u in (results if isinstance(results, list) else [])
            if isinstance(u, dict) and u.get("accountId") == account
        ]
        if len(found) != 1 or not isinstance(found[0], str) or not found[0]:
            raise LookupFailed(f"confluence's answer to {what} has no accountStatus")
        return str(found[0])

    def _groups(self, account: str) -> set[str]:
        return set(self._group_ids.get(account, lambda: self._read_groups(account)))

    def _read_groups(self, account: str) -> frozenset[str]:
        params = {"accountId": account, "limit": "200"}
        groups = set()
        for group in self._listing(f"{V1}/user/memberof", params, "list the user's groups"):
            if not isinstance(group, dict) or not isinstance(group.get("id"), str):
                raise LookupFailed("confluence's group list holds a group without an id")
            groups.add(group["id"])
        return frozenset(groups)

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        found = self.action(action)
        if found is None:
            return Decision.unknown(f"confluence has no action {action!r}", cause="action")
        terms = found.terms
        on = target(found, resource)
        if isinstance(on, Decision):
            return on
        kind, ref = on.kind, on.id.removeprefix("att")  # attachment:att123 is attachment 123
        if terms["check"] == "admin":
            return Decision.unknown(
                "Confluence has no API that tells whether another user is a Confluence "
                "administrator; only the agent's own credential can do this"
            )
        if terms["check"] == "sender" and self.options.get("own_tokens") != "user":
            return Decision.unknown(
                "Confluence answers this list with what the sending account can see, not what "
                "this user can (set own_tokens: user when the agent sends each user's own "
                "credential)"
            )
        if terms["check"] in ("site", "sender"):
            return self._site_access(user)
        account = mapped_user(self, user, USER_IDS)
        if isinstance(account, Decision):
            return account
        status = self._account_status(account)
        if status != "active":
            return Decision.deny(f"the Atlassian account {account} is {status}")
        if terms["check"] == "content":
            decided = self._content(account, str(terms["operation"]), ref)
            if not decided.allowed or not terms.get("live_only"):
                return decided
            archived = self._archived(ref, action)
            return decided if archived is None else archived
        if kind != "space":
            needed = str(terms.get("parent", "read"))  # on the content it is added to
            first = self._content(account, needed, ref)
            if not first.allowed:
                return first
            archived = self._archived(ref, action) if terms.get("live_only") else None
            if archived is not None:
                return archived
            space = self._content_space(ref)
        else:  # no content check has covered site access ("can use"): ask it
            access = self._site_access(user)
            if not access.allowed:
                return access
            space = self._space_id(ref)
        if space is None:
            return self._missing(f"Confluence has no {kind} {ref} the engine's account can see")
        return self._space(account, str(terms["key"]), str(terms["target"]), space)

    def _missing(self, text: str) -> Decision:
        if self.options.get("not_found") == "deny":
            return Decision.deny(f"{text} (HTTP 404)")
        return Decision.unknown(f"{text} (HTTP 404)")

    def _content(self, account: str, operation: str, content: str) -> Decision:
        body = {"subject": {"type": "user", "identifier": account}, "operation": operation}
        what = f"check {operation} on content {content}"
        path = f"{V1}/content/{content}/permission/check"
        data = self._api("POST", path, what=what, json=body, absent=(404,))
        if data is None:
            return self._missing(f"Confluence has no content {content} the engine can see")
        granted = data.get("hasPermission")
        if not isinstance(granted, bool):
            raise LookupFailed("confluence's permission check answer has no hasPermission")
        if granted:
            return Decision.allow(f"Confluence lets {account} {operation} content {content}")
        errors = data.get("errors") if isinstance(data.get("errors"), list) else []
        said = [
            e.get("message", {}).get("translation") or e.get("message", {}).get("key")
            for e in errors
            if isinstance(e, dict) and isinstance(e.get("message"), dict)
        ]
        why = "; ".join(s for s in said if isinstance(s, str)) or "no permission"
        return Decision.deny(
            f"Confluence does not let {account} {operation} content {content}: {why}"
        )

    def _space(self, account: str, key: str, target: str, space: str) -> Decision:
        groups = self._groups(account)
        what = f"list the permissions of space {space}"
        params = {"limit": "250"}
        opaque = set()
        for grant in self._listing(f"{V2}/spaces/{space}/permissions", params, what):
            principal = grant.get("principal") if isinstance(grant, dict) else None
            operation = grant.get("operation") if isinstance(grant, dict) else None
            if not isinstance(principal, dict) or not isinstance(operation, dict):
                raise LookupFailed("confluence's space permissions hold a malformed grant")
            if (operation.get("key"), operation.get("targetType")) != (key, target):
                continue
            ptype, pid = principal.get("type"), principal.get("id")
            if (ptype == "user" and pid == account) or (ptype == "group" and pid in groups):
                return Decision.allow(
                    f"space {space} grants {key}/{target} to {account}"
                    + (f" through group {pid}" if ptype == "group" else "")
                )
            if ptype not in ("user", "group"):
                opaque.add(str(ptype))
        if opaque:
            return Decision.unknown(
                f"space {space} grants {key}/{target} to {', '.join(sorted(opaque))} "
                f"principals, which the engine cannot evaluate for {account}"
            )
        return Decision.deny(
            f"space {space} grants {key}/{target} neither to {account} nor to any of their groups"
        )

    def _site_access(self, email: str) -> Decision:
        what = "check the user's site access"
        body = {"emails": [email]}
        data = self._api("POST", f"{V2}/user/access/check-access-by-email", what=what, json=body)
        without, invalid = data.get("emailsWithoutAccess", []), data.get("invalidEmails", [])
        if not isinstance(without, list) or not isinstance(invalid, list):
            raise LookupFailed("confluence's site access answer is malformed")
        if any(same_email(e, email) for e in invalid):
            return Decision.unknown(f"Confluence calls {email} an invalid email address")
        if any(same_email(e, email) for e in without):
            return Decision.deny(f"{email} has no access to the Confluence site")
        return Decision.allow(f"{email} has access to the Confluence site")

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        """Who the engine is, and whether the operations Confluence lists for it
        (``expand=operations``) include administer/application: Confluence Administrator."""
        me = self._api(
            "GET",
            f"{V1}/user/current",
            what="tell who the engine is",
            params={"expand": "operations"},
        )
        account = me.get("accountId")
        if not isinstance(account, str):
            return ProbeResult(False, "confluence's /user/current answer has no accountId")
        who = f"signed in to {self._base()} as {me.get('displayName') or account} ({account})"
        operations = me.get("operations")
        if not isinstance(operations, list):
            return ProbeResult(True, f"{who}; Confluence did not list its operations")
        admin = {"operation": "administer", "targetType": "application"}
        if any(isinstance(o, dict) and admin.items() <= o.items() for o in operations):
            return ProbeResult(True, f"{who}, with Confluence Administrator")
        return ProbeResult(
            False, f"{who}, but lacks Confluence Administrator (to check other users)"
        )


INTEGRATION = Confluence
