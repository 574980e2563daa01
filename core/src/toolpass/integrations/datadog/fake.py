"""A fake Datadog API on 127.0.0.1, from the documented v1/v2 request and response shapes.

- ``GET /api/v2/users`` (``filter`` substring, ``filter[status]``, ``page[size]``);
- ``GET /api/v2/users/{id}``: the user with ``relationships.roles`` and ``relationships.org``;
- ``GET /api/v2/users/{id}/permissions``: the permissions of the user's roles;
- ``GET /api/v2/users/{id}/memberships``: the user's team memberships;
- ``GET /api/v2/restriction_policy/{type}:{id}``: ``bindings`` (empty when none);
- ``GET`` / ``PUT`` ``/api/v1/monitor/{id}``: a monitor (``restricted_roles``, null or role
  ids);
- ``GET`` / ``PUT`` ``/api/v1/dashboard/{id}``: a dashboard (``author_handle``,
  ``restricted_roles``);
- ``GET /api/v1/synthetics/tests/{public_id}``: a test (``options.restricted_roles``).

Credentials: ``DD-API-KEY`` + ``DD-APPLICATION-KEY`` or a bearer token; otherwise 403
``{"errors": ["Forbidden"]}`` as Datadog answers.
"""

from __future__ import annotations

from typing import Any

from fakes.server import FakeServer, Reply, Request

ORG = "org-0000-1111"


class FakeDatadog(FakeServer):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.users: dict[str, dict[str, Any]] = {}  # id -> {email, status, roles, teams}
        self.roles: dict[str, set[str]] = {}  # role id -> permission names
        self.policies: dict[str, list[dict[str, Any]]] = {}
        self.monitors: dict[str, dict[str, Any]] = {}
        self.dashboards: dict[str, dict[str, Any]] = {}
        self.tests: dict[str, dict[str, Any]] = {}
        self.keys: set[tuple[str, str]] = set()
        self.tokens: set[str] = set()
        self.add("GET", r"/api/v2/users", self._list)
        self.add("GET", r"/api/v2/users/(?P<id>[^/]+)", self._user)
        self.add("GET", r"/api/v2/users/(?P<id>[^/]+)/permissions", self._perms)
        self.add("GET", r"/api/v2/users/(?P<id>[^/]+)/memberships", self._teams)
        self.add("GET", r"/api/v2/restriction_policy/(?P<rid>[^/]+)", self._policy)
        self.add("GET", r"/api/v1/monitor/(?P<id>\d+)", self._monitor)
        self.add("PUT", r"/api/v1/monitor/(?P<id>\d+)", self._update_monitor)
        self.add("GET", r"/api/v1/dashboard/(?P<id>[^/]+)", self._dashboard)
        self.add("PUT", r"/api/v1/dashboard/(?P<id>[^/]+)", self._update_dashboard)
        self.add("GET", r"/api/v1/synthetics/tests/(?P<id>[^/]+)", self._test)

    def add_user(
        self, uid: str, email: str, roles: list[str], teams: list[str] = (), status: str = "Active"
    ) -> None:
        self.users[uid] = {"email": email, "status": status, "roles": roles, "teams": list(teams)}

    def _ok(self, request: Request) -> bool:
        h = request.headers
        if h.get("authorization", "").removeprefix("Bearer ") in self.tokens:
            return True
        return (h.get("dd-api-key", ""), h.get("dd-application-key", "")) in self.keys

    def _denied(self) -> Reply:
        return Reply(403, {"errors": ["Forbidden"]})

    def _json(self, uid: str) -> dict[str, Any]:
        u = self.users[uid]
        return {
            "type": "users",
            "id": uid,
            "attributes": {
                "email": u["email"],
                "handle": u["email"],
                "status": u["status"],
                "disabled": u["status"] == "Disabled",
            },
            "relationships": {
                "roles": {"data": [{"type": "roles", "id": r} for r in u["roles"]]},
                "org": {"data": {"type": "orgs", "id": ORG}},
            },
        }

    def _list(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        text = (request.arg("filter", "") or "").lower()
        status = request.arg("filter[status]")
        size = int(request.arg("page[size]", "10") or 10)
        found = [
            self._json(uid)
            for uid, u in self.users.items()
            if text in u["email"].lower() and (status is None or u["status"] in status.split(","))
        ]
        return Reply(200, {"data": found[:size], "meta": {"page": {"total_count": len(found)}}})

    def _user(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        uid = request.params["id"]
        if uid not in self.users:
            return Reply(404, {"errors": ["User not found"]})
        return Reply(200, {"data": self._json(uid)})

    def _perms(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        uid = request.params["id"]
        if uid not in self.users:
            return Reply(404, {"errors": ["User not found"]})
        names = sorted({p for r in self.users[uid]["roles"] for p in self.roles.get(r, ())})
        data = [
            {
                "type": "permissions",
                "id": f"perm-{n}",
                "attributes": {"name": n, "display_name": n, "restricted": False},
            }
            for n in names
        ]
        return Reply(200, {"data": data})

    def _teams(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        uid = request.params["id"]
        if uid not in self.users:
            return Reply(404, {"errors": ["User not found"]})
        data = [
            {
                "type": "team_memberships",
                "id": f"m-{t}",
                "attributes": {"role": None},
                "relationships": {"team": {"data": {"type": "team", "id": t}}},
            }
            for t in self.users[uid]["teams"]
        ]
        return Reply(200, {"data": data})

    def _policy(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        rid = request.params["rid"]
        return Reply(
            200,
            {
                "data": {
                    "type": "restriction_policy",
                    "id": rid,
                    "attributes": {"bindings": self.policies.get(rid, [])},
                }
            },
        )

    def _monitor(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        m = self.monitors.get(request.params["id"])
        return Reply(200, m) if m else Reply(404, {"errors": ["Monitor not found"]})

    def _update_monitor(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        m = self.monitors.get(request.params["id"])
        if m is None:
            return Reply(404, {"errors": ["Monitor not found"]})
        m.update(request.json())
        return Reply(200, m)

    def _one(self, request: Request, kept: dict[str, Any], what: str) -> Reply:
        if not self._ok(request):
            return self._denied()
        found = kept.get(request.params["id"])
        return Reply(200, found) if found else Reply(404, {"errors": [f"{what} not found"]})

    def _dashboard(self, request: Request) -> Reply:
        return self._one(request, self.dashboards, "Dashboard")

    def _test(self, request: Request) -> Reply:
        return self._one(request, self.tests, "Synthetic test")

    def _update_dashboard(self, request: Request) -> Reply:
        found = self._one(request, self.dashboards, "Dashboard")
        if found.status == 200:
            self.dashboards[request.params["id"]].update(request.json())
        return found


def populate(fake: FakeDatadog) -> FakeDatadog:
    fake.keys.add(("dd-api-key-1", "dd-app-key-1"))
    fake.roles["role-ro"] = {"dashboards_read", "monitors_read"}
    fake.roles["role-std"] = {
        "dashboards_read",
        "dashboards_write",
        "monitors_read",
        "monitors_write",
    }
    fake.add_user("aaaaaaaa-0001", "dana@example.com", ["role-std"])
    fake.add_user("aaaaaaaa-0002", "erin@example.com", ["role-ro"])
    fake.add_user("aaaaaaaa-0003", "frank@example.com", ["role-std"], teams=["team-sre"])
    fake.add_user("aaaaaaaa-0004", "gail@example.com", ["role-std"], status="Disabled")
    fake.policies["dashboard:abc-123"] = [
        {"relation": "editor", "principals": ["team:team-sre"]},
        {"relation": "viewer", "principals": [f"org:{ORG}"]},
    ]
    fake.monitors["42"] = {
        "id": 42,
        "name": "CPU high",
        "message": "page @sre",
        "type": "metric alert",
        "query": "avg:cpu{*} > 90",
        "restricted_roles": None,
    }
    fake.dashboards["abc-123"] = {
        "id": "abc-123",
        "title": "Service health",
        "layout_type": "ordered",
        "widgets": [],
        "author_handle": "frank@example.com",
        "restricted_roles": [],
    }
    fake.tests["syn-abc-def"] = {
        "public_id": "syn-abc-def",
        "name": "Login works",
        "type": "api",
        "options": {"tick_every": 60},
    }
    return fake
