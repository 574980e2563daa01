"""A fake Databricks workspace on 127.0.0.1.

It speaks the documented shapes of the Databricks REST API (as databricks-sdk reads them):

- SCIM: ``GET /api/2.0/preview/scim/v2/Users?filter=userName eq "..."`` (``Resources`` of
  ``{id, userName, active, groups[{display, value}]}``) and ``GET .../Me``;
- object ACLs: ``GET /api/2.0/permissions/{type}/{id}`` (``access_control_list`` of
  ``{user_name | group_name, all_permissions[{permission_level, inherited}]}``), readable by
  workspace admins only (else 403 ``PERMISSION_DENIED``), 404 ``RESOURCE_DOES_NOT_EXIST``;
- Unity Catalog: ``GET /api/2.1/unity-catalog/effective-permissions/{type}/{full_name}``
  (``privilege_assignments`` of ``{principal, privileges[{privilege, inherited_from_type,
  inherited_from_name}]}``, inherited from parents; ``max_results=0`` pages of ``page_cap``
  principals, the first page of a paged list empty with a ``next_page_token``, as the API
  allows) and ``GET /api/2.1/unity-catalog/{catalogs|schemas|tables|volumes|functions}/{name}``
  (with ``owner``);
- ``GET /api/2.0/serving-endpoints/{name}`` (``id``); ``POST /oidc/v1/token`` (M2M);
- what tools call: ``GET /api/2.2/jobs/get``, ``POST /api/2.2/jobs/run-now``,
  ``POST /api/2.0/sql/statements``.

Errors are ``{"error_code", "message"}``; a request without a known bearer token is 401.
"""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

from fakes.server import FakeServer, Reply, Request

SCIM = "/api/2.0/preview/scim/v2"
UC = "/api/2.1/unity-catalog"
PLURAL = {
    "catalogs": "catalog",
    "schemas": "schema",
    "tables": "table",
    "volumes": "volume",
    "functions": "function",
}


def error(status: int, code: str, message: str) -> Reply:
    return Reply(status, {"error_code": code, "message": message})


@dataclass
class User:
    id: str
    user_name: str
    groups: list[str] = field(default_factory=list)
    active: bool = True

    def json(self) -> dict[str, Any]:
        return {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "id": self.id,
            "userName": self.user_name,
            "displayName": self.user_name.split("@")[0].title(),
            "active": self.active,
            "emails": [{"value": self.user_name, "primary": True, "type": "work"}],
            "groups": [{"display": g, "value": f"g-{g}", "type": "direct"} for g in self.groups],
        }


class FakeDatabricks(FakeServer):
    """A Databricks workspace; ``url`` is its host (``https://<workspace>.cloud.databricks.com``)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.users: dict[str, User] = {}
        self.tokens: dict[str, str] = {}  # bearer token -> userName
        self.clients: dict[str, tuple[str, str]] = {}  # client id -> (secret, userName)
        self.acls: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.grants: dict[tuple[str, str], dict[str, set[str]]] = {}
        self.owners: dict[tuple[str, str], str] = {}
        self.endpoints: dict[str, str] = {}  # serving endpoint name -> id
        self.page_cap = 100
        self.runs: list[dict[str, Any]] = []
        self.statements: list[str] = []
        self._ids = itertools.count(1000)
        self.add("GET", rf"{SCIM}/Users", self._users)
        self.add("GET", rf"{SCIM}/Me", self._me)
        self.add("GET", r"/api/2\.0/permissions/(?P<kind>[a-z-]+)/(?P<id>[^/]+)", self._acl)
        self.add(
            "GET",
            rf"{UC}/effective-permissions/(?P<kind>[a-z_]+)/(?P<name>[^/]+)",
            self._effective,
        )
        self.add("GET", rf"{UC}/(?P<plural>[a-z]+)/(?P<name>[^/]+)", self._securable)
        self.add("GET", r"/api/2\.0/serving-endpoints/(?P<name>[^/]+)", self._endpoint)
        self.add("POST", r"/oidc/v1/token", self._token)
        self.add("GET", r"/api/2\.2/jobs/get", self._job)
        self.add("POST", r"/api/2\.2/jobs/run-now", self._run_now)
        self.add("POST", r"/api/2\.0/sql/statements/?", self._statement)

    # --- state -------------------------------------------------------------------------
    def add_user(self, user_name: str, *groups: str, active: bool = True) -> User:
        user = User(str(next(self._ids)), user_name, list(groups), active)
        self.users[user_name] = user
        return user

    def bearer(self, token: str, user_name: str) -> None:
        self.tokens[token] = user_name

    def oauth_client(self, client_id: str, secret: str, user_name: str) -> None:
        self.clients[client_id] = (secret, user_name)

    def acl(
        self,
        kind: str,
        ident: str,
        principal: str,
        level: str,
        *,
        group: bool = False,
        inherited: bool = False,
    ) -> None:
        key = "group_name" if group else "user_name"
        entry = {
            key: principal,
            "all_permissions": [{"permission_level": level, "inherited": inherited}],
        }
        self.acls.setdefault((kind, ident), []).append(entry)

    def grant(self, kind: str, full_name: str, principal: str, *privileges: str) -> None:
        self.grants.setdefault((kind, full_name), {}).setdefault(principal, set()).update(
            privileges
        )

    def securable(self, kind: str, full_name: str, owner: str = "someone@example.com") -> None:
        self.grants.setdefault((kind, full_name), {})
        self.owners[(kind, full_name)] = owner

    # --- handlers ----------------------------------------------------------------------
    def _caller(self, request: Request) -> User | None:
        header = request.headers.get("authorization", "")
        name = self.tokens.get(header[7:]) if header.startswith("Bearer ") else None
        return self.users.get(name) if name else None

    def _admin(self, request: Request) -> Reply | None:
        caller = self._caller(request)
        if caller is None:
            return error(401, "UNAUTHENTICATED", "Invalid access token.")
        if "admins" not in caller.groups:
            return error(403, "PERMISSION_DENIED", "Only admins can read other principals")
        return None

    def _users(self, request: Request) -> Reply:
        if self._caller(request) is None:
            return error(401, "UNAUTHENTICATED", "Invalid access token.")
        wanted = request.arg("filter") or ""
        prefix = 'userName eq "'
        if not (wanted.startswith(prefix) and wanted.endswith('"')):
            return Reply(400, {"detail": "Unsupported filter", "status": "400"})
        name = wanted[len(prefix) : -1].replace('\\"', '"').lower()
        found = [u.json() for u in self.users.values() if u.user_name.lower() == name]
        return Reply(
            200,
            {
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
                "totalResults": len(found),
                "startIndex": 1,
                "itemsPerPage": len(found),
                "Resources": found,
            },
        )

    def _me(self, request: Request) -> Reply:
        caller = self._caller(request)
        if caller is None:
            return error(401, "UNAUTHENTICATED", "Invalid access token.")
        return Reply(200, caller.json())

    def _acl(self, request: Request) -> Reply:
        denied = self._admin(request)
        if denied is not None:
            return denied
        kind, ident = request.params["kind"], unquote(request.params["id"])
        entries = self.acls.get((kind, ident))
        if entries is None:
            return error(404, "RESOURCE_DOES_NOT_EXIST", f"{kind} {ident} does not exist.")
        return Reply(
            200,
            {
                "object_id": f"/{kind}/{ident}",
                "object_type": kind.rstrip("s"),
                "access_control_list": entries,
            },
        )

    def _effective(self, request: Request) -> Reply:
        denied = self._admin(request)
        if denied is not None:
            return denied
        kind, name = request.params["kind"], unquote(request.params["name"])
        if (kind, name) not in self.grants:
            return error(404, "NOT_FOUND", f"{kind.title()} '{name}' does not exist.")
        held: dict[str, list[dict[str, str]]] = {}
        parts = name.split(".")
        chain = [("catalog", parts[0])]
        if len(parts) > 1:
            chain.append(("schema", ".".join(parts[:2])))
        if len(parts) > 2:
            chain.append((kind, name))
        for source_kind, source in chain:
            for principal, privileges in self.grants.get((source_kind, source), {}).items():
                for p in sorted(privileges):
                    item = {"privilege": p}
                    if source != name:
                        item.update(
                            inherited_from_type=source_kind.upper(), inherited_from_name=source
                        )
                    held.setdefault(principal, []).append(item)
        wanted = request.arg("principal")
        assignments = [
            {"principal": who, "privileges": privileges}
            for who, privileges in sorted(held.items())
            if wanted is None or who == wanted
        ]
        if request.arg("max_results") is None:
            return Reply(200, {"privilege_assignments": assignments})
        token = request.arg("page_token")
        if token is None:  # the API may answer an empty page that goes on
            return Reply(200, {"privilege_assignments": [], "next_page_token": "p0"})
        start = int(token[1:])
        body: dict[str, Any] = {"privilege_assignments": assignments[start : start + self.page_cap]}
        if start + self.page_cap < len(assignments):
            body["next_page_token"] = f"p{start + self.page_cap}"
        return Reply(200, body)

    def _securable(self, request: Request) -> Reply:
        if self._caller(request) is None:
            return error(401, "UNAUTHENTICATED", "Invalid access token.")
        kind = PLURAL.get(request.params["plural"])
        name = unquote(request.params["name"])
        if kind is None or (kind, name) not in self.grants:
            return error(404, "NOT_FOUND", f"'{name}' does not exist.")
        return Reply(
            200,
            {
                "name": name.split(".")[-1],
                "full_name": name,
                "owner": self.owners.get((kind, name)),
            },
        )

    def _endpoint(self, request: Request) -> Reply:
        if self._caller(request) is None:
            return error(401, "UNAUTHENTICATED", "Invalid access token.")
        ident = self.endpoints.get(request.params["name"])
        if ident is None:
            return error(404, "RESOURCE_DOES_NOT_EXIST", "Endpoint does not exist.")
        return Reply(200, {"name": request.params["name"], "id": ident})

    def _token(self, request: Request) -> Reply:
        header = request.headers.get("authorization", "")
        form = parse_qs(request.body.decode())
        if not header.startswith("Basic ") or form.get("grant_type") != ["client_credentials"]:
            return Reply(400, {"error": "invalid_request"})
        client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        known = self.clients.get(client_id)
        if known is None or known[0] != secret:
            return Reply(
                401, {"error": "invalid_client", "error_description": "Client auth failed"}
            )
        token = f"m2m-token-{next(self._ids)}"
        self.bearer(token, known[1])
        return Reply(
            200,
            {
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": 3600,
                "scope": "all-apis",
            },
        )

    def _job(self, request: Request) -> Reply:
        if self._caller(request) is None:
            return error(401, "UNAUTHENTICATED", "Invalid access token.")
        job_id = request.arg("job_id") or ""
        if ("jobs", job_id) not in self.acls:
            return error(400, "INVALID_PARAMETER_VALUE", f"Job {job_id} does not exist.")
        return Reply(200, {"job_id": int(job_id), "settings": {"name": f"job {job_id}"}})

    def _run_now(self, request: Request) -> Reply:
        if self._caller(request) is None:
            return error(401, "UNAUTHENTICATED", "Invalid access token.")
        run = {"run_id": next(self._ids), "number_in_job": len(self.runs) + 1}
        self.runs.append({"job_id": request.json().get("job_id"), **run})
        return Reply(200, run)

    def _statement(self, request: Request) -> Reply:
        if self._caller(request) is None:
            return error(401, "UNAUTHENTICATED", "Invalid access token.")
        self.statements.append(str(request.json().get("statement")))
        return Reply(
            200,
            {
                "statement_id": f"01ef-{len(self.statements)}",
                "status": {"state": "SUCCEEDED"},
                "manifest": {
                    "format": "JSON_ARRAY",
                    "schema": {"column_count": 1, "columns": [{"name": "n", "position": 0}]},
                    "total_row_count": 1,
                },
                "result": {"chunk_index": 0, "row_count": 1, "data_array": [["42"]]},
            },
        )


def populate(fake: FakeDatabricks) -> FakeDatabricks:
    """The engine (a workspace admin, token ``dbx-engine-token``); dana (analysts), erin
    (admins), frank (nothing), gail (inactive); job 42 (dana CAN_MANAGE_RUN through
    analysts, frank CAN_VIEW), cluster c-1, warehouse w-1; Unity Catalog main.sales.orders
    readable by analysts, main.sales.refunds owned by frank."""
    fake.add_user("engine@example.com", "admins", "users")
    fake.bearer("dbx-engine-token", "engine@example.com")
    fake.add_user("dana@example.com", "analysts", "users")
    fake.add_user("erin@example.com", "admins", "users")
    fake.add_user("frank@example.com", "users")
    fake.add_user("gail@example.com", "analysts", "users", active=False)
    fake.acl("jobs", "42", "admins", "CAN_MANAGE", group=True, inherited=True)
    fake.acl("jobs", "42", "analysts", "CAN_MANAGE_RUN", group=True)
    fake.acl("jobs", "42", "frank@example.com", "CAN_VIEW")
    fake.acl("clusters", "c-1", "users", "CAN_ATTACH_TO", group=True)
    fake.acl("clusters", "c-1", "erin@example.com", "CAN_MANAGE")
    fake.acl("warehouses", "w-1", "analysts", "CAN_USE", group=True)
    fake.acl("serving-endpoints", "ep-7", "analysts", "CAN_QUERY", group=True)
    fake.endpoints["chat"] = "ep-7"
    fake.securable("catalog", "main", owner="erin@example.com")
    fake.securable("schema", "main.sales", owner="erin@example.com")
    fake.securable("table", "main.sales.orders", owner="erin@example.com")
    fake.securable("table", "main.sales.refunds", owner="frank@example.com")
    fake.grant("catalog", "main", "account users", "USE_CATALOG")
    fake.grant("schema", "main.sales", "analysts", "USE_SCHEMA")
    fake.grant("schema", "main.sales", "frank@example.com", "USE_SCHEMA")
    fake.grant("table", "main.sales.orders", "analysts", "SELECT")
    fake.grant("table", "main.sales.orders", "erin@example.com", "ALL_PRIVILEGES")
    return fake
