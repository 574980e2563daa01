"""Write Google Workspace's route table, generated from google-api-python-client's discovery
documents (``googleapiclient/discovery_cache/documents``: Drive v3, Gmail v1, Calendar v3,
Admin SDK Directory v1, Docs v1, Sheets v4; offline, versioned with the package).

Each method gives a route ``/<host><servicePath><flatPath>`` (media uploads add their upload
paths) mapped to an action of ``google_workspace/actions.json``:

- Drive, Docs and Sheets: a method naming a file (``fileId``, ``documentId``,
  ``spreadsheetId``) acts on ``drive:file/{id}``: reads ``drive.file.read``, comments
  ``drive.file.comment``, permissions ``drive.file.share``, copies ``drive.file.copy``,
  deletion ``drive.file.delete``, other writes ``drive.file.write``; a shared drive's methods
  ``drive.drive.read`` / ``drive.drive.manage`` / ``drive.drive.delete`` on
  ``drive:drive/{driveId}``; listing and searching files, changes and shared drives
  ``drive.list``, the rest (creating files, about) ``drive.read`` / ``drive.create`` on
  ``drive:root``;
- Gmail: ``gmail.read`` / ``gmail.write`` / ``gmail.send`` / ``gmail.delete`` on
  ``gmail:user/{userId}``;
- Calendar: ``calendar.read`` / ``calendar.write`` on ``calendar:{calendarId}``, and on
  ``calendar:me`` for the caller's own calendar list and settings;
- Admin SDK Directory: ``admin.users.*`` and ``admin.groups.*`` for users, groups and members
  (on ``customer``), ``admin.read`` / ``admin.write`` for the rest.

Effects: GET reads, DELETE is destructive, other methods write (a POST whose verb reads, such
as ``batchGet`` or ``getByDataFilter``, reads). Flags: ``u`` for answers carrying others'
content (files, mail, events, documents), ``s`` for requests that send data out (mail sent,
files shared, event invitations).

Run ``python -m toolpass.integrations.google_workspace.generate``; it writes
``routes.json`` beside this file, sorted.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from toolpass.integrations._generate.discovery import methods
from toolpass.integrations._generate.table import dump

OUT = (
    Path(__file__).resolve().parents[5]
    / "core/src/toolpass/integrations/google_workspace/routes.json"
)
DOCUMENTS = ("drive.v3", "gmail.v1", "calendar.v3", "admin.directory_v1", "docs.v1", "sheets.v4")
_FILE_PARAMS = ("fileId", "documentId", "spreadsheetId")
_READ_VERB = re.compile(r"^(get|list|batchGet|getByDataFilter|export|download|watch)")
_SENDS = re.compile(
    r"^(gmail\.users\.(messages\.send|drafts\.send)|drive\.permissions\.(create|update)|"
    r"calendar\.events\.(insert|patch|update|move|quickAdd|import|delete))$"
)
#: Requests about the agent's own credential (token endpoints): no user permission.
AGENT_ROUTES = [
    ["POST", "/oauth2.googleapis.com/token", "agent.token", "site", "read", "a"],
    ["GET", "/oauth2.googleapis.com/tokeninfo", "agent.token", "site", "read", "a"],
]


def place(api: str, method_id: str, path: str, reads: bool, http: str) -> tuple[str, str]:
    """The action and resource of a method."""
    verb = method_id.rsplit(".", 1)[1]
    params = set(re.findall(r"\{\+?(\w+)\}", path))
    if api in ("drive", "docs", "sheets"):
        file = next((p for p in _FILE_PARAMS if p in params), None)
        if file:
            resource = f"drive:file/{{{file}}}"
            if reads:
                return "drive.file.read", resource
            if ".comments." in method_id or ".replies." in method_id:
                return "drive.file.comment", resource
            if ".permissions." in method_id or ".accessproposals." in method_id:
                return "drive.file.share", resource
            if method_id == "drive.files.copy":
                return "drive.file.copy", resource
            if http == "DELETE" or verb in ("emptyTrash",):
                return "drive.file.delete", resource
            return "drive.file.write", resource
        if "driveId" in params or "teamDriveId" in params:
            drive = "driveId" if "driveId" in params else "teamDriveId"
            if reads:
                return "drive.drive.read", f"drive:drive/{{{drive}}}"
            return (
                "drive.drive.delete" if http == "DELETE" else "drive.drive.manage"
            ), f"drive:drive/{{{drive}}}"
        if verb == "list" and method_id != "drive.apps.list":  # what the sender sees
            return "drive.list", "drive:root"
        return ("drive.read" if reads else "drive.create"), "drive:root"
    if api == "gmail":
        resource = "gmail:user/{userId}" if "userId" in params else "site"
        if _SENDS.match(method_id):
            return "gmail.send", resource
        if reads:
            return "gmail.read", resource
        return (
            "gmail.delete" if http == "DELETE" or verb == "batchDelete" else "gmail.write"
        ), resource
    if api == "calendar":
        resource = "calendar:{calendarId}" if "calendarId" in params else "calendar:me"
        return ("calendar.read" if reads else "calendar.write"), resource
    # admin directory
    area = method_id.split(".")[1]
    kind = {"users": "users", "groups": "groups", "members": "groups"}.get(area)
    if kind:
        write = "delete" if http == "DELETE" else "create" if verb == "insert" else "write"
        if area == "members":
            write = "write"  # a group's membership is the group's
        return (f"admin.{kind}.read" if reads else f"admin.{kind}.{write}"), "customer"
    return ("admin.read" if reads else "admin.write"), "customer"


def build() -> dict[str, object]:
    from importlib.metadata import version

    routes: dict[tuple[str, str], list[str]] = {}
    for m in methods(DOCUMENTS):
        reads = m.http in ("GET", "HEAD") or (m.http == "POST" and bool(_READ_VERB.match(m.verb)))
        if m.verb == "watch":
            reads = False  # a push channel sends changes to an address out
        action, resource = place(m.api, m.method["id"], m.path, reads, m.http)
        effect = "read" if reads else "destructive" if m.http == "DELETE" else "write"
        flags = "u" if reads and m.api in ("drive", "docs", "sheets", "gmail", "calendar") else ""
        flags += "s" if _SENDS.match(m.method["id"]) or m.verb == "watch" else ""
        for full in m.paths():
            routes[(full, m.http)] = [m.http, full, action, resource, effect, flags]
    for row in AGENT_ROUTES:
        routes[(row[1], row[0])] = row
    rows = [routes[k] for k in sorted(routes)]
    return {
        "source": f"PyPI google-api-python-client {version('google-api-python-client')} "
        f"(discovery documents {', '.join(DOCUMENTS)}: {len(rows)} routes)",
        "generator": "core/src/toolpass/integrations/google_workspace/generate.py",
        "routes": rows,
    }


if __name__ == "__main__":
    OUT.write_text(dump(build()), "utf-8")
    sys.stdout.write(f"wrote {OUT}\n")
