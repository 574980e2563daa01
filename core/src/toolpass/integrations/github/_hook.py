"""GitHub's request hook: what the generated REST table cannot place alone. GraphQL
(``_graphql``), a branch with a ``/`` mid-path, the default branch of a contents write that
names none, searches bounded to one repository, Git reference writes on the branch they name,
routes placed finer than the table does; and the hosts tied to the connection
(``hosts.json``: raw files, archives, uploads, Git over HTTP, gists)."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from importlib import resources
from urllib.parse import unquote

from toolpass.integrations.github._actions import EFFECTS
from toolpass.integrations.github._graphql import match_graphql
from toolpass.integrations.github._resources import parse_resource
from toolpass.integrations.routes import Match, Request, Route, RouteTable, fill
from toolpass.rules.scope import escapes

__all__ = ["match", "search_repo", "serves"]

# Routes the generated table places coarser than the check can judge: (method, template) ->
# the action and resource they are checked as.
_PLACED = {
    ("POST", "/repos/{owner}/{repo}/branches/{branch}/rename"): (
        "branch.rename",
        "ref:{owner}/{repo}@{branch}",
    ),
    ("POST", "/repos/{owner}/{repo}/actions/runs/{run_id}/pending_deployments"): (
        "deployment.review",
        "run:{owner}/{repo}#{run_id}",
    ),
    ("PUT", "/repos/{owner}/{repo}/pulls/{pull_number}/update-branch"): (
        "contents.write",  # merges the base into the pull request's head branch
        "pr:{owner}/{repo}#{pull_number}",
    ),
    ("GET", "/repos/{owner}/{repo}/security-advisories/{ghsa_id}"): (
        "security.read",
        "advisory:{owner}/{repo}@{ghsa_id}",
    ),
    ("PATCH", "/repos/{owner}/{repo}/security-advisories/{ghsa_id}"): (
        "security.manage",
        "advisory:{owner}/{repo}@{ghsa_id}",
    ),
    ("POST", "/repos/{owner}/{repo}/security-advisories/{ghsa_id}/cve"): (
        "advisory.cve",
        "advisory:{owner}/{repo}@{ghsa_id}",
    ),
    ("POST", "/repos/{owner}/{repo}/security-advisories/{ghsa_id}/forks"): (
        "security.manage",
        "advisory:{owner}/{repo}@{ghsa_id}",
    ),
}
# REST searches the agent's credential answers: what they can return is readable only when
# the query is bounded to one repository (the action that reads what it finds there).
_SEARCHES = {
    "/search/code": "contents.read",
    "/search/commits": "contents.read",
    "/search/issues": "issue.read",
    "/search/repositories": "repo.read",
    "/search/labels": "issue.read",
}
#: Searches placed by something else than ``q`` (``repository_id``): never bounded.
_UNBOUNDED = frozenset({"/search/labels"})
#: The qualifiers that name a search's scope (GitHub ORs them together).
_SCOPE = re.compile(r"(repo|org|user|owner):(\S*)", re.IGNORECASE)
_REPO_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
#: What a query's text can mean beyond its words: phrases, grouping and boolean operators.
_OPERATORS = re.compile(r"[\"'()\\]|(?<!\S)(OR|AND|NOT)(?!\S)", re.IGNORECASE)
# Git reference writes the table places on the repository: a branch they name is their
# resource (its rules bind them), named in the body (``refs/heads/x``) or in the path.
_REF_WRITES = {
    ("POST", "/repos/{owner}/{repo}/git/refs"): "body",
    ("PATCH", "/repos/{owner}/{repo}/git/refs/heads/{branch+}"): "path",
    ("PATCH", "/repos/{owner}/{repo}/git/refs/{ref+}"): "path",
    ("DELETE", "/repos/{owner}/{repo}/git/refs/{ref+}"): "path",
}
# Routes with a branch or ref mid-path: a name holding "/" is re-placed by match_request.
_MID_REF = re.compile(
    r"(?P<head>/repos/[^/]+/[^/]+/(?P<what>branches|commits)/)(?P<name>.+)"
    r"(?P<tail>/(?:protection(?:/.*)?|rename|check-runs|check-suites|status|statuses))"
)
_PLACEHOLDER = "toolpass-ref"


def serves(scheme: str, host: str, port: int, own: tuple[str, str, int], ghes: bool) -> bool:
    """Whether a request to ``host`` goes to the connection ``own`` (scheme, host, port),
    a GitHub Enterprise Server when ``ghes`` (see :meth:`GitHub.serves`)."""
    host = host.lower().rstrip(".")
    own_scheme, own_host, own_port = own
    hosts, server, _ = _content_hosts()
    if ghes:
        sub, _, rest = host.partition(".")
        named = host == own_host or (rest == own_host and "/" not in sub and sub in server)
        return named and (scheme, port) == (own_scheme, own_port)
    return own_host == "api.github.com" and scheme in ("http", "https") and host in hosts


def match(request: Request, table: RouteTable, ghes: bool, own_host: str) -> Match | None:
    """The route of ``request`` (see :meth:`GitHub.match_request`): ``table`` is the API's,
    ``own_host`` the connection's host."""
    site, path = _site(request, ghes, own_host)
    if site is None:
        return _match_api(request, table, ghes)
    if site == "":  # a GitHub Enterprise Server path: the API, or else the web site
        found = _match_api(request, table, ghes)
        if found is not None:
            return found
        site = "web"
    if path != request.path:
        request = Request(
            request.method,
            path,
            request.query_string,
            request.headers,
            request.body,
            request.host,
        )
    found = _content_hosts()[2][site].match(request)
    return _git(found, request) if found is not None and site == "web" else found


def _site(request: Request, ghes: bool, own_host: str) -> tuple[str | None, str]:
    """The content site a request goes to and its path there; None for the API, ""
    for a GitHub Enterprise Server path that is the API or else the web site."""
    host = request.host.lower().rstrip(".")
    hosts, server, _ = _content_hosts()
    path = request.path
    if not ghes:
        return hosts.get(host), path  # any other host is the API's, however spelled
    sub, _, rest = host.partition(".")
    if rest == own_host and "/" not in sub and sub in server:
        return server[sub], path
    if path.rstrip("/") == "/api/graphql":
        return None, path
    for prefix, site in server.items():
        if path.startswith(f"/{prefix}/"):
            return site, path[len(prefix) + 1 :]
    return "", path


def _match_api(request: Request, table: RouteTable, ghes: bool) -> Match | None:
    found = _match_api_route(request, table, ghes)
    if found is not None and found.route.action == "site.read":
        action = _SEARCHES.get(found.route.path)
        if action is not None:
            return _search(found, request, action)
    if found is not None and (found.route.method, found.route.path) in _REF_WRITES:
        return _ref_write(found, request)
    placed = _PLACED.get((found.route.method, found.route.path)) if found else None
    if found is None or placed is None:
        return found
    action, template = placed
    route = dataclasses.replace(
        found.route, action=action, resource=template, effect=EFFECTS[action]
    )
    resource = None if found.resource is None else fill(template, found.params, request)
    return Match(route, found.params, resource)


def _match_api_route(request: Request, table: RouteTable, ghes: bool) -> Match | None:
    path = request.path
    if request.method == "POST" and path.rstrip("/") == ("/api/graphql" if ghes else "/graphql"):
        return match_graphql(request)
    mid = _MID_REF.fullmatch(path)
    if mid is not None and "/" in mid["name"]:
        return _match_mid_ref(request, mid, table)
    found = table.match(request)
    if (
        found is not None
        and found.resource is None
        and found.route.resource.endswith("@{body.branch}")
        and "branch" not in request.form
        and (request.form or not (request.body or b"").strip())
    ):
        # No branch: the write goes to the default branch, checked as @HEAD.
        body = json.dumps({**request.form, "branch": "HEAD"}).encode()
        headers = {**request.headers, "content-type": "application/json"}
        again = Request(request.method, path, request.query_string, headers, body)
        return table.match(again)
    return found


def _match_mid_ref(request: Request, mid: re.Match[str], table: RouteTable) -> Match | None:
    placeholder = mid["head"] + _PLACEHOLDER + mid["tail"]
    found = table.match(
        Request(request.method, placeholder, request.query_string, request.headers, request.body)
    )
    if found is None:
        return None
    key = next((k for k, v in found.params.items() if v == _PLACEHOLDER), None)
    if key is None:
        return None
    segments = mid["name"].split("/")
    name = "/".join(unquote(seg) for seg in segments)
    hostile = any(not seg or "/" in unquote(seg) for seg in segments) or escapes(name)
    params = {**found.params, key: name}
    resource = None if hostile else fill(found.route.resource, params, request)
    return Match(found.route, params, resource)


@functools.cache
def _content_hosts() -> tuple[dict[str, str], dict[str, str], dict[str, RouteTable]]:
    """``hosts.json``: GitHub.com's content hosts and GitHub Enterprise
    Server's content paths or subdomains, each naming a site, and each site's routes."""
    item = resources.files(__name__.rpartition(".")[0]) / "hosts.json"
    data = json.loads(item.read_bytes())
    sites = {name: RouteTable(map(Route.row, rows)) for name, rows in data["sites"].items()}
    return data["hosts"], data["server"], sites


def _git(found: Match, request: Request) -> Match:
    """Git over HTTP: the ref advertisement before a push and the push itself are writes
    (a push names its branches in the body), as is an LFS batch that uploads."""
    path, resource = request.path, found.resource
    if path.endswith("/info/refs") and "git-receive-pack" in request.query.get("service", []):
        return _placed(found, "contents.write", resource)
    if path.endswith("/info/lfs/objects/batch") and request.method == "POST":
        download = request.form.get("operation") == "download"
        return _placed(found, "contents.read" if download else "contents.write", resource)
    if not path.endswith("/git-receive-pack") or resource is None:
        return found
    pushed = {_pushed(resource[5:], *command) for command in _push_commands(request.body)}
    if len(pushed) != 1:  # nothing readable, or several actions or branches at once
        return _placed(found, "contents.write", None)
    action, ref = pushed.pop()
    return _placed(found, action, ref if parse_resource(ref) else None)


def _ref_write(found: Match, request: Request) -> Match:
    """A Git reference write placed on the branch it names: ``POST .../git/refs`` creates
    ``refs/heads/<branch>`` (its body's ``ref``); a path that names ``refs/heads/...``
    (not the documented ``heads/...``) is checked as every branch it may name; an update
    with ``force`` is ``contents.force``."""
    route, params = found.route, found.params
    if route.method == "PATCH" and request.form.get("force") not in (None, False):
        found = _placed(found, "contents.force", found.resource)  # force: true, or unclear
        route = found.route
    named = request.form.get("ref") if _REF_WRITES[route.method, route.path] == "body" else None
    if named is None:
        named = params.get("ref")
    if not isinstance(named, str) or not named.startswith("refs/heads/"):
        return found
    if route.method == "POST":
        named = named[len("refs/heads/") :]
    resource = f"ref:{params['owner']}/{params['repo']}@{named}"
    return Match(route, params, resource if parse_resource(resource) else None)


def _search(found: Match, request: Request, action: str) -> Match:
    """A REST search, sent with the agent's credential, returns what the agent sees: it is
    ``action`` on the one repository its ``q`` is bounded to (a single ``repo:owner/name``,
    no phrase, grouping or boolean operator), and names no resource otherwise."""
    values = request.query.get("q") or []
    bounded = len(set(values)) == 1 and found.route.path not in _UNBOUNDED
    repo = search_repo(values[0]) if bounded else None
    route = dataclasses.replace(
        found.route, action=action, resource="repo:{query.q}", agent=False, untrusted=True
    )
    return Match(route, found.params, None if repo is None else f"repo:{repo}")


def search_repo(query: str) -> str | None:
    """The repository a search query is bounded to: its one ``repo:owner/name`` qualifier,
    when nothing in it (another scope qualifier, a phrase, a group, OR/AND/NOT, a qualifier
    glued to other text) can widen it; ``-repo:`` and the like only narrow. Else None."""
    if _OPERATORS.search(query):
        return None
    bounds: list[re.Match[str]] = []
    for found in _SCOPE.finditer(query):
        before = query[: found.start()]
        if not before or before[-1].isspace():
            bounds.append(found)
        elif before[-1] != "-" or (len(before) > 1 and not before[-2].isspace()):
            return None  # a qualifier GitHub may read another way
    if len(bounds) != 1 or bounds[0][1].lower() != "repo":
        return None
    name = bounds[0][2]
    return name if _REPO_NAME.fullmatch(name) and not escapes(name) else None


def _placed(found: Match, action: str, resource: str | None) -> Match:
    effect = EFFECTS[action]
    route = dataclasses.replace(
        found.route, action=action, effect=effect, untrusted=effect == "read"
    )
    return Match(route, found.params, resource)


_PKT_LENGTH = re.compile(rb"[0-9a-f]{4}")
_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _push_commands(body: bytes | None) -> list[tuple[str, str, str]]:
    """The ``old new ref`` commands of a git-receive-pack request (pkt-lines up to the
    flush); empty when the body is not one."""
    commands: list[tuple[str, str, str]] = []
    pos, data = 0, body or b""
    while _PKT_LENGTH.fullmatch(data[pos : pos + 4]):
        size = int(data[pos : pos + 4], 16)
        if size == 0:
            return commands
        line, pos = data[pos + 4 : pos + size], pos + size
        if size < 5 or pos > len(data):
            break
        text = line.split(b"\0", 1)[0].rstrip(b"\n").decode("utf-8", "replace")
        if text.startswith("shallow "):
            continue
        parts = text.split(" ")
        if len(parts) != 3 or not all(_OID.fullmatch(oid) for oid in parts[:2]):
            break
        commands.append((parts[0], parts[1], parts[2]))
    return []


def _pushed(repo: str, old: str, new: str, ref: str) -> tuple[str, str]:
    """The action and resource of one pushed ref: a branch is its own resource."""
    created, deleted = not old.strip("0"), not new.strip("0")
    branch = ref.removeprefix("refs/heads/")
    target = f"ref:{repo}@{branch}" if branch != ref else f"repo:{repo}"
    if deleted:
        return "branch.delete", target
    if created:
        return "branch.create", target
    return "contents.write", target
