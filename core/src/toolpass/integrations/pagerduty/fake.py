"""A fake PagerDuty REST API v2 on 127.0.0.1, from the documented request and response shapes
(PagerDuty/api-schema reference/REST/openapiv3.json):

- ``GET /users`` (``query`` matches names and emails, ``limit``/``offset``/``more``);
- ``GET /users/{id}`` (``include[]=teams``): ``{"user": {..., "role", "teams": [...]}}``;
- ``GET /teams``, ``GET /teams/{id}`` (``default_role``), ``GET /teams/{id}/members``
  (``{"members": [{"user", "role"}], "more"}``);
- ``GET /services/{id}``, ``/escalation_policies/{id}``, ``/schedules/{id}`` (``teams``,
  a schedule's ``users``), ``GET /incidents/{id}`` (its ``service``);
- ``PUT /incidents/{id}`` (needs ``From``): the request hook's target.

Credentials: ``Authorization: Token token=KEY`` or ``Bearer TOKEN``; otherwise 401
``{"error": {"message": "Unauthorized", "code": 2006}}``.
"""

from __future__ import annotations

from typing import Any

from fakes.server import FakeServer, Reply, Request

KEY = "pd-read-only-key-1"


def _ref(kind: str, oid: str) -> dict[str, str]:
    return {"id": oid, "type": f"{kind}_reference", "summary": oid}


def _error(status: int, message: str, code: int) -> Reply:
    return Reply(status, {"error": {"message": message, "code": code}})


class FakePagerDuty(FakeServer):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.users: dict[str, dict[str, Any]] = {}  # id -> {name, email, role, teams}
        self.teams: dict[str, dict[str, Any]] = {}  # id -> {default_role, members: {uid: role}}
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}  # (kind, id) -> object
        self.tokens: set[str] = set()
        self.updates: list[tuple[str, str]] = []
        self.add("GET", r"/users", self._list_users)
        self.add("GET", r"/users/(?P<id>[^/]+)", self._user)
        self.add("GET", r"/teams", self._list_teams)
        self.add("GET", r"/teams/(?P<id>[^/]+)", self._team)
        self.add("GET", r"/teams/(?P<id>[^/]+)/members", self._members)
        for kind, plural in (
            ("service", "services"),
            ("escalation_policy", "escalation_policies"),
            ("schedule", "schedules"),
            ("incident", "incidents"),
        ):
            self.add("GET", rf"/{plural}/(?P<id>[^/]+)", self._getter(kind))
        self.add("PUT", r"/incidents/(?P<id>[^/]+)", self._update_incident)

    def _ok(self, request: Request) -> bool:
        auth = request.headers.get("authorization", "")
        return auth == f"Token token={KEY}" or auth.removeprefix("Bearer ") in self.tokens

    def _list_users(self, request: Request) -> Reply:
        if not self._ok(request):
            return _error(401, "Unauthorized", 2006)
        text = (request.arg("query") or "").lower()
        limit, offset = int(request.arg("limit", "25") or 25), int(request.arg("offset", "0") or 0)
        found = [
            self._user_json(uid)
            for uid, u in self.users.items()
            if text in u["email"].lower() or text in u["name"].lower()
        ]
        page = found[offset : offset + limit]
        more = offset + limit < len(found)
        return Reply(200, {"users": page, "limit": limit, "offset": offset, "more": more})

    def _user_json(self, uid: str) -> dict[str, Any]:
        u = self.users[uid]
        return {
            "id": uid,
            "type": "user",
            "name": u["name"],
            "email": u["email"],
            "role": u["role"],
            "teams": [_ref("team", t) for t in u["teams"]],
        }

    def _user(self, request: Request) -> Reply:
        if not self._ok(request):
            return _error(401, "Unauthorized", 2006)
        uid = request.params["id"]
        if uid not in self.users:
            return _error(404, "Not Found", 2100)
        return Reply(200, {"user": self._user_json(uid)})

    def _list_teams(self, request: Request) -> Reply:
        if not self._ok(request):
            return _error(401, "Unauthorized", 2006)
        teams = [{"id": t, "type": "team", "name": t} for t in self.teams]
        return Reply(200, {"teams": teams, "limit": 25, "offset": 0, "more": False})

    def _team(self, request: Request) -> Reply:
        if not self._ok(request):
            return _error(401, "Unauthorized", 2006)
        team = self.teams.get(request.params["id"])
        if team is None:
            return _error(404, "Not Found", 2100)
        body = {"id": request.params["id"], "type": "team", "name": request.params["id"]}
        return Reply(200, {"team": {**body, "default_role": team["default_role"]}})

    def _members(self, request: Request) -> Reply:
        if not self._ok(request):
            return _error(401, "Unauthorized", 2006)
        team = self.teams.get(request.params["id"])
        if team is None:
            return _error(404, "Not Found", 2100)
        limit, offset = int(request.arg("limit", "25") or 25), int(request.arg("offset", "0") or 0)
        members = [{"user": _ref("user", u), "role": r} for u, r in team["members"].items()]
        page = members[offset : offset + limit]
        more = offset + limit < len(members)
        return Reply(200, {"members": page, "limit": limit, "offset": offset, "more": more})

    def _getter(self, kind: str) -> Any:
        def get(request: Request) -> Reply:
            if not self._ok(request):
                return _error(401, "Unauthorized", 2006)
            found = self.objects.get((kind, request.params["id"]))
            if found is None:
                return _error(404, "Not Found", 2100)
            return Reply(200, {kind: found})

        return get

    def _update_incident(self, request: Request) -> Reply:
        if not request.headers.get("from"):
            return _error(400, "Invalid Input Provided", 2001)
        found = self.objects.get(("incident", request.params["id"]))
        if found is None:
            return _error(404, "Not Found", 2100)
        status = request.json()["incident"]["status"]
        found["status"] = status
        self.updates.append((request.params["id"], status))
        return Reply(200, {"incident": found})

    def add_user(self, uid: str, name: str, email: str, role: str, teams: dict[str, str]) -> None:
        self.users[uid] = {"name": name, "email": email, "role": role, "teams": list(teams)}
        for team, team_role in teams.items():
            self.teams.setdefault(team, {"default_role": "manager", "members": {}})
            self.teams[team]["members"][uid] = team_role

    def add_object(self, kind: str, oid: str, teams: list[str], **extra: Any) -> None:
        self.objects[(kind, oid)] = {
            "id": oid,
            "type": kind,
            "teams": [_ref("team", t) for t in teams],
            **extra,
        }


def populate(fake: FakePagerDuty) -> FakePagerDuty:
    fake.add_user("PDANA01", "Dana", "dana@example.com", "limited_user", {"PTEAMA1": "responder"})
    fake.add_user("PERIN01", "Erin", "erin@example.com", "observer", {})
    fake.add_user(
        "PFRAN01", "Frank", "frank@example.com", "restricted_access", {"PTEAMA1": "manager"}
    )
    fake.add_user("PGAIL01", "Gail", "gail@example.com", "admin", {})
    fake.add_user("PHANK01", "Hank", "hank@example.com", "user", {})
    fake.teams["PTEAMB1"] = {"default_role": "none", "members": {}}  # private
    fake.add_object("service", "PSVCA01", ["PTEAMA1"], name="checkout")
    fake.add_object("service", "PSVCB01", ["PTEAMB1"], name="billing")
    fake.add_object("service", "PSVCN01", [], name="legacy")
    fake.add_object("escalation_policy", "PEPA001", ["PTEAMA1"])
    fake.add_object(
        "schedule", "PSCHA01", ["PTEAMA1"], users=[_ref("user", "PDANA01")], name="primary"
    )
    fake.add_object("schedule", "PSCHN01", [], users=[], name="other")
    fake.add_object(
        "incident", "PINCA01", [], service=_ref("service", "PSVCA01"), status="triggered"
    )
    fake.add_object(
        "incident", "PINCB01", [], service=_ref("service", "PSVCB01"), status="triggered"
    )
    return fake
