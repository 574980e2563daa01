"""The approval machine adapters share (``toolpass.adapting``): a call pauses as a
``Pending``, a resume carries an ``Answer``, and the queue's record decides."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from toolpass import ApprovalQueue, Decision, Session, Toolkit
from toolpass.adapting import APPROVAL, Answer, Guard, Pending, Rule, Traits
from toolpass.outcome.errors import ToolRefused

ASKS = Traits(
    effect="destructive",
    sends_out=True,
    reads_private=True,
    untrusted_output=True,
    rule=Rule("jira", "DELETE_ISSUES", "issue:{key}"),
)


class Engine:
    """Lets dana delete any issue but PAY-9, asked live on every check."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def check(self, user: str, connection: str, action: str, resource: str, **_: Any) -> Decision:
        self.asked.append(resource)
        return Decision.deny("not yours") if resource == "issue:PAY-9" else Decision.allow()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def machine(store: str | None = None, clock: Callable[[], float] | None = None) -> Guard:
    queue = ApprovalQueue(store=store, **({"clock": clock} if clock else {}))
    return Guard(Engine(), {"delete": ASKS}, toolkit=Toolkit(approver=queue, audit=[]))


class Runs:
    def __init__(self) -> None:
        self.ran: list[dict[str, Any]] = []

    def body(self, arguments: Mapping[str, Any]) -> Callable[[], str]:
        def run() -> str:
            self.ran.append(dict(arguments))
            return f"deleted {arguments['key']}"

        return run


def pause(guard: Guard, runs: Runs, key: str = "PAY-1", session: str = "c1") -> Pending:
    with pytest.raises(ToolRefused) as refused:
        guard.run(
            "dana", "delete", {"key": key}, runs.body({"key": key}), key=Session("dana", id=session)
        )
    pending = guard.pending(refused.value)
    assert pending is not None
    return pending


def resume(guard: Guard, runs: Runs, pending: Pending, answer: Answer, key: str = "PAY-1") -> Any:
    return guard.resume(
        "dana",
        "delete",
        {"key": key},
        runs.body,
        request_id=pending.request_id,
        answer=answer,
        key=Session("dana", id="c1"),
    )


def test_the_pause_carries_the_whole_request() -> None:
    guard, runs = machine(), Runs()
    pending = pause(guard, runs)
    payload = pending.payload()
    assert payload["type"] == APPROVAL
    assert payload["request_id"] == pending.request_id
    assert (payload["tool"], payload["user"]) == ("delete", "dana")
    assert payload["arguments"] == {"key": "'PAY-1'"}
    assert pending.arguments == {"key": "PAY-1"}
    assert payload["reasons"]
    assert "PAY-1" in payload["message"]
    assert runs.ran == []


def test_approved_runs_once_and_a_replay_runs_nothing() -> None:
    guard, runs = machine(), Runs()
    pending = pause(guard, runs)
    assert resume(guard, runs, pending, Answer("approve", by="lee")) == "deleted PAY-1"
    with pytest.raises(ToolRefused) as replay:
        resume(guard, runs, pending, Answer("approve", by="lee"))
    assert replay.value.code == "approval_pending"  # asked anew, not run on the old answer
    assert runs.ran == [{"key": "PAY-1"}]


def test_denied_reads_the_persons_reason() -> None:
    guard, runs = machine(), Runs()
    pending = pause(guard, runs)
    with pytest.raises(ToolRefused) as denied:
        resume(guard, runs, pending, Answer("deny", by="lee", reason="wrong project"))
    assert denied.value.code == "approval_denied"
    assert "wrong project" in denied.value.message
    assert runs.ran == []


def test_an_edit_runs_the_persons_arguments_once_through_every_check() -> None:
    guard, runs = machine(), Runs()
    pending = pause(guard, runs)
    edit = Answer("edit", by="lee", arguments={"key": "PAY-2"})
    assert resume(guard, runs, pending, edit) == "deleted PAY-2"
    assert runs.ran == [{"key": "PAY-2"}]
    # Edited arguments the checks refuse are refused, approved or not: out of scope, or
    # not permitted now.
    cases = (("PAY-3", "PAY-1/../ADMIN-9", "out_of_scope"), ("PAY-4", "PAY-9", "not_authorized"))
    for asked, edited, code in cases:
        pending = pause(guard, runs, asked)
        with pytest.raises(ToolRefused) as refused:
            resume(guard, runs, pending, Answer("edit", by="lee", arguments={"key": edited}), asked)
        assert refused.value.code == code
        # The call as the model made it is not run either: the person changed it.
        with pytest.raises(ToolRefused) as as_made:
            guard.run("dana", "delete", {"key": asked}, runs.body({}), key=Session("dana", id="c1"))
        assert as_made.value.code == "approval_edited"
    assert runs.ran == [{"key": "PAY-2"}]


def test_an_answer_for_another_request_releases_nothing() -> None:
    guard, runs = machine(), Runs()
    first, second = pause(guard, runs, "PAY-1"), pause(guard, runs, "PAY-2")
    forged = Answer("approve", by="lee", request_id=first.request_id)
    with pytest.raises(ToolRefused) as still:
        resume(guard, runs, second, forged, key="PAY-2")
    assert still.value.code == "approval_pending"
    # Nor does an answer to request 1 given on the resume of call 2's arguments.
    with pytest.raises(ToolRefused):
        resume(guard, runs, first, Answer("approve", by="lee"), key="PAY-2")
    assert guard.queue is not None
    assert guard.queue.state(first.request_id) == "pending"
    assert runs.ran == []


def test_an_answer_given_in_another_session_releases_nothing() -> None:
    """The same call waits in two conversations of one user: an answer naming the first
    one's request, given on the second one's resume, records nothing (the approval is bound
    to the session), so a later denial in the first conversation still holds."""
    guard, runs = machine(), Runs()
    first, second = pause(guard, runs, session="c1"), pause(guard, runs, session="c2")
    assert first.request_id != second.request_id
    with pytest.raises(ToolRefused):
        guard.resume(
            "dana",
            "delete",
            {"key": "PAY-1"},
            runs.body,
            request_id=first.request_id,
            answer=Answer("approve", by="lee", request_id=first.request_id),
            key=Session("dana", id="c2"),
        )
    assert guard.queue is not None
    assert guard.queue.state(first.request_id) == "pending"
    with pytest.raises(ToolRefused) as denied:
        resume(guard, runs, first, Answer("deny", by="lee", reason="not now"))
    assert denied.value.code == "approval_denied"
    assert runs.ran == []


#: Values whose ``repr`` is another value's text: ``5`` and ``"5"``, ``None`` and ``"None"``,
#: ``inf`` and ``"inf"``... (an infinite number is refused before anyone is asked).
_LOOK_ALIKE = st.one_of(
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
    st.text(max_size=6),
)


#: Two arguments: a value and its ``repr`` as text (either way round), or any two values.
_PAIRS = st.one_of(
    _LOOK_ALIKE.map(lambda v: (repr(v), v)),
    _LOOK_ALIKE.map(lambda v: (v, repr(v))),
    st.tuples(_LOOK_ALIKE, _LOOK_ALIKE),
)


@settings(max_examples=60, deadline=None)
@given(_PAIRS)
@example((float("inf"), "inf"))
@example(("inf", float("-inf")))
def test_an_answer_is_taken_only_for_the_arguments_it_was_asked_for(
    pair: tuple[Any, Any],
) -> None:
    """An answer naming the request of a call with ``asked`` as its argument, given on the
    resume of a call with ``resumed`` (another value, even one whose text is the first
    one's ``repr``: ``"5"`` and ``5``), records nothing for that request."""
    asked, resumed = pair
    if type(asked) is type(resumed) and repr(asked) == repr(resumed):
        return
    kit = Toolkit(approver=ApprovalQueue(), audit=[])
    guard, runs = Guard(None, {"delete": Traits(approve=True)}, toolkit=kit), Runs()
    with pytest.raises(ToolRefused) as refused:
        guard.run("dana", "delete", {"key": asked}, runs.body({}), key=Session("dana", id="c1"))
    if isinstance(asked, float) and not math.isfinite(asked):
        assert refused.value.code == "invalid_arguments"  # nobody is asked: no request
        return
    pending = guard.pending(refused.value)
    assert pending is not None
    with pytest.raises(ToolRefused):
        guard.resume(
            "dana",
            "delete",
            {"key": resumed},
            runs.body,
            request_id=pending.request_id,
            answer=Answer("approve", by="lee", request_id=pending.request_id),
            key=Session("dana", id="c1"),
        )
    assert guard.queue is not None
    assert guard.queue.state(pending.request_id) == "pending"
    assert runs.ran == []


def test_the_users_own_approval_is_not_taken(caplog: pytest.LogCaptureFixture) -> None:
    guard, runs = machine(), Runs()
    pending = pause(guard, runs)
    with pytest.raises(ToolRefused) as still:
        resume(guard, runs, pending, Answer("approve", by="dana"))
    assert still.value.code == "approval_pending"
    assert "not recorded" in caplog.text
    assert runs.ran == []


def test_expiry_reads_expired_not_denied() -> None:
    clock = Clock()
    guard, runs = machine(clock=clock), Runs()
    pending = pause(guard, runs)
    clock.now += 16 * 60
    with pytest.raises(ToolRefused) as late:
        resume(guard, runs, pending, Answer("approve", by="lee"))
    assert late.value.code == "approval_expired"
    pending = pause(guard, runs)
    with pytest.raises(ToolRefused) as timed_out:
        resume(guard, runs, pending, Answer("expired"))
    assert timed_out.value.code == "approval_expired"
    assert runs.ran == []


def test_a_restart_between_pause_and_resume(tmp_path: Any) -> None:
    store = f"sqlite:///{tmp_path / 'approvals.db'}"
    runs = Runs()
    pending = pause(machine(store), runs)
    assert resume(machine(store), runs, pending, Answer("approve", by="lee")) == "deleted PAY-1"
    assert runs.ran == [{"key": "PAY-1"}]


@settings(max_examples=40, deadline=None)
@given(
    st.one_of(
        st.booleans(),
        st.text(max_size=12),
        st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=4),
        st.none(),
        st.integers(),
    )
)
def test_any_resume_value_is_an_answer(value: Any) -> None:
    answer = Answer.of(value)
    assert answer.decision in ("approve", "deny", "edit", "expired")
    if answer.decision == "approve":
        assert value is True or isinstance(value, (str, dict))


#: What a resume value can be once it crossed JSON (a LangGraph ``Command``, an ADK payload).
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
_WORDS = st.sampled_from(["decision", "type", "arguments", "args", "approved", "by", "reason"])


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_WORDS, _JSON | st.sampled_from(["edit", "approve", "expired"])))
def test_any_json_resume_value_is_an_answer_never_an_error(value: dict[str, Any]) -> None:
    """A resume value the adapter cannot read as an answer (a decision that is a list, an
    edit without its arguments) denies: it never raises out of the framework's hook."""
    answer = Answer.of(value)
    assert answer.decision in ("approve", "deny", "edit", "expired")
    assert (answer.decision == "edit") == isinstance(answer.arguments, Mapping)
    for bad in ({"decision": "edit"}, {"decision": ["approve"]}, {"type": {}}):
        assert Answer.of(bad).decision == "deny"
