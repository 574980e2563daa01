"""The Jira route table (generated from jira.js) and Jira's override."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.jira import _GLOBAL, _ISSUE, _PROJECT, SITE, Jira, jql_bound
from toolpass.integrations.routes import Request, fields, load

REPO = Path(__file__).resolve().parents[6]
GENERATOR = REPO / "core/src/toolpass/integrations/jira/generate.py"
TABLE = REPO / "core/src/toolpass/integrations/jira/routes.json"
SAMPLES = {
    "issueIdOrKey": "PAY-123",
    "projectIdOrKey": "PAY",
    "projectKeyOrId": "PAY",
    "projectId": "10000",
    "body.fields.project": "PAY",
    "body.issueUpdates.fields.project": "PAY",
    "body.issueIdsOrKeys": "PAY-1",
    "body.selectedIssueIdsOrKeys": "PAY-1",
    "body.outwardIssue": "PAY-2",
    "body.projectId": "10000",
    "body.project": "PAY",
}
JSON = {"content-type": "application/json"}


def connect(**options: object) -> Jira:
    (config,) = parse_connections(
        [
            {
                "id": "jira",
                "integration": "jira",
                "url": "https://acme.atlassian.net",
                "email": "engine@example.com",
                "api_token": literal("token"),
                **options,
            }
        ]
    )
    return Jira(config)


@pytest.fixture(scope="module")
def jira() -> Jira:
    return connect()


def jira_resource_accepted(action: str, resource: str) -> bool:
    """What ``Jira.check`` accepts: ``site`` for global actions, issue:/project: otherwise."""
    if action in _GLOBAL:
        return resource == SITE
    kind, _, ref = resource.partition(":")
    pattern = {"issue": _ISSUE, "project": _PROJECT}.get(kind)
    return pattern is not None and pattern.fullmatch(ref) is not None


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/jira/generate.py"
    assert data["source"].startswith("npm jira.js 5.4.0 ")
    assert len(load("toolpass.integrations.jira")) == len(data["routes"]) > 1000
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_every_action_is_declared() -> None:
    declared = {a.name for a in Jira.actions}
    assert {r.action for r in load("toolpass.integrations.jira").routes} <= declared


def test_every_resource_template_is_a_resource_the_check_accepts() -> None:
    for route in load("toolpass.integrations.jira").routes:
        resource = route.resource
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", SAMPLES[name])
        assert jira_resource_accepted(route.action, resource), route


def test_coverage_every_operation_is_one_row() -> None:
    data = json.loads(TABLE.read_text())
    m = re.search(r"(\d+) operations, (\d+) of them listed twice", data["source"])
    assert m is not None
    assert len(data["routes"]) == int(m.group(1)) - int(m.group(2)) == 1200
    paths = {(r[0], r[1]) for r in data["routes"]}
    # v2 and v3 list the same operations but for a handful of v3-only ones
    v3 = {(m_, p.replace("/rest/api/3/", "/rest/api/X/")) for m_, p in paths if "/api/3/" in p}
    v2 = {(m_, p.replace("/rest/api/2/", "/rest/api/X/")) for m_, p in paths if "/api/2/" in p}
    assert len(v2 - v3) == 0
    assert len(v3 - v2) < 20


@pytest.mark.skipif("TOOLPASS_JIRA_JS" not in os.environ, reason="needs jira.js unpacked")
def test_regenerating_from_jira_js_gives_the_committed_table() -> None:
    module = load_generator("jira")
    rows, _ = module.build(Path(os.environ["TOOLPASS_JIRA_JS"]))
    assert rows == json.loads(TABLE.read_text())["routes"]


def body(data: object) -> bytes:
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    ("method", "path", "query", "payload", "expected"),
    [
        (
            "GET",
            "/rest/api/3/issue/PAY-123",
            "fields=summary",
            None,
            ("BROWSE_PROJECTS", "issue:PAY-123", "read", "u"),
        ),
        (
            "POST",
            "/rest/api/3/issue",
            "",
            {"fields": {"project": {"key": "PAY"}, "summary": "x"}},
            ("CREATE_ISSUES", "project:PAY", "write", "s"),
        ),
        (
            "POST",
            "/rest/api/2/issue",
            "",
            {"fields": {"project": {"id": "10000"}}},
            ("CREATE_ISSUES", "project:10000", "write", "s"),
        ),
        (
            "PUT",
            "/rest/api/3/issue/PAY-123",
            "",
            {"fields": {"summary": "y"}},
            ("EDIT_ISSUES", "issue:PAY-123", "write", "s"),
        ),
        (
            "DELETE",
            "/rest/api/3/issue/PAY-123",
            "deleteSubtasks=true",
            None,
            ("DELETE_ISSUES", "issue:PAY-123", "destructive", ""),
        ),
        (
            "PUT",
            "/rest/api/3/issue/PAY-123/assignee",
            "",
            {"accountId": "5b10"},
            ("ASSIGN_ISSUES", "issue:PAY-123", "write", "s"),
        ),
        (
            "POST",
            "/rest/api/3/issue/PAY-123/transitions",
            "",
            {"transition": {"id": "31"}},
            ("TRANSITION_ISSUES", "issue:PAY-123", "write", "s"),
        ),
        (
            "GET",
            "/rest/api/3/issue/PAY-123/comment",
            "",
            None,
            ("BROWSE_PROJECTS", "issue:PAY-123", "read", "u"),
        ),
        (
            "POST",
            "/rest/api/3/issue/PAY-123/comment",
            "",
            {"body": {}},
            ("ADD_COMMENTS", "issue:PAY-123", "write", "s"),
        ),
        (
            "PUT",
            "/rest/api/3/issue/PAY-123/comment/10001",
            "",
            {"body": {}},
            ("EDIT_ALL_COMMENTS", "issue:PAY-123", "write", "s"),
        ),
        (
            "DELETE",
            "/rest/api/3/issue/PAY-123/comment/10001",
            "",
            None,
            ("DELETE_ALL_COMMENTS", "issue:PAY-123", "destructive", ""),
        ),
        (
            "POST",
            "/rest/api/3/issue/PAY-123/attachments",
            "",
            None,
            ("CREATE_ATTACHMENTS", "issue:PAY-123", "write", ""),
        ),
        (
            "GET",
            "/rest/api/3/attachment/content/10100",
            "",
            None,
            ("ADMINISTER", "site", "read", "u"),
        ),
        (
            "DELETE",
            "/rest/api/3/attachment/10100",
            "",
            None,
            ("ADMINISTER", "site", "destructive", ""),
        ),
        (
            "POST",
            "/rest/api/3/issue/PAY-123/notify",
            "",
            {"subject": "hi"},
            ("BROWSE_PROJECTS", "issue:PAY-123", "write", "s"),
        ),
        (
            "POST",
            "/rest/api/3/issue/PAY-123/worklog",
            "",
            {"timeSpent": "1h"},
            ("WORK_ON_ISSUES", "issue:PAY-123", "write", ""),
        ),
        (
            "POST",
            "/rest/api/3/issue/PAY-123/watchers",
            "",
            "5b10",
            ("MANAGE_WATCHERS", "issue:PAY-123", "write", ""),
        ),
        (
            "POST",
            "/rest/api/3/issue/PAY-123/votes",
            "",
            None,
            ("BROWSE_PROJECTS", "issue:PAY-123", "write", ""),
        ),
        (
            "POST",
            "/rest/api/3/issueLink",
            "",
            {
                "type": {"name": "Blocks"},
                "inwardIssue": {"key": "PAY-1"},
                "outwardIssue": {"key": "OPS-2"},
            },
            ("LINK_ISSUES", "issue:OPS-2", "write", ""),
        ),
        (
            "GET",
            "/rest/api/3/project/PAY",
            "",
            None,
            ("BROWSE_PROJECTS", "project:PAY", "read", "u"),
        ),
        (
            "PUT",
            "/rest/api/3/project/PAY",
            "",
            {"name": "Pay"},
            ("ADMINISTER_PROJECTS", "project:PAY", "write", ""),
        ),
        ("DELETE", "/rest/api/3/project/PAY", "", None, ("ADMINISTER", "site", "destructive", "")),
        (
            "GET",
            "/rest/api/3/project/PAY/components",
            "",
            None,
            ("BROWSE_PROJECTS", "project:PAY", "read", ""),
        ),
        (
            "POST",
            "/rest/api/3/version",
            "",
            {"projectId": 10000, "name": "1.0"},
            ("ADMINISTER_PROJECTS", "project:10000", "write", ""),
        ),
        ("GET", "/rest/api/3/myself", "", None, ("JIRA_ACCESS", "site", "read", "a")),
        (
            "GET",
            "/rest/api/3/user/search",
            "query=dana",
            None,
            ("USER_PICKER", "site", "read", "u"),
        ),
        (
            "GET",
            "/rest/api/3/project/search",
            "",
            None,
            ("SENDER_LISTS", "site", "read", "u"),
        ),
        ("GET", "/rest/api/2/filter/search", "", None, ("SENDER_LISTS", "site", "read", "u")),
        ("GET", "/rest/api/3/filter/my", "", None, ("JIRA_ACCESS", "site", "read", "u")),
        ("GET", "/rest/api/3/field", "", None, ("JIRA_ACCESS", "site", "read", "")),
        (
            "POST",
            "/rest/api/3/filter",
            "",
            {"name": "mine", "jql": "project = PAY"},
            ("CREATE_SHARED_OBJECTS", "site", "write", "s"),
        ),
        (
            "PUT",
            "/rest/api/3/permissionscheme/10000",
            "",
            {"name": "x"},
            ("ADMINISTER", "site", "write", ""),
        ),
        (
            "GET",
            "/rest/api/3/search/jql",
            "jql=project%20%3D%20PAY%20AND%20status%3DOpen",
            None,
            ("BROWSE_PROJECTS", "search:PAY", "read", "u"),
        ),
        (
            "POST",
            "/rest/api/3/search/jql",
            "",
            {"jql": "project = PAY AND level IS EMPTY ORDER BY created"},
            ("BROWSE_PROJECTS", "project:PAY", "read", "u"),
        ),
        (
            "POST",
            "/rest/api/3/search/jql",
            "",
            {"jql": 'project = PAY AND level = "EMPTY"'},  # a level named EMPTY
            ("BROWSE_PROJECTS", "search:PAY", "read", "u"),
        ),
        (
            "POST",
            "/rest/api/3/search/jql",
            "",
            {"jql": "project = PAY AND (level IS EMPTY OR level = Staff)"},
            ("BROWSE_PROJECTS", "search:PAY", "read", "u"),
        ),
        (
            "POST",
            "/rest/api/3/search/jql",
            "",
            {"jql": "assignee = currentUser()"},
            ("ADMINISTER", "site", "read", "u"),
        ),
        (
            "POST",
            "/rest/api/3/search",
            "",
            {"jql": "key = PAY-7"},
            ("BROWSE_PROJECTS", "issue:PAY-7", "read", "u"),
        ),
        (
            "POST",
            "/rest/api/3/issue/bulkfetch",
            "",
            {"issueIdsOrKeys": ["PAY-1"]},
            ("BROWSE_PROJECTS", "issue:PAY-1", "read", "u"),
        ),
        (
            "POST",
            "/rest/api/3/issue/bulkfetch",
            "",
            {"issueIdsOrKeys": ["PAY-1", "OPS-2"]},
            ("ADMINISTER", "site", "read", "u"),
        ),
        (
            "POST",
            "/rest/api/3/bulk/issues/delete",
            "",
            {"selectedIssueIdsOrKeys": ["PAY-1"]},
            ("DELETE_ISSUES", "issue:PAY-1", "destructive", ""),
        ),
        (
            "GET",
            "/ex/jira/11223344-a1b2-3b33-c444-def123456789/rest/api/3/issue/PAY-1",
            "",
            None,
            ("BROWSE_PROJECTS", "issue:PAY-1", "read", "u"),
        ),
        (
            "GET",
            "/rest/api/latest/issue/PAY-1/comment",
            "",
            None,
            ("BROWSE_PROJECTS", "issue:PAY-1", "read", "u"),
        ),
    ],
)
def test_hand_checked_requests(
    jira: Jira,
    method: str,
    path: str,
    query: str,
    payload: object,
    expected: tuple[str, str, str, str],
) -> None:
    data = None if payload is None else body(payload)
    found = jira.match_request(Request(method, path, query, JSON, data))
    assert found is not None
    assert (found.action, found.resource, found.effect, found.route.flags) == expected


@pytest.mark.parametrize(
    ("jql", "bound"),
    [
        ("project = PAY", ("project", "PAY")),
        ("project = pay AND status = Open ORDER BY created DESC", ("project", "PAY")),
        ("status = Open AND project in (PAY)", ("project", "PAY")),
        ('project = "PAY" AND (labels = a OR labels = b)', ("project", "PAY")),
        ("issue = PAY-12", ("issue", "PAY-12")),
        ("project = PAY OR project = OPS", None),
        ("project = PAY AND status = Open OR assignee = x", None),
        ("project = PAY || x = y", None),
        ("project in (PAY, OPS)", None),
        ("project in projectsWhereUserHasRole(Developers)", None),
        ("(project = PAY)", None),
        ("NOT project = PAY", None),
        ("project != PAY", None),
        ('text ~ "project = PAY"', None),
        ('summary ~ "x" OR text ~ "and project = PAY"', None),
        ("project = PAY AND (", None),
        ("project = PAY)", None),
        ('project = "My Project"', None),
        ("", None),
    ],
)
def test_jql_bound_to_one_project(jql: str, bound: tuple[str, str] | None) -> None:
    assert jql_bound(jql) == bound


@pytest.mark.parametrize(
    "payload",
    [
        {"fields": {"summary": "no project"}},
        {"fields": {"project": {"key": "PAY", "id": "10001"}}},  # which one would Jira use?
        {"fields": {"project": {"key": ["PAY"]}}},
        {"fields": "PAY"},
        [1, 2],
    ],
)
def test_a_create_naming_no_single_project_has_no_resource(jira: Jira, payload: object) -> None:
    found = jira.match_request(Request("POST", "/rest/api/3/issue", "", JSON, body(payload)))
    assert found is not None
    assert found.action == "CREATE_ISSUES"
    assert found.resource is None


def test_bulk_create_in_several_projects_needs_an_administrator(jira: Jira) -> None:
    payload = {"issueUpdates": [{"fields": {"project": {"key": k}}} for k in ("PAY", "OPS")]}
    found = jira.match_request(Request("POST", "/rest/api/3/issue/bulk", "", JSON, body(payload)))
    assert found is not None
    assert (found.action, found.resource, found.effect) == ("ADMINISTER", "site", "write")


def test_another_sites_cloud_id_names_no_resource() -> None:
    jira = connect(auth="scoped", cloud_id="site-one")
    found = jira.match_request(Request("GET", "/ex/jira/site-two/rest/api/3/issue/PAY-1"))
    assert found is not None
    assert found.resource is None
    found = jira.match_request(Request("GET", "/ex/jira/site-one/rest/api/3/issue/PAY-1"))
    assert found is not None
    assert found.resource == "issue:PAY-1"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/rest/api/3/nothing"),
        ("DELETE", "/rest/api/4/issue/PAY-1"),
        ("PUT", "/rest/api/3/issue"),
        ("POST", "/rest/api/3//issue"),
        ("DELETE", "/rest/api/3/issue/PAY-1/../../project/PAY/x"),
        ("DELETE", "/ex/jira/abc/rest/api/3/nothing"),
    ],
)
def test_requests_matching_no_route(jira: Jira, method: str, path: str) -> None:
    assert jira.match_request(Request(method, path)) is None


@pytest.mark.parametrize(
    "path",
    [
        "/rest/api/3/issue/..",
        "/rest/api/3/issue/PAY-1%2F..%2F..%2Fproject%2FPAY",
        "/rest/api/3/issue/%2E%2E",
    ],
)
def test_hostile_parameters_name_no_resource(jira: Jira, path: str) -> None:
    found = jira.match_request(Request("DELETE", path))
    assert found is not None
    assert found.action == "DELETE_ISSUES"
    assert found.resource is None


def test_jira_access_is_checked_as_an_active_account() -> None:
    action = Jira.action("JIRA_ACCESS")
    assert action is not None
    assert action.effect == "read"
    assert "JIRA_ACCESS" in _GLOBAL
