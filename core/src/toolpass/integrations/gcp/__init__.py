"""Google Cloud: a principal's IAM permission on a resource, asked live of Policy Troubleshooter.

``POST {url}/v3/iam:troubleshoot`` with ``accessTuple`` (``principal``: the Google account's or
service account's email, bare; ``fullResourceName``: ``//<service>.googleapis.com/<path>``;
``permission``: an IAM permission such as ``storage.objects.get``) answers
``overallAccessState``: ``CAN_ACCESS`` (allow), ``CANNOT_ACCESS`` (deny), ``UNKNOWN_INFO``
(the engine could not read some policy or group membership) or ``UNKNOWN_CONDITIONAL``
(a condition needs context): unknown. Allow policies up the resource hierarchy (project,
folders, organization), group memberships and deny policies are all evaluated by Google.
``testIamPermissions`` is not used: it answers only for the caller. Policy Troubleshooter
does not count Cloud Storage ACLs (fine-grained buckets) nor VPC Service Controls: access that
only an object ACL grants is denied here (fail closed).

Actions are IAM permissions (the set is open: any ``service.resource.verb``; the common ones
are listed in ``gcp/actions.json``); resources are full resource names
(``//cloudresourcemanager.googleapis.com/projects/p``,
``//storage.googleapis.com/projects/_/buckets/b/objects/o``,
``//compute.googleapis.com/projects/p/zones/z/instances/i``).

BigQuery jobs (``jobs.query``, ``jobs.insert``) are placed by what they do
(``integrations/_bigquery.py``): ``bigquery.jobs.create`` on the billing project, and after it
every further check the job needs, written into the resource as `` +<permission> <resource>``
(each table read, each dataset written, each bucket); all of them must be allowed.

Users are principals' emails. The look-up ``account`` takes the application's email as the
Google account (lower-cased); workforce identity federation principals are not supported by
Policy Troubleshooter (map them to nothing: unknown).

The engine signs in as a service account (``integrations/_google.py``: a JSON key and a
signed JWT, the metadata server, or a token). Requests to ``*.googleapis.com`` are placed by
the route table (generated from google-api-python-client's discovery documents; paths are
``/<host><path>``); a request to the connection's own host (a private endpoint) by its
path alone, when exactly one service's route fits it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolpass.integrations._google import GoogleIntegration, auth_keys
from toolpass.integrations._kit import UserIds, mapped_user
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Effect,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.gcp._bigquery import plan
from toolpass.integrations.routes import UNREADABLE, Match, Request, Route
from toolpass.wire.errors import ConfigError

__all__ = ["GoogleCloud"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
PERMISSION = re.compile(r"[a-z][a-z0-9]*\.[A-Za-z][A-Za-z0-9]*\.[A-Za-z][A-Za-z0-9]*")
_RESOURCE = re.compile(r"//[a-z0-9][a-z0-9.-]*\.googleapis\.com/[^\s{}?#]+")
_EMAIL = re.compile(r"[^@\s:/]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
#: A principal: an email, written bare or as IAM members are (``user:``, ``serviceAccount:``).
USER_IDS = UserIds(
    re.compile(rf"(?:user:)?(?:serviceAccount:)?{_EMAIL.pattern}"), "a Google account's email"
)
_READ_VERBS = ("get", "list", "search", "read", "view", "access", "query", "export", "lookup")
_DESTRUCTIVE_VERBS = ("delete", "destroy", "purge", "undelete")
_JOB_PATHS = (
    "/bigquery/v2/projects/{projectsId}/queries",
    "/bigquery/v2/projects/{projectsId}/jobs",
)
_MAX_CHECKS = 50
_STATES = {
    "CAN_ACCESS": "allow",
    "CANNOT_ACCESS": "deny",
    "UNKNOWN_INFO": "unknown",
    "UNKNOWN_CONDITIONAL": "unknown",
}
CREDENTIAL = (
    "Least privilege: a service account (IAM & Admin > Service Accounts > Create) granted, on "
    "the organization (or the folders and projects checked), roles/iam.securityReviewer (reads "
    "allow policies) and roles/iam.denyReviewer (reads deny policies), with Groups Reader "
    "(Cloud Identity) so group memberships resolve; nothing that changes a resource. Its JSON "
    "key (Keys > Add key > JSON) by reference (credentials: file:/path/key.json), or the "
    "attached service account on GCE/GKE/Cloud Run (auth metadata). Policy Troubleshooter's "
    "API (policytroubleshooter.googleapis.com) must be enabled in its project."
)


class GoogleCloud(GoogleIntegration):
    """Google Cloud IAM, through Policy Troubleshooter."""

    name = "gcp"
    description = (
        "Google Cloud: whether a principal holds an IAM permission on a resource "
        "(POST /v3/iam:troubleshoot of Policy Troubleshooter: allow and deny policies, "
        "inherited through folders and the organization, group memberships), asked live; "
        "Cloud Storage ACLs are not counted (access only an ACL grants is denied). " + CREDENTIAL
    )
    default_url = "https://policytroubleshooter.googleapis.com"
    identity_modes = ("account",)
    keys = (
        *auth_keys(("https://www.googleapis.com/auth/cloud-platform",)),
        ConfigKey(
            "project",
            "A project id the probe asks about (resourcemanager.projects.get of the engine's "
            "own service account); default: the key file's project_id.",
        ),
        ConfigKey(
            "quota_project",
            "A project to bill Policy Troubleshooter's quota to (x-goog-user-project).",
        ),
        ConfigKey(
            "conditional",
            "What UNKNOWN_CONDITIONAL (a condition needs request context) means: unknown, or deny.",
            default="unknown",
            choices=("unknown", "deny"),
        ),
    )
    actions = ACTIONS

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        super().validate(options)
        for key in ("project", "quota_project"):
            value = options.get(key)
            if value is not None and not re.fullmatch(r"[a-z][a-z0-9:.-]{4,62}", str(value)):
                raise ConfigError("must be a project id", key)

    @classmethod
    def action(cls, name: str) -> Action | None:
        """A declared action, or any IAM permission ``service.resource.verb`` (the set is
        open); its effect is read from the verb."""
        declared = super().action(name)
        if declared is not None or not isinstance(name, str) or not PERMISSION.fullmatch(name):
            return declared
        verb = name.rsplit(".", 1)[1]
        effect: Effect = "write"
        if verb.startswith(_DESTRUCTIVE_VERBS):
            effect = "destructive"
        elif verb.startswith(_READ_VERBS):
            effect = "read"
        return Action(name, f"The IAM permission {name}.", effect, f"{name} on the resource")

    # --- requests ------------------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The route of the request's host (or path), a Cloud Storage object named even when
        its name holds ``/``; a BigQuery job placed by what it does (:func:`_job`)."""
        found = _object_named(super().match_request(request))
        if found is not None and found.route.path.endswith(_JOB_PATHS):
            return _job(found, request)
        return found

    # --- identity ------------------------------------------------------------------------
    def lookup_account(self, email: str) -> list[str]:
        """The application's email as the Google account's (or service account's) email."""
        return [email.lower()] if _EMAIL.fullmatch(email) else []

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        """The permission on the resource; a resource with further checks written after it
        (`` +<permission> <resource>``, a BigQuery job's) needs every one of them."""
        first, *more = resource.split(" +")
        if more:
            pairs = [(m.partition(" ")[0], m.partition(" ")[2]) for m in more]
            return self._all(user, [(action, first), *pairs])
        return self._one(user, action, resource)

    def _all(self, user: str, checks: list[tuple[str, str]]) -> Decision:
        """Every check allowed (a BigQuery job's project, tables, datasets and buckets); the
        first denied one denies; else unknown."""
        if len(checks) > _MAX_CHECKS + 1:
            return Decision.unknown("too many checks for one request", cause="resource")
        decisions = [self._one(user, a, r) for a, r in checks]
        for wanted in ("deny", "unknown"):
            for decision in decisions:
                if decision.decision == wanted:
                    return decision
        return Decision.allow("; ".join(d.reason for d in decisions))

    def _one(self, user: str, action: str, resource: str) -> Decision:
        if not PERMISSION.fullmatch(action):
            return Decision.unknown(f"{action!r} is not an IAM permission", cause="resource")
        if not _RESOURCE.fullmatch(resource) or any(
            s in (".", "..") for s in resource[2:].split("/")
        ):
            return Decision.unknown(
                f"{resource!r} is not a full resource name (//<service>.googleapis.com/<path>)",
                cause="resource",
            )
        principal = mapped_user(self, user, USER_IDS)
        if isinstance(principal, Decision):
            return principal
        principal = principal.removeprefix("user:").removeprefix("serviceAccount:")
        state, why = self.troubleshoot(principal, resource, action)
        verdict = _STATES.get(state, "unknown")
        if state == "UNKNOWN_CONDITIONAL" and self.options.get("conditional") == "deny":
            verdict = "deny"
        said = f"Policy Troubleshooter: {principal} {state} {action} on {resource}{why}"
        if verdict == "allow":
            return Decision.allow(said)
        if verdict == "deny":
            return Decision.deny(said)
        return Decision.unknown(said)

    def troubleshoot(self, principal: str, resource: str, permission: str) -> tuple[str, str]:
        """The overall access state of the tuple, and what decided it."""
        what = f"troubleshoot {permission} of {principal} on {resource}"
        body = {
            "accessTuple": {
                "principal": principal,
                "fullResourceName": resource,
                "permission": permission,
            }
        }
        data = self.google("POST", "/v3/iam:troubleshoot", what=what, json=body)
        state = data.get("overallAccessState")
        if state not in _STATES:
            raise LookupFailed(f"gcp's answer to {what} has no known overallAccessState")
        allow = data.get("allowPolicyExplanation")
        deny = data.get("denyPolicyExplanation")
        parts = []
        if isinstance(allow, dict) and isinstance(allow.get("allowAccessState"), str):
            parts.append(f"allow policies {allow['allowAccessState']}")
        if isinstance(deny, dict) and isinstance(deny.get("denyAccessState"), str):
            parts.append(f"deny policies {deny['denyAccessState']}")
        return str(state), f" ({', '.join(parts)})" if parts else ""

    def google_headers(self) -> Mapping[str, str]:
        quota = self.options.get("quota_project")
        return {"x-goog-user-project": str(quota)} if quota else {}

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        project = self.options.get("project")
        engine = "probe@example.com"
        if self._auth == "service_account":
            key = self._key()
            project = project or key.get("project_id")
            engine = str(key["client_email"])
        resource = f"//cloudresourcemanager.googleapis.com/projects/{project or '_'}"
        state, _ = self.troubleshoot(engine, resource, "resourcemanager.projects.get")
        return ProbeResult(
            True, f"Policy Troubleshooter answers the engine ({engine} {state} on {resource})"
        )


def _job(found: Match, request: Request) -> Match:
    """A BigQuery ``jobs.query`` or ``jobs.insert``: ``bigquery.jobs.create`` on the billing
    project, with every further check its body needs (``integrations/_bigquery.py``) written
    after it as `` +<permission> <resource>``, and its effect; unresolved when the body
    cannot be told."""
    route, project = found.route, found.params.get("projectsId", "")
    form = request.form
    planned = None if form is UNREADABLE else plan(project, route.path.endswith("/queries"), form)
    if planned is None:
        return Match(route, found.params, None)
    effect, checks, sends = planned
    placed = Route(route.method, route.path, route.action, route.resource, effect, True, sends)
    extra = "".join(f" +{p} {r}" for p, r in sorted(set(checks)))
    if len(checks) > _MAX_CHECKS:
        return Match(placed, found.params, None)
    return Match(
        placed, found.params, f"//cloudresourcemanager.googleapis.com/projects/{project}{extra}"
    )


def _object_named(found: Match | None) -> Match | None:
    """A Cloud Storage object whose name holds ``/`` (sent as ``%2F``) is named all the same:
    its full resource name keeps the ``/`` (never a ``.``, ``..`` or empty segment)."""
    if found is None or found.resource is not None:
        return found
    if not found.route.resource.endswith("/buckets/{bucket}/objects/{object}"):
        return found
    bucket, name = found.params.get("bucket", ""), found.params.get("object", "")
    parts = name.split("/")
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{1,221}", bucket) or any(
        p in ("", ".", "..") or not p.isprintable() for p in parts
    ):
        return found
    named = f"//storage.googleapis.com/projects/_/buckets/{bucket}/objects/{name}"
    return Match(found.route, found.params, named)


INTEGRATION = GoogleCloud
