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
from typing import Any
from urllib.parse import quote

from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Integration,
    LookupFailed,
    ProbeResult,
    Remembered,
    load_actions,
)
from toolpass.wire.errors import ConfigError
from toolpass.wire.identity import same_email

__all__ = ["PagerDuty"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
LEVELS = {"none": 0, "observer": 1, "responder": 2, "manager": 3, "admin": 4}
#: base role (the REST API's ``role``) -> level on objects
BASE = {
    "owner": 4,
    "admin": 4,
    "user": 3,
    "limited_user": 2,
    "observer": 1,
    "read_only_user": 1,
    "read_only_limited_user": 0,
    "restricted_access": 0,
}
TEAM = {"observer": 1, "responder": 2, "manager": 3}
_ID = re.compile(r"[A-Z0-9]{2,20}")
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
        ),
        ConfigKey("api_key", "A read-only REST API key (auth token).", secret=True),
        ConfigKey("access_token", "An OAuth access token (auth bearer).", secret=True),
        ConfigKey(
            "team_roles",
            "Whether team roles and private teams count (Advanced Permissions); false: only "
            "the base role.",
            default=True,
        ),
        ConfigKey(
            "role_cache_ttl",
            "Seconds a user's role and teams, a team's members and an object's teams are "
            "kept (0: never).",
            default=120.0,
        ),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._kept: Remembered[str, Any] = Remembered(5000)

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        auth = options.get("auth", "token")
        key = "api_key" if auth == "token" else "access_token"
        if options.get(key) is None:
            raise ConfigError(f"auth {auth} needs {key}", key)
        if options.get("role_cache_ttl", 0) < 0:
            raise ConfigError("must be 0 or more seconds", "role_cache_ttl")

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

    def _ttl(self) -> float:
        return float(self.options.get("role_cache_ttl", 120.0))

    # --- identity ------------------------------------------------------------------------
    def lookup_email(self, email: str) -> list[str]:
        what = "find the user by email"

        def page(token: str | None) -> tuple[list[str], str | None]:
            offset = int(token or 0)
            data = self.get_json(
                "/users", what=what, params={"query": email, "limit": "100", "offset": str(offset)}
            )
            users = data.get("users")
            if not isinstance(users, list):
                raise LookupFailed(f"pagerduty's answer to {what} has no users")
            found = [
                str(u["id"])
                for u in users
                if isinstance(u, dict) and isinstance(u.get("id"), str)
                if same_email(u.get("email"), email)
            ]
            return found, str(offset + len(users)) if data.get("more") and users else None

        return list(self.pages(page, limit=10, too_many=f"too many users match {email}"))

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        terms = self.action(action)
        if terms is None:
            return Decision.unknown(f"pagerduty has no action {action!r}", cause="resource")
        kinds = list(terms.terms.get("kinds") or [])
        kind, _, oid = resource.partition(":")
        if action == "session.read":
            return Decision.allow("PagerDuty checks no role for the agent's own user")
        if (
            kind not in kinds
            or (kind != "account" and not _ID.fullmatch(oid))
            or (kind == "account" and oid)
        ):
            where = " or ".join(k if k == "account" else f"{k}:ID" for k in kinds)
            return Decision.unknown(
                f"{action} is asked on {where}, not {resource!r}", cause="resource"
            )
        uid = self.user_id(user)
        if not _ID.fullmatch(uid):
            return Decision.unknown(
                f"{user} maps to {uid!r}, not a PagerDuty user id", cause="identity"
            )
        role, teams = self._user(uid)
        if role not in BASE:
            raise LookupFailed(f"PagerDuty user {uid} has a role the engine does not know: {role}")
        needed = LEVELS[str(terms.terms.get("needs") or "admin")]
        if kind == "user" and oid == uid and action.startswith("users."):
            return Decision.allow(f"PagerDuty user {uid} may read and change their own profile")
        level, why = self._level(uid, role, teams, kind, oid)
        if level >= needed:
            return Decision.allow(f"PagerDuty user {uid} has {why} on {resource}")
        if action == "schedules.override" and level >= LEVELS["responder"]:
            schedule = self._object("schedule", oid)
            if uid in schedule["users"]:
                return Decision.allow(f"PagerDuty user {uid} responds and is on {resource}")
        name = next(k for k, v in LEVELS.items() if v == needed)
        return Decision.deny(f"PagerDuty user {uid} has {why} on {resource}, not {name}")

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
        hit = self._kept.get(f"user:{uid}")
        if hit is not None:
            return str(hit[0]), frozenset(hit[1])
        found = self._get(f"/users/{quote(uid)}", "user", "read the user", **{"include[]": "teams"})
        teams = found.get("teams") or []
        if not isinstance(teams, list):
            raise LookupFailed("pagerduty's answer to read the user has malformed teams")
        result = (
            str(found.get("role")),
            frozenset(str(t.get("id")) for t in teams if isinstance(t, dict)),
        )
        self._kept.put(f"user:{uid}", result, self._ttl())
        return result

    def _object(self, kind: str, oid: str) -> dict[str, list[str]]:
        """The object's ``teams`` (an incident: its service's) and ``users`` (a schedule's)."""
        key = f"{kind}:{oid}"
        hit = self._kept.get(key)
        if hit is not None:
            return dict(hit)
        what = f"read the {kind.replace('_', ' ')} {oid}"
        found = self._get(f"/{_PATHS[kind]}/{quote(oid)}", kind, what)
        if kind == "incident":
            service = found.get("service")
            sid = service.get("id") if isinstance(service, dict) else None
            if not isinstance(sid, str) or not _ID.fullmatch(sid):
                raise LookupFailed(f"pagerduty's answer to {what} names no service")
            result = self._object("service", sid)
        else:
            refs = {"teams": found.get("teams") or [], "users": found.get("users") or []}
            if not all(isinstance(v, list) for v in refs.values()):
                raise LookupFailed(f"pagerduty's answer to {what} has malformed teams")
            result = {
                k: [str(r.get("id")) for r in v if isinstance(r, dict)] for k, v in refs.items()
            }
        self._kept.put(key, result, self._ttl())
        return result

    def _private(self, team: str) -> bool:
        hit = self._kept.get(f"private:{team}")
        if hit is None:
            found = self._get(f"/teams/{quote(team)}", "team", f"read the team {team}")
            hit = found.get("default_role", "manager") == "none"
            self._kept.put(f"private:{team}", hit, self._ttl())
        return bool(hit)

    def _team_role(self, team: str, uid: str) -> int:
        """The user's team role on ``team`` as a level (0 when not listed)."""
        roles = self._kept.get(f"members:{team}")
        if roles is None:
            what = f"list the members of team {team}"

            def page(token: str | None) -> tuple[list[tuple[str, str]], str | None]:
                offset = int(token or 0)
                data = self.get_json(
                    f"/teams/{quote(team)}/members",
                    what=what,
                    params={"limit": "100", "offset": str(offset)},
                )
                members = data.get("members")
                if not isinstance(members, list):
                    raise LookupFailed(f"pagerduty's answer to {what} has no members")
                found = [
                    (str(m["user"].get("id")), str(m.get("role")))
                    for m in members
                    if isinstance(m, dict) and isinstance(m.get("user"), dict)
                ]
                more = data.get("more") and members
                return found, str(offset + len(members)) if more else None

            roles = dict(self.pages(page, limit=50, too_many=f"team {team} has too many members"))
            self._kept.put(f"members:{team}", roles, self._ttl())
        role = roles.get(uid)
        if role is not None and role not in TEAM:
            raise LookupFailed(f"team {team} gives a role the engine does not know: {role}")
        return TEAM.get(role or "", 0)

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
