"""GitLab's request hook: an API request as its action and resource, filled here rather than
by the table (``gitlab/routes.json``): projects and groups named by URL-encoded full paths,
branches holding ``/``, ``sudo``, forced commits, visibility edits, listings and searches by
what they can return, and tag and release writes on their tag."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolpass.integrations import _fields
from toolpass.integrations.gitlab._actions import ACTION_EFFECT
from toolpass.integrations.gitlab._resources import valid_branch, valid_path
from toolpass.integrations.routes import Match, Request, Route, RouteTable
from toolpass.rules.scope import escapes

__all__ = ["match"]


def match(request: Request, table: RouteTable, under_api: bool) -> Match | None:
    """The route and resource of ``request`` (see :meth:`GitLab.match_request`); ``under_api``:
    the connection's URL ends in ``/api/v4``, so paths may come without it."""
    if under_api and not request.path.startswith("/api/"):
        moved = Request(
            request.method, "/api/v4" + request.path, request.query_string, None, request.body
        )
        moved.headers = request.headers
        request = moved
    found = table.match(request)
    if found is None:
        return None
    route, params = found.route, found.params
    if any(escapes(value) for value in params.values()):
        return Match(route, params, None)
    if _fields.either(request, "sudo") is not None or "sudo" in request.headers:
        route = _variant(route, "instance.admin", "instance")
        return Match(route, params, "instance")
    commit = route.action == "branch.push" and route.path.endswith("/repository/commits")
    if commit and _fields.either(request, "force") in (True, "true", "1", 1):
        route = _variant(route, "branch.force_push", route.resource)
    edit = route.method == "PUT" and route.path == "/api/v4/projects/{project_id}"
    if edit and _fields.either(request, "visibility") is not None:
        route = _variant(route, "project.visibility", route.resource)
    listed = _listing_action(route, request)
    if listed is not None:
        route = _variant(route, listed, route.resource)
    value_of = _value_of(request, params)
    tagged = _tag_route(route)
    if tagged is not None:
        project, tag = value_of("project_id"), value_of(tagged[1])
        resource = f"tag:{project}@{tag}" if project and tag else None
        return Match(_variant(route, tagged[0], tagged[2]), params, resource)
    return Match(route, params, _fields.fill(route.resource, value_of))


def _variant(route: Route, action: str, resource: str) -> Route:
    effect = "destructive" if ACTION_EFFECT[action] == "destructive" else route.effect
    return Route(
        route.method,
        route.path,
        action,
        resource,
        effect,
        route.untrusted,
        route.sends_out,
        route.agent,
    )


_TAGS = "/api/v4/projects/{project_id}/repository/tags"
_RELEASES = "/api/v4/projects/{project_id}/releases"


_SEARCH_SCOPES = {
    "project": {
        "blobs": "repository.read",
        "commits": "repository.read",
        "issues": "issue.read_all",
        "notes": "issue.read_all",
        "merge_requests": "mr.read",
        "milestones": "project.read",
        "wiki_blobs": "wiki.read",
        "users": "project.read",
    },
    "group": {
        **dict.fromkeys(("projects", "milestones", "users"), "group.read"),
        **dict.fromkeys(
            ("issues", "merge_requests", "notes", "blobs", "commits", "wiki_blobs", "epics"),
            "group.read_all",
        ),
    },
}
_GROUP_ADMIN_READS = frozenset(
    [
        "access_requests",
        "access_tokens",
        "audit_events",
        "billable_members",
        "clusters",
        "custom_attributes",
        "deploy_tokens",
        "export",
        "hooks",
        "import",
        "invitations",
        "ldap_group_links",
        "member_roles",
        "push_rule",
        "runners",
        "saml_group_links",
        "service_accounts",
        "variables",
    ]
)


def _listing_action(route: Route, request: Request) -> str | None:
    """The action of a read that lists or searches what a project or group holds, by what
    it can return (the agent's token sees more than the user may): a search by its
    ``scope`` (an unknown scope: ``instance.read``, which only administrators pass), an
    issue list by whether it may hold confidential issues (``confidential=false`` cannot; a
    milestone's or an epic's issues always may),
    a group's merge requests and epics across its projects, a group's settings and secrets.
    None when the route's own action stands."""
    if route.method != "GET":
        return None
    kind, _, rest = route.path.removeprefix("/api/v4/").partition("s/{")
    tail = rest.partition("}/")[2]
    if kind not in ("project", "group"):
        return None
    if re.fullmatch(r"(?:milestones|epics)/\{\w+\}/issues", tail):
        return "issue.read_all" if kind == "project" else "group.read_all"  # confidential too
    if "/" in tail:
        return None
    if tail == "search":
        scope = _fields.scalar(_fields.either(request, "scope")) or ""
        return _SEARCH_SCOPES[kind].get(scope, "instance.read")
    if tail == "issues":
        if str(_fields.either(request, "confidential")).lower() == "false":
            return None
        return "issue.read_all" if kind == "project" else "group.read_all"
    if kind == "group" and tail in ("merge_requests", "epics", "wikis"):
        return "group.read_all"
    if kind == "group" and tail in _GROUP_ADMIN_READS:
        return "group.settings"
    return None


def _tag_route(route: Route) -> tuple[str, str, str] | None:
    """(action, the field naming the tag, resource template) of a write to a tag or a
    release (a release's rules are its tag's), or None for any other route."""
    path = route.path
    if route.method == "GET" or not path.startswith((_TAGS, _RELEASES)):
        return None
    if path == _TAGS:
        action, field = "tag.create", "body.tag_name"
    elif path.startswith(_TAGS + "/"):
        action, field = "tag.delete", "tag_name"
    elif path == _RELEASES:
        action, field = "release.create", "body.tag_name"
    else:
        action = "release.create"
        field = "tag_name" if path.startswith(_RELEASES + "/{tag_name}") else "id"
    return action, field, "tag:{project_id}@{" + field + "}"


_IID = re.compile(r"[0-9]{1,12}")


def _value_of(request: Request, params: Mapping[str, str]) -> Any:
    """The value of a resource template's field, validated as GitLab names it; None when the
    request does not name it, or names something GitLab would not."""

    def value_of(name: str) -> Any:
        if name.startswith(("body.", "query.")):
            value = _fields.either(request, name.partition(".")[2])
        else:
            value = params.get(name)
        text = _fields.scalar(value)
        if text is None:
            return None
        if name in ("project_id", "group_id"):
            return text if valid_path(text) else None
        if name in ("mr_iid", "issue_iid"):
            return text if _IID.fullmatch(text) else None
        if name in ("branch", "body.branch", "body.ref", "tag_name", "body.tag_name", "id"):
            return text if valid_branch(text) else None
        return text

    return value_of
