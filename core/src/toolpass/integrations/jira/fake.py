"""A fake Jira Cloud site and Atlassian API gateway on 127.0.0.1.

It speaks the documented shapes of the Jira Cloud platform REST API (v2 and v3 paths):

- ``GET /rest/api/{2,3}/serverInfo``, ``/myself``, ``/mypermissions?permissions=``;
- ``GET /rest/api/{2,3}/user/search?query=&startAt=&maxResults=``: a JSON array; ``query``
  prefix-matches the words of ``displayName`` and ``emailAddress``; only active users unless
  ``search_inactive``; empty for a caller without *Browse users and groups* (USER_PICKER);
  profile visibility (``hidden_email``) drops ``emailAddress``; pages capped at ``page_cap``;
- ``GET /rest/api/{2,3}/user?accountId=``;
- ``GET /rest/api/{2,3}/issue/{idOrKey}?fields=``, ``GET /rest/api/{2,3}/project/{idOrKey}``:
  404 with an ``errorMessages`` body when missing;
- ``POST /rest/api/{2,3}/permissions/check``: another ``accountId`` needs ADMINISTER (else
  403); invalid ids are ignored; an unknown permission key or account id is 400;
- ``GET /_edge/tenant_info`` (the site's cloud id), ``POST /oauth/token`` (client
  credentials), and every API path again under the gateway prefix ``/ex/jira/{cloudId}``.

Authentication as on Atlassian Cloud: classic API tokens (HTTP basic) work against the site
only, scoped API tokens (HTTP basic) and OAuth access tokens (Bearer) against the gateway only.
401 answers carry a plain-text body, like Jira's.

State is plain data, settable by tests: :meth:`add_user`, :meth:`add_project`,
:meth:`add_issue`, :meth:`grant`, :meth:`grant_global`, :meth:`restrict`.
"""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass
from typing import Any

from fakes.server import FakeServer, Reply, Request

API = r"/rest/api/(?P<v>[23])"
GATEWAY = r"(?P<gw>/ex/jira/(?P<cloud>[A-Za-z0-9-]+))?"

PROJECT_PERMISSIONS = frozenset(
    {
        "ADMINISTER_PROJECTS",
        "BROWSE_PROJECTS",
        "MANAGE_SPRINTS_PERMISSION",
        "SERVICEDESK_AGENT",
        "VIEW_DEV_TOOLS",
        "VIEW_READONLY_WORKFLOW",
        "EDIT_WORKFLOW",
        "EDIT_ISSUE_LAYOUT",
        "ASSIGNABLE_USER",
        "ASSIGN_ISSUES",
        "CLOSE_ISSUES",
        "CREATE_ISSUES",
        "DELETE_ISSUES",
        "EDIT_ISSUES",
        "LINK_ISSUES",
        "MODIFY_REPORTER",
        "MOVE_ISSUES",
        "RESOLVE_ISSUES",
        "SCHEDULE_ISSUES",
        "SET_ISSUE_SECURITY",
        "TRANSITION_ISSUES",
        "MANAGE_WATCHERS",
        "VIEW_VOTERS_AND_WATCHERS",
        "ADD_COMMENTS",
        "DELETE_ALL_COMMENTS",
        "DELETE_OWN_COMMENTS",
        "EDIT_ALL_COMMENTS",
        "EDIT_OWN_COMMENTS",
        "CREATE_ATTACHMENTS",
        "DELETE_ALL_ATTACHMENTS",
        "DELETE_OWN_ATTACHMENTS",
        "DELETE_ALL_WORKLOGS",
        "DELETE_OWN_WORKLOGS",
        "EDIT_ALL_WORKLOGS",
        "EDIT_OWN_WORKLOGS",
        "WORK_ON_ISSUES",
    }
)
GLOBAL_PERMISSIONS = frozenset(
    {
        "ADMINISTER",
        "SYSTEM_ADMIN",
        "USER_PICKER",
        "CREATE_SHARED_OBJECTS",
        "MANAGE_GROUP_FILTER_SUBSCRIPTIONS",
        "BULK_CHANGE",
    }
)


def errors(*messages: str) -> dict[str, Any]:
    """Jira's ErrorCollection body."""
    return {"errorMessages": list(messages), "errors": {}}


@dataclass
class User:
    account_id: str
    email: str
    display_name: str
    active: bool = True
    hidden_email: bool = False
    account_type: str = "atlassian"


@dataclass
class Issue:
    id: str
    key: str
    project: str  # the project key
    summary: str = "An issue"
    #: issue security: when set, only these accounts hold any permission on the issue
    visible_to: set[str] | None = None


@dataclass
class Credential:
    email: str
    account_id: str
    scoped: bool = False


@dataclass
class OAuthClient:
    secret: str
    account_id: str
    lifetime: int = 3600


class FakeJira(FakeServer):
    """Jira Cloud on 127.0.0.1. ``url`` is both the site and the gateway (see docstring)."""

    def __init__(self, *, cloud_id: str = "1324a887-45db-1bf4-1e99-ef0ff456d421", **kw: Any):
        super().__init__(**kw)
        self.cloud_id = cloud_id
        self.users: dict[str, User] = {}
        self.projects: dict[str, str] = {}  # key -> id
        self.issues: dict[str, Issue] = {}  # key -> issue
        self.project_grants: set[tuple[str, str, str]] = set()  # (account, perm, project key)
        self.issue_grants: set[tuple[str, str, str]] = set()  # (account, perm, issue key)
        self.global_grants: set[tuple[str, str]] = set()  # (account, perm)
        self.api_tokens: dict[str, Credential] = {}
        self.oauth_clients: dict[str, OAuthClient] = {}
        self.access_tokens: dict[str, str] = {}  # token -> account id
        self.search_inactive = False
        #: project key -> the id of the issue security scheme it uses
        self.security_schemes: dict[str, str] = {}
        #: the bulk check answers from the permission scheme alone, as if a deactivated
        #: account's groups and roles still held their grants
        self.state_blind = False
        self.page_cap = 100
        self._ids = itertools.count(10000)
        self._tokens = itertools.count(1)
        self._install()

    # --- state -------------------------------------------------------------------------
    def add_user(self, account_id: str, email: str, name: str = "", **kw: Any) -> User:
        user = User(account_id, email, name or email.split("@")[0].title(), **kw)
        self.users[account_id] = user
        return user

    def add_engine(
        self,
        account_id: str = "engine-1",
        email: str = "engine@example.com",
        *,
        token: str = "classic-token",
        scoped_token: str = "scoped-token",
        client_id: str = "client-1",
        client_secret: str = "client-secret",
        admin: bool = True,
        browse_users: bool = True,
    ) -> User:
        """The engine's own account, with its classic and scoped tokens and OAuth client."""
        user = self.add_user(account_id, email, "Toolpass Engine", account_type="app")
        self.api_tokens[token] = Credential(email, account_id)
        self.api_tokens[scoped_token] = Credential(email, account_id, scoped=True)
        self.oauth_clients[client_id] = OAuthClient(client_secret, account_id)
        if admin:
            self.grant_global(account_id, "ADMINISTER")
        if browse_users:
            self.grant_global(account_id, "USER_PICKER")
        return user

    def add_project(self, key: str) -> str:
        self.projects[key] = str(next(self._ids))
        return self.projects[key]

    def add_issue(self, key: str, **kw: Any) -> Issue:
        project = key.rsplit("-", 1)[0]
        if project not in self.projects:
            self.add_project(project)
        issue = Issue(str(next(self._ids)), key, project, **kw)
        self.issues[key] = issue
        return issue

    def grant(self, account: str, *permissions: str, project: str = "", issue: str = "") -> None:
        """Grant project permissions on a whole project or on one issue only."""
        for permission in permissions:
            if issue:
                self.issue_grants.add((account, permission, issue))
            else:
                self.project_grants.add((account, permission, project))

    def grant_global(self, account: str, *permissions: str) -> None:
        for permission in permissions:
            self.global_grants.add((account, permission))

    def restrict(self, issue: str, *accounts: str) -> None:
        """Put ``issue`` under an issue security level only ``accounts`` belong to."""
        self.issues[issue].visible_to = set(accounts)

    # --- semantics -------------------------------------------------------------------
    def holds(self, account: str, permission: str, issue: Issue) -> bool:
        user = self.users.get(account)
        if user is None or not (user.active or self.state_blind):
            return False
        if issue.visible_to is not None and account not in issue.visible_to:
            return False
        return (account, permission, issue.project) in self.project_grants or (
            account,
            permission,
            issue.key,
        ) in self.issue_grants

    def holds_global(self, account: str, permission: str) -> bool:
        user = self.users.get(account)
        return user is not None and user.active and (account, permission) in self.global_grants

    def _user_json(self, user: User, base: str) -> dict[str, Any]:
        data: dict[str, Any] = {
            "self": f"{base}/rest/api/3/user?accountId={user.account_id}",
            "accountId": user.account_id,
            "accountType": user.account_type,
            "displayName": user.display_name,
            "active": user.active,
            "timeZone": "Europe/Berlin",
            "locale": "en_US",
            "avatarUrls": {"48x48": "https://avatar.example/48.png"},
        }
        if not user.hidden_email:
            data["emailAddress"] = user.email
        return data

    def _issue_by(self, ref: str) -> Issue | None:
        if ref in self.issues:
            return self.issues[ref]
        return next((i for i in self.issues.values() if i.id == ref), None)

    def _project_by(self, ref: str) -> tuple[str, str] | None:
        if ref in self.projects:
            return ref, self.projects[ref]
        return next(((k, v) for k, v in self.projects.items() if v == ref), None)

    # --- authentication ----------------------------------------------------------------
    def _caller(self, request: Request) -> str | Reply:
        """The account id making ``request``, or a 401 reply."""
        header = request.headers.get("authorization", "")
        on_gateway = bool(request.params.get("gw"))
        if on_gateway and request.params.get("cloud") != self.cloud_id:
            return Reply(404, errors("Site not found"))
        unauthorized = Reply(
            401,
            b"Client must be authenticated to access this resource.",
            {"Content-Type": "text/plain;charset=UTF-8"},
        )
        if header.startswith("Basic "):
            try:
                email, _, token = base64.b64decode(header[6:]).decode().partition(":")
            except ValueError:
                return unauthorized
            cred = self.api_tokens.get(token)
            if cred is None or cred.email != email or cred.scoped != on_gateway:
                return unauthorized
            return cred.account_id
        if header.startswith("Bearer ") and on_gateway:
            account = self.access_tokens.get(header[7:])
            return account if account is not None else unauthorized
        return unauthorized

    def _base(self, request: Request) -> str:
        return self.url + (request.params.get("gw") or "")

    # --- routes --------------------------------------------------------------------------
    def _install(self) -> None:
        def api(method: str, path: str) -> Any:
            def wrap(handler: Any) -> Any:
                def authed(request: Request) -> Any:
                    caller = self._caller(request)
                    if isinstance(caller, Reply):
                        return caller
                    return handler(request, caller)

                self.add(method, GATEWAY + API + path, authed)
                return handler

            return wrap

        @self.route("GET", "/_edge/tenant_info")
        def tenant_info(request: Request) -> dict[str, Any]:
            return {"cloudId": self.cloud_id}

        @self.route("POST", "/oauth/token")
        def token(request: Request) -> Reply | dict[str, Any]:
            try:
                body = request.json()
            except ValueError:
                return Reply(400, {"error": "invalid_request"})
            client = self.oauth_clients.get(body.get("client_id", ""))
            if body.get("grant_type") != "client_credentials":
                return Reply(400, {"error": "unsupported_grant_type"})
            if client is None or client.secret != body.get("client_secret"):
                return Reply(
                    401,
                    {"error": "access_denied", "error_description": "Unauthorized"},
                )
            issued = f"oauth-token-{next(self._tokens)}"
            self.access_tokens[issued] = client.account_id
            return {
                "access_token": issued,
                "expires_in": client.lifetime,
                "token_type": "Bearer",
                "scope": "read:jira-work read:jira-user",
            }

        @api("GET", "/serverInfo")
        def server_info(request: Request, caller: str) -> dict[str, Any]:
            return {
                "baseUrl": self.url,
                "version": "1001.0.0-SNAPSHOT",
                "versionNumbers": [1001, 0, 0],
                "deploymentType": "Cloud",
                "buildNumber": 100280,
                "serverTitle": "Jira",
                "defaultLocale": {"locale": "en_US"},
            }

        @api("GET", "/myself")
        def myself(request: Request, caller: str) -> dict[str, Any]:
            return self._user_json(self.users[caller], self._base(request))

        @api("GET", "/mypermissions")
        def mypermissions(request: Request, caller: str) -> Reply | dict[str, Any]:
            keys = [k for k in (request.arg("permissions") or "").split(",") if k]
            if not keys:
                return Reply(400, errors("The 'permissions' query parameter is required."))
            result = {}
            for key in keys:
                if key not in GLOBAL_PERMISSIONS | PROJECT_PERMISSIONS:
                    return Reply(404, errors(f"Permission {key} not found."))
                is_global = key in GLOBAL_PERMISSIONS
                have = (
                    self.holds_global(caller, key)
                    if is_global
                    else any(a == caller and p == key for a, p, _ in self.project_grants)
                )
                result[key] = {
                    "id": str(abs(hash(key)) % 1000),
                    "key": key,
                    "name": key.replace("_", " ").title(),
                    "type": "GLOBAL" if is_global else "PROJECT",
                    "description": f"The {key} permission.",
                    "havePermission": have,
                }
            return {"permissions": result}

        @api("GET", "/user/search")
        def user_search(request: Request, caller: str) -> Reply | list[Any]:
            query = (request.arg("query") or "").lower()
            account = request.arg("accountId")
            if not query and not account:
                return Reply(400, errors("The query parameter 'query' is required."))
            try:
                start = int(request.arg("startAt") or 0)
                size = int(request.arg("maxResults") or 50)
            except ValueError:
                return Reply(400, errors("startAt and maxResults must be integers."))
            if not self.holds_global(caller, "USER_PICKER"):
                return []  # documented: no Browse users and groups -> empty results

            def matches(user: User) -> bool:
                if account:
                    return user.account_id == account
                words = [*user.display_name.lower().split(), user.display_name.lower()]
                # the address matches whether or not profile visibility shows it
                return any(w.startswith(query) for w in words) or user.email.lower().startswith(
                    query
                )

            found = [
                u for u in self.users.values() if (u.active or self.search_inactive) and matches(u)
            ][:1000]
            page = found[start : start + min(size, self.page_cap)]
            return [self._user_json(u, self._base(request)) for u in page]

        @api("GET", "/user")
        def user(request: Request, caller: str) -> Reply | dict[str, Any]:
            account = request.arg("accountId")
            if not account:
                return Reply(400, errors("The accountId query parameter needs to be provided."))
            if not self.holds_global(caller, "USER_PICKER"):
                return Reply(403, errors("You do not have the permission to see this user."))
            found = self.users.get(account)
            if found is None:
                return Reply(
                    404,
                    errors("Specified user does not exist or you do not have required permissions"),
                )
            return self._user_json(found, self._base(request))

        @api("GET", "/issuesecurityschemes/project")
        def security_scheme_projects(request: Request, caller: str) -> Reply | dict[str, Any]:
            """Get projects using issue security schemes (Administer Jira)."""
            if not self.holds_global(caller, "ADMINISTER"):
                return Reply(403, errors("You are not authorized to perform this action."))
            wanted = set(request.query.get("projectId") or [])
            values = [
                {"issueSecuritySchemeId": scheme, "projectId": self.projects[key]}
                for key, scheme in sorted(self.security_schemes.items())
                if not wanted or self.projects[key] in wanted
            ]
            size = int(request.arg("maxResults", "50") or 50)
            return {
                "isLast": len(values) <= size,
                "maxResults": size,
                "startAt": 0,
                "total": len(values),
                "values": values[:size],
            }

        @api("GET", r"/issue/(?P<ref>[^/]+)")
        def issue(request: Request, caller: str) -> Reply | dict[str, Any]:
            found = self._issue_by(request.params["ref"])
            if found is None or not self.holds(caller, "BROWSE_PROJECTS", found):
                return Reply(
                    404, errors("Issue does not exist or you do not have permission to see it.")
                )
            base = self._base(request)
            wanted = set((request.arg("fields") or "*all").split(","))
            fields: dict[str, Any] = {}
            if wanted & {"project", "*all", "*navigable"}:
                fields["project"] = {
                    "self": f"{base}/rest/api/3/project/{self.projects[found.project]}",
                    "id": self.projects[found.project],
                    "key": found.project,
                    "name": found.project.title(),
                }
            if wanted & {"summary", "*all", "*navigable"}:
                fields["summary"] = found.summary
            return {
                "expand": "renderedFields,names,schema,operations,editmeta,changelog",
                "id": found.id,
                "self": f"{base}/rest/api/{request.params['v']}/issue/{found.id}",
                "key": found.key,
                "fields": fields,
            }

        @api("GET", "/project/search")
        def project_search(request: Request, caller: str) -> dict[str, Any]:
            """Every project, as the caller's account sees them (the fake: all)."""
            values = [{"id": pid, "key": key} for key, pid in sorted(self.projects.items())]
            return {"startAt": 0, "maxResults": 50, "total": len(values), "values": values}

        @api("GET", r"/project/(?P<ref>[^/]+)")
        def project(request: Request, caller: str) -> Reply | dict[str, Any]:
            found = self._project_by(request.params["ref"])
            if found is None:
                ref = request.params["ref"]
                return Reply(404, errors(f"No project could be found with key '{ref}'."))
            key, pid = found
            base = self._base(request)
            return {
                "expand": "description,lead,issueTypes,url,projectKeys,permissions,insight",
                "self": f"{base}/rest/api/{request.params['v']}/project/{pid}",
                "id": pid,
                "key": key,
                "name": key.title(),
                "projectTypeKey": "software",
                "simplified": False,
                "style": "classic",
                "isPrivate": False,
            }

        @api("POST", "/permissions/check")
        def permissions_check(request: Request, caller: str) -> Reply | dict[str, Any]:
            try:
                body = request.json()
            except ValueError:
                return Reply(400, errors("Unexpected character in the request body."))
            account = body.get("accountId") or caller
            if account != caller and not self.holds_global(caller, "ADMINISTER"):
                return Reply(
                    403,
                    errors(
                        "You must have the Administer Jira global permission to check "
                        "other users' permissions."
                    ),
                )
            if account not in self.users:
                return Reply(400, errors(f"Invalid account ID: {account}"))
            held_global = []
            for key in body.get("globalPermissions") or []:
                if key is None:
                    continue
                if key not in GLOBAL_PERMISSIONS:
                    return Reply(400, errors(f"Invalid global permission: {key}"))
                if self.holds_global(account, key):
                    held_global.append(key)
            grants = []
            for ask in body.get("projectPermissions") or []:
                keys = [k for k in ask.get("permissions") or [] if k]
                if not keys:
                    return Reply(400, errors("At least one project permission is required."))
                projects = [p for p in ask.get("projects") or [] if p is not None]
                issues = [i for i in ask.get("issues") or [] if i is not None]
                if len(projects) > 1000 or len(issues) > 1000:
                    return Reply(400, errors("Too many projects or issues."))
                for key in keys:
                    if key not in PROJECT_PERMISSIONS:
                        return Reply(400, errors(f"Invalid project permission: {key}"))
                    ok_projects = [
                        int(pid)
                        for pid in projects
                        if (found := self._project_by(str(pid))) is not None
                        and (account, key, found[0]) in self.project_grants
                        and (self.users[account].active or self.state_blind)
                    ]
                    ok_issues = [
                        int(iid)
                        for iid in issues
                        if (hit := self._issue_by(str(iid))) is not None
                        and self.holds(account, key, hit)
                    ]
                    grants.append({"permission": key, "issues": ok_issues, "projects": ok_projects})
            return {"globalPermissions": held_global, "projectPermissions": grants}


def populate(fake: FakeJira) -> FakeJira:
    """The standard scene the tests use.

    - the engine (engine@example.com): Administer Jira, Browse users, browses PAY;
    - dana (dana@example.com): browses and edits PAY, may delete nothing;
    - erin (erin@example.com): administers PAY (every project permission);
    - olga (olga@example.com): deactivated;
    - PAY-123 (ordinary), PAY-7 (security level: erin only), PAY-9 (dana may delete it);
      PAY uses an issue security scheme; OPS (dana browses it) uses none.
    """
    fake.add_engine()
    fake.add_user("acc-dana", "dana@example.com", "Dana Scully")
    fake.add_user("acc-erin", "Erin@Example.com", "Erin Hale")
    fake.add_user("acc-olga", "olga@example.com", "Olga Petrova", active=False)
    fake.add_project("PAY")
    fake.grant("engine-1", "BROWSE_PROJECTS", project="PAY")
    fake.add_issue("PAY-123")
    fake.add_issue("PAY-7")
    fake.add_issue("PAY-9")
    fake.restrict("PAY-7", "acc-erin")
    fake.grant("acc-dana", "BROWSE_PROJECTS", "EDIT_ISSUES", "ADD_COMMENTS", project="PAY")
    fake.grant("acc-dana", "DELETE_ISSUES", issue="PAY-9")
    fake.grant("acc-erin", *PROJECT_PERMISSIONS, project="PAY")
    fake.grant("acc-olga", *PROJECT_PERMISSIONS, project="PAY")
    fake.grant_global("acc-erin", "ADMINISTER")
    fake.security_schemes["PAY"] = "10100"  # PAY-7's level is one of its scheme's
    fake.add_project("OPS")  # no issue security scheme
    fake.grant("acc-dana", "BROWSE_PROJECTS", project="OPS")
    return fake
