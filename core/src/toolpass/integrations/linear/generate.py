"""Write Linear's route table, generated from Linear's published GraphQL schema.

Linear's API is GraphQL only (``POST /graphql``). Its schema is published as
``packages/sdk/src/schema.graphql`` in the public repository ``linear/linear`` (the source of
the npm package ``@linear/sdk``, whose tarball ships generated TypeScript, not the schema).
This script reads that file (the one ``TOOLPASS_LINEAR_SCHEMA`` names; take it with ``git show
<commit>:packages/sdk/src/schema.graphql``, or from the pinned sources, ``_generate/sources.py``)
with graphql-core and writes one row per top-level field, keyed ``POST
/graphql#query.<field>`` or ``POST /graphql#mutation.<field>`` (a name can be both: the query
``projectUpdate`` reads a project update, the mutation changes a project):

- a query field taking ``id`` whose object is an issue, a team, or belongs to one (a comment,
  attachment or issue relation of an issue; a cycle, label, membership, template, triage
  responsibility or workflow state of a team) reads that resource (``issue.read`` /
  ``team.read`` on ``<kind>:{id}``); every other query field is ``workspace.read``;
- a mutation on such a kind (by the longest kind its name starts with) writes that resource
  (``<kind>:{id}``); a create names its parent (``team:{input.teamId}``,
  ``issue:{input.issueId}``); the action follows the kind (issues and their children
  ``issue.write`` / ``issue.delete``; a comment's text ``comment.edit`` / ``comment.delete``;
  a team and its children ``team.manage``); every other mutation is ``workspace.admin`` when
  its name is one of ``ADMIN`` (settings, integrations, users, invites, auth, imports,
  exports), else ``workspace.write``;
- a row ``#mutation.<field>?<argument>`` replaces the field's row when that argument is given
  (``issueDelete(permanentlyDelete: true)`` is an admin's, ``issueArchive(trash: true)`` a
  delete, ``issueUpdate(input: {teamId})`` a move between two teams, refused).

Every mutation must be placed by these rules (the script fails on one it cannot place), so
a schema with new mutations needs a decision here. ``types`` holds, for every object and
interface type, its fields whose type is an object (``{type: {field: type}}``), so that the
matcher can tell where a query's nested fields lead.

Run ``TOOLPASS_LINEAR_SCHEMA=schema.graphql python -m toolpass.integrations.linear.generate``
(with graphql-core installed); it writes ``routes.json`` beside this file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/linear/routes.json"
SOURCE = (
    "GitHub linear/linear packages/sdk/src/schema.graphql at 8335e09a17dd (2026-07-22, "
    "@linear/sdk 88.3.0)"
)

ISSUE_KINDS = ("comment", "attachment", "issueRelation")
TEAM_KINDS = (
    "cycle",
    "issueLabel",
    "teamMembership",
    "template",
    "triageResponsibility",
    "workflowState",
)
KINDS = ("issue", "team", *ISSUE_KINDS, *TEAM_KINDS)
#: Mutations (or name prefixes ending in ``*``) of workspace settings, users, integrations,
#: invitations, sign-in flows, imports and exports: a workspace admin's.
ADMIN = (
    "organization*",
    "integration*",
    "updateIntegrationSlackScopes",
    "jiraIntegrationConnect",
    "airbyteIntegrationConnect",
    "webhook*",
    "oauthApplication*",
    "partnerApplicationCreate",
    "emailIntakeAddress*",
    "issueImport*",
    "createCsvExportReport",
    "fileUploadDangerouslyDelete",
    "resendOrganizationInvite*",
    "userChangeRole",
    "userSuspend",
    "userUnsuspend",
    "userUpdate",
    "userRevokeAllSessions",
    "userRevokeSession",
    "userUnlinkFromIdentityProvider",
    "teamKeyDelete",
    "projectStatus*",
    "projectReassignStatus",
    "timeSchedule*",
    "gitAutomation*",
    "releasePipeline*",
    "releaseStage*",
    "createOrganizationFromOnboarding",
    "joinOrganizationFromOnboarding",
    "leaveOrganization",
    "emailUserAccountAuthChallenge",
    "emailTokenUserAccountAuth",
    "googleUserAccountAuth",
    "samlTokenUserAccountAuth",
    "passkeyLogin*",
    "logoutAllSessions",
    "logoutOtherSessions",
    "logoutSession",
)
#: Mutations whose create names its parent in an argument (``None``: a batch or a list,
#: which names no single resource and is refused).
CREATES: dict[str, str | None] = {
    "issueCreate": "team:{input.teamId}",
    "issueBatchCreate": None,
    "issueBatchUpdate": None,
    "commentCreate": "issue:{input.issueId}",
    "attachmentCreate": "issue:{input.issueId}",
    "issueRelationCreate": "issue:{input.issueId}",
    "issueLabelCreate": "team:{input.teamId}",
    "workflowStateCreate": "team:{input.teamId}",
    "cycleCreate": "team:{input.teamId}",
    "cycleShiftAll": "cycle:{input.id}",
    "teamMembershipCreate": "team:{input.teamId}",
    "templateCreate": "team:{input.teamId}",
    "triageResponsibilityCreate": "team:{input.teamId}",
    "issueExternalSyncDisable": "attachment:{attachmentId}",
    "agentSessionCreateOnIssue": "issue:{input.issueId}",
    "agentSessionCreateOnComment": "comment:{input.commentId}",
}
#: Name prefixes of workspace objects whose names start with a kind (releases of issues; a
#: new team, which members may create unless the workspace restricts it).
WORKSPACE = ("issueToRelease", "teamCreate")
#: Rows taken when an argument (``input.field`` for a field of an input) is given: true, or
#: a value.
WHEN_SET = {
    ("issueDelete", "permanentlyDelete"): ("workspace.admin", "workspace", "destructive"),
    ("issueArchive", "trash"): ("issue.delete", "issue:{id}", "destructive"),
    # a move to another team writes two teams: it names no single resource and is refused
    ("issueUpdate", "input.teamId"): ("issue.write", "", "write"),
}
#: Mutations that send data out of Linear (notifications, e-mail, posts to other services,
#: fetched URLs).
SENDS = re.compile(
    r"^(issueCreate|issueUpdate|issueBatch\w+|issueShare|issueSubscribe|issueReminder|"
    r"commentCreate|commentUpdate|attachment(Create|Link\w+|SyncToSlack)|"
    r"organizationInvite\w+|resendOrganizationInvite\w*|projectUpdateCreate|"
    r"initiativeUpdateCreate|webhook(Create|Update)|imageUploadFromUrl|contact\w*Create|"
    r"create\w+UpdateReminder|integration\w+Post|agent\w+)$"
)
#: Query fields about the caller itself: the agent's own requests (``viewer`` only while
#: nothing below it leads to issues or teams; the matcher checks).
AGENT = ("viewer", "rateLimitStatus", "applicationInfo")


def _kind(name: str) -> str | None:
    found = [k for k in KINDS if name.startswith(k) and name[len(k) : len(k) + 1].isupper()]
    return max(found, key=len) if found else None


def _admin(name: str) -> bool:
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in ADMIN)


def _mutation(name: str, args: set[str]) -> tuple[str, str, str, str]:
    """(action, resource template, effect, flags) of mutation ``name``."""
    effect = "destructive" if "Delete" in name else "write"
    flags = "s" if SENDS.match(name) else ""
    if name in CREATES:
        template = CREATES[name]
    elif _admin(name):
        return "workspace.admin", "workspace", effect, flags
    elif name.startswith("attachmentLink"):
        template = "issue:{issueId}"
    else:
        kind = _kind(name)
        if kind is None or name.startswith(WORKSPACE):
            return "workspace.write", "workspace", effect, flags
        if "id" not in args:
            raise SystemExit(f"linear: {name} names no {kind} by id; place it in CREATES")
        template = f"{kind}:{{id}}"
    if template is None:  # a batch names no single resource: refused
        return "issue.write", "", effect, flags
    kind = template.partition(":")[0]
    if name == "issueCreate":
        action = "issue.write"
    elif kind in ("team", *TEAM_KINDS):
        action = "team.manage"
    elif name in ("commentUpdate", "commentDelete"):
        action = "comment.delete" if effect == "destructive" else "comment.edit"
    elif name == "issueDelete":
        action = "issue.delete"
    else:
        action = "issue.write"
    return action, template, effect, flags


def _check_template(schema: Any, name: str, template: str) -> None:
    """Every ``{argument.field}`` a template names exists in the mutation's arguments."""
    from graphql import get_named_type

    assert schema.mutation_type is not None
    for ref in re.findall(r"\{([^{}]+)\}", template):
        first, *rest = ref.split(".")
        field = schema.mutation_type.fields[name]
        arg = field.args.get(first)
        assert arg is not None, (name, ref)
        kind = get_named_type(arg.type)
        for part in rest:
            assert part in kind.fields, (name, ref)
            kind = get_named_type(kind.fields[part].type)


def build(schema_file: Path | None = None) -> dict[str, Any]:
    """The table from ``schema_file`` (default: the file ``TOOLPASS_LINEAR_SCHEMA`` names)."""
    from graphql import (
        GraphQLInterfaceType,
        GraphQLObjectType,
        GraphQLUnionType,
        build_schema,
        get_named_type,
    )

    if schema_file is None:
        given = os.environ.get("TOOLPASS_LINEAR_SCHEMA")
        if not given:
            raise SystemExit("set TOOLPASS_LINEAR_SCHEMA to Linear's schema.graphql")
        schema_file = Path(given)
    schema = build_schema(schema_file.read_text("utf-8"))
    assert schema.query_type is not None
    assert schema.mutation_type is not None
    rows: list[list[str]] = []
    for name, field in sorted(schema.query_type.fields.items()):
        if name in AGENT:
            rows.append(
                ["POST", f"/graphql#query.{name}", "workspace.read", "workspace", "read", "a"]
            )
            continue
        kind = name if name in KINDS and "id" in field.args else None
        if kind is None:
            action, resource = "workspace.read", "workspace"
        else:
            action = "team.read" if kind in ("team", *TEAM_KINDS) else "issue.read"
            resource = f"{kind}:{{id}}"
        rows.append(["POST", f"/graphql#query.{name}", action, resource, "read", "u"])
    for name, field in sorted(schema.mutation_type.fields.items()):
        action, resource, effect, flags = _mutation(name, set(field.args))
        _check_template(schema, name, resource)
        rows.append(["POST", f"/graphql#mutation.{name}", action, resource, effect, flags])
        for (mutation, argument), (action, resource, effect) in WHEN_SET.items():
            if mutation == name:
                _check_template(schema, name, "{" + argument + "}")
                path = f"/graphql#mutation.{name}?{argument}"
                rows.append(["POST", path, action, resource, effect, ""])
    objects = (GraphQLObjectType, GraphQLInterfaceType, GraphQLUnionType)
    types: dict[str, dict[str, str]] = {}
    for name, kind_type in sorted(schema.type_map.items()):
        if name.startswith("__") or name in ("Query", "Mutation", "Subscription"):
            continue
        if not isinstance(kind_type, (GraphQLObjectType, GraphQLInterfaceType)):
            continue
        found = {
            f: get_named_type(t.type).name
            for f, t in sorted(kind_type.fields.items())
            if isinstance(get_named_type(t.type), objects)
        }
        if found:
            types[name] = found
    roots = {
        name: get_named_type(field.type).name
        for name, field in sorted(schema.query_type.fields.items())
    }
    return {
        "source": SOURCE,
        "generator": "core/src/toolpass/integrations/linear/generate.py",
        "note": "POST /graphql#<query|mutation>.<field>: the matcher parses the GraphQL document",
        "roots": roots,
        "types": types,
        "routes": rows,
    }


if __name__ == "__main__":
    data = build()
    OUT.write_text(dump(data), "utf-8")
    print(f"{OUT}: {len(data['routes'])} routes")  # noqa: T201 - a script's report
