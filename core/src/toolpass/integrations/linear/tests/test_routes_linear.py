"""The Linear route table (generated from Linear's published GraphQL schema) and the GraphQL
matcher that reads requests with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations._generate.sources import pinned_source
from toolpass.integrations.linear import _ID, KINDS, Linear
from toolpass.integrations.routes import Match, Request, fields, load

REPO = Path(__file__).resolve().parents[6]
TABLE = REPO / "core/src/toolpass/integrations/linear/routes.json"


@pytest.fixture(scope="module")
def linear() -> Linear:
    (config,) = parse_connections(
        [{"id": "lin", "integration": "linear", "api_key": literal("lin_api_x")}]
    )
    return Linear(config)


def ask(linear: Linear, query: str, variables: Any = None, **extra: Any) -> Match | None:
    body = json.dumps({"query": query, "variables": variables or {}, **extra}).encode()
    headers = {"Content-Type": "application/json"}
    return linear.match_request(Request("POST", "/graphql", "", headers, body))


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/linear/generate.py"
    assert data["source"].startswith("GitHub linear/linear packages/sdk/src/schema.graphql")
    assert len(load("toolpass.integrations.linear")) == len(data["routes"]) >= 500
    assert all(r[0] == "POST" and r[1].startswith("/graphql#") for r in data["routes"])
    assert len({r[1] for r in data["routes"]}) == len(data["routes"])
    assert data["types"]["Issue"]["team"] == "Team"


def test_every_action_is_declared_and_routed() -> None:
    routed = {r.action for r in load("toolpass.integrations.linear").routes}
    assert routed == {a.name for a in Linear.actions}


def test_every_resource_template_is_a_resource_the_check_accepts() -> None:
    for route in load("toolpass.integrations.linear").routes:
        resource = route.resource
        if not resource:  # a batch, a move between teams: refused
            assert route.path.endswith(("issueBatchCreate", "issueBatchUpdate", "?input.teamId")), (
                route
            )
            continue
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", "abc-123")
        kind, _, rid = resource.partition(":")
        scope = Linear.action(route.action).terms["scope"]  # type: ignore[union-attr]
        if scope == "workspace":
            assert resource == "workspace", route
        else:
            assert kind in (*KINDS[scope], "team"), route
            assert _ID.fullmatch(rid), route


def test_a_query_row_reads_and_a_mutation_row_writes() -> None:
    data = json.loads(TABLE.read_text())
    roots = data["roots"]
    for row in data["routes"]:
        kind, _, field = row[1].partition("#")[2].partition(".")
        assert (row[4] == "read") == (kind == "query"), row
        assert kind == "mutation" or field in roots, row


def test_regenerating_from_the_schema_gives_the_committed_table(tmp_path: Path) -> None:
    built = load_generator("linear").build(pinned_source("linear", tmp_path))
    committed = json.loads(TABLE.read_text())
    assert built["routes"] == committed["routes"]
    assert built["types"] == committed["types"]


@pytest.mark.parametrize(
    ("query", "variables", "action", "resource", "flags"),
    [
        ('{ issue(id: "ENG-1") { title description } }', {}, "issue.read", "issue:ENG-1", "u"),
        (
            "query($id: String!) { issue(id: $id) { title comments { nodes { body } } } }",
            {"id": "ENG-7"},
            "issue.read",
            "issue:ENG-7",
            "u",
        ),
        (
            '{ team(id: "ENG") { key issues { nodes { title team { key } } } } }',
            {},
            "team.read",
            "team:ENG",
            "u",
        ),
        ('{ comment(id: "c1") { body issue { title } } }', {}, "issue.read", "comment:c1", "u"),
        (
            '{ workflowState(id: "s1") { name team { key } } }',
            {},
            "team.read",
            "workflowState:s1",
            "u",
        ),
        (
            "{ users { nodes { name } } organization { name } }",
            {},
            "workspace.read",
            "workspace",
            "u",
        ),
        (
            '{ issues(filter: {team: {key: {eq: "ENG"}}}) '
            "{ nodes { title comments { nodes { body } } } } }",
            {},
            "team.read",
            "team:ENG",
            "u",
        ),
        (
            'query($t: ID) { searchIssues(term: "x", filter: {team: {id: {eq: $t}}}) '
            "{ nodes { title } } }",
            {"t": "t1"},
            "team.read",
            "team:t1",
            "u",
        ),
        (
            '{ teams(filter: {key: {eq: "ENG"}}) { nodes { name issues { nodes { title } } } } }',
            {},
            "team.read",
            "team:ENG",
            "u",
        ),
        (
            'mutation { projectUpdate(id: "p1", input: {name: "x"}) { success } }',
            {},
            "workspace.write",
            "workspace",
            "",
        ),
        ("{ viewer { id name email } }", {}, "workspace.read", "workspace", "a"),
        (
            'mutation($id: String!) { issueUpdate(id: $id, input: {title: "x"}) { success } }',
            {"id": "ENG-1"},
            "issue.write",
            "issue:ENG-1",
            "s",
        ),
        (
            "mutation($input: IssueCreateInput!) { issueCreate(input: $input) { success } }",
            {"input": {"teamId": "team-uuid-1", "title": "x"}},
            "issue.write",
            "team:team-uuid-1",
            "s",
        ),
        (
            'mutation { commentCreate(input: {issueId: "ENG-1", body: "hi"}) { success } }',
            {},
            "issue.write",
            "issue:ENG-1",
            "s",
        ),
        (
            'mutation { commentUpdate(id: "c1", input: {body: "x"}) { success } }',
            {},
            "comment.edit",
            "comment:c1",
            "s",
        ),
        (
            'mutation { commentDelete(id: "c1") { success } }',
            {},
            "comment.delete",
            "comment:c1",
            "",
        ),
        (
            'mutation { issueDelete(id: "ENG-1") { success } }',
            {},
            "issue.delete",
            "issue:ENG-1",
            "",
        ),
        (
            'mutation { issueDelete(id: "ENG-1", permanentlyDelete: true) { success } }',
            {},
            "workspace.admin",
            "workspace",
            "",
        ),
        (
            'mutation { issueArchive(id: "ENG-1") { success } }',
            {},
            "issue.write",
            "issue:ENG-1",
            "",
        ),
        (
            'mutation { issueArchive(id: "ENG-1", trash: true) { success } }',
            {},
            "issue.delete",
            "issue:ENG-1",
            "",
        ),
        (
            'mutation { teamUpdate(id: "t1", input: {name: "x"}) { success } }',
            {},
            "team.manage",
            "team:t1",
            "",
        ),
        (
            'mutation { cycleCreate(input: {teamId: "t1"}) { success } }',
            {},
            "team.manage",
            "team:t1",
            "",
        ),
        (
            'mutation { projectCreate(input: {name: "x", teamIds: ["t1"]}) { success } }',
            {},
            "workspace.write",
            "workspace",
            "",
        ),
        (
            'mutation { webhookCreate(input: {url: "https://x"}) { success } }',
            {},
            "workspace.admin",
            "workspace",
            "s",
        ),
        (
            'mutation { userChangeRole(id: "u1", role: admin) { success } }',
            {},
            "workspace.admin",
            "workspace",
            "",
        ),
        (
            'mutation { attachmentLinkURL(issueId: "ENG-1", url: "https://x") { success } }',
            {},
            "issue.write",
            "issue:ENG-1",
            "s",
        ),
    ],
)
def test_hand_checked_requests(
    linear: Linear, query: str, variables: Any, action: str, resource: str, flags: str
) -> None:
    found = ask(linear, query, variables)
    assert found is not None
    assert (found.action, found.resource, found.route.flags) == (action, resource, flags)


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        ('{ issue(id: "ENG-1") { project { issues { nodes { title } } } } }', {}),
        ('{ issue(id: "ENG-1") { children { nodes { title } } } }', {}),
        ('{ issue(id: "ENG-1") { parent { title } } }', {}),
        ('{ issue(id: "ENG-1") { assignee { assignedIssues { nodes { title } } } } }', {}),
        ('{ team(id: "ENG") { projects { nodes { name } } } }', {}),
        ('{ issue(id: "ENG-1") { title } other: issue(id: "SEC-1") { title } }', {}),
        ('{ issue(id: "ENG-1") { title } issues { nodes { title } } }', {}),
        ("{ issues { nodes { title } } }", {}),
        ('{ searchIssues(term: "x") { nodes { title } } }', {}),
        ("{ comments { nodes { body } } }", {}),
        ("{ teams { nodes { issues { nodes { title } } } } }", {}),
        ("{ projects { nodes { name } } }", {}),
        ('{ projectUpdate(id: "p1") { body } }', {}),
        ("{ viewer { assignedIssues { nodes { title } } } }", {}),
        ("{ users { nodes { assignedIssues { nodes { title } } } } }", {}),
        ("{ organization { teams { nodes { name } } } }", {}),
        (
            '{ issues(filter: {team: {key: {eq: "ENG"}}, or: [{title: {eq: "x"}}]}) '
            "{ nodes { id } } }",
            {},
        ),
        ('{ issues(filter: {team: {key: {in: ["ENG", "SEC"]}}}) { nodes { id } } }', {}),
        ('{ issues(filter: {team: {key: {eq: "ENG"}, name: {eq: "x"}}}) { nodes { id } } }', {}),
        (
            '{ issues(filter: {team: {key: {eq: "ENG"}}}) '
            "{ nodes { project { issues { nodes { id } } } } } }",
            {},
        ),
        ('{ issue(id: "../x") { title } }', {}),
        ("query($id: String!) { issue(id: $id) { title } }", {}),
        ('mutation { commentCreate(input: {projectUpdateId: "p1", body: "x"}) { success } }', {}),
        ('mutation { issueBatchUpdate(ids: ["a"], input: {}) { success } }', {}),
        ('mutation { issueUpdate(id: "ENG-1", input: {teamId: "t2"}) { success } }', {}),
        (
            'mutation($i: IssueUpdateInput!) { issueUpdate(id: "ENG-1", input: $i) { success } }',
            {"i": {"teamId": "t2", "title": "x"}},
        ),
        (
            'mutation { a: issueUpdate(id: "ENG-1", input: {}) { success } '
            'b: issueUpdate(id: "SEC-1", input: {}) { success } }',
            {},
        ),
    ],
)
def test_requests_naming_no_single_resource_are_unresolved(
    linear: Linear, query: str, variables: Any
) -> None:
    found = ask(linear, query, variables)
    assert found is not None
    assert found.resource is None


@pytest.mark.parametrize(
    "query",
    [
        'mutation { somethingNew(id: "x") { success } }',
        'mutation { issueUpdate(id: "ENG-1", input: {}) { success } somethingNew { id } }',
        'mutation { issue(id: "ENG-1") { id } }',
        "subscription { issueUpdates { id } }",
        "{ issue(id: ",
        '{ nothingLikeThis(id: "x") { id } }',
        'query A { viewer { id } } mutation B { issueDelete(id: "ENG-1") { success } }',
    ],
)
def test_requests_matching_no_route(linear: Linear, query: str) -> None:
    assert ask(linear, query) is None


def test_the_operation_name_chooses_the_operation(linear: Linear) -> None:
    query = 'query A { viewer { id } } mutation B { issueDelete(id: "ENG-1") { success } }'
    found = ask(linear, query, operationName="B")
    assert found is not None
    assert (found.action, found.resource) == ("issue.delete", "issue:ENG-1")


def test_fragments_and_aliases_are_followed(linear: Linear) -> None:
    query = (
        'query { x: issue(id: "ENG-1") { ...F } } '
        "fragment F on Issue { title project { issues { nodes { title } } } }"
    )
    found = ask(linear, query)
    assert found is not None
    assert found.resource is None
    safe = 'query { x: issue(id: "ENG-1") { ...F } } fragment F on Issue { title }'
    found = ask(linear, safe)
    assert found is not None
    assert found.resource == "issue:ENG-1"


def test_graphql_over_get_is_read_the_same_way(linear: Linear) -> None:
    from urllib.parse import urlencode

    qs = urlencode({"query": 'mutation { issueDelete(id: "ENG-1") { success } }'})
    found = linear.match_request(Request("GET", "/graphql", qs))
    assert found is not None
    assert (found.action, found.effect) == ("issue.delete", "destructive")


@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/graphql/x"), ("POST", "/rest"), ("DELETE", "/graphql")]
)
def test_other_paths_match_no_route(linear: Linear, method: str, path: str) -> None:
    assert linear.match_request(Request(method, path)) is None


def test_a_body_that_cannot_be_read_matches_no_route(linear: Linear) -> None:
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    assert linear.match_request(Request("POST", "/graphql", "", headers, b"\x1f\x8b")) is None
