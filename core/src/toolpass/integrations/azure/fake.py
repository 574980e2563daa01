"""A fake Entra ID, Microsoft Graph and Azure Resource Manager on one 127.0.0.1 server, from
the documented request and response shapes.

- ``GET /{tenant}/v2.0/.well-known/openid-configuration`` (MSAL reads it first);
- ``POST /{tenant}/oauth2/v2.0/token``: client credentials (``client_secret``, or a
  ``client_assertion`` JWT signed by a registered certificate, or a federated token), a
  token per audience (``scope``: ``<api>/.default``); errors as Entra ID answers
  (``{"error": "invalid_client", "error_description": "AADSTS..."}``);
- Graph (``/v1.0``, a Graph token): ``GET /users/{id|upn}``, ``GET /users?$filter=mail eq
  '...'``, ``POST /directoryObjects/{id}/checkMemberGroups`` (transitive);
- ARM (an ARM token, ``api-version`` required): ``GET /subscriptions``, ``GET {scope}/providers/
  Microsoft.Authorization/roleAssignments`` (``$filter=atScope() and assignedTo('{oid}')``,
  ``assignedTo``, ``principalId eq``; groups transitive; ``nextLink`` pages of ``page_size``),
  ``GET .../denyAssignments``, ``GET .../roleDefinitions/{id}``, ``PUT``/``GET``/``DELETE``
  ``.../roleAssignments/{name}`` (for clients); errors ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from typing import Any
from urllib.parse import parse_qs, quote

from fakes.server import FakeServer, Reply, Request

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
CLIENT = "0b6c3a8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
SECRET = "azure-client-secret-1"
SUB = "11111111-2222-3333-4444-555555555555"
RG = f"/subscriptions/{SUB}/resourceGroups/rg-app"
VM = f"{RG}/providers/Microsoft.Compute/virtualMachines/vm1"
ARM_API = "https://management.azure.com"
GRAPH_API = "https://graph.microsoft.com"
ROLE = f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions"
OWNER = f"{ROLE}/8e3af657-a8ff-443c-a75c-2fe8c4bcb635"
CONTRIBUTOR = f"{ROLE}/b24988ac-6180-42a0-ab88-20f7382dd24c"
READER = f"{ROLE}/acdd72a7-3385-48ef-bd42-f606fba81ae7"
BLOB_READER = f"{ROLE}/2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
_ASSIGNED = re.compile(r"assignedTo\('([^']*)'\)")
_PRINCIPAL = re.compile(r"principalId eq '([^']*)'")
_MAIL = re.compile(r"mail eq '((?:[^']|'')*)'")
_ARM_PREFIX = r"(?P<scope>(?:/[^/]+)*?)/providers/Microsoft\.Authorization"


DEVS = "aaaaaaaa-0000-4000-8000-000000000001"
ENGINEERS = "aaaaaaaa-0000-4000-8000-000000000002"


def oid(n: int) -> str:
    return f"00000000-0000-0000-0000-{n:012d}"


class FakeAzure(FakeServer):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.users: dict[str, dict[str, Any]] = {}  # oid -> {upn, mail, enabled, groups}
        self.parents: dict[str, set[str]] = {}  # group -> groups it is a member of
        self.roles: dict[str, dict[str, Any]] = {}  # role id (lower) -> definition
        self.assignments: list[dict[str, Any]] = []
        self.denies: list[dict[str, Any]] = []
        self.secrets: dict[str, str] = {CLIENT: SECRET}
        self.certificates: dict[str, Any] = {}  # client id -> public key
        self.federated: set[str] = set()
        self.tokens: dict[str, str] = {}  # token -> audience
        self.page_size = 50
        self.add("POST", r"/(?P<tenant>[^/]+)/oauth2/v2\.0/token", self._token)
        oidc = r"/(?P<tenant>[^/]+)/v2\.0/\.well-known/openid-configuration"
        self.add("GET", oidc, self._openid)
        self.add("GET", r"/v1\.0/users/(?P<id>[^/]+)", self._user)
        self.add("GET", r"/v1\.0/users", self._users)
        self.add(
            "POST",
            r"/v1\.0/(?:directoryObjects|users)/(?P<id>[^/]+)/checkMemberGroups",
            self._groups,
        )
        self.add("GET", r"/subscriptions", self._subscriptions)
        for kind in ("roleAssignments", "denyAssignments"):
            self.add("GET", rf"(?i){_ARM_PREFIX}/{kind}", self._lister(kind))
        self.add("GET", rf"(?i){_ARM_PREFIX}/roleDefinitions/(?P<id>[^/]+)", self._role)
        one = rf"(?i){_ARM_PREFIX}/roleAssignments/(?P<name>[^/]+)"
        self.add("PUT", one, self._put_assignment)
        self.add("GET", one, self._get_assignment)
        self.add("DELETE", one, self._delete_assignment)

    # --- seeding -------------------------------------------------------------------------
    def add_user(
        self,
        n: int,
        name: str,
        groups: list[str] = (),
        enabled: bool = True,
        upn: str = "",
        guest: bool = False,
    ) -> str:
        self.users[oid(n)] = {
            "upn": upn or f"{name}@example.com",
            "mail": f"{name}@example.com",
            "enabled": enabled,
            "groups": set(groups),
            "type": "Guest" if guest else "Member",
        }
        return oid(n)

    def add_role(self, role_id: str, name: str, **permissions: list[str]) -> None:
        self.roles[role_id.lower()] = {
            "id": role_id,
            "type": "Microsoft.Authorization/roleDefinitions",
            "name": role_id.rpartition("/")[2],
            "properties": {
                "roleName": name,
                "type": "BuiltInRole",
                "assignableScopes": ["/"],
                "permissions": [
                    {
                        "actions": permissions.get("actions", []),
                        "notActions": permissions.get("notActions", []),
                        "dataActions": permissions.get("dataActions", []),
                        "notDataActions": permissions.get("notDataActions", []),
                    }
                ],
            },
        }

    def assign(
        self,
        principal: str,
        role: str,
        scope: str,
        condition: str | None = None,
        kind: str = "User",
    ) -> dict[str, Any]:
        name = str(uuid.uuid4())
        at = "" if scope == "/" else scope
        item = {
            "id": f"{at}/providers/Microsoft.Authorization/roleAssignments/{name}",
            "name": name,
            "type": "Microsoft.Authorization/roleAssignments",
            "properties": {
                "scope": scope,
                "roleDefinitionId": role,
                "principalId": principal,
                "principalType": kind,
                "condition": condition,
                "conditionVersion": "2.0" if condition else None,
            },
        }
        self.assignments.append(item)
        return item

    def deny(
        self,
        scope: str,
        actions: list[str],
        principals: list[str | tuple[str, str]],
        exclude: list[tuple[str, str]] = (),
        children: bool = True,
        condition: str | None = None,
        not_actions: list[str] = (),
    ) -> None:
        name = str(uuid.uuid4())
        self.denies.append(
            {
                "id": f"{scope}/providers/Microsoft.Authorization/denyAssignments/{name}",
                "name": name,
                "type": "Microsoft.Authorization/denyAssignments",
                "properties": {
                    "denyAssignmentName": f"deny-{len(self.denies) + 1}",
                    "scope": scope,
                    "permissions": [
                        {
                            "actions": actions,
                            "notActions": list(not_actions),
                            "dataActions": [],
                            "notDataActions": [],
                        }
                    ],
                    "doNotApplyToChildScopes": not children,
                    "principals": [
                        {"id": p, "type": "User"}
                        if isinstance(p, str)
                        else {"id": p[0], "type": p[1]}
                        for p in principals
                    ],
                    "excludePrincipals": [{"id": i, "type": t} for i, t in exclude],
                    "isSystemProtected": True,
                    "condition": condition,
                },
            }
        )

    def closure(self, principal: str) -> set[str]:
        """The principal and every group it is in, transitively."""
        user = self.users.get(principal)
        todo = list(user["groups"]) if user else []
        seen = {principal}
        while todo:
            g = todo.pop()
            if g not in seen:
                seen.add(g)
                todo.extend(self.parents.get(g, ()))
        return seen

    # --- Entra ID ------------------------------------------------------------------------
    def _token(self, request: Request) -> Reply:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        client = form.get("client_id", "")
        if form.get("grant_type") != "client_credentials" or request.params["tenant"] != TENANT:
            return _aad(400, "invalid_request", "AADSTS900144: bad request")
        proof = False
        if "client_secret" in form:
            proof = self.secrets.get(client) == form["client_secret"]
        elif form.get("client_assertion_type", "").endswith(":jwt-bearer"):
            proof = self._assertion(client, form.get("client_assertion", ""), request)
        if not proof:
            return _aad(401, "invalid_client", "AADSTS7000215: Invalid client secret provided.")
        scope = form.get("scope", "")
        audience = scope.removesuffix("/.default")
        if audience not in (ARM_API, GRAPH_API):
            return _aad(400, "invalid_scope", f"AADSTS70011: scope {scope} is not valid.")
        token = f"eyJ0eXAi.{'arm' if audience == ARM_API else 'graph'}.{uuid.uuid4().hex}"
        self.tokens[token] = audience
        return Reply(200, {"token_type": "Bearer", "expires_in": 3599, "access_token": token})

    def _openid(self, request: Request) -> dict[str, Any]:
        """The authority's metadata, which MSAL (azure-identity) reads first."""
        base = f"{self.url}/{request.params['tenant']}"
        return {
            "issuer": f"{base}/v2.0",
            "token_endpoint": f"{base}/oauth2/v2.0/token",
            "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
            "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
        }

    def _assertion(self, client: str, jwt: str, request: Request) -> bool:
        if jwt in self.federated:
            return True
        key = self.certificates.get(client)
        parts = jwt.split(".")
        if key is None or len(parts) != 3:
            return False
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        header, claims = (json.loads(_unb64(p)) for p in parts[:2])
        try:
            key.verify(
                _unb64(parts[2]),
                f"{parts[0]}.{parts[1]}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except Exception:
            return False
        return (
            bool(header.get("x5t"))
            and claims.get("iss") == claims.get("sub") == client
            and (claims.get("aud", "").endswith(f"/{TENANT}/oauth2/v2.0/token"))
        )

    def _authorized(self, request: Request, audience: str) -> Reply | None:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if self.tokens.get(token) != audience:
            code = "InvalidAuthenticationToken"
            return Reply(401, {"error": {"code": code, "message": "The access token is invalid."}})
        return None

    # --- Graph ---------------------------------------------------------------------------
    def _graph_user(self, uid: str) -> dict[str, Any]:
        u = self.users[uid]
        found = {
            "id": uid,
            "userPrincipalName": u["upn"],
            "mail": u["mail"],
            "accountEnabled": u["enabled"],
            "userType": u["type"],
        }
        if u["enabled"] is None:  # read without User.Read.All: Graph leaves it out
            del found["accountEnabled"]
        return found

    def _user(self, request: Request) -> Reply:
        if (bad := self._authorized(request, GRAPH_API)) is not None:
            return bad
        key = request.params["id"].lower()
        for uid, u in self.users.items():
            if key in (uid, u["upn"].lower()):
                return Reply(200, self._graph_user(uid))
        return Reply(
            404,
            {
                "error": {
                    "code": "Request_ResourceNotFound",
                    "message": f"Resource '{key}' does not exist.",
                }
            },
        )

    def _users(self, request: Request) -> Reply:
        if (bad := self._authorized(request, GRAPH_API)) is not None:
            return bad
        text = request.arg("$filter")
        if text is None:  # the whole directory, $top at a time
            top = int(request.arg("$top", "100") or 100)
            return Reply(200, {"value": [self._graph_user(uid) for uid in self.users][:top]})
        m = _MAIL.fullmatch(text)
        if m is None:
            return Reply(400, {"error": {"code": "BadRequest", "message": "Invalid filter clause"}})
        mail = m.group(1).replace("''", "'").lower()
        found = [
            self._graph_user(uid) for uid, u in self.users.items() if u["mail"].lower() == mail
        ]
        return Reply(200, {"value": found})

    def _groups(self, request: Request) -> Reply:
        if (bad := self._authorized(request, GRAPH_API)) is not None:
            return bad
        wanted = request.json().get("groupIds", [])
        if len(wanted) > 20:
            return Reply(400, {"error": {"code": "BadRequest", "message": "at most 20 groupIds"}})
        mine = self.closure(request.params["id"])
        return Reply(200, {"value": [g for g in wanted if g in mine]})

    # --- ARM -----------------------------------------------------------------------------
    def _arm(self, request: Request) -> Reply | None:
        if (bad := self._authorized(request, ARM_API)) is not None:
            return bad
        if not request.arg("api-version"):
            msg = "The api-version query parameter (?api-version=) is required for all requests."
            return Reply(400, {"error": {"code": "MissingApiVersionParameter", "message": msg}})
        return None

    def _subscriptions(self, request: Request) -> Reply:
        if (bad := self._arm(request)) is not None:
            return bad
        sub = {
            "id": f"/subscriptions/{SUB}",
            "subscriptionId": SUB,
            "displayName": "Prod",
            "state": "Enabled",
        }
        return Reply(200, {"value": [sub]})

    def _lister(self, kind: str) -> Any:
        def handler(request: Request) -> Reply:
            if (bad := self._arm(request)) is not None:
                return bad
            scope = (request.params.get("scope") or "/").lower() or "/"
            text = request.arg("$filter", "") or ""
            items = self.assignments if kind == "roleAssignments" else self.denies
            who = _ASSIGNED.search(text) or _PRINCIPAL.search(text)
            principals = None
            if who is not None:
                principals = (
                    self.closure(who.group(1)) if _ASSIGNED.search(text) else {who.group(1)}
                )
            found = []
            for item in items:
                props = item["properties"]
                at = props["scope"].lower()
                above = at == "/" or at == scope or scope.startswith(at + "/")
                group = "/providers/microsoft.management/managementgroups/"
                if at.startswith(group) and scope.startswith("/subscriptions/"):
                    above = True  # every management group of the fake holds the subscription
                below = at.startswith(scope.rstrip("/") + "/")
                if at.startswith(group) and scope.startswith(group) and "atScope()" not in text:
                    below = True  # another management group: above or below, by its id unknown
                if "atScope()" in text and not above:
                    continue
                if not (above or below):
                    continue
                if principals is not None:
                    ids = (
                        {props["principalId"]}
                        if kind == "roleAssignments"
                        else {p["id"] for p in props["principals"]}
                    )
                    everyone = "00000000-0000-0000-0000-000000000000" in ids
                    if not (ids & principals or everyone):
                        continue
                found.append(item)
            start = int(request.arg("$skipToken", "0") or 0)
            page = found[start : start + self.page_size]
            body: dict[str, Any] = {"value": page}
            if start + self.page_size < len(found):
                q = f"$filter={quote(text)}&api-version={request.arg('api-version')}"
                body["nextLink"] = (
                    f"{self.url}{request.path}?{q}&$skipToken={start + self.page_size}"
                )
            return Reply(200, body)

        return handler

    def _role(self, request: Request) -> Reply:
        if (bad := self._arm(request)) is not None:
            return bad
        for key, role in self.roles.items():
            if key.rpartition("/")[2] == request.params["id"].lower():
                return Reply(200, role)
        return Reply(
            404,
            {
                "error": {
                    "code": "RoleDefinitionDoesNotExist",
                    "message": "The specified role definition does not exist.",
                }
            },
        )

    def _put_assignment(self, request: Request) -> Reply:
        if (bad := self._arm(request)) is not None:
            return bad
        props = request.json().get("properties", {})
        scope = request.params.get("scope") or "/"
        item = self.assign(
            props["principalId"],
            props["roleDefinitionId"],
            scope,
            kind=props.get("principalType") or "User",
        )
        item["name"] = request.params["name"]
        item["id"] = request.path
        return Reply(201, item)

    def _get_assignment(self, request: Request) -> Reply:
        if (bad := self._arm(request)) is not None:
            return bad
        for item in self.assignments:
            if item["id"].lower() == request.path.lower():
                return Reply(200, item)
        return Reply(404, {"error": {"code": "RoleAssignmentNotFound", "message": "not found"}})

    def _delete_assignment(self, request: Request) -> Reply:
        if (bad := self._arm(request)) is not None:
            return bad
        for item in self.assignments:
            if item["id"].lower() == request.path.lower():
                self.assignments.remove(item)
                return Reply(200, item)
        return Reply(204, None)


def _aad(status: int, code: str, text: str) -> Reply:
    return Reply(status, {"error": code, "error_description": text, "error_codes": [7000215]})


def _unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def populate(az: FakeAzure) -> FakeAzure:
    """dana: Contributor on rg-app through nested groups (devs in engineers); erin: Reader on
    the subscription; frank: Owner of the subscription with a deny assignment on rg-locked;
    gail: disabled; hank: Storage Blob Data Reader on the subscription, with a condition."""
    az.add_role(OWNER, "Owner", actions=["*"])
    az.add_role(
        CONTRIBUTOR,
        "Contributor",
        actions=["*"],
        notActions=[
            "Microsoft.Authorization/*/Delete",
            "Microsoft.Authorization/*/Write",
            "Microsoft.Authorization/elevateAccess/Action",
        ],
    )
    az.add_role(READER, "Reader", actions=["*/read"])
    az.add_role(
        BLOB_READER,
        "Storage Blob Data Reader",
        actions=["Microsoft.Storage/storageAccounts/blobServices/containers/read"],
        dataActions=["Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"],
    )
    az.parents[DEVS] = {ENGINEERS}
    dana = az.add_user(1, "dana", [DEVS])
    erin = az.add_user(2, "erin")
    frank = az.add_user(3, "frank")
    az.add_user(4, "gail", enabled=False)
    hank = az.add_user(5, "hank")
    az.assign(ENGINEERS, CONTRIBUTOR, RG, kind="Group")
    az.assign(erin, READER, f"/subscriptions/{SUB}")
    az.assign(frank, OWNER, f"/subscriptions/{SUB}")
    az.assign(oid(4), OWNER, f"/subscriptions/{SUB}")
    condition = (
        "((!(ActionMatches{'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read'}))"
        " OR (@Resource[Microsoft.Storage/storageAccounts/blobServices/containers:name] "
        "StringEquals 'public'))"
    )
    az.assign(hank, BLOB_READER, f"/subscriptions/{SUB}", condition=condition)
    az.deny(f"/subscriptions/{SUB}/resourceGroups/rg-locked", ["*/delete"], [frank])
    _ = dana
    return az
