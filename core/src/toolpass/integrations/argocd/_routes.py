"""Argo CD's request hook: what the route table (``argocd/routes.json``) cannot say alone.

- ``app:{name}`` / ``appset:{name}`` take the namespace the request names
  (``appNamespace`` / ``appsetNamespace``, in the query or the body; given twice: unclear);
  ``cluster:{id}`` becomes ``cluster-name:{id}`` with ``?id.type=name``;
- an update that moves the object to another project (the body's ``project``) adds
  ``@<project>``: the check then asks both projects, as Argo CD does; a JSON patch that
  mentions ``project`` is unclear;
- ``@...`` markers name the object in the body of a create (``metadata.name``,
  ``metadata.namespace``, ``spec.project``; a cluster's ``server``, a repository's
  ``repo``, with their ``project``); ``upsert=true`` may update another object, so it is
  unclear;
- a sync with local ``manifests`` needs ``override`` too (``applications.override``), and
  so does one to a ``revision`` when ``revision_override`` says Argo CD requires it
  (``application.sync.requireOverridePrivilegeForRevisionSync``; the target revision is not
  compared, so any given revision counts);
- resource actions and an application's resource patched or deleted become the
  fine-grained ``applications.action/<group>/<kind>/<action>`` and
  ``applications.update|delete/<group>/<kind>/<namespace>/<name>``.

Anything unclear leaves the resource unresolved, so the request is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolpass.integrations.routes import Match, Request, Route

__all__ = ["NAME", "complete", "rbac_name"]

NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a Kubernetes object name
LOOKUPS = frozenset({"app", "appset", "cluster", "cluster-name", "repo", "write-repo"})
_FINE = {
    "applications.action": ("group", "kind", "action"),
    "applications.update-resource": ("group", "kind", "namespace", "resourceName"),
    "applications.delete-resource": ("group", "kind", "namespace", "resourceName"),
}


def rbac_name(home: str, project: str, namespace: str, name: str) -> str:
    """An application's RBAC object (``util/security.RBACName``): ``<project>/<name>`` in
    Argo CD's own namespace ``home``, else ``<project>/<namespace>/<name>``."""
    if namespace and namespace != home:
        return f"{project}/{namespace}/{name}"
    return f"{project}/{name}"


def complete(found: Match, request: Request, home: str, revision_override: bool) -> Match:
    """``found`` with its resource (and fine-grained action) completed from ``request``;
    a sync with local manifests (or, with ``revision_override``, to a revision) is
    ``applications.override``."""
    route, params, resource = found.route, found.params, found.resource
    form = request.form
    if route.action == "applications.sync" and route.path.endswith("/sync"):
        manifests = form.get("manifests") is not None
        revision = revision_override and bool(form.get("revision") or form.get("revisions"))
        if manifests or revision:
            route = _with_action(route, "applications.override")
    template = route.resource
    kind, colon, field = template.partition(":")
    if template.startswith("@"):
        upsert = {v.lower() for v in request.query.get("upsert", [])} & {"true", "1"}
        resource = None if upsert else _body_object(template, form, home)
    elif colon and kind in LOOKUPS:
        value = params.get(field.strip("{}"))
        ns = _namespace(request, form, kind)
        moved = _moved(route, form)
        id_type = request.query.get("id.type", ["url"])
        if not value or value in (".", "..") or any(c.isspace() for c in value):
            return Match(route, params, None)
        if kind in ("app", "appset") and not NAME.fullmatch(value):
            return Match(route, params, None)
        if ns is None or moved is None or id_type not in (["url"], ["name"]):
            return Match(route, params, None)
        if kind == "cluster" and id_type == ["name"]:
            kind = "cluster-name"
        resource = f"{kind}:{ns + '/' if ns else ''}{value}" + (f"@{moved}" if moved else "")
    if route.action in _FINE:
        action = _fine_grained(route.action, request, form)
        if action is None:
            return Match(route, params, None)
        route = _with_action(route, action)
    return Match(route, params, resource)


def _with_action(route: Route, action: str) -> Route:
    return Route(
        route.method, route.path, action, route.resource, route.effect,
        route.untrusted, route.sends_out, route.agent,
    )  # fmt: skip


def _one(request: Request, form: Mapping[str, Any], key: str) -> str | None:
    """The one value of ``key`` in the query and the body ('' for none; None when given
    differently twice or not as a string)."""
    values: set[Any] = set(request.query.get(key, []))
    if key in form:
        value = form[key]
        if not isinstance(value, str):
            return None
        values.add(value)
    if len(values) > 1:
        return None
    return next(iter(values), "")


def _namespace(request: Request, form: Mapping[str, Any], kind: str) -> str | None:
    if kind not in ("app", "appset"):
        return ""
    ns = _one(request, form, "appNamespace" if kind == "app" else "appsetNamespace")
    return ns if ns is not None and (not ns or NAME.fullmatch(ns)) else None


def _moved(route: Route, form: Mapping[str, Any]) -> str | None:
    """The project an update moves the object to ('' for none; None when unclear)."""
    if route.method not in ("PUT", "PATCH") or not form:
        return ""
    if route.method == "PATCH":
        return None if "project" in str(form.get("patch", "")) else ""
    if "{application.metadata.name}" in route.path:
        project = _at(form, "spec", "project")
    elif route.path.startswith("/api/v1/clusters/"):
        project = _at(form, "cluster", "project")
    else:  # an application's /spec, a repository
        project = form.get("project")
    if project is None or project == "":
        return ""
    return project if isinstance(project, str) and NAME.fullmatch(project) else None


def _at(form: Mapping[str, Any], *keys: str) -> Any:
    node: Any = form
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def _body_object(template: str, form: Mapping[str, Any], home: str) -> str | None:
    if template in ("@app-body", "@appset-body", "@appset-generate"):
        root = ("applicationSet",) if template == "@appset-generate" else ()
        name = _at(form, *root, "metadata", "name")
        ns = _at(form, *root, "metadata", "namespace") or ""
        spec = ("spec",) if template == "@app-body" else ("spec", "template", "spec")
        project = _at(form, *root, *spec, "project") or "default"
        parts = (name, ns, project)
        if name and all(isinstance(v, str) and (not v or NAME.fullmatch(v)) for v in parts):
            return rbac_name(home, project, ns, name)
        return None
    if template in ("@cluster-body", "@repo-body"):
        target = _at(form, "server" if template == "@cluster-body" else "repo")
        project = _at(form, "project") or ""
        if not (isinstance(target, str) and target and isinstance(project, str)):
            return None
        if any(c.isspace() for c in target) or (project and not NAME.fullmatch(project)):
            return None
        return f"{project}/{target}" if project else target
    if template == "@project-body":
        value = _at(form, "project", "metadata", "name")
        return value if isinstance(value, str) and NAME.fullmatch(value) else None
    if template == "@account-body":
        value = _at(form, "name")
        return value if isinstance(value, str) and value and "/" not in value else None
    return None  # @unresolved


def _fine_grained(action: str, request: Request, form: Mapping[str, Any]) -> str | None:
    values = []
    for key in _FINE[action]:
        value = _one(request, form, key)
        if value is None or "/" in value or any(c.isspace() for c in value):
            return None
        if not value and key not in ("group", "namespace"):  # the core group; cluster scope
            return None
        values.append(value)
    verb = action.partition(".")[2].partition("-")[0]
    return f"applications.{verb}/" + "/".join(values)
