"""Datadog: a user's role permissions and a resource's restriction policy, asked live.

``GET /api/v2/users/{user_id}/permissions`` answers the permissions the user holds through
their roles (``attributes.name``: ``dashboards_write``, ``monitors_read``, ...); an action
needs the permission its row in ``datadog/actions.json`` names. On a resource a restriction
policy can govern (``dashboard:ID``, ``monitor:ID``, ``slo:ID``, ...),
``GET /api/v2/restriction_policy/{type}:{id}`` is read too: when it binds the relation the
action needs (``viewer`` for reads, ``editor`` for writes; an editor may also view), the user
must be one of its principals (``user:UUID``, ``role:UUID`` of one of their roles, ``team:ID``
of one of their teams, ``org:UUID`` of their organization). A policy without that
relation leaves the role permission to decide. A disabled user is denied.

The legacy ``restricted_roles`` are read too, and bind beside the policy: a monitor's
(``GET /api/v1/monitor/{id}``) and a dashboard's (``GET /api/v1/dashboard/{id}``, whose author
is exempt) restrict editing, a synthetic test's (``GET /api/v1/synthetics/tests/{id}``,
``options.restricted_roles``) reading and editing, to users holding one of those roles;
``null``, empty or absent restricts nothing. A dashboard's legacy ``is_read_only`` restricts
editing to its author (the administrators Datadog also admits are not told apart: denied).

Users are Datadog user UUIDs. The look-up ``email`` finds the user by exact email
(``GET /api/v2/users?filter=EMAIL``: the filter is a substring match); an active account is
preferred over disabled or pending ones with the same email, and a disabled one is denied.

Authentication of the engine (``auth``): ``keys`` (an API key and an application key, the
``DD-API-KEY`` and ``DD-APPLICATION-KEY`` headers) or ``bearer`` (an OAuth access token).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from toolpass.integrations._kit import Cache, UserIds, asked, declared, ttl_key
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Integration,
    LookupFailed,
    ProbeResult,
    load_actions,
)

__all__ = ["Datadog"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
_UUID = re.compile(r"[0-9a-fA-F-]{8,64}")
_ID = re.compile(str(declared(__name__, "kinds")["dashboard"]))  # as actions.json declares ids
_ORG = "org"
#: The relations of a restriction policy that grant each relation an action needs, and the
#: resources with legacy ``restricted_roles`` (where they are read, which relations they
#: restrict), as ``actions.json`` declares them.
_RELATIONS = {k: tuple(v) for k, v in declared(__name__, "relations").items()}
_LEGACY: dict[str, tuple[str, tuple[str, ...]]] = {
    kind: (str(t["read_at"]), tuple(t["restricts"]))
    for kind, t in declared(__name__, "legacy_restricted_roles").items()
}
_User = tuple[bool, frozenset[str], frozenset[str], str]  # active, held, principals, handle
_Restricted = tuple[frozenset[str], str] | None  # role principals, the author; None: none
CREDENTIAL = (
    "Least privilege: a service account (Organization Settings > Service Accounts > New "
    "Service Account) with a custom role holding only User Access Read (user_access_read: "
    "users, their roles and permissions), and the read permissions of the areas whose "
    "restriction policies are checked (e.g. dashboards_read, monitors_read, slos_read), and "
    "Teams Read; an application key of that service account scoped to user_access_read, "
    "teams_read and those reads, with any API key of the organization (Organization Settings "
    "> API Keys). Or an OAuth access token with the same scopes (auth bearer)."
)


USER_IDS = UserIds(_UUID, "a Datadog user id")


class Datadog(Integration):
    """Datadog, through user permissions and restriction policies."""

    name = "datadog"
    description = (
        "Datadog: the user's role permissions (GET /api/v2/users/{id}/permissions) and, on a "
        "dashboard, monitor, SLO, notebook, ... the resource's restriction policy "
        "(GET /api/v2/restriction_policy/{type}:{id}), asked live. " + CREDENTIAL
    )
    default_url = "https://api.datadoghq.com"
    identity_modes = ("email",)
    keys = (
        ConfigKey(
            "auth",
            "How the engine signs in: keys (api_key + app_key) or bearer (access_token, "
            "an OAuth access token). The url names the site (api.datadoghq.eu, "
            "api.us3.datadoghq.com, api.us5.datadoghq.com, api.ap1.datadoghq.com, "
            "api.ddog-gov.com).",
            default="keys",
            choices=("keys", "bearer"),
            needs={"keys": ("api_key", "app_key"), "bearer": ("access_token",)},
        ),
        ConfigKey("api_key", "An API key of the organization (auth keys).", secret=True),
        ConfigKey("app_key", "The service account's application key (auth keys).", secret=True),
        ConfigKey("access_token", "An OAuth access token (auth bearer).", secret=True),
        ttl_key("permission", "a user's permissions, roles and teams", 300.0),
        ttl_key("policy", "a resource's restriction policy", 60.0, kept="is kept"),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._users: Cache[str, _User] = Cache.option(self, "permission_cache_ttl")
        self._policies: Cache[str, dict[str, frozenset[str]]] = Cache.option(
            self, "policy_cache_ttl"
        )
        self._restricted: Cache[str, _Restricted] = Cache.option(self, "policy_cache_ttl")

    def auth_headers(self) -> Mapping[str, str]:
        if self.options.get("auth", "keys") == "bearer":
            return {"Authorization": f"Bearer {self.secret('access_token')}"}
        return {
            "DD-API-KEY": self.secret("api_key"),
            "DD-APPLICATION-KEY": self.secret("app_key"),
        }

    def error_detail(self, data: Any) -> str | None:
        """Datadog's ``{"errors": ["..."]}``, else the common keys."""
        errors = data.get("errors") if isinstance(data, dict) else None
        if isinstance(errors, list) and errors and isinstance(errors[0], str):
            return "; ".join(e for e in errors if isinstance(e, str))
        return super().error_detail(data)

    # --- identity ------------------------------------------------------------------------
    def lookup_email(self, email: str) -> list[str]:
        what = "find the user by email"
        data = self.get_json(
            "/api/v2/users",
            what=what,
            params={"filter": email, "page[size]": "100"},
        )
        users = data.get("data")
        if not isinstance(users, list):
            raise LookupFailed(f"datadog's answer to {what} has no data list")
        found = [
            (str(u["id"]), u["attributes"].get("status"))
            for u in users
            if isinstance(u, dict)
            and isinstance(u.get("id"), str)
            and isinstance(u.get("attributes"), dict)
            and str(u["attributes"].get("email", "")).lower() == email.lower()
        ]
        active = [uid for uid, status in found if status == "Active"]
        return active or [uid for uid, _ in found]

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        got = asked(self, action, resource, user, USER_IDS)
        if isinstance(got, Decision):
            return got
        terms, rtype, rid, uid = got.action, got.on.kind, got.on.id, got.uid
        on_resource = rtype != _ORG
        active, held, principals, handle = self._user(uid)
        if not active:
            return Decision.deny(f"Datadog user {uid} is disabled")
        needed = str(terms.terms.get("permission") or "")
        if needed and needed not in held:
            return Decision.deny(f"Datadog user {uid}'s roles do not grant {needed}")
        if not on_resource:
            granted = f"grant {needed}" if needed else "make them an active user"
            return Decision.allow(f"Datadog user {uid}'s roles {granted}")
        relation = str(terms.terms.get("relation") or "viewer")
        legacy = self._legacy(rtype, rid, relation)
        if legacy is not None and not _admitted(legacy, principals, handle):
            return Decision.deny(
                f"{resource}'s restricted_roles name none of Datadog user {uid}'s roles"
            )
        bindings = self._policy(resource)
        if relation not in bindings:  # e.g. a monitor's policy binds editor only
            return Decision.allow(
                f"Datadog user {uid} holds {needed}; {resource}'s restriction policy does not "
                f"restrict {relation}s"
            )
        if any(principals & bindings.get(r, frozenset()) for r in _RELATIONS[relation]):
            return Decision.allow(
                f"Datadog user {uid} holds {needed} and is a {relation} of {resource}"
            )
        return Decision.deny(
            f"{resource}'s restriction policy does not make Datadog user {uid} a {relation}"
        )

    def _user(self, uid: str) -> _User:
        """Whether the user is active, their permission names, principals and handle."""
        return self._users.get(uid, lambda: self._read_user(uid))

    def _read_user(self, uid: str) -> _User:
        path = f"/api/v2/users/{quote(uid, safe='')}"
        data = self.get_json(path, what="read the user")
        user = data.get("data")
        if not isinstance(user, dict) or not isinstance(user.get("attributes"), dict):
            raise LookupFailed("datadog's answer to read the user has no data")
        attributes = user["attributes"]
        active = attributes.get("status", "Active") == "Active" and not attributes.get("disabled")
        principals = {f"user:{uid}"}
        relations = user.get("relationships") or {}
        roles = ((relations.get("roles") or {}).get("data")) or []
        principals |= {f"role:{r['id']}" for r in roles if isinstance(r, dict) and "id" in r}
        org = (relations.get("org") or {}).get("data")
        if isinstance(org, dict) and "id" in org:
            principals.add(f"org:{org['id']}")
        what = "read the user's permissions"
        perms = self.get_json(f"{path}/permissions", what=what).get("data")
        if not isinstance(perms, list):
            raise LookupFailed(f"datadog's answer to {what} has no data list")
        held = frozenset(
            str(p["attributes"]["name"])
            for p in perms
            if isinstance(p, dict)
            and isinstance(p.get("attributes"), dict)
            and "name" in p["attributes"]
        )
        what = "read the user's teams"
        teams = self.get_json(f"/api/v2/users/{quote(uid, safe='')}/memberships", what=what)
        memberships = teams.get("data")
        if not isinstance(memberships, list) or not all(isinstance(m, dict) for m in memberships):
            raise LookupFailed(f"datadog's answer to {what} has no data list")
        for m in memberships:
            team = ((m.get("relationships") or {}).get("team") or {}).get("data")
            if isinstance(team, dict) and "id" in team:
                principals.add(f"team:{team['id']}")
        handle = str(attributes.get("handle") or attributes.get("email") or "").lower()
        return bool(active), held, frozenset(principals), handle

    def _legacy(self, rtype: str, rid: str, relation: str) -> _Restricted:
        """The legacy ``restricted_roles`` of the resource where they restrict ``relation``:
        the roles (as principals) and the author who is exempt, or None."""
        path, restricts = _LEGACY.get(rtype, ("", ()))
        if relation not in restricts:
            return None
        key = f"{rtype}:{rid}"
        return self._restricted.get(key, lambda: self._read_legacy(rtype, rid, key, path))

    def _read_legacy(self, rtype: str, rid: str, key: str, path: str) -> _Restricted:
        what = f"read the restricted_roles of {key}"
        data = self.get_json(path.format(id=quote(rid, safe="")), what=what)
        holder = data.get("options") if rtype == "synthetics-test" else data
        roles = holder.get("restricted_roles") if isinstance(holder, dict) else None
        if roles is not None and not (
            isinstance(roles, list) and all(isinstance(r, str) for r in roles)
        ):
            raise LookupFailed(f"datadog's answer to {what} has malformed restricted_roles")
        author = str(data.get("author_handle") or "").lower() if rtype == "dashboard" else ""
        locked = rtype == "dashboard" and data.get("is_read_only") is True  # the author's only
        restricted = bool(roles) or locked
        return (frozenset(f"role:{r}" for r in roles or ()), author) if restricted else None

    def _policy(self, resource: str) -> dict[str, frozenset[str]]:
        """The restriction policy of ``resource``: relation -> principals ({} for none)."""
        return self._policies.get(resource, lambda: self._read_policy(resource))

    def _read_policy(self, resource: str) -> dict[str, frozenset[str]]:
        what = f"read the restriction policy of {resource}"
        data = self.get_json(f"/api/v2/restriction_policy/{quote(resource, safe=':')}", what=what)
        attributes = (data.get("data") or {}).get("attributes")
        bindings = attributes.get("bindings") if isinstance(attributes, dict) else None
        if not isinstance(bindings, list):
            raise LookupFailed(f"datadog's answer to {what} has no bindings")
        found: dict[str, frozenset[str]] = {}
        for b in bindings:
            if not (isinstance(b, dict) and isinstance(b.get("principals"), list)):
                raise LookupFailed(f"datadog's answer to {what} has a malformed binding")
            rel = str(b.get("relation"))
            found[rel] = found.get(rel, frozenset()) | frozenset(map(str, b["principals"]))
        return found

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        data = self.get_json(
            "/api/v2/users", what="list users (user_access_read)", params={"page[size]": "1"}
        )
        if not isinstance(data.get("data"), list):
            return ProbeResult(False, "datadog's /api/v2/users answer has no data list")
        return ProbeResult(True, f"the engine reads users of {self.config.url}")


def _admitted(
    restricted: tuple[frozenset[str], str], principals: frozenset[str], handle: str
) -> bool:
    """Whether legacy ``restricted_roles`` admit the user: one of the roles, or the author."""
    roles, author = restricted
    return bool(principals & roles) or (bool(author) and handle == author)


INTEGRATION = Datadog
