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

The document is read by the shared GraphQL reader (``integrations/_graphql.py``); one it
cannot read answers None (a refused write), never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolpass.integrations._graphql import Fields, Unreadable, operation, resolve
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


def _route(action: str, resource: str | None, effect: str, flags: str) -> Route:
    return Route.row(["POST", "/graphql", action, resource or "", effect, flags])


def _valid(resource: str | None) -> str | None:
    return resource if resource is not None and parse_resource(resource) else None


def match_graphql(request: Request) -> Match | None:
    """The action and resource of a GraphQL request; None when it cannot be placed."""
    found = operation(request)
    if found is None:
        return None
    kind, roots, fragments, variables = found
    walk = _Walk(fragments, variables)
    try:
        if kind == "query":
            return walk.query(roots)
        if kind != "mutation":
            return None
        fields = [f for f in walk.fields(roots) if f[0] != "__typename"]
    except (Unreadable, ValueError, RecursionError):
        return None
    placed = set()
    for name, args, _ in fields:
        action = MUTATIONS.get(name)
        resource = _valid(_mutation_resource(name, resolve(args, variables)))
        if action is None or resource is None:
            return None
        placed.add((action, resource))
    if len(placed) != 1:
        return None
    action, resource = placed.pop()
    return Match(_route(action, resource, "write", ""), {}, resource)


_AGENT = ("site.read", "user:@me")
_UNPLACED: tuple[str, str | None] = ("repo.read", None)


class _Walk(Fields):
    """Every field path of a query, each placed on the resource it reads."""

    def __init__(self, fragments: Mapping[str, list[Any]], variables: Mapping[str, Any]):
        super().__init__(fragments)
        self.variables = variables
        self.places: set[tuple[str, str | None]] = set()

    def query(self, roots: list[Any]) -> Match:
        for name, args, children in self.fields(roots):
            args = resolve(args, self.variables)
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
                self.repository(login, resolve(args, self.variables), children)
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
