"""Write Zendesk's route table, generated from Zendesk's OpenAPI description.

Zendesk publishes the Support API as one OpenAPI document (developer.zendesk.com/zendesk/
oas.yaml). The public repository ``api-evangelist/zendesk`` carries it split by resource in
``openapi/_original/*-openapi-original.yml`` (Zendesk's paths, parameter names and operation
ids; ``zendesk-support-openapi.yml`` there is that project's own summary and is not read).
This script reads those files from the folder ``TOOLPASS_ZENDESK_OAS`` names (take it with
``git archive <commit> openapi/_original``, or from the pinned sources, ``_generate/sources.py``)
and adds the documented alternate paths the document describes in prose only (``ALTERNATES``:
a user's or group's memberships, a user's or organization's tickets).

Each operation is placed by its path:

- ``/api/v2/tickets/{ticket_id}...`` and ``/api/v2/requests/{request_id}...`` name
  ``ticket:{id}``: a read is ``ticket.view``; ``DELETE`` and ``mark_as_spam``
  ``ticket.delete``; ``merge`` ``ticket.merge``; a request's update (a public comment) and a
  satisfaction rating ``ticket.comment_public``; any other write ``ticket.edit`` (the
  integration reads a ticket update's body: a public comment makes it
  ``ticket.comment_public``); redactions naming the ticket likewise;
- ``POST /api/v2/tickets``, ``/tickets/create_many``, ``/requests`` and the channels' ticket
  creation are ``ticket.create``; writes to many tickets at once are ``account.admin``;
- ``/api/v2/users/{user_id}...`` names ``user:{user_id}``: a read ``user.view`` (the user's
  tickets and requests are lists: ``account.read``), ``DELETE`` ``user.delete``, a write
  ``user.manage``, except passwords set by others, sessions and group memberships
  (``account.admin``) and what a user may not change on their own account: organizations,
  verifying an identity, merging (``user.manage_restricted``);
- ``GET /api/v2/users/me`` is the agent's own request;
- reads that return tickets across the account (search, ticket lists and exports,
  incremental exports, views' tickets, a user's or organization's tickets, audits, metrics,
  satisfaction ratings, suspended tickets, activities) are ``ticket.view_all``: the agent's
  credential answers every ticket it sees, so the user must see every ticket;
- every other read is ``account.read`` (a ``POST`` to ``.../search``, ``autocomplete``,
  ``preview``, ``count`` reads), except audit logs, deleted tickets and users, OAuth and
  sessions (``account.admin``); every other write is ``account.admin`` for the
  administrators' areas (``ADMIN``) and for bulk writes (``create_many``, ``update_many``,
  ``destroy_many``, ...), else ``account.write``.

Flags: every read ``u`` (tickets, comments, users' and organizations' notes are others' text);
``s`` for ticket creation, public comments and verification or sign-up e-mail.

Run ``TOOLPASS_ZENDESK_OAS=<folder> python -m toolpass.integrations.zendesk.generate``; it
writes ``routes.json`` beside this file, sorted.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/zendesk/routes.json"
SOURCE = (
    "Zendesk's OpenAPI description (developer.zendesk.com/zendesk/oas.yaml) as split in "
    "GitHub api-evangelist/zendesk openapi/_original at aaa548006c2a (2026-08-22)"
)
METHODS = ("get", "put", "post", "patch", "delete")
#: User writes a user may not make on their own account (an admin's or an agent's).
_RESTRICTED = ("/organization_memberships", "/organizations", "/merge")
#: Documented alternate paths the description gives in prose only.
ALTERNATES = [
    ("GET", "/api/v2/users/{user_id}/group_memberships"),
    ("POST", "/api/v2/users/{user_id}/group_memberships"),
    ("GET", "/api/v2/users/{user_id}/group_memberships/{group_membership_id}"),
    ("DELETE", "/api/v2/users/{user_id}/group_memberships/{group_membership_id}"),
    ("GET", "/api/v2/groups/{group_id}/memberships"),
    ("GET", "/api/v2/groups/{group_id}/memberships/assignable"),
    ("GET", "/api/v2/groups/{group_id}/users"),
    ("GET", "/api/v2/users/{user_id}/organization_memberships"),
    ("POST", "/api/v2/users/{user_id}/organization_memberships"),
    ("GET", "/api/v2/users/{user_id}/organization_memberships/{organization_membership_id}"),
    ("DELETE", "/api/v2/users/{user_id}/organization_memberships/{organization_membership_id}"),
    ("GET", "/api/v2/organizations/{organization_id}/organization_memberships"),
    ("GET", "/api/v2/organizations/{organization_id}/users"),
    ("GET", "/api/v2/organizations/{organization_id}/tickets"),
    ("GET", "/api/v2/organizations/{organization_id}/requests"),
    ("GET", "/api/v2/users/{user_id}/tickets/requested"),
    ("GET", "/api/v2/users/{user_id}/tickets/ccd"),
    ("GET", "/api/v2/users/{user_id}/tickets/assigned"),
    ("GET", "/api/v2/users/{user_id}/requests"),
]
#: Administrators' areas (first path segment after /api/v2/).
ADMIN = frozenset(
    {
        "account",
        "accounts",
        "any_channel",
        "audit_logs",
        "automations",
        "brands",
        "custom_roles",
        "custom_status",
        "custom_statuses",
        "deleted_tickets",
        "deleted_users",
        "deletion_schedules",
        "dynamic_content",
        "group_memberships",
        "group_slas",
        "groups",
        "imports",
        "oauth",
        "object_layouts",
        "organization_fields",
        "push_notification_devices",
        "queues",
        "recipient_addresses",
        "resource_collections",
        "routing",
        "sharing_agreements",
        "slas",
        "suspended_tickets",
        "targets",
        "ticket_fields",
        "ticket_form_statuses",
        "ticket_forms",
        "trigger_categories",
        "triggers",
        "user_fields",
        "workspaces",
    }
)
#: Reads only administrators may make.
ADMIN_READS = frozenset({"audit_logs", "deleted_tickets", "deleted_users", "oauth"})
_BULK = re.compile(
    r"/(create_many|update_many|destroy_many|create_or_update_many|"
    r"mark_many_as_spam|logout_many|restore_many|recover_many|jobs|job)$"
)
#: Reads that return tickets (or their content) across the account, whichever the agent's
#: credential sees: they need a user who sees every ticket (``ticket.view_all``).
_ALL_TICKETS = re.compile(
    r"^/api/v2/(search(/count|/export)?|tickets(/count|/show_many)?|problems(/autocomplete)?"
    r"|incremental/(tickets(/cursor)?|ticket_events|ticket_metric_events|\{[a-z_]+\}/sample)"
    r"|organizations/\{organization_id\}/(tickets|requests)|users/\{user_id\}/(tickets|requests)"
    r".*|views/(count_many|\{view_id\}/(execute|export|tickets|count))|ticket_audits"
    r"|ticket_metrics(/\{ticket_metric_id\})?|satisfaction_ratings.*|suspended_tickets.*"
    r"|requests(/search)?|channels/twitter/tickets/\{comment_id\}/statuses|activities.*"
    r"|ticket_content_pins)$"
)
_READ_POST = re.compile(r"/(search|autocomplete|preview|count|export)$")
_TICKET = re.compile(r"^/api/v2/(tickets|requests)/\{(ticket_id|request_id)\}(/.*)?$")
_USER = re.compile(r"^/api/v2/users/\{user_id\}(/.*)?$")
_CREATES = re.compile(
    r"^/api/v2/(tickets|tickets/create_many|requests|channels/twitter/tickets|"
    r"channels/voice/tickets)$"
)


def place(method: str, path: str) -> tuple[str, str, str, str]:
    """(action, resource, effect, flags) of one operation."""
    segment = path.removeprefix("/api/v2/").split("/")[0]
    reads = method == "GET" or (method == "POST" and bool(_READ_POST.search(path)))
    effect = "read" if reads else "destructive" if method == "DELETE" else "write"
    flags = "u" if reads else ""
    if path == "/api/v2/users/me" and method == "GET":
        return "account.read", "account", "read", "a"
    if reads and _ALL_TICKETS.match(path):
        return "ticket.view_all", "account", effect, flags
    ticket = _TICKET.match(path)
    if ticket is not None:
        resource, rest = f"ticket:{{{ticket[2]}}}", ticket[3] or ""
        if reads:
            return "ticket.view", resource, effect, flags
        if (method == "DELETE" and not rest) or rest == "/mark_as_spam":
            return "ticket.delete", resource, "destructive", ""
        if rest == "/merge":
            return "ticket.merge", resource, effect, ""
        if ticket[1] == "requests" or rest == "/satisfaction_rating":
            return "ticket.comment_public", resource, effect, "s"
        return "ticket.edit", resource, effect, ""
    if path.startswith(("/api/v2/chat_redactions/", "/api/v2/chat_file_redactions/")):
        return "ticket.edit", "ticket:{ticket_id}", effect, ""
    if path.startswith("/api/v2/comment_redactions/"):
        return "ticket.edit", "ticket:{body.ticket_id}", effect, ""
    if path.startswith("/api/v2/routing/tickets/{ticket_id}"):
        action = "ticket.view" if reads else "ticket.edit"
        return action, "ticket:{ticket_id}", effect, flags
    if method == "POST" and _CREATES.match(path):
        return "ticket.create", "account", effect, "s"
    user = _USER.match(path)
    if user is not None:
        rest = user[1] or ""
        if reads:
            if rest.startswith(("/tickets", "/requests")):
                return "account.read", "account", effect, flags
            return "user.view", "user:{user_id}", effect, flags
        if rest.startswith(("/sessions", "/group_memberships")) or (
            rest == "/password" and method == "POST"
        ):
            return "account.admin", "account", effect, ""
        if method == "DELETE" and not rest:
            return "user.delete", "user:{user_id}", effect, ""
        if rest.startswith(_RESTRICTED) or rest.endswith("/verify"):
            return "user.manage_restricted", "user:{user_id}", effect, ""
        sends = "s" if rest.endswith("/request_verification") else ""
        return "user.manage", "user:{user_id}", effect, sends
    if reads:
        if segment in ADMIN_READS or path.startswith("/api/v2/users/{user_id}/sessions"):
            return "account.admin", "account", effect, flags
        return "account.read", "account", effect, flags
    if segment in ADMIN or _BULK.search(path) or not path.startswith("/api/v2/"):
        return "account.admin", "account", effect, ""
    if path.startswith("/api/v2/organizations/{organization_id}/merge"):
        return "account.admin", "account", effect, ""
    sends = "s" if path.endswith("/request_create") else ""
    return "account.write", "account", effect, sends


def build(oas: Path | None = None) -> dict[str, Any]:
    """The table from the folder ``oas`` (default: the one ``TOOLPASS_ZENDESK_OAS`` names)."""
    import yaml

    if oas is None:
        given = os.environ.get("TOOLPASS_ZENDESK_OAS")
        if not given:
            raise SystemExit("set TOOLPASS_ZENDESK_OAS to the openapi/_original folder")
        oas = Path(given)
    operations: set[tuple[str, str]] = set(ALTERNATES)
    for file in sorted(oas.glob("*-openapi-original.yml")):
        document = yaml.safe_load(file.read_text("utf-8"))
        for path, item in (document.get("paths") or {}).items():
            if not path.startswith(("/api/", "/oauth/")):
                continue
            for method in METHODS:
                if method in item:
                    operations.add((method.upper(), path))
    rows = [[m, p, *place(m, p)] for m, p in sorted(operations, key=lambda o: (o[1], o[0]))]
    return {
        "source": SOURCE,
        "generator": "core/src/toolpass/integrations/zendesk/generate.py",
        "routes": rows,
    }


if __name__ == "__main__":
    data = build()
    OUT.write_text(dump(data), "utf-8")
    print(f"{OUT}: {len(data['routes'])} routes")  # noqa: T201 - a script's report
