"""A fake Argo CD API server on 127.0.0.1 (and the Kubernetes ConfigMap read beside it), from
Argo CD's documented REST shapes (assets/swagger.json):

- ``GET /api/v1/projects/{name}``: an AppProject with ``spec.roles[]`` (``name``,
  ``policies``, ``groups``); 404 for no such project; ``GET /api/v1/projects``: ``items``;
- ``GET /api/v1/applications/{name}`` (``appNamespace``): an Application; a missing one is
  403 ``permission denied``, as Argo CD answers so as not to leak existence;
- ``GET /api/v1/applicationsets/{name}``, ``/clusters/{server}``, ``/repositories/{url}``;
- ``GET /api/v1/applications/{name}/syncwindows`` (``appNamespace``): ``canSync`` (whether
  a manual sync is allowed now: ``blocked`` lists the applications a window blocks), with the
  assigned and active windows;
- ``GET /api/v1/session/userinfo``; ``POST /api/v1/applications/{name}/sync``;
- the Kubernetes API's ``GET /api/v1/namespaces/{ns}/configmaps/{name}`` (``data``).

Credentials: ``Authorization: Bearer`` with the engine's Argo CD token (or the Kubernetes
token for the ConfigMap); otherwise 401 ``{"error", "code": 16, "message"}``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from fakes.server import FakeServer, Reply, Request

TOKEN, KUBE_TOKEN = "argocd-engine-token-1", "kube-sa-token-1"


def _error(status: int, text: str, code: int) -> Reply:
    return Reply(status, {"error": text, "code": code, "message": text})


class FakeArgoCD(FakeServer):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.rbac: dict[str, str] = {}
        self.projects: dict[str, list[dict[str, Any]]] = {}
        self.apps: dict[tuple[str, str], dict[str, Any]] = {}  # (namespace, name) -> app
        self.appsets: dict[str, str] = {}  # name -> project
        self.clusters: dict[str, dict[str, str]] = {}
        self.repos: dict[str, dict[str, str]] = {}
        self.synced: list[str] = []
        self.blocked: set[tuple[str, str]] = set()  # (namespace, name) a sync window blocks
        self.add("GET", r"/api/v1/namespaces/(?P<ns>[^/]+)/configmaps/(?P<name>[^/]+)", self._cm)
        self.add("GET", r"/api/v1/projects", self._projects)
        self.add("GET", r"/api/v1/projects/(?P<name>[^/]+)", self._project)
        self.add("GET", r"/api/v1/applications/(?P<name>[^/]+)", self._app)
        self.add("POST", r"/api/v1/applications/(?P<name>[^/]+)/sync", self._sync)
        self.add("GET", r"/api/v1/applications/(?P<name>[^/]+)/syncwindows", self._windows)
        self.add("GET", r"/api/v1/applicationsets/(?P<name>[^/]+)", self._appset)
        self.add("GET", r"/api/v1/clusters/(?P<id>[^/]+)", self._cluster)
        self.add("GET", r"/api/v1/repositories/(?P<id>[^/]+)", self._repo)
        self.add("GET", r"/api/v1/session/userinfo", self._userinfo)

    def _ok(self, request: Request, token: str = TOKEN) -> bool:
        return request.headers.get("authorization", "") == f"Bearer {token}"

    def _denied(self) -> Reply:
        return _error(401, "no session information", 16)

    def _cm(self, request: Request) -> Reply:
        if not self._ok(request, KUBE_TOKEN):
            return Reply(401, {"kind": "Status", "status": "Failure", "message": "Unauthorized"})
        if (request.params["ns"], request.params["name"]) != ("argocd", "argocd-rbac-cm"):
            return Reply(404, {"kind": "Status", "status": "Failure", "message": "not found"})
        return Reply(
            200, {"kind": "ConfigMap", "metadata": {"name": "argocd-rbac-cm"}, "data": self.rbac}
        )

    def _projects(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        return Reply(200, {"items": [{"metadata": {"name": n}} for n in self.projects]})

    def _project(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        name = request.params["name"]
        if name not in self.projects:
            return _error(404, f'appprojects.argoproj.io "{name}" not found', 5)
        return Reply(
            200,
            {
                "metadata": {"name": name, "namespace": "argocd"},
                "spec": {"sourceRepos": ["*"], "roles": self.projects[name]},
            },
        )

    def _app(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        key = (request.arg("appNamespace") or "argocd", request.params["name"])
        if key not in self.apps:
            return _error(403, "permission denied", 7)
        return Reply(200, self.apps[key])

    def _windows(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        key = (request.arg("appNamespace") or "argocd", request.params["name"])
        if key not in self.apps:
            return _error(403, "permission denied", 7)
        window = {"kind": "deny", "schedule": "0 0 * * *", "duration": "24h", "manualSync": False}
        blocked = key in self.blocked
        windows = [window] if blocked else []
        return Reply(
            200, {"assignedWindows": windows, "activeWindows": windows, "canSync": not blocked}
        )

    def _sync(self, request: Request) -> Reply:
        if not self._ok(request) and not request.headers.get("authorization"):
            return self._denied()
        self.synced.append(request.params["name"])
        key = ("argocd", request.params["name"])
        return Reply(200, self.apps.get(key, {}))

    def _appset(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        name = request.params["name"]
        if name not in self.appsets:
            return _error(403, "permission denied", 7)
        spec = {"template": {"metadata": {}, "spec": {"project": self.appsets[name]}}}
        return Reply(200, {"metadata": {"name": name, "namespace": "argocd"}, "spec": spec})

    def _cluster(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        ident = unquote(request.params["id"])
        for c in self.clusters.values():
            if ident == (c["name"] if request.arg("id.type") == "name" else c["server"]):
                return Reply(200, c)
        return _error(403, "permission denied", 7)

    def _repo(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        repo = self.repos.get(unquote(request.params["id"]))
        return Reply(200, repo) if repo else _error(403, "permission denied", 7)

    def _userinfo(self, request: Request) -> Reply:
        if not self._ok(request):
            return self._denied()
        return Reply(200, {"loggedIn": True, "username": "toolpass", "iss": "argocd"})

    def add_app(self, name: str, project: str, namespace: str = "argocd") -> None:
        self.apps[(namespace, name)] = {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "project": project,
                "destination": {"server": "https://kubernetes.default.svc"},
            },
            "status": {"sync": {"status": "Synced"}},
        }


POLICY = """
p, role:deployer, applications, get, team-a/*, allow
p, role:deployer, applications, sync, team-a/*, allow
p, role:deployer, applications, sync, team-a/frozen, deny
p, role:deployer, applications, action/apps/Deployment/restart, team-a/*, allow
p, role:deployer, applications, update/*/ConfigMap/*, team-a/*, allow
p, role:deployer, logs, get, team-a/*, allow
g, dana, role:deployer
g, sre, role:admin
p, erin, clusters, get, https://prod.example.com, allow
p, frank, projects, get, "{team-a,team-b}", allow
p, frank, repositories, get, team-?/*, allow
"""


def populate(fake: FakeArgoCD) -> FakeArgoCD:
    fake.rbac = {"policy.csv": POLICY, "policy.default": "", "scopes": "[groups, email]"}
    fake.projects["team-a"] = [
        {
            "name": "viewers",
            "policies": ["p, proj:team-a:viewers, applications, get, team-a/*, allow"],
            "groups": ["auditors"],
        }
    ]
    fake.projects["team-b"] = []
    fake.projects["default"] = []
    for name in ("guestbook", "frozen"):
        fake.add_app(name, "team-a")
    fake.add_app("billing", "team-b")
    fake.add_app("guestbook", "team-a", namespace="apps")
    fake.appsets["fleet"] = "team-a"
    fake.clusters["prod"] = {"server": "https://prod.example.com", "name": "prod", "project": ""}
    fake.repos["https://git.example.com/a.git"] = {
        "repo": "https://git.example.com/a.git",
        "project": "team-a",
    }
    return fake
