"""Write Datadog's route table, generated from the datadog-api-client Python package.

datadog-api-client is generated from Datadog's public OpenAPI descriptions (v1 and v2); each
``datadog_api_client/v{1,2}/api/*_api.py`` declares its operations as ``_Endpoint`` settings
(``endpoint_path``, ``operation_id``, ``http_method``). This script reads those settings from
the installed package (``pip install datadog-api-client``; the version is recorded) and maps
each operation, by its API module (its OpenAPI tag), to an action of
``datadog/actions.json``: ``AREA.read`` or ``AREA.write`` (``org.read`` / ``org.manage`` for a
module no area names). A path that names a resource a restriction policy can govern gives
``TYPE:{id}`` as the resource, else ``org``. A POST whose path ends in a query verb (search,
aggregate, query, ...) reads. Flags: ``u`` for answers carrying others' text (logs, events,
incidents, monitors' messages, ...), ``s`` for requests that send data out (notifications,
webhooks, intake).

Run ``python -m toolpass.integrations.datadog.generate``; it writes
``routes.json`` beside this file, sorted.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/datadog/routes.json"

#: API module -> (area, restriction-policy type or "", the path parameter naming it)
AREAS: dict[str, tuple[str, str, str]] = {
    "monitors_api": ("monitors", "monitor", "monitor_id"),
    "downtimes_api": ("downtimes", "", ""),
    "dashboards_api": ("dashboards", "dashboard", "dashboard_id"),
    "dashboard_lists_api": ("dashboards", "", ""),
    "notebooks_api": ("notebooks", "notebook", "notebook_id"),
    "service_level_objectives_api": ("slos", "slo", "slo_id"),
    "service_level_objective_corrections_api": ("slos", "", ""),
    "synthetics_api": ("synthetics", "synthetics-test", "public_id"),
    "logs_api": ("logs", "", ""),
    "incidents_api": ("incidents", "", ""),
    "users_api": ("users", "", ""),
    "roles_api": ("users", "", ""),
    "service_accounts_api": ("users", "", ""),
    "security_monitoring_api": ("security_rules", "security-rule", "rule_id"),
    "powerpack_api": ("dashboards", "", ""),  # dashboards_* permissions; org-wide
    "reference_tables_api": ("reference_tables", "reference-table", "id"),
    "workflow_automation_api": ("workflows", "workflow", "workflow_id"),
    "app_builder_api": ("apps", "app-builder-app", "app_id"),
}
_READ_VERBS = re.compile(r"/(search|aggregate|query|scalar|timeseries|list|analytics)$")
_UNTRUSTED = {"logs", "incidents", "monitors", "notebooks", "security_rules"}
_UNTRUSTED_MODULES = {"events_api", "spans_api", "rum_api", "audit_api", "case_management_api"}
_SENDS = re.compile(r"^/api/v[12]/(events|series|logs|check_run|distribution_points)$|/notify$")
_SETTING = re.compile(
    r'"endpoint_path": "(?P<path>[^"]+)",\s*"operation_id": "(?P<op>[^"]+)",\s*'
    r'"http_method": "(?P<method>[A-Z]+)"'
)


def build() -> dict[str, object]:
    import datadog_api_client
    from datadog_api_client.version import __version__

    root = Path(datadog_api_client.__file__).parent
    routes: dict[tuple[str, str], list[str]] = {}
    for module in sorted(root.glob("v[12]/api/*_api.py")):
        area, kind, param = AREAS.get(module.stem, ("org", "", ""))
        for m in _SETTING.finditer(module.read_text("utf-8")):
            method, path = m["method"], m["path"]
            if not path.startswith("/api/"):
                continue  # another host (ip-ranges, the logs intake), not api.<site>
            reads = method in ("GET", "HEAD") or (
                method == "POST" and bool(_READ_VERBS.search(path))
            )
            if area == "org":
                action = "org.read" if reads else "org.manage"
            else:
                action = f"{area}.read" if reads else f"{area}.write"
            resource = f"{kind}:{{{param}}}" if kind and f"{{{param}}}" in path else "org"
            effect = "read" if reads else "destructive" if method == "DELETE" else "write"
            flags = ""
            if reads and (area in _UNTRUSTED or module.stem in _UNTRUSTED_MODULES):
                flags += "u"
            if not reads and _SENDS.search(path):
                flags += "s"
            routes[(path, method)] = [method, path, action, resource, effect, flags]
    rows = [routes[k] for k in sorted(routes)]
    return {
        "source": f"PyPI datadog-api-client {__version__} (v1 and v2 _Endpoint settings, "
        f"generated from Datadog's OpenAPI descriptions: {len(rows)} operations)",
        "generator": "core/src/toolpass/integrations/datadog/generate.py",
        "routes": rows,
    }


if __name__ == "__main__":
    OUT.write_text(dump(build()), "utf-8")
    sys.stdout.write(f"wrote {OUT}\n")
