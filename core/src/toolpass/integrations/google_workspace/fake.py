"""A fake Google Workspace on 127.0.0.1, from the documented request and response shapes.

Google's token endpoint (``fakes.gcp.FakeGoogle``: a service account's JWT, ``sub`` for
domain-wide delegation), and, each answering as the token's ``sub``:

- Admin SDK Directory: ``users.get`` (``/admin/directory/v1/users/{userKey}``, by primary
  email, alias or id), ``users.list``, ``members.hasMember``, ``roleAssignments.list``
  (``userKey``, ``includeIndirectRoleAssignments``: assignments through groups too) and
  ``roles.get``; only for the admin ``sub``;
- Drive v3 ``files.get?fields=capabilities`` and ``drives.get`` as the ``sub`` (404 for a
  file they cannot see), ``files.delete``;
- Calendar v3 ``calendarList.get`` as the ``sub``;
- Gmail v1 ``users.settings.delegates.list`` of the ``sub``'s mailbox.

Errors are Google's ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from fakes.gcp import FakeGoogle
from fakes.server import Reply, Request

ADMIN = "admin@example.com"


def _error(code: int, message: str, status: str) -> Reply:
    return Reply(code, {"error": {"code": code, "message": message, "status": status}})


class FakeWorkspace(FakeGoogle):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.users: dict[str, dict[str, Any]] = {}  # primary email -> user resource
        self.groups: dict[str, set[str]] = {}  # group email -> member emails (or groups)
        self.roles: dict[str, dict[str, Any]] = {}  # role id -> role resource
        self.assignments: list[dict[str, Any]] = []  # {roleId, assignedTo, scopeType, condition?}
        self.files: dict[str, dict[str, dict[str, bool]]] = {}  # file id -> user -> caps
        self.drives: dict[str, dict[str, dict[str, bool]]] = {}
        self.calendars: dict[str, dict[str, str]] = {}  # calendar id -> user -> accessRole
        self.delegates: dict[str, list[dict[str, str]]] = {}  # mailbox -> delegates
        d = r"/admin/directory/v1"
        self.add("GET", rf"{d}/users", self._list_users)
        self.add("GET", rf"{d}/users/(?P<key>[^/]+)", self._user)
        self.add("GET", rf"{d}/groups/(?P<g>[^/]+)/hasMember/(?P<m>[^/]+)", self._has_member)
        self.add("GET", rf"{d}/customer/(?P<c>[^/]+)/roleassignments", self._assignments)
        self.add("GET", rf"{d}/customer/(?P<c>[^/]+)/roles/(?P<id>[^/]+)", self._role)
        self.add("GET", r"/drive/v3/files", self._list_files)
        self.add("GET", r"/drive/v3/files/(?P<id>[^/]+)", self._file)
        self.add("DELETE", r"/drive/v3/files/(?P<id>[^/]+)", self._delete_file)
        self.add("GET", r"/drive/v3/drives/(?P<id>[^/]+)", self._drive)
        self.add("GET", r"/calendar/v3/users/me/calendarList/(?P<id>[^/]+)", self._calendar)
        self.add("GET", r"/gmail/v1/users/me/settings/delegates", self._delegates)

    def add_user(self, email: str, **fields: Any) -> None:
        self.users[email] = {
            "kind": "admin#directory#user",
            "id": str(100000 + len(self.users)),
            "primaryEmail": email,
            "suspended": False,
            "isAdmin": False,
            **fields,
        }

    def _who(self, request: Request) -> str | None:
        caller = self.caller(request)
        return None if caller is None else caller.get("sub")

    def _unauthenticated(self) -> Reply:
        return _error(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED")

    def _find(self, key: str) -> dict[str, Any] | None:
        key = unquote(key).lower()
        for user in self.users.values():
            names = [user["primaryEmail"], *user.get("aliases", []), user["id"]]
            if key in [n.lower() for n in names]:
                return user
        return None

    def _admin_only(self, request: Request) -> Reply | None:
        who = self._who(request)
        if self.caller(request) is None:
            return self._unauthenticated()
        if who != ADMIN:
            return _error(403, "Not Authorized to access this resource/api", "PERMISSION_DENIED")
        return None

    def _list_users(self, request: Request) -> Reply:
        refused = self._admin_only(request)
        if refused:
            return refused
        return Reply(200, {"kind": "admin#directory#users", "users": list(self.users.values())[:1]})

    def _user(self, request: Request) -> Reply:
        refused = self._admin_only(request)
        if refused:
            return refused
        user = self._find(request.params["key"])
        if user is None:
            return _error(404, "Resource Not Found: userKey", "NOT_FOUND")
        return Reply(200, user)

    def _in(self, group: str, member: str, seen: frozenset[str] = frozenset()) -> bool:
        members = self.groups.get(group, set())
        if member in members:
            return True
        return any(
            self._in(g, member, seen | {group})
            for g in members
            if g in self.groups and g not in seen
        )

    def _has_member(self, request: Request) -> Reply:
        refused = self._admin_only(request)
        if refused:
            return refused
        group, member = unquote(request.params["g"]), unquote(request.params["m"])
        if group not in self.groups:
            return _error(404, "Resource Not Found: groupKey", "NOT_FOUND")
        return Reply(200, {"isMember": self._in(group, member)})

    def _assignments(self, request: Request) -> Reply:
        refused = self._admin_only(request)
        if refused:
            return refused
        user = self._find(request.arg("userKey") or "")
        indirect = request.arg("includeIndirectRoleAssignments") == "true"
        items = []
        for a in self.assignments:
            direct = user is not None and a["assignedTo"] == user["id"]
            through = (
                indirect and user is not None and self._in(a["assignedTo"], user["primaryEmail"])
            )
            if direct or through:
                items.append({"kind": "admin#directory#roleAssignment", **a})
        return Reply(200, {"kind": "admin#directory#roleAssignments", "items": items})

    def _role(self, request: Request) -> Reply:
        refused = self._admin_only(request)
        if refused:
            return refused
        role = self.roles.get(request.params["id"])
        if role is None:
            return _error(404, "Resource Not Found: roleId", "NOT_FOUND")
        return Reply(200, {"kind": "admin#directory#role", "roleId": request.params["id"], **role})

    def _capabilities(
        self, request: Request, table: dict[str, dict[str, dict[str, bool]]]
    ) -> Reply:
        if self.caller(request) is None:
            return self._unauthenticated()
        caps = table.get(request.params["id"], {}).get(self._who(request) or "")
        if caps is None:
            return _error(404, f"File not found: {request.params['id']}.", "NOT_FOUND")
        return Reply(200, {"id": request.params["id"], "capabilities": caps})

    def _file(self, request: Request) -> Reply:
        return self._capabilities(request, self.files)

    def _drive(self, request: Request) -> Reply:
        return self._capabilities(request, self.drives)

    def _list_files(self, request: Request) -> Reply:
        """files.list: the files the sender sees (a delegated user's, or every file)."""
        if self.caller(request) is None:
            return self._unauthenticated()
        who = self._who(request)
        seen = [f for f, users in sorted(self.files.items()) if who is None or who in users]
        return Reply(200, {"kind": "drive#fileList", "files": [{"id": f} for f in seen]})

    def _delete_file(self, request: Request) -> Reply:
        if self.caller(request) is None:
            return self._unauthenticated()
        self.files.pop(request.params["id"], None)
        return Reply(204, None)

    def _calendar(self, request: Request) -> Reply:
        if self.caller(request) is None:
            return self._unauthenticated()
        role = self.calendars.get(unquote(request.params["id"]), {}).get(self._who(request) or "")
        if role is None:
            return _error(404, "Not Found", "NOT_FOUND")
        return Reply(
            200,
            {"kind": "calendar#calendarListEntry", "id": request.params["id"], "accessRole": role},
        )

    def _delegates(self, request: Request) -> Reply:
        if self.caller(request) is None:
            return self._unauthenticated()
        return Reply(200, {"delegates": self.delegates.get(self._who(request) or "", [])})


def populate(fake: FakeWorkspace) -> FakeWorkspace:
    fake.add_user(ADMIN)
    fake.add_user("alice@example.com", aliases=["al@example.com"])
    fake.add_user("bob@example.com")
    fake.add_user("carol@example.com", suspended=True)
    fake.add_user("root@example.com", isAdmin=True)
    fake.add_user("helpdesk@example.com")
    fake.files["doc1"] = {
        "alice@example.com": {
            "canEdit": True,
            "canModifyContent": True,
            "canDelete": True,
            "canShare": True,
            "canDownload": True,
        },
        "bob@example.com": {
            "canEdit": False,
            "canDelete": False,
            "canShare": False,
            "canDownload": True,
        },
    }
    # a file under a read-only content restriction: alice still edits its sharing, not its content
    fake.files["locked1"] = {
        "alice@example.com": {"canEdit": True, "canModifyContent": False, "canShare": True}
    }
    fake.drives["drv1"] = {"alice@example.com": {"canManageMembers": True, "canDeleteDrive": False}}
    fake.calendars["team@group.calendar.google.com"] = {
        "alice@example.com": "writer",
        "bob@example.com": "reader",
    }
    fake.delegates["bob@example.com"] = [
        {"delegateEmail": "alice@example.com", "verificationStatus": "accepted"}
    ]
    fake.groups["eng@example.com"] = {"alice@example.com", "sub@example.com"}
    fake.groups["sub@example.com"] = {"bob@example.com"}
    fake.groups["helpdesk-admins@example.com"] = {"helpdesk@example.com"}
    fake.roles["r-users"] = {
        "roleName": "User manager",
        "rolePrivileges": [
            {"privilegeName": "USERS_RETRIEVE", "serviceId": "00haapch16h1ysv"},
            {"privilegeName": "USERS_UPDATE", "serviceId": "00haapch16h1ysv"},
        ],
        "isSuperAdminRole": False,
    }
    fake.roles["r-groups"] = {
        "roleName": "Groups admin",
        "rolePrivileges": [{"privilegeName": "GROUPS_ALL", "serviceId": "00haapch16h1ysv"}],
        "isSuperAdminRole": False,
    }
    fake.assignments.append(
        {
            "roleId": "r-users",
            "assignedTo": fake.users["alice@example.com"]["id"],
            "scopeType": "CUSTOMER",
        }
    )
    fake.assignments.append(
        {"roleId": "r-groups", "assignedTo": "helpdesk-admins@example.com", "scopeType": "CUSTOMER"}
    )
    fake.assignments.append(
        {
            "roleId": "r-users",
            "assignedTo": fake.users["bob@example.com"]["id"],
            "scopeType": "ORG_UNIT",
            "orgUnitId": "ou1",
        }
    )
    return fake
