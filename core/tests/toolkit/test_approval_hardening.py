"""Approvals hardened (#18): a framework tool's request shows its arguments wherever a person
is asked, and nobody approves a call made for themselves unless the queue allows it."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass import ApprovalQueue, Session, Toolkit, ToolRefused
from toolpass.adapting import Guard, Traits

from .conftest import USER

#: A tool that sends out, declared as reading private and untrusted data: every call asks.
SEND = Traits(effect="write", sends_out=True, reads_private=True, untrusted_output=True)


def ask(queue: ApprovalQueue, arguments: dict[str, Any], user: str = USER) -> Any:
    """A framework tool's call through a Guard (as every adapter makes it): the request."""
    guard = Guard(None, {"send_mail": SEND}, toolkit=Toolkit(approver=queue, audit=[]))
    with Session(user).active(), pytest.raises(ToolRefused) as refused:
        guard.run(user, "send_mail", arguments, lambda: "sent")
    assert refused.value.code == "approval_pending"
    return queue.get(refused.value.request_id)  # type: ignore[attr-defined]


def test_a_framework_tools_request_shows_its_arguments() -> None:
    queue = ApprovalQueue()
    request = ask(queue, {"to": "eve@evil.example", "body": "the customer list"})
    assert "to = 'eve@evil.example'" in request.preview
    assert "body = 'the customer list'" in request.preview
    assert "eve@evil.example" in request.describe()
    assert request.to_dict()["preview"] == request.preview


names = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True).filter(
    lambda n: not any(w in n for w in ("key", "token", "secret", "pass", "auth", "cred"))
)
values = st.one_of(
    st.integers(), st.text(max_size=40), st.lists(st.integers(), max_size=3), st.booleans()
)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(names, values, min_size=1, max_size=5))
def test_every_argument_of_a_framework_tool_is_shown(arguments: dict[str, Any]) -> None:
    request = ask(ApprovalQueue(), arguments)
    for name, value in arguments.items():
        assert f"{name} = {value!r}" in request.preview or "not shown" in request.preview


# Self-approval.


def test_nobody_approves_a_call_made_for_themselves() -> None:
    queue = ApprovalQueue()
    request = ask(queue, {"to": "bills@utility.example"})
    for me in (USER, USER.upper(), f" {USER} ", f"Dana <{USER}>"):
        with pytest.raises(PermissionError, match="made for themselves"):
            queue.approve(request.id, by=me)
    assert queue.get(request.id).status == "pending"
    queue.deny(request.id, by=USER, reason="not mine after all")  # refusing is always safe
    assert queue.get(request.id).status == "denied"


def test_another_person_approves() -> None:
    queue = ApprovalQueue()
    request = ask(queue, {"to": "bills@utility.example"})
    assert queue.approve(request.id, by="lee@example.com").status == "approved"


def test_a_queue_may_allow_self_approval() -> None:
    queue = ApprovalQueue(self_approval=True)
    request = ask(queue, {"to": "bills@utility.example"})
    assert queue.approve(request.id, by=USER).status == "approved"


def test_self_approval_is_true_or_false() -> None:
    with pytest.raises(TypeError):
        ApprovalQueue(self_approval="no")  # type: ignore[arg-type]
