"""Write Google Cloud's route table, generated from google-api-python-client's discovery documents.

google-api-python-client ships Google's API discovery documents
(``googleapiclient/discovery_cache/documents/<api>.<version>.json``, offline, versioned with the
package). For each service below, every method gives a route: its ``httpMethod``, the path
``/<host><servicePath><flatPath>`` (the host is the document's ``rootUrl``: routes are matched
per host; media uploads add their ``/upload/...`` and ``/resumable/upload/...`` paths, but for
``{+name}`` paths, which get no route and are refused), and

- the action: the IAM permission the method needs. Discovery documents do not name it, so it
  is derived from the method id ``<service>.<collections...>.<verb>`` as
  ``<service>.<last collection>.<verb>`` (``secretmanager.projects.secrets.versions.access`` ->
  ``secretmanager.versions.access``), ``insert`` read as ``create``, ``patch`` as ``update``,
  ``aggregatedList`` as ``list``, with the service renamed where IAM names it differently
  (``cloudresourcemanager`` -> ``resourcemanager``, Cloud SQL's ``sql`` -> ``cloudsql``) and the
  methods whose permission is known to differ listed in ``PERMISSIONS`` (curated from
  Google's IAM permissions reference);
- the resource: the full resource name the permission is checked on: the path's longest run of
  ``collection/{id}`` pairs (``global`` and ``aggregated`` skipped, a ``:verb`` dropped,
  a trailing location, zone or region left out), as ``//<service>.googleapis.com/<path>``;
  a bare ``projects/{id}`` (and folders, organizations) is
  ``//cloudresourcemanager.googleapis.com/projects/{id}``; Cloud Storage is
  ``//storage.googleapis.com/projects/_/buckets/{bucket}[/objects/{object}]`` and a bucket's
  creation its ``project`` query parameter; a method naming no resource gets ``//<host>/``
  (unresolvable: the check answers unknown, and a write is refused);
- the effect: GET reads, DELETE is destructive, a POST whose verb reads (get..., list...,
  search..., testIamPermissions, ...) reads, others write; flags ``u`` for answers carrying
  others' content (object data, query results, log entries, documents), ``s`` for requests
  that send data out (Pub/Sub publish).

Run ``python -m toolpass.integrations.gcp.generate``; it writes
``routes.json`` beside this file, sorted.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from toolpass.integrations._generate.discovery import methods
from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/gcp/routes.json"

#: The services (discovery document names) in the table.
SERVICES = (
    "artifactregistry.v1",
    "bigquery.v2",
    "cloudbuild.v1",
    "cloudfunctions.v1",
    "cloudfunctions.v2",
    "cloudkms.v1",
    "cloudresourcemanager.v1",
    "cloudresourcemanager.v3",
    "compute.v1",
    "container.v1",
    "dns.v1",
    "firestore.v1",
    "iam.v1",
    "iamcredentials.v1",
    "logging.v2",
    "monitoring.v3",
    "policytroubleshooter.v3",
    "pubsub.v1",
    "redis.v1",
    "run.v1",
    "run.v2",
    "secretmanager.v1",
    "serviceusage.v1",
    "spanner.v1",
    "sqladmin.v1",
    "storage.v1",
)
#: Where IAM's name for a service is not its API's.
RENAMED = {"cloudresourcemanager": "resourcemanager", "sql": "cloudsql"}
#: The host in full resource names, where it is not the API's.
RESOURCE_HOST = {"sqladmin": "cloudsql.googleapis.com"}
VERBS = {"insert": "create", "patch": "update", "aggregatedList": "list"}
#: Method ids whose permission the derivation does not give (Google's IAM reference).
PERMISSIONS = {
    "bigquery.tabledata.list": "bigquery.tables.getData",
    "bigquery.tabledata.insertAll": "bigquery.tables.updateData",
    "bigquery.jobs.query": "bigquery.jobs.create",
    "bigquery.jobs.getQueryResults": "bigquery.jobs.get",
    "storage.objects.compose": "storage.objects.create",
    "storage.objects.copy": "storage.objects.create",
    "storage.objects.rewrite": "storage.objects.create",
    "storage.objects.watchAll": "storage.objects.list",
    "pubsub.projects.subscriptions.pull": "pubsub.subscriptions.consume",
    "pubsub.projects.subscriptions.acknowledge": "pubsub.subscriptions.consume",
    "pubsub.projects.subscriptions.modifyAckDeadline": "pubsub.subscriptions.consume",
    "pubsub.projects.subscriptions.streamingPull": "pubsub.subscriptions.consume",
    "secretmanager.projects.secrets.addVersion": "secretmanager.versions.add",
    "secretmanager.projects.locations.secrets.addVersion": "secretmanager.versions.add",
    "logging.entries.list": "logging.logEntries.list",
    "container.projects.locations.clusters.well-known.getOpenid-configuration": (
        "container.clusters.get"
    ),
    "logging.entries.write": "logging.logEntries.create",
    "iamcredentials.projects.serviceAccounts.generateAccessToken": (
        "iam.serviceAccounts.getAccessToken"
    ),
    "iamcredentials.projects.serviceAccounts.generateIdToken": "iam.serviceAccounts.getOpenIdToken",
    "iamcredentials.projects.serviceAccounts.signBlob": "iam.serviceAccounts.signBlob",
    "iamcredentials.projects.serviceAccounts.signJwt": "iam.serviceAccounts.signJwt",
}
_READ_VERB = re.compile(r"^(get|list|search|batchGet|testIamPermissions|lookup|fetch|query$)")
_UNTRUSTED = re.compile(
    r"^(storage\.objects\.|bigquery\.(tabledata|jobs)\.|logging\.entries\.|firestore\.|"
    r"spanner\.projects\.instances\.databases\.sessions\.(read|streamingRead)|"
    r"pubsub\.projects\.subscriptions\.pull)"
)
_SENDS = re.compile(r"^pubsub\.projects\.topics\.publish$")
_LOCATIONS = {"locations", "zones", "regions"}
_SKIPPED = {"global", "aggregated"}
#: Requests about the agent's own credential (token endpoints): no user permission.
AGENT_ROUTES = [
    [
        "POST",
        "/oauth2.googleapis.com/token",
        "agent.token",
        "//oauth2.googleapis.com/",
        "read",
        "a",
    ],
    ["POST", "/sts.googleapis.com/v1/token", "agent.token", "//sts.googleapis.com/", "read", "a"],
    [
        "GET",
        "/oauth2.googleapis.com/tokeninfo",
        "agent.token",
        "//oauth2.googleapis.com/",
        "read",
        "a",
    ],
    [
        "POST",
        "/oauth2.googleapis.com/tokeninfo",
        "agent.token",
        "//oauth2.googleapis.com/",
        "read",
        "a",
    ],
]


def _param(segment: str) -> bool:
    head = segment.partition(":")[0]
    return head.startswith("{") and head.endswith("}")


def permission(method_id: str) -> str:
    if method_id in PERMISSIONS:
        return PERMISSIONS[method_id]
    parts = method_id.split(".")
    service = RENAMED.get(parts[0], parts[0])
    collection = parts[-2] if len(parts) >= 3 else parts[0]
    return f"{service}.{collection}.{VERBS.get(parts[-1], parts[-1])}"


def resource(api: str, host: str, path: str, method: dict[str, Any]) -> str:
    """The full resource name template of a method's path (relative to its servicePath)."""
    if api == "storage":
        params = re.findall(r"\{(\w+)\}", path)
        if "bucket" in params:
            tail = "/objects/{object}" if "object" in params else ""
            return "//storage.googleapis.com/projects/_/buckets/{bucket}" + tail
        if "project" in method.get("parameters", {}):
            return "//cloudresourcemanager.googleapis.com/projects/{query.project}"
        return f"//{host}/"
    segments = [s for s in path.split("/") if s]
    if segments and re.fullmatch(r"v\d+\w*", segments[0]):
        segments = segments[1:]
    kept: list[str] = []
    i = 0
    while i < len(segments):
        seg = segments[i]
        if seg in _SKIPPED and i + 1 < len(segments):
            kept.append(seg)
            i += 1
            continue
        nxt = segments[i + 1] if i + 1 < len(segments) else ""
        if not _param(seg) and ":" not in seg and nxt and _param(nxt):
            kept += [seg, nxt.partition(":")[0]]
            i += 2
            continue
        break
    while kept and kept[-1] in _SKIPPED:
        kept.pop()
    while len(kept) >= 4 and kept[-2] in _LOCATIONS:
        kept = kept[:-2]
    while kept and kept[-1] in _SKIPPED:
        kept.pop()
    if not kept:
        return f"//{host}/"
    if len(kept) == 2 and kept[0] in ("projects", "folders", "organizations"):
        return "//cloudresourcemanager.googleapis.com/" + "/".join(kept)
    return f"//{RESOURCE_HOST.get(api, host)}/" + "/".join(kept)


def build() -> dict[str, object]:
    from importlib.metadata import version

    routes: dict[tuple[str, str], list[str]] = {}
    for m in methods(SERVICES):
        reads = m.http in ("GET", "HEAD") or (m.http == "POST" and bool(_READ_VERB.match(m.verb)))
        effect = "read" if reads else "destructive" if m.http == "DELETE" else "write"
        mid = m.method["id"]
        action = permission(mid)
        flags = ("u" if reads and _UNTRUSTED.match(mid) else "") + (
            "s" if _SENDS.match(mid) else ""
        )
        target = resource(
            m.api, m.host, m.method["path"] if m.api == "storage" else m.path, m.method
        )
        for full in m.paths():
            routes[(full, m.http)] = [m.http, full, action, target, effect, flags]
    for row in AGENT_ROUTES:
        routes[(row[1], row[0])] = row
    rows = [routes[k] for k in sorted(routes)]
    return {
        "source": f"PyPI google-api-python-client {version('google-api-python-client')} "
        f"(discovery documents {', '.join(SERVICES)}: {len(rows)} routes; IAM permissions "
        "derived from method ids, see core/src/toolpass/integrations/gcp/generate.py)",
        "generator": "core/src/toolpass/integrations/gcp/generate.py",
        "routes": rows,
    }


if __name__ == "__main__":
    OUT.write_text(dump(build()), "utf-8")
    sys.stdout.write(f"wrote {OUT}\n")
