"""Argo CD: its RBAC policy, evaluated from live data as Argo CD's API server evaluates it.

Argo CD answers "may I?" only for the caller (``/api/v1/account/can-i``), so the engine reads
what Argo CD's enforcer reads and evaluates it the same way (``util/rbac/rbac.go``,
``server/rbacpolicy/rbacpolicy.go``, ``assets/model.conf``, Argo CD 3.x):

- the policy: the built-in ``role:readonly`` / ``role:admin`` lines (``assets/builtin-policy.csv``),
  then ``policy.csv`` and every ``policy.<overlay>.csv`` of the ``argocd-rbac-cm`` ConfigMap
  (read through the Kubernetes API, or from the ConfigMap mounted as a directory), its
  ``policy.default``, ``policy.matchMode`` (glob or regex) and ``scopes``;
- the object's project (``GET /api/v1/projects/{name}`` on Argo CD): its roles' policies and
  groups (``p, proj:<p>:<role>, ...`` and ``g, <group>, proj:<p>:<role>``), added for
  applications, applicationsets, logs, exec, clusters, repositories and projects objects.

A request ``(resource, action, object)`` is allowed when ``policy.default`` allows it, or the
user's subject does, or one of the user's groups that some ``g`` line names does; each
subject is evaluated as Casbin does: some ``p`` line of the subject or of a role it reaches
through ``g`` lines (10 levels) matches resource, action and object (glob, or Go regex) with
``allow``, and none with ``deny``. A policy line Argo CD could not load makes the check
unknown. What is not evaluated: ``server.rbac`` settings other than ``rollback_enforce`` and
``fine_grained_inheritance``, and anonymous access.

Users are RBAC subjects: a local account name, or the OIDC ``sub`` (Dex:
``federated_claims.user_id``) through the shared identity modes. Their groups are the values
of the ``scopes`` claims: ``email`` is the user's email, the others come from a groups source
(``groups``, ``groups_file``, ``groups_url``, ``groups_resolve``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from toolpass.integrations._groups import group_list, source_groups
from toolpass.integrations._kit import Cache, known_action, ttl_key
from toolpass.integrations.argocd._rbac import BUILTIN_POLICY, Policy, parse_policy, parse_scopes
from toolpass.integrations.argocd._routes import LOOKUPS, NAME, complete, rbac_name
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Effect,
    Integration,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import Match, Request
from toolpass.wire import budget
from toolpass.wire.errors import ConfigError
from toolpass.wire.http import NetOptions, check_url
from toolpass.wire.identity import normalize_email
from toolpass.wire.watched import WatchedFile, json_or_yaml

__all__ = ["ArgoCD"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
_OPEN = {
    "applications.action": 3,  # action/<group>/<kind>/<action>
    "applications.update": 4,  # update/<group>/<kind>/<namespace>/<name>
    "applications.delete": 4,
}
_PROJECT_SCOPED = {"applications", "applicationsets", "logs", "exec", "clusters", "repositories"}
CREDENTIAL = (
    "Least privilege: a local account (argocd-cm: accounts.toolpass: apiKey) bound to a role "
    "that only reads (argocd-rbac-cm policy.csv: p, role:toolpass-engine, projects, get, *, "
    "allow; the same for applications and applicationsets on */* and clusters, repositories "
    "and write-repositories on *; g, toolpass, role:toolpass-engine), its token from `argocd "
    "account generate-token --account toolpass`; and the argocd-rbac-cm ConfigMap: a "
    "ServiceAccount token allowed to get configmaps/argocd-rbac-cm in Argo CD's namespace "
    "(a Role with resourceNames: [argocd-rbac-cm], verbs: [get]), or the ConfigMap mounted "
    "as a directory (policy_dir)."
)


def _groups_table(path: str, text: str) -> dict[str, Any]:
    """A groups file: emails (normalised) to lists of groups."""
    data = json_or_yaml(path, text, "groups file")
    if not isinstance(data, dict):
        raise LookupFailed(f"groups file {path} must map emails to lists of groups")
    table: dict[str, Any] = {}
    for email, groups in data.items():
        try:
            table[normalize_email(str(email))] = groups
        except LookupFailed:
            continue  # an address that could pose as another is no one's
    return table


class ArgoCD(Integration):
    """Argo CD, through its RBAC policy and AppProject roles, evaluated live."""

    name = "argocd"
    description = (
        "Argo CD RBAC: the argocd-rbac-cm policy (built-in roles, policy.csv and overlays, "
        "policy.default, glob or regex matching, deny effects, scopes) and the object's "
        "AppProject roles (GET /api/v1/projects/{name}), read live and evaluated as Argo CD's "
        "enforcer does (default role, subject, then the user's groups). Actions are "
        "<resource>.<action> (applications.sync, clusters.get, ...); objects "
        "<project>/<app>, <project>/<namespace>/<app>, or app:<name> read live. " + CREDENTIAL
    )
    default_url = "https://argocd-server.argocd.svc"
    actions = ACTIONS
    keys = (
        ConfigKey("token", "The engine account's Argo CD API token (bearer).", secret=True),
        ConfigKey(
            "namespace",
            "Argo CD's own namespace: where argocd-rbac-cm lives and where an application "
            "is named <project>/<app> (elsewhere <project>/<namespace>/<app>).",
            default="argocd",
        ),
        ConfigKey(
            "policy_from",
            "Where argocd-rbac-cm is read: kubernetes (kubernetes_url, kubernetes_token) or "
            "dir (policy_dir: the ConfigMap mounted as a volume).",
            default="kubernetes",
            choices=("kubernetes", "dir"),
        ),
        ConfigKey(
            "kubernetes_url", "The Kubernetes API server.", default="https://kubernetes.default.svc"
        ),
        ConfigKey(
            "kubernetes_token",
            "A ServiceAccount token that may get configmaps/argocd-rbac-cm.",
            secret=True,
        ),
        ConfigKey("kubernetes_ca_file", "PEM roots for the Kubernetes API server."),
        ConfigKey("configmap", "The RBAC ConfigMap's name.", default="argocd-rbac-cm"),
        ConfigKey("policy_dir", "The directory where argocd-rbac-cm is mounted (policy_from dir)."),
        ConfigKey(
            "rollback_enforce",
            "server.rbac.rollback.enforce.enable: a rollback needs rollback (else sync).",
            default=False,
        ),
        ConfigKey(
            "revision_override",
            "application.sync.requireOverridePrivilegeForRevisionSync: a sync to a revision "
            "needs override too (the request hook).",
            default=False,
        ),
        ConfigKey(
            "fine_grained_inheritance",
            "Whether update/delete on an application covers its resources (Argo CD 3 default: "
            "no, server.rbac.disableApplicationFineGrainedRBACInheritance).",
            default=False,
        ),
        ConfigKey(
            "groups",
            "The claim values (groups) of each user for the scopes other than email: "
            "{email: [group, ...]}.",
            type="map",
        ),
        ConfigKey("groups_file", "A JSON or YAML file mapping emails to lists of groups."),
        ConfigKey(
            "groups_url",
            "A service answering GET <url>?email=&system=argocd&connection= with "
            '{"groups": [...]}; 404 or {"groups": null}: not known (unknown).',
        ),
        ConfigKey("groups_token", "A bearer token for groups_url.", secret=True),
        ConfigKey(
            "groups_resolve", "In code: resolve(email) -> list of groups or None.", type="any"
        ),
        ttl_key("policy", "the ConfigMap, a project and an object's project", 10.0),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kept = functools.partial(Cache.option, self, "policy_cache_ttl")
        self._configmap: Cache[str, dict[str, str]] = kept(1)
        self._projects: Cache[str, list[list[str]] | None] = kept()
        self._rbac_names: Cache[tuple[str, str], tuple[str, str]] = kept()
        self._group_sources: Cache[str, list[str] | None] = kept()
        path = str(self.options.get("groups_file") or "")
        self._groups_table = WatchedFile(
            path, functools.partial(_groups_table, path), "groups file"
        )

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        if options.get("token") is None:
            raise ConfigError("the engine's Argo CD token is needed", "token")
        if options.get("policy_from", "kubernetes") == "dir" and not options.get("policy_dir"):
            raise ConfigError("policy_from dir needs policy_dir", "policy_dir")
        if options.get("groups_url") is not None:
            check_url(options["groups_url"], "groups_url")
        if options.get("kubernetes_url") is not None:
            check_url(options["kubernetes_url"], "kubernetes_url")
        sources = [k for k in ("groups_file", "groups_url", "groups_resolve") if options.get(k)]
        if len(sources) > 1:
            raise ConfigError(f"choose one groups source, not {' and '.join(sources)}", sources[1])
        if options.get("groups_resolve") is not None and not callable(options["groups_resolve"]):
            raise ConfigError("must be a callable, given in code", "groups_resolve")
        if not NAME.fullmatch(str(options.get("namespace", "argocd"))):
            raise ConfigError("must be a Kubernetes namespace", "namespace")

    def auth_headers(self) -> Mapping[str, str]:
        return {"Authorization": f"Bearer {self.secret('token')}"}

    @classmethod
    def action(cls, name: str) -> Action | None:
        """A declared action, or a fine-grained one: ``applications.action/<group>/<kind>/
        <action>``, ``applications.update/<group>/<kind>/<namespace>/<name>`` (and delete)."""
        declared = super().action(name)
        if declared is not None or not isinstance(name, str) or "/" not in name:
            return declared
        head, _, rest = name.partition("/")
        parts = rest.split("/")
        if _OPEN.get(head) != len(parts) or any(c.isspace() for c in rest):
            return None
        verb = head.partition(".")[2]
        effect: Effect = "destructive" if verb == "delete" else "write"
        requires = f"Argo CD RBAC: applications, {verb}/{rest} on <project>/<app>"
        return Action(name, f"The Argo CD action {verb}/{rest}.", effect, requires)

    # --- the policy ----------------------------------------------------------------------
    @property
    def _home(self) -> str:
        return str(self.options.get("namespace", "argocd"))

    def _settings(self) -> dict[str, str]:
        def read() -> dict[str, str]:
            if self.options.get("policy_from", "kubernetes") == "dir":
                return self._read_dir(str(self.options["policy_dir"]))
            return self._read_configmap()

        return dict(self._configmap.get("", read))

    def _read_dir(self, path: str) -> dict[str, str]:
        try:
            names = [n for n in os.listdir(path) if not n.startswith(".")]
            data = {}
            for n in names:
                with open(os.path.join(path, n), encoding="utf-8") as f:
                    data[n] = f.read()
        except OSError as e:
            raise LookupFailed(f"argocd-rbac-cm could not be read from {path}: {e.strerror}")
        return data

    def _read_configmap(self) -> dict[str, str]:
        o = self.options
        ns, name = quote(str(o.get("namespace", "argocd"))), quote(str(o.get("configmap")))
        url = f"{str(o['kubernetes_url']).rstrip('/')}/api/v1/namespaces/{ns}/configmaps/{name}"
        what = f"read the ConfigMap {o.get('configmap')}"
        headers = {}
        if o.get("kubernetes_token") is not None:
            headers["Authorization"] = f"Bearer {self.secret('kubernetes_token')}"
        net = NetOptions(o.get("kubernetes_ca_file"), None, self.config.net.proxy_url)
        answer = self.http.request(
            "GET", url, headers=headers, timeout=budget.remaining(self.config.timeout), options=net
        )
        if answer.status != 200:
            raise self.failure(answer, what)
        cm = self.parse(answer, what)
        if not isinstance(cm.get("metadata"), dict):
            raise LookupFailed(f"the answer to {what} is not a ConfigMap")
        data = cm.get("data") or {}
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise LookupFailed(f"argocd's answer to {what} has no data")
        return dict(data)

    def _project(self, name: str) -> list[list[str]] | None:
        """The runtime policy of project ``name`` (None when there is no such project)."""
        if not NAME.fullmatch(name):
            return None
        return self._projects.get(name, lambda: self._read_project(name))

    def _read_project(self, name: str) -> list[list[str]] | None:
        what = f"read the project {name}"
        proj = self.get_json(f"/api/v1/projects/{quote(name)}", what=what, absent=(404,))
        found: list[list[str]] | None = None
        if proj is not None:
            if not isinstance(proj.get("metadata"), dict):
                raise LookupFailed(f"argocd's answer to {what} is not a project")
            lines = []
            for role in (proj.get("spec") or {}).get("roles") or []:
                if not isinstance(role, dict) or not isinstance(role.get("name"), str):
                    raise LookupFailed(f"argocd's answer to {what} has a malformed role")
                sub = f"proj:{name}:{role['name']}"
                lines.append(f"p, {sub}, projects, get, {name}, allow")
                lines += [str(p) for p in role.get("policies") or []]
                lines += [f"g, {g}, {sub}" for g in role.get("groups") or []]
            try:
                found = parse_policy("\n".join(lines), f"project {name}")
            except LookupFailed:
                found = []  # Argo CD falls back to the policy without the project's
        return found

    # --- objects read live ---------------------------------------------------------------
    def _lookup(self, kind: str, ref: str) -> tuple[str, str]:
        """(object, project) of ``kind:ref`` as Argo CD names it for RBAC, read live."""
        return self._rbac_names.get((kind, ref), lambda: self._read_rbac_name(kind, ref))

    def _read_rbac_name(self, kind: str, ref: str) -> tuple[str, str]:
        if kind in ("app", "appset"):
            ns, _, name = ref.rpartition("/")
            if not NAME.fullmatch(name) or (ns and not NAME.fullmatch(ns)):
                raise LookupFailed(f"{ref!r} is not an Argo CD {kind} name")
            param = "appNamespace" if kind == "app" else "appsetNamespace"
            path = f"/api/v1/{'applications' if kind == 'app' else 'applicationsets'}/{name}"
            data = self.get_json(path, what=f"read the {kind} {ref}", params={param: ns or None})
            spec, meta = data.get("spec"), data.get("metadata")
            if not isinstance(spec, dict) or not isinstance(meta, dict):
                raise LookupFailed(f"argocd's answer to read the {kind} {ref} is malformed")
            if kind == "appset":
                spec = ((spec.get("template") or {}).get("spec")) or {}
            project = spec.get("project") or "default"
            found = (
                rbac_name(self._home, project, str(meta.get("namespace") or ns), name),
                project,
            )
        else:
            base = {"cluster": "clusters", "cluster-name": "clusters"}.get(kind, "repositories")
            base = "write-repositories" if kind == "write-repo" else base
            params = {"id.type": "name"} if kind == "cluster-name" else None
            data = self.get_json(
                f"/api/v1/{base}/{quote(ref, safe='')}",
                what=f"read the {kind} {ref}",
                params=params,
            )
            target = data.get("server" if kind.startswith("cluster") else "repo")
            project = data.get("project") or ""
            if not isinstance(target, str) or not isinstance(project, str):
                raise LookupFailed(f"argocd's answer to read the {kind} {ref} is malformed")
            found = (f"{project}/{target}" if project else target, project)
        if not isinstance(found[1], str):
            raise LookupFailed(f"argocd's answer to read the {kind} {ref} is malformed")
        return found

    def _objects(self, rbac: str, resource: str) -> list[str]:
        """The RBAC objects ``resource`` stands for (two when it moves to another project)."""
        resource, _, moved = resource.partition("@")
        kind, colon, ref = resource.partition(":")
        if rbac in ("certificates", "gpgkeys"):
            return [""]
        if not (colon and kind in LOOKUPS):
            return [resource]
        obj, project = self._lookup(kind, ref)
        if not moved or moved == project:
            return [obj]
        if not NAME.fullmatch(moved):
            raise LookupFailed(f"{moved!r} is not a project name")
        return [obj, moved + obj[len(project) :] if project else f"{moved}/{obj}"]

    # --- groups --------------------------------------------------------------------------
    def _groups(self, email: str, scopes: list[str]) -> list[str]:
        email = normalize_email(email)
        found = [email] if "email" in scopes else []
        if all(s == "email" for s in scopes):
            return found
        o = self.options
        given = {normalize_email(k): v for k, v in (o.get("groups") or {}).items()}
        groups = given.get(email)
        if groups is None and o.get("groups_file"):
            groups = self._groups_table.get().get(email)
        elif groups is None and (o.get("groups_url") or o.get("groups_resolve")):
            groups = self._groups_source(email)
        if groups is None:
            if given or o.get("groups_file") or o.get("groups_url") or o.get("groups_resolve"):
                raise LookupFailed(f"the groups of {email} are not known")
            groups = []
        if not group_list(groups):
            raise LookupFailed(f"the groups of {email} are not a list of group names")
        return found + groups

    def _groups_source(self, email: str) -> list[str] | None:
        return self._group_sources.get(email, lambda: source_groups(self, email))

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        found = known_action(self, action)
        if isinstance(found, Decision):
            return found
        rbac, _, verb = action.partition(".")
        if found.terms.get("needs") == []:  # the agent's own session (actions.json)
            return Decision.allow("Argo CD checks no permission for the agent's own session")
        if not resource or len(resource) > 1024 or any(c.isspace() for c in resource):
            return Decision.unknown(f"{resource!r} is not an Argo CD object", cause="resource")
        needs = [tuple(n) for n in found.terms.get("needs") or [("applications", verb)]]
        if verb in ("action", "update-resource", "delete-resource"):
            return Decision.unknown(
                f"name the resource: {rbac}.{verb.partition('-')[0]}/<group>/<kind>/...",
                cause="resource",
            )
        if verb == "rollback" and not self.options.get("rollback_enforce"):
            needs = [("applications", "sync")]
        if "/" in verb:
            base = verb.partition("/")[0]
            inherit = base in ("update", "delete") and self.options.get("fine_grained_inheritance")
            needs = [("applications", verb)] + ([("applications", base)] if inherit else [])
            any_of = bool(inherit)
        else:
            any_of = False
        subject = self.user_id(user)
        if subject.startswith("proj:"):
            return Decision.unknown(f"{subject} is a project token, not a user", cause="identity")
        settings = self._settings()
        scopes = parse_scopes(settings.get("scopes"))
        groups = self._groups(user, scopes)
        objects = self._objects(rbac, resource)
        results = [
            self._enforce(subject, groups, settings, r, a, o) for r, a in needs for o in objects
        ]
        ok = any(r is not None for r in results) if any_of else all(r is not None for r in results)
        asked = " and ".join(f"{r}, {a}" for r, a in needs)
        where = " and ".join(o or "''" for o in objects)
        if ok and found.terms.get("windowed"):  # Sync checks the sync windows
            blocked = self._sync_window(objects[0])
            if blocked is not None:
                return blocked
        if ok:
            why = "; ".join(sorted({r for r in results if r}))
            return Decision.allow(f"Argo CD RBAC allows {subject} {asked} on {where} ({why})")
        return Decision.deny(f"Argo CD RBAC does not allow {subject} {asked} on {where}")

    def _sync_window(self, obj: str) -> Decision | None:
        """Deny when a sync window of the project blocks a manual sync of application ``obj``
        (``project/[namespace/]name``) now, as Argo CD's Sync refuses it before RBAC, whoever
        asks; read live (``GET /api/v1/applications/{name}/syncwindows``: ``canSync``)."""
        project, _, rest = obj.partition("/")
        namespace, _, name = rest.rpartition("/")
        if not NAME.fullmatch(name) or (namespace and not NAME.fullmatch(namespace)):
            return Decision.unknown(f"name one application to sync, not {obj!r}", cause="resource")
        what = f"read the sync windows of {obj}"
        path = f"/api/v1/applications/{quote(name)}/syncwindows"
        data = self.get_json(path, what=what, params={"appNamespace": namespace or None})
        if not isinstance(data.get("canSync"), bool):
            raise LookupFailed(f"argocd's answer to {what} has no canSync")
        if data["canSync"]:
            return None
        return Decision.deny(f"a sync window of project {project} blocks syncing {obj} now")

    def _enforce(
        self,
        subject: str,
        groups: list[str],
        settings: dict[str, str],
        res: str,
        act: str,
        obj: str,
    ) -> str | None:
        """Who allows ``(res, act, obj)`` for the user (None: no one), as Argo CD's
        ``EnforceClaims`` decides."""
        global_text = BUILTIN_POLICY + "\n" + settings.get("policy.csv", "")
        for key in sorted(settings):
            if key.startswith("policy.") and key.endswith(".csv") and key != "policy.csv":
                global_text += "\n" + settings[key]
        rows = parse_policy(global_text, "argocd-rbac-cm")
        regex = settings.get("policy.matchMode", "").strip() == "regex"
        project = None
        if res in _PROJECT_SCOPED and len(obj.split("/")) >= 2:
            project = self._project(obj.split("/")[0])
        elif res == "projects":
            project = self._project(obj)
        full = Policy(rows + (project or []), regex)
        default = settings.get("policy.default", "").strip()
        if default and (
            Policy(rows, regex).enforce(default, res, act, obj)
            or full.enforce(default, res, act, obj)
        ):
            return f"policy.default {default}"
        if full.enforce(subject, res, act, obj):
            return f"the subject {subject}"
        grouped = full.grouped()
        for g in groups:
            if g in grouped and full.enforce(g, res, act, obj):
                return f"the group {g}"
        return None

    # --- the request hook ----------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The table's route, its resource completed from the request (see
        ``_argocd_routes``)."""
        found = self.route_table().match(request)
        if found is None:
            return None
        return complete(found, request, self._home, bool(self.options.get("revision_override")))

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        me = self.get_json("/api/v1/session/userinfo", what="read the engine's session")
        if not me.get("loggedIn"):
            return ProbeResult(False, "argocd says the engine's token is not logged in")
        who = str(me.get("username") or "?")
        data = self._settings()
        parse_policy(data.get("policy.csv", ""), "argocd-rbac-cm")
        projects = self.get_json("/api/v1/projects", what="list projects (projects, get)")
        if not isinstance(projects.get("items") or [], list):
            return ProbeResult(False, "argocd's project list has no items")
        return ProbeResult(
            True, f"signed in to {self.config.url} as {who}; argocd-rbac-cm read ({len(data)} keys)"
        )


INTEGRATION = ArgoCD
