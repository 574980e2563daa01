"""Databricks: Unity Catalog effective permissions and workspace object ACLs, asked live.

- Unity Catalog (``catalog:C``, ``schema:C.S``, ``table:C.S.T``, ``volume:C.S.V``,
  ``function:C.S.F``): ``GET /api/2.1/unity-catalog/effective-permissions/{type}/{full_name}``
  lists, per principal (a user's email or a group's name), the privileges granted on the
  securable or inherited from its parents. The action's privilege must be held on the object
  itself, and ``USE_CATALOG`` / ``USE_SCHEMA`` on its parents (Databricks requires both to
  reach anything inside), by the user, one of the user's groups or ``account users``;
  ``ALL_PRIVILEGES`` holds every privilege but ``MANAGE``. Where the grants do not suffice,
  the object's owner (user or group) is read: an owner holds every privilege on it. Each
  list is read page by page (``max_results=0``: a page may be empty and still go on) and kept
  ``permission_cache_ttl`` seconds, so one read answers every user.
- Workspace objects (``jobs:ID``, ``clusters:ID``, ``warehouses:ID``, ``notebooks:ID``,
  ``pipelines:ID``, ``serving-endpoints:ID``): ``GET /api/2.0/permissions/{type}/{id}``
  answers the object's access control list with inherited entries; a user's own entry, or one
  of their groups' (``users`` holds every workspace user), must reach one of the action's
  levels.
- ``workspace``: ``workspace.access``, an active workspace user.

Users are workspace ``userName``s (normally the email), found exactly through SCIM
(``GET /api/2.0/preview/scim/v2/Users?filter=userName eq "..."``, mode ``email``); their
groups and ``active`` flag come from the same SCIM user (direct memberships: nested groups
are not expanded). An inactive user is denied.

Reading other principals' ACLs takes a workspace admin (or CAN_MANAGE on each object), and UC
effective permissions a metastore admin or the objects' owners: the engine's service principal
is privileged though it only reads. Authentication (``auth``): ``token`` (a personal access
token or any OAuth access token) or ``oauth`` (a service principal's OAuth M2M client
credentials at ``<url>/oidc/v1/token``, scope ``all-apis``, refreshed before it expires).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any
from urllib.parse import quote

from toolpass.integrations._kit import (
    Absent,
    Cache,
    IssuedToken,
    UserIds,
    asked,
    declared,
    paged,
    token_from,
    ttl_key,
)
from toolpass.integrations._sql import DATABRICKS, statements
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Integration,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import Match, Request, Route
from toolpass.wire.identity import same_email

__all__ = ["Databricks", "plain_select"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
WORKSPACE = "workspace"
SCIM = "/api/2.0/preview/scim/v2"
#: The resource kinds ``actions.json`` declares: Unity Catalog names (one to three parts),
#: workspace object ids (each action names its object type as ``kind``) and the workspace.
KINDS: dict[str, str | None] = declared(__name__, "kinds")
_UC_NAME = {
    k: re.compile(str(KINDS[k])) for k in ("catalog", "schema", "table", "volume", "function")
}
_OBJECT_ID = re.compile(str(KINDS["jobs"]))
#: A user is an email-shaped userName, or a service principal's application id.
USER_IDS = UserIds(re.compile(rf"(?s:.*@.*)|{_OBJECT_ID.pattern}"), "a userName")
_UC_OBJECTS = {
    "catalog": "catalogs",
    "schema": "schemas",
    "table": "tables",
    "volume": "volumes",
    "function": "functions",
}
_EVERYONE_UC = "account users"
_EVERYONE_WS = "users"
_ADMINS = "admins"
_STATEMENTS = "/api/2.0/sql/statements"
_PAGES = 50
CREDENTIAL = (
    "Least privilege: a dedicated service principal (Settings > Identity and access > Service "
    "principals > Add; Generate secret for OAuth M2M, auth oauth), made a workspace admin "
    "(object ACLs of other users are readable by admins or CAN_MANAGE holders only) and, for "
    "Unity Catalog checks, a metastore admin or the owner of the catalogs checked (effective "
    "permissions of other principals); it needs no data privilege (no SELECT, no MODIFY). "
    "Keep its secret away from the agent."
)


class Databricks(Integration):
    """Databricks, through Unity Catalog effective permissions and object ACLs."""

    name = "databricks"
    description = (
        "Databricks: Unity Catalog effective permissions (GET /api/2.1/unity-catalog/"
        "effective-permissions/{type}/{name}) and workspace object ACLs (GET /api/2.0/"
        "permissions/{type}/{id}), asked live for the user and their groups. " + CREDENTIAL
    )
    default_url = None
    identity_modes = ("email",)
    keys = (
        ConfigKey(
            "auth",
            "How the engine signs in: token (access_token: a personal access token or an OAuth "
            "token) or oauth (a service principal's client_id + client_secret, OAuth M2M at "
            "<url>/oidc/v1/token).",
            default="token",
            choices=("token", "oauth"),
            needs={"token": ("access_token",), "oauth": ("client_id", "client_secret")},
        ),
        ConfigKey("access_token", "The engine's access token (auth token).", secret=True),
        ConfigKey("client_id", "The service principal's application id (auth oauth)."),
        ConfigKey(
            "client_secret", "The service principal's OAuth secret (auth oauth).", secret=True
        ),
        ConfigKey(
            "not_found",
            "What a 404 for the object or securable means (it does not exist, or the engine "
            "cannot see it): unknown (the default) or deny.",
            default="unknown",
            choices=("unknown", "deny"),
        ),
        ttl_key(
            "permission",
            "an object's ACL, a securable's effective permissions and a user's groups",
            60.0,
        ),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tokens = IssuedToken(self, self._client_credentials)
        kept = partial(Cache.option, self, "permission_cache_ttl", 2000)
        self._users: Cache[str, dict[str, Any] | None] = kept()
        self._permissions: Cache[str, dict[str, Any]] = kept()
        self._assignments: Cache[str, tuple[dict[str, Any], ...]] = kept()

    # --- the request hook --------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The table's route; a SQL statement (``POST /api/2.0/sql/statements``) that is one
        certain read of one table named in full (``catalog.schema.table``), calling no
        function but plain ones (:func:`plain_select`), is ``table.read`` on that table; any
        other statement stays ``workspace.admin`` (what it touches cannot be told from its
        text)."""
        found = self.route_table().match(request)
        if found is None or request.path.rstrip("/") != _STATEMENTS:
            return found
        table = plain_select(request.form.get("statement"))
        if table is None:
            return found
        route = found.route
        narrowed = Route(
            route.method,
            route.path,
            "table.read",
            "table:{body.statement}",
            "read",
            True,
            False,
            False,
        )
        return Match(narrowed, found.params, f"table:{table}")

    # --- requests --------------------------------------------------------------------
    def auth_headers(self) -> Mapping[str, str]:
        if self.options.get("auth", "token") == "oauth":
            token = self._tokens.get()
        else:
            token = self.secret("access_token")
        return {"Authorization": f"Bearer {token}", "Accept": "application/json"}

    def _client_credentials(self) -> tuple[str, float]:
        return token_from(
            self,
            "/oidc/v1/token",
            {"grant_type": "client_credentials", "scope": "all-apis"},
            who="databricks' token endpoint",
            what="issue an OAuth access token (M2M)",
            basic=(str(self.options["client_id"]), self.secret("client_secret")),
        )

    def error_detail(self, data: Any) -> str | None:
        """Databricks' ``{"error_code", "message"}``; SCIM's ``detail``; OAuth's
        ``error_description``."""
        if isinstance(data, dict):
            code, message = data.get("error_code"), data.get("message")
            if isinstance(message, str) and message:
                return f"{code}: {message}" if isinstance(code, str) else message
            for key in ("detail", "error_description"):
                if isinstance(data.get(key), str) and data[key]:
                    return str(data[key])
        return super().error_detail(data)

    # --- identity ----------------------------------------------------------------------
    def _scim_user(self, user_name: str) -> dict[str, Any] | None:
        """The SCIM user whose ``userName`` is exactly ``user_name``; None when none is."""
        return self._users.get(user_name.lower(), lambda: self._read_scim_user(user_name))

    def _read_scim_user(self, user_name: str) -> dict[str, Any] | None:
        escaped = user_name.replace("\\", "\\\\").replace('"', '\\"')
        data = self.get_json(
            f"{SCIM}/Users",
            what="find the user",
            params={
                "filter": f'userName eq "{escaped}"',
                "attributes": "id,userName,active,groups",
            },
        )
        found = data.get("Resources", [])
        if not isinstance(found, list):
            raise LookupFailed("databricks' SCIM answer has no Resources list")
        exact = [
            u for u in found if isinstance(u, dict) and same_email(u.get("userName"), user_name)
        ]
        if len(exact) > 1:
            raise LookupFailed(f"databricks has {len(exact)} users named {user_name}")
        return exact[0] if exact else None

    def lookup_email(self, email: str) -> Sequence[str]:
        """The workspace user whose ``userName`` is ``email`` (exact, case-insensitive)."""
        found = self._scim_user(email)
        name = found.get("userName") if found else None
        if not isinstance(name, str):
            raise LookupFailed(f"databricks has no user {email}")
        return [name]

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        got = asked(self, action, resource, user, USER_IDS)
        if isinstance(got, Decision):
            return got
        declared, scope, name = got.action, got.terms["scope"], got.uid
        kind, ref = got.on.kind, got.on.id
        found = self._scim_user(name)
        if found is None:
            return Decision.deny(f"Databricks has no workspace user {name}")
        if found.get("active") is False:
            return Decision.deny(f"{name} is not an active Databricks user")
        groups = {
            str(g["display"])
            for g in found.get("groups") or []
            if isinstance(g, dict) and isinstance(g.get("display"), str)
        }
        if scope == "workspace":
            return Decision.allow(f"{name} is an active Databricks user")
        if scope == "admin":
            if _ADMINS in groups:
                return Decision.allow(f"{name} is a Databricks workspace admin")
            return Decision.deny(f"{name} is not in the Databricks workspace's admins group")
        if scope == "acl":
            return self._acl(name, groups | {_EVERYONE_WS}, declared, kind, ref)
        principals = {name, _EVERYONE_UC} | groups
        return self._uc(name, principals, kind, ref, str(declared.terms["privilege"]))

    def _not_found(self, text: str) -> Decision:
        if self.options.get("not_found") == "deny":
            return Decision.deny(text)
        return Decision.unknown(text)

    def _acl(self, name: str, groups: set[str], action: Action, kind: str, ref: str) -> Decision:
        ident = ref
        if kind == "serving-endpoints":  # named by name; its ACL is kept under its id
            what = f"read the serving endpoint {ref}"
            found = self.get_json(
                f"/api/2.0/serving-endpoints/{quote(ref)}", what=what, absent=(404,)
            )
            if found is None:
                return self._not_found(f"Databricks has no serving endpoint {ref} (404)")
            ident = str(found.get("id") or "")
            if not _OBJECT_ID.fullmatch(ident):
                raise LookupFailed(f"databricks' serving endpoint {ref} has no id")
        path = f"/api/2.0/permissions/{kind}/{quote(ident, safe='')}"

        def read() -> dict[str, Any]:
            what = f"read the permissions of {kind} {ref}"
            data: dict[str, Any] | None = self.get_json(path, what=what, absent=(404,))
            if data is None:
                raise Absent(what)
            return data

        try:
            data = self._permissions.get(path, read)
        except Absent:
            return self._not_found(f"Databricks has no {kind} {ref} the engine can see (404)")
        entries = data.get("access_control_list")
        if not isinstance(entries, list):
            raise LookupFailed(f"databricks' permissions of {kind} {ref} have no list")
        held: set[str] = set()
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            who = entry.get("user_name")
            if who == name or same_email(who, name) or entry.get("group_name") in groups:
                for p in entry.get("all_permissions") or []:
                    if isinstance(p, dict) and isinstance(p.get("permission_level"), str):
                        held.add(p["permission_level"])
        wanted = set(action.terms["levels"])
        if held & wanted:
            level = sorted(held & wanted)[0]
            return Decision.allow(f"Databricks grants {name} {level} on {kind} {ref}")
        has = f"holds only {', '.join(sorted(held))}" if held else "holds no permission"
        return Decision.deny(f"{name} {has} on Databricks {kind} {ref}, not {action.name}")

    def _uc(self, name: str, principals: set[str], kind: str, ref: str, privilege: str) -> Decision:
        parts = ref.split(".")
        needs = [("catalog", parts[0], "USE_CATALOG")]
        if kind != "catalog":
            needs.append(("schema", ".".join(parts[:2]), "USE_SCHEMA"))
        if (kind, ref, privilege) not in needs:
            needs.append((kind, ref, privilege))
        for securable, full, wanted in needs:
            held = self._privileges(securable, full, principals)
            if held is None:
                return self._not_found(f"Databricks has no {securable} {full} the engine can see")
            ok = wanted in held or (wanted != "MANAGE" and "ALL_PRIVILEGES" in held)
            if not ok and not self._owns(securable, full, principals):
                return Decision.deny(
                    f"Databricks does not grant {name} {wanted} on {securable} {full}"
                )
        return Decision.allow(
            f"Databricks grants {name} {', '.join(w for _, _, w in needs)} for {kind} {ref}"
        )

    def _privileges(self, securable: str, full: str, principals: set[str]) -> set[str] | None:
        """The privileges ``principals`` hold on a securable; None on 404."""
        path = f"/api/2.1/unity-catalog/effective-permissions/{securable}/{quote(full, safe='')}"
        what = f"read the effective permissions of {securable} {full}"

        def read() -> tuple[dict[str, Any], ...]:
            listing = paged(
                self,
                path,
                what=what,
                too_many=f"databricks: {what}: too many pages",
                style="cursor",
                items="privilege_assignments",
                optional=True,
                each=dict,
                absent=True,
                pages=_PAGES,
                size=0,
                size_param="max_results",
                cursor="page_token",
                next_at="next_page_token",
            )
            return tuple(listing)

        try:
            assignments = self._assignments.get(path, read)
        except Absent:
            return None
        held: set[str] = set()
        for a in assignments:
            who = a.get("principal")
            if isinstance(who, str) and (who in principals or _is_user(who, principals)):
                for p in a.get("privileges") or []:
                    if isinstance(p, dict) and isinstance(p.get("privilege"), str):
                        held.add(p["privilege"])
        return held

    def _owns(self, securable: str, full: str, principals: set[str]) -> bool:
        """Whether the owner of a securable is one of ``principals``."""
        path = f"/api/2.1/unity-catalog/{_UC_OBJECTS[securable]}/{quote(full, safe='')}"
        data = self.get_json(path, what=f"read the owner of {securable} {full}", absent=(404,))
        owner = data.get("owner") if data else None
        return isinstance(owner, str) and (owner in principals or _is_user(owner, principals))

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        me = self.get_json(f"{SCIM}/Me", what="tell who the engine is")
        who = me.get("userName") or me.get("displayName") or me.get("id")
        if not isinstance(who, str):
            return ProbeResult(False, "databricks' SCIM Me answer names no one")
        groups = {g.get("display") for g in me.get("groups") or [] if isinstance(g, dict)}
        if "admins" not in groups:
            return ProbeResult(
                False,
                f"signed in to {self.config.url} as {who}, who is not a workspace admin "
                "(in the admins group): other users' object ACLs may stay unreadable",
            )
        return ProbeResult(True, f"signed in to {self.config.url} as {who}, a workspace admin")


def plain_select(statement: object) -> str | None:
    """The table ``catalog.schema.table`` a statement reads, when it is one statement that
    :mod:`~toolpass.integrations._sql` reads with certainty as a SELECT of that one table
    (named in full, calling no function but plain ones); None otherwise."""
    found = statements(statement, DATABRICKS)
    if not found or len(found) != 1:
        return None
    (one,) = found
    names = set(one.tables)
    if not one.reads or one.verb not in ("select", "with") or len(names) != 1:
        return None
    (name,) = names
    full = ".".join(name)
    return full if len(name) == 3 and _UC_NAME["table"].fullmatch(full) else None


def _is_user(who: str, principals: set[str]) -> bool:
    return "@" in who and any(same_email(who, p) for p in principals if "@" in p)


INTEGRATION = Databricks
