"""GitHub GraphQL (``POST /graphql``) placed on the github integration's actions.

A query is a read, placed by EVERY field path in it (fragments expanded, aliases and
variables resolved), not only its root fields:

- ``repository(owner:, name:)``, or ``repository(name:)`` below ``organization(login:)``,
  ``user(login:)`` or ``repositoryOwner(login:)``, reads that repository (``repo.read`` on
  ``repo:owner/name``), with everything nested in it; a scalar of a named account
  (``organization(login:) { name }``) reads the account (``org.read``/``user.read``);
- the agent's own profile (``viewer { login }``) and public data (``rateLimit``, ``meta``,
  ``licenses``, ``__schema``, ...) are agent requests;
- anything else names no single resource, so the request hook refuses it as unresolved:
  ``node(id:)``/``nodes`` (node ids name no repository without a look-up), ``search``, an
  unknown root field, an object field below an account (``viewer { repositories }``,
  ``organization { teams }``), a field in ``ESCAPES`` (fields that lead from a repository
  to others, or across repositories: ``forks``, ``parent``, ``owner { repositories }``,
  cross-references, ``timelineItems``, ...), issues or pull requests reached through
  anything but the repository itself, its labels and milestones (``author { issues }``), a
  variable that is missing, and a query naming two resources.

A mutation is classified by its root fields alone (what it selects from the result changes
nothing), and placed only when every root field is a known mutation whose arguments name
its repository: GitHub's mutations take node ids (``createPullRequest(input:
{repositoryId})``, ``mergePullRequest``, ``deleteRef``, ``addComment``), which name no
repository without a look-up, so they answer None and the write is refused as unmapped.
``createCommitOnBranch`` with ``branch: {repositoryNameWithOwner, branchName}`` is
``contents.write`` on that branch.

The parser follows the GraphQL specification's lexical grammar (October 2021) closely
enough to read operations, fields, arguments and fragments; a document it cannot read
answers None (a refused write), never a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from toolpass.integrations.github._resources import parse_resource
from toolpass.integrations.routes import Match, Request, Route

__all__ = ["match_graphql"]

# Root query fields about public data (and the schema): agent requests.
AGENT_FIELDS = frozenset(
    {
        "rateLimit",
        "meta",
        "license",
        "licenses",
        "codeOfConduct",
        "codesOfConduct",
        "topic",
        "marketplaceCategories",
        "marketplaceCategory",
        "marketplaceListing",
        "marketplaceListings",
        "securityAdvisories",
        "securityAdvisory",
        "securityVulnerabilities",
        "__schema",
        "__type",
    }
)
# Root fields naming an account by login: below them, ``repository(name:)`` is that
# account's repository.
ACCOUNTS = {"organization": "org", "user": "user", "repositoryOwner": "user"}
# Fields that lead from the data of one repository to other repositories, or that list data
# across repositories: below a named resource they name no single one.
ESCAPES = frozenset(
    {
        "repository",
        "repositories",
        "repositoryOwner",
        "repositoriesContributedTo",
        "topRepositories",
        "starredRepositories",
        "pinnedRepositories",
        "pinnedItems",
        "pinnableItems",
        "itemShowcase",
        "watching",
        "forks",
        "parent",
        "templateRepository",
        "headRepository",
        "headRepositoryOwner",
        "headRef",
        "source",
        "fromRepository",
        "commitRepository",
        "canonical",
        "duplicate",
        "timeline",
        "timelineItems",
        "closingIssuesReferences",
        "closedByPullRequestsReferences",
        "trackedIssues",
        "trackedInIssues",
        "subIssues",
        "associatedPullRequests",
        "projectItems",
        "projectCards",
        "projects",
        "projectsV2",
        "projectV2",
        "project",
        "recentProjects",
        "organizations",
        "organization",
        "enterprise",
        "enterprises",
        "gists",
        "gist",
        "contributionsCollection",
        "issueComments",
        "commitComments",
        "repositoryDiscussions",
        "repositoryDiscussionComments",
        "sponsoring",
        "sponsors",
        "sponsorshipsAsSponsor",
        "sponsorshipsAsMaintainer",
        "lists",
        "packages",
        "search",
        "resource",
    }
)
# A repository's own issues and pull requests: reached from the repository, its labels or
# milestones; from an account (``author { issues }``) they are everyone's.
_OWN_ITEMS = frozenset(
    {"issues", "pullRequests", "issue", "pullRequest", "issueOrPullRequest", "discussions"}
)
_CONTAINERS = frozenset({"labels", "label", "milestones", "milestone", "nodes", "edges", "node"})
# Known mutations and the action each performs. Only those whose arguments can name a
# repository (see ``_mutation_resource``) are ever placed; the others document the action
# the write would need and answer None.
MUTATIONS = {
    "createCommitOnBranch": "contents.write",
    "createPullRequest": "pr.create",
    "updatePullRequest": "pr.update",
    "mergePullRequest": "pr.merge",
    "addPullRequestReview": "pr.review",
    "submitPullRequestReview": "pr.review",
    "createIssue": "issue.create",
    "updateIssue": "issue.update",
    "closeIssue": "issue.update",
    "deleteIssue": "issue.delete",
    "addComment": "issue.comment",
    "createRef": "branch.create",
    "updateRef": "contents.write",
    "deleteRef": "branch.delete",
    "createRepository": "repo.create",
    "deleteRepository": "repo.delete",
}

_TOKEN = re.compile(
    r"""
    (?P<ignored>[\s,\ufeff]+|\#[^\n\r]*)
    |(?P<block>\"\"\"(?:\\\"\"\"|[^"]|"(?!""))*\"\"\")
    |(?P<string>"(?:[^"\\\n\r]|\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4}))*")
    |(?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![_A-Za-z0-9.]))
    |(?P<name>[_A-Za-z][_0-9A-Za-z]*)
    |(?P<punct>\.\.\.|[!$&():=@\[\]{|}])
    """,
    re.VERBOSE,
)


class _Unreadable(Exception):
    """The document is not one this parser reads."""


class _Var:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _Unreadable(f"unexpected character at {pos}")
        pos = m.end()
        kind = m.lastgroup or ""
        if kind != "ignored":
            out.append((kind, m.group()))
    return out


Field = tuple[str, dict[str, Any], list[Any] | None]  # name, arguments, selections


class _Parser:
    """Operations and fragments: fields with their arguments and nested selections. A
    selection is a field ``(name, arguments, selections or None)``, a fragment spread
    ``("...", name)`` or an inline fragment ``("...", selections)``."""

    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.toks[self.i] if self.i < len(self.toks) else ("eof", "")

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        tok_kind, tok = self.peek()
        if (value is not None and tok != value) or (kind is not None and tok_kind != kind):
            raise _Unreadable(f"expected {value or kind}, found {tok!r}")
        if tok_kind == "eof":
            raise _Unreadable("unexpected end")
        self.i += 1
        return tok

    def document(self) -> tuple[list[tuple[str, str | None, list[Any]]], dict[str, list[Any]]]:
        """([(operation type, name, selections)], {fragment name: selections})."""
        ops: list[tuple[str, str | None, list[Any]]] = []
        fragments: dict[str, list[Any]] = {}
        while self.peek()[0] != "eof":
            kind, tok = self.peek()
            if tok == "{":
                ops.append(("query", None, self.selections()))
            elif kind == "name" and tok in ("query", "mutation", "subscription"):
                self.take()
                name = self.take(kind="name") if self.peek()[0] == "name" else None
                if self.peek()[1] == "(":
                    self.variable_definitions()
                self.directives()
                ops.append((tok, name, self.selections()))
            elif kind == "name" and tok == "fragment":
                self.take()
                name = self.take(kind="name")
                self.take("on")
                self.take(kind="name")
                self.directives()
                if name in fragments:
                    raise _Unreadable(f"fragment {name} defined twice")
                fragments[name] = self.selections()
            else:
                raise _Unreadable(f"unexpected {tok!r}")
        return ops, fragments

    def variable_definitions(self) -> None:
        self.take("(")
        while self.peek()[1] != ")":
            self.take("$")
            self.take(kind="name")
            self.take(":")
            self.type_ref()
            if self.peek()[1] == "=":
                self.take()
                self.value()
            self.directives()
        self.take(")")

    def type_ref(self) -> None:
        if self.peek()[1] == "[":
            self.take()
            self.type_ref()
            self.take("]")
        else:
            self.take(kind="name")
        if self.peek()[1] == "!":
            self.take()

    def directives(self) -> None:
        while self.peek()[1] == "@":
            self.take()
            self.take(kind="name")
            if self.peek()[1] == "(":
                self.arguments()

    def selections(self) -> list[Any]:
        self.take("{")
        out: list[Any] = []
        while self.peek()[1] != "}":
            if self.peek()[1] == "...":
                self.take()
                if self.peek()[1] == "on":
                    self.take()
                    self.take(kind="name")
                    self.directives()
                    out.append(("...", self.selections()))
                elif self.peek()[1] in ("@", "{"):
                    self.directives()
                    out.append(("...", self.selections()))
                else:
                    out.append(("...", self.take(kind="name")))
                    self.directives()
                continue
            name = self.take(kind="name")
            if self.peek()[1] == ":":  # an alias
                self.take()
                name = self.take(kind="name")
            args = self.arguments() if self.peek()[1] == "(" else {}
            self.directives()
            out.append((name, args, self.selections() if self.peek()[1] == "{" else None))
        self.take("}")
        if not out:
            raise _Unreadable("empty selection set")
        return out

    def arguments(self) -> dict[str, Any]:
        self.take("(")
        args: dict[str, Any] = {}
        while self.peek()[1] != ")":
            name = self.take(kind="name")
            self.take(":")
            if name in args:
                raise _Unreadable(f"argument {name} given twice")
            args[name] = self.value()
        self.take(")")
        return args

    def value(self) -> Any:
        kind, tok = self.peek()
        if tok == "$":
            self.take()
            return _Var(self.take(kind="name"))
        if tok == "[":
            self.take()
            items = []
            while self.peek()[1] != "]":
                items.append(self.value())
            self.take("]")
            return items
        if tok == "{":
            self.take()
            obj: dict[str, Any] = {}
            while self.peek()[1] != "}":
                key = self.take(kind="name")
                self.take(":")
                obj[key] = self.value()
            self.take("}")
            return obj
        self.take()
        if kind == "string":
            return json.loads(tok)
        if kind == "block":
            return tok[3:-3].replace('\\"""', '"""')
        if kind == "number":
            return json.loads(tok)
        if kind == "name":
            return {"true": True, "false": False, "null": None}.get(tok, tok)
        raise _Unreadable(f"unexpected {tok!r} in a value")


def _resolve(value: Any, variables: Mapping[str, Any]) -> Any:
    if isinstance(value, _Var):
        return variables.get(value.name)
    if isinstance(value, list):
        return [_resolve(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, variables) for k, v in value.items()}
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _mutation_resource(name: str, args: Mapping[str, Any]) -> str | None:
    """The resource a known mutation's arguments name, or None (node ids name none)."""
    if name == "createCommitOnBranch":
        data = args.get("input")
        branch = data.get("branch") if isinstance(data, dict) else None
        if isinstance(branch, dict) and branch.get("id") is None:
            nwo = _text(branch.get("repositoryNameWithOwner"))
            ref = _text(branch.get("branchName"))
            if nwo and ref and nwo.count("/") == 1:
                ref = ref.removeprefix("refs/heads/")
                return f"ref:{nwo}@{ref}" if ref else None
    return None


def _body(request: Request) -> tuple[str, str | None, dict[str, Any]] | None:
    form = request.form
    query, name, variables = form.get("query"), form.get("operationName"), form.get("variables")
    if isinstance(variables, str):
        try:
            variables = json.loads(variables) if variables.strip() else {}
        except ValueError:
            return None
    if variables is None:
        variables = {}
    if not isinstance(query, str) or not isinstance(variables, dict):
        return None
    if name is not None and not isinstance(name, str):
        return None
    return query, name or None, variables


def _route(action: str, resource: str | None, effect: str, flags: str) -> Route:
    return Route.row(["POST", "/graphql", action, resource or "", effect, flags])


def _valid(resource: str | None) -> str | None:
    return resource if resource is not None and parse_resource(resource) else None


def operation(request: Request) -> tuple[str, list[Any], _Walk, Mapping[str, Any]] | None:
    """The one operation a GraphQL request runs: its kind (query, mutation, ...), its root
    fields, a walk over them and its variables; None when the body cannot be read or does
    not name exactly one operation. (Linear's matcher uses it too.)"""
    found = _body(request)
    if found is None:
        return None
    query, op_name, variables = found
    try:
        ops, fragments = _Parser(query).document()
    except (_Unreadable, ValueError, RecursionError):
        return None
    chosen = [op for op in ops if op_name is None or op[1] == op_name]
    if len(chosen) != 1:
        return None
    kind, _, roots = chosen[0]
    return kind, roots, _Walk(fragments, variables), variables


def match_graphql(request: Request) -> Match | None:
    """The action and resource of a GraphQL request; None when it cannot be placed."""
    found = operation(request)
    if found is None:
        return None
    kind, roots, walk, variables = found
    try:
        if kind == "query":
            return walk.query(roots)
        if kind != "mutation":
            return None
        fields = [f for f in walk.fields(roots) if f[0] != "__typename"]
    except (_Unreadable, ValueError, RecursionError):
        return None
    placed = set()
    for name, args, _ in fields:
        action = MUTATIONS.get(name)
        resource = _valid(_mutation_resource(name, _resolve(args, variables)))
        if action is None or resource is None:
            return None
        placed.add((action, resource))
    if len(placed) != 1:
        return None
    action, resource = placed.pop()
    return Match(_route(action, resource, "write", ""), {}, resource)


_AGENT = ("site.read", "user:@me")
_UNPLACED: tuple[str, str | None] = ("repo.read", None)
_MAX_FIELDS = 5000  # fragments spread into each other may multiply a small document


class _Walk:
    """Every field path of a query, each placed on the resource it reads."""

    def __init__(self, fragments: Mapping[str, list[Any]], variables: Mapping[str, Any]):
        self.fragments, self.variables = fragments, variables
        self.places: set[tuple[str, str | None]] = set()
        self.budget = _MAX_FIELDS

    def fields(self, selections: list[Any], seen: tuple[str, ...] = ()) -> list[Field]:
        """The fields of a selection set, its fragments expanded."""
        out: list[Field] = []
        for selection in selections:
            if selection[0] != "...":
                out.append(selection)
                self.budget -= 1
            elif isinstance(selection[1], list):
                out.extend(self.fields(selection[1], seen))
            elif selection[1] in seen or selection[1] not in self.fragments:
                raise _Unreadable(f"fragment {selection[1]} is unknown or spreads itself")
            else:
                out.extend(self.fields(self.fragments[selection[1]], (*seen, selection[1])))
        if self.budget < 0:
            raise _Unreadable("too many fields")
        return out

    def query(self, roots: list[Any]) -> Match:
        for name, args, children in self.fields(roots):
            args = _resolve(args, self.variables)
            if name == "repository":
                self.repository(_text(args.get("owner")), args, children)
            elif name in ACCOUNTS:
                self.account(ACCOUNTS[name], _text(args.get("login")), children)
            elif name == "viewer":
                self.account("viewer", None, children)
            elif name in AGENT_FIELDS:
                self.public(children)
            elif name != "__typename":
                self.places.add(_UNPLACED)
        read = self.places - {_AGENT}
        if not read:
            return Match(_route(*_AGENT, "read", "ua"), {}, _AGENT[1])
        action, resource = read.pop() if len(read) == 1 else _UNPLACED
        return Match(_route(action, resource, "read", "u"), {}, resource)

    def repository(self, owner: str | None, args: Mapping[str, Any], children: Any) -> None:
        name = _text(args.get("name"))
        resource = _valid(f"repo:{owner}/{name}") if owner and name else None
        self.places.add(("repo.read", resource))
        if resource is not None:
            self.inside(children or [], direct=True)

    def inside(self, selections: list[Any], direct: bool) -> None:
        """Below a named repository: its data, unless a field leads out of it."""
        for name, _, children in self.fields(selections):
            if name in ESCAPES or (name in _OWN_ITEMS and not direct):
                self.places.add(_UNPLACED)
            elif children is not None:
                self.inside(children, direct and name in _CONTAINERS)

    def account(self, kind: str, login: str | None, selections: Any) -> None:
        """Below a named account: its repositories by name, its own scalar fields."""
        for name, args, children in self.fields(selections or []):
            if name == "repository" and login is not None:
                self.repository(login, _resolve(args, self.variables), children)
            elif name == "__typename":
                continue
            elif kind == "viewer" and children is None:
                self.places.add(_AGENT)
            elif children is None and login is not None:
                self.places.add((f"{kind}.read", _valid(f"{kind}:{login}")))
            else:  # the account's connections: other repositories, other accounts
                self.places.add(_UNPLACED)

    def public(self, selections: Any) -> None:
        """Public data, unless a field leads to repositories."""
        for name, _, children in self.fields(selections or []):
            if name in ESCAPES:
                self.places.add(_UNPLACED)
                return
            if children is not None:
                self.public(children)
        self.places.add(_AGENT)
