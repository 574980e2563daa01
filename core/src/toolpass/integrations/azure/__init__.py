"""Azure Resource Manager: a user's role assignments, their roles' permissions and the deny
assignments on a scope, asked live and evaluated as Azure RBAC does.

For a user (an Entra ID object id), ``action`` (an Azure operation such as
``Microsoft.Compute/virtualMachines/write``; a data action is written ``data:`` and its name)
and ``resource`` (an ARM resource id: ``/subscriptions/{s}/resourceGroups/{rg}/providers/
{namespace}/{type}/{name}``, a resource group, a subscription, a management group or ``/``):

1. ``GET {resource}/providers/Microsoft.Authorization/roleAssignments?$filter=
   assignedTo('{oid}')`` lists the assignments at, above and below the resource that apply to
   the user, directly or through their (nested) groups; those at or above it count (a
   management group's is above any subscription; for a management-group scope, another
   management group's cannot be placed from its id: unknown). PIM-eligible assignments that
   are not active are not among them.
2. Each assignment's role definition (``GET {roleDefinitionId}``) gives ``permissions[]``:
   an action is granted by a permission whose ``actions`` (``dataActions``) match it and whose
   ``notActions`` (``notDataActions``) do not; ``*`` matches any characters, names compare
   without case.
3. ``GET {resource}/providers/Microsoft.Authorization/denyAssignments?$filter=atScope()``
   lists the deny assignments at or above the resource; one (at the resource only with
   ``doNotApplyToChildScopes``) whose permissions match the action denies it when its
   ``principals`` hold the user (the user, Everyone, or one of their groups: Graph's
   ``checkMemberGroups``, transitive) and its ``excludePrincipals`` do not.

Before any of it, the user's Entra ID account is read through Graph
(``GET /v1.0/users/{oid}``): a disabled account is denied whatever its assignments grant, in
every identity mode (Resource Manager keeps the assignments of a disabled account).

An assignment with an ABAC ``condition`` cannot be evaluated without the request's attributes:
an allow that rests only on conditional assignments is unknown, and so is an allow that a
conditional deny assignment may take away. Lists are read page by page (``nextLink`` on the
connection's host only) and kept ``permission_cache_ttl`` seconds; role definitions
``definition_cache_ttl``.

The request hook derives the operation from any ARM path, generically rather than from a
table of every provider's operations: ``/{scope}/providers/{Namespace}/{type}/{name}[/{child
type}/{child name}...]`` is ``{Namespace}/{type}/{child type}/...`` with ``read`` for GET and
HEAD, ``write`` for PUT and PATCH, ``delete`` for DELETE, and for a POST to ``.../{verb}``
``.../{verb}/action``; paths without a provider are ``Microsoft.Resources`` (subscriptions,
resource groups). The resource is the ARM id the request names, lower-cased (ARM compares ids
without case).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import quote

from toolpass.integrations._kit import Cache, UserIds, mapped_user, paged, ttl_key
from toolpass.integrations._microsoft import GUID, MicrosoftCloud, entra_keys
from toolpass.integrations.base import (
    Action,
    Decision,
    Effect,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import Match, Request, Route, normal_path

__all__ = ["Azure", "arm_operation", "arm_scope"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
API_VERSION = "2022-04-01"
_OPERATION = re.compile(r"(?:data:)?[A-Za-z][A-Za-z0-9.]*(?:/[A-Za-z][A-Za-z0-9_.-]*)+")
_SEGMENT = re.compile(r"[A-Za-z0-9_.()~-][A-Za-z0-9_.()~ -]{0,259}")
_DOTS = frozenset({".", ".."})
_READ_POSTS = ("list", "get")
_META = frozenset({"operations", "providers"})
_PAGES = 50
_EVERYONE = "00000000-0000-0000-0000-000000000000"
CREDENTIAL = (
    "Least privilege: an Entra ID app registration (Entra ID > App registrations > New "
    "registration; a client secret, a certificate or a federated credential under Certificates "
    "& secrets) assigned the built-in Reader role, or a custom role with only "
    "Microsoft.Authorization/*/read, at the root management group or each subscription "
    "checked (Access control (IAM) > Add role assignment); the Microsoft Graph application "
    "permissions User.Read.All (every check reads the user's account: a disabled one is "
    "denied) and GroupMember.Read.All (deny assignments that name groups) (API permissions > "
    "Add > Microsoft Graph > Application permissions, then Grant admin consent). It can "
    "change nothing."
)


@dataclass(frozen=True, slots=True)
class _Grant:
    """A role assignment or a deny assignment, as the check reads it."""

    scope: str  # lower-cased
    role: str  # role definition id, or the deny assignment's name
    permissions: tuple[Mapping[str, Any], ...]
    condition: str
    children: bool = True  # applies below its scope (deny: not doNotApplyToChildScopes)
    principals: tuple[tuple[str, str], ...] = ()  # (id, type) of a deny's principals
    excluded: tuple[tuple[str, str], ...] = ()  # (id, type) of excludePrincipals


USER_IDS = UserIds(GUID, "an Entra ID object id")


class Azure(MicrosoftCloud):
    """Azure Resource Manager, through role and deny assignments."""

    name = "azure"
    description = (
        "Azure Resource Manager RBAC: the user's role assignments at and above the scope "
        "(assignedTo, through groups), their role definitions' actions/notActions/dataActions/"
        "notDataActions and the deny assignments, asked live; ABAC conditions are unknown. "
        + CREDENTIAL
    )
    default_url = "https://management.azure.com"
    keys = (
        *entra_keys("Give it Reader (Microsoft.Authorization/*/read) where it checks."),
        ttl_key("permission", "a user's role and deny assignments at a scope", 60.0),
        ttl_key("definition", "a role definition", 3600.0, kept="is kept"),
    )
    actions = ACTIONS
    api = "arm"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._kept: Cache[str, tuple[_Grant, ...]] = Cache.option(self, "permission_cache_ttl")
        self._roles: Cache[str, tuple[Mapping[str, Any], ...]] = Cache.option(
            self, "definition_cache_ttl", 2000
        )

    @classmethod
    def action(cls, name: str) -> Action | None:
        """A declared action, or any Azure operation name (``data:`` for a data action); its
        effect is read from its last segment."""
        declared = super().action(name)
        if declared is not None or not isinstance(name, str) or not _OPERATION.fullmatch(name):
            return declared
        parts = name.lower().split("/")
        effect: Effect = "write"
        if parts[-1] == "read" or (parts[-1] == "action" and parts[-2].startswith(_READ_POSTS)):
            effect = "read"
        elif parts[-1] == "delete":
            effect = "destructive"
        return Action(name, f"The Azure operation {name}.", effect, f"{name} at the resource")

    # --- the request hook --------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The operation and ARM id of a request to Resource Manager (see the module
        docstring); None for a path that is not an ARM resource path."""
        path = normal_path(request.path)
        found = arm_operation(request.method, path) if path is not None else None
        if path is None or found is None:
            return None
        action, resource, agent = found
        effect = self.action(action)
        if effect is None:
            return None
        root = request.path.lstrip("/").split("/")[0].lower()
        template = f"/{root}/{{arm+}}" if "/" in path.strip("/") else f"/{root}"
        row = Route(request.method, template, action, "{id}", effect.effect, False, False, agent)
        return Match(row, {"id": resource}, resource)

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        if not _OPERATION.fullmatch(action) or "*" in action:
            return Decision.unknown(
                f"{action!r} is not an Azure operation (Namespace/type/verb)", cause="resource"
            )
        scope = arm_scope(resource)
        if scope is None:
            return Decision.unknown(f"{resource!r} is not an ARM resource id", cause="resource")
        oid = mapped_user(self, user, USER_IDS)
        if isinstance(oid, Decision):
            return oid
        refused = self.account_refusal(oid, self.account(oid))
        if refused is not None:
            return refused
        data = action.startswith("data:")
        operation = action.removeprefix("data:")
        grants: list[_Grant] = []
        above: list[_Grant] = []
        for g in self._assignments(scope, oid, "roleAssignments"):
            applies = _applies(g, scope)
            if applies is not False and _permits(self._role(g.role), operation, data):
                (grants if applies else above).append(g)
        if not grants and not above:
            return Decision.deny(f"no Azure role assignment grants {oid} {action} at {scope}")
        sure = [g for g in grants if not g.condition]
        denies = [
            d
            for d in self._assignments(scope, oid, "denyAssignments")
            if _applies(d, scope) is not False  # listed atScope(): at or above
            and _permits(d.permissions, operation, data)
            and self._denied(oid, d)
        ]
        for deny in denies:
            if not deny.condition:
                return Decision.deny(f"the Azure deny assignment {deny.role} denies {oid} {action}")
        if not sure:
            if not grants:
                return Decision.unknown(
                    f"only a role assignment at another management group grants {oid} {action} "
                    f"({above[0].scope}): whether it is above {scope} is not in its id"
                )
            return Decision.unknown(
                f"only conditional role assignments grant {oid} {action} at {scope} "
                f"(condition: {grants[0].condition[:160]}); toolpass cannot evaluate it"
            )
        if denies:
            return Decision.unknown(
                f"the conditional Azure deny assignment {denies[0].role} may deny {oid} {action}"
            )
        return Decision.allow(
            f"the Azure role {sure[0].role.rpartition('/')[2]} assigned at {sure[0].scope} "
            f"grants {oid} {action}"
        )

    def _assignments(self, scope: str, oid: str, kind: str) -> tuple[_Grant, ...]:
        """The role (or deny) assignments of ``kind`` for the user at or above ``scope``."""
        key = f"{kind}|{scope}|{oid.lower() if kind == 'roleAssignments' else ''}"
        return self._kept.get(key, lambda: self._read_assignments(scope, oid, kind))

    def _read_assignments(self, scope: str, oid: str, kind: str) -> tuple[_Grant, ...]:
        where = "" if scope == "/" else scope
        base = f"{self.config.url}{quote(where)}/providers/Microsoft.Authorization/{kind}"
        # The user's role assignments, also through groups, at, above and below the scope;
        # every deny assignment at or above it (its principals are evaluated here).
        query = f"assignedTo('{oid}')" if kind == "roleAssignments" else "atScope()"
        what = f"list the {kind} for {oid} at {scope}"

        listing = paged(
            self,
            base,
            what=what,
            too_many=f"azure: {what}: too many pages",
            style="next_url",
            items="value",
            params={"$filter": query, "api-version": API_VERSION},
            pages=_PAGES,
            next_at="nextLink",
            get=partial(self.api_json, "GET", api="arm"),
        )
        return tuple(_grant(item, kind) for item in listing)

    def _role(self, role_id: str) -> tuple[Mapping[str, Any], ...]:
        """A role definition's ``permissions``."""
        return self._roles.get(role_id.lower(), lambda: self._read_role(role_id))

    def _read_role(self, role_id: str) -> tuple[Mapping[str, Any], ...]:
        if (
            arm_scope(role_id) is None
            or "/providers/microsoft.authorization/roledefinitions/" not in role_id.lower()
        ):
            raise LookupFailed(f"azure names a role definition {role_id!r} that is not an ARM id")
        what = f"read the role definition {role_id.rpartition('/')[2]}"
        data = self.api_json(
            "GET",
            self.config.url + quote(role_id),
            api="arm",
            what=what,
            params={"api-version": API_VERSION},
        )
        return _permissions(data.get("properties"), what)

    def _denied(self, oid: str, deny: _Grant) -> bool:
        """Whether a deny assignment's principals hold the user (themselves, Everyone, or a
        group of theirs) and its excludePrincipals do not."""
        me = oid.lower()

        def holds(principals: tuple[tuple[str, str], ...]) -> bool:
            ids = {i for i, _ in principals}
            if me in ids or (principals is deny.principals and _EVERYONE in ids):
                return True
            groups = sorted(
                i for i, kind in principals if kind.lower() == "group" and GUID.fullmatch(i)
            )
            return bool(groups) and bool(self.member_of(oid, groups))

        return holds(deny.principals) and not holds(deny.excluded)

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        data = self.api_json(
            "GET",
            self.config.url + "/subscriptions",
            api="arm",
            what="list the subscriptions the engine can read",
            params={"api-version": "2022-12-01"},
        )
        subs = data.get("value")
        if not isinstance(subs, list):
            return ProbeResult(False, "azure's subscription list has no value list")
        if not subs:
            return ProbeResult(
                False, "the engine's app sees no subscription: assign it Reader where it checks"
            )
        return ProbeResult(
            True, f"the engine reads {len(subs)} subscription(s) of {self.config.url}"
        )


def _grant(item: Any, kind: str) -> _Grant:
    props = item.get("properties") if isinstance(item, dict) else None
    if not isinstance(props, dict) or not isinstance(props.get("scope"), str):
        raise LookupFailed(f"azure's {kind} list has an entry without properties.scope")
    scope = arm_scope(props["scope"])
    if scope is None:
        raise LookupFailed(f"azure's {kind} list has a scope that is not an ARM id")
    condition = props.get("condition") or ""
    if kind == "roleAssignments":
        role = props.get("roleDefinitionId")
        if not isinstance(role, str):
            raise LookupFailed("azure's role assignment has no roleDefinitionId")
        return _Grant(scope, role, (), str(condition))
    name = str(props.get("denyAssignmentName") or item.get("name") or "?")
    principals, excluded = (
        tuple(
            (str(p.get("id")).lower(), str(p.get("type") or ""))
            for p in props.get(key) or []
            if isinstance(p, dict)
        )
        for key in ("principals", "excludePrincipals")
    )
    return _Grant(
        scope,
        name,
        _permissions(props, f"read the deny assignment {name}"),
        str(condition),
        not props.get("doNotApplyToChildScopes"),
        principals,
        excluded,
    )


def _permissions(props: Any, what: str) -> tuple[Mapping[str, Any], ...]:
    perms = props.get("permissions") if isinstance(props, dict) else None
    if not isinstance(perms, list) or not all(isinstance(p, dict) for p in perms):
        raise LookupFailed(f"azure's answer to {what} has no permissions list")
    for p in perms:
        for key in ("actions", "notActions", "dataActions", "notDataActions"):
            names = p.get(key) or []
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise LookupFailed(f"azure's answer to {what} has a malformed {key}")
        if p.get("condition"):
            raise LookupFailed(f"azure's answer to {what} has a permission condition")
    return tuple(perms)


def _applies(grant: _Grant, scope: str) -> bool | None:
    """Whether an assignment at ``grant.scope`` covers ``scope`` (both lower-cased); None when
    its id cannot tell (another management group, listed for a management group's scope:
    above it or below)."""
    if grant.scope == scope:
        return True
    if not grant.children:
        return False
    if grant.scope == "/" or scope.startswith(grant.scope + "/"):
        return True
    if grant.scope.startswith("/providers/microsoft.management/managementgroups/"):
        return True if scope.startswith("/subscriptions/") else None
    return False


def _permits(permissions: Iterable[Mapping[str, Any]], operation: str, data: bool) -> bool:
    """Whether one of ``permissions`` grants ``operation``: it matches one of its actions
    (data actions) and none of its notActions (notDataActions)."""
    yes, no = ("dataActions", "notDataActions") if data else ("actions", "notActions")
    return any(
        any(_matches(p, operation) for p in perm.get(yes) or [])
        and not any(_matches(p, operation) for p in perm.get(no) or [])
        for perm in permissions
    )


def _matches(pattern: str, operation: str) -> bool:
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, operation, re.IGNORECASE) is not None


def arm_scope(resource: str) -> str | None:
    """``resource`` as a lower-cased ARM id (``/`` for the root scope), or None when it is
    not one (a relative path, ``..``, an empty or odd segment)."""
    if resource in ("", "/") or not isinstance(resource, str):
        return "/" if resource == "/" else None
    parts = resource.rstrip("/").split("/") if resource.startswith("/") else []
    if len(parts) < 3 or any(not _SEGMENT.fullmatch(p) or p in _DOTS for p in parts[1:]):
        return None
    if parts[1].lower() not in ("subscriptions", "providers"):
        return None
    return "/".join(parts).lower()


def arm_operation(method: str, path: str) -> tuple[str, str, bool] | None:
    """``(operation, lower-cased ARM id, whether it is the engine's own metadata)`` for a
    request to Resource Manager, or None when the path is not an ARM resource path."""
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0].lower() not in ("subscriptions", "providers"):
        return None
    if any(not _SEGMENT.fullmatch(p) or p in _DOTS for p in parts):
        return None
    if len(parts) == 1:  # the subscriptions the engine sees; providers' metadata
        if method not in ("GET", "HEAD"):
            return None
        kind = "subscriptions" if parts[0].lower() == "subscriptions" else "subscriptions/providers"
        return f"Microsoft.Resources/{kind}/read", "/", True
    namespace, i, ends_on_name = "Microsoft.Resources", 0, False
    types: list[str] = []
    while i < len(parts):
        if parts[i].lower() == "providers" and i + 1 < len(parts):
            namespace, types, i, ends_on_name = parts[i + 1], [], i + 2, False
            continue
        types.append(parts[i])
        ends_on_name = i + 1 < len(parts)
        i += 2
    meta = not types or (types[-1].lower() in _META and not ends_on_name)
    named = parts if ends_on_name else parts[:-1]
    if len(named) >= 2 and named[-2].lower() == "providers":
        named = named[:-2]  # the provider's own path: its scope is what holds it
    elif named and named[-1].lower() == "providers":
        named = named[:-1]
    resource = arm_scope("/" + "/".join(named)) if named else "/"
    if resource is None:
        return None
    if method == "POST":
        if ends_on_name or not types:
            return None
        return f"{namespace}/{'/'.join(types)}/action", resource, False
    verb = {"GET": "read", "HEAD": "read", "PUT": "write", "PATCH": "write", "DELETE": "delete"}
    if method not in verb:
        return None
    if not types:  # /subscriptions/{s}/providers/{Namespace}: the provider's registration
        if method not in ("GET", "HEAD"):
            return None
        return "Microsoft.Resources/subscriptions/providers/read", resource, True
    if method not in ("GET", "HEAD") and not ends_on_name:
        return None  # a write to a collection names no resource
    reads = method in ("GET", "HEAD")
    return f"{namespace}/{'/'.join(types)}/{verb[method]}", resource, meta and reads


INTEGRATION = Azure
