"""A fake Confluence Cloud site (and Atlassian API gateway) on 127.0.0.1.

It speaks the documented shapes of Confluence Cloud's REST API (v1 ``/wiki/rest/api`` and v2
``/wiki/api/v2``) for what the integration and a client library read:

- ``POST /wiki/rest/api/content/{id}/permission/check`` (``{"subject": {"type": "user",
  "identifier": accountId}, "operation": "read"|"update"|"delete"}``): ``hasPermission`` and
  ``errors[]`` of ``{"message": {"key", "translation", "args"}}``; checking another user needs
  Confluence Administrator (else 403); a missing content is 404, an unknown operation 400;
- ``GET /wiki/rest/api/content/{id}?expand=space`` (with the page's ``status``) and
  ``/history``, ``PUT`` of it, and the v2 ``GET``/``DELETE /wiki/api/v2/pages/{id}``;
- ``GET /wiki/api/v2/spaces?keys=``, ``GET /wiki/api/v2/spaces/{id}/permissions`` (cursor
  pages: ``_links.next``), ``GET /wiki/rest/api/user/memberof?accountId=`` (start/limit pages);
- ``POST /wiki/api/v2/users-bulk`` (``accountIds``): users with ``accountStatus``;
- ``POST /wiki/api/v2/user/access/check-access-by-email``,
  ``GET /wiki/rest/api/user/current?expand=operations``;
- the site's Atlassian user search ``GET /rest/api/3/user/search?query=``;
- ``GET /_edge/tenant_info``, ``POST /oauth/token`` and every path under
  ``/ex/confluence/{cloudId}`` (scoped tokens and OAuth access tokens work only there).

State is plain data: :meth:`add_user`, :meth:`add_space`, :meth:`add_page`, :meth:`grant`
(a space permission), :meth:`restrict` (a content restriction), ``admins``.
"""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field
from typing import Any

from fakes.server import FakeServer, Reply, Request

GATEWAY = r"(?P<gw>/ex/confluence/(?P<cloud>[A-Za-z0-9-]+))?"
V1, V2 = GATEWAY + "/wiki/rest/api", GATEWAY + "/wiki/api/v2"
OPERATIONS = ("read", "update", "delete")


def message(key: str, text: str) -> dict[str, Any]:
    return {"message": {"key": key, "translation": text, "args": []}}


@dataclass
class User:
    account_id: str
    email: str
    name: str
    groups: list[str] = field(default_factory=list)
    can_use: bool = True
    status: str = "active"  # accountStatus: active, inactive, closed


@dataclass
class Space:
    id: str
    key: str
    #: (principal type, principal id, operation key, target type)
    grants: list[tuple[str, str, str, str]] = field(default_factory=list)


@dataclass
class Page:
    id: str
    space: str  # key
    title: str
    body: str = "<p>Hello</p>"
    version: int = 1
    #: operation -> accounts allowed (a content restriction), when set
    restricted: dict[str, set[str]] = field(default_factory=dict)
    status: str = "current"  # or archived, trashed, draft


class FakeConfluence(FakeServer):
    """Confluence Cloud on 127.0.0.1; ``url`` is both the site and the gateway."""

    def __init__(self, *, cloud_id: str = "7d1f6a3c-0b5e-4a11-9a52-3d1c0e2f9b77", **kw: Any):
        super().__init__(**kw)
        self.cloud_id = cloud_id
        self.users: dict[str, User] = {}
        self.spaces: dict[str, Space] = {}
        self.pages: dict[str, Page] = {}
        self.admins: set[str] = set()
        self.tokens: dict[str, tuple[str, str, bool]] = {}  # token -> (email, account, scoped)
        self.oauth: dict[str, tuple[str, str]] = {}  # client id -> (secret, account)
        self.access_tokens: dict[str, str] = {}
        self.page_size = 2
        self._ids = itertools.count(65540)
        self._install()

    # --- state -------------------------------------------------------------------------
    def add_user(self, account_id: str, email: str, *groups: str, **kw: Any) -> User:
        user = User(account_id, email, email.split("@")[0].title(), list(groups), **kw)
        self.users[account_id] = user
        return user

    def add_engine(self, *, admin: bool = True) -> User:
        user = self.add_user("engine-1", "engine@example.com")
        self.tokens["classic-token"] = ("engine@example.com", "engine-1", False)
        self.tokens["scoped-token"] = ("engine@example.com", "engine-1", True)
        self.oauth["client-1"] = ("client-secret", "engine-1")
        if admin:
            self.admins.add("engine-1")
        return user

    def add_space(self, key: str) -> Space:
        space = Space(str(next(self._ids)), key)
        self.spaces[key] = space
        return space

    def add_page(self, space: str, title: str = "A page", **kw: Any) -> Page:
        page = Page(str(next(self._ids)), space, title, **kw)
        self.pages[page.id] = page
        return page

    def grant(self, space: str, principal: str, key: str, target: str, kind: str = "") -> None:
        """Grant a space permission to a user (an account id), a group id or a role."""
        kind = kind or ("group" if principal.startswith("g-") else "user")
        self.spaces[space].grants.append((kind, principal, key, target))

    def restrict(self, page: str, operation: str, *accounts: str) -> None:
        self.pages[page].restricted[operation] = set(accounts)

    # --- semantics ---------------------------------------------------------------------
    def space_allows(self, account: str, key: str, target: str, space: Space) -> bool:
        user = self.users.get(account)
        if user is None:
            return False
        return any(
            (k, t) == (key, target)
            and ((kind == "user" and who == account) or (kind == "group" and who in user.groups))
            for kind, who, k, t in space.grants
        )

    def permission(self, account: str, operation: str, page: Page) -> list[dict[str, Any]]:
        """The errors Confluence would list (none: permitted)."""
        user = self.users.get(account)
        if user is None or not user.can_use:
            return [
                message("permission.check.user.cannot.use", "User is not allowed to use Confluence")
            ]
        space = self.spaces[page.space]
        if not self.space_allows(account, "read", "space", space) or (
            operation != "read"
            and not self.space_allows(
                account, "create" if operation == "update" else "delete", "page", space
            )
        ):
            return [
                message(
                    "permission.check.user.no.space", "User does not have permission to the space"
                )
            ]
        allowed = page.restricted.get(operation) or (
            page.restricted.get("read") if operation == "read" else None
        )
        if allowed is not None and account not in allowed:
            return [
                message(
                    "permission.check.user.no.content",
                    "User does not have permission to the content",
                )
            ]
        return []

    # --- authentication ----------------------------------------------------------------
    def _caller(self, request: Request) -> str | Reply:
        header = request.headers.get("authorization", "")
        gateway = bool(request.params.get("gw"))
        if gateway and request.params.get("cloud") != self.cloud_id:
            return Reply(404, {"message": "Site not found"})
        unauthorized = Reply(
            401, {"statusCode": 401, "message": "Unauthorized; scope does not match"}
        )
        if header.startswith("Basic "):
            try:
                email, _, token = base64.b64decode(header[6:]).decode().partition(":")
            except ValueError:
                return unauthorized
            known = self.tokens.get(token)
            if known is None or known[0] != email or known[2] != gateway:
                return unauthorized
            return known[1]
        if header.startswith("Bearer ") and gateway:
            return self.access_tokens.get(header[7:]) or unauthorized
        return unauthorized

    def _page_json(self, page: Page, base: str) -> dict[str, Any]:
        space = self.spaces[page.space]
        return {
            "id": page.id,
            "type": "page",
            "status": page.status,
            "title": page.title,
            "space": {"id": int(space.id), "key": space.key, "name": space.key.title()},
            "version": {"number": page.version},
            "body": {"storage": {"value": page.body, "representation": "storage"}},
            "_links": {"self": f"{base}/wiki/rest/api/content/{page.id}", "base": base + "/wiki"},
        }

    # --- routes --------------------------------------------------------------------------
    def _install(self) -> None:
        def api(method: str, pattern: str) -> Any:
            def wrap(handler: Any) -> Any:
                def authed(request: Request) -> Any:
                    caller = self._caller(request)
                    return caller if isinstance(caller, Reply) else handler(request, caller)

                self.add(method, pattern, authed)
                return handler

            return wrap

        def not_found(what: str) -> Reply:
            return Reply(404, {"statusCode": 404, "message": f"No {what} found", "data": {}})

        @self.route("GET", "/_edge/tenant_info")
        def tenant(request: Request) -> dict[str, Any]:
            return {"cloudId": self.cloud_id}

        @self.route("POST", "/oauth/token")
        def token(request: Request) -> Reply | dict[str, Any]:
            body = request.json()
            known = self.oauth.get(body.get("client_id", ""))
            if body.get("grant_type") != "client_credentials" or known is None:
                return Reply(401, {"error": "access_denied"})
            if known[0] != body.get("client_secret"):
                return Reply(401, {"error": "access_denied"})
            issued = f"oauth-{len(self.access_tokens) + 1}"
            self.access_tokens[issued] = known[1]
            return {"access_token": issued, "expires_in": 3600, "token_type": "Bearer"}

        @api("GET", V1 + "/user/current")
        def current(request: Request, caller: str) -> dict[str, Any]:
            user = self.users[caller]
            data: dict[str, Any] = {"type": "known", "accountId": caller, "displayName": user.name}
            if "operations" in (request.arg("expand") or "").split(","):
                data["operations"] = [{"operation": "use", "targetType": "application"}]
                if caller in self.admins:
                    data["operations"].append(
                        {"operation": "administer", "targetType": "application"}
                    )
            return data

        @api("GET", GATEWAY + "/rest/api/3/user/search")
        def search(request: Request, caller: str) -> list[dict[str, Any]]:
            query = (request.arg("query") or "").lower()
            return [
                {"accountId": u.account_id, "emailAddress": u.email, "active": True}
                for u in self.users.values()
                if u.email.lower().startswith(query) or u.name.lower().startswith(query)
            ]

        @api("POST", V1 + r"/content/(?P<id>\d+)/permission/check")
        def check(request: Request, caller: str) -> Reply | dict[str, Any]:
            body = request.json()
            subject, operation = body.get("subject") or {}, body.get("operation")
            if operation not in OPERATIONS or subject.get("type") != "user":
                return Reply(400, {"statusCode": 400, "message": "Invalid operation"})
            who = subject.get("identifier")
            if who != caller and caller not in self.admins:
                return Reply(
                    403,
                    {
                        "statusCode": 403,
                        "message": "Only Confluence admins can check permissions of others",
                    },
                )
            page = self.pages.get(request.params["id"])
            if page is None:
                return not_found("content")
            errors = self.permission(str(who), operation, page)
            return {"hasPermission": not errors, "errors": errors}

        @api("GET", V1 + r"/content/(?P<id>\d+)")
        def content(request: Request, caller: str) -> Reply | dict[str, Any]:
            page = self.pages.get(request.params["id"])
            if page is None or self.permission(caller, "read", page):
                return not_found("content")
            return self._page_json(page, self.url + (request.params.get("gw") or ""))

        @api("GET", V1 + r"/content/(?P<id>\d+)/history")
        def history(request: Request, caller: str) -> Reply | dict[str, Any]:
            page = self.pages.get(request.params["id"])
            if page is None:
                return not_found("content")
            return {"latest": True, "lastUpdated": {"number": page.version}}

        @api("PUT", V1 + r"/content/(?P<id>\d+)")
        def update(request: Request, caller: str) -> Reply | dict[str, Any]:
            page = self.pages.get(request.params["id"])
            if page is None:
                return not_found("content")
            body = request.json()
            page.title = body.get("title", page.title)
            page.body = body.get("body", {}).get("storage", {}).get("value", page.body)
            page.version += 1
            return self._page_json(page, self.url)

        @api("GET", V2 + r"/pages/(?P<id>\d+)")
        def page_v2(request: Request, caller: str) -> Reply | dict[str, Any]:
            page = self.pages.get(request.params["id"])
            if page is None:
                return not_found("page")
            space = self.spaces[page.space]
            return {"id": page.id, "spaceId": space.id, "title": page.title, "status": page.status}

        @api("DELETE", V2 + r"/pages/(?P<id>\d+)")
        def delete_v2(request: Request, caller: str) -> Reply:
            if self.pages.pop(request.params["id"], None) is None:
                return not_found("page")
            return Reply(204, None)

        @api("GET", V2 + "/spaces")
        def spaces(request: Request, caller: str) -> dict[str, Any]:
            keys = (request.arg("keys") or "").split(",")
            found = [
                {"id": s.id, "key": s.key, "name": s.key}
                for s in self.spaces.values()
                if s.key in keys
            ]
            return {"results": found, "_links": {}}

        @api("GET", V2 + r"/spaces/(?P<id>\d+)/permissions")
        def space_permissions(request: Request, caller: str) -> Reply | dict[str, Any]:
            space = next((s for s in self.spaces.values() if s.id == request.params["id"]), None)
            if space is None:
                return not_found("space")
            start = int(request.arg("cursor") or 0)
            chunk = space.grants[start : start + self.page_size]
            results = [
                {
                    "id": str(start + i),
                    "principal": {"type": kind, "id": who},
                    "operation": {"key": key, "targetType": target},
                }
                for i, (kind, who, key, target) in enumerate(chunk)
            ]
            links: dict[str, str] = {}
            if start + self.page_size < len(space.grants):
                nxt = start + self.page_size
                links["next"] = (
                    f"{request.params.get('gw') or ''}/wiki/api/v2/spaces/{space.id}"
                    f"/permissions?cursor={nxt}"
                )
            return {"results": results, "_links": links}

        @api("GET", V1 + "/user/memberof")
        def memberof(request: Request, caller: str) -> Reply | dict[str, Any]:
            user = self.users.get(request.arg("accountId") or "")
            if user is None:
                return not_found("user")
            groups = [{"type": "group", "name": g, "id": g} for g in user.groups]
            return {"results": groups, "start": 0, "limit": 200, "size": len(groups), "_links": {}}

        @api("POST", V2 + "/users-bulk")
        def users_bulk(request: Request, caller: str) -> dict[str, Any]:
            found = [
                self.users[a] for a in request.json().get("accountIds") or [] if a in self.users
            ]
            results = [
                {
                    "accountId": u.account_id,
                    "accountType": "atlassian",
                    "accountStatus": u.status,
                    "displayName": u.name,
                    "publicName": u.name,
                    "email": u.email,
                }
                for u in found
            ]
            return {"results": results, "_links": {}}

        @api("POST", V2 + "/user/access/check-access-by-email")
        def access(request: Request, caller: str) -> dict[str, Any]:
            emails = request.json().get("emails") or []
            by_email = {u.email.lower(): u for u in self.users.values()}
            invalid = [e for e in emails if "@" not in e]
            without = [
                e
                for e in emails
                if "@" in e and not (by_email.get(e.lower()) and by_email[e.lower()].can_use)
            ]
            return {"emailsWithoutAccess": without, "invalidEmails": invalid}
