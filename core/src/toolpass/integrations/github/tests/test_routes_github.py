"""The GitHub route table (generated from GitHub's OpenAPI descriptions) and its overrides."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.github import ACTIONS, GitHub, parse_resource, search_repo
from toolpass.integrations.routes import Match, Request, fill, load
from toolpass.intercept.router import Router

REPO = Path(__file__).resolve().parents[6]
GENERATOR = REPO / "core/src/toolpass/integrations/github/generate.py"
TABLE = REPO / "core/src/toolpass/integrations/github/routes.json"
SAMPLES = {
    "owner": "acme",
    "repo": "widgets",
    "template_owner": "acme",
    "template_repo": "template",
    "issue_number": "12",
    "pull_number": "7",
    "branch": "feature/x",
    "org": "acme",
    "organization_id": "9",
    "username": "dana",
    "user_id": "42",
    "team_id": "5",
    "enterprise": "acme-corp",
    "enterprise_or_org": "acme-corp",
}
DECLARED = {a.name: a for a in ACTIONS}


def connect(url: str) -> GitHub:
    (config,) = parse_connections(
        [
            {
                "id": "gh",
                "integration": "github",
                "url": url,
                "token": literal("ghp_engine"),
                "identity": {"mode": "users", "users": {"dana@example.com": "dana"}},
            }
        ]
    )
    return GitHub(config)


@pytest.fixture(scope="module")
def gh() -> GitHub:
    return connect("https://api.github.com")


@pytest.fixture(scope="module")
def ghes() -> GitHub:
    return connect("https://ghe.example.com/api/v3")


def request(
    method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
) -> Request:
    path, _, query = url.partition("?")
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    kind = {"content-type": "application/json"} if data and headers is None else headers
    return Request(method, path, query, kind, data)


def place(gh: GitHub, method: str, url: str, body: Any = None) -> Match | None:
    return gh.match_request(request(method, url, body))


def summary(found: Match | None) -> tuple[str, str | None, str, str] | None:
    if found is None:
        return None
    return found.action, found.resource, found.effect, found.route.flags


# --- the table -----------------------------------------------------------------------------
def test_the_table_loads_with_its_source() -> None:
    document = json.loads(TABLE.read_text())
    assert re.fullmatch(r"npm @octokit/openapi \d+\.\d+\.\d+ \(generated/.*\)", document["source"])
    assert "generated/api.github.com.json" in document["source"]
    assert "generated/ghec.json" in document["source"]
    assert document["generator"] == "core/src/toolpass/integrations/github/generate.py"
    table = load("toolpass.integrations.github")
    assert len(table) == len(document["routes"]) > 1500
    assert GitHub.route_table().routes == table.routes


def test_every_action_is_declared_and_its_effect_fits() -> None:
    used = {r.action for r in load("toolpass.integrations.github").routes}
    assert used <= set(DECLARED)
    for route in load("toolpass.integrations.github").routes:
        if route.method == "GET":
            assert route.effect == "read", route
        elif route.method == "DELETE" or DECLARED[route.action].effect == "destructive":
            assert route.effect == "destructive", route
        elif route.path not in ("/markdown", "/markdown/raw"):
            assert route.effect == "write", route


def test_every_resource_template_is_a_resource_the_integration_checks() -> None:
    body = json.dumps({"branch": "main", "base": "main"}).encode()
    for route in load("toolpass.integrations.github").routes:
        sample = Request(route.method, "/", "", {"content-type": "application/json"}, body)
        resource = fill(route.resource, SAMPLES, sample)
        assert resource is not None, route
        assert parse_resource(resource) is not None, (route, resource)


def test_samples_fill_every_parameter() -> None:
    names = {
        n
        for r in load("toolpass.integrations.github").routes
        for n in re.findall(r"\{([\w.]+)\}", r.resource)
    }
    assert names - {"body.branch", "body.base"} <= set(SAMPLES)


def test_rows_are_sorted_and_unique() -> None:
    rows = json.loads(TABLE.read_text())["routes"]
    assert rows == sorted(rows, key=lambda r: (r[1], r[0]))
    assert len({(r[0], r[1]) for r in rows}) == len(rows)


def test_coverage_every_operation_is_a_row() -> None:
    """Rows = the source's operations + one per split git ref route + the contents root."""
    document = json.loads(TABLE.read_text())
    counts = document["operations"]
    rows = document["routes"]
    heads = [r for r in rows if "/git/refs/heads/" in r[1]]
    assert [r[0] for r in heads] == ["DELETE", "PATCH"]
    root = [r for r in rows if r[1] == "/repos/{owner}/{repo}/contents"]
    assert [r[0] for r in root] == ["GET"]
    assert counts["excluded"] == 0
    assert len(rows) == counts["rows"] == counts["source"] + len(heads) + len(root)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The generator run on the npm tarball named by OCTOKIT_OPENAPI (skipped without it)."""
    source = os.environ.get("OCTOKIT_OPENAPI")
    if not source or not Path(source).exists():
        pytest.skip("set OCTOKIT_OPENAPI to the @octokit/openapi tarball (npm pack)")
    gen = load_generator("github")
    out = tmp_path_factory.mktemp("routes") / "github.json"
    data = gen.build(Path(source))
    out.write_text(gen.dump(data))
    _, descriptions = gen.read_source(Path(source))
    return {"text": out.read_text(), "ops": gen.operations(descriptions)}


def test_the_committed_table_is_what_the_generator_writes(regenerated: dict[str, Any]) -> None:
    assert regenerated["text"] == TABLE.read_text()
    rows = {(r[0], r[1]) for r in json.loads(TABLE.read_text())["routes"]}
    for method, path in regenerated["ops"]:
        template = re.sub(r"\{(path|dir|ref|branch|tag|basehead)\}$", r"{\1+}", path)
        assert (method, template) in rows, (method, path)


# --- hand-checked rows (docs.github.com REST reference) -------------------------------------
@pytest.mark.parametrize(
    ("method", "url", "body", "expected"),
    [
        # pulls: "Create a pull request"
        (
            "POST",
            "/repos/acme/x/pulls",
            {"head": "f", "base": "main"},
            ("pr.create", "repo:acme/x", "write", "s"),
        ),
        # pulls: "Merge a pull request" (notifies subscribers)
        ("PUT", "/repos/acme/x/pulls/4/merge", {}, ("pr.merge", "pr:acme/x#4", "write", "s")),
        # pulls: "Get a pull request": third parties write its body
        ("GET", "/repos/acme/x/pulls/4", None, ("pr.read", "pr:acme/x#4", "read", "u")),
        # repos: "Delete a repository"
        ("DELETE", "/repos/acme/x", None, ("repo.delete", "repo:acme/x", "destructive", "")),
        # git: "Delete a reference": heads/<branch> for branches, tags/<tag> for tags
        (
            "DELETE",
            "/repos/acme/x/git/refs/heads/feature/y",
            None,
            ("branch.delete", "ref:acme/x@feature/y", "destructive", ""),
        ),
        (
            "DELETE",
            "/repos/acme/x/git/refs/tags/v1.0",
            None,
            ("branch.delete", "repo:acme/x", "destructive", ""),
        ),
        # repos/contents: "Create or update file contents": branch defaults to the default branch
        (
            "PUT",
            "/repos/acme/x/contents/src/app.py",
            {"message": "m", "content": "", "branch": "dev"},
            ("contents.write", "ref:acme/x@dev", "write", ""),
        ),
        (
            "PUT",
            "/repos/acme/x/contents/src/app.py",
            {"message": "m", "content": ""},
            ("contents.write", "ref:acme/x@HEAD", "write", ""),
        ),
        # repos/contents: "Get repository content" returns the file
        (
            "GET",
            "/repos/acme/x/contents/docs/README.md",
            None,
            ("contents.read", "repo:acme/x", "read", "u"),
        ),
        # issues: "Create an issue comment"
        (
            "POST",
            "/repos/acme/x/issues/12/comments",
            {"body": "hi"},
            ("issue.comment", "issue:acme/x#12", "write", "s"),
        ),
        # issues: "Create an issue"
        (
            "POST",
            "/repos/acme/x/issues",
            {"title": "t"},
            ("issue.create", "repo:acme/x", "write", "s"),
        ),
        # collaborators: "Add a repository collaborator" sends an invitation
        (
            "PUT",
            "/repos/acme/x/collaborators/eve",
            {},
            ("collaborator.add", "repo:acme/x", "write", "s"),
        ),
        # actions: "Create a workflow dispatch event"
        (
            "POST",
            "/repos/acme/x/actions/workflows/ci.yml/dispatches",
            {"ref": "main"},
            ("workflow.dispatch", "repo:acme/x", "write", "s"),
        ),
        # branches: "Update branch protection" (admin)
        (
            "PUT",
            "/repos/acme/x/branches/main/protection",
            {},
            ("branch.protect", "ref:acme/x@main", "write", ""),
        ),
        # repos: "Create a repository webhook": sends events to an outside URL (admin)
        (
            "POST",
            "/repos/acme/x/hooks",
            {"config": {}},
            ("hook.manage", "repo:acme/x", "write", "s"),
        ),
        # repos: "Create an organization repository"
        ("POST", "/orgs/acme/repos", {"name": "new"}, ("repo.create", "org:acme", "write", "")),
        # secret-scanning: alerts need repository admin and carry the secrets
        (
            "GET",
            "/repos/acme/x/secret-scanning/alerts",
            None,
            ("secret.manage", "repo:acme/x", "read", "u"),
        ),
        # the agent itself
        ("GET", "/user", None, ("user.read", "user:@me", "read", "ua")),
        ("GET", "/rate_limit", None, ("user.read", "user:@me", "read", "a")),
        ("GET", "/user/keys", None, ("user.read", "user:@me", "read", "ua")),
        ("GET", "/user/codespaces/secrets", None, ("user.read", "user:@me", "read", "a")),
        # lists across what the agent's token sees (#19): checked, never the agent's own
        ("GET", "/issues", None, ("account.list", "user:@me", "read", "u")),
        ("GET", "/user/repos", None, ("account.list", "user:@me", "read", "u")),
        ("GET", "/notifications", None, ("account.list", "user:@me", "read", "u")),
        ("GET", "/user/orgs", None, ("account.list", "user:@me", "read", "u")),
        ("GET", "/user/teams", None, ("account.list", "user:@me", "read", "u")),
        (
            "GET",
            "/user/codespaces/secrets/s/repositories",
            None,
            ("account.list", "user:@me", "read", ""),
        ),
        ("GET", "/user/memberships/orgs/acme", None, ("org.read", "org:acme", "read", "u")),
        ("GET", "/meta", None, ("site.read", "site:public", "read", "a")),
        ("GET", "/search/issues?q=bug", None, ("issue.read", None, "read", "u")),
        (
            "GET",
            "/search/code?q=x+repo:acme/x",
            None,
            ("contents.read", "repo:acme/x", "read", "u"),
        ),
        (
            "GET",
            "/search/labels?repository_id=1&q=repo:acme/x",
            None,
            ("issue.read", None, "read", "u"),
        ),
        ("GET", "/search/users?q=dana", None, ("site.read", "site:public", "read", "ua")),
        ("GET", "/zen", None, ("site.read", "site:public", "read", "a")),
        # gists: "Create a gist" publishes
        ("POST", "/gists", {"files": {}}, ("gist.create", "user:@me", "write", "s")),
        # releases: "Create a release"
        (
            "POST",
            "/repos/acme/x/releases",
            {"tag_name": "v1"},
            ("release.create", "repo:acme/x", "write", "s"),
        ),
        # repos: "Transfer a repository"
        (
            "POST",
            "/repos/acme/x/transfer",
            {"new_owner": "y"},
            ("repo.transfer", "repo:acme/x", "destructive", "s"),
        ),
        # GHES site administration
        ("PUT", "/users/eve/site_admin", None, ("site.admin", "site:admin", "write", "")),
        ("POST", "/admin/users", {"login": "eve"}, ("site.admin", "site:admin", "write", "")),
        # enterprise
        (
            "GET",
            "/enterprises/acme-corp/audit-log",
            None,
            ("enterprise.read", "enterprise:acme-corp", "read", "u"),
        ),
    ],
)
def test_hand_checked_requests(
    gh: GitHub, method: str, url: str, body: Any, expected: tuple[str, str, str, str]
) -> None:
    assert summary(place(gh, method, url, body)) == expected


def test_a_request_matching_no_route(gh: GitHub) -> None:
    assert place(gh, "POST", "/repos/acme/x/no-such-thing") is None
    assert place(gh, "DELETE", "/nope") is None
    assert place(gh, "PATCH", "/repos/acme") is None
    assert place(gh, "GET", "/repos/acme/x/pulls/4/nothing/here") is None


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("GET", "/repos/acme/x/contents/../../other/secret/contents/a"),
        ("GET", "/repos/acme/x/contents/docs/%2e%2e/b"),
        ("DELETE", "/repos/acme/%2E%2E"),
        ("DELETE", "/repos/acme%2Fother/x"),
        ("PUT", "/repos/acme/x/pulls/4%2F../merge"),
        ("DELETE", "/repos/acme/x/git/refs/heads/a/../../b"),
        ("PUT", "/repos/acme/x/branches/a/../b/protection"),
        ("PUT", "/repos/acme/x/branches/feature%2Fx/protection"),
    ],
)
def test_hostile_paths_name_no_resource(gh: GitHub, method: str, url: str) -> None:
    found = place(gh, method, url, {})
    assert found is None or found.resource is None


def test_empty_segments_take_no_parameter(gh: GitHub) -> None:
    assert place(gh, "DELETE", "/repos/acme//x") is None
    assert place(gh, "DELETE", "/repos//x") is None
    found = place(gh, "GET", "/repos/acme/x/contents/a//b")
    assert found is not None  # a file path's empty segment is the file API's to refuse
    assert found.resource == "repo:acme/x"


# --- overrides: branches with "/" mid-path, the default branch, hosts ------------------------
def test_a_branch_with_a_slash_before_a_known_suffix(gh: GitHub) -> None:
    assert summary(place(gh, "PUT", "/repos/acme/x/branches/feature/y/protection", {})) == (
        "branch.protect",
        "ref:acme/x@feature/y",
        "write",
        "",
    )
    found = place(gh, "DELETE", "/repos/acme/x/branches/a/b/c/protection/restrictions/users")
    assert summary(found) == ("branch.protect", "ref:acme/x@a/b/c", "destructive", "")
    found = place(gh, "POST", "/repos/acme/x/branches/release/2.0/rename", {"new_name": "r"})
    assert summary(found) == ("branch.rename", "ref:acme/x@release/2.0", "write", "")
    found = place(gh, "GET", "/repos/acme/x/commits/feature/y/status")
    assert summary(found) == ("contents.read", "repo:acme/x", "read", "u")
    assert found is not None
    assert found.params["ref"] == "feature/y"
    # a branch ending the path is a rest parameter of the table itself
    found = place(gh, "GET", "/repos/acme/x/branches/feature/y")
    assert summary(found) == ("contents.read", "ref:acme/x@feature/y", "read", "u")
    # a suffix no route has is no route
    assert place(gh, "PUT", "/repos/acme/x/branches/a/b/nothing") is None


def test_contents_writes_without_a_usable_branch(gh: GitHub) -> None:
    url = "/repos/acme/x/contents/a.txt"
    assert place(gh, "DELETE", url, {"message": "m", "sha": "1"}).resource == "ref:acme/x@HEAD"  # type: ignore[union-attr]
    assert place(gh, "PUT", url, b"").resource == "ref:acme/x@HEAD"  # type: ignore[union-attr]
    for body in ({"branch": ["a", "b"]}, {"branch": True}, {"branch": ""}, b"not json"):
        found = place(gh, "PUT", url, body)
        assert found is not None
        assert found.resource is None, body
    merged = place(gh, "POST", "/repos/acme/x/merges", {"head": "f"})
    assert merged is not None
    assert merged.resource is None  # the base branch is required: no default


def test_uploads_and_graphql_hosts(gh: GitHub, ghes: GitHub) -> None:
    assert gh.serves("https", "uploads.github.com", 443)
    assert not gh.serves("https", "evil.example", 443)
    assert not ghes.serves("https", "uploads.github.com", 443)
    assert ghes.serves("https", "ghe.example.com", 443)
    assert not ghes.serves("http", "ghe.example.com", 80)
    router = Router([("gh", ghes)])
    where = router.place(
        "https", "ghe.example.com", 443, "/api/uploads/repos/acme/x/releases/3/assets"
    )
    assert where is not None
    assert summary(ghes.match_request(Request("POST", where.path, "name=a.zip"))) == (
        "release.create",
        "repo:acme/x",
        "write",
        "s",
    )
    where = router.place("https", "ghe.example.com", 443, "/api/v3/repos/acme/x/pulls")
    assert where is not None
    assert where.path == "/repos/acme/x/pulls"
    assert summary(ghes.match_request(Request("POST", where.path))) == (
        "pr.create",
        "repo:acme/x",
        "write",
        "s",
    )
    where = router.place("https", "ghe.example.com", 443, "/api/graphql")
    assert where is not None
    query = {"query": "{ viewer { login } }"}
    assert summary(place(ghes, "POST", where.path, query)) == (
        "site.read",
        "user:@me",
        "read",
        "ua",
    )
    dotcom = Router([("gh", gh)]).place(
        "https", "uploads.github.com", 443, "/repos/acme/x/releases/3/assets"
    )
    assert dotcom is not None
    assert summary(gh.match_request(Request("POST", dotcom.path))) == (
        "release.create",
        "repo:acme/x",
        "write",
        "s",
    )


# --- GraphQL ---------------------------------------------------------------------------------
def graphql(gh: GitHub, query: str, variables: Any = None, name: str | None = None) -> Any:
    body: dict[str, Any] = {"query": query}
    if variables is not None:
        body["variables"] = variables
    if name is not None:
        body["operationName"] = name
    return summary(place(gh, "POST", "/graphql", body))


def test_graphql_queries_read_the_repository_they_name(gh: GitHub) -> None:
    query = 'query { repository(owner: "acme", name: "x") { issues(first: 5) { nodes { body } } } }'
    assert graphql(gh, query) == ("repo.read", "repo:acme/x", "read", "u")
    query = "query Q($o: String!, $n: String!) { repository(owner: $o, name: $n) { id } }"
    assert graphql(gh, query, {"o": "acme", "n": "x"}) == ("repo.read", "repo:acme/x", "read", "u")
    assert graphql(gh, '{ organization(login: "acme") { name } }') == (
        "org.read",
        "org:acme",
        "read",
        "u",
    )
    assert graphql(gh, '{ a: user(login: "dana") { bio } __typename }') == (
        "user.read",
        "user:dana",
        "read",
        "u",
    )


def test_graphql_queries_about_the_agent(gh: GitHub) -> None:
    agent = ("site.read", "user:@me", "read", "ua")
    assert graphql(gh, "{ viewer { login } rateLimit { remaining } }") == agent
    assert graphql(gh, "{ __schema { types { name } } }") == agent
    assert graphql(gh, "{ ...F } fragment F on Query { viewer { login } }") == agent


def test_graphql_queries_that_name_no_single_resource(gh: GitHub) -> None:
    unplaced = ("repo.read", None, "read", "u")
    assert graphql(gh, '{ node(id: "R_1") { id } }') == unplaced
    two = (
        '{ a: repository(owner: "acme", name: "x") { id } '
        'b: repository(owner: "acme", name: "y") { id } }'
    )
    assert graphql(gh, two) == unplaced
    # search results come from every repository the credential sees
    assert graphql(gh, 'query { search(query: "x", type: ISSUE, first: 1) { issueCount } }') == (
        unplaced
    )
    assert graphql(gh, '{ repository(owner: "..", name: "x") { id } }') == unplaced
    assert graphql(gh, 'query($o: String!) { repository(owner: $o, name: "x") { id } }') == unplaced


def test_graphql_mutations_naming_their_repository(gh: GitHub) -> None:
    mutation = """
        mutation Commit($input: CreateCommitOnBranchInput!) {
          createCommitOnBranch(input: $input) { commit { url } }
        }"""
    variables = {
        "input": {
            "branch": {"repositoryNameWithOwner": "acme/x", "branchName": "refs/heads/main"},
            "message": {"headline": "fix"},
            "expectedHeadOid": "a" * 40,
        }
    }
    assert graphql(gh, mutation, variables) == ("contents.write", "ref:acme/x@main", "write", "")
    inline = """mutation { createCommitOnBranch(input: {
        branch: {repositoryNameWithOwner: "acme/x", branchName: "dev"},
        message: {headline: "x", body: \"\"\"multi "quoted" line\"\"\"}, expectedHeadOid: "abc"
    }) { commit { oid } } }"""
    assert graphql(gh, inline) == ("contents.write", "ref:acme/x@dev", "write", "")


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        # node ids name no repository: refused as unmapped
        (
            'mutation { createPullRequest(input: {repositoryId: "R_1", baseRefName: "main", '
            'headRefName: "f", title: "t"}) { pullRequest { id } } }',
            None,
        ),
        (
            "mutation($id: ID!) { mergePullRequest(input: {pullRequestId: $id}) "
            "{ clientMutationId } }",
            {"id": "PR_1"},
        ),
        ('mutation { deleteRef(input: {refId: "REF_1"}) { clientMutationId } }', None),
        (
            'mutation { addComment(input: {subjectId: "I_1", body: "hi"}) { clientMutationId } }',
            None,
        ),
        # the branch by node id
        (
            'mutation { createCommitOnBranch(input: {branch: {id: "REF_1"}, '
            'message: {headline: "x"}, expectedHeadOid: "a"}) { commit { oid } } }',
            None,
        ),
        # an unknown mutation
        ('mutation { updateEnterpriseAdministratorRole(input: {login: "x"}) { message } }', None),
        # a fragment at the root of a mutation
        (
            "mutation { ...M } "
            'fragment M on Mutation { deleteRef(input: {refId: "x"}) { clientMutationId } }',
            None,
        ),
        # unreadable documents
        ("mutation { createCommitOnBranch(input: ", None),
        ("mutation { createCommitOnBranch(input: {}) }}", None),
        ("", None),
    ],
)
def test_graphql_writes_that_cannot_be_placed_are_unmapped(
    gh: GitHub, query: str, variables: Any
) -> None:
    assert graphql(gh, query, variables) is None


def test_graphql_operation_selection(gh: GitHub) -> None:
    doc = (
        "query R { viewer { login } } "
        'mutation W { deleteRef(input: {refId: "x"}) { clientMutationId } }'
    )
    assert graphql(gh, doc, name="R") == ("site.read", "user:@me", "read", "ua")
    assert graphql(gh, doc, name="W") is None
    assert graphql(gh, doc) is None  # two operations and no name: GitHub refuses it too
    commit = (
        'mutation A { createCommitOnBranch(input: {branch: {repositoryNameWithOwner: "acme/x", '
        'branchName: "a"}}) { commit { oid } } '
        'b: createCommitOnBranch(input: {branch: {repositoryNameWithOwner: "acme/y", '
        'branchName: "a"}}) { commit { oid } } }'
    )
    assert graphql(gh, commit) is None  # two different branches: no single resource


def test_graphql_bodies_that_are_not_one_request(gh: GitHub) -> None:
    assert place(gh, "POST", "/graphql", [{"query": "{ viewer { login } }"}]) is None
    assert place(gh, "POST", "/graphql", {"query": 3}) is None
    assert (
        place(gh, "POST", "/graphql", {"query": "{ viewer { login } }", "variables": [1]}) is None
    )
    assert place(gh, "POST", "/graphql", b"{not json") is None
    # variables sent as a JSON string are read
    body = {
        "query": 'query($o: String!) { repository(owner: $o, name: "x") { id } }',
        "variables": '{"o": "acme"}',
    }
    assert summary(place(gh, "POST", "/graphql", body)) == ("repo.read", "repo:acme/x", "read", "u")


_WORD = st.text(alphabet="abcdefghij:-_/.", min_size=1, max_size=8).filter(
    lambda w: not any(q in w.lower() for q in ("repo:", "org:", "user:", "owner:"))
)
_WIDENING = st.sampled_from(
    [
        "repo:other/secret",
        "org:acme",
        "user:dana",
        "OWNER:acme",
        "OR",
        "and",
        '"',
        "(",
        "x-repo:a/b",
    ]
)


@given(st.lists(_WORD, max_size=4), st.lists(_WORD, max_size=4), _WIDENING)
def test_a_search_is_bounded_only_by_one_repository_nothing_widens(
    before: list[str], after: list[str], widening: str
) -> None:
    query = " ".join([*before, "repo:acme/widgets", *after])
    assert search_repo(query) == "acme/widgets"
    assert search_repo(" ".join([*before, widening, "repo:acme/widgets", *after])) is None
    assert search_repo(" ".join([*before, "-" + widening.lstrip("-"), *after])) is None
