"""The GitLab route table (generated from python-gitlab's managers) and GitLab's override."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.gitlab import ACTIONS, GitLab, parse_resource
from toolpass.integrations.routes import Request, fields, load

REPO = Path(__file__).resolve().parents[6]
GENERATOR = REPO / "core/src/toolpass/integrations/gitlab/generate.py"
TABLE = REPO / "core/src/toolpass/integrations/gitlab/routes.json"
SAMPLES = {
    "project_id": "acme/sub/api",
    "group_id": "acme",
    "mr_iid": "12",
    "issue_iid": "34",
    "branch": "feature/x",
    "body.branch": "feature/x",
    "body.ref": "main",
}
JSON = {"content-type": "application/json"}


def connect(url: str) -> GitLab:
    (config,) = parse_connections(
        [{"id": "gl", "integration": "gitlab", "url": url, "token": literal("glpat-engine")}]
    )
    return GitLab(config)


@pytest.fixture(scope="module")
def gl() -> GitLab:
    return connect("https://gitlab.com")


def generator() -> ModuleType:
    return load_generator("gitlab")


def test_the_table_loads_with_its_source() -> None:
    data = json.loads(TABLE.read_text())
    assert data["generator"] == "core/src/toolpass/integrations/gitlab/generate.py"
    assert re.match(r"PyPI python-gitlab \d+\.\d+\.\d+ ", data["source"])
    assert len(load("toolpass.integrations.gitlab")) == len(data["routes"]) > 800
    keys = [(r[1], r[0]) for r in data["routes"]]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    assert all(r[1].startswith("/api/v4/") for r in data["routes"])


def test_every_action_is_declared() -> None:
    declared = {a.name for a in ACTIONS}
    assert {r.action for r in load("toolpass.integrations.gitlab").routes} <= declared


def test_every_resource_template_is_a_resource_gitlab_parses() -> None:
    for route in load("toolpass.integrations.gitlab").routes:
        resource = route.resource
        for name in fields(resource):
            resource = resource.replace("{" + name + "}", SAMPLES[name])
        target = parse_resource(resource)
        if route.action.startswith("instance.") or route.action == "sender_lists":
            assert target.kind == "instance", route
        elif route.action.startswith("group."):
            assert target.kind == "group", route
        else:
            assert target.kind in ("project", "mr", "issue", "branch"), route
        if route.action.startswith("branch.") or route.action in ("mr.merge", "pipeline.run"):
            assert target.kind in ("branch", "mr"), route


def test_coverage_every_operation_of_the_installed_python_gitlab() -> None:
    import gitlab

    source = Path(gitlab.__file__).parent.parent
    gen = generator()
    if gen.version_of(source) not in json.loads(TABLE.read_text())["source"]:
        pytest.skip("the installed python-gitlab is not the version the table was made from")
    operations = gen.operations(source)
    rows = {
        (r.method, r.path.removeprefix("/api/v4"))
        for r in load("toolpass.integrations.gitlab").routes
    }
    assert rows == operations
    assert gen.build(source) == json.loads(TABLE.read_text())["routes"]


@pytest.mark.parametrize(
    ("method", "path", "query", "payload", "expected"),
    [
        (
            "POST",
            "/api/v4/projects/acme%2Fapi/merge_requests",
            "",
            {"source_branch": "fix", "target_branch": "main", "title": "Fix"},
            ("mr.create", "project:acme/api", "write", "s"),
        ),
        (
            "GET",
            "/api/v4/projects/acme%2Fapi/merge_requests/12/changes",
            "",
            None,
            ("mr.read", "mr:acme/api!12", "read", "u"),
        ),
        (
            "PUT",
            "/api/v4/projects/acme%2Fapi/merge_requests/12/merge",
            "",
            {"squash": True},
            ("mr.merge", "mr:acme/api!12", "write", ""),
        ),
        (
            "POST",
            "/api/v4/projects/acme%2Fapi/merge_requests/12/approve",
            "",
            None,
            ("mr.approve", "mr:acme/api!12", "write", ""),
        ),
        (
            "PUT",
            "/api/v4/projects/acme%2Fapi/merge_requests/12/rebase",
            "",
            None,
            ("branch.force_push", "mr:acme/api!12", "destructive", ""),
        ),
        (
            "POST",
            "/api/v4/projects/acme%2Fapi/merge_requests/12/notes",
            "",
            {"body": "LGTM"},
            ("mr.comment", "mr:acme/api!12", "write", "s"),
        ),
        (
            "GET",
            "/api/v4/projects/42/issues/34",
            "",
            None,
            ("issue.read", "issue:42#34", "read", "u"),
        ),
        (
            "PUT",
            "/api/v4/projects/42/issues/34",
            "",
            {"state_event": "close"},
            ("issue.update", "issue:42#34", "write", "s"),
        ),
        (
            "POST",
            "/api/v4/projects/42/issues/34/notes",
            "",
            {"body": "hi"},
            ("issue.comment", "issue:42#34", "write", "s"),
        ),
        (
            "DELETE",
            "/api/v4/projects/42/issues/34/notes/9",
            "",
            None,
            ("note.manage", "issue:42#34", "destructive", ""),
        ),
        (
            "GET",
            "/api/v4/projects/acme%2Fapi/repository/files/src%2Fmain.py/raw",
            "ref=main",
            None,
            ("repository.read", "project:acme/api", "read", "u"),
        ),
        (
            "PUT",
            "/api/v4/projects/acme%2Fapi/repository/files/src%2Fmain.py",
            "",
            {"branch": "main", "content": "x", "commit_message": "m"},
            ("branch.push", "branch:acme/api@main", "write", ""),
        ),
        (
            "POST",
            "/api/v4/projects/acme%2Fapi/repository/commits",
            "",
            {"branch": "release/1.0", "commit_message": "m", "actions": []},
            ("branch.push", "branch:acme/api@release/1.0", "write", ""),
        ),
        (
            "POST",
            "/api/v4/projects/acme%2Fapi/repository/commits",
            "",
            {"branch": "main", "force": True, "start_branch": "x", "actions": []},
            ("branch.force_push", "branch:acme/api@main", "destructive", ""),
        ),
        (
            "POST",
            "/api/v4/projects/42/repository/branches",
            "branch=feature%2Fy&ref=main",
            None,
            ("branch.create", "branch:42@feature/y", "write", ""),
        ),
        (
            "DELETE",
            "/api/v4/projects/42/repository/branches/feature%2Fy",
            "",
            None,
            ("branch.delete", "branch:42@feature/y", "destructive", ""),
        ),
        (
            "POST",
            "/api/v4/projects/42/repository/tags",
            "tag_name=v1&ref=main",
            None,
            ("tag.create", "tag:42@v1", "write", ""),
        ),
        (
            "DELETE",
            "/api/v4/projects/42/repository/tags/release%2Fv1",
            "",
            None,
            ("tag.delete", "tag:42@release/v1", "destructive", ""),
        ),
        (
            "POST",
            "/api/v4/projects/acme%2Fapi/releases",
            "",
            {"tag_name": "v2.0", "ref": "main"},
            ("release.create", "tag:acme/api@v2.0", "write", ""),
        ),
        (
            "PUT",
            "/api/v4/projects/42/releases/v2.0",
            "",
            {"description": "notes"},
            ("release.create", "tag:42@v2.0", "write", ""),
        ),
        (
            "DELETE",
            "/api/v4/projects/42/releases/v2.0",
            "",
            None,
            ("release.create", "tag:42@v2.0", "destructive", ""),
        ),
        (
            "POST",
            "/api/v4/projects/42/releases/v2.0/assets/links",
            "",
            {"name": "bin", "url": "https://example.com/bin"},
            ("release.create", "tag:42@v2.0", "write", ""),
        ),
        (
            "POST",
            "/api/v4/projects/42/releases",
            "",
            {"tag_name": "v..1"},
            ("release.create", None, "write", ""),
        ),
        (
            "POST",
            "/api/v4/projects/42/pipeline",
            "ref=main",
            None,
            ("pipeline.run", "branch:42@main", "write", ""),
        ),
        (
            "GET",
            "/api/v4/projects/42/jobs/7/trace",
            "",
            None,
            ("pipeline.read", "project:42", "read", "u"),
        ),
        (
            "POST",
            "/api/v4/projects/42/members",
            "",
            {"user_id": 5, "access_level": 30},
            ("member.manage", "project:42", "write", "s"),
        ),
        (
            "PUT",
            "/api/v4/projects/42/variables/TOKEN",
            "",
            {"value": "x"},
            ("variable.manage", "project:42", "write", ""),
        ),
        (
            "DELETE",
            "/api/v4/projects/acme%2Fapi",
            "",
            None,
            ("project.delete", "project:acme/api", "destructive", ""),
        ),
        (
            "PUT",
            "/api/v4/projects/42",
            "",
            {"description": "d"},
            ("project.settings", "project:42", "write", ""),
        ),
        (
            "PUT",
            "/api/v4/projects/42",
            "",
            {"visibility": "public"},
            ("project.visibility", "project:42", "write", ""),
        ),
        (
            "GET",
            "/api/v4/groups/acme%2Fplatform/issues",
            "",
            None,
            ("group.read_all", "group:acme/platform", "read", "u"),
        ),
        (
            "POST",
            "/api/v4/groups/acme/members",
            "",
            {"user_id": 5},
            ("group.member.manage", "group:acme", "write", "s"),
        ),
        (
            "DELETE",
            "/api/v4/groups/acme",
            "",
            None,
            ("group.delete", "group:acme", "destructive", ""),
        ),
        ("GET", "/api/v4/user", "", None, ("instance.read", "instance", "read", "a")),
        (
            "GET",
            "/api/v4/users",
            "username=dana",
            None,
            ("sender_lists", "instance", "read", "u"),
        ),
        ("GET", "/api/v4/users/7", "", None, ("sender_lists", "instance", "read", "u")),
        ("GET", "/api/v4/todos", "", None, ("sender_lists", "instance", "read", "u")),
        (
            "POST",
            "/api/v4/ci/lint",
            "",
            {"content": "x"},
            ("sender_lists", "instance", "write", "u"),
        ),
        ("GET", "/api/v4/user/activities", "", None, ("instance.read", "instance", "read", "")),
        (
            "GET",
            "/api/v4/personal_access_tokens/self",
            "",
            None,
            ("instance.read", "instance", "read", "a"),
        ),
        ("GET", "/api/v4/issues", "scope=all", None, ("instance.read", "instance", "read", "u")),
        (
            "GET",
            "/api/v4/search",
            "scope=blobs&search=password",
            None,
            ("instance.read", "instance", "read", "u"),
        ),
        (
            "POST",
            "/api/v4/projects",
            "",
            {"name": "new"},
            ("instance.admin", "instance", "destructive", "s"),
        ),
        (
            "PUT",
            "/api/v4/application/settings",
            "",
            {"signup_enabled": False},
            ("instance.admin", "instance", "destructive", ""),
        ),
        (
            "DELETE",
            "/api/v4/projects/42",
            "sudo=root",
            None,
            ("instance.admin", "instance", "destructive", ""),
        ),
    ],
)
def test_hand_checked_requests(
    gl: GitLab,
    method: str,
    path: str,
    query: str,
    payload: object,
    expected: tuple[str, str, str, str],
) -> None:
    data = None if payload is None else json.dumps(payload).encode()
    found = gl.match_request(Request(method, path, query, JSON, data))
    assert found is not None
    assert (found.action, found.resource, found.effect, found.route.flags) == expected


@pytest.mark.parametrize(
    ("path", "query", "expected"),
    [
        ("/api/v4/projects/42/search", "scope=issues&search=x", ("issue.read_all", "project:42")),
        ("/api/v4/projects/42/search", "scope=notes&search=x", ("issue.read_all", "project:42")),
        ("/api/v4/projects/42/search", "scope=blobs&search=x", ("repository.read", "project:42")),
        ("/api/v4/projects/42/search", "scope=merge_requests&search=x", ("mr.read", "project:42")),
        ("/api/v4/projects/42/search", "scope=wiki_blobs&search=x", ("wiki.read", "project:42")),
        ("/api/v4/projects/42/search", "scope=secrets&search=x", ("instance.read", "project:42")),
        ("/api/v4/projects/42/issues", "", ("issue.read_all", "project:42")),
        ("/api/v4/projects/42/issues", "confidential=false", ("issue.read", "project:42")),
        ("/api/v4/groups/acme/search", "scope=blobs&search=x", ("group.read_all", "group:acme")),
        ("/api/v4/groups/acme/search", "scope=projects&search=x", ("group.read", "group:acme")),
        ("/api/v4/groups/acme/issues", "", ("group.read_all", "group:acme")),
        ("/api/v4/groups/acme/issues", "confidential=false", ("group.read", "group:acme")),
        ("/api/v4/groups/acme/merge_requests", "", ("group.read_all", "group:acme")),
        ("/api/v4/groups/acme/variables", "", ("group.settings", "group:acme")),
        ("/api/v4/groups/acme/hooks", "", ("group.settings", "group:acme")),
        ("/api/v4/groups/acme/labels", "", ("group.read", "group:acme")),
        # a milestone's or an epic's issues: confidential ones too, whatever the filter
        ("/api/v4/projects/42/milestones/3/issues", "", ("issue.read_all", "project:42")),
        ("/api/v4/groups/acme/milestones/3/issues", "", ("group.read_all", "group:acme")),
        ("/api/v4/groups/acme/epics/3/issues", "", ("group.read_all", "group:acme")),
        (
            "/api/v4/projects/acme%2Fapi/issues",
            "confidential=false&confidential=true",
            ("issue.read_all", "project:acme/api"),
        ),
    ],
)
def test_lists_and_searches_need_what_they_can_return(
    gl: GitLab, path: str, query: str, expected: tuple[str, str]
) -> None:
    """The agent's token answers a list or a search with all it sees: confidential issues,
    internal notes, code of every project in a group, a group's secrets."""
    found = gl.match_request(Request("GET", path, query))
    assert found is not None
    assert (found.action, found.resource, found.effect) == (*expected, "read")


def test_a_connection_url_ending_in_api_v4(gl: GitLab) -> None:
    api = connect("https://gitlab.example.com/api/v4")
    found = api.match_request(Request("PUT", "/projects/acme%2Fapi/merge_requests/3/merge"))
    assert found is not None
    assert (found.action, found.resource) == ("mr.merge", "mr:acme/api!3")
    assert gl.match_request(Request("PUT", "/projects/acme%2Fapi/merge_requests/3/merge")) is None


def test_sudo_in_a_header_is_instance_admin(gl: GitLab) -> None:
    found = gl.match_request(Request("GET", "/api/v4/projects/42", "", {"Sudo": "dana"}))
    assert found is not None
    assert (found.action, found.resource) == ("instance.admin", "instance")


@pytest.mark.parametrize(
    ("method", "path", "query", "payload"),
    [
        ("GET", "/api/v4/projects/acme%2F..%2Fsecret", "", None),  # climbs out
        ("GET", "/api/v4/projects/..%2Fsecret/issues/1", "", None),
        ("GET", "/api/v4/projects/acme%252Fapi/issues/1", "", None),  # double-encoded
        ("GET", "/api/v4/projects/acme%2F%2Fapi", "", None),  # an empty segment inside
        ("DELETE", "/api/v4/projects/42/repository/branches/..", "", None),
        ("DELETE", "/api/v4/projects/42/repository/branches/a..b", "", None),  # not a branch name
        ("GET", "/api/v4/projects/1/jobs/artifacts/main/raw/a/../../../../x", "job=b", None),
        ("PUT", "/api/v4/projects/1/repository/files/a.txt", "branch=dev", {"branch": "main"}),
        ("PUT", "/api/v4/projects/1/repository/files/a.txt", "", {"content": "no branch"}),
        ("PUT", "/api/v4/projects/1/repository/files/a.txt", "", {"branch": ["main"]}),
    ],
)
def test_hostile_or_ambiguous_requests_name_no_resource(
    gl: GitLab, method: str, path: str, query: str, payload: object
) -> None:
    data = None if payload is None else json.dumps(payload).encode()
    found = gl.match_request(Request(method, path, query, JSON, data))
    assert found is not None
    assert found.resource is None


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v4/nothing"),
        ("POST", "/api/v3/projects"),
        ("DELETE", "/api/v4/projects//issues/1"),
        ("PUT", "/api/v4/projects/42/merge_requests/12/merge/now"),
        ("POST", "/group/project.git/git-receive-pack"),
        ("POST", "/api/graphql"),
    ],
)
def test_requests_matching_no_route(gl: GitLab, method: str, path: str) -> None:
    assert gl.match_request(Request(method, path)) is None


def test_every_write_of_a_project_has_a_route(gl: GitLab) -> None:
    """A write nobody curated still lands on the strongest action of its place."""
    found = gl.match_request(Request("POST", "/api/v4/projects/42/housekeeping"))
    assert found is not None
    assert found.action == "project.settings"
    found = gl.match_request(Request("PUT", "/api/v4/groups/acme/variables/X"))
    assert found is not None
    assert found.action == "group.settings"
