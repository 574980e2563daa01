"""A fake Kubernetes API server: the authorization.k8s.io/v1 reviews, /version, RBAC.

It speaks the documented shapes: reviews are created with ``POST`` and answered ``201
Created`` with the object echoed and ``status`` filled (``allowed`` always, ``denied``,
``reason`` and ``evaluationError`` only when set, as Go's ``omitempty`` does); failures are
``Status`` objects (``401 Unauthorized``, ``403 Forbidden`` naming the user, verb and
resource, ``400 BadRequest``, ``422 Invalid`` with ``details.causes``).

State a test sets:

- ``tokens``: bearer token -> (user, groups) the API server authenticates it as
  (``system:authenticated`` is added, as the real authenticator does);
- ``bind(...)``: RBAC bindings (a ClusterRoleBinding without ``namespace``, a RoleBinding
  with one) of rules to users and groups; ``rules=None`` is a binding whose role is missing,
  which RBAC reports as an ``evaluationError`` when nothing else allows the request;
- ``deny(...)``: an explicit deny, as a webhook authorizer gives (``denied: true``);
- ``deployments``: (namespace, name) -> replicas, served as the ``autoscaling/v1`` ``Scale``
  subresource (``GET``, ``PUT`` and ``PATCH /apis/apps/v1/namespaces/<ns>/deployments/<name>/
  scale``, a JSON merge or strategic merge patch of ``spec.replicas``) to a caller whose token
  RBAC allows the verb on ``deployments/scale`` (``403 Forbidden`` otherwise, ``404 NotFound``
  for a Deployment that does not exist).

The engine's token needs ``create subjectaccessreviews`` like any other caller (or
``localsubjectaccessreviews`` in the namespace); ``selfsubjectaccessreviews`` and
``/version`` are open to every authenticated user, as the default ``system:basic-user`` and
``system:public-info-viewer`` roles make them.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fakes.server import FakeServer, Reply, Request

ENGINE_TOKEN = "engine-token"
ENGINE_USER = "system:serviceaccount:toolpass:engine"
AUTHENTICATED = "system:authenticated"
API = "/apis/authorization.k8s.io/v1"


@dataclass
class Rule:
    """One RBAC PolicyRule."""

    verbs: Sequence[str]
    api_groups: Sequence[str] = ("",)
    resources: Sequence[str] = ()
    resource_names: Sequence[str] = ()
    non_resource_urls: Sequence[str] = ()


@dataclass
class Binding:
    name: str
    role: str
    rules: list[Rule] | None  # None: the role it names does not exist
    users: Sequence[str] = ()
    groups: Sequence[str] = ()
    namespace: str | None = None  # None: a ClusterRoleBinding


@dataclass
class Deny:
    """An explicit deny by a webhook authorizer, for a user or group and a verb/resource."""

    verb: str
    resource: str
    users: Sequence[str] = ()
    groups: Sequence[str] = ()
    reason: str = "denied by the policy webhook"


@dataclass
class Attributes:
    user: str
    groups: list[str]
    verb: str
    namespace: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str | None = None


@dataclass
class Verdict:
    allowed: bool
    denied: bool = False
    reason: str = ""
    error: str = ""


def status_reply(code: int, reason: str, message: str, **details: Any) -> Reply:
    """A metav1.Status failure."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return Reply(code, body)


class FakeKubernetes(FakeServer):
    """See the module docstring."""

    def __init__(self, *, tls: tuple[str, str] | None = None, git_version: str = "v1.31.2") -> None:
        super().__init__(tls=tls)
        self.git_version = git_version
        self.tokens: dict[str, tuple[str, list[str]]] = {}
        self.bindings: list[Binding] = []
        self.denies: list[Deny] = []
        self.add("GET", "/version/?", self._version)
        self.add("POST", f"{API}/subjectaccessreviews", self._sar)
        self.add("POST", f"{API}/selfsubjectaccessreviews", self._self_sar)
        self.add("POST", f"{API}/namespaces/(?P<ns>[^/]+)/localsubjectaccessreviews", self._local)
        self.deployments: dict[tuple[str, str], int] = {}
        scale = "/apis/apps/v1/namespaces/(?P<ns>[^/]+)/deployments/(?P<name>[^/]+)/scale"
        for method in ("GET", "PUT", "PATCH"):
            self.add(method, scale, self._scale)
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):  # last: what nothing serves
            self.add(method, ".*", self._not_found)

    # --- state -------------------------------------------------------------------------
    def add_token(self, token: str, user: str, groups: Sequence[str] = ()) -> None:
        self.tokens[token] = (user, list(groups))

    def bind(
        self,
        name: str,
        rules: list[Rule] | None,
        *,
        users: Sequence[str] = (),
        groups: Sequence[str] = (),
        namespace: str | None = None,
        role: str | None = None,
    ) -> None:
        self.bindings.append(Binding(name, role or name, rules, users, groups, namespace))

    def deny(self, verb: str, resource: str, **who: Any) -> None:
        self.deny_rule(Deny(verb, resource, **who))

    def deny_rule(self, rule: Deny) -> None:
        self.denies.append(rule)

    def reviews(self) -> list[dict[str, Any]]:
        """The bodies of the SubjectAccessReviews and LocalSubjectAccessReviews received."""
        return [
            r.json()
            for r in self.requests
            if r.method == "POST"
            and r.path.endswith("subjectaccessreviews")
            and "selfsubject" not in r.path
        ]

    def engine(self, *, may_review: bool = True, local_in: Sequence[str] = ()) -> None:
        """The engine's ServiceAccount and (optionally) its permission to create reviews."""
        self.add_token(ENGINE_TOKEN, ENGINE_USER, ["system:serviceaccounts"])
        if may_review:
            self.bind(
                "toolpass-engine",
                [Rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"])],
                users=[ENGINE_USER],
            )
        for ns in local_in:
            self.bind(
                f"toolpass-engine-{ns}",
                [Rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"])],
                users=[ENGINE_USER],
                namespace=ns,
            )

    # --- authorization -----------------------------------------------------------------
    def authorize(self, a: Attributes) -> Verdict:
        """The webhook's explicit denies first, then RBAC (allow or no opinion)."""
        subjects = {("User", a.user), *(("Group", g) for g in a.groups)}
        for d in self.denies:
            who = {("User", u) for u in d.users} | {("Group", g) for g in d.groups}
            wanted = a.resource + (f"/{a.subresource}" if a.subresource else "")
            if who & subjects and d.verb in (a.verb, "*") and d.resource in (wanted, "*"):
                return Verdict(False, True, d.reason)
        errors = []
        for b in self.bindings:
            if not any(s in subjects for s in self._subjects(b)):
                continue
            if b.namespace is not None and (a.path is not None or b.namespace != a.namespace):
                continue
            if b.rules is None:
                kind = "clusterrole" if b.namespace is None else "role"
                errors.append(f'{kind}.rbac.authorization.k8s.io "{b.role}" not found')
                continue
            for rule in b.rules:
                if _matches(rule, a):
                    kind = "ClusterRoleBinding" if b.namespace is None else "RoleBinding"
                    where = f'"{b.name}"' if b.namespace is None else f'"{b.name}/{b.namespace}"'
                    subject = next(f'{k} "{n}"' for k, n in self._subjects(b) if (k, n) in subjects)
                    role = "ClusterRole" if b.namespace is None else "Role"
                    return Verdict(
                        True,
                        reason=f'RBAC: allowed by {kind} {where} of {role} "{b.role}" to {subject}',
                    )
        return Verdict(False, error="[" + ", ".join(errors) + "]" if errors else "")

    @staticmethod
    def _subjects(b: Binding) -> list[tuple[str, str]]:
        return [("User", u) for u in b.users] + [("Group", g) for g in b.groups]

    def _caller(self, request: Request) -> tuple[str, list[str]] | Reply:
        header = request.headers.get("authorization", "")
        token = header[7:] if header.startswith("Bearer ") else None
        if token is None or token not in self.tokens:
            return status_reply(401, "Unauthorized", "Unauthorized")
        user, groups = self.tokens[token]
        return user, [*groups, AUTHENTICATED]

    def _forbidden(self, user: str, resource: str, namespace: str = "") -> Reply:
        scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        return status_reply(
            403,
            "Forbidden",
            f'{resource}.authorization.k8s.io is forbidden: User "{user}" cannot create '
            f'resource "{resource}" in API group "authorization.k8s.io" {scope}',
            group="authorization.k8s.io",
            kind=resource,
        )

    # --- handlers ----------------------------------------------------------------------
    def _not_found(self, request: Request) -> Reply:
        caller = self._caller(request)
        if isinstance(caller, Reply):
            return caller
        return status_reply(404, "NotFound", "the server could not find the requested resource")

    def _version(self, request: Request) -> dict[str, Any] | Reply:
        caller = self._caller(request)
        if isinstance(caller, Reply):
            return caller
        major, minor = self.git_version.lstrip("v").split(".")[:2]
        return {
            "major": major,
            "minor": minor,
            "gitVersion": self.git_version,
            "gitCommit": "0" * 40,
            "gitTreeState": "clean",
            "buildDate": "2024-10-22T20:28:14Z",
            "goVersion": "go1.22.8",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    def _body(self, request: Request, kind: str) -> dict[str, Any] | Reply:
        try:
            body = request.json()
        except ValueError:
            return status_reply(
                400, "BadRequest", "the body of the request was in an unknown format"
            )
        if not isinstance(body, dict) or body.get("kind", kind) != kind:
            return status_reply(400, "BadRequest", f"the body is not a {kind}")
        return body

    def _invalid(self, kind: str, causes: list[tuple[str, str]]) -> Reply:
        text = ", ".join(f"{f}: {m}" for f, m in causes)
        text = f"[{text}]" if len(causes) > 1 else text
        return status_reply(
            422,
            "Invalid",
            f'{kind}.authorization.k8s.io "" is invalid: {text}',
            name="",
            group="authorization.k8s.io",
            kind=kind,
            causes=[{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes],
        )

    def _review(
        self, body: dict[str, Any], kind: str, user: str | None, groups: list[str] | None
    ) -> Reply:
        spec = body.get("spec") or {}
        res = spec.get("resourceAttributes")
        non = spec.get("nonResourceAttributes")
        causes = []
        if res is not None and non is not None:
            causes.append(
                (
                    "spec.nonResourceAttributes",
                    "cannot be specified in combination with resourceAttributes",
                )
            )
        if res is None and non is None:
            causes.append(
                (
                    "spec",
                    "Invalid value: null: exactly one of nonResourceAttributes or "
                    "resourceAttributes must be specified",
                )
            )
        if user is None and not spec.get("user") and not spec.get("groups"):
            causes.append(
                ("spec.user", 'Invalid value: "": at least one of user or group must be specified')
            )
        if causes:
            return self._invalid(kind, causes)
        if user is None:
            user, groups = spec.get("user", ""), list(spec.get("groups") or [])
        assert groups is not None
        if non is not None:
            a = Attributes(user, groups, non.get("verb", ""), path=non.get("path", ""))
        else:
            a = Attributes(
                user,
                groups,
                res.get("verb", ""),
                res.get("namespace", ""),
                res.get("group", ""),
                res.get("resource", ""),
                res.get("subresource", ""),
                res.get("name", ""),
            )
        verdict = self.authorize(a)
        status: dict[str, Any] = {"allowed": verdict.allowed}
        if verdict.denied:
            status["denied"] = True
        if verdict.reason:
            status["reason"] = verdict.reason
        if verdict.error and not verdict.allowed:
            status["evaluationError"] = verdict.error
        answer = copy.deepcopy(body)
        answer.setdefault("apiVersion", "authorization.k8s.io/v1")
        answer["kind"] = kind
        answer["metadata"] = {**(body.get("metadata") or {}), "creationTimestamp": None}
        answer["status"] = status
        return Reply(201, answer)

    def _may_create(self, caller: tuple[str, list[str]], resource: str, ns: str = "") -> bool:
        user, groups = caller
        a = Attributes(user, groups, "create", ns, "authorization.k8s.io", resource)
        return self.authorize(a).allowed

    def _sar(self, request: Request) -> Reply:
        caller = self._caller(request)
        if isinstance(caller, Reply):
            return caller
        if not self._may_create(caller, "subjectaccessreviews"):
            return self._forbidden(caller[0], "subjectaccessreviews")
        body = self._body(request, "SubjectAccessReview")
        if isinstance(body, Reply):
            return body
        return self._review(body, "SubjectAccessReview", None, None)

    def _local(self, request: Request) -> Reply:
        caller = self._caller(request)
        if isinstance(caller, Reply):
            return caller
        ns = request.params["ns"]
        if not self._may_create(caller, "localsubjectaccessreviews", ns):
            return self._forbidden(caller[0], "localsubjectaccessreviews", ns)
        body = self._body(request, "LocalSubjectAccessReview")
        if isinstance(body, Reply):
            return body
        spec = body.get("spec") or {}
        res = spec.get("resourceAttributes")
        if spec.get("nonResourceAttributes") is not None:
            return self._invalid(
                "LocalSubjectAccessReview",
                [("spec.nonResourceAttributes", "disallowed on this kind of request")],
            )
        meta_ns = (body.get("metadata") or {}).get("namespace", "")
        if res is not None and res.get("namespace", "") != meta_ns:
            return self._invalid(
                "LocalSubjectAccessReview",
                [("spec.resourceAttributes.namespace", "must match metadata.namespace")],
            )
        if meta_ns != ns:
            return status_reply(
                400, "BadRequest", f"spec.resourceAttributes.namespace must match namespace: {ns}"
            )
        return self._review(body, "LocalSubjectAccessReview", None, None)

    def _self_sar(self, request: Request) -> Reply:
        caller = self._caller(request)
        if isinstance(caller, Reply):
            return caller
        body = self._body(request, "SelfSubjectAccessReview")
        if isinstance(body, Reply):
            return body
        return self._review(body, "SelfSubjectAccessReview", caller[0], caller[1])

    def _scale(self, request: Request) -> Reply:
        caller = self._caller(request)
        if isinstance(caller, Reply):
            return caller
        ns, name = request.params["ns"], request.params["name"]
        verb = {"GET": "get", "PUT": "update", "PATCH": "patch"}[request.method]
        a = Attributes(caller[0], caller[1], verb, ns, "apps", "deployments", "scale", name)
        if not self.authorize(a).allowed:
            return status_reply(
                403,
                "Forbidden",
                f'deployments.apps "{name}" is forbidden: User "{caller[0]}" cannot {verb} '
                f'resource "deployments/scale" in API group "apps" in the namespace "{ns}"',
                name=name,
                group="apps",
                kind="deployments",
            )
        if (ns, name) not in self.deployments:
            return status_reply(
                404,
                "NotFound",
                f'deployments.apps "{name}" not found',
                name=name,
                group="apps",
                kind="deployments",
            )
        if request.method != "GET":
            body = self._body(request, "Scale")
            if isinstance(body, Reply):
                return body
            replicas = (body.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                return status_reply(
                    422,
                    "Invalid",
                    f'Scale.autoscaling "{name}" is invalid: spec.replicas: must be >= 0',
                    name=name,
                    group="autoscaling",
                    kind="Scale",
                )
            self.deployments[ns, name] = replicas
        replicas = self.deployments[ns, name]
        return Reply(
            200,
            {
                "kind": "Scale",
                "apiVersion": "autoscaling/v1",
                "metadata": {"name": name, "namespace": ns, "resourceVersion": "1"},
                "spec": {"replicas": replicas},
                "status": {"replicas": replicas, "selector": f"app={name}"},
            },
        )


def _matches(rule: Rule, a: Attributes) -> bool:
    """RBAC's rule matching (pkg/apis/rbac/v1/evaluation_helpers.go)."""
    if not ("*" in rule.verbs or a.verb in rule.verbs):
        return False
    if a.path is not None:
        return any(
            u == "*" or u == a.path or (u.endswith("*") and a.path.startswith(u[:-1]))
            for u in rule.non_resource_urls
        )
    if not ("*" in rule.api_groups or a.group in rule.api_groups):
        return False
    wanted = a.resource + (f"/{a.subresource}" if a.subresource else "")
    if not any(
        r == "*" or r == wanted or (a.subresource and r == f"*/{a.subresource}")
        for r in rule.resources
    ):
        return False
    if rule.resource_names:
        return bool(a.name) and a.name in rule.resource_names
    return True


__all__ = [
    "API",
    "AUTHENTICATED",
    "ENGINE_TOKEN",
    "ENGINE_USER",
    "Binding",
    "Deny",
    "FakeKubernetes",
    "Rule",
    "status_reply",
]
