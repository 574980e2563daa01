"""PagerDuty: a user's base role, team roles and the object's teams, read live and evaluated
with PagerDuty's documented role model.

PagerDuty answers no "may this user?" question, so the engine reads what decides it (REST API
v2) and evaluates the roles PagerDuty documents (support articles "User Roles" and "Advanced
Permissions"):

- the base role (``GET /users/{id}?include[]=teams``: ``role``): ``owner`` and ``admin``
  (Global Admin) may do everything; ``user`` (Manager) manages; ``limited_user``
  (Responder) responds to incidents; ``observer`` and ``read_only_user`` (Full Stakeholder)
  view; ``read_only_limited_user`` (Limited Stakeholder) and ``restricted_access`` see
  nothing outside their teams;
- the object's teams (a service's, escalation policy's or schedule's ``teams``; an incident
  takes its service's) and, for each, the user's team role (``GET /teams/{id}/members``:
  ``observer``, ``responder``, ``manager``) when the user is a member, else the base role,
  or nothing when the team is private (``GET /teams/{id}``: ``default_role`` ``none``). The
  best of these is the user's access to the object; an object of no team takes the base
  role.

An action needs a level (observer < responder < manager < admin) in ``pagerduty/actions.json``;
a schedule override also passes with responder access for a user on the schedule; a user may
read and change their own profile. What is not evaluated: object roles (PagerDuty publishes no
REST read of them; a user whose access comes only from one is denied), custom roles and
account abilities. With ``team_roles: false`` (accounts without Advanced Permissions) only
the base role counts.

Users are PagerDuty user ids. The look-up ``email`` pages through ``GET /users?query=``
(it matches names and emails) and keeps the user whose email is exactly the one asked.

Authentication of the engine (``auth``): ``token`` (a REST API key, ``Authorization: Token
token=...``) or ``bearer`` (an OAuth access token).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import Any
from urllib.parse import quote

from toolpass.integrations._kit import (
    Cache,
    UserIds,
    declared,
    known_action,
    mapped_user,
    paged,
    target,
    ttl_key,
)
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Integration,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.wire.identity import same_email

__all__ = ["PagerDuty"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
#: The levels, lowest first, and the level each base role (the REST API's ``role``) and
#: each team role gives on objects, as ``actions.json`` declares them.
LEVELS: dict[str, int] = {name: i for i, name in enumerate(declared(__name__, "levels"))}
BASE: dict[str, int] = {r: LEVELS[lv] for r, lv in declared(__name__, "base_roles").items()}
TEAM: dict[str, int] = {r: LEVELS[lv] for r, lv in declared(__name__, "team_roles").items()}
_ID = re.compile(r"[A-Z0-9]{2,20}")
USER_IDS = UserIds(_ID, "a PagerDuty user id")
_PATHS = {
    "incident": "incidents",
    "service": "services",
    "escalation_policy": "escalation_policies",
    "schedule": "schedules",
    "team": "teams",
    "user": "users",
}
CREDENTIAL = (
    "Least privilege: a read-only REST API key (Integrations > API Access Keys > Create New "
    "API Key, Read-only; an account owner or Global Admin creates it), or an OAuth app token "
    "(auth bearer) with the scopes users.read, teams.read, services.read, "
    "escalation_policies.read, schedules.read and incidents.read. The engine only reads."
)


class PagerDuty(Integration):
    """PagerDuty, through base roles, team roles and the object's teams."""

    name = "pagerduty"
    description = (
        "PagerDuty: the user's base role (GET /users/{id}), their team roles (GET "
        "/teams/{id}/members) and the object's teams and team privacy (services, escalation "
        "policies, schedules; an incident's service), read live and evaluated with "
        "PagerDuty's documented roles (observer < responder < manager < admin; object roles "
        "are not evaluated). Resources: incident:ID, service:ID, escalation_policy:ID, "
        "schedule:ID, team:ID, user:ID, account. " + CREDENTIAL
    )
    default_url = "https://api.pagerduty.com"
    identity_modes = ("email",)
    actions = ACTIONS
    keys = (
        ConfigKey(
            "auth",
            "How the engine signs in: token (a REST API key) or bearer (an OAuth access "
            "token). The url names the service region (https://api.eu.pagerduty.com).",
            default="token",
            choices=("token", "bearer"),
            needs={"token": ("api_key",), "bearer": ("access_token",)},
        ),
        ConfigKey("api_key", "A read-only REST API key (auth token).", secret=True),
        ConfigKey("access_token", "An OAuth access token (auth bearer).", secret=True),
        ConfigKey(
            "team_roles",
            "Whether team roles and private teams count (Advanced Permissions); false: only "
            "the base role.",
            default=True,
        ),
        ttl_key("role", "a user's role and teams, a team's members and an object's teams", 120.0),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kept = partial(Cache.option, self, "role_cache_ttl")
        self._users: Cache[str, tuple[str, frozenset[str]]] = kept()
        self._objects: Cache[tuple[str, str], dict[str, list[str]]] = kept()
        self._private_teams: Cache[str, bool] = kept()
        self._members: Cache[str, dict[str, str]] = kept()

    def auth_headers(self) -> Mapping[str, str]:
        if self.options.get("auth", "token") == "bearer":
            credential = f"Bearer {self.secret('access_token')}"
        else:
            credential = f"Token token={self.secret('api_key')}"
        return {"Authorization": credential, "Accept": "application/vnd.pagerduty+json;version=2"}

    def error_detail(self, data: Any) -> str | None:
        """PagerDuty's ``{"error": {"message", "code", "errors": [...]}}``."""
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            parts = [error.get("message"), *(error.get("errors") or [])]
            text = "; ".join(p for p in parts if isinstance(p, str) and p)
            return text or None
        return super().error_detail(data)

    def _get(self, path: str, key: str, what: str, **params: str) -> dict[str, Any]:
        """``GET path`` answering ``{key: {...}}``: that object."""
        data = self.get_json(path, what=what, params=params or None)
        found = data.get(key)
        if not isinstance(found, dict):
            raise LookupFailed(f"pagerduty's answer to {what} has no {key}")
        return found

    # --- identity ------------------------------------------------------------------------
    def lookup_email(self, email: str) -> list[str]:
        users = paged(
            self,
            "/users",
            what="find the user by email",
            items="users",
            style="offset",
            params={"query": email},
            pages=10,
            too_many=f"too many users match {email}",
        )
        return [
            str(u["id"])
            for u in users
            if isinstance(u, dict) and isinstance(u.get("id"), str)
            if same_email(u.get("email"), email)
        ]

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        declared = known_action(self, action)
        if isinstance(declared, Decision):
            return declared
        terms = declared.terms
        needed = LEVELS[str(terms.get("needs") or "admin")]
        if not needed:
            return Decision.allow("PagerDuty checks no role for the agent's own user")
        on = target(declared, resource)
        if isinstance(on, Decision):
            return on
        uid = mapped_user(self, user, USER_IDS)
        if isinstance(uid, Decision):
            return uid
        role, teams = self._user(uid)
        if role not in BASE:
            raise LookupFailed(f"PagerDuty user {uid} has a role the engine does not know: {role}")
        if terms.get("own_profile") and on.kind == "user" and on.id == uid:
            return Decision.allow(f"PagerDuty user {uid} may read and change their own profile")
        level, why = self._level(uid, role, teams, on.kind, on.id)
        if level >= needed:
            return Decision.allow(f"PagerDuty user {uid} has {why} on {resource}")
        on_schedule = terms.get("on_schedule")  # a lower level suffices for a user on it
        if on_schedule and level >= LEVELS[on_schedule] and self._on_schedule(uid, on.id):
            return Decision.allow(f"PagerDuty user {uid} responds and is on {resource}")
        name = next(k for k, v in LEVELS.items() if v == needed)
        return Decision.deny(f"PagerDuty user {uid} has {why} on {resource}, not {name}")

    def _on_schedule(self, uid: str, schedule: str) -> bool:
        return uid in self._object("schedule", schedule)["users"]

    def _level(
        self, uid: str, role: str, teams: frozenset[str], kind: str, oid: str
    ) -> tuple[int, str]:
        """The user's level on the object, and why."""
        base = BASE[role]
        said = f"the base role {role}"
        if base >= LEVELS["admin"] or kind in ("account", "user"):
            return base, said
        if not self.options.get("team_roles", True):
            return base, said
        owners = [oid] if kind == "team" else self._object(kind, oid)["teams"]
        if not owners:
            return base, said + " (the object belongs to no team)"
        best, why = -1, ""
        for team in owners:
            if team in teams:
                got = max(self._team_role(team, uid), base)
                text = f"a team role on {team}"
            elif self._private(team):
                got, text = 0, f"no access to the private team {team}"
            else:
                got, text = base, said
            if got > best:
                best, why = got, text
        return best, why

    # --- live data -----------------------------------------------------------------------
    def _user(self, uid: str) -> tuple[str, frozenset[str]]:
        """The user's base role and teams."""
        return self._users.get(uid, lambda: self._read_user(uid))

    def _read_user(self, uid: str) -> tuple[str, frozenset[str]]:
        found = self._get(f"/users/{quote(uid)}", "user", "read the user", **{"include[]": "teams"})
        teams = found.get("teams") or []
        if not isinstance(teams, list):
            raise LookupFailed("pagerduty's answer to read the user has malformed teams")
        ids = frozenset(str(t.get("id")) for t in teams if isinstance(t, dict))
        return str(found.get("role")), ids

    def _object(self, kind: str, oid: str) -> dict[str, list[str]]:
        """The object's ``teams`` (an incident: its service's) and ``users`` (a schedule's)."""
        return self._objects.get((kind, oid), lambda: self._read_object(kind, oid))

    def _read_object(self, kind: str, oid: str) -> dict[str, list[str]]:
        what = f"read the {kind.replace('_', ' ')} {oid}"
        found = self._get(f"/{_PATHS[kind]}/{quote(oid)}", kind, what)
        if kind == "incident":
            service = found.get("service")
            sid = service.get("id") if isinstance(service, dict) else None
            if not isinstance(sid, str) or not _ID.fullmatch(sid):
                raise LookupFailed(f"pagerduty's answer to {what} names no service")
            return self._object("service", sid)
        refs = {"teams": found.get("teams") or [], "users": found.get("users") or []}
        if not all(isinstance(v, list) for v in refs.values()):
            raise LookupFailed(f"pagerduty's answer to {what} has malformed teams")
        return {k: [str(r.get("id")) for r in v if isinstance(r, dict)] for k, v in refs.items()}

    def _private(self, team: str) -> bool:
        def read() -> bool:
            found = self._get(f"/teams/{quote(team)}", "team", f"read the team {team}")
            return bool(found.get("default_role", "manager") == "none")

        return self._private_teams.get(team, read)

    def _team_role(self, team: str, uid: str) -> int:
        """The user's team role on ``team`` as a level (0 when not listed)."""
        role = self._members.get(team, lambda: self._read_members(team)).get(uid)
        if role is not None and role not in TEAM:
            raise LookupFailed(f"team {team} gives a role the engine does not know: {role}")
        return TEAM.get(role or "", 0)

    def _read_members(self, team: str) -> dict[str, str]:
        members = paged(
            self,
            f"/teams/{quote(team)}/members",
            what=f"list the members of team {team}",
            items="members",
            style="offset",
            pages=50,
            too_many=f"team {team} has too many members",
        )
        return {
            str(m["user"].get("id")): str(m.get("role"))
            for m in members
            if isinstance(m, dict) and isinstance(m.get("user"), dict)
        }

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        data = self.get_json("/users", what="list users (users.read)", params={"limit": "1"})
        if not isinstance(data.get("users"), list):
            return ProbeResult(False, "pagerduty's /users answer has no users list")
        teams = self.get_json("/teams", what="list teams (teams.read)", params={"limit": "1"})
        if not isinstance(teams.get("teams"), list):
            return ProbeResult(False, "pagerduty's /teams answer has no teams list")
        return ProbeResult(True, f"the engine reads users and teams of {self.config.url}")


INTEGRATION = PagerDuty
