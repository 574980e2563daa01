"""Write PagerDuty's route table, generated from PagerDuty's own OpenAPI description.

``reference/REST/openapiv3.json`` in github.com/PagerDuty/api-schema describes every REST API
v2 operation. This script reads it (the file ``TOOLPASS_PAGERDUTY_OPENAPI`` names; take it
with ``git show <commit>:reference/REST/openapiv3.json``; the commit and the document's
version are recorded) and maps each operation by its first path segment to an action of
``pagerduty/actions.json``: incidents (and log entries) to ``incidents.*``, services and
maintenance windows to ``services.*``, escalation policies, schedules (and on-calls), teams
and users to their own, anything else to ``account.read`` / ``account.manage``. A path under
``/<area>/{id}`` names that object (``incident:{id}``, ``service:{id}``, ...); others name
``account``. Overrides are ``schedules.override``; ``POST /incidents`` is
``incidents.create``; ``/users/me`` is the agent's own (flag ``a``). A POST that only
queries (analytics, previews, searches) reads. Flags: ``u`` for answers carrying alert and
incident text, ``s`` for requests that page or notify people.

Run ``TOOLPASS_PAGERDUTY_OPENAPI=openapiv3.json python -m
toolpass.integrations.pagerduty.generate``; it writes ``routes.json`` beside this file, sorted.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/pagerduty/routes.json"
SOURCE = "PagerDuty/api-schema reference/REST/openapiv3.json at 91a06fb3c64b (2026-08-14)"
#: first path segment -> (area, resource kind of /<segment>/{id})
AREAS = {
    "incidents": ("incidents", "incident"),
    "log_entries": ("incidents", ""),
    "services": ("services", "service"),
    "maintenance_windows": ("services", ""),
    "escalation_policies": ("escalation_policies", "escalation_policy"),
    "schedules": ("schedules", "schedule"),
    "oncalls": ("schedules", ""),
    "teams": ("teams", "team"),
    "users": ("users", "user"),
}
_QUERY = re.compile(r"^/analytics/|/preview$|/search$|^/incidents/count$")
_SENDS = re.compile(
    r"^/incidents$|/status_updates$|/responder_requests$|/notification_subscriptions"
)
_UNTRUSTED = {"incidents", "log_entries", "alert_grouping_settings", "paused_incident_reports"}


def build(document: dict[str, object] | None = None) -> dict[str, object]:
    if document is None:
        path = os.environ.get("TOOLPASS_PAGERDUTY_OPENAPI")
        if not path:
            raise SystemExit("set TOOLPASS_PAGERDUTY_OPENAPI to PagerDuty's openapiv3.json")
        document = json.loads(Path(path).read_text("utf-8"))
    paths = document["paths"]
    assert isinstance(paths, dict)
    rows = []
    for path, ops in paths.items():
        for method in ops:
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            rows.append(_row(method.upper(), path))
    rows.sort(key=lambda r: (r[1], r[0]))
    info = document.get("info") or {}
    version = info.get("version", "?") if isinstance(info, dict) else "?"
    return {
        "source": f"{SOURCE}, version {version}: {len(rows)} operations",
        "generator": "core/src/toolpass/integrations/pagerduty/generate.py",
        "routes": rows,
    }


def _row(method: str, path: str) -> list[str]:
    segments = path.strip("/").split("/")
    if segments[0] == "v3":  # the v3 schedules API
        segments = segments[1:]
    area, kind = AREAS.get(segments[0], ("account", ""))
    reads = method == "GET" or (method == "POST" and bool(_QUERY.search(path)))
    effect = "read" if reads else "destructive" if method == "DELETE" else "write"
    flags = "u" if reads and segments[0] in _UNTRUSTED else ""
    path_of = "/" + "/".join(segments)
    flags += "s" if not reads and _SENDS.search(path) else ""
    resource = "account"
    if kind and len(segments) > 1 and re.fullmatch(r"\{[a-z_]+\}", segments[1]):
        resource = f"{kind}:{segments[1]}"
    if path == "/users/me" or path.startswith("/users/me/"):
        return [method, path, "session.read", "self", "read", "a"] if reads else [
            method, path, "users.manage", "account", effect, ""]  # fmt: skip
    if area == "account":
        action = "account.read" if reads else "account.manage"
    elif area == "schedules" and "/overrides" in path_of and not reads:
        action = "schedules.override"
    elif path == "/incidents" and method == "POST":
        action = "incidents.create"
    elif area == "incidents":
        action = "incidents.read" if reads else "incidents.respond"
    else:
        action = f"{area}.read" if reads else f"{area}.manage"
    return [method, path, action, resource, effect, flags]


if __name__ == "__main__":
    OUT.write_text(dump(build()), "utf-8")
    sys.stdout.write(f"wrote {OUT}\n")
