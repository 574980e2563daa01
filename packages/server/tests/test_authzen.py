"""The OpenID AuthZEN Access Evaluation API of ``toolpass serve``: the specification's
request and response shapes (Authorization API 1.0, sections 6, 7, 9 and 10, and the
working group's certification scenario), in process through httpx's ASGI transport and
through a real server process. The engine behind it is real, asking the fake GitHub."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import DEFAULT_SERVER, KEY, ServerProcess, write_config
from fakes.github import FakeGitHub
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolpass.engine import Toolpass
from toolpass.server import create_app, parse_server_config

AUTH = {"Authorization": f"Bearer {KEY}"}
DANA = {"type": "user", "id": "dana@example.com"}
RORY = {"type": "user", "id": "rory@example.com"}
MERGE = {"name": "pr.merge"}
WIDGETS = {"type": "gh:repo", "id": "acme/widgets"}
ASK = {"subject": DANA, "action": MERGE, "resource": WIDGETS}


@pytest.fixture
def tp(github: FakeGitHub, keys: None) -> Iterator[Toolpass]:
    conn = {
        "id": "gh",
        "integration": "github",
        "url": github.api_url,
        "token": "env:TP_GH_TOKEN",
        "identity": {"mode": "template", "template": "{local}", "domains": ["example.com"]},
    }
    with Toolpass([conn]) as engine:
        yield engine


@pytest.fixture
async def client(tp: Toolpass) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(tp, {"api_keys": ["env:TP_TEST_KEY"], "max_body_bytes": 4096})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://tp.test") as c:
        yield c


async def evaluate(client: httpx.AsyncClient, body: Any, path: str = "evaluation") -> Any:
    answer = await client.post(f"/access/v1/{path}", json=body, headers=AUTH)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    return answer.json()


# --- the single evaluation (section 6) ----------------------------------------------------
async def test_allow_is_true_deny_and_unknown_are_false_and_told_apart(
    client: httpx.AsyncClient,
) -> None:
    allowed = await evaluate(client, {**ASK, "context": {"time": "1985-10-26T01:22-07:00"}})
    assert allowed["decision"] is True
    assert allowed["context"]["toolpass_decision"] == "allow"
    assert "write role" in allowed["context"]["reason"]
    denied = await evaluate(client, {**ASK, "subject": RORY})
    assert denied["decision"] is False
    assert denied["context"]["toolpass_decision"] == "deny"
    assert "read role" in denied["context"]["reason"]
    unmapped = await evaluate(client, {**ASK, "subject": {"type": "user", "id": "zed@else.org"}})
    assert unmapped["decision"] is False
    assert unmapped["context"]["toolpass_decision"] == "unknown"
    assert unmapped["context"]["configured"] is True


async def test_the_connection_is_the_resource_type_prefix(client: httpx.AsyncClient) -> None:
    whole = {"type": "gh", "id": "repo:acme/widgets"}  # a type without ':' is the connection
    assert (await evaluate(client, {**ASK, "resource": whole}))["decision"] is True
    other = await evaluate(client, {**ASK, "resource": {"type": "jira:repo", "id": "x/y"}})
    assert other["decision"] is False
    assert other["context"]["configured"] is False
    assert other["context"]["reason"] == "no connection 'jira' is configured (gh)"
    no_action = await evaluate(client, {**ASK, "action": {"name": "can_read"}})
    assert no_action["context"] == {
        "toolpass_decision": "unknown",
        "reason": "gh (github) has no action 'can_read'",
        "configured": False,
    }


async def test_a_subject_that_is_not_a_user_is_false_and_unknown(
    client: httpx.AsyncClient, github: FakeGitHub
) -> None:
    before = len(github.requests)
    robot = await evaluate(client, {**ASK, "subject": {"type": "service", "id": "dana"}})
    assert robot["decision"] is False
    assert robot["context"]["toolpass_decision"] == "unknown"
    assert "type 'user'" in robot["context"]["reason"]
    assert len(github.requests) == before


async def test_unknown_fields_and_properties_are_ignored(client: httpx.AsyncClient) -> None:
    body = {
        "subject": {**DANA, "properties": {"department": "Sales"}},
        "action": {**MERGE, "properties": {"method": "POST"}},
        "resource": {**WIDGETS, "properties": {"library_record": {"isbn": "978"}}},
        "context": {},
        "something_new": [1, 2],
    }
    assert (await evaluate(client, body))["decision"] is True


# --- errors (section 10.1.2 and the certification scenario) ---------------------------------
MALFORMED = [
    ({"action": MERGE, "resource": WIDGETS}, "missing 'subject'"),
    ({"subject": DANA, "resource": WIDGETS}, "missing 'action'"),
    ({"subject": DANA, "action": MERGE}, "missing 'resource'"),
    ({**ASK, "subject": {"id": "dana@example.com"}}, "missing 'subject.type'"),
    ({**ASK, "subject": {"type": "user"}}, "missing 'subject.id'"),
    ({**ASK, "action": {}}, "missing 'action.name'"),
    ({**ASK, "resource": {"id": "acme/widgets"}}, "missing 'resource.type'"),
    ({**ASK, "resource": {"type": "gh:repo"}}, "missing 'resource.id'"),
    ({**ASK, "subject": "alice"}, "'subject' must be an object"),
    ({**ASK, "action": {"name": 123}}, "'action.name' must be a string"),
    ({**ASK, "context": "now"}, "'context' must be an object"),
    ({**ASK, "subject": {**DANA, "properties": []}}, "'subject.properties' must be an object"),
    ({**ASK, "subject": {"type": "user", "id": " "}}, "'subject.id' must not be empty"),
    ({**ASK, "resource": {"type": "gh:", "id": "x"}}, "<connection>:<kind>"),
    ({**ASK, "action": {"name": "pr.merge\n"}}, "control or invisible"),
    ({**ASK, "subject": {"type": "user", "id": "d" * 513}}, "longer than 512"),
    ([ASK], "the body must be a JSON object"),
]


@pytest.mark.parametrize(("body", "says"), MALFORMED)
@pytest.mark.parametrize("path", ["evaluation", "evaluations"])
async def test_a_malformed_request_is_a_400_that_says_why(
    client: httpx.AsyncClient, body: Any, says: str, path: str
) -> None:
    answer = await client.post(f"/access/v1/{path}", json=body, headers=AUTH)
    assert answer.status_code == 400
    assert says in answer.json()["error"]


@pytest.mark.parametrize(
    ("content", "headers", "says"),
    [
        (b"", {}, "not valid JSON"),
        (b"{", {}, "not valid JSON"),
        (b'{"subject": 1, "subject": 2}', {}, "repeats the key"),
        (b'{"x": NaN}', {}, "not valid JSON"),
        (b"\xff", {}, "not UTF-8"),
        (json.dumps(ASK).encode(), {"Content-Type": "text/plain"}, "application/json"),
    ],
)
async def test_bodies_that_are_not_strict_json_are_a_400(
    client: httpx.AsyncClient, content: bytes, headers: dict[str, str], says: str
) -> None:
    sent = {**AUTH, "Content-Type": "application/json", **headers}
    answer = await client.post("/access/v1/evaluation", content=content, headers=sent)
    assert answer.status_code == 400
    assert says in answer.json()["error"]


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-key", f"Basic {KEY}"])
@pytest.mark.parametrize("path", ["evaluation", "evaluations"])
async def test_the_api_key_is_required(
    client: httpx.AsyncClient, github: FakeGitHub, authorization: str | None, path: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    answer = await client.post(f"/access/v1/{path}", json=ASK, headers=headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == 'Bearer realm="toolpass"'
    assert not github.requests


async def test_a_body_too_large_is_refused(client: httpx.AsyncClient) -> None:
    body = {**ASK, "context": {"pad": "x" * 5000}}
    answer = await client.post("/access/v1/evaluation", json=body, headers=AUTH)
    assert answer.status_code == 413


async def test_x_request_id_is_echoed_on_answers_and_errors(client: httpx.AsyncClient) -> None:
    rid = {"X-Request-ID": "bfe9eb29-ab87-4ca3-be83-a1d5d8305716"}
    ok = await client.post("/access/v1/evaluation", json=ASK, headers={**AUTH, **rid})
    assert ok.headers["x-request-id"] == rid["X-Request-ID"]
    bad = await client.post("/access/v1/evaluations", json={}, headers={**AUTH, **rid})
    assert (bad.status_code, bad.headers["x-request-id"]) == (400, rid["X-Request-ID"])
    refused = await client.post("/access/v1/evaluation", json=ASK, headers=rid)
    assert (refused.status_code, refused.headers["x-request-id"]) == (401, rid["X-Request-ID"])
    plain = await client.post("/access/v1/evaluation", json=ASK, headers=AUTH)
    assert "x-request-id" not in plain.headers


async def test_only_post_is_taken(client: httpx.AsyncClient) -> None:
    answer = await client.get("/access/v1/evaluation", headers=AUTH)
    assert answer.status_code == 405


# --- the evaluations (section 7) ----------------------------------------------------------
def three(semantic: str | None = None) -> dict[str, Any]:
    """The specification's example shape: one subject, action and context as defaults, three
    entries (allowed; rory, who has read only, denied; allowed)."""
    body: dict[str, Any] = {
        "subject": DANA,
        "action": MERGE,
        "context": {"time": "2024-05-31T15:22-07:00"},
        "evaluations": [
            {"resource": WIDGETS},
            {"subject": RORY, "resource": WIDGETS},
            {"resource": {"type": "gh", "id": "repo:acme/widgets"}},
        ],
    }
    if semantic is not None:
        body["options"] = {"evaluations_semantic": semantic}
    return body


async def test_evaluations_answer_in_request_order(client: httpx.AsyncClient) -> None:
    for semantic in (None, "execute_all"):
        answer = await evaluate(client, three(semantic), "evaluations")
        assert "decision" not in answer
        assert [e["decision"] for e in answer["evaluations"]] == [True, False, True]
        assert answer["evaluations"][1]["context"]["toolpass_decision"] == "deny"


async def test_deny_on_first_deny_stops_at_the_first_false(client: httpx.AsyncClient) -> None:
    answer = await evaluate(client, three("deny_on_first_deny"), "evaluations")
    assert [e["decision"] for e in answer["evaluations"]] == [True, False]


async def test_permit_on_first_permit_stops_at_the_first_true(
    client: httpx.AsyncClient, github: FakeGitHub
) -> None:
    body = three("permit_on_first_permit")
    body["evaluations"].insert(0, body["evaluations"].pop(1))  # rory (deny) first
    answer = await evaluate(client, body, "evaluations")
    assert [e["decision"] for e in answer["evaluations"]] == [False, True]


async def test_an_entry_overrides_the_defaults(client: httpx.AsyncClient) -> None:
    body = {
        "subject": RORY,
        "action": MERGE,
        "resource": WIDGETS,
        "evaluations": [{}, {"subject": DANA}, {"action": {"name": "contents.read"}}],
    }
    answer = await evaluate(client, body, "evaluations")
    assert [e["decision"] for e in answer["evaluations"]] == [False, True, True]


async def test_an_invalid_entry_is_its_own_closed_answer(client: httpx.AsyncClient) -> None:
    """The certification scenario's batch error: the second entry lacks a resource."""
    body = {
        "subject": DANA,
        "action": MERGE,
        "options": {"evaluations_semantic": "execute_all"},
        "evaluations": [{"resource": WIDGETS}, {}],
    }
    answer = await evaluate(client, body, "evaluations")
    first, second = answer["evaluations"]
    assert first["decision"] is True
    assert second == {
        "decision": False,
        "context": {
            "toolpass_decision": "unknown",
            "reason": "missing 'resource'",
            "error": {"status": 400, "message": "missing 'resource'"},
        },
    }
    body["options"] = {"evaluations_semantic": "deny_on_first_deny"}
    body["evaluations"].reverse()
    answer = await evaluate(client, body, "evaluations")
    assert [e["decision"] for e in answer["evaluations"]] == [False]


@pytest.mark.parametrize("evaluations", [None, []])
async def test_evaluations_without_entries_answer_as_one(
    client: httpx.AsyncClient, evaluations: list[Any] | None
) -> None:
    body = dict(ASK) if evaluations is None else {**ASK, "evaluations": evaluations}
    answer = await evaluate(client, body, "evaluations")
    assert answer["decision"] is True
    assert "evaluations" not in answer


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({**ASK, "evaluations": {}}, "'evaluations' must be an array"),
        ({**ASK, "evaluations": ["x"]}, "'evaluations[0]' must be an object"),
        ({**ASK, "options": []}, "'options' must be an object"),
        ({**ASK, "options": {"evaluations_semantic": "any"}}, "must be one of execute_all"),
        ({"subject": "dana", "evaluations": [ASK]}, "'subject' must be an object"),
        ({**ASK, "evaluations": [{}] * 201}, "more than 200 entries"),
    ],
)
async def test_a_malformed_batch_is_a_400(
    client: httpx.AsyncClient, body: Any, says: str, tp: Toolpass
) -> None:
    app = create_app(tp, {"api_keys": ["env:TP_TEST_KEY"], "max_body_bytes": 65536})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://tp.test") as big:
        answer = await big.post("/access/v1/evaluations", json=body, headers=AUTH)
    assert answer.status_code == 400
    assert says in answer.json()["error"]


async def test_each_semantic_answers_the_prefix_it_promises(client: httpx.AsyncClient) -> None:
    """Any sequence of allows and denies: the answers are the request's own, in order, up to
    and including the first that stops the semantic, and nothing after it. Every sequence up
    to five long, for each semantic (exhaustive, so no hypothesis here)."""
    stops = {"execute_all": None, "deny_on_first_deny": False, "permit_on_first_permit": True}
    for size in range(1, 6):
        for decisions in itertools.product((True, False), repeat=size):
            for semantic, stop in stops.items():
                entries = [{"subject": DANA if allow else RORY} for allow in decisions]
                body = {"action": MERGE, "resource": WIDGETS, "evaluations": entries}
                body["options"] = {"evaluations_semantic": semantic}
                answer = await evaluate(client, body, "evaluations")
                expected = list(decisions)
                if stop in expected:
                    expected = expected[: expected.index(stop) + 1]
                assert [e["decision"] for e in answer["evaluations"]] == expected


# --- the metadata (section 9) -------------------------------------------------------------
async def test_the_metadata_names_both_endpoints(client: httpx.AsyncClient) -> None:
    answer = await client.get("/.well-known/authzen-configuration")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == {
        "policy_decision_point": "http://tp.test",
        "access_evaluation_endpoint": "http://tp.test/access/v1/evaluation",
        "access_evaluations_endpoint": "http://tp.test/access/v1/evaluations",
    }


PUBLIC = "https://toolpass.example.com/pdp"


def metadata_for(base: str) -> dict[str, str]:
    return {
        "policy_decision_point": base,
        "access_evaluation_endpoint": base + "/access/v1/evaluation",
        "access_evaluations_endpoint": base + "/access/v1/evaluations",
    }


# The engine is only passed to the app: the metadata route never asks it.
@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    host=st.from_regex(r"[a-z0-9][a-z0-9.-]{0,40}(:[0-9]{1,5})?", fullmatch=True),
    scheme=st.sampled_from(["http", "https"]),
)
async def test_a_configured_public_url_is_advertised_whatever_the_host_header(
    tp: Toolpass, host: str, scheme: str
) -> None:
    app = create_app(tp, {"api_keys": ["env:TP_TEST_KEY"], "public_url": PUBLIC + "/"})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=f"{scheme}://tp.test") as c:
        forged = await c.get("/.well-known/authzen-configuration", headers={"Host": host})
    assert forged.json() == metadata_for(PUBLIC)


async def test_without_server_public_url_the_approvals_public_url_is_advertised(
    tp: Toolpass, tmp_path: Path
) -> None:
    server = {
        "api_keys": ["env:TP_TEST_KEY"],
        "approvals": {
            "api_keys": [{"name": "lee@example.com", "key": "env:TP_TEST_KEY2"}],
            "public_url": "https://approvals.example.com",
        },
    }
    app = create_app(tp, parse_server_config(server, store=f"sqlite:///{tmp_path}/state.db"))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://tp.test") as c:
        answer = await c.get("/.well-known/authzen-configuration", headers={"Host": "evil.test"})
    assert answer.json() == metadata_for("https://approvals.example.com")


# --- a real server process ----------------------------------------------------------------
def test_a_real_server_answers_authzen_beside_check(server: ServerProcess) -> None:
    url = server.url
    with httpx.Client(base_url=url, headers=AUTH, timeout=10) as http:
        meta = http.get("/.well-known/authzen-configuration").json()
        assert meta["policy_decision_point"] == url
        one = http.post(meta["access_evaluation_endpoint"], json=ASK)
        assert (one.status_code, one.json()["decision"]) == (200, True)
        many = http.post(meta["access_evaluations_endpoint"], json=three())
        assert [e["decision"] for e in many.json()["evaluations"]] == [True, False, True]
        check = {
            "user": "rory@example.com",
            "connection": "gh",
            "action": "pr.merge",
            "resource": "repo:acme/widgets",
        }
        assert http.post("/check", json=check).json()["decision"] == "deny"
        bad = http.post("/access/v1/evaluation", json={"subject": DANA})
        assert (bad.status_code, bad.json()) == (400, {"error": "missing 'action'"})
    entries = server.access_log(at_least=5)
    batch = next(e for e in entries if e["path"] == "/access/v1/evaluations")
    assert batch["decisions"] == ["allow", "deny", "allow"]
    assert batch["key"] == "env:TP_TEST_KEY"
    assert KEY not in server.stdout + server.stderr


def test_a_real_server_advertises_its_public_url_not_the_host_it_was_asked_by(
    tmp_path: Path, github: FakeGitHub, keys: None, start: Callable[..., ServerProcess]
) -> None:
    server = DEFAULT_SERVER + f"public_url: {PUBLIC}\n"
    config = write_config(tmp_path / "toolpass.yaml", github.api_url, server)
    url = start("-config", str(config), "--port", "0").url
    with httpx.Client(base_url=url, timeout=10) as http:
        forged = http.get("/.well-known/authzen-configuration", headers={"Host": "evil.test"})
    assert forged.json() == metadata_for(PUBLIC)
