"""GitHub's content hosts are the repository's: raw files, archives, uploads and Git over HTTP.

A tool that reads ``raw`` or pushes with ``git-receive-pack`` acts on a repository as much
as one that calls the REST API: each is checked against the user's role on that repository,
through a GitHub Enterprise Server fake on 127.0.0.1 (which serves them under its own host),
and, for GitHub.com's hosts and GHES subdomains, through the router and the integration.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from fakes.github import FakeGitHub
from hypothesis import given
from hypothesis import strategies as st
from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import literal
from toolpass.integrations.github import GitHub
from toolpass.integrations.github.tests.test_routes_github import connect
from toolpass.integrations.routes import Request
from toolpass.intercept import ActionRefused
from toolpass.intercept.router import Router

TOKEN = "ghp_tool00000000000000000000000000000000"
DANA, RORY = "dana@example.com", "rory@example.com"
USERS = {DANA: "dana", RORY: "rory"}
ZERO, OLD, NEW = "0" * 40, "1" * 40, "2" * 40


@pytest.fixture
def ghes() -> Iterator[FakeGitHub]:
    with FakeGitHub(prefix="/api/v3") as gh:
        gh.add_repo(
            "acme/widgets",
            {"dana": "write", "rory": "read"},
            files={"README.md": "# widgets"},
            branches={"main": True, "feature": False},
        )
        gh.add_repo("acme/secret", {"dana": "read"}, files={"keys.txt": "hunter2"})
        gh.add_token(TOKEN)
        yield gh


@pytest.fixture
def kit(ghes: FakeGitHub, events: list[Any]) -> Iterator[Toolkit]:
    conn = {
        "id": "github",
        "integration": "github",
        "url": ghes.api_url,
        "token": literal(TOKEN),
        "identity": {"mode": "users", "users": USERS},
    }
    with Toolpass([conn]) as engine:
        yield Toolkit(permissions=engine, audit=[events.append])
        intercept.uninstall()


AUTH = {"Authorization": f"token {TOKEN}"}


def arrived(gh: FakeGitHub, method: str, pattern: str) -> list[str]:
    return [r.path for r in gh.seen(method, pattern)]


def pkt(line: str) -> bytes:
    return f"{len(line) + 5:04x}{line}\n".encode()


def push_body(*commands: tuple[str, str, str]) -> bytes:
    lines = [f"{old} {new} {ref}" for old, new, ref in commands]
    lines[0] += "\0report-status side-band-64k"
    return b"".join(pkt(line) for line in lines) + b"0000PACK\x00\x00\x00\x02"


# --- through the hook, against the fake GitHub Enterprise Server ---------------------------
def test_raw_file_reads_are_checked_on_their_repository(
    kit: Toolkit, ghes: FakeGitHub, events: list[Any]
) -> None:
    @kit.tool()
    def read_raw(repo: str, path: str) -> str:
        answer = requests.get(f"{ghes.url}/raw/acme/{repo}/main/{path}", headers=AUTH, timeout=5)
        return answer.text

    with Session(RORY).active(), pytest.raises(ActionRefused) as info:
        read_raw("secret", "keys.txt")  # rory has no role on acme/secret
    assert info.value.code == "not_authorized"
    assert arrived(ghes, "GET", "/raw/.*") == []
    with Session(DANA).active() as session:
        assert "hunter2" in read_raw("secret", "keys.txt")
        assert "github|repo:acme/secret" in session.private_from
    action = events[-1].actions[0]
    assert (action["action"], action["resource"], action["verdict"]) == (
        "contents.read",
        "repo:acme/secret",
        "allowed",
    )


def test_git_push_is_a_write_of_each_branch_it_names(
    kit: Toolkit, ghes: FakeGitHub, events: list[Any]
) -> None:
    @kit.tool()
    def push(*commands: tuple[str, str, str]) -> str:
        url = f"{ghes.url}/acme/widgets.git/git-receive-pack"
        headers = {**AUTH, "Content-Type": "application/x-git-receive-pack-request"}
        return requests.post(url, data=push_body(*commands), headers=headers, timeout=5).text

    feature = (OLD, NEW, "refs/heads/feature")
    with Session(RORY).active(), pytest.raises(ActionRefused) as info:
        push(feature)  # rory may only read
    assert info.value.code == "not_authorized"
    assert "contents.write on ref:acme/widgets@feature" in info.value.message
    with Session(DANA).active(), pytest.raises(ActionRefused) as info:
        push((OLD, NEW, "refs/heads/main"))  # main is protected: admins only
    assert info.value.code == "not_authorized"
    with Session(DANA).active(), pytest.raises(ActionRefused) as info:
        push(feature, (OLD, NEW, "refs/heads/main"))  # two branches: not one resource
    assert info.value.code == "unresolved_resource"
    assert arrived(ghes, "POST", ".*/git-receive-pack") == []
    with Session(DANA).active():
        push(feature)
    assert arrived(ghes, "POST", ".*/git-receive-pack") == ["/acme/widgets.git/git-receive-pack"]
    action = events[-1].actions[0]
    assert (action["action"], action["resource"], action["verdict"]) == (
        "contents.write",
        "ref:acme/widgets@feature",
        "allowed",
    )


def test_the_push_advertisement_is_a_write_and_a_fetch_a_read(
    kit: Toolkit, ghes: FakeGitHub
) -> None:
    @kit.tool()
    def advertise(service: str) -> int:
        url = f"{ghes.url}/acme/widgets/info/refs?service={service}"
        return requests.get(url, headers=AUTH, timeout=5).status_code

    with Session(RORY).active() as session:
        assert advertise("git-upload-pack") == 200  # a read: it went
        assert session.tainted  # what it read is untrusted content
        with pytest.raises(ActionRefused) as info:
            advertise("git-receive-pack")
    assert info.value.code == "not_authorized"
    assert arrived(ghes, "GET", ".*/info/refs") == ["/acme/widgets/info/refs"]


def test_release_asset_uploads_are_writes(kit: Toolkit, ghes: FakeGitHub) -> None:
    @kit.tool()
    def upload(data: bytes) -> int:
        url = f"{ghes.url}/api/uploads/repos/acme/widgets/releases/1/assets?name=a.zip"
        headers = {**AUTH, "Content-Type": "application/zip"}
        return requests.post(url, data=data, headers=headers, timeout=5).status_code

    with Session(RORY).active(), pytest.raises(ActionRefused) as info:
        upload(b"PK")
    assert info.value.code == "not_authorized"
    assert "release.create on repo:acme/widgets" in info.value.message
    with Session(DANA).active():
        assert upload(b"PK") == 200
    assert arrived(ghes, "POST", "/api/uploads/.*") == [
        "/api/uploads/repos/acme/widgets/releases/1/assets"
    ]


# --- GitHub.com's hosts and GHES subdomains: the router and the integration ---------------
@pytest.fixture(scope="module")
def dotcom() -> GitHub:
    return connect("https://api.github.com")


@pytest.fixture(scope="module")
def server() -> GitHub:
    return connect("https://ghe.example.com/api/v3")


def placed(
    gh: GitHub, url: str, method: str = "GET", body: Any = None, content_type: str = ""
) -> tuple[str, str | None, str] | None:
    """(action, resource, effect) of a request to ``url``, as the hook places it."""
    scheme, rest = url.split("://")
    authority, _, path_query = rest.partition("/")
    path, _, query = ("/" + path_query).partition("?")
    host, _, port = authority.partition(":")
    number = int(port) if port else {"http": 80, "https": 443}[scheme]
    where = Router([("gh", gh)]).place(scheme, host, number, path)
    if where is None:
        raise AssertionError(f"{url} is not served")
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    headers = {"content-type": content_type} if content_type else {}
    found = gh.match_request(Request(method, where.path, query, headers, data, host))
    return None if found is None else (found.action, found.resource, found.effect)


READ = ("contents.read", "repo:acme/x", "read")


@pytest.mark.parametrize(
    ("url", "method", "expected"),
    [
        ("https://raw.githubusercontent.com/acme/x/main/README.md", "GET", READ),
        ("https://raw.githubusercontent.com/acme/x/refs/heads/dev/a/b.txt", "GET", READ),
        ("http://raw.githubusercontent.com/acme/x/main/README.md", "GET", READ),
        ("https://RAW.githubusercontent.com./acme/x/main/README.md", "GET", READ),
        ("https://raw.githubusercontent.com/acme/x/main/README.md", "POST", None),
        ("https://codeload.github.com/acme/x/zip/refs/heads/main", "GET", READ),
        ("https://codeload.github.com/acme/x/legacy.tar.gz/main", "GET", READ),
        ("https://media.githubusercontent.com/media/acme/x/main/big.bin", "GET", READ),
        (
            "https://uploads.github.com/repos/acme/x/releases/7/assets?name=a.zip",
            "POST",
            ("release.create", "repo:acme/x", "write"),
        ),
        ("https://uploads.github.com/repos/acme/x/pulls", "POST", None),
        ("https://github.com/acme/x.git/info/refs?service=git-upload-pack", "GET", READ),
        (
            "https://github.com/acme/x.git/info/refs?service=git-receive-pack",
            "GET",
            ("contents.write", "repo:acme/x", "write"),
        ),
        ("https://github.com/acme/x/info/refs?service=git-upload-pack", "GET", READ),
        ("https://github.com/acme/x.git/git-upload-pack", "POST", READ),
        ("https://github.com/acme/x/archive/refs/heads/main.zip", "GET", READ),
        ("https://github.com/acme/x/raw/main/README.md", "GET", READ),
        ("https://github.com/acme/x/releases/download/v1/a.zip", "GET", READ),
        ("https://github.com/acme/x/settings", "POST", None),  # no route: refused as unmapped
        ("https://github.com/features", "GET", None),  # an unmapped read
        (
            "https://gist.githubusercontent.com/dana/abc123/raw/f00/notes.md",
            "GET",
            ("user.read", "user:dana", "read"),
        ),
        ("https://gist.github.com/abc123.git/git-receive-pack", "POST", None),
        ("https://objects.githubusercontent.com/github-production-release-asset/1/2", "GET", None),
        ("https://objects.githubusercontent.com/github-production-release-asset/1/2", "PUT", None),
    ],
)
def test_github_com_content_hosts_are_the_repositorys(
    dotcom: GitHub, url: str, method: str, expected: tuple[str, str, str] | None
) -> None:
    assert placed(dotcom, url, method) == expected


def test_git_lfs_batches_read_or_write_by_their_operation(dotcom: GitHub) -> None:
    url = "https://github.com/acme/x.git/info/lfs/objects/batch"
    kind = "application/vnd.git-lfs+json"
    assert placed(dotcom, url, "POST", {"operation": "download"}, kind) == READ
    write = ("contents.write", "repo:acme/x", "write")
    assert placed(dotcom, url, "POST", {"operation": "upload"}, kind) == write
    assert placed(dotcom, url, "POST", {"operation": ["download"]}, kind) == write
    assert placed(dotcom, url, "POST", b"not json", kind) == write
    locks = "https://github.com/acme/x.git/info/lfs/locks"
    assert placed(dotcom, locks, "POST", {"path": "a"}, "application/json") == write


@pytest.mark.parametrize(
    ("url", "method", "expected"),
    [
        ("https://ghe.example.com/raw/acme/x/main/README.md", "GET", READ),
        ("https://raw.ghe.example.com/acme/x/main/README.md", "GET", READ),
        ("https://codeload.ghe.example.com/acme/x/zip/main", "GET", READ),
        ("https://ghe.example.com/codeload/acme/x/zip/main", "GET", READ),
        (
            "https://uploads.ghe.example.com/repos/acme/x/releases/7/assets",
            "POST",
            ("release.create", "repo:acme/x", "write"),
        ),
        (
            "https://ghe.example.com/api/uploads/repos/acme/x/releases/7/assets",
            "POST",
            ("release.create", "repo:acme/x", "write"),
        ),
        ("https://ghe.example.com/acme/x.git/git-upload-pack", "POST", READ),
        (
            "https://ghe.example.com/api/v3/repos/acme/x/pulls",
            "POST",
            ("pr.create", "repo:acme/x", "write"),
        ),
        ("https://ghe.example.com/acme/x/settings", "POST", None),
    ],
)
def test_enterprise_server_content_paths_and_subdomains(
    server: GitHub, url: str, method: str, expected: tuple[str, str, str] | None
) -> None:
    assert placed(server, url, method) == expected


def test_only_hosts_tied_to_the_connection_are_served(dotcom: GitHub, server: GitHub) -> None:
    assert not dotcom.serves("https", "raw.githubusercontent.com.evil.example", 443)
    assert not dotcom.serves("https", "evilgithub.com", 443)
    assert not dotcom.serves("ftp", "github.com", 21)
    assert not server.serves("https", "raw.githubusercontent.com", 443)
    assert not server.serves("https", "evil.ghe.example.com", 443)
    assert not server.serves("https", "raw.ghe.example.com.evil.example", 443)
    assert not server.serves("http", "raw.ghe.example.com", 80)  # the server's scheme only
    fake = connect("http://127.0.0.1:9/")  # neither GitHub.com nor a server: its URL only
    assert not fake.serves("https", "raw.githubusercontent.com", 443)


# --- pushes: never a read, never another repository's resource -----------------------------
_OIDS = st.sampled_from([ZERO, OLD, NEW, "3" * 64])
_REFS = st.one_of(
    st.builds(lambda n: f"refs/heads/{n}", st.text(min_size=0, max_size=12)),
    st.builds(lambda n: f"refs/tags/{n}", st.text(min_size=1, max_size=8)),
    st.text(max_size=16),
)


@given(st.lists(st.tuples(_OIDS, _OIDS, _REFS), min_size=1, max_size=3))
def test_a_push_is_never_a_read(dotcom: GitHub, commands: list[tuple[str, str, str]]) -> None:
    url = "https://github.com/acme/x.git/git-receive-pack"
    try:
        body = push_body(*commands)
    except UnicodeEncodeError:
        return
    found = placed(dotcom, url, "POST", body)
    assert found is not None
    _, resource, effect = found
    assert effect != "read"
    assert resource is None or resource == "repo:acme/x" or resource.startswith("ref:acme/x@")
    assert placed(dotcom, url, "POST", body[:7]) == ("contents.write", None, "write")


# --- GraphQL: every field path -----------------------------------------------------------
def graphql(gh: GitHub, query: str, variables: Any = None, name: str | None = None) -> Any:
    body: dict[str, Any] = {"query": query}
    if variables is not None:
        body["variables"] = variables
    if name is not None:
        body["operationName"] = name
    data = json.dumps(body).encode()
    found = gh.match_request(Request("POST", "/graphql", "", JSON, data))
    return None if found is None else (found.action, found.resource, found.effect)


JSON = {"content-type": "application/json"}


AGENT = ("site.read", "user:@me", "read")
UNPLACED = ("repo.read", None, "read")
REPO = ("repo.read", "repo:acme/x", "read")
REPOS = "repositories(first: 5) { nodes { nameWithOwner } }"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("{ viewer { login name } }", AGENT),
        ("{ rateLimit { remaining } licenses { name } __typename }", AGENT),
        (f"query {{ viewer {{ {REPOS} }} }}", UNPLACED),
        (f"{{ me: viewer {{ mine: {REPOS} }} }}", UNPLACED),
        (f"{{ ...F }} fragment F on Query {{ viewer {{ {REPOS} }} }}", UNPLACED),
        (f"{{ ... on Query {{ viewer {{ ... on User {{ {REPOS} }} }} }} }}", UNPLACED),
        ('{ viewer { repository(name: "x") { id } } }', UNPLACED),
        (
            'query { organization(login: "acme") { repository(name: "x") '
            "{ issues(first: 5) { nodes { body } } } } }",
            REPO,
        ),
        ('{ user(login: "acme") { repository(name: "x") { id } } }', REPO),
        ('{ organization(login: "acme") { name login } }', ("org.read", "org:acme", "read")),
        (f'{{ organization(login: "acme") {{ {REPOS} }} }}', UNPLACED),
        ('{ organization(login: "acme") { teams(first: 1) { nodes { name } } } }', UNPLACED),
        (f'{{ repository(owner: "acme", name: "x") {{ owner {{ {REPOS} }} }} }}', UNPLACED),
        ('{ repository(owner: "acme", name: "x") { forks(first: 1) { nodes { id } } } }', UNPLACED),
        ('{ repository(owner: "acme", name: "x") { parent { name } } }', UNPLACED),
        (
            '{ repository(owner: "acme", name: "x") { issues(first: 1) { nodes { author '
            "{ ... on User { issues(first: 5) { nodes { body } } } } } } } }",
            UNPLACED,
        ),
        (
            '{ repository(owner: "acme", name: "x") { issue(number: 1) { timelineItems(first: 5) '
            "{ nodes { ... on CrossReferencedEvent { source { ... on Issue { body } } } } } } } }",
            UNPLACED,
        ),
        (
            '{ repository(owner: "acme", name: "x") { labels(first: 1) { nodes '
            "{ issues(first: 1) { nodes { body } } } } } }",
            REPO,
        ),
        (
            '{ repository(owner: "acme", name: "x") { ref(qualifiedName: "main") { target '
            "{ ... on Commit { history(first: 1) { nodes { message } } } } } } }",
            REPO,
        ),
        ('{ node(id: "R_1") { ... on Repository { name } } }', UNPLACED),
        ('{ nodes(ids: ["R_1"]) { id } }', UNPLACED),
        (
            '{ search(query: "secret", type: ISSUE, first: 5) '
            "{ nodes { ... on Issue { body } } } }",
            UNPLACED,
        ),
        ('{ topic(name: "x") { repositories(first: 1) { nodes { name } } } }', UNPLACED),
        ("{ unknownField { id } }", UNPLACED),
        (
            '{ a: repository(owner: "acme", name: "x") { id } '
            'b: organization(login: "acme") { repository(name: "x") { name } } viewer { login } }',
            REPO,
        ),
        (
            '{ a: repository(owner: "acme", name: "x") { id } '
            'b: organization(login: "acme") { repository(name: "y") { name } } }',
            UNPLACED,
        ),
        ("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }", None),
        ("{ ...Missing }", None),
    ],
)
def test_graphql_queries_are_placed_by_every_field_path(
    dotcom: GitHub, query: str, expected: Any
) -> None:
    assert graphql(dotcom, query) == expected


def test_graphql_variables_and_operation_names(dotcom: GitHub) -> None:
    nested = (
        "query Q($o: String!, $n: String!) { organization(login: $o) "
        "{ repository(name: $n) { id } } }"
    )
    assert graphql(dotcom, nested, {"o": "acme", "n": "x"}) == REPO
    assert graphql(dotcom, nested, {"o": "acme"}) == UNPLACED  # a missing variable
    doc = f"query A {{ viewer {{ login }} }} query B {{ viewer {{ {REPOS} }} }}"
    assert graphql(dotcom, doc, name="A") == AGENT
    assert graphql(dotcom, doc, name="B") == UNPLACED
    assert graphql(dotcom, doc) is None


def test_fragments_that_multiply_are_refused(dotcom: GitHub) -> None:
    doc = "{ ...F9 } fragment F0 on Query { viewer { login } }"
    doc += "".join(f" fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, 10))
    assert graphql(dotcom, doc) == AGENT
    doc = "{ ...F20 } fragment F0 on Query { viewer { login } }"
    doc += "".join(f" fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, 21))
    assert graphql(dotcom, doc) is None  # 2**20 fields: unreadable, not walked


def test_nested_graphql_reads_are_checked_through_the_hook(
    kit: Toolkit, ghes: FakeGitHub, events: list[Any]
) -> None:
    @kit.tool()
    def ask(query: str) -> str:
        url = f"{ghes.url}/api/graphql"
        return requests.post(url, json={"query": query}, headers=AUTH, timeout=5).text

    secret = '{ organization(login: "acme") { repository(name: "secret") { id } } }'
    with Session(RORY).active(), pytest.raises(ActionRefused) as info:
        ask(secret)
    assert info.value.code == "not_authorized"
    assert "repo.read on repo:acme/secret" in info.value.message
    with Session(RORY).active(), pytest.raises(ActionRefused) as info:
        ask(f"{{ viewer {{ login {REPOS} }} }}")
    assert info.value.code == "unresolved_resource"
    assert arrived(ghes, "POST", "/api/graphql") == []
    with Session(DANA).active() as session:
        ask(secret)
        assert "github|repo:acme/secret" in session.private_from
    assert len(arrived(ghes, "POST", "/api/graphql")) == 1


# Mutations: whatever their shape, never a read.
_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
_STRINGS = st.text(max_size=10).map(json.dumps)
_TRICKS = st.sampled_from(
    ["", "# query { viewer { login } }\n", '"""} query {"""', ",,", "\ufeff", "__typename"]
)
_MUTATIONS = st.sampled_from(
    ["createCommitOnBranch", "createPullRequest", "deleteRef", "mergePullRequest", "x"]
)


@given(
    field=_MUTATIONS,
    alias=st.one_of(st.just(""), _NAMES.map(lambda n: n + ": ")),
    text=_STRINGS,
    branch=_STRINGS,
    trick=_TRICKS,
    nested=st.sampled_from(
        ["commit { oid }", 'repository(owner: "acme", name: "x") { id }', "viewer { login }"]
    ),
    fragment=st.booleans(),
    chosen=st.booleans(),
)
def test_a_mutation_is_never_a_read(
    dotcom: GitHub,
    field: str,
    alias: str,
    text: str,
    branch: str,
    trick: str,
    nested: str,
    fragment: bool,
    chosen: bool,
) -> None:
    typename = "__typename" if trick == "__typename" else ""
    call = (
        f"{alias}{field}(input: {{body: {text}, branch: {{repositoryNameWithOwner: "
        f'"acme/x", branchName: {branch}}}}}) {{ {typename} {nested} }}'
    )
    root = "{ ...M }" if fragment else f"{{ {call} }}"
    doc = f"{trick if trick != '__typename' else ''} mutation W {root}"
    if fragment:
        doc += f" fragment M on Mutation {{ {call} }}"
    if chosen:
        doc = "query R { viewer { login } } " + doc
    found = graphql(dotcom, doc, name="W" if chosen else None)
    assert found is None or found[2] != "read", doc
