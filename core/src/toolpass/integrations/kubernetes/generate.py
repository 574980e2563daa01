"""Generate the Kubernetes route table from the official Python client.

Source: the PyPI package ``kubernetes`` (generated from the cluster's OpenAPI document).
Every API method's ``_<operation>_serialize`` calls ``api_client.param_serialize(
method=..., resource_path=...)``; this script reads those two constants out of
``kubernetes/client/api/*.py`` with ``ast`` (the client is never imported)::

    pip download --no-deps -d /tmp/k8s kubernetes
    python -m toolpass.integrations.kubernetes.generate \
        --source /tmp/k8s/kubernetes-<version>-py2.py3-none-any.whl

``--source`` is the wheel, or a folder holding ``kubernetes/client/api`` (an unpacked
wheel, or an installed package's parent folder). It writes
``routes.json`` beside this file (``--out`` to change), sorted by
path then method, so a regeneration's diff shows what the new client changed.

Each operation becomes one row, derived from the path as the API server's RequestInfo
splits it (``/api/<v>`` or ``/apis/<group>/<v>``, then ``[namespaces/<ns>/]<resource>
[/<name>[/<subresource>]]``):

- verb by method: GET item ``get``, GET collection ``list``, POST ``create``, PUT
  ``update``, PATCH ``patch``, DELETE item ``delete``, DELETE collection
  ``deletecollection``; HEAD as GET; OPTIONS (proxy only) ``create``, since the API server
  asks the empty verb that only ``*`` grants, so the strongest verb stands in for it;
- the integration's shortcuts where they are exactly that verb: ``exec``, ``attach``,
  ``portforward`` (``create`` on ``pods/<sub>``, for POST and for the GET websocket
  upgrade alike: the API server requires ``create`` for both from 1.35 on, so the stronger
  verb is asked of older clusters too), ``logs`` (GET ``pods/log``), ``evict`` (POST
  ``pods/eviction``), ``scale`` (PATCH ``<type>/scale``; GET and PUT stay ``get`` and
  ``update``);
- the resource in the integration's syntax: ``namespaces/{namespace}/deployments.apps/
  {name}/scale``, ``nodes/{name}``, ``deployments.apps`` (every namespace); a
  non-resource path (discovery, ``/version``, ``/logs/...``) is its own path.

The overlay below holds what a path cannot tell: flags, effects of creates that store
nothing, and rows the client leaves out. ``?watch=true`` is a query flag, so the table
keeps ``list`` and ``Kubernetes.match_request`` turns it into ``watch``. Custom resources
(``custom_objects_api``: ``/apis/{group}/{version}/...``) are not rows: the integration's
``structural_match`` maps any such path generically, so the operations are counted as
excluded here and tested there.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import sys
import zipfile
from pathlib import Path, PurePosixPath

from toolpass.integrations._generate.table import dump

ROOT = Path(__file__).resolve().parents[5]
OUT = ROOT / "core/src/toolpass/integrations/kubernetes/routes.json"
API_DIR = "kubernetes/client/api"

# --- the overlay -------------------------------------------------------------------------
# Reads whose responses carry text written by workloads or outsiders (flag u):
# pods (status carries termination messages, with FallbackToLogsOnError the tail of the
# log), configmaps (scripts, web pages, configuration from third-party charts), events
# (messages any workload allowed to emit events writes). Secrets are private, not
# untrusted: their values are credentials an operator set, returned base64-encoded, so
# they are not flagged u (the route flags have no "private" mark; see the report).
UNTRUSTED_TYPES = {("", "pods"), ("", "configmaps"), ("", "events"), ("events.k8s.io", "events")}
# Subresources of a named pod that are the shortcut action of the same name (create).
CONNECT = {"exec", "attach", "portforward"}
# Subresources whose request reaches a program and whose answer is its output: flags u and
# s. exec/attach: the command (query) and stdin reach a container, its output returns;
# portforward: a tunnel to a pod's port; proxy: the method, query and body reach a pod's,
# a service's or a kubelet's HTTP server. Object writes (a pod spec, a job) are stored by
# the API server, not sent anywhere, so they are not s; running them is what `create`
# on that type is asked for.
PROGRAM_SUBRESOURCES = CONNECT | {"proxy"}
# Creates that store nothing and only answer a question: effect read; a about the agent
# itself for the self reviews (what may I do, who am I).
SELF_REVIEWS = {
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
}
REVIEWS = SELF_REVIEWS | {
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authentication.k8s.io", "tokenreviews"),
}
# Non-resource paths of the client, by prefix: flags. Discovery, the version, the service
# account issuer's OIDC documents are about the cluster's API (public to every
# authenticated user by default), a; /logs/ serves the control-plane host's log files, u.
NON_RESOURCE_FLAGS = {
    "/api/": "a",
    "/apis/": "a",
    "/version/": "a",
    "/.well-known/": "a",
    "/openid/": "a",
    "/logs/": "u",
}
# Parameters that take the rest of the path (the client encodes their slashes as %2F;
# the route must also match them written plainly).
REST_PARAMS = {"path", "logpath"}
# Rows the client does not carry, curated from the API server's documented paths:
# (method, path, action, resource, effect, flags, why).
CURATED = [
    ("GET", "/openapi/v2", "get", "/openapi/v2", "read", "a", "OpenAPI v2 document"),
    ("GET", "/openapi/v3", "get", "/openapi/v3", "read", "a", "OpenAPI v3 index"),
    (
        "GET",
        "/openapi/v3/{path+}",
        "get",
        "/openapi/v3/{path}",
        "read",
        "a",
        "OpenAPI v3 document of one group version",
    ),
    ("GET", "/healthz", "get", "/healthz", "read", "a", "health (public-info-viewer)"),
    ("GET", "/healthz/{check+}", "get", "/healthz/{check}", "read", "a", "one health check"),
    ("GET", "/livez", "get", "/livez", "read", "a", "liveness (public-info-viewer)"),
    ("GET", "/livez/{check+}", "get", "/livez/{check}", "read", "a", "one liveness check"),
    ("GET", "/readyz", "get", "/readyz", "read", "a", "readiness (public-info-viewer)"),
    ("GET", "/readyz/{check+}", "get", "/readyz/{check}", "read", "a", "one readiness check"),
    ("GET", "/metrics", "get", "/metrics", "read", "", "the API server's metrics"),
]
# Operations not turned into rows, and why (the test checks each is still served).
EXCLUDED_FILES = {
    "custom_objects_api": "custom resources: generic /apis/{group}/{version}/... templates, "
    "mapped by Kubernetes.match_request's structural fallback",
}

METHOD_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
    "OPTIONS": "create",
}
EFFECTS = {
    "get": "read",
    "list": "read",
    "watch": "read",
    "create": "write",
    "update": "write",
    "patch": "write",
    "delete": "destructive",
    "deletecollection": "destructive",
}
NAMESPACE_SUBRESOURCES = {"status", "finalize"}
FLAG_ORDER = "usa"


# --- reading the client ------------------------------------------------------------------
def _api_files(source: Path) -> tuple[str, dict[str, str]]:
    """The client's version and its ``api/*.py`` sources, by module name."""
    files: dict[str, str] = {}
    init = ""
    if source.is_file():
        with zipfile.ZipFile(source) as wheel:
            for name in wheel.namelist():
                if name.startswith(API_DIR + "/") and name.endswith(".py"):
                    files[PurePosixPath(name).stem] = wheel.read(name).decode("utf-8")
                elif name == "kubernetes/__init__.py":
                    init = wheel.read(name).decode("utf-8")
    else:
        folder = source / API_DIR
        if not folder.is_dir():
            folder = source / "client/api"  # the package folder itself
            init_path = source / "__init__.py"
        else:
            init_path = source / "kubernetes/__init__.py"
        for path in sorted(folder.glob("*.py")):
            files[path.stem] = path.read_text(encoding="utf-8")
        init = init_path.read_text(encoding="utf-8") if init_path.is_file() else ""
    found = re.search(r"""__version__\s*=\s*["']([^"']+)["']""", init)
    if not files or not found:
        raise SystemExit(f"{source}: no kubernetes client (kubernetes/client/api, __version__)")
    return found.group(1), files


@functools.lru_cache(maxsize=4)
def operations(source: Path) -> tuple[str, list[tuple[str, str, str, str]]]:
    """The client's version and every operation: (module, operation, method, path)."""
    version, files = _api_files(source)
    ops: list[tuple[str, str, str, str]] = []
    for module, text in sorted(files.items()):
        for node in ast.walk(ast.parse(text)):
            if not (isinstance(node, ast.FunctionDef) and node.name.endswith("_serialize")):
                continue
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and getattr(call.func, "attr", "") == (
                    "param_serialize"
                ):
                    kw = {
                        k.arg: k.value.value
                        for k in call.keywords
                        if isinstance(k.value, ast.Constant)
                    }
                    name = node.name[1 : -len("_serialize")]
                    ops.append((module, name, str(kw["method"]), str(kw["resource_path"])))
    return version, sorted(ops)


# --- an operation -> a row ---------------------------------------------------------------
def _flags(flags: set[str]) -> str:
    return "".join(f for f in FLAG_ORDER if f in flags)


def route_path(path: str) -> str:
    """The client's path template as a route template (rest parameters marked ``+``)."""
    return re.sub(r"\{(\w+)\}$", lambda m: f"{{{m[1]}+}}" if m[1] in REST_PARAMS else m[0], path)


def row(method: str, path: str) -> list[str]:
    """The route row of one client operation."""
    segments = path.strip("/").split("/")
    head = 2 if segments[0] == "api" else 3
    if segments[0] not in ("api", "apis") or len(segments) <= head:
        flags = next((f for p, f in NON_RESOURCE_FLAGS.items() if path.startswith(p)), "")
        if method != "GET":
            raise SystemExit(f"{method} {path}: a non-resource write, not expected")
        return [method, route_path(path), "get", path, "read", flags]
    group = "" if segments[0] == "api" else segments[1]
    parts = segments[head:]
    prefix = ""
    if parts[0] == "namespaces" and len(parts) > 2 and parts[2] not in NAMESPACE_SUBRESOURCES:
        prefix, parts = f"namespaces/{parts[1]}/", parts[2:]
    kind, name = parts[0], parts[1] if len(parts) > 1 else ""
    sub = parts[2] if len(parts) > 2 else ""
    if len(parts) > 3 and not (sub == "proxy" and parts[3:] == ["{path}"]):
        raise SystemExit(f"{method} {path}: more segments than RequestInfo reads")
    verb = METHOD_VERBS[method]
    if not name and verb in ("get", "delete"):
        verb = {"get": "list", "delete": "deletecollection"}[verb]
    action, effect = verb, EFFECTS[verb]
    marks: set[str] = set()
    pod = (group, kind) == ("", "pods") and bool(name)
    if pod and sub in CONNECT and method in ("GET", "POST"):
        action, effect = sub, "write"
    elif pod and sub == "log" and method == "GET":
        action = "logs"
    elif pod and sub == "eviction" and method == "POST":
        action, effect = "evict", "destructive"
    elif sub == "scale" and method == "PATCH":
        action = "scale"
    elif (group, kind) in REVIEWS and method == "POST" and not name:
        effect = "read"
        if (group, kind) in SELF_REVIEWS:
            marks.add("a")
    if (pod and sub in PROGRAM_SUBRESOURCES) or (name and sub == "proxy"):
        marks |= {"u", "s"}
        if (group, kind) == ("", "nodes") and method in ("GET", "HEAD"):
            effect = "write"  # the kubelet serves exec and attach over GET upgrades
    if pod and sub == "log":
        marks.add("u")
    if verb in ("get", "list") and (group, kind) in UNTRUSTED_TYPES:
        marks.add("u")
    resource = prefix + (f"{kind}.{group}" if group else kind)
    resource += f"/{name}" * bool(name) + f"/{sub}" * bool(sub)
    return [method, route_path(path), action, resource, effect, _flags(marks)]


def watch_rows(rows: list[list[str]]) -> list[list[str]]:
    """The legacy ``/watch/`` paths (deprecated, still served; the client leaves them
    out): one for every list and every plain get of an object, as ``watch``."""
    out = []
    for method, path, action, resource, _effect, flags in rows:
        segments = path.strip("/").split("/")
        if method != "GET" or resource.startswith("/"):
            continue
        head = 2 if segments[0] == "api" else 3
        parts = resource.split("/")
        if parts[0] == "namespaces" and len(parts) > 2 and parts[2] not in NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
        plain_get = action == "get" and len(parts) == 2
        if action != "list" and not plain_get:
            continue
        watched = "/" + "/".join([*segments[:head], "watch", *segments[head:]])
        out.append([method, watched, "watch", resource, "read", flags])
    return out


def table(source: Path) -> dict[str, object]:
    """The whole table document."""
    version, ops = operations(source)
    rows, excluded = [], []
    for module, name, method, path in ops:
        if module in EXCLUDED_FILES:
            excluded.append(f"{method} {path} ({module}.{name})")
            continue
        rows.append(row(method, path))
    legacy = watch_rows(rows)
    curated = [list(r[:6]) for r in CURATED]
    everything = rows + legacy + curated
    keys = {(r[0], r[1]) for r in everything}
    if len(keys) != len(everything):
        raise SystemExit("two rows share a method and path")
    everything.sort(key=lambda r: (r[1], r[0]))
    return {
        "source": f"PyPI kubernetes {version} (kubernetes/client/api/*.py)",
        "generator": "core/src/toolpass/integrations/kubernetes/generate.py",
        "operations": {
            "client": len(ops),
            "rows": len(rows),
            "excluded": {k: why for k, why in EXCLUDED_FILES.items()},
            "excluded_operations": len(excluded),
            "legacy_watch_rows": len(legacy),
            "curated_rows": len(curated),
        },
        "routes": everything,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="the wheel or a folder")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    document = table(args.source)
    args.out.write_text(dump(document), encoding="utf-8")
    routes = document["routes"]
    assert isinstance(routes, list)
    sys.stderr.write(f"{args.out}: {len(routes)} routes from {document['source']}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
