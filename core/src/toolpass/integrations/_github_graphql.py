"""GitHub GraphQL (``POST /graphql``) placed on the github integration's actions.

A query is a read: when every root field names one resource (``repository(owner:, name:)``,
``organization(login:)``, ``user(login:)``) it reads that resource; when it only asks about
the agent itself or public data (``viewer``, ``rateLimit``, ``search``, ``meta``, ...) it is
an agent request; otherwise (``node(id:)``, several resources) it names no resource, so the
request hook refuses it as unresolved.

A mutation is placed only when its root fields are known and their arguments name the
repository: GitHub's mutations take node ids (``createPullRequest(input: {repositoryId})``,
``mergePullRequest``, ``deleteRef``, ``addComment``), which name no repository without a
look-up, so they answer None and the write is refused as unmapped. ``createCommitOnBranch``
with ``branch: {repositoryNameWithOwner, branchName}`` is ``contents.write`` on that branch.

The parser follows the GraphQL specification's lexical grammar (October 2021) closely
enough to find operations, root fields and their arguments; a document it cannot read
answers None (a refused write), never a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from toolpass.intercept.routes import Match, Request, Route

__all__ = ["match_graphql"]

# Root query fields about the agent itself or public data.
AGENT_FIELDS = frozenset(
    {
        "viewer",
        "rateLimit",
        "meta",
        "search",
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
        "sponsorables",
        "__schema",
        "__type",
    }
)
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


class _Parser:
    """Operations, their root fields and the fields' arguments; nested selections are
    parsed and dropped."""

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

    def document(self) -> list[tuple[str, str | None, list[Any]]]:
        """[(operation type, name, root selections)]; fragments are read and dropped."""
        ops: list[tuple[str, str | None, list[Any]]] = []
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
                self.take(kind="name")
                self.take("on")
                self.take(kind="name")
                self.directives()
                self.selections()
            else:
                raise _Unreadable(f"unexpected {tok!r}")
        return ops

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
        """Fields as ``(name, arguments)``; a fragment spread or inline fragment as None."""
        self.take("{")
        out: list[Any] = []
        while self.peek()[1] != "}":
            if self.peek()[1] == "...":
                self.take()
                if self.peek()[1] == "on":
                    self.take()
                    self.take(kind="name")
                    self.directives()
                    self.selections()
                elif self.peek()[1] in ("@", "{"):
                    self.directives()
                    self.selections()
                else:
                    self.take(kind="name")
                    self.directives()
                out.append(None)
                continue
            name = self.take(kind="name")
            if self.peek()[1] == ":":  # an alias
                self.take()
                name = self.take(kind="name")
            args = self.arguments() if self.peek()[1] == "(" else {}
            self.directives()
            if self.peek()[1] == "{":
                self.selections()
            out.append((name, args))
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


def _query_place(name: str, args: Mapping[str, Any]) -> tuple[str, str | None]:
    """(action, resource) a root query field reads; resource None when it names none."""
    if name == "repository":
        owner, repo = _text(args.get("owner")), _text(args.get("name"))
        return "repo.read", f"repo:{owner}/{repo}" if owner and repo else None
    if name == "organization":
        login = _text(args.get("login"))
        return "org.read", f"org:{login}" if login else None
    if name == "user":
        login = _text(args.get("login"))
        return "user.read", f"user:{login}" if login else None
    return "repo.read", None


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
    from toolpass.integrations.github import parse_resource

    return resource if resource is not None and parse_resource(resource) else None


def match_graphql(request: Request) -> Match | None:
    """The action and resource of a GraphQL request; None when it cannot be placed."""
    found = _body(request)
    if found is None:
        return None
    query, op_name, variables = found
    try:
        ops = _Parser(query).document()
    except (_Unreadable, ValueError, RecursionError):
        return None
    chosen = [op for op in ops if op_name is None or op[1] == op_name]
    if len(chosen) != 1:
        return None
    kind, _, roots = chosen[0]
    fields = [r for r in roots if r is None or r[0] != "__typename"]
    if kind == "query":
        return _query(fields, variables)
    if kind != "mutation" or not fields or None in fields:
        return None
    placed = set()
    for name, args in fields:
        action = MUTATIONS.get(name)
        resource = _valid(_mutation_resource(name, _resolve(args, variables)))
        if action is None or resource is None:
            return None
        placed.add((action, resource))
    if len(placed) != 1:
        return None
    action, resource = placed.pop()
    return Match(_route(action, resource, "write", ""), {}, resource)


def _query(fields: list[Any], variables: Mapping[str, Any]) -> Match:
    if None not in fields and all(f[0] in AGENT_FIELDS for f in fields):
        return Match(_route("site.read", "user:@me", "read", "ua"), {}, "user:@me")
    places: set[tuple[str, str | None]] = set()
    for field in fields:
        if field is None:
            places.add(("repo.read", None))
        elif field[0] not in AGENT_FIELDS:
            action, resource = _query_place(field[0], _resolve(field[1], variables))
            places.add((action, _valid(resource)))
    if len(places) == 1:
        action, resource = next(iter(places))
        if resource is not None:
            return Match(_route(action, resource, "read", "u"), {}, resource)
    return Match(_route("repo.read", None, "read", "u"), {}, None)
