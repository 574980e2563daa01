"""A fake GitLab REST API (v4) on 127.0.0.1, shaped after docs.gitlab.com/api.

State is plain data a test sets: users, groups, projects, memberships (direct; inherited
through ancestor groups and invited groups are computed as GitLab documents for
``members/all``), protected branches, merge requests, issues, SAML identities and tokens.

Speaks what the integration and python-gitlab use:

- ``PRIVATE-TOKEN`` or ``Authorization: Bearer`` authentication; 401 ``{"message": "401
  Unauthorized"}`` (OAuth: ``{"error": "invalid_token", ...}``);
- ``GET /api/v4/user``, ``/personal_access_tokens/self``, ``/users`` (``search``,
  ``username``, and for administrators ``extern_uid``/``provider``), ``/users/:id``;
- ``GET /projects/:id`` and ``/groups/:id`` (ids or URL-encoded paths; hidden ones are
  ``404 Project Not Found`` / ``404 Group Not Found``), ``.../members/all/:user_id``
  (``404 Not found`` for non-members);
- ``GET /projects/:id/protected_branches`` (and ``/:name``), ``/protected_tags``,
  ``/merge_requests/:iid``,
  ``/issues/:iid``, ``/groups/:id/saml_users``, ``/groups/:id/saml/:uid``;
- offset pagination: ``page``/``per_page`` with ``X-Page``, ``X-Per-Page``, ``X-Next-Page``,
  ``X-Prev-Page``, ``X-Total``, ``X-Total-Pages`` and a ``Link`` header.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlencode

from fakes.server import FakeServer, Reply, Request

API = "/api/v4"
ID = r"(?P<id>[^/]+)"


@dataclass
class Token:
    user_id: int
    scopes: list[str] = field(default_factory=lambda: ["read_api"])
    kind: str = "token"  # token | oauth


class FakeGitLab(FakeServer):
    """A GitLab. Add state with the helpers; ``requests`` logs what arrived."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._ids = itertools.count(100)
        self.users: dict[int, dict[str, Any]] = {}
        self.groups: dict[str, dict[str, Any]] = {}
        self.projects: dict[str, dict[str, Any]] = {}
        # (kind, full path) -> {user id: {"access_level": n, "membership_state": ...}}
        self.members: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
        self.protected: dict[str, list[dict[str, Any]]] = {}
        self.protected_tags: dict[str, list[dict[str, Any]]] = {}
        self.merge_requests: dict[tuple[str, int], dict[str, Any]] = {}
        self.issues: dict[tuple[str, int], dict[str, Any]] = {}
        self.saml: dict[str, dict[str, int]] = {}  # top-level group -> extern_uid -> user
        self.tokens: dict[str, Token] = {}
        self._routes_added()

    # --- state -------------------------------------------------------------------------
    def add_user(
        self,
        username: str,
        email: str,
        *,
        state: str = "active",
        public_email: str = "",
        admin: bool = False,
        external: bool = False,
        identities: list[dict[str, Any]] | None = None,
        user_id: int | None = None,
    ) -> int:
        uid = user_id if user_id is not None else next(self._ids)
        self.users[uid] = {
            "id": uid,
            "username": username,
            "name": username.replace("_", " ").title(),
            "email": email,
            "public_email": public_email,
            "state": state,
            "is_admin": admin,
            "external": external,
            "identities": identities or [],
        }
        return uid

    def add_token(
        self, token: str, user_id: int, *, scopes: list[str] | None = None, kind: str = "token"
    ) -> None:
        self.tokens[token] = Token(user_id, scopes or ["read_api"], kind)

    def add_group(self, path: str, *, visibility: str = "private") -> dict[str, Any]:
        gid = next(self._ids)
        group = {
            "id": gid,
            "name": path.rsplit("/", 1)[-1],
            "path": path.rsplit("/", 1)[-1],
            "full_path": path,
            "full_name": path.replace("/", " / "),
            "visibility": visibility,
            "parent_id": self.groups[path.rsplit("/", 1)[0]]["id"] if "/" in path else None,
            "web_url": f"{self.url}/groups/{path}",
        }
        self.groups[path] = group
        return group

    def add_project(
        self,
        path: str,
        *,
        visibility: str = "private",
        default_branch: str = "main",
        shared_with: list[tuple[str, int]] = (),  # type: ignore[assignment]
        archived: bool = False,
        **features: str,
    ) -> dict[str, Any]:
        """A project; ``features`` set ``<feature>_access_level`` (``enabled`` by default)."""
        pid = next(self._ids)
        namespace, _, name = path.rpartition("/")
        project = {
            "id": pid,
            "name": name,
            "path": name,
            "path_with_namespace": path,
            "name_with_namespace": path.replace("/", " / "),
            "namespace": {"full_path": namespace, "kind": "group"},
            "visibility": visibility,
            "archived": archived,
            "default_branch": default_branch,
            "web_url": f"{self.url}/{path}",
            **{
                f"{feature}_access_level": features.get(feature, "enabled")
                for feature in (
                    "issues",
                    "repository",
                    "merge_requests",
                    "wiki",
                    "builds",
                    "snippets",
                    "package_registry",
                )
            },
            "shared_with_groups": [
                {"group_full_path": g, "group_access_level": level} for g, level in shared_with
            ],
        }
        self.projects[path] = project
        return project

    def add_member(
        self, path: str, user_id: int, access_level: int, *, kind: str = "", **extra: Any
    ) -> None:
        """A direct membership of a project (or, with ``kind="group"`` or a group path, a group)."""
        kind = kind or ("group" if path in self.groups else "project")
        self.members.setdefault((kind, path), {})[user_id] = {"access_level": access_level, **extra}

    def protect(
        self,
        project: str,
        name: str,
        *,
        push: list[dict[str, Any]] | int = 40,
        merge: list[dict[str, Any]] | int = 40,
        allow_force_push: bool = False,
    ) -> None:
        def levels(value: list[dict[str, Any]] | int) -> list[dict[str, Any]]:
            if isinstance(value, int):
                value = [{"access_level": value}]
            return [
                {
                    "id": next(self._ids),
                    "access_level": e.get("access_level", 40),
                    "access_level_description": str(e.get("access_level", "")),
                    "user_id": e.get("user_id"),
                    "group_id": e.get("group_id"),
                    **({"deploy_key_id": e["deploy_key_id"]} if "deploy_key_id" in e else {}),
                }
                for e in value
            ]

        self.protected.setdefault(project, []).append(
            {
                "id": next(self._ids),
                "name": name,
                "push_access_levels": levels(push),
                "merge_access_levels": levels(merge),
                "unprotect_access_levels": levels(40),
                "allow_force_push": allow_force_push,
                "code_owner_approval_required": False,
                "inherited": False,
            }
        )

    def protect_tag(
        self, project: str, name: str, *, create: list[dict[str, Any]] | int = 40
    ) -> None:
        """A protected tag (or wildcard) as ``GET /projects/:id/protected_tags`` lists it:
        ``create`` is an access level (0: No one) or a list of entries (``access_level``,
        ``user_id``, ``group_id`` or ``deploy_key_id``)."""
        entries = [{"access_level": create}] if isinstance(create, int) else create
        levels = []
        for e in entries:
            level = e.get("access_level", 40)
            entry = {
                "id": next(self._ids),
                "access_level": level,
                "access_level_description": {0: "No one", 30: "Developers + Maintainers"}.get(
                    level, "Maintainers"
                ),
            }
            entry.update({k: e[k] for k in ("user_id", "group_id", "deploy_key_id") if k in e})
            levels.append(entry)
        rule = {"name": name, "create_access_levels": levels}
        self.protected_tags.setdefault(project, []).append(rule)

    def add_merge_request(
        self,
        project: str,
        iid: int,
        *,
        source: str,
        target: str = "main",
        fork: bool = False,
        status: str = "mergeable",
    ) -> None:
        pid = self.projects[project]["id"]
        self.merge_requests[(project, iid)] = {
            "id": next(self._ids),
            "iid": iid,
            "project_id": pid,
            "title": f"MR {iid}",
            "state": "opened",
            "source_branch": source,
            "target_branch": target,
            "detailed_merge_status": status,
            "source_project_id": pid + 1000 if fork else pid,
            "target_project_id": pid,
            "web_url": f"{self.url}/{project}/-/merge_requests/{iid}",
        }

    def add_issue(
        self,
        project: str,
        iid: int,
        *,
        author: int,
        assignees: list[int] = (),  # type: ignore[assignment]
        confidential: bool = False,
        locked: bool = False,
    ) -> None:
        self.issues[(project, iid)] = {
            "id": next(self._ids),
            "iid": iid,
            "project_id": self.projects[project]["id"],
            "title": f"Issue {iid}",
            "state": "opened",
            "confidential": confidential,
            "discussion_locked": locked,
            "author": self._basic(self.users[author]),
            "assignees": [self._basic(self.users[a]) for a in assignees],
        }

    def add_saml_identity(self, group: str, extern_uid: str, user_id: int) -> None:
        self.saml.setdefault(group, {})[extern_uid] = user_id
        identity = {
            "provider": "group_saml",
            "extern_uid": extern_uid,
            "saml_provider_id": self.groups[group]["id"],
        }
        self.users[user_id]["identities"].append(identity)

    # --- helpers -----------------------------------------------------------------------
    def _basic(self, user: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": user["id"],
            "username": user["username"],
            "name": user["name"],
            "state": user["state"],
            "locked": False,
            "avatar_url": None,
            "web_url": f"{self.url}/{user['username']}",
        }

    def _full(self, user: dict[str, Any], admin: bool) -> dict[str, Any]:
        data = {**self._basic(user), "public_email": user["public_email"] or None, "bot": False}
        if admin:
            data.update(
                email=user["email"],
                is_admin=user["is_admin"],
                external=user["external"],
                identities=user["identities"],
            )
        return data

    def _caller(self, request: Request) -> dict[str, Any] | Reply:
        bearer = request.headers.get("authorization", "")
        if bearer.lower().startswith("bearer "):
            token = self.tokens.get(bearer[7:])
            if token is None or token.kind != "oauth":
                return Reply(
                    401,
                    {
                        "error": "invalid_token",
                        "error_description": "Token was revoked. You have to re-authorize.",
                    },
                )
        else:
            token = self.tokens.get(request.headers.get("private-token", ""))
            if token is None or token.kind != "token":
                return Reply(401, {"message": "401 Unauthorized"})
        user_routes = (f"{API}/user", f"{API}/personal_access_tokens/self")
        needed = {"read_api", "api"} | ({"read_user"} if request.path in user_routes else set())
        if not needed & set(token.scopes):
            return Reply(
                403,
                {
                    "error": "insufficient_scope",
                    "error_description": "The request requires higher privileges than "
                    "provided by the access token.",
                    "scope": "api read_api",
                },
            )
        return self.users[token.user_id]

    def _project(self, raw: str) -> dict[str, Any] | None:
        key = unquote(raw)
        if key.isdigit():
            return next((p for p in self.projects.values() if p["id"] == int(key)), None)
        return self.projects.get(key)

    def _group(self, raw: str) -> dict[str, Any] | None:
        key = unquote(raw)
        if key.isdigit():
            return next((g for g in self.groups.values() if g["id"] == int(key)), None)
        return self.groups.get(key)

    def _ancestors(self, path: str) -> list[str]:
        parts = path.split("/")
        return ["/".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]

    def effective(self, kind: str, path: str, uid: int) -> dict[str, Any] | None:
        """The member entry ``members/all`` reports: direct, inherited or invited, highest."""
        found: list[dict[str, Any]] = []
        direct = self.members.get((kind, path), {}).get(uid)
        if direct:
            found.append(direct)
        for group in self._ancestors(path):
            entry = self.members.get(("group", group), {}).get(uid)
            if entry:
                found.append(entry)
        if kind == "project":
            for share in self.projects[path]["shared_with_groups"]:
                for group in [share["group_full_path"], *self._ancestors(share["group_full_path"])]:
                    entry = self.members.get(("group", group), {}).get(uid)
                    if entry:
                        level = min(entry["access_level"], share["group_access_level"])
                        found.append({**entry, "access_level": level})
        if not found:
            return None
        return max(found, key=lambda e: e["access_level"])

    def _visible(self, kind: str, thing: dict[str, Any], caller: dict[str, Any]) -> bool:
        if caller["is_admin"] or thing["visibility"] == "public":
            return True
        if thing["visibility"] == "internal" and not caller["external"]:
            return True
        path = thing["full_path"] if kind == "group" else thing["path_with_namespace"]
        return self.effective(kind, path, caller["id"]) is not None

    def _page(self, request: Request, items: list[Any]) -> Reply:
        page = max(int(request.arg("page", "1") or 1), 1)
        per_page = min(max(int(request.arg("per_page", "20") or 20), 1), 100)
        total_pages = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {
            "X-Page": str(page),
            "X-Per-Page": str(per_page),
            "X-Next-Page": str(page + 1) if page < total_pages else "",
            "X-Prev-Page": str(page - 1) if page > 1 else "",
            "X-Total": str(len(items)),
            "X-Total-Pages": str(total_pages),
        }
        query = {k: v[0] for k, v in request.query.items()}

        def link(n: int, rel: str) -> str:
            return f'<{self.url}{request.path}?{urlencode({**query, "page": n})}>; rel="{rel}"'

        links = []
        if page < total_pages:
            links.append(link(page + 1, "next"))
        if page > 1:
            links.append(link(page - 1, "prev"))
        links += [link(1, "first"), link(total_pages, "last")]
        headers["Link"] = ", ".join(links)
        return Reply(200, chunk, headers)

    # --- routes ------------------------------------------------------------------------
    def _routes_added(self) -> None:
        def authed(handler: Any) -> Any:
            def wrapped(request: Request) -> Any:
                caller = self._caller(request)
                if isinstance(caller, Reply):
                    return caller
                return handler(request, caller)

            return wrapped

        def get(pattern: str) -> Any:
            def add(handler: Any) -> Any:
                self.add("GET", API + pattern, authed(handler))
                return handler

            return add

        not_found = {"message": "404 Not found"}

        @get("/user")
        def me(request: Request, caller: dict[str, Any]) -> Any:
            data = self._full(caller, caller["is_admin"])
            data["email"] = caller["email"]
            if caller["is_admin"]:
                data["is_admin"] = True
            return data

        @get("/personal_access_tokens/self")
        def token_self(request: Request, caller: dict[str, Any]) -> Any:
            value = request.headers.get("private-token", "")
            token = self.tokens[value]
            return {
                "id": 1,
                "name": "toolpass",
                "revoked": False,
                "created_at": "2024-01-01T00:00:00.000Z",
                "scopes": token.scopes,
                "user_id": token.user_id,
                "active": True,
                "expires_at": None,
            }

        @get("/users")
        def users(request: Request, caller: dict[str, Any]) -> Any:
            admin = caller["is_admin"]
            if request.arg("extern_uid") and request.arg("provider") and not admin:
                return Reply(403, {"message": "403 Forbidden"})  # authenticated_as_admin!
            found = sorted(self.users.values(), key=lambda u: u["id"])
            username = request.arg("username")
            search = request.arg("search")
            extern_uid, provider = request.arg("extern_uid"), request.arg("provider")
            if username is not None:
                found = [u for u in found if u["username"].lower() == username.lower()]
            if search is not None:
                s = search.lower()

                def hit(u: dict[str, Any]) -> bool:
                    emails = [u["public_email"].lower()] if u["public_email"] else []
                    if admin:
                        emails.append(u["email"].lower())
                    return s in u["username"].lower() or s in u["name"].lower() or s in emails

                found = [u for u in found if hit(u)]
            if extern_uid is not None and provider is not None:
                found = [
                    u
                    for u in found
                    if any(
                        i["provider"] == provider and i["extern_uid"] == extern_uid
                        for i in u["identities"]
                    )
                ]
            shaped = [self._full(u, True) if admin else self._basic(u) for u in found]
            return self._page(request, shaped)

        @get(r"/users/(?P<uid>\d+)")
        def user(request: Request, caller: dict[str, Any]) -> Any:
            found = self.users.get(int(request.params["uid"]))
            if found is None:
                return Reply(404, {"message": "404 User Not Found"})
            return self._full(found, caller["is_admin"])

        @get(f"/projects/{ID}")
        def project(request: Request, caller: dict[str, Any]) -> Any:
            found = self._project(request.params["id"])
            if found is None or not self._visible("project", found, caller):
                return Reply(404, {"message": "404 Project Not Found"})
            return found

        @get(f"/groups/{ID}")
        def group(request: Request, caller: dict[str, Any]) -> Any:
            found = self._group(request.params["id"])
            if found is None or not self._visible("group", found, caller):
                return Reply(404, {"message": "404 Group Not Found"})
            return found

        def member_all(kind: str) -> Any:
            def handler(request: Request, caller: dict[str, Any]) -> Any:
                if kind == "project":
                    thing = self._project(request.params["id"])
                    path = thing["path_with_namespace"] if thing else ""
                else:
                    thing = self._group(request.params["id"])
                    path = thing["full_path"] if thing else ""
                if thing is None or not self._visible(kind, thing, caller):
                    return Reply(404, {"message": f"404 {kind.title()} Not Found"})
                uid = int(request.params["uid"])
                entry = self.effective(kind, path, uid)
                if entry is None or uid not in self.users:
                    return Reply(404, not_found)
                return {
                    **self._basic(self.users[uid]),
                    "created_at": "2024-01-01T00:00:00.000Z",
                    "expires_at": None,
                    "membership_state": "active",
                    **entry,
                }

            return handler

        get(rf"/projects/{ID}/members/all/(?P<uid>\d+)")(member_all("project"))
        get(rf"/groups/{ID}/members/all/(?P<uid>\d+)")(member_all("group"))

        def visible_project(request: Request, caller: dict[str, Any]) -> dict[str, Any] | None:
            found = self._project(request.params["id"])
            if found is None or not self._visible("project", found, caller):
                return None
            return found

        @get(f"/projects/{ID}/protected_branches")
        def protected(request: Request, caller: dict[str, Any]) -> Any:
            found = visible_project(request, caller)
            if found is None:
                return Reply(404, {"message": "404 Project Not Found"})
            return self._page(request, self.protected.get(found["path_with_namespace"], []))

        @get(f"/projects/{ID}/protected_tags")
        def protected_tags(request: Request, caller: dict[str, Any]) -> Any:
            found = visible_project(request, caller)
            if found is None:
                return Reply(404, {"message": "404 Project Not Found"})
            return self._page(request, self.protected_tags.get(found["path_with_namespace"], []))

        @get(f"/projects/{ID}/protected_branches/(?P<name>.+)")
        def protected_one(request: Request, caller: dict[str, Any]) -> Any:
            found = visible_project(request, caller)
            if found is None:
                return Reply(404, {"message": "404 Project Not Found"})
            name = unquote(request.params["name"])
            rules = self.protected.get(found["path_with_namespace"], [])
            rule = next((r for r in rules if r["name"] == name), None)
            return rule if rule is not None else Reply(404, {"message": "404 Not found"})

        @get(rf"/projects/{ID}/merge_requests/(?P<iid>\d+)")
        def merge_request(request: Request, caller: dict[str, Any]) -> Any:
            found = visible_project(request, caller)
            mr = found and self.merge_requests.get(
                (found["path_with_namespace"], int(request.params["iid"]))
            )
            return mr or Reply(404, {"message": "404 Not found"})

        @get(rf"/projects/{ID}/issues/(?P<iid>\d+)")
        def issue(request: Request, caller: dict[str, Any]) -> Any:
            found = visible_project(request, caller)
            item = found and self.issues.get(
                (found["path_with_namespace"], int(request.params["iid"]))
            )
            return item or Reply(404, {"message": "404 Not found"})

        def saml_group(request: Request, caller: dict[str, Any]) -> dict[str, Any] | Reply:
            found = self._group(request.params["id"])
            if found is None or not self._visible("group", found, caller):
                return Reply(404, {"message": "404 Group Not Found"})
            entry = self.effective("group", found["full_path"], caller["id"])
            if not caller["is_admin"] and (entry is None or entry["access_level"] < 50):
                return Reply(403, {"message": "403 Forbidden"})
            return found

        @get(f"/groups/{ID}/saml_users")
        def saml_users(request: Request, caller: dict[str, Any]) -> Any:
            found = saml_group(request, caller)
            if isinstance(found, Reply):
                return found
            ids = set(self.saml.get(found["full_path"], {}).values())
            search = (request.arg("search") or "").lower()
            users = []
            for uid in sorted(ids):
                u = self.users[uid]
                text = (u["username"] + " " + u["name"] + " " + u["email"]).lower()
                if search in text:
                    users.append(
                        {**self._full(u, True), "email": u["email"], "identities": u["identities"]}
                    )
            return self._page(request, users)

        @get(f"/groups/{ID}/saml/(?P<uid>[^/]+)")
        def saml_identity(request: Request, caller: dict[str, Any]) -> Any:
            found = saml_group(request, caller)
            if isinstance(found, Reply):
                return found
            extern_uid = unquote(request.params["uid"])
            if extern_uid == "identities":
                pairs = self.saml.get(found["full_path"], {}).items()
                return self._page(request, [{"extern_uid": k, "user_id": v} for k, v in pairs])
            uid = self.saml.get(found["full_path"], {}).get(extern_uid)
            if uid is None:
                return Reply(404, {"message": "404 Not found"})
            return {"extern_uid": extern_uid, "user_id": uid}

    def rate_limit(self, *, times: int = 1, path: str | None = None) -> None:
        """GitLab's throttle (Rack::Attack): 429, plain text, Retry-After and RateLimit-*."""
        self.fail(
            429,
            body=b"Retry later\n",
            retry_after=60,
            headers={"Content-Type": "text/plain", "RateLimit-Remaining": "0"},
            times=times,
            path=path,
        )
