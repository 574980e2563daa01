"""Kubernetes: may this user do this, asked of the cluster's own authorizers.

The check creates a ``SubjectAccessReview`` (``POST
/apis/authorization.k8s.io/v1/subjectaccessreviews``), or with ``review: local`` a
``LocalSubjectAccessReview`` in the resource's namespace, naming the user, the user's
groups and the request's attributes. The API server runs every authorizer it is configured
with (RBAC, Node, webhooks, ...) and answers in ``status``:

- ``allowed: true``: allow (an ``evaluationError`` beside it does not matter: the documented
  meaning is that the authorizer could decide in spite of it);
- ``denied: true``: deny (an authorizer that supports explicit denies, e.g. a webhook);
- neither, without ``evaluationError``: no authorizer allows it, so the real request would be
  refused: deny;
- neither, with an ``evaluationError`` (RBAC could not read a role a binding names, a webhook
  failed, ...): unknown, or deny with ``on_evaluation_error: deny``.

Any other answer (401, 403: the engine may not create reviews, 404, 422, 429, 5xx, a
timeout, a body without ``status.allowed``) is unknown.

Resources
---------
A resource is written as the Kubernetes API path of the object, with the
``/api/v1`` or ``/apis/<group>/<version>`` prefix replaced by a ``.<group>`` suffix on the
resource type (as ``kubectl`` writes ``deployments.apps``)::

    [namespaces/<namespace>/]<resource>[.<group>][/<name>[/<subresource>]]

    namespaces/payments/deployments.apps/api          a Deployment
    namespaces/payments/deployments.apps/api/scale    its scale subresource
    namespaces/payments/pods                          pods in payments (list, create, ...)
    namespaces/payments/pods/web-0/log                a pod's logs
    nodes/node-1                                      a cluster-scoped object
    clusterroles.rbac.authorization.k8s.io/view       a cluster-scoped object in a group
    namespaces/payments                               the Namespace object itself
    namespaces/payments/status                        ... and its status subresource
    deployments.apps                                  Deployments in every namespace

The full API path (``/apis/apps/v1/namespaces/payments/deployments/api``,
``/api/v1/nodes/node-1``) is accepted too and also carries the version. Any other path
starting with ``/`` (``/healthz``, ``/metrics``, ``/apis`` discovery) is a non-resource URL.
Segments are split exactly as the API server splits a request path: after
``namespaces/<ns>/``, ``status`` and ``finalize`` are the Namespace's own subresources and
anything else is a resource type. No namespace means the cluster scope for cluster-scoped
types and *all namespaces* for namespaced ones (the SubjectAccessReview's own rule). ``*``
is passed through as the review's wildcard.

Actions
-------
The Kubernetes verbs (``get``, ``list``, ``watch``, ``create``, ``update``, ``patch``,
``delete``, ``deletecollection`` and the special ``impersonate``, ``bind``, ``escalate``,
``use``, ``approve``, ``sign``) ask for that verb on the resource, subresource included.
Shortcuts name a verb and a subresource: ``scale`` (``patch`` on ``<type>/scale``, what
``kubectl scale`` sends since 1.16; ask ``update`` on ``.../scale`` for a PUT),
``exec``, ``attach``, ``portforward`` (``create`` on ``pods/exec`` etc.; the API server
requires ``create`` for these from 1.35 on, and earlier for SPDY), ``logs`` (``get`` on
``pods/log``) and ``evict`` (``create`` on ``pods/eviction``). On a non-resource URL
``get``, ``create``, ``update``, ``patch`` and ``delete`` mean the HTTP verbs ``get``,
``post``, ``put``, ``patch`` and ``delete``.

Requests
--------
The request hook places a request to the API server with the table generated from the
kubernetes client (``kubernetes/routes.json``, by ``kubernetes/generate.py``) and
:meth:`Kubernetes.match_request`: ``?watch=`` (any first value but ``''``, ``0``,
``false``) makes a list a ``watch``; a path the table lacks (custom resources, aggregated
APIs, other versions) is split as the API server's RequestInfo splits it and asks the verb
of its method; ``Impersonate-User`` makes the request ``impersonate`` on ``users/<name>``
(or ``namespaces/<ns>/serviceaccounts/<name>``), and impersonated groups, a uid or extras
leave the resource unresolved, so the request is refused.

Users and groups
----------------
Kubernetes has no user directory: a user is the name the API server's authenticator
produces. The default identity mode ``email`` reproduces the OIDC authenticator with
``--oidc-username-claim=email``: the username is the email. Every identity mode yields the
claim value, and ``username_prefix`` is put in front as ``--oidc-username-prefix`` (or
``claimMappings.username.prefix``) does; when the cluster's claim is not ``email`` and it
sets no prefix, the API server's default prefix is ``<issuer-url>#`` (its default claim is
``sub``, not ``email``). Emails are compared normalised (NFKC, then casefold; an address with
characters that change under case mapping is no one's); the API server takes the claim as
the token carries it, so RBAC subjects should be written in lower case too.

A review names the user's groups or is answered for a user in none, so the engine supplies
them: a ``groups`` mapping, a ``groups_file``, a ``groups_url`` service or a
``groups_resolve`` callable (the IdP's group names, prefixed with ``group_prefix``), plus
``system:authenticated``, which the API server adds to every authenticated user. A user the
groups source does not know is unknown (``groups_missing: none`` reviews them without
groups instead).

The engine's credential is a ServiceAccount token allowed to ``create``
``subjectaccessreviews`` (``authorization.k8s.io``): ``token`` (a secret reference),
``token_file`` (re-read when it changes, as projected tokens rotate), or, with neither,
the in-cluster mount (``serviceaccount_dir``: its ``token``, and its ``ca.crt`` when
``ca_file`` is not set).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from toolpass.integrations._groups import group_list, source_groups
from toolpass.integrations._kit import Cache, ttl_key
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    ConnectionConfig,
    Decision,
    Integration,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.kubernetes._hook import (
    as_watch,
    classify,
    impersonation,
    rest_resource,
    structural_match,
    watching,
)
from toolpass.integrations.kubernetes._resources import Target, parse_resource
from toolpass.integrations.routes import Match, Request
from toolpass.wire.errors import BadResource, ConfigError, LookupFailed
from toolpass.wire.http import HTTPClient, NetOptions, check_url
from toolpass.wire.identity import normalize_email
from toolpass.wire.watched import WatchedFile, json_or_yaml

__all__ = ["INTEGRATION", "Kubernetes", "Target", "classify", "parse_resource", "structural_match"]

SERVICEACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
AUTHENTICATED = "system:authenticated"
_API = "/apis/authorization.k8s.io/v1"
_OK = (200, 201, 202)  # the documented answers to a create
_NON_RESOURCE_VERBS = {
    "get": "get",
    "create": "post",
    "update": "put",
    "patch": "patch",
    "delete": "delete",
}


# --- the actions -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Shortcut:
    verb: str
    subresource: str
    resource: str | None = None  # the one resource type it applies to (core group), or any


ACTIONS: tuple[Action, ...] = load_actions(__name__)
_SHORTCUTS = {a.name: _Shortcut(**a.terms) for a in ACTIONS if a.terms}


def review_attributes(action: str, target: Target) -> tuple[str, Target]:
    """The verb and target a review asks about for ``action`` (shortcuts resolved)."""
    shortcut = _SHORTCUTS.get(action)
    if target.path:
        verb = _NON_RESOURCE_VERBS.get(action)
        if verb is None:
            raise BadResource(f"{action} has no meaning for a non-resource URL ({target.path})")
        return verb, target
    if shortcut is None:
        return action, target
    if shortcut.resource is not None and (target.resource, target.group) != (shortcut.resource, ""):
        raise BadResource(f"{action} applies to {shortcut.resource}, not to {target.type}")
    if not target.name:
        raise LookupFailed(f"{action} needs a named object, not all {target.type}")
    if target.subresource not in ("", shortcut.subresource):
        raise LookupFailed(
            f"{action} is on the {shortcut.subresource} subresource, not {target.type}"
        )
    target = Target(
        target.resource,
        target.group,
        target.version,
        target.namespace,
        target.name,
        shortcut.subresource,
    )
    return shortcut.verb, target


# --- files that are re-read when they change ---------------------------------------------
def _token_text(text: str) -> str:
    token = text.strip()
    if not token or any(c.isspace() for c in token):
        raise LookupFailed("the token file is empty or holds more than one token")
    return token


def _groups_table(path: str) -> Callable[[str], dict[str, list[str]]]:
    def parse(text: str) -> dict[str, list[str]]:
        data = json_or_yaml(path, text, "groups file")
        try:
            return _groups_mapping(data)
        except ValueError as e:
            raise LookupFailed(f"groups file {path}: {e}")

    return parse


def _groups_mapping(data: object) -> dict[str, list[str]]:
    if not isinstance(data, Mapping):
        raise ValueError("must map emails to lists of groups")
    table: dict[str, list[str]] = {}
    for email, groups in data.items():
        if not isinstance(email, str) or not group_list(groups):
            raise ValueError(f"the groups of {email!r} must be a list of group names")
        try:
            key = normalize_email(email)
        except LookupFailed:
            continue  # an address that could pose as another is no one's
        table[key] = list(groups)
    return table


# --- the integration ---------------------------------------------------------------------
class Kubernetes(Integration):
    """Kubernetes RBAC and every other authorizer, through SubjectAccessReview."""

    name = "kubernetes"
    description = (
        "Kubernetes API server authorization (RBAC, webhooks, ...) through SubjectAccessReview. "
        "Resources: [namespaces/<ns>/]<resource>[.<group>][/<name>[/<subresource>]], e.g. "
        "namespaces/payments/deployments.apps/api, nodes/node-1, "
        "clusterroles.rbac.authorization.k8s.io/view (no namespace: cluster scope, or all "
        "namespaces for a namespaced type); the API path itself "
        "(/apis/apps/v1/namespaces/payments/deployments/api); or a non-resource URL (/healthz)."
    )
    default_url = "https://kubernetes.default.svc"
    identity_modes = ("email",)
    actions = ACTIONS
    keys = (
        ConfigKey(
            "token",
            "The engine's ServiceAccount bearer token (env:NAME or file:/path); it must be "
            "allowed to create subjectaccessreviews. Unset: token_file is read.",
            secret=True,
        ),
        ConfigKey(
            "token_file",
            "A file holding the bearer token, re-read whenever it changes (projected tokens "
            "rotate). Unset and no token: <serviceaccount_dir>/token.",
        ),
        ConfigKey(
            "serviceaccount_dir",
            "The in-cluster ServiceAccount mount. With neither token nor token_file its token "
            "is used, and its ca.crt replaces the system's roots when ca_file is not set.",
            default=SERVICEACCOUNT_DIR,
        ),
        ConfigKey(
            "review",
            "cluster: a SubjectAccessReview (needs create subjectaccessreviews); local: a "
            "LocalSubjectAccessReview in the resource's namespace (needs create "
            "localsubjectaccessreviews there; namespaced resources only).",
            default="cluster",
            choices=("cluster", "local"),
        ),
        ConfigKey(
            "username_prefix",
            "Put before every user name, as the API server's --oidc-username-prefix (or "
            "claimMappings.username.prefix) does; '' or '-' for none.",
            default="",
        ),
        ConfigKey(
            "group_prefix",
            "Put before every group from the groups source, as --oidc-groups-prefix does.",
            default="",
        ),
        ConfigKey(
            "authenticated_group",
            "Add system:authenticated to every review, as the API server does for every "
            "authenticated user.",
            default=True,
        ),
        ConfigKey(
            "groups",
            "The groups of each user, by email: {email: [group, ...]}; consulted before "
            "groups_file, groups_url and groups_resolve.",
            type="map",
        ),
        ConfigKey(
            "groups_file",
            "A JSON or YAML file mapping emails to lists of groups, re-read when it changes.",
        ),
        ConfigKey(
            "groups_url",
            "A service answering GET <url>?email=&system=kubernetes&connection= with "
            '{"groups": [...]}; 404 or {"groups": null}: the user is not known.',
        ),
        ConfigKey("groups_token", "A bearer token for groups_url.", secret=True),
        ConfigKey(
            "groups_resolve",
            "In code: resolve(email) -> list of groups, or None when the user is not known.",
            type="any",
        ),
        ttl_key("groups", "the groups from groups_url or groups_resolve", 300.0),
        ConfigKey(
            "groups_missing",
            "A user the groups source does not know: unknown (refuse to guess) or none "
            "(review them without groups).",
            default="unknown",
            choices=("unknown", "none"),
        ),
        ConfigKey(
            "on_evaluation_error",
            "A review that is not allowed and reports an evaluationError (e.g. a binding to a "
            "missing role): unknown, or deny (trust the authorizers' answer).",
            default="unknown",
            choices=("unknown", "deny"),
        ),
    )

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        if options.get("token") is not None and options.get("token_file") is not None:
            raise ConfigError("set token or token_file, not both", "token_file")
        sources = [k for k in ("groups_file", "groups_url", "groups_resolve") if options.get(k)]
        if len(sources) > 1:
            raise ConfigError(f"choose one groups source, not {' and '.join(sources)}", sources[1])
        if options.get("groups") is not None:
            try:
                _groups_mapping(options["groups"])
            except ValueError as e:
                raise ConfigError(str(e), "groups") from None
        if options.get("groups_url") is not None:
            check_url(options["groups_url"], "groups_url")
        if options.get("groups_token") is not None and options.get("groups_url") is None:
            raise ConfigError("groups_token needs groups_url", "groups_token")
        resolve = options.get("groups_resolve")
        if resolve is not None and not callable(resolve):
            raise ConfigError("must be a callable, given in code", "groups_resolve")
        for key in ("username_prefix", "group_prefix"):
            value = options.get(key) or ""
            if any(c.isspace() or unicodedata.category(c)[0] == "C" for c in value):
                raise ConfigError("must not contain spaces or control characters", key)

    def __init__(self, config: ConnectionConfig, http: HTTPClient | None = None) -> None:
        super().__init__(config, http)
        o = self.options
        self._in_cluster = o["token"] is None and o["token_file"] is None
        sa_dir = o["serviceaccount_dir"]
        token_path = o["token_file"] or os.path.join(sa_dir, "token")
        self._token_file = WatchedFile(token_path, _token_text, "token file")
        self._net = config.net
        in_cluster_ca = os.path.join(sa_dir, "ca.crt")
        if self._in_cluster and config.net.ca_file is None and os.path.exists(in_cluster_ca):
            self._net = NetOptions(in_cluster_ca, config.net.tls_server_name, config.net.proxy_url)
        self._static_groups = _groups_mapping(o["groups"] or {})
        groups_file = o["groups_file"]
        self._groups_file = (
            WatchedFile(groups_file, _groups_table(groups_file), "groups file")
            if groups_file
            else None
        )
        # a group source's answer, None too
        self._groups_cache: Cache[str, list[str] | None] = Cache.option(
            self, "groups_cache_ttl", 10_000
        )

    # --- requests ------------------------------------------------------------------------
    def _token(self) -> str:
        if self.options["token"] is not None:
            return self.secret("token")
        try:
            token: str = self._token_file.get()
        except LookupFailed as e:
            hint = (
                " (not running in a cluster? set token or token_file)" if self._in_cluster else ""
            )
            raise LookupFailed(f"no credential: {e}{hint}") from None
        return token

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token()}"}

    @property
    def net(self) -> NetOptions:
        return self._net

    def _create(self, path: str, body: Any, what: str) -> dict[str, Any]:
        """A review created on the API server: its ``status``, checked."""
        return _status(self.fetch_json("POST", path, what=what, json=body, ok=_OK))

    # --- identity ------------------------------------------------------------------------
    def lookup_email(self, email: str) -> Sequence[str]:
        """The user name is the email (``--oidc-username-claim=email``)."""
        return [email]

    def username(self, email: str) -> str:
        """The Kubernetes user name ``email`` is, prefixed as the API server does."""
        prefix = self.options["username_prefix"]
        return ("" if prefix == "-" else prefix) + self.user_id(email)

    def groups(self, email: str) -> list[str]:
        """The groups a review names for ``email`` (prefixed, ``system:authenticated`` added)."""
        email = normalize_email(email)
        found = self._static_groups.get(email)
        if found is None:
            found = self._source_groups(email)
        if found is None:
            if self._has_source() and self.options["groups_missing"] == "unknown":
                raise LookupFailed(
                    f"the groups of {email} are not known (groups_missing: none reviews "
                    "users the source does not know without groups)"
                )
            found = []
        prefix = self.options["group_prefix"]
        prefix = "" if prefix == "-" else prefix
        result = list(dict.fromkeys(prefix + g for g in found))
        if self.options["authenticated_group"] and AUTHENTICATED not in result:
            result.append(AUTHENTICATED)
        return result

    def _has_source(self) -> bool:
        o = self.options
        return bool(o["groups"] or o["groups_file"] or o["groups_url"] or o["groups_resolve"])

    def _source_groups(self, email: str) -> list[str] | None:
        if self._groups_file is not None:
            table: dict[str, list[str]] = self._groups_file.get()
            return table.get(email)
        if not (self.options["groups_url"] or self.options["groups_resolve"]):
            return None
        return self._groups_cache.get(email, lambda: source_groups(self, email))

    # --- the check -----------------------------------------------------------------------
    def review(self, user: str, action: str, resource: str) -> dict[str, Any]:
        """The review object a check creates for these arguments (nothing is sent)."""
        return self._review(user, action, resource)[0]

    def _review(self, user: str, action: str, resource: str) -> tuple[dict[str, Any], str, Target]:
        verb, target = review_attributes(action, parse_resource(resource))
        spec: dict[str, Any] = {"user": self.username(user)}
        groups = self.groups(user)
        if groups:
            spec["groups"] = groups
        if target.path:
            spec["nonResourceAttributes"] = {"path": target.path, "verb": verb}
        else:
            spec["resourceAttributes"] = target.attributes(verb)
        review: dict[str, Any] = {"apiVersion": "authorization.k8s.io/v1"}
        if self.options["review"] == "local":
            if target.path or not target.namespace:
                raise LookupFailed(
                    "review: local can only ask about a namespaced resource, "
                    f"not {target.describe()}"
                )
            review["kind"] = "LocalSubjectAccessReview"
            review["metadata"] = {"namespace": target.namespace}
        else:
            review["kind"] = "SubjectAccessReview"
        review["spec"] = spec
        return review, verb, target

    def check(self, user: str, action: str, resource: str) -> Decision:
        review, verb, target = self._review(user, action, resource)
        if review["kind"] == "LocalSubjectAccessReview":
            namespace = quote(target.namespace, safe="")
            path = f"{_API}/namespaces/{namespace}/localsubjectaccessreviews"
        else:
            path = f"{_API}/subjectaccessreviews"
        status = self._create(path, review, f"create a {review['kind']}")
        who = review["spec"]["user"]
        what = f"{verb} {target.describe()}"
        said = status.get("reason") or ""
        said = f" ({said[:300]})" if said else ""
        error = status.get("evaluationError") or ""
        if status["allowed"]:
            if status.get("denied"):
                raise LookupFailed("kubernetes answered both allowed and denied")
            return Decision.allow(f"Kubernetes allows {who} to {what}{said}")
        if status.get("denied"):
            return Decision.deny(f"a Kubernetes authorizer denies {who} to {what}{said}")
        if error and self.options["on_evaluation_error"] == "unknown":
            raise LookupFailed(
                f"Kubernetes could not fully evaluate whether {who} may {what}: {error[:300]}"
            )
        return Decision.deny(f"no Kubernetes authorizer allows {who} to {what}{said}")

    # --- the request hook ----------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The table's route, with ``?watch=`` making a list a watch; a path the table
        lacks (custom resources, ...) split as the API server does; impersonation headers
        turning the request into ``impersonate``."""
        found = self.route_table().match(request)
        if found is None:
            found = structural_match(request)
        elif found.route.action == "list" and watching(request):
            found = Match(as_watch(found.route), found.params, found.resource)
        elif found.resource is None and found.route.path.endswith("+}"):
            found = rest_resource(found, request)
        if found is not None and any(k.startswith("impersonate-") for k in request.headers):
            found = impersonation(found, request)
        return found

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        self.identity.check()
        if self._groups_file is not None:
            self._groups_file.get()
        version = self.get_json("/version", what="read /version")
        git = version.get("gitVersion", "?")
        kind = (
            "localsubjectaccessreviews"
            if self.options["review"] == "local"
            else ("subjectaccessreviews")
        )
        ask = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {
                "resourceAttributes": {
                    "verb": "create",
                    "group": "authorization.k8s.io",
                    "resource": kind,
                }
            },
        }
        status = self._create(
            f"{_API}/selfsubjectaccessreviews", ask, "create a SelfSubjectAccessReview"
        )
        where = " in every namespace" if kind == "localsubjectaccessreviews" else ""
        if status["allowed"]:
            return ProbeResult(True, f"Kubernetes {git}: the engine may create {kind}{where}")
        return ProbeResult(
            False, f"Kubernetes {git}: the engine's credential may not create {kind}{where}"
        )


def _status(data: dict[str, Any]) -> dict[str, Any]:
    """The review's ``status``, checked against the documented shape."""
    status = data.get("status")
    if not isinstance(status, dict) or not isinstance(status.get("allowed"), bool):
        raise LookupFailed("kubernetes answered a review without status.allowed")
    for key, kind in (("denied", bool), ("reason", str), ("evaluationError", str)):
        if status.get(key) is not None and not isinstance(status[key], kind):
            raise LookupFailed(f"kubernetes answered a review with a malformed status.{key}")
    return status


INTEGRATION = Kubernetes
