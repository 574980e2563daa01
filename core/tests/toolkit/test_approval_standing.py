"""Standing approvals: one decision approves later calls of the same tool for the same user,
for this session, for N minutes, or for calls matching given arguments; bounded, listed,
revocable, held in the shared store, and named in the audit event of each call it lets run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass import ApprovalPending, ApprovalQueue, AuditEvent, Session, Toolkit, ToolRefused
from toolpass.toolkit.standing import Standing

USER = "dana@example.com"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Desk:
    """A toolkit whose deploy tool always needs approval, and what it audited."""

    def __init__(self, queue: ApprovalQueue) -> None:
        self.queue = queue
        self.events: list[AuditEvent] = []
        kit = Toolkit(approver=queue, audit=[self.events.append])
        self.deploy = kit.secured_tool(
            lambda env, version="1": f"deployed {version} to {env}",
            name="deploy",
            effect="write",
            approve=lambda env: f"deploying to {env}",
        )
        self.other = kit.secured_tool(lambda env: "other", name="other", approve=True)

    def call(self, session: Session, *args: Any, tool: str = "deploy") -> str:
        """The call's result, or ``"pending <id>"``."""
        with session.active():
            try:
                return str((self.deploy if tool == "deploy" else self.other)(*args))
            except ApprovalPending as waiting:
                return f"pending {waiting.request_id}"

    def approve_first(self, session: Session, *args: Any, standing: Standing) -> str:
        asked = self.call(session, *args)
        assert asked.startswith("pending ")
        request_id = asked.split()[1]
        self.queue.approve(request_id, by="lee", standing=standing)
        assert self.call(session, *args).startswith("deployed")
        return request_id


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def desk(clock: Clock) -> Desk:
    return Desk(ApprovalQueue(clock=clock, max_standing=3600))


def test_for_this_session_covers_its_later_calls_only(desk: Desk) -> None:
    session = Session(USER)
    desk.approve_first(session, "staging", standing=Standing(session=True))
    assert desk.call(session, "staging", "2") == "deployed 2 to staging"  # other arguments
    assert desk.call(session, "staging", "3") == "deployed 3 to staging"
    assert desk.call(Session(USER), "staging").startswith("pending")  # another session
    assert desk.call(Session("erin@example.com"), "staging").startswith("pending")
    assert desk.call(session, "staging", tool="other").startswith("pending")  # another tool


def test_a_call_needing_approval_for_another_reason_is_not_covered(desk: Desk) -> None:
    session = Session(USER)
    desk.approve_first(session, "staging", standing=Standing(session=True))
    assert desk.call(session, "prod").startswith("pending")  # "deploying to prod"


def test_for_n_minutes_covers_any_session_until_it_ends(desk: Desk, clock: Clock) -> None:
    desk.approve_first(Session(USER), "staging", standing=Standing(minutes=10))
    assert desk.call(Session(USER), "staging", "2") == "deployed 2 to staging"
    clock.now += 9 * 60
    assert desk.call(Session(USER), "staging", "3") == "deployed 3 to staging"
    clock.now += 2 * 60
    assert desk.call(Session(USER), "staging", "4").startswith("pending")
    assert desk.queue.standing() == []


def test_for_matching_arguments_covers_those_values_only(desk: Desk) -> None:
    session = Session(USER)
    desk.approve_first(session, "staging", "1", standing=Standing(match={"version": "1"}))
    assert desk.call(Session(USER), "staging", "1") == "deployed 1 to staging"
    assert desk.call(Session(USER), "staging", "2").startswith("pending")
    request_id = desk.call(session, "staging", "9").split()[1]
    with pytest.raises(ValueError, match="no argument"):
        desk.queue.approve(request_id, by="lee", standing=Standing(match={"versoin": "9"}))


def test_a_standing_approval_is_bounded(desk: Desk) -> None:
    session = Session(USER)
    request_id = desk.call(session, "staging").split()[1]
    with pytest.raises(ValueError, match="at most 60 minutes"):
        desk.queue.approve(request_id, by="lee", standing=Standing(minutes=61))
    assert desk.queue.get(request_id).status == "pending"  # nothing was approved
    desk.queue.approve(request_id, by="lee", standing=Standing(session=True))
    (grant,) = desk.queue.standing()
    assert grant.expires - grant.created == 3600  # a session's lasts the longest allowed
    with pytest.raises(ValueError):
        Standing()
    with pytest.raises(ValueError):
        Standing(minutes=0)


def test_standing_approvals_are_listed_and_revocable(desk: Desk) -> None:
    session = Session(USER)
    request_id = desk.approve_first(session, "staging", standing=Standing(session=True))
    (grant,) = desk.queue.standing()
    assert (grant.user, grant.tool, grant.by, grant.request_id) == (
        USER,
        "deploy",
        "lee",
        request_id,
    )
    assert grant.session_id == session.id
    assert "lee approved" in grant.describe()
    assert desk.queue.revoke(grant.id) == grant
    assert desk.queue.standing() == []
    assert desk.call(session, "staging").startswith("pending")
    with pytest.raises(KeyError):
        desk.queue.revoke(grant.id)


def test_the_audit_says_which_call_ran_under_a_standing_approval_and_whose(desk: Desk) -> None:
    session = Session(USER)
    request_id = desk.approve_first(session, "staging", standing=Standing(session=True))
    desk.call(session, "staging", "2")
    (grant,) = desk.queue.standing()
    ran = [e.to_dict() for e in desk.events if e.outcome == "ok"]
    assert ran[0]["approval_id"] == request_id
    assert (ran[0]["approved_by"], ran[0]["standing_approval"]) == ("lee", None)
    assert (ran[1]["approved_by"], ran[1]["standing_approval"]) == ("lee", grant.id)
    assert ran[1]["approval_id"] not in (None, request_id)  # its own request, decided by it


def test_a_pending_request_it_covers_runs_under_it_with_its_own_id(desk: Desk) -> None:
    session = Session(USER)
    earlier = desk.call(session, "staging", "2").split()[1]
    desk.approve_first(session, "staging", "1", standing=Standing(session=True))
    assert desk.call(session, "staging", "2") == "deployed 2 to staging"
    event = desk.events[-1].to_dict()
    assert event["approval_id"] == earlier
    assert event["standing_approval"] is not None


def test_the_self_approval_and_routing_rules_hold_for_a_standing_approval() -> None:
    desk = Desk(ApprovalQueue(approvers={"write": ["lee"]}))
    request_id = desk.call(Session(USER), "staging").split()[1]
    for person in (USER, "eve"):
        with pytest.raises(PermissionError):
            desk.queue.approve(request_id, by=person, standing=Standing(session=True))
    assert desk.queue.standing() == []


def test_a_standing_approval_holds_in_every_process_sharing_the_store(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/state.db"
    here, there = Desk(ApprovalQueue(store=store)), Desk(ApprovalQueue(store=store))
    here.approve_first(Session(USER), "staging", standing=Standing(minutes=5))
    assert there.call(Session(USER), "staging", "2") == "deployed 2 to staging"
    (grant,) = there.queue.standing()
    there.queue.revoke(grant.id)
    assert here.call(Session(USER), "staging", "3").startswith("pending")


def test_a_standing_approval_covers_only_calls_its_grantor_may_approve(tmp_path: Path) -> None:
    """A standing approval is matched by the tool's name; it never approves a call whose
    approvers do not include the person who granted it: another tool of the same name routed
    elsewhere (by effect or connection), or the same tool once the rules name others."""
    store = f"sqlite:///{tmp_path}/state.db"
    open_to_anyone = Desk(ApprovalQueue(store=store))  # no rule: lee may decide
    open_to_anyone.approve_first(Session(USER), "staging", standing=Standing(minutes=30))
    assert open_to_anyone.call(Session(USER), "staging", "2") == "deployed 2 to staging"

    routed = ApprovalQueue(store=store, approvers={"destructive": ["ops"]})
    kit = Toolkit(approver=routed, audit=[])
    deploy = kit.secured_tool(
        lambda env, version="1": f"deployed {version} to {env}",
        name="deploy",  # the same name, another tool: destructive, decided by ops only
        effect="destructive",
        approve=lambda env: f"deploying to {env}",
    )
    with Session(USER).active(), pytest.raises(ApprovalPending):
        deploy("staging", "3")

    now_routed = Desk(ApprovalQueue(store=store, approvers={"tool:deploy": ["rae"]}))
    assert now_routed.call(Session(USER), "staging", "4").startswith("pending")


def test_edited_arguments_approve_only_a_call_their_editor_may_approve(tmp_path: Path) -> None:
    """The same for an approval with edited arguments: it never runs a call of another tool
    of the same name that only others may decide."""
    store = f"sqlite:///{tmp_path}/state.db"
    session = Session(USER)
    open_to_anyone = Desk(ApprovalQueue(store=store))
    request_id = open_to_anyone.call(session, "prod", tool="other").split()[1]
    open_to_anyone.queue.edit(request_id, by="lee", arguments={"env": "staging"})
    routed = ApprovalQueue(store=store, approvers={"destructive": ["ops"]})
    other = Toolkit(approver=routed, audit=[]).secured_tool(
        lambda env: f"dropped {env}", name="other", effect="destructive", approve=True
    )
    with session.active(), pytest.raises(ApprovalPending):
        other("staging")
    assert open_to_anyone.call(session, "staging", tool="other") == "other"  # its own tool runs


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


def _typed(value: Any) -> Any:
    """``value`` with every scalar's type beside it, so 1, 1.0 and True differ."""
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    return (type(value).__name__, value)


@settings(max_examples=150, deadline=None)
@given(granted=json_values, later=json_values)
def test_a_matching_standing_approval_covers_only_the_same_typed_value(
    granted: Any, later: Any
) -> None:
    """``match`` never covers a value that only looks alike: 1 / 1.0 / True / "1", a
    dictionary with another key, a list nested otherwise, text in another normal form."""
    queue = ApprovalQueue()
    kit = Toolkit(approver=queue, audit=[])
    ran: list[Any] = []
    tool = kit.secured_tool(lambda x: ran.append(x), name="set", approve=True)
    session = Session(USER)
    with session.active(), pytest.raises(ApprovalPending) as waiting:
        tool(granted)
    queue.approve(waiting.value.request_id, by="lee", standing=Standing(match={"x": granted}))
    with session.active():
        tool(granted)
        try:
            tool(later)
        except ApprovalPending:
            return
    assert _typed(later) == _typed(granted)


def test_revoking_ends_what_a_standing_approval_approved_but_did_not_run(tmp_path: Path) -> None:
    """A call a standing approval let through that never reached its body (its credential
    could not be had) does not keep that approval: once the standing approval is revoked,
    the call asked again waits for a person, in every process sharing the store."""
    store = f"sqlite:///{tmp_path}/state.db"
    vault = {"up": True}

    def credentials(name: str) -> str:
        if not vault["up"]:
            raise ConnectionError("the vault is down")
        return "tok-0123456789"

    def deployer() -> tuple[ApprovalQueue, Any]:
        queue = ApprovalQueue(store=store)
        kit = Toolkit(approver=queue, credentials=credentials, audit=[])
        deploy = kit.secured_tool(
            lambda env, *, credential: f"deployed to {env}",
            name="deploy",
            approve=True,
            credential="bot",
        )
        return queue, deploy

    (here, deploy), (there, _) = deployer(), deployer()
    session = Session(USER)
    with session.active(), pytest.raises(ApprovalPending) as waiting:
        deploy("staging")
    here.approve(waiting.value.request_id, by="lee", standing=Standing(minutes=30))
    vault["up"] = False
    with session.active(), pytest.raises(ToolRefused):
        deploy("prod")  # covered, but its credential cannot be had: it never ran
    (grant,) = there.standing()
    there.revoke(grant.id)
    vault["up"] = True
    with session.active(), pytest.raises(ApprovalPending):
        deploy("prod")


def test_same_arguments_granted_in_another_process_covers_only_those(tmp_path: Path) -> None:
    """``Standing(same_arguments=True)`` given by a queue that reads the request from the
    store (as the approvals page does: each argument as written) covers the same call in any
    session, and no call with another value, even one written like it (``'2'`` and ``2``);
    it keeps the request's approvers, who may end it."""
    url = f"sqlite:///{tmp_path}/state.db"
    desk = Desk(ApprovalQueue(store=url, approvers={"tool:deploy": ["lee", "kim"]}))
    asked = desk.call(Session(USER, id="c1"), "prod", 2)
    page = ApprovalQueue(store=url)
    page.approve(asked.split()[1], by="lee", standing=Standing(same_arguments=True))
    (grant,) = page.standing()
    assert grant.match == {"env": "'prod'", "version": "2"}
    assert grant.approvers == ("lee", "kim")
    assert desk.call(Session(USER, id="c1"), "prod", 2) == "deployed 2 to prod"
    assert desk.call(Session(USER, id="c2"), "prod", 2) == "deployed 2 to prod"
    assert desk.call(Session(USER, id="c2"), "prod", "2").startswith("pending ")
    assert desk.call(Session(USER, id="c2"), "dev", 2).startswith("pending ")
    ran = [e for e in desk.events if e.outcome == "ok"]
    assert [e.standing_approval for e in ran] == [None, grant.id]
