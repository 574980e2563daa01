"""Linear's GraphQL requests (``POST /graphql``) placed on the linear integration's actions.

``linear/routes.json`` (``linear/generate.py`` generates it) holds one row per top-level
field of Linear's schema, keyed ``/graphql#query.<field>`` or ``/graphql#mutation.<field>``,
and the schema's object fields (``types``). The document is parsed with the shared
GraphQL reader, ``integrations/_graphql.py`` (operations, fragments, aliases, variables):

- a mutation is placed when every root field has a row, each row's resource template
  (``issue:{id}``, ``team:{input.teamId}``) is filled from its arguments, and all of them
  name one action on one resource; a row ``#mutation.<field>?<argument>`` replaces the field's row
  when that argument is given. An unknown field, a batch, a missing or odd argument, or two
  resources answer None or an unresolved resource: the write is refused;
- a query's root field with a resource template (``issue(id:)``, ``team(id:)``,
  ``comment(id:)``, ...) reads that resource, unless a field below it leads to other issues,
  teams, projects, documents or initiatives (``issue { project { issues } }``,
  ``assignee { assignedIssues }``, ``parent``, ``children``): then it names no single resource
  and is unresolved. A root list (``issues``, ``searchIssues``, ``comments``, ``teams``,
  ``projects``, ...) whose data, or any field below it, is what a private team hides (issues,
  teams, comments, projects, documents, cycles, labels, states, ...) is ``team.read`` on the
  one team its filter bounds it to (``filter: {team: {id|key: {eq: X}}}``; ``teams``:
  ``filter: {id|key: {eq: X}}``; no ``or``), and unresolved otherwise: the answer would hold
  whatever the agent's credential sees, private teams included. Other root fields
  (``users``, ``organization { name }``) are ``workspace.read``; ``viewer`` (the agent's own
  user) is the agent's request while nothing below it leads to such data. Fields of two
  resources are unresolved.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from toolpass.integrations._graphql import Fields, Unreadable, operation, resolve
from toolpass.integrations.routes import Match, Request, Route

__all__ = ["match_graphql"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_REF = re.compile(r"\{([^{}]+)\}")
#: Types whose data a private team hides: reaching one from another resource's data is an
#: escape, except along STAY (a resource's own parts and parent).
BEARING = frozenset(
    {
        "Issue",
        "Team",
        "Comment",
        "Attachment",
        "Project",
        "ProjectUpdate",
        "Document",
        "DocumentContent",
        "Initiative",
        "InitiativeUpdate",
        "IssueRelation",
        "CustomerNeed",
        "AgentSession",
    }
)
STAY = frozenset(
    {
        ("Issue", "team"),
        ("Issue", "comments"),
        ("Issue", "attachments"),
        ("Comment", "issue"),
        ("Comment", "parent"),
        ("Comment", "children"),
        ("Attachment", "issue"),
        ("IssueRelation", "issue"),
        ("Team", "issues"),
        ("Cycle", "team"),
        ("Cycle", "issues"),
        ("WorkflowState", "team"),
        ("IssueLabel", "team"),
        ("TeamMembership", "team"),
        ("Template", "team"),
        ("TriageResponsibility", "team"),
    }
)
_SUFFIX = re.compile(r"(Connection|Edge|Payload)$")
#: Types a private team hides beside BEARING: its own objects, and whatever is named after
#: issues, teams, projects, ... (search results, milestones, histories, suggestions).
_TEAM_OBJECTS = frozenset(
    {"Cycle", "IssueLabel", "WorkflowState", "TeamMembership", "Template", "TriageResponsibility"}
)
_TEAM_PREFIXES = ("Issue", "Team", "Cycle", "Project", "Document", "Initiative", "Comment")
#: Root lists that can be bounded to one team: ``filter: {team: {id|key: {eq: X}}}`` (for
#: ``teams``: ``filter: {id|key: {eq: X}}``).
_BOUNDED = frozenset(
    {"issues", "searchIssues", "issueSearch", "cycles", "workflowStates", "issueLabels", "teams"}
)


@functools.cache
def _table() -> tuple[dict[str, Route], dict[str, str], dict[str, dict[str, str]]]:
    """The rows by ``query.<field>`` / ``mutation.<field>``, the query fields' types, and the
    object fields of every type."""
    folder = resources.files("toolpass.integrations.linear")
    data = json.loads(folder.joinpath("routes.json").read_text("utf-8"))
    rows = {r[1].partition("#")[2]: Route.row(r) for r in data["routes"]}
    return rows, data["roots"], data["types"]


@functools.cache
def _conditions() -> dict[str, list[tuple[str, Route]]]:
    """Mutation -> [(argument path, the row taken when it is given)]."""
    found: dict[str, list[tuple[str, Route]]] = {}
    for key, route in _table()[0].items():
        name, sep, argument = key.removeprefix("mutation.").partition("?")
        if sep and key.startswith("mutation."):
            found.setdefault(name, []).append((argument, route))
    return found


def _base(type_name: str) -> str:
    return _SUFFIX.sub("", type_name)


def _fill(template: str, args: Mapping[str, Any]) -> str | None:
    """The resource a row's template names with these arguments, or None."""
    if not template:
        return None
    out = template
    for ref in _REF.findall(template):
        value: Any = args
        for part in ref.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if not isinstance(value, str) or not _ID.fullmatch(value):
            return None
        out = out.replace("{" + ref + "}", value)
    return out


def _escapes(walk: Fields, type_name: str, selections: list[Any] | None) -> bool:
    """Whether a field below leads from ``type_name``'s data to other resources' data."""
    fields = _table()[2].get(type_name, {})
    for name, _, children in walk.fields(selections or []):
        if children is None:
            continue
        target = fields.get(name)
        if target is None:  # an object field the schema does not know: cannot tell
            return True
        inside = _SUFFIX.search(type_name) and _base(type_name) == _base(target)
        if _base(target) in BEARING and (type_name, name) not in STAY and not inside:
            return True
        if _escapes(walk, target, children):
            return True
    return False


def _team_data(type_name: str) -> bool:
    base = _base(type_name)
    return base in BEARING or base in _TEAM_OBJECTS or base.startswith(_TEAM_PREFIXES)


def _reaches_team_data(walk: Fields, type_name: str, selections: list[Any] | None) -> bool:
    """Whether a field's data, or any field below it, is data a private team hides."""
    if _team_data(type_name):
        return True
    fields = _table()[2].get(type_name, {})
    for name, _, children in walk.fields(selections or []):
        if children is None:
            continue
        target = fields.get(name)
        if target is None or _reaches_team_data(walk, target, children):
            return True  # an object field the schema does not know: cannot tell
    return False


def _one_team(field: str, args: Mapping[str, Any]) -> str | None:
    """The one team a root list is bounded to by its filter, or None."""
    where = args.get("filter")
    if field not in _BOUNDED or not isinstance(where, dict) or "or" in where:
        return None
    team = where if field == "teams" else where.get("team")
    if not isinstance(team, dict) or len(team) != 1:
        return None
    ((key, test),) = team.items()
    value = test.get("eq") if isinstance(test, dict) and len(test) == 1 else None
    ok = key in ("id", "key") and isinstance(value, str) and _ID.fullmatch(value)
    return value if ok else None


def _merged(routes: list[Route], resource: str | None) -> Match:
    first = routes[0]
    effect = "destructive" if any(r.effect == "destructive" for r in routes) else first.effect
    route = Route(
        first.method,
        first.path,
        first.action,
        first.resource,
        effect,
        any(r.untrusted for r in routes),
        any(r.sends_out for r in routes),
        all(r.agent for r in routes),
    )
    return Match(route, {}, resource)


def _query(walk: Fields, roots: list[Any], variables: Mapping[str, Any]) -> Match | None:
    rows, types, _ = _table()
    placed: dict[tuple[str, str | None], list[Route]] = {}
    agent: list[Route] = []
    for name, args, children in walk.fields(roots):
        if name in ("__typename", "__schema", "__type"):
            continue
        route = rows.get(f"query.{name}")
        if route is None:
            return None
        if route.agent:
            if not _escapes(walk, types[name], children):
                agent.append(route)
                continue
            route = rows["query.organization"]
        if route.resource == "workspace" and _reaches_team_data(walk, types[name], children):
            team = _one_team(name, resolve(args, variables))
            bounded = team is not None and not _escapes(walk, types[name], children)
            route = Route(route.method, route.path, "team.read", "team:{id}", "read", True)
            placed.setdefault(("team.read", f"team:{team}" if bounded else None), []).append(route)
            continue
        if route.resource == "workspace":
            placed.setdefault((route.action, "workspace"), []).append(route)
            continue
        resource = _fill(route.resource, resolve(args, variables))
        if resource is not None and _escapes(walk, types[name], children):
            resource = None
        placed.setdefault((route.action, resource), []).append(route)
    if not placed:
        return _merged(agent or [rows["query.viewer"]], "workspace")
    if len(placed) == 1:
        ((_, resource), routes), *_ = placed.items()
        return _merged(routes, resource)
    return _merged([r for routes in placed.values() for r in routes], None)


def _mutation(walk: Fields, roots: list[Any], variables: Mapping[str, Any]) -> Match | None:
    rows = _table()[0]
    placed: dict[tuple[str, str | None], list[Route]] = {}
    for name, args, _ in walk.fields(roots):
        if name == "__typename":
            continue
        route = rows.get(f"mutation.{name}")
        if route is None:
            return None
        values = resolve(args, variables)
        for argument, conditional in _conditions().get(name, ()):
            value: Any = values
            for part in argument.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if value not in (None, False, "", [], {}):
                route = conditional
                break
        placed.setdefault((route.action, _fill(route.resource, values)), []).append(route)
    if not placed:
        return None
    if len(placed) == 1:
        ((_, resource), routes), *_ = placed.items()
        return _merged(routes, resource)
    return _merged([r for routes in placed.values() for r in routes], None)


def match_graphql(request: Request) -> Match | None:
    """The action and resource of a GraphQL request to Linear; None when it has no route."""
    if request.method == "GET":  # GraphQL over GET: the same fields, from the query string
        form = {k: v[0] for k, v in parse_qs(request.query_string).items() if len(v) == 1}
        body = json.dumps(form).encode()
        request = Request("POST", request.path, "", {"content-type": "application/json"}, body)
    found = operation(request)
    if found is None:
        return None
    kind, roots, fragments, variables = found
    walk = Fields(fragments)
    try:
        if kind == "query":
            return _query(walk, roots, variables)
        if kind == "mutation":
            return _mutation(walk, roots, variables)
    except (Unreadable, ValueError, RecursionError):
        return None
    return None
