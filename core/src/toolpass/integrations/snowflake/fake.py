"""A fake Snowflake account on 127.0.0.1.

It speaks the documented shapes of Snowflake's REST APIs (snowflakedb/snowflake-rest-api-specs,
``user.yaml``, ``role.yaml``, ``database-role.yaml``, ``common.yaml``, ``sqlapi.yaml``):

- ``GET /api/v2/users`` (``showLimit``, ``fromName``: rows after that name) and
  ``GET /api/v2/users/{name}`` (``name``, ``login_name``, ``email``, ``disabled``,
  ``default_role``, ``default_secondary_roles``);
- ``GET /api/v2/users/{name}/grants``, ``GET /api/v2/roles/{name}/grants`` and
  ``GET /api/v2/databases/{db}/database-roles/{name}/grants``: ``Grant`` rows
  (``securable_type``, ``securable {database, schema, name}``, ``privileges``,
  ``grant_option``, ``granted_by``), paged with ``Link: <...>; rel="next"`` at
  ``/api/v2/results/{handler}?page=N`` when ``page_cap`` is set, answered 202 with a
  ``resultHandler`` first when ``asynchronous`` is;
- ``POST /api/v2/statements`` (the SQL API: ``resultSetMetaData`` + ``data``).

Identifiers in paths fold as Snowflake does (unquoted upper-case, quoted exact). The engine
signs in with a key-pair JWT (checked: type header, issuer fingerprint, RS256 signature,
expiry) or a bearer token (OAuth or PAT); without MANAGE GRANTS (``engine_manages_grants``
False) it sees no users and gets 403 on other principals' grants. Errors are
``{"message", "code", "request_id"}``.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import time
from typing import Any
from urllib.parse import unquote

from fakes.server import FakeServer, Reply, Request

NAME = r"(?P<name>[^/]+?)"


def fold(ident: str) -> str:
    if len(ident) >= 2 and ident[0] == ident[-1] == '"':
        return ident[1:-1].replace('""', '"')
    return ident.upper()


def error(status: int, code: str, message: str) -> Reply:
    return Reply(status, {"message": message, "code": code, "request_id": "req-1"})


def grant(kind: str, *names: str, privileges: tuple[str, ...] = ("USAGE",)) -> dict[str, Any]:
    """A Grant row as the REST API answers it (names as identifiers); a role granted to a user
    names no privilege (snowflake.core's ``UserResource.grant_role`` sends none)."""
    keys = {1: ["name"], 2: ["database", "name"], 3: ["database", "schema", "name"]}[len(names)]
    return {
        "securable_type": kind,
        "securable": dict(zip(keys, names, strict=True)),
        **({"privileges": list(privileges)} if privileges else {}),
        "grant_option": False,
        "granted_by": "SECURITYADMIN",
        "created_on": "2026-01-01T00:00:00Z",
    }


class FakeSnowflake(FakeServer):
    """A Snowflake account; ``url`` is ``https://<org>-<account>.snowflakecomputing.com``."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.users: dict[str, dict[str, Any]] = {}
        self.user_grants: dict[str, list[dict[str, Any]]] = {}
        self.role_grants: dict[str, list[dict[str, Any]]] = {"PUBLIC": []}
        self.db_role_grants: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.tokens: set[str] = set()
        self.keys: dict[str, Any] = {}  # "ACCOUNT.USER" -> public key
        self.engine_manages_grants = True
        self.page_cap = 0
        self.asynchronous = False
        self.statements: list[dict[str, Any]] = []
        self._results: dict[str, list[Any]] = {}
        self._ids = itertools.count(1)
        self.add("GET", r"/api/v2/users", self._list_users)
        self.add("GET", rf"/api/v2/users/{NAME}", self._user)
        self.add("GET", rf"/api/v2/users/{NAME}/grants", self._grants_to_user)
        self.add("GET", rf"/api/v2/roles/{NAME}/grants", self._grants_to_role)
        self.add(
            "GET",
            rf"/api/v2/databases/(?P<db>[^/]+)/database-roles/{NAME}/grants",
            self._grants_to_db_role,
        )
        self.add("GET", r"/api/v2/results/(?P<handler>[^/?]+)", self._result)
        self.add("POST", r"/api/v2/statements/?", self._statement)

    # --- state -------------------------------------------------------------------------
    def add_user(
        self,
        name: str,
        *roles: str,
        email: str | None = None,
        login_name: str | None = None,
        default_role: str | None = None,
        secondary: str | None = "ALL",
        disabled: bool = False,
    ) -> dict[str, Any]:
        user: dict[str, Any] = {
            "name": name,
            "login_name": login_name or name,
            "email": email,
            "disabled": disabled,
            "default_role": default_role,
            "type": "PERSON",
        }
        if secondary is not None:
            user["default_secondary_roles"] = secondary
        self.users[fold(name)] = user
        self.user_grants[fold(name)] = [grant("ROLE", r, privileges=()) for r in roles]
        return user

    def role(self, name: str, *rows: dict[str, Any]) -> None:
        self.role_grants.setdefault(fold(name), []).extend(rows)

    def db_role(self, db: str, name: str, *rows: dict[str, Any]) -> None:
        self.db_role_grants.setdefault((fold(db), fold(name)), []).extend(rows)

    def key_pair(self, account: str, user: str, public_key: Any) -> None:
        self.keys[f"{account.upper()}.{user.upper()}"] = public_key

    # --- the wire ----------------------------------------------------------------------
    def _caller(self, request: Request) -> Reply | None:
        header = request.headers.get("authorization", "")
        kind = request.headers.get("x-snowflake-authorization-token-type", "")
        token = header[7:] if header.startswith("Bearer ") else ""
        if kind in ("OAUTH", "PROGRAMMATIC_ACCESS_TOKEN") and token in self.tokens:
            return None
        if kind == "KEYPAIR_JWT" and self._valid_jwt(token):
            return None
        return error(401, "390303", "Invalid OAuth access token. ")

    def _valid_jwt(self, token: str) -> bool:
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            head, body, sig = token.split(".")
            claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            key = self.keys[claims["sub"]]
            der = key.public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            fp = base64.b64encode(hashlib.sha256(der).digest()).decode()
            if claims["iss"] != f"{claims['sub']}.SHA256:{fp}" or claims["exp"] < time.time():
                return False
            signature = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
            key.verify(signature, f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except Exception:
            return False
        return True

    def _paged(self, rows: list[Any]) -> Reply:
        if not self.page_cap or len(rows) <= self.page_cap:
            pages = [rows]
        else:
            pages = [rows[i : i + self.page_cap] for i in range(0, len(rows), self.page_cap)]
        handler = f"01b0-{next(self._ids)}"
        self._results[handler] = pages
        if self.asynchronous:
            self._results[handler + "-async"] = pages
            return Reply(
                202,
                {
                    "code": "392604",
                    "message": "Request execution in progress.",
                    "resultHandler": handler,
                },
            )
        return self._page(handler, 0)

    def _page(self, handler: str, n: int) -> Reply:
        pages = self._results[handler]
        headers = {}
        if n + 1 < len(pages):
            headers["Link"] = (
                f'</api/v2/results/{handler}?page=0>; rel="first",'
                f'</api/v2/results/{handler}?page={n + 1}>; rel="next"'
            )
        return Reply(200, pages[n], headers)

    def _result(self, request: Request) -> Reply:
        denied = self._caller(request)
        if denied is not None:
            return denied
        handler = request.params["handler"]
        if handler not in self._results:
            return error(404, "390400", "Result not found.")
        return self._page(handler, int(request.arg("page") or 0))

    # --- handlers ----------------------------------------------------------------------
    def _list_users(self, request: Request) -> Reply:
        denied = self._caller(request)
        if denied is not None:
            return denied
        if not self.engine_manages_grants:
            return Reply(200, [])
        rows = sorted(self.users.values(), key=lambda u: fold(u["name"]))
        after = request.arg("fromName")
        if after is not None:
            first = next((i for i, u in enumerate(rows) if u["name"].startswith(after)), None)
            rows = rows[first + 1 :] if first is not None else []
        rows = rows[: int(request.arg("showLimit") or 10000)]
        return Reply(200, rows)

    def _user(self, request: Request) -> Reply:
        denied = self._caller(request) or self._privileged()
        if denied is not None:
            return denied
        user = self.users.get(fold(unquote(request.params["name"])))
        if user is None:
            return error(404, "002003", "User does not exist or not authorized.")
        return Reply(200, user)

    def _privileged(self) -> Reply | None:
        if self.engine_manages_grants:
            return None
        return error(403, "003001", "Insufficient privileges to operate on this object.")

    def _grants_to_user(self, request: Request) -> Reply:
        denied = self._caller(request) or self._privileged()
        if denied is not None:
            return denied
        rows = self.user_grants.get(fold(unquote(request.params["name"])))
        if rows is None:
            return error(404, "002003", "User does not exist or not authorized.")
        return self._paged(rows)

    def _grants_to_role(self, request: Request) -> Reply:
        denied = self._caller(request) or self._privileged()
        if denied is not None:
            return denied
        rows = self.role_grants.get(fold(unquote(request.params["name"])))
        if rows is None:
            return error(404, "002003", "Role does not exist or not authorized.")
        return self._paged(rows)

    def _grants_to_db_role(self, request: Request) -> Reply:
        denied = self._caller(request) or self._privileged()
        if denied is not None:
            return denied
        key = (fold(unquote(request.params["db"])), fold(unquote(request.params["name"])))
        rows = self.db_role_grants.get(key)
        if rows is None:
            return error(404, "002003", "Database role does not exist or not authorized.")
        return self._paged(rows)

    def _statement(self, request: Request) -> Reply:
        denied = self._caller(request)
        if denied is not None:
            return denied
        body = request.json()
        self.statements.append(body)
        handle = f"01b1-{next(self._ids)}"
        return Reply(
            200,
            {
                "resultSetMetaData": {
                    "numRows": 1,
                    "format": "jsonv2",
                    "partitionInfo": [{"rowCount": 1, "uncompressedSize": 8}],
                    "rowType": [{"name": "COUNT(*)", "type": "fixed", "nullable": False}],
                },
                "data": [["42"]],
                "code": "090001",
                "statementStatusUrl": f"/api/v2/statements/{handle}",
                "requestId": "req-1",
                "sqlState": "00000",
                "statementHandle": handle,
                "message": "Statement executed successfully.",
                "createdOn": 1764547200000,
            },
        )


def populate(fake: FakeSnowflake) -> FakeSnowflake:
    """An account: SALES.PUBLIC.ORDERS read by ANALYST (Dana's default role, and Frank's
    through a secondary role), owned by SALES_OWNER (Erin), warehouse WH; Gail is disabled."""
    fake.role(
        "ANALYST",
        grant("DATABASE", "SALES"),
        grant("SCHEMA", "SALES", "PUBLIC"),
        grant("TABLE", "SALES", "PUBLIC", "ORDERS", privileges=("SELECT",)),
        grant("WAREHOUSE", "WH"),
    )
    fake.role(
        "SALES_OWNER",
        grant("ROLE", "ANALYST"),
        grant("DATABASE", "SALES", privileges=("OWNERSHIP",)),
        grant("SCHEMA", "SALES", "PUBLIC", privileges=("OWNERSHIP",)),
        grant("TABLE", "SALES", "PUBLIC", "ORDERS", privileges=("OWNERSHIP",)),
        grant("ACCOUNT", "ACME", privileges=("CREATE DATABASE",)),
    )
    fake.role("LOADER", grant("DATABASE ROLE", "SALES", "WRITER"))
    fake.db_role(
        "SALES",
        "WRITER",
        grant("DATABASE", "SALES"),
        grant("SCHEMA", "SALES", "PUBLIC"),
        grant("TABLE", "SALES", "PUBLIC", "ORDERS", privileges=("INSERT",)),
    )
    fake.role("ENGINE", grant("ACCOUNT", "ACME", privileges=("MANAGE GRANTS",)))
    fake.role("PUBLIC", grant("DATABASE ROLE", "SNOWFLAKE", "CORTEX_USER"))
    fake.db_role("SNOWFLAKE", "CORTEX_USER")
    fake.add_user("DANA", "ANALYST", email="dana@example.com", default_role="ANALYST")
    fake.add_user("ERIN", "SALES_OWNER", email="erin@example.com", default_role="SALES_OWNER")
    fake.add_user("FRANK", "LOADER", "ANALYST", email="frank@example.com", default_role="LOADER")
    fake.add_user(
        '"gail@example.com"',
        "ANALYST",
        email="gail@example.com",
        default_role="ANALYST",
        disabled=True,
    )
    fake.add_user("TOOLPASS_ENGINE", "ENGINE", default_role="ENGINE")
    fake.tokens.add("sf-engine-token")
    return fake
