"""``Standing(same_arguments=True)`` (the approvals page's "for calls with these same
arguments") covers the call the person saw and no other: a framework's tool call names only
the arguments the model gave, so a later call that adds one (``recursive=True`` beside the
same ``path``) is another call, which a person has not seen, and waits for one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass import ApprovalPending, ApprovalQueue, Toolkit
from toolpass.adapting import Guard, Rule, Traits
from toolpass.testing import ScriptedEngine
from toolpass.toolkit.standing import Standing

USER = "dana@example.com"
FIX = (
    "standing.py: StandingApproval gets `exact: bool = False`, set by grant() to "
    "standing.same_arguments; covers() also requires `not self.exact or set(arguments) == "
    "set(self.match)`"
)


def ran_or_pending(guard: Guard, arguments: dict[str, Any], conversation: str) -> str:
    """``"ran"``, or ``"pending <request id>"``."""
    try:
        return guard.run(USER, "rm", arguments, lambda: "ran", key=conversation)
    except ApprovalPending as waiting:
        return f"pending {waiting.request_id}"


names = st.sampled_from(["path", "recursive", "force", "mode", "dry_run"])
values = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4)


@pytest.mark.xfail(strict=True, reason=f"a hole in core's toolkit, not fixed here: {FIX}")
@settings(max_examples=60, deadline=None)
@given(
    approved=st.dictionaries(names, values, min_size=1, max_size=3),
    added=st.dictionaries(names, values, min_size=1, max_size=2),
)
def test_same_arguments_never_covers_a_call_with_an_argument_more(
    approved: dict[str, Any], added: dict[str, Any]
) -> None:
    later = {**added, **approved}  # the approved arguments, with the same values, and more
    if later.keys() == approved.keys():
        return
    queue = ApprovalQueue()
    guard = Guard(
        None,
        {"rm": Traits(effect="destructive", approve=True)},
        toolkit=Toolkit(approver=queue, audit=[]),
    )
    asked = ran_or_pending(guard, approved, "c1")
    queue.approve(asked.split()[1], by="lee@example.com", standing=Standing(same_arguments=True))
    assert ran_or_pending(guard, approved, "c2") == "ran"  # the call the person saw: covered
    assert ran_or_pending(guard, later, "c3").startswith("pending ")


FIX_KIND = (
    "standing.py: StandingApproval keeps the request's effect and connection (grant() copies "
    "them; from_dict reads them, None in an older record); covers() requires both equal"
)


@pytest.mark.xfail(strict=True, reason=f"a hole in core's toolkit, not fixed here: {FIX_KIND}")
@pytest.mark.parametrize(
    ("granted", "later"),
    [
        ({"effect": "write"}, {"effect": "destructive"}),
        ({"connection": "jira-test"}, {"connection": "jira-prod"}),
    ],
)
def test_a_standing_approval_never_covers_another_tool_of_the_same_name(
    tmp_path: Any, granted: dict[str, str], later: dict[str, str]
) -> None:
    """Two applications (two proxies, two agents) share the approvals store, each with a
    tool named ``deploy`` and no routing: approving one's calls for 30 minutes approves the
    calls the person was shown (that effect, that connection), not the other's."""
    store = f"sqlite:///{tmp_path}/state.db"

    engine = ScriptedEngine({(USER, "deploy", "env:x"): "allow"})

    def deploy_of(kind: dict[str, str]) -> tuple[ApprovalQueue, Guard]:
        queue = ApprovalQueue(store=store)
        rule = Rule(kind.get("connection", "ci"), "deploy", "env:{env}")
        traits = Traits(effect=kind.get("effect", "write"), approve=True, rule=rule)
        toolkit = Toolkit(approver=queue, audit=[])
        return queue, Guard(engine, {"deploy": traits}, toolkit=toolkit)

    def called(guard: Guard) -> str:
        try:
            return guard.run(USER, "deploy", {"env": "x"}, lambda: "ran", key="c")
        except ApprovalPending as waiting:
            return f"pending {waiting.request_id}"

    (queue, seen), (_, other) = deploy_of(granted), deploy_of(later)
    asked = called(seen)
    queue.approve(asked.split()[1], by="lee@example.com", standing=Standing(minutes=30))
    assert called(seen) == "ran"
    assert called(other).startswith("pending ")
