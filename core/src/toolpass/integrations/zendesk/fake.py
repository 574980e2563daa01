"""A fake Zendesk Support API on 127.0.0.1, from the documented request and response shapes.

- ``GET /api/v2/users/search?query=email:...`` (a substring match, as Zendesk's search can be);
- ``GET /api/v2/users/me``, ``GET /api/v2/users/{id}``: ``{"user": {...}}`` with ``role``,
  ``custom_role_id``, ``ticket_restriction``, ``organization_id``, ``active``, ``suspended``,
  ``only_private_comments``;
- ``GET /api/v2/users/{id}/group_memberships``, ``GET /api/v2/custom_roles``: offset pages
  (``per_page``, ``next_page`` as a full URL);
- ``GET /api/v2/account/settings``, ``GET /api/v2/groups/{id}``;
- ``GET`` / ``PUT`` ``/api/v2/tickets/{id}`` (an update answers the ticket and its audit);
- ``PUT /api/v2/users/{id}``: the fields of ``user`` set, the user answered.

Paths take an optional ``.json`` suffix, as Zenpy sends them. Credentials: HTTP basic
``{email}/token:{api_token}`` or a bearer token; otherwise 401 ``{"error": "Couldn't
authenticate you"}``. A missing record is 404 ``{"error": "RecordNotFound", "description":
"Not found"}``.
"""

from __future__ import annotations

import base64
from typing import Any

from fakes.server import FakeServer, Reply, Request

J = r"(?:\.json)?"


class FakeZendesk(FakeServer):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.tokens: set[str] = set()  # "email/token:api_token" or a bearer token
        self.me = 0
        self.users: dict[int, dict[str, Any]] = {}
        self.memberships: dict[int, list[int]] = {}  # user id -> group ids
        self.groups: dict[int, dict[str, Any]] = {}
        self.roles: dict[int, dict[str, Any]] = {}  # custom role id -> configuration
        self.tickets: dict[int, dict[str, Any]] = {}
        self.settings: dict[str, Any] = {"tickets": {"agent_ticket_deletion": False}}
        self.per_page_max = 100
        self.add("GET", rf"/api/v2/users/search{J}", self._search)
        self.add("GET", rf"/api/v2/search{J}", self._search_all)
        self.add("GET", rf"/api/v2/users/me{J}", lambda r: self._show(r, self.me))
        self.add("GET", rf"/api/v2/users/(?P<id>\d+){J}", lambda r: self._show(r, None))
        self.add("GET", rf"/api/v2/users/(?P<id>\d+)/group_memberships{J}", self._memberships)
        self.add("GET", rf"/api/v2/custom_roles{J}", self._roles)
        self.add("GET", rf"/api/v2/account/settings{J}", self._settings)
        self.add("GET", rf"/api/v2/groups/(?P<id>\d+){J}", self._group)
        self.add("GET", rf"/api/v2/tickets/(?P<id>\d+){J}", self._ticket)
        self.add("PUT", rf"/api/v2/tickets/(?P<id>\d+){J}", self._update)
        self.add("PUT", rf"/api/v2/users/(?P<id>\d+){J}", self._update_user)

    def add_user(self, uid: int, email: str, role: str = "agent", **fields: Any) -> None:
        base = {
            "id": uid,
            "url": f"{self.url}/api/v2/users/{uid}.json",
            "name": email.partition("@")[0],
            "email": email,
            "role": role,
            "custom_role_id": None,
            "restricted_agent": False,
            "ticket_restriction": None if role != "end-user" else "requested",
            "organization_id": None,
            "active": True,
            "suspended": False,
            "only_private_comments": False,
        }
        self.users[uid] = {**base, **fields}

    def add_ticket(self, tid: int, **fields: Any) -> None:
        base = {
            "id": tid,
            "url": f"{self.url}/api/v2/tickets/{tid}.json",
            "subject": f"Ticket {tid}",
            "description": "The printer is on fire",
            "status": "open",
            "requester_id": None,
            "submitter_id": None,
            "assignee_id": None,
            "group_id": None,
            "organization_id": None,
            "collaborator_ids": [],
            "email_cc_ids": [],
            "follower_ids": [],
            "tags": [],
        }
        self.tickets[tid] = {**base, **fields}

    def _ok(self, request: Request) -> bool:
        given = request.headers.get("authorization", "")
        if given.startswith("Basic "):
            try:
                given = base64.b64decode(given[6:]).decode()
            except ValueError:
                return False
        return given.removeprefix("Bearer ") in self.tokens

    def _guard(self, request: Request) -> Reply | None:
        return None if self._ok(request) else Reply(401, {"error": "Couldn't authenticate you"})

    @staticmethod
    def _missing() -> Reply:
        return Reply(404, {"error": "RecordNotFound", "description": "Not found"})

    def _page(self, request: Request, items: list[Any], key: str) -> Reply:
        size = min(int(request.arg("per_page", "100") or 100), self.per_page_max)
        page = int(request.arg("page", "1") or 1)
        chunk = items[(page - 1) * size : page * size]
        more = page * size < len(items)
        following = f"{self.url}{request.path}?page={page + 1}&per_page={size}" if more else None
        body = {key: chunk, "next_page": following, "previous_page": None, "count": len(items)}
        return Reply(200, body)

    def _search(self, request: Request) -> Reply:
        if (denied := self._guard(request)) is not None:
            return denied
        query = request.arg("query", "") or ""
        text = query.removeprefix("email:").strip('"').lower()
        found = [u for u in self.users.values() if text in u["email"].lower()]
        return Reply(200, {"users": found, "next_page": None, "count": len(found)})

    def _search_all(self, request: Request) -> Reply:
        """``GET /api/v2/search``: every ticket the credential sees (the engine's: all)."""
        if (denied := self._guard(request)) is not None:
            return denied
        found = [{**t, "result_type": "ticket"} for t in self.tickets.values()]
        return Reply(
            200, {"results": found, "facets": None, "next_page": None, "count": len(found)}
        )

    def _show(self, request: Request, uid: int | None) -> Reply:
        if (denied := self._guard(request)) is not None:
            return denied
        user = self.users.get(uid if uid is not None else int(request.params["id"]))
        return Reply(200, {"user": user}) if user else self._missing()

    def _memberships(self, request: Request) -> Reply:
        if (denied := self._guard(request)) is not None:
            return denied
        uid = int(request.params["id"])
        if uid not in self.users:
            return self._missing()
        items = [
            {"id": uid * 1000 + g, "user_id": uid, "group_id": g, "default": i == 0}
            for i, g in enumerate(self.memberships.get(uid, []))
        ]
        return self._page(request, items, "group_memberships")

    def _roles(self, request: Request) -> Reply:
        if (denied := self._guard(request)) is not None:
            return denied
        items = [
            {"id": rid, "name": f"role {rid}", "role_type": 0, "configuration": cfg}
            for rid, cfg in self.roles.items()
        ]
        return self._page(request, items, "custom_roles")

    def _settings(self, request: Request) -> Reply:
        return self._guard(request) or Reply(200, {"settings": self.settings})

    def _group(self, request: Request) -> Reply:
        if (denied := self._guard(request)) is not None:
            return denied
        group = self.groups.get(int(request.params["id"]))
        return Reply(200, {"group": group}) if group else self._missing()

    def _ticket(self, request: Request) -> Reply:
        if (denied := self._guard(request)) is not None:
            return denied
        ticket = self.tickets.get(int(request.params["id"]))
        return Reply(200, {"ticket": ticket}) if ticket else self._missing()

    def _update_user(self, request: Request) -> Reply:
        if (denied := self._guard(request)) is not None:
            return denied
        user = self.users.get(int(request.params["id"]))
        if user is None:
            return self._missing()
        user.update({k: v for k, v in (request.json().get("user") or {}).items() if k != "id"})
        return Reply(200, {"user": user})

    def _update(self, request: Request) -> Reply:
        if (denied := self._guard(request)) is not None:
            return denied
        ticket = self.tickets.get(int(request.params["id"]))
        if ticket is None:
            return self._missing()
        change = dict(request.json().get("ticket") or {})
        comment = change.pop("comment", None)
        ticket.update(change)
        events = [{"id": 1, "type": "Comment", **comment}] if isinstance(comment, dict) else []
        audit = {"id": 900, "ticket_id": ticket["id"], "author_id": self.me, "events": events}
        return Reply(200, {"ticket": ticket, "audit": audit})


def populate(fake: FakeZendesk) -> FakeZendesk:
    fake.tokens.add("engine@example.com/token:zd-api-token-1")
    fake.add_user(1, "engine@example.com", "admin")
    fake.me = 1
    fake.add_user(10, "ada@example.com", "admin")
    fake.add_user(11, "ben@example.com")  # an agent who sees all tickets
    fake.add_user(12, "cam@example.com", ticket_restriction="groups")
    fake.add_user(13, "dee@example.com", ticket_restriction="assigned")
    fake.add_user(14, "eli@example.com", ticket_restriction="organization", organization_id=500)
    fake.add_user(15, "fay@example.com", custom_role_id=7)  # a custom role: view only
    fake.add_user(16, "gus@example.com", only_private_comments=True)
    fake.add_user(17, "hal@example.com", suspended=True)
    fake.add_user(20, "ivy@example.com", "end-user", organization_id=500)
    fake.add_user(21, "jon@example.com", "end-user")
    fake.memberships[12] = [100]
    fake.groups[100] = {"id": 100, "name": "Billing", "is_public": True}
    fake.groups[200] = {"id": 200, "name": "Escalations", "is_public": False}
    fake.roles[7] = {
        "ticket_access": "all",
        "ticket_editing": False,
        "ticket_merge": False,
        "ticket_deletion": False,
        "ticket_comment_access": "none",
        "end_user_profile_access": "readonly",
    }
    fake.add_ticket(
        501, requester_id=20, assignee_id=13, group_id=100, organization_id=500, email_cc_ids=[21]
    )
    fake.add_ticket(502, requester_id=21, group_id=200)
    return fake
