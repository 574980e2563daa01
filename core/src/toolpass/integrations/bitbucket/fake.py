"""A fake Bitbucket Cloud API (``/2.0``) on 127.0.0.1.

It speaks the documented shapes of the Bitbucket Cloud REST API 2.0:

- ``GET /2.0/user``: the caller's account (``account_id``, ``uuid``, ``display_name``);
- ``GET /2.0/users/{selected_user}`` (account id or ``{uuid}``): 404 when unknown;
- ``GET /2.0/repositories/{workspace}/{repo_slug}``: the repository (``is_private``, ...);
- ``GET /2.0/workspaces/{workspace}/permissions/repositories/{repo_slug}``: paged
  ``repository_permission`` objects (effective ``permission`` per user); only for a caller with
  admin on the repository (else 403), 404 for an unknown repository;
- ``GET /2.0/workspaces/{workspace}/permissions``: paged ``workspace_membership`` objects
  (``permission``: owner, collaborator, member); workspace owners only (else 403);
- ``POST /2.0/repositories/{workspace}/{repo_slug}/pullrequests``: creates a pull request;
  ``GET .../pullrequests/{id}`` (``destination.branch.name``), ``POST .../pullrequests/{id}/merge``;
- ``GET .../branch-restrictions`` (paged ``branchrestriction`` objects: ``kind``,
  ``branch_match_kind`` glob or branching_model, ``pattern`` / ``branch_type``, exempt
  ``users`` and ``groups``; repository admins only, else 403),
  ``GET .../effective-branching-model``, ``DELETE .../refs/branches/{name}``;
- users carry ``account_status`` (``active``, ``inactive``, ``closed``);
- ``POST /site/oauth2/access_token``: client credentials (HTTP basic client id and secret).

Pages hold ``pagelen`` values (at most ``page_cap``) with ``page``, ``size`` and ``next`` (a
full URL on the fake's own origin). Errors carry Bitbucket's body
``{"type": "error", "error": {"message": ...}}``; a request without a valid credential is 401.

State is plain data: :meth:`add_user`, :meth:`add_repo`, :meth:`grant`, :meth:`member`,
:meth:`restrict` (a branch restriction), :meth:`basic` / :meth:`bearer` / :meth:`oauth_client`
credentials.
"""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

from fakes.server import FakeServer, Reply, Request

API = "/2.0"
SLUG = r"[^/]+"


def error(status: int, message: str) -> Reply:
    return Reply(status, {"type": "error", "error": {"message": message}})


@dataclass
class User:
    account_id: str
    uuid: str
    display_name: str
    account_status: str = "active"

    def json(self) -> dict[str, Any]:
        return {
            "type": "user",
            "account_id": self.account_id,
            "uuid": self.uuid,
            "display_name": self.display_name,
            "account_status": self.account_status,
            "nickname": self.display_name.split()[0].lower(),
        }


@dataclass
class Repo:
    workspace: str
    slug: str
    private: bool = True
    #: account id -> effective permission (read, write, admin)
    grants: dict[str, str] = field(default_factory=dict)
    main: str = "main"
    #: branch restrictions as Bitbucket answers them (kind, branch_match_kind, pattern, ...)
    restrictions: list[dict[str, Any]] = field(default_factory=list)
    #: pull request id -> destination branch
    pulls: dict[int, str] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)  # the effective branching model
    branches: set[str] = field(default_factory=lambda: {"main"})


class FakeBitbucket(FakeServer):
    """Bitbucket Cloud on 127.0.0.1; ``url`` is the API's origin (the client adds ``/2.0``)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.users: dict[str, User] = {}
        self.repos: dict[tuple[str, str], Repo] = {}
        self.members: dict[str, dict[str, str]] = {}  # workspace -> account -> role
        self.credentials: dict[str, str] = {}  # Authorization header value -> account id
        self.clients: dict[str, tuple[str, str]] = {}  # client id -> (secret, account id)
        self.page_cap = 100
        self.pulls: list[dict[str, Any]] = []
        self._uuids = itertools.count(1)
        self._tokens = itertools.count(1)
        self.add(
            "GET",
            rf"{API}/workspaces/(?P<ws>{SLUG})/permissions/repositories/(?P<repo>{SLUG})",
            self._repo_permissions,
        )
        self.add("GET", rf"{API}/workspaces/(?P<ws>{SLUG})/permissions", self._ws_permissions)
        self.add("GET", rf"{API}/repositories/(?P<ws>{SLUG})/(?P<repo>{SLUG})", self._repo)
        self.add(
            "POST",
            rf"{API}/repositories/(?P<ws>{SLUG})/(?P<repo>{SLUG})/pullrequests",
            self._create_pull,
        )
        repo = rf"{API}/repositories/(?P<ws>{SLUG})/(?P<repo>{SLUG})"
        self.add("GET", rf"{repo}/branch-restrictions", self._restrictions)
        self.add("GET", rf"{repo}/effective-branching-model", self._model)
        self.add("GET", rf"{repo}/pullrequests/(?P<id>\d+)", self._pull)
        self.add("POST", rf"{repo}/pullrequests/(?P<id>\d+)/merge", self._merge)
        self.add("DELETE", rf"{repo}/refs/branches/(?P<name>.+)", self._delete_branch)
        self.add("GET", rf"{API}/users/(?P<user>{SLUG})", self._user)
        self.add("GET", rf"{API}/user", self._me)
        self.add("POST", r"/site/oauth2/access_token", self._token)

    # --- state -------------------------------------------------------------------------
    def add_user(self, account_id: str, name: str) -> User:
        user = User(account_id, f"{{{next(self._uuids):08x}-0000-4000-8000-{0:012x}}}", name)
        self.users[account_id] = user
        return user

    def add_repo(self, workspace: str, slug: str, *, private: bool = True) -> Repo:
        repo = Repo(workspace, slug, private)
        self.repos[(workspace, slug)] = repo
        self.members.setdefault(workspace, {})
        return repo

    def grant(self, workspace: str, slug: str, account: str, permission: str) -> None:
        self.repos[(workspace, slug)].grants[account] = permission

    def member(self, workspace: str, account: str, role: str = "member") -> None:
        self.members.setdefault(workspace, {})[account] = role

    def basic(self, username: str, secret: str, account: str) -> None:
        pair = base64.b64encode(f"{username}:{secret}".encode()).decode()
        self.credentials[f"Basic {pair}"] = account

    def bearer(self, token: str, account: str) -> None:
        self.credentials[f"Bearer {token}"] = account

    def oauth_client(self, client_id: str, secret: str, account: str) -> None:
        self.clients[client_id] = (secret, account)

    # --- handlers ----------------------------------------------------------------------
    def _caller(self, request: Request) -> str | None:
        return self.credentials.get(request.headers.get("authorization", ""))

    def _paged(self, request: Request, path: str, values: list[dict[str, Any]]) -> Reply:
        pagelen = min(int(request.arg("pagelen", "10") or 10), self.page_cap)
        page = int(request.arg("page", "1") or 1)
        chunk = values[(page - 1) * pagelen : page * pagelen]
        body: dict[str, Any] = {"pagelen": pagelen, "page": page, "size": len(values)}
        body["values"] = chunk
        if page * pagelen < len(values):
            body["next"] = f"{self.url}{path}?pagelen={pagelen}&page={page + 1}"
        return Reply(200, body)

    def _repo_permissions(self, request: Request) -> Reply:
        caller = self._caller(request)
        if caller is None:
            return error(401, "Unauthorized")
        repo = self.repos.get((request.params["ws"], request.params["repo"]))
        if repo is None:
            return error(404, "Repository not found")
        if repo.grants.get(caller) != "admin":
            return error(403, "You must be an admin to view repository permissions")
        values = [
            {
                "type": "repository_permission",
                "permission": perm,
                "user": self.users[account].json(),
                "repository": {"type": "repository", "full_name": f"{repo.workspace}/{repo.slug}"},
            }
            for account, perm in repo.grants.items()
        ]
        return self._paged(request, request.path, values)

    def _ws_permissions(self, request: Request) -> Reply:
        caller = self._caller(request)
        if caller is None:
            return error(401, "Unauthorized")
        members = self.members.get(request.params["ws"])
        if members is None:
            return error(404, "No workspace with identifier")
        if members.get(caller) != "owner":
            return error(403, "Only workspace administrators may list permissions")
        values = [
            {
                "type": "workspace_membership",
                "permission": role,
                "user": self.users[account].json(),
                "workspace": {"type": "workspace", "slug": request.params["ws"]},
            }
            for account, role in members.items()
        ]
        return self._paged(request, request.path, values)

    def _repo(self, request: Request) -> Reply:
        caller = self._caller(request)
        if caller is None:
            return error(401, "Unauthorized")
        repo = self.repos.get((request.params["ws"], request.params["repo"]))
        if repo is None or (repo.private and caller not in repo.grants):
            return error(404, "Repository not found")
        return Reply(
            200,
            {
                "type": "repository",
                "full_name": f"{repo.workspace}/{repo.slug}",
                "slug": repo.slug,
                "name": repo.slug,
                "is_private": repo.private,
                "mainbranch": {"type": "branch", "name": repo.main},
                "links": {
                    "self": {"href": f"{self.url}{API}/repositories/{repo.workspace}/{repo.slug}"}
                },
            },
        )

    def restrict(self, workspace: str, slug: str, kind: str, pattern: str = "", **kw: Any) -> None:
        """A branch restriction: by glob ``pattern``, or ``branch_type`` of the model."""
        repo = self.repos[(workspace, slug)]
        how = "branching_model" if "branch_type" in kw else "glob"
        rule = {"type": "branchrestriction", "id": len(repo.restrictions) + 1, "kind": kind}
        rule |= {"branch_match_kind": how, "users": [], "groups": [], "value": None}
        if how == "glob":
            rule["pattern"] = pattern
        users = [self.users[a].json() for a in kw.pop("users", ())]
        groups = [{"type": "group", "slug": g, "name": g} for g in kw.pop("groups", ())]
        repo.restrictions.append(rule | kw | {"users": users, "groups": groups})

    def _visible(self, request: Request) -> Repo | Reply:
        caller = self._caller(request)
        if caller is None:
            return error(401, "Unauthorized")
        repo = self.repos.get((request.params["ws"], request.params["repo"]))
        if repo is None or (repo.private and caller not in repo.grants):
            return error(404, "Repository not found")
        return repo

    def _restrictions(self, request: Request) -> Reply:
        repo = self._visible(request)
        if isinstance(repo, Reply):
            return repo
        if self.repos[(repo.workspace, repo.slug)].grants.get(self._caller(request) or "") != (
            "admin"
        ):
            return error(403, "You must be an administrator of this repository")
        return self._paged(request, request.path, repo.restrictions)

    def _model(self, request: Request) -> Reply:
        repo = self._visible(request)
        return repo if isinstance(repo, Reply) else Reply(200, repo.model)

    def _pull(self, request: Request) -> Reply:
        repo = self._visible(request)
        if isinstance(repo, Reply):
            return repo
        target = repo.pulls.get(int(request.params["id"]))
        if target is None:
            return error(404, "Pull request not found")
        body = {"type": "pullrequest", "id": int(request.params["id"]), "state": "OPEN"}
        return Reply(200, body | {"destination": {"branch": {"name": target}}})

    def _merge(self, request: Request) -> Reply:
        repo = self._visible(request)
        if isinstance(repo, Reply):
            return repo
        pull = repo.pulls.pop(int(request.params["id"]), None)
        if pull is None:
            return error(404, "Pull request not found")
        return Reply(
            200, {"type": "pullrequest", "id": int(request.params["id"]), "state": "MERGED"}
        )

    def _delete_branch(self, request: Request) -> Reply:
        repo = self._visible(request)
        if isinstance(repo, Reply):
            return repo
        name = unquote(request.params["name"])
        if name not in repo.branches:
            return error(404, "Branch not found")
        repo.branches.discard(name)
        return Reply(204, None)

    def _create_pull(self, request: Request) -> Reply:
        if self._caller(request) is None:
            return error(401, "Unauthorized")
        body = request.json()
        pull = {"type": "pullrequest", "id": len(self.pulls) + 1, "title": body.get("title")}
        self.pulls.append(pull)
        return Reply(201, pull)

    def _user(self, request: Request) -> Reply:
        if self._caller(request) is None:
            return error(401, "Unauthorized")
        wanted = unquote(request.params["user"])
        for user in self.users.values():
            if wanted in (user.account_id, user.uuid):
                return Reply(200, user.json())
        return error(404, f"{wanted} is not a valid user")

    def _me(self, request: Request) -> Reply:
        caller = self._caller(request)
        if caller is None:
            return error(401, "Unauthorized")
        return Reply(200, self.users[caller].json())

    def _token(self, request: Request) -> Reply:
        header = request.headers.get("authorization", "")
        form = parse_qs(request.body.decode())
        if not header.startswith("Basic ") or form.get("grant_type") != ["client_credentials"]:
            return Reply(400, {"error": "invalid_request"})
        client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        known = self.clients.get(client_id)
        if known is None or known[0] != secret:
            return Reply(400, {"error": "invalid_client", "error_description": "bad client"})
        token = f"oauth-token-{next(self._tokens)}"
        self.bearer(token, known[1])
        return Reply(
            200,
            {
                "access_token": token,
                "token_type": "bearer",
                "expires_in": 7200,
                "scopes": "repository",
            },
        )


def populate(fake: FakeBitbucket) -> FakeBitbucket:
    """The engine (``acc-engine``, admin everywhere), dana (write on acme/api), erin (admin on
    acme/api, owner of acme), frank (read on acme/api), gail (no grant); acme/site is public."""
    for account, name in [
        ("acc-engine", "Engine Bot"),
        ("acc-dana", "Dana Scully"),
        ("acc-erin", "Erin Brock"),
        ("acc-frank", "Frank Lee"),
        ("acc-gail", "Gail Ray"),
    ]:
        fake.add_user(account, name)
    fake.basic("engine@example.com", "bb-api-token", "acc-engine")
    fake.add_repo("acme", "api")
    fake.add_repo("acme", "site", private=False)
    for slug in ("api", "site"):
        fake.grant("acme", slug, "acc-engine", "admin")
    fake.grant("acme", "api", "acc-dana", "write")
    fake.grant("acme", "api", "acc-erin", "admin")
    fake.grant("acme", "api", "acc-frank", "read")
    fake.member("acme", "acc-engine", "owner")
    fake.member("acme", "acc-erin", "owner")
    fake.member("acme", "acc-dana", "member")
    fake.member("acme", "acc-frank", "collaborator")
    api = fake.repos[("acme", "api")]
    api.branches |= {"release/1.0", "feature/x", "develop"}
    api.pulls[7] = "main"
    api.model = {
        "type": "branching_model",
        "development": {"name": "develop", "branch": {"name": "develop"}, "use_mainbranch": False},
        "production": {"name": "main", "branch": {"name": "main"}, "enabled": True},
        "branch_types": [{"kind": "release", "prefix": "release/", "enabled": True}],
    }
    return fake
