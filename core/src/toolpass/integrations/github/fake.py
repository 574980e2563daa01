"""A fake GitHub REST + GraphQL API, built from GitHub's documented shapes.

Serves what the GitHub integration and PyGithub use: repositories, the collaborator
permission read, organization memberships, users (with ``site_admin``), collaborator lists
(``per_page``/``page`` with ``Link`` headers),
branches, pull requests, ``/rate_limit``, ``/user``, GitHub App endpoints (RS256 JWTs are
verified against the App's public key; installation tokens expire) and the GraphQL
organization SAML identities. Errors are ``{"message", "documentation_url"}``; a
repository the caller cannot see is a 404, as on GitHub. ``prefix="/api/v3"`` makes it a
GitHub Enterprise Server (GraphQL then lives at ``/api/graphql``), which also serves, as
GHES does without subdomain isolation: raw files (``/raw/{owner}/{repo}/{ref}/{path}``),
release asset uploads (``/api/uploads/repos/{owner}/{repo}/releases/{id}/assets``) and Git
over HTTP (``/{owner}/{repo}.git/info/refs``, ``git-upload-pack``, ``git-receive-pack``:
recorded, answered with an empty report).

The SAML ``userName`` filter matches by prefix here, on purpose: a client must keep only
exact ``nameId`` matches.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import itertools
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from fakes.server import FakeServer, Reply, Request

DOCS = "https://docs.github.com/rest"
_BASE_ROLE = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
}
_ids = itertools.count(1000)


@dataclass
class Token:
    login: str
    repos: set[str] | None = None  # None: every repository
    push: bool = True
    admin: bool = True  # reads branch protection and rulesets' bypass actors
    installation: int | None = None
    expires: float | None = None


@dataclass
class Repo:
    owner: str
    name: str
    private: bool = True
    roles: dict[str, str] = field(default_factory=dict)  # login -> role name (custom allowed)
    custom_roles: dict[str, str] = field(default_factory=dict)  # custom role -> base role
    branches: dict[str, bool] = field(default_factory=lambda: {"main": True})  # -> protected
    files: dict[str, str] = field(default_factory=dict)  # path -> text, on the default branch
    pulls: list[dict[str, Any]] = field(default_factory=list)
    archived: bool = False
    default_branch: str = "main"
    # branch -> its classic protection, as GET .../branches/{branch}/protection answers it
    # (a protected branch without one requires one approving review, admins exempt)
    protections: dict[str, dict[str, Any]] = field(default_factory=dict)
    # rulesets: {"id", "name", "branches" (names, "~ALL", "~DEFAULT_BRANCH"), "rules",
    # "bypass_actors", "source_type"}; all active
    rulesets: list[dict[str, Any]] = field(default_factory=list)
    locked: set[int] = field(default_factory=set)  # issue and pull request numbers
    reviews: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # pull -> reviews
    advisories: dict[str, dict[str, Any]] = field(default_factory=dict)  # ghsa_id -> advisory
    # run id -> its pending deployments: [{"environment": name, "users": [...], "teams": [...]}]
    pending: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    # commit sha -> its statuses ({"context", "state"}) and check runs ({"name", "status",
    # "conclusion", "app_id"}); a pull request's head is its "head_sha" (default HEAD_SHA)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    id: int = field(default_factory=lambda: next(_ids))


HEAD_SHA = "c" * 40


@dataclass
class App:
    id: int
    slug: str
    public_key: rsa.RSAPublicKey
    installations: dict[int, str] = field(default_factory=dict)  # id -> account login
    token_ttl: float = 3600.0
    minted: list[int] = field(default_factory=list)


def error(status: int, message: str, **headers: str) -> Reply:
    return Reply(
        status, {"message": message, "documentation_url": DOCS, "status": str(status)}, headers
    )


class FakeGitHub(FakeServer):
    """GitHub on 127.0.0.1. ``api_url`` is the base URL a client is given."""

    def __init__(self, *, prefix: str = "", **kw: Any) -> None:
        super().__init__(**kw)
        self.prefix = prefix
        self.api_url = f"{self.url}{prefix}"
        self.users: dict[str, int] = {}
        self.repos: dict[str, Repo] = {}
        self.tokens: dict[str, Token] = {}
        self.apps: dict[str, App] = {}
        self.saml: dict[str, list[tuple[str, str | None]] | None] = {}  # org -> (nameId, login)
        self.orgs: dict[str, dict[str, tuple[str, str]]] = {}  # org -> login -> (role, state)
        self.site_admins: set[str] = set()
        self.suspended: dict[str, str] = {}  # login -> suspended_at (GHES)
        self.org_settings: dict[str, dict[str, Any]] = {}  # org -> settings (owners see them)
        self.teams: dict[str, dict[str, set[str]]] = {}  # org -> team slug -> member logins
        self.security_managers: dict[str, list[str]] = {}  # org -> team slugs
        self._routes_for(prefix)

    # --- state -------------------------------------------------------------------------
    def add_user(self, *logins: str) -> None:
        for login in logins:
            self.users.setdefault(login, next(_ids))

    def add_repo(self, full_name: str, roles: dict[str, str] | None = None, **kw: Any) -> Repo:
        owner, name = full_name.split("/")
        repo = Repo(owner, name, roles=dict(roles or {}), **kw)
        self.add_user(owner, *repo.roles)
        self.repos[full_name.lower()] = repo
        return repo

    def add_org(self, org: str, members: dict[str, str], pending: tuple[str, ...] = ()) -> None:
        """``members``: login -> ``admin``, ``member`` or ``billing_manager``."""
        self.add_user(org, *members)
        self.orgs[org.lower()] = {
            login: (role, "pending" if login in pending else "active")
            for login, role in members.items()
        }

    def add_token(self, token: str, login: str = "engine-bot", **kw: Any) -> Token:
        self.add_user(login)
        self.tokens[token] = Token(login, **kw)
        return self.tokens[token]

    def add_app(
        self, app_id: int, public_key: rsa.RSAPublicKey, installations: dict[int, str], **kw: Any
    ) -> App:
        app = App(app_id, f"app-{app_id}", public_key, dict(installations), **kw)
        self.apps[str(app_id)] = app
        return app

    # --- helpers -----------------------------------------------------------------------
    def _user_json(self, login: str) -> dict[str, Any]:
        return {
            "login": login,
            "id": self.users.get(login, 0),
            "type": "User",
            "url": f"{self.api_url}/users/{login}",
            "html_url": f"{self.url}/{login}",
        }

    def _repo_json(self, repo: Repo) -> dict[str, Any]:
        full = f"{repo.owner}/{repo.name}"
        return {
            "id": repo.id,
            "name": repo.name,
            "full_name": full,
            "private": repo.private,
            "owner": self._user_json(repo.owner),
            "url": f"{self.api_url}/repos/{full}",
            "html_url": f"{self.url}/{full}",
            "default_branch": repo.default_branch,
            "archived": repo.archived,
        }

    def _token(self, request: Request) -> Token | Reply | None:
        auth = request.headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        if not auth:
            return None
        token = self.tokens.get(value) if scheme.lower() in ("bearer", "token") else None
        if token is None or (token.expires is not None and token.expires < time.time()):
            return error(401, "Bad credentials")
        return token

    def _app(self, request: Request) -> App | Reply:
        auth = request.headers.get("authorization", "")
        scheme, _, jwt = auth.partition(" ")
        try:
            head, body, sig = jwt.split(".")
            header = json.loads(_unb64(head))
            claims = json.loads(_unb64(body))
            app = self.apps[str(claims["iss"])]
            if scheme.lower() != "bearer" or header["alg"] != "RS256":
                raise ValueError("not an RS256 bearer JWT")
            app.public_key.verify(
                _unb64(sig), f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except (ValueError, KeyError, InvalidSignature):
            return error(401, "A JSON web token could not be decoded")
        now = time.time()
        if not (
            claims["exp"] > now
            and claims["iat"] <= now + 60
            and claims["exp"] - claims["iat"] <= 660
        ):
            return error(
                401, "'Expiration time' claim ('exp') is too far in the future or has passed"
            )
        return app

    def _visible(self, request: Request) -> tuple[Repo, Token | None] | Reply:
        token = self._token(request)
        if isinstance(token, Reply):
            return token
        repo = self.repos.get(f"{request.params['owner']}/{request.params['repo']}".lower())
        if repo is None:
            return error(404, "Not Found")
        full = f"{repo.owner}/{repo.name}".lower()
        if repo.private and (
            token is None or (token.repos is not None and full not in token.repos)
        ):
            return error(404, "Not Found")
        return repo, token

    # --- routes ------------------------------------------------------------------------
    def _routes_for(self, prefix: str) -> None:
        repo = prefix + r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
        self.add("GET", repo, self._get_repo)
        self.add("GET", repo + r"/collaborators/(?P<login>[^/]+)/permission", self._permission)
        self.add("GET", repo + r"/collaborators", self._collaborators)
        branch = repo + r"/branches/(?P<branch>[^/]+)"
        self.add("GET", branch + r"/protection", self._protection)
        self.add("POST", branch + r"/rename", self._rename)
        self.add("GET", repo + r"/branches/(?P<branch>.+)", self._branch)
        self.add("GET", repo + r"/rules/branches/(?P<branch>.+)", self._branch_rules)
        self.add("GET", repo + r"/rulesets/(?P<id>\d+)", self._ruleset)
        self.add("GET", repo + r"/issues/(?P<number>\d+)", self._get_issue)
        self.add("POST", repo + r"/issues/(?P<number>\d+)/comments", self._comment)
        self.add("GET", repo + r"/pulls/(?P<number>\d+)/reviews", self._reviews)
        self.add("PUT", repo + r"/pulls/(?P<number>\d+)/merge", self._merge)
        commit = repo + r"/commits/(?P<sha>[0-9a-f]{40})"
        self.add("GET", commit + r"/status", self._combined_status)
        self.add("GET", commit + r"/check-runs", self._check_runs)
        advisory = repo + r"/security-advisories/(?P<ghsa>GHSA(?:-[a-z0-9]{4}){3})"
        self.add("GET", advisory, self._advisory)
        self.add("PATCH", advisory, self._advisory)
        self.add("POST", advisory + r"/cve", self._advisory_cve)
        runs = repo + r"/actions/runs/(?P<run>\d+)/pending_deployments"
        self.add("GET", runs, self._pending)
        self.add("POST", runs, self._review_pending)
        self.add("POST", prefix + r"/orgs/(?P<org>[^/]+)/repos", self._create_org_repo)
        self.add("GET", prefix + r"/orgs/(?P<org>[^/]+)", self._get_org)
        self.add("GET", prefix + r"/orgs/(?P<org>[^/]+)/security-managers", self._managers)
        self.add(
            "GET",
            prefix + r"/orgs/(?P<org>[^/]+)/teams/(?P<slug>[^/]+)/memberships/(?P<login>[^/]+)",
            self._team_membership,
        )
        self.add("POST", repo + r"/pulls", self._create_pull)
        self.add("GET", repo + r"/contents/(?P<path>.+)", self._contents)
        self.add("GET", repo + r"/pulls/(?P<number>\d+)", self._get_pull)
        self.add("GET", repo + r"/installation", self._installation)
        self.add(
            "GET", prefix + r"/(?:orgs|users)/(?P<owner>[^/]+)/installation", self._installation
        )
        self.add("GET", prefix + r"/app", self._get_app)
        self.add("GET", prefix + r"/app/installations", self._list_installations)
        self.add("POST", prefix + r"/app/installations/(?P<id>\d+)/access_tokens", self._mint)
        self.add("GET", prefix + r"/search/issues", self._search_issues)
        self.add("GET", prefix + r"/rate_limit", self._rate_limit)
        self.add("GET", prefix + r"/user", self._user)
        self.add("GET", prefix + r"/user/repos", self._user_repos)
        self.add("GET", prefix + r"/users/(?P<login>[^/]+)", self._get_user)
        self.add(
            "GET", prefix + r"/orgs/(?P<org>[^/]+)/memberships/(?P<login>[^/]+)", self._membership
        )
        graphql = "/api/graphql" if prefix.endswith("/api/v3") else prefix + "/graphql"
        self.add("POST", graphql, self._graphql)
        if prefix.endswith("/api/v3"):
            named = r"/(?P<owner>[^/]+)/(?P<repo>[^/]+?)"
            self.add("GET", r"/raw" + named + r"/(?P<ref>[^/]+)/(?P<path>.+)", self._raw)
            uploads = r"/api/uploads/repos" + named + r"/releases/\d+/assets"
            self.add("POST", uploads, self._git)
            self.add("GET", named + r"(?:\.git)?/info/refs", self._git)
            self.add("POST", named + r"(?:\.git)?/git-(?:upload|receive)-pack", self._git)

    def _get_repo(self, request: Request) -> Reply | dict[str, Any]:
        found = self._visible(request)
        return found if isinstance(found, Reply) else self._repo_json(found[0])

    def _permission(self, request: Request) -> Reply | dict[str, Any]:
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo, token = found
        if token is None or not token.push:
            return error(403, "Must have push access to view repository collaborator permission.")
        login = request.params["login"]
        if login not in self.users:
            return error(404, "Not Found")
        role = repo.roles.get(login)
        if role is None:
            role = "read" if not repo.private else "none"
        base = _BASE_ROLE.get(role) or _BASE_ROLE.get(repo.custom_roles.get(role, ""), "none")
        return {"permission": base, "role_name": role, "user": self._user_json(login)}

    def _collaborators(self, request: Request) -> Reply | list[Any]:
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo = found[0]
        per_page = min(int(request.arg("per_page") or 30), 100)
        page = int(request.arg("page") or 1)
        logins = sorted(repo.roles)
        chunk = logins[(page - 1) * per_page : page * per_page]
        last = max(1, -(-len(logins) // per_page))
        base = f"{self.api_url}/repos/{repo.owner}/{repo.name}/collaborators?per_page={per_page}"
        links = []
        if page < last:
            links.append(f'<{base}&page={page + 1}>; rel="next"')
            links.append(f'<{base}&page={last}>; rel="last"')
        if page > 1:
            links.append(f'<{base}&page=1>; rel="first"')
            links.append(f'<{base}&page={page - 1}>; rel="prev"')
        body = [{**self._user_json(login), "role_name": repo.roles[login]} for login in chunk]
        return Reply(200, body, {"Link": ", ".join(links)} if links else {})

    def _branch(self, request: Request) -> Reply | dict[str, Any]:
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo = found[0]
        name = request.params["branch"]
        if name not in repo.branches:
            return error(404, "Branch not found")
        full = f"{self.api_url}/repos/{repo.owner}/{repo.name}"
        return {
            "name": name,
            "commit": {"sha": "a" * 40, "url": f"{full}/commits/{'a' * 40}"},
            "protected": repo.branches[name],
            "protection_url": f"{full}/branches/{name}/protection",
        }

    def _pull_json(self, repo: Repo, pull: dict[str, Any]) -> dict[str, Any]:
        full = f"{repo.owner}/{repo.name}"
        return {
            "state": "open",
            "draft": False,
            "merged": False,
            **pull,
            "url": f"{self.api_url}/repos/{full}/pulls/{pull['number']}",
            "html_url": f"{self.url}/{full}/pull/{pull['number']}",
            "base": {"ref": pull["base_ref"], "repo": self._repo_json(repo)},
            "head": {
                "ref": pull["head_ref"],
                "sha": pull.get("head_sha", HEAD_SHA),
                "repo": self._repo_json(repo),
            },
        }

    def _create_pull(self, request: Request) -> Reply:
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo, token = found
        if token is None:
            return error(401, "Requires authentication")
        data = request.json()
        if not data.get("title") or not data.get("head") or not data.get("base"):
            return error(422, "Validation Failed")
        pull = {
            "id": next(_ids),
            "number": len(repo.pulls) + 1,
            "title": data["title"],
            "body": data.get("body"),
            "user": self._user_json(token.login),
            "head_ref": data["head"],
            "base_ref": data["base"],
        }
        repo.pulls.append(pull)
        return Reply(201, self._pull_json(repo, pull))

    def _contents(self, request: Request) -> Reply | dict[str, Any]:
        """``GET /repos/{owner}/{repo}/contents/{path}`` for a file: base64 content."""
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo, path = found[0], request.params["path"]
        if path not in repo.files:
            return error(404, "Not Found")
        raw = repo.files[path].encode()
        url = f"{self.api_url}/repos/{repo.owner}/{repo.name}/contents/{path}"
        return {
            "type": "file",
            "encoding": "base64",
            "size": len(raw),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "content": base64.b64encode(raw).decode(),
            "sha": hashlib.sha1(raw).hexdigest(),
            "url": url,
            "git_url": None,
            "html_url": f"{self.url}/{repo.owner}/{repo.name}/blob/main/{path}",
            "download_url": None,
            "_links": {"self": url},
        }

    def _raw(self, request: Request) -> Reply:
        """A file's bytes, as ``raw`` serves them."""
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        text = found[0].files.get(request.params["path"])
        if text is None:
            return error(404, "Not Found")
        return Reply(200, text.encode(), {"Content-Type": "text/plain; charset=utf-8"})

    def _git(self, request: Request) -> Reply:
        """Git over HTTP and uploads: the repository must be visible; nothing is stored."""
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        return Reply(200, b"0000", {"Content-Type": "application/x-git-result"})

    def _get_pull(self, request: Request) -> Reply | dict[str, Any]:
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo = found[0]
        number = int(request.params["number"])
        if not 0 < number <= len(repo.pulls):
            return error(404, "Not Found")
        return self._pull_json(repo, repo.pulls[number - 1])

    def _installation_json(self, app: App, installation: int) -> dict[str, Any]:
        account = app.installations[installation]
        return {
            "id": installation,
            "app_id": app.id,
            "account": self._user_json(account),
            "access_tokens_url": f"{self.api_url}/app/installations/{installation}/access_tokens",
            "repository_selection": "all",
        }

    def _installation(self, request: Request) -> Reply | dict[str, Any]:
        app = self._app(request)
        if isinstance(app, Reply):
            return app
        owner = request.params["owner"].lower()
        for installation, account in app.installations.items():
            if account.lower() == owner:
                return self._installation_json(app, installation)
        return error(404, "Not Found")

    def _get_app(self, request: Request) -> Reply | dict[str, Any]:
        app = self._app(request)
        if isinstance(app, Reply):
            return app
        return {"id": app.id, "slug": app.slug, "name": app.slug, "owner": self._user_json("acme")}

    def _list_installations(self, request: Request) -> Reply | list[Any]:
        app = self._app(request)
        if isinstance(app, Reply):
            return app
        return [self._installation_json(app, i) for i in app.installations]

    def _mint(self, request: Request) -> Reply:
        app = self._app(request)
        if isinstance(app, Reply):
            return app
        installation = int(request.params["id"])
        if installation not in app.installations:
            return error(404, "Not Found")
        app.minted.append(installation)
        token = f"ghs_{secrets.token_hex(18)}"
        expires = time.time() + app.token_ttl
        account = app.installations[installation].lower()
        repos = {name for name, r in self.repos.items() if r.owner.lower() == account}
        self.tokens[token] = Token(f"{app.slug}[bot]", repos, True, installation, expires)
        stamp = datetime.datetime.fromtimestamp(int(expires), datetime.timezone.utc)
        return Reply(
            201,
            {
                "token": token,
                "expires_at": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "permissions": {"metadata": "read", "members": "read"},
                "repository_selection": "all",
            },
        )

    def _rate_limit(self, request: Request) -> Reply | dict[str, Any]:
        token = self._token(request)
        if isinstance(token, Reply):
            return token
        core = {"limit": 5000, "used": 1, "remaining": 4999, "reset": int(time.time()) + 3600}
        return {"resources": {"core": core}, "rate": core}

    def _user(self, request: Request) -> Reply | dict[str, Any]:
        token = self._token(request)
        if token is None:
            return error(401, "Requires authentication")
        if isinstance(token, Reply):
            return token
        if token.installation is not None:
            return error(403, "Resource not accessible by integration")
        return self._user_json(token.login)

    def _user_repos(self, request: Request) -> Reply | list[Any]:
        """The repositories the token sees, private ones included (one page)."""
        token = self._token(request)
        if token is None:
            return error(401, "Requires authentication")
        if isinstance(token, Reply):
            return token
        return [
            self._repo_json(repo)
            for full, repo in sorted(self.repos.items())
            if not repo.private or token.repos is None or full in token.repos
        ]

    def _get_user(self, request: Request) -> Reply | dict[str, Any]:
        token = self._token(request)
        if isinstance(token, Reply):
            return token
        login = request.params["login"]
        if login not in self.users:
            return error(404, "Not Found")
        found = {**self._user_json(login), "site_admin": login in self.site_admins}
        if self.prefix:  # GitHub Enterprise Server reports suspension
            found["suspended_at"] = self.suspended.get(login)
        return found

    def _membership(self, request: Request) -> Reply | dict[str, Any]:
        token = self._token(request)
        if isinstance(token, Reply):
            return token
        members = self.orgs.get(request.params["org"].lower())
        # GitHub answers 404 to a caller outside the organization, and for a non-member.
        if token is None or members is None or token.login not in members:
            return error(404, "Not Found")
        found = members.get(request.params["login"])
        if found is None:
            return error(404, "Not Found")
        role, state = found
        org = request.params["org"]
        return {
            "url": f"{self.api_url}/orgs/{org}/memberships/{request.params['login']}",
            "state": state,
            "role": role,
            "organization": {"login": org},
            "user": self._user_json(request.params["login"]),
        }

    def _graphql(self, request: Request) -> Reply | dict[str, Any]:
        token = self._token(request)
        if token is None:
            return error(401, "This endpoint requires you to be authenticated.")
        if isinstance(token, Reply):
            return token
        body = request.json()
        variables = body.get("variables") or {}
        org, name_id = variables.get("org"), variables.get("nameId", "")
        if "externalIdentities" not in body.get("query", "") or org is None:
            return {"errors": [{"message": "this fake only answers the SAML identity query"}]}
        if org not in self.saml:
            return {
                "data": {"organization": None},
                "errors": [
                    {
                        "type": "NOT_FOUND",
                        "path": ["organization"],
                        "message": f"Could not resolve to an Organization with the login of "
                        f"'{org}'.",
                    }
                ],
            }
        identities = self.saml[org]
        if identities is None:
            return {"data": {"organization": {"samlIdentityProvider": None}}}
        edges = [
            {"node": {"samlIdentity": {"nameId": nid}, "user": {"login": login} if login else None}}
            for nid, login in identities
            if nid.lower().startswith(name_id.lower())
        ]
        return {
            "data": {
                "organization": {"samlIdentityProvider": {"externalIdentities": {"edges": edges}}}
            }
        }

    # --- branch rules, conversation and resource state --------------------------------
    def _writable(self, request: Request) -> tuple[Repo, Token | None] | Reply:
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        if found[0].archived:
            return error(403, "Repository was archived so is read-only.")
        return found

    def _protection(self, request: Request) -> Reply | dict[str, Any]:
        """``GET .../branches/{branch}/protection``: needs admin on the repository."""
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo, token = found
        if token is None or not token.admin:
            return error(404, "Not Found")
        name = unquote(request.params["branch"])
        if name not in repo.branches:
            return error(404, "Branch not found")
        if not repo.branches[name]:
            return error(404, "Branch not protected")
        url = f"{self.api_url}/repos/{repo.owner}/{repo.name}/branches/{name}/protection"
        rules = repo.protections.get(name)
        if rules is None:
            rules = {"required_pull_request_reviews": {"required_approving_review_count": 1}}
        return {
            "url": url,
            "enforce_admins": {"url": f"{url}/enforce_admins", "enabled": False},
            "required_linear_history": {"enabled": False},
            "allow_force_pushes": {"enabled": False},
            "allow_deletions": {"enabled": False},
            "lock_branch": {"enabled": False},
            **{key: _protection_part(url, key, value) for key, value in rules.items()},
        }

    def _applies(self, repo: Repo, ruleset: dict[str, Any], branch: str) -> bool:
        names = ruleset.get("branches", ["~ALL"])
        return (
            "~ALL" in names
            or branch in names
            or ("~DEFAULT_BRANCH" in names and branch == repo.default_branch)
        )

    def _branch_rules(self, request: Request) -> Reply | list[Any]:
        """``GET .../rules/branches/{branch}``: the active rules that apply (read access)."""
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo = found[0]
        branch = unquote(request.params["branch"])
        rules = [
            {
                **rule,
                "ruleset_source_type": ruleset.get("source_type", "Repository"),
                "ruleset_source": f"{repo.owner}/{repo.name}",
                "ruleset_id": ruleset["id"],
            }
            for ruleset in repo.rulesets
            if self._applies(repo, ruleset, branch)
            for rule in ruleset["rules"]
        ]
        per_page = min(int(request.arg("per_page") or 30), 100)
        page = int(request.arg("page") or 1)
        return rules[(page - 1) * per_page : page * per_page]

    def _ruleset(self, request: Request) -> Reply | dict[str, Any]:
        """``GET .../rulesets/{id}``: ``bypass_actors`` only for a caller who may edit it."""
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo, token = found
        ruleset = next((r for r in repo.rulesets if str(r["id"]) == request.params["id"]), None)
        if ruleset is None:
            return error(404, "Not Found")
        answer = {
            "id": ruleset["id"],
            "name": ruleset.get("name", f"ruleset {ruleset['id']}"),
            "target": "branch",
            "source_type": ruleset.get("source_type", "Repository"),
            "source": f"{repo.owner}/{repo.name}",
            "enforcement": "active",
            "rules": ruleset["rules"],
            "current_user_can_bypass": "never",
        }
        if token is not None and token.admin:
            answer["bypass_actors"] = ruleset.get("bypass_actors", [])
        return answer

    def _rename(self, request: Request) -> Reply:
        found = self._writable(request)
        if isinstance(found, Reply):
            return found
        repo = found[0]
        old, new = unquote(request.params["branch"]), request.json().get("new_name")
        if old not in repo.branches or not new:
            return error(404, "Branch not found")
        repo.branches[new] = repo.branches.pop(old)
        if repo.default_branch == old:
            repo.default_branch = new
        return Reply(201, {"name": new, "protected": repo.branches[new]})

    def _search_issues(self, request: Request) -> Reply | dict[str, Any]:
        """Search issues: issue #1 of every repository the token sees, or of the
        ``repo:`` qualifiers' ones (GitHub answers what the credential can read)."""
        token = self._token(request)
        if isinstance(token, Reply):
            return token
        words = (request.arg("q") or "").split()
        named = {w[5:].lower() for w in words if w.startswith("repo:")}
        items = [
            self._issue_json(repo, 1)
            for full, repo in sorted(self.repos.items())
            if (not named or full in named)
            and not (
                repo.private
                and (token is None or (token.repos is not None and full not in token.repos))
            )
        ]
        return {"total_count": len(items), "incomplete_results": False, "items": items}

    def _issue_json(self, repo: Repo, number: int) -> dict[str, Any]:
        full = f"{repo.owner}/{repo.name}"
        return {
            "id": number + 10_000,
            "number": number,
            "url": f"{self.api_url}/repos/{full}/issues/{number}",
            "html_url": f"{self.url}/{full}/issues/{number}",
            "title": f"Issue {number}",
            "state": "open",
            "locked": number in repo.locked,
            "active_lock_reason": "too heated" if number in repo.locked else None,
            "user": self._user_json(repo.owner),
        }

    def _get_issue(self, request: Request) -> Reply | dict[str, Any]:
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        return self._issue_json(found[0], int(request.params["number"]))

    def _comment(self, request: Request) -> Reply:
        found = self._writable(request)
        if isinstance(found, Reply):
            return found
        body = {"id": next(_ids), "body": request.json().get("body")}
        return Reply(201, body)

    def _reviews(self, request: Request) -> Reply | list[Any]:
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo = found[0]
        return [
            {
                "id": next(_ids),
                "user": self._user_json(review["user"]),
                "state": review["state"],
                "commit_id": "a" * 40,
                "submitted_at": "2026-01-01T00:00:00Z",
            }
            for review in repo.reviews.get(int(request.params["number"]), [])
        ]

    def _combined_status(self, request: Request) -> Reply | dict[str, Any]:
        """``GET .../commits/{sha}/status``: each context's latest status."""
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        latest = {s["context"]: s for s in found[0].statuses.get(request.params["sha"], [])}
        listed = [{"id": next(_ids), **s} for s in latest.values()]
        states = {s["state"] for s in listed}
        state = "failure" if states - {"success", "pending"} else "pending"
        return {
            "state": "success" if states == {"success"} else state,
            "sha": request.params["sha"],
            "total_count": len(listed),
            "statuses": listed,
        }

    def _check_runs(self, request: Request) -> Reply | dict[str, Any]:
        """``GET .../commits/{sha}/check-runs`` (``filter=latest``), paged."""
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        runs = [
            {
                "id": next(_ids),
                "name": run["name"],
                "status": run.get("status", "completed"),
                "conclusion": run.get("conclusion"),
                "app": {"id": run.get("app_id", 15368), "slug": "github-actions"},
            }
            for run in found[0].check_runs.get(request.params["sha"], [])
        ]
        per_page = min(int(request.arg("per_page") or 30), 100)
        page = int(request.arg("page") or 1)
        shown = runs[(page - 1) * per_page : page * per_page]
        return {"total_count": len(runs), "check_runs": shown}

    def _merge(self, request: Request) -> Reply:
        """``PUT .../pulls/{n}/merge``: 405 for a draft or a closed pull request."""
        found = self._writable(request)
        if isinstance(found, Reply):
            return found
        pulls, number = found[0].pulls, int(request.params["number"])
        pull = pulls[number - 1] if 0 < number <= len(pulls) else None
        if pull is None:
            return error(404, "Not Found")
        if pull.get("draft") or pull.get("state", "open") != "open":
            return error(405, "Pull Request is not mergeable")
        return Reply(200, {"sha": "b" * 40, "merged": True, "message": "Pull Request merged"})

    def _advisory(self, request: Request) -> Reply | dict[str, Any]:
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo = found[0]
        advisory = repo.advisories.get(request.params["ghsa"])
        if advisory is None:
            return error(404, "Not Found")
        if request.method == "PATCH":
            advisory.update(request.json())
        return {
            "ghsa_id": request.params["ghsa"],
            "cve_id": None,
            "summary": "A flaw",
            "state": advisory.get("state", "draft"),
            "collaborating_users": [self._user_json(login) for login in advisory.get("users", [])],
            "collaborating_teams": [
                {"slug": slug, "name": slug} for slug in advisory.get("teams", [])
            ],
        }

    def _advisory_cve(self, request: Request) -> Reply:
        found = self._visible(request)
        return found if isinstance(found, Reply) else Reply(202, {})

    def _pending(self, request: Request) -> Reply | list[Any]:
        """``GET .../actions/runs/{run_id}/pending_deployments``."""
        found = self._visible(request)
        if isinstance(found, Reply):
            return found
        repo, token = found
        answer = []
        for i, waiting in enumerate(repo.pending.get(int(request.params["run"]), [])):
            reviewers = [
                {"type": "User", "reviewer": self._user_json(login)}
                for login in waiting.get("users", [])
            ] + [
                {"type": "Team", "reviewer": {"id": next(_ids), "slug": slug, "name": slug}}
                for slug in waiting.get("teams", [])
            ]
            answer.append(
                {
                    "environment": {"id": 500 + i, "name": waiting["environment"]},
                    "wait_timer": 0,
                    "wait_timer_started_at": None,
                    "current_user_can_approve": token is not None
                    and token.login in waiting.get("users", []),
                    "reviewers": reviewers,
                }
            )
        return answer

    def _review_pending(self, request: Request) -> Reply:
        found = self._visible(request)
        return found if isinstance(found, Reply) else Reply(200, [])

    def _get_org(self, request: Request) -> Reply | dict[str, Any]:
        """``GET /orgs/{org}``: the member settings only for an owner of the organization."""
        token = self._token(request)
        if isinstance(token, Reply):
            return token
        org = request.params["org"]
        members = self.orgs.get(org.lower())
        if members is None:
            return error(404, "Not Found")
        answer: dict[str, Any] = {
            "login": org,
            "id": self.users.get(org, 0),
            "type": "Organization",
        }
        if token is not None and members.get(token.login, ("", ""))[0] == "admin":
            answer.update({"members_can_create_repositories": True})
            answer.update(self.org_settings.get(org.lower(), {}))
        return answer

    def _create_org_repo(self, request: Request) -> Reply:
        token = self._token(request)
        if isinstance(token, Reply):
            return token
        name = request.json().get("name")
        self.add_repo(f"{request.params['org']}/{name}")
        return Reply(201, {"name": name, "full_name": f"{request.params['org']}/{name}"})

    def _managers(self, request: Request) -> Reply | list[Any]:
        token = self._token(request)
        if isinstance(token, Reply):
            return token
        org = request.params["org"].lower()
        if org not in self.orgs:
            return error(404, "Not Found")
        return [{"slug": slug, "name": slug} for slug in self.security_managers.get(org, [])]

    def _team_membership(self, request: Request) -> Reply | dict[str, Any]:
        token = self._token(request)
        if isinstance(token, Reply):
            return token
        team = self.teams.get(request.params["org"].lower(), {}).get(request.params["slug"])
        login = request.params["login"]
        if team is None or login not in team:
            return error(404, "Not Found")
        return {"url": request.path, "role": "member", "state": "active"}


def _protection_part(url: str, key: str, value: Any) -> Any:
    """One part of a branch protection answer, with the URL GitHub puts in each."""
    if isinstance(value, bool):
        return {"url": f"{url}/{key}", "enabled": value}
    if key == "restrictions":
        return {
            "url": f"{url}/restrictions",
            "users": [{"login": login, "type": "User"} for login in value.get("users", [])],
            "teams": [{"slug": slug, "name": slug} for slug in value.get("teams", [])],
            "apps": [],
        }
    if key == "required_pull_request_reviews":
        allow = value.get("bypass_pull_request_allowances", {})
        return {
            "url": f"{url}/required_pull_request_reviews",
            "dismiss_stale_reviews": False,
            "require_code_owner_reviews": False,
            "require_last_push_approval": False,
            **value,
            "bypass_pull_request_allowances": {
                "users": [{"login": login} for login in allow.get("users", [])],
                "teams": [{"slug": slug} for slug in allow.get("teams", [])],
                "apps": [],
            },
        }
    return {"url": f"{url}/{key}", **value}


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def rsa_key() -> tuple[str, rsa.RSAPublicKey]:
    """A new RSA key: (private PEM, public key)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    return pem, key.public_key()
