"""The approval queue at its edges: a request swept from the store after it expired, a
request whose call was refused once denied, and a request read in another process (a second
queue on the same SQLite file, as an approvals page is) show what happened to them, with
their arguments written once, as in the process that made them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolpass import ApprovalPending, ApprovalQueue, Session, Toolkit, ToolRefused
from toolpass.adapting import Pending
from toolpass.store.sqlite import SQLiteStore

USER = "dana@example.com"
TTL = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclasses.dataclass
class Login:
    host: str
    password: str = dataclasses.field(repr=False)


_TOOLS: dict[int, tuple[ApprovalQueue, Any]] = {}


def deploy_of(queue: ApprovalQueue) -> Any:
    """``deploy``, a tool that always needs approval, waiting in ``queue`` (one per queue)."""
    if id(queue) in _TOOLS:
        return _TOOLS[id(queue)][1]

    def deploy(
        service: Any = None,
        repo: Any = None,
        note: Any = None,
        api_key: Any = None,
        body: Any = None,
        login: Any = None,
    ) -> str:
        return "deployed"

    kit = Toolkit(approver=queue, audit=[])
    tool = kit.secured_tool(deploy, effect="write", approve=True)
    _TOOLS[id(queue)] = (queue, tool)
    return tool


def ask(queue: ApprovalQueue, **arguments: Any) -> str:
    """The id of the request a call of ``deploy(**arguments)`` makes in ``queue``."""
    with Session(USER, id="s1").active(), pytest.raises(ApprovalPending) as waiting:
        deploy_of(queue)(**arguments)
    return waiting.value.request_id


def call_again(queue: ApprovalQueue, **arguments: Any) -> ToolRefused | str:
    with Session(USER, id="s1").active():
        try:
            return str(deploy_of(queue)(**arguments))
        except ToolRefused as refused:
            return refused


def test_wait_returns_expired_for_a_request_swept_from_the_store(tmp_path: Path) -> None:
    clock = Clock()
    queue = ApprovalQueue(ttl=TTL, clock=clock, store=SQLiteStore(tmp_path / "s.db", clock=clock))
    request_id = ask(queue, service="api")
    clock.now += 10 * TTL + 3600  # long past expiry: the store swept the record
    assert queue.wait(request_id, timeout=0.1).status == "expired"
    assert queue.state(request_id) == "expired"


async def test_wait_async_returns_expired_for_a_request_swept_from_the_store(
    tmp_path: Path,
) -> None:
    clock = Clock()
    queue = ApprovalQueue(ttl=TTL, clock=clock, store=SQLiteStore(tmp_path / "s.db", clock=clock))
    request_id = ask(queue, service="api")
    clock.now += 10 * TTL + 3600
    assert (await queue.wait_async(request_id, timeout=0.1)).status == "expired"


def test_a_denied_request_stays_denied_after_its_call_was_refused(tmp_path: Path) -> None:
    queue = ApprovalQueue(store=f"sqlite:///{tmp_path}/s.db")
    request_id = ask(queue, service="api")
    queue.deny(request_id, by="lee", reason="not today")
    refused = call_again(queue, service="api")
    assert isinstance(refused, ToolRefused)
    assert refused.code == "approval_denied"
    page = ApprovalQueue(store=f"sqlite:///{tmp_path}/s.db")
    for q in (queue, page):
        assert q.state(request_id) == "denied"
        waited = q.wait(request_id, timeout=0.1)
        assert (waited.status, waited.decided_by, waited.reason) == ("denied", "lee", "not today")


def test_a_request_whose_call_ran_says_so(tmp_path: Path) -> None:
    queue = ApprovalQueue(store=f"sqlite:///{tmp_path}/s.db")
    request_id = ask(queue, service="api")
    queue.approve(request_id, by="lee")
    assert call_again(queue, service="api") == "deployed"
    assert queue.state(request_id) == "spent"
    assert queue.wait(request_id, timeout=0.1).status == "spent"


def test_a_request_nobody_made_is_unknown(tmp_path: Path) -> None:
    queue = ApprovalQueue(store=f"sqlite:///{tmp_path}/s.db")
    assert queue.state("abc123") == "unknown"
    with pytest.raises(KeyError):
        queue.wait("abc123", timeout=0.1)


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "token", "password", "b"]), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(arguments=st.dictionaries(st.sampled_from(["repo", "note", "api_key", "body"]), values))
def test_another_process_shows_the_arguments_as_the_maker_does(
    tmp_path: Path, arguments: dict[str, Any]
) -> None:
    store = tmp_path / "shared.db"
    store.unlink(missing_ok=True)
    maker = ApprovalQueue(store=f"sqlite:///{store}")
    request_id = ask(maker, **arguments)
    page = ApprovalQueue(store=f"sqlite:///{store}")  # e.g. the approvals page
    here, there = maker.get(request_id), page.get(request_id)
    assert there.shown_arguments() == here.shown_arguments()
    assert there.to_dict()["arguments"] == here.to_dict()["arguments"]
    assert Pending.of(there, TTL).payload() == Pending.of(here, TTL).payload()


def test_a_field_kept_out_of_repr_is_shown_by_its_digest_in_every_process(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path}/s.db"
    maker = ApprovalQueue(store=store)
    request_id = ask(maker, login=Login("db.internal", "hunter2-secret"), repo="acme/api")
    there = ApprovalQueue(store=store).get(request_id)
    shown = there.shown_arguments()
    assert shown["repo"] == "'acme/api'"
    assert "hunter2" not in shown["login"]
    assert shown == maker.get(request_id).shown_arguments()
