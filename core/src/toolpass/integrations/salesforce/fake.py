"""A fake Salesforce org on 127.0.0.1.

It speaks the documented shapes of the REST API (v XX.X):

- ``POST /services/oauth2/token`` (client credentials, a form): ``access_token``,
  ``instance_url``, ``token_type``; ``GET /services/oauth2/userinfo``;
- ``GET /services/data/vXX.X/query?q=`` and ``/query/`` (as simple-salesforce asks):
  ``{"totalSize", "done", "records": [{"attributes": {...}, ...}], "nextRecordsUrl"}``, pages
  of ``page_size`` followed at ``/query/<locator>``; the SOQL it understands is what the
  integration and the tests send: ``User`` by Id/Email/Username/FederationIdentifier,
  ``UserLogin`` (``IsFrozen``) for one user (needs ``manage_users`` for the caller, else 400
  ``INVALID_TYPE``), ``UserRecordAccess`` for one user and record, ``ObjectPermissions``
  and ``PermissionSet`` through ``PermissionSetAssignment``, ``PermissionSetAssignment
  LIMIT 1``, and ``SELECT ... FROM <SObject>`` over the fake's records; anything else is 400
  ``MALFORMED_QUERY``;
- ``GET/PATCH/DELETE /services/data/vXX.X/sobjects/<SObject>/<Id>``.

Errors are Salesforce's list of ``{"message", "errorCode"}``; a bad token is 401
``INVALID_SESSION_ID``. Reading ``PermissionSetAssignment`` needs ``view_setup`` for the
caller (else 400 ``INVALID_TYPE``, as Salesforce answers for an object the user cannot see).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from fakes.server import FakeServer, Reply, Request

DATA = r"/services/data/(?P<v>v[0-9]{2}\.[0-9])"
ORG_ID = "00D000000000001EAA"
LEVELS = ("None", "Read", "Edit", "Delete", "Transfer", "All")
OBJECT_FIELDS = (
    "PermissionsRead",
    "PermissionsCreate",
    "PermissionsEdit",
    "PermissionsDelete",
    "PermissionsViewAllRecords",
    "PermissionsModifyAllRecords",
)


def errors(code: str, message: str) -> list[dict[str, Any]]:
    return [{"message": message, "errorCode": code}]


@dataclass
class User:
    id: str
    email: str
    username: str
    federation: str | None = None
    active: bool = True
    frozen: bool = False
    view_setup: bool = False
    manage_users: bool = False
    permission_sets: list[str] = field(default_factory=list)


@dataclass
class PermissionSet:
    id: str
    name: str
    objects: dict[str, set[str]] = field(default_factory=dict)  # SObject -> fields true
    modify_all_data: bool = False


class FakeSalesforce(FakeServer):
    """A Salesforce org; ``url`` is its My Domain."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.users: dict[str, User] = {}
        self.permission_sets: dict[str, PermissionSet] = {}
        self.records: dict[str, dict[str, Any]] = {}  # id -> fields (with "type")
        self.access: dict[tuple[str, str], str] = {}  # (user, record) -> MaxAccessLevel
        self.tokens: dict[str, str] = {}  # token -> user id
        self.clients: dict[str, tuple[str, str]] = {}  # client id -> (secret, run-as user)
        self.page_size = 2000
        self._cursors: dict[str, list[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._install()

    # --- state -------------------------------------------------------------------------
    def add_user(self, id: str, email: str, **kw: Any) -> User:
        user = User(id, email, kw.pop("username", email), **kw)
        self.users[id] = user
        profile = self.add_permission_set(f"0PS{id[3:]}P", f"Profile of {email}")
        user.permission_sets.append(profile.id)
        return user

    def add_permission_set(self, id: str, name: str) -> PermissionSet:
        self.permission_sets[id] = PermissionSet(id, name)
        return self.permission_sets[id]

    def grant_object(self, user: str, sobject: str, *fields: str, via: str = "") -> None:
        """Give ``user`` object permissions (``Read``, ``Edit``, ...) through its profile, or
        through the permission set ``via`` (assigned to the user)."""
        ps_id = via or self.users[user].permission_sets[0]
        if ps_id not in self.permission_sets:
            self.add_permission_set(ps_id, ps_id)
        if ps_id not in self.users[user].permission_sets:
            self.users[user].permission_sets.append(ps_id)
        held = self.permission_sets[ps_id].objects.setdefault(sobject, set())
        held.update(f if f.startswith("Permissions") else f"Permissions{f}" for f in fields)

    def add_record(self, id: str, sobject: str, **values: Any) -> None:
        self.records[id] = {"type": sobject, "Id": id, **values}

    def share(self, user: str, record: str, level: str) -> None:
        self.access[(user, record)] = level

    def add_token(self, token: str, user: str) -> None:
        self.tokens[token] = user

    # --- helpers -----------------------------------------------------------------------
    def _caller(self, request: Request) -> str | Reply:
        header = request.headers.get("authorization", "")
        user = self.tokens.get(header[7:]) if header.startswith("Bearer ") else None
        if user is None:
            return Reply(401, errors("INVALID_SESSION_ID", "Session expired or invalid"))
        return user

    def _record(self, kind: str, version: str, data: dict[str, Any]) -> dict[str, Any]:
        ident = data.get("Id") or data.get("RecordId") or f"x{next(self._ids)}"
        url = f"/services/data/{version}/sobjects/{kind}/{ident}"
        return {"attributes": {"type": kind, "url": url}, **data}

    def _answer(self, rows: list[dict[str, Any]], version: str) -> dict[str, Any]:
        first, rest = rows[: self.page_size], rows[self.page_size :]
        answer: dict[str, Any] = {"totalSize": len(rows), "done": not rest, "records": first}
        if rest:
            locator = f"01g{next(self._ids):015d}-{self.page_size}"
            self._cursors[locator] = rest
            answer["nextRecordsUrl"] = f"/services/data/{version}/query/{locator}"
        return answer

    def _assigned(self, user: str) -> list[PermissionSet]:
        found = self.users.get(user)
        return [self.permission_sets[p] for p in found.permission_sets] if found else []

    # --- SOQL ----------------------------------------------------------------------------
    def soql(self, q: str, caller: str, version: str) -> list[dict[str, Any]] | Reply:
        q = " ".join(q.split())
        lit = r"'((?:[^'\\]|\\.)*)'"
        unq = lambda s: re.sub(r"\\(.)", r"\1", s)  # noqa: E731
        assigned = (
            r"\(SELECT PermissionSetId FROM PermissionSetAssignment WHERE AssigneeId = "
            + lit
            + r"\)"
        )
        caller_user = self.users.get(caller)
        if "PermissionSetAssignment" in q and not (caller_user and caller_user.view_setup):
            return Reply(
                400,
                errors(
                    "INVALID_TYPE",
                    "sObject type 'PermissionSetAssignment' is not supported.",
                ),
            )
        m = re.fullmatch(
            r"SELECT (.+) FROM User WHERE (Id|Email|Username|FederationIdentifier) = " + lit, q
        )
        if m:
            value = unq(m.group(3))
            attr = {"Id": "id", "Email": "email", "Username": "username"}.get(
                m.group(2), "federation"
            )
            rows = []
            for u in self.users.values():
                got = getattr(u, attr)
                hit = got is not None and (
                    got.lower() == value.lower() if attr in ("email", "username") else got == value
                )
                if hit:
                    data = {
                        "Id": u.id,
                        "Email": u.email,
                        "Username": u.username,
                        "FederationIdentifier": u.federation,
                        "IsActive": u.active,
                    }
                    wanted = [f.strip() for f in m.group(1).split(",")]
                    rows.append(self._record("User", version, {k: data[k] for k in wanted}))
            return rows
        m = re.fullmatch(r"SELECT UserId, IsFrozen FROM UserLogin WHERE UserId = " + lit, q)
        if m:
            if not (caller_user and caller_user.manage_users):
                return Reply(
                    400, errors("INVALID_TYPE", "sObject type 'UserLogin' is not supported.")
                )
            found = self.users.get(unq(m.group(1)))
            return (
                [self._record("UserLogin", version, {"UserId": found.id, "IsFrozen": found.frozen})]
                if found
                else []
            )
        m = re.fullmatch(
            r"SELECT (.+) FROM UserRecordAccess WHERE UserId = " + lit + r" AND RecordId = " + lit,
            q,
        )
        if m:
            user, record = unq(m.group(2)), unq(m.group(3))
            if record not in self.records:
                return []
            level = self.access.get((user, record), "None")
            rank = LEVELS.index(level)
            data = {
                "RecordId": record,
                "HasReadAccess": rank >= 1,
                "HasEditAccess": rank >= 2,
                "HasDeleteAccess": rank >= 3,
                "HasTransferAccess": rank >= 4,
                "HasAllAccess": rank >= 5,
                "MaxAccessLevel": level,
            }
            return [{"attributes": {"type": "UserRecordAccess"}, **data}]
        m = re.fullmatch(
            r"SELECT ParentId, (\w+) FROM ObjectPermissions WHERE SobjectType = "
            + lit
            + r" AND ParentId IN "
            + assigned,
            q,
        )
        if m:
            fld, sobject, user = m.group(1), unq(m.group(2)), unq(m.group(3))
            rows = []
            for ps in self._assigned(user):
                held = ps.objects.get(sobject)
                if held is not None:  # Salesforce has a row only where some permission is set
                    rows.append(
                        {
                            "attributes": {"type": "ObjectPermissions"},
                            "ParentId": ps.id,
                            fld: fld in held,
                        }
                    )
            return rows
        m = re.fullmatch(
            r"SELECT Id FROM PermissionSet WHERE PermissionsModifyAllData = true AND Id IN "
            + assigned,
            q,
        )
        if m:
            return [
                self._record("PermissionSet", version, {"Id": ps.id})
                for ps in self._assigned(unq(m.group(1)))
                if ps.modify_all_data
            ]
        if q == "SELECT Id FROM PermissionSetAssignment LIMIT 1":
            return [self._record("PermissionSetAssignment", version, {"Id": "0Pa000000000001AAA"})]
        m = re.fullmatch(r"SELECT ([\w, ]+) FROM (\w+)(?: WHERE Id = " + lit + r")?", q)
        if m:
            wanted = [f.strip() for f in m.group(1).split(",")]
            rows = []
            for rec in self.records.values():
                if rec["type"] == m.group(2) and (m.group(3) is None or rec["Id"] == m.group(3)):
                    rows.append(self._record(rec["type"], version, {k: rec.get(k) for k in wanted}))
            return rows
        return Reply(400, errors("MALFORMED_QUERY", f"unexpected query: {q[:80]}"))

    # --- routes --------------------------------------------------------------------------
    def _install(self) -> None:
        @self.route("POST", "/services/oauth2/token")
        def token(request: Request) -> Reply | dict[str, Any]:
            form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
            if form.get("grant_type") != "client_credentials":
                return Reply(
                    400,
                    {
                        "error": "unsupported_grant_type",
                        "error_description": "grant type not supported",
                    },
                )
            client = self.clients.get(form.get("client_id", ""))
            if client is None or client[0] != form.get("client_secret"):
                return Reply(
                    400,
                    {"error": "invalid_client", "error_description": "invalid client credentials"},
                )
            issued = f"00D!token{next(self._ids)}"
            self.tokens[issued] = client[1]
            return {
                "access_token": issued,
                "instance_url": self.url,
                "id": f"{self.url}/id/{ORG_ID}/{client[1]}",
                "token_type": "Bearer",
                "issued_at": "1700000000000",
                "signature": "sig",
            }

        @self.route("GET", "/services/oauth2/userinfo")
        def userinfo(request: Request) -> Reply | dict[str, Any]:
            caller = self._caller(request)
            if isinstance(caller, Reply):
                return caller
            user = self.users[caller]
            return {
                "sub": f"{self.url}/id/{ORG_ID}/{caller}",
                "user_id": caller,
                "organization_id": ORG_ID,
                "preferred_username": user.username,
                "email": user.email,
                "active": user.active,
            }

        @self.route("GET", DATA + r"/(query|queryAll)/?")
        def query(request: Request) -> Reply | dict[str, Any]:
            caller = self._caller(request)
            if isinstance(caller, Reply):
                return caller
            q = request.arg("q")
            if not q:
                return Reply(400, errors("MALFORMED_QUERY", "q is required"))
            rows = self.soql(q, caller, request.params["v"])
            if isinstance(rows, Reply):
                return rows
            return self._answer(rows, request.params["v"])

        @self.route("GET", DATA + r"/query/(?P<locator>01g[^/]+)")
        def more(request: Request) -> Reply | dict[str, Any]:
            caller = self._caller(request)
            if isinstance(caller, Reply):
                return caller
            rows = self._cursors.pop(request.params["locator"], None)
            if rows is None:
                return Reply(400, errors("INVALID_QUERY_LOCATOR", "invalid query locator"))
            return self._answer(rows, request.params["v"])

        def record(request: Request) -> Reply | dict[str, Any]:
            caller = self._caller(request)
            if isinstance(caller, Reply):
                return caller
            rec = self.records.get(request.params["id"])
            if rec is None or rec["type"] != request.params["sobject"]:
                return Reply(404, errors("NOT_FOUND", "The requested resource does not exist"))
            if request.method == "DELETE":
                del self.records[rec["Id"]]
                return Reply(204, None)
            if request.method == "PATCH":
                rec.update(request.json())
                return Reply(204, None)
            return self._record(
                rec["type"], request.params["v"], {k: v for k, v in rec.items() if k != "type"}
            )

        for method in ("GET", "PATCH", "DELETE"):
            self.add(
                method, DATA + r"/sobjects/(?P<sobject>\w+)/(?P<id>[A-Za-z0-9]{15,18})", record
            )


ENGINE = "005000000000001AAA"
DANA = "005000000000002AAA"
RORY = "005000000000003AAA"
OLGA = "005000000000004AAA"
ACME = "001000000000001AAA"
ENGINE_TOKEN = "00D000000000001!engine-token"


def populate(fake: FakeSalesforce) -> FakeSalesforce:
    """The engine (View Setup, token and a client), Dana (edits Acme), Rory (reads only),
    Olga (inactive)."""
    fake.add_user(ENGINE, "engine@example.com", view_setup=True, manage_users=True)
    fake.add_token(ENGINE_TOKEN, ENGINE)
    fake.clients["client-1"] = ("client-secret", ENGINE)
    fake.add_user(
        DANA, "dana@example.com", username="dana@example.com.prod", federation="dana@example.com"
    )
    fake.add_user(RORY, "rory@example.com", username="rory@example.com.prod")
    fake.add_user(OLGA, "olga@example.com", active=False)
    fake.add_record(ACME, "Account", Name="Acme")
    fake.grant_object(DANA, "Account", "Read", "Create", "Edit")
    fake.grant_object(RORY, "Account", "Read")
    fake.grant_object(OLGA, "Account", "Read", "Edit")
    fake.share(DANA, ACME, "Edit")
    fake.share(RORY, ACME, "Read")
    fake.share(OLGA, ACME, "All")
    return fake
