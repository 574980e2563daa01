"""Approvals routed to the people who decide them: by effect, tool or connection, groups as
named lists of people; only a request's approvers decide it (its user may still withdraw
it), in every process sharing the store; listeners (notifiers) are told who they are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolpass import ApprovalPending, ApprovalQueue, Session, Toolkit, permission_check
from toolpass.testing import ScriptedEngine

USER = "dana@example.com"
ROUTES = {
    "destructive": ["ops-leads"],
    "tool:deploy": ["release"],
    "connection:github": ["gh-admins", "kim"],
}
GROUPS = {"ops-leads": ["lee", "kim"], "release": ["rae"], "gh-admins": ["gus", "ops-leads"]}


def tools_for(queue: ApprovalQueue) -> dict[str, Any]:
    kit = Toolkit(approver=queue, audit=[])
    engine = ScriptedEngine({(USER, "github", "pr.merge", "repo:acme/web"): "allow"})
    tool = kit.secured_tool
    return {
        "drop_table": tool(
            lambda: "dropped", name="drop_table", effect="destructive", approve=True
        ),
        "deploy": tool(lambda: "deployed", name="deploy", effect="write", approve=True),
        "note": tool(lambda: "noted", name="note", effect="write", approve=True),
        "merge": tool(
            lambda repo: f"merged {repo}",
            name="merge",
            effect="write",
            approve=True,
            authorize=permission_check(engine, "github", "pr.merge", "repo:{repo}"),
        ),
    }


def ask(queue: ApprovalQueue, tool: str, *args: object) -> str:
    tools = tools_for(queue)
    with Session(USER).active(), pytest.raises(ApprovalPending) as waiting:
        tools[tool](*args)
    return waiting.value.request_id


@pytest.fixture
def queue() -> ApprovalQueue:
    return ApprovalQueue(approvers=ROUTES, groups=GROUPS)


@pytest.mark.parametrize(
    ("tool", "args", "approvers"),
    [
        ("drop_table", (), ("lee", "kim")),  # by effect, through a group
        ("deploy", (), ("rae",)),  # by tool
        ("merge", ("acme/web",), ("gus", "lee", "kim")),  # by connection, nested groups
        ("note", (), ()),  # no rule: anyone but the user
    ],
)
def test_a_request_is_routed_to_its_approvers(
    queue: ApprovalQueue, tool: str, args: tuple[object, ...], approvers: tuple[str, ...]
) -> None:
    request_id = ask(queue, tool, *args)
    assert queue.get(request_id).approvers == approvers


def test_only_an_approver_decides(queue: ApprovalQueue) -> None:
    request_id = ask(queue, "drop_table")
    for outsider in ("eve", "rae", "Lee", "ops-leads"):  # names compare exactly, groups expand
        with pytest.raises(PermissionError, match="only its approvers"):
            queue.approve(request_id, by=outsider)
        with pytest.raises(PermissionError, match="only its approvers"):
            queue.deny(request_id, by=outsider, reason="no")
    assert queue.get(request_id).status == "pending"
    assert queue.approve(request_id, by="kim").status == "approved"


def test_the_user_may_withdraw_but_not_approve_their_own_routed_request() -> None:
    queue = ApprovalQueue(approvers={"destructive": [USER, "lee"]})
    request_id = ask(queue, "drop_table")
    with pytest.raises(PermissionError):
        queue.approve(request_id, by=USER)
    assert queue.deny(request_id, by=USER, reason="never mind").status == "denied"
    other = ApprovalQueue(approvers={"destructive": ["lee"]})
    assert other.deny(ask(other, "drop_table"), by=USER).status == "denied"


def test_a_request_without_a_rule_is_decided_by_anyone_but_its_user(queue: ApprovalQueue) -> None:
    request_id = ask(queue, "note")
    with pytest.raises(PermissionError):
        queue.approve(request_id, by=USER)
    assert queue.approve(request_id, by="eve").status == "approved"


def test_routing_holds_in_a_process_that_does_not_know_the_rules(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/state.db"
    request_id = ask(ApprovalQueue(store=store, approvers=ROUTES, groups=GROUPS), "deploy")
    page = ApprovalQueue(store=store)  # e.g. the approvals page, configured without rules
    assert page.get(request_id).approvers == ("rae",)
    with pytest.raises(PermissionError):
        page.approve(request_id, by="lee")
    assert page.approve(request_id, by="rae").decided_by == "rae"


def test_listeners_are_told_who_the_approvers_are(queue: ApprovalQueue) -> None:
    heard: list[tuple[str, ...]] = []
    queue.on_request(lambda request: heard.append(request.approvers))
    ask(queue, "drop_table")
    assert heard == [("lee", "kim")]


@pytest.mark.parametrize(
    ("approvers", "groups"),
    [
        ({"tool:": ["lee"]}, {}),
        ({"team:ops": ["lee"]}, {}),
        ({"": ["lee"]}, {}),
        ({"destructive": "ops-leads"}, {}),  # a string, not a list of names
        ({"destructive": ["lee", ""]}, {}),
        ({"destructive": ["ops"]}, {"ops": "lee"}),
    ],
)
def test_rules_that_name_nothing_are_refused(approvers: dict, groups: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError):
        ApprovalQueue(approvers=approvers, groups=groups)


names = st.text(st.characters(categories=("L", "N", "P")), min_size=1, max_size=8)


@given(approvers=st.lists(names, min_size=1, max_size=4, unique=True), by=names)
def test_an_approval_passes_exactly_when_its_decider_is_an_approver(
    approvers: list[str], by: str
) -> None:
    queue = ApprovalQueue(approvers={"destructive": approvers}, self_approval=True)
    request_id = ask(queue, "drop_table")
    if by in approvers:
        assert queue.approve(request_id, by=by).decided_by == by
    else:
        with pytest.raises(PermissionError):
            queue.approve(request_id, by=by)


@pytest.mark.parametrize(
    ("approvers", "groups"),
    [
        ({"destructive": []}, {}),  # an empty list
        ({"destructive": ["ops"]}, {"ops": []}),  # a group with nobody in it
        ({"destructive": ["a"]}, {"a": ["b"], "b": ["a"]}),  # groups naming only each other
        ({"destructive": ["ops", "ops2"]}, {"ops": [], "ops2": ["ops"]}),
    ],
)
def test_a_rule_that_reaches_nobody_never_means_anyone(approvers: dict, groups: dict) -> None:  # type: ignore[type-arg]
    """A matched rule naming nobody once its groups are expanded would fall back to "anyone
    but the user" (the meaning of no rule at all): it is refused when the queue is made."""
    with pytest.raises(ValueError, match="nobody"):
        ApprovalQueue(approvers=approvers, groups=groups)


def test_a_tool_that_declares_no_effect_is_routed_by_the_effect_it_was_recorded_doing(
    tmp_path: Path,
) -> None:
    """Held to an entitlements file, a tool that declares no effect does what the file
    recorded (destructive): its request goes to that effect's approvers, not to anyone."""
    recorded = tmp_path / "toolpass-tools.json"
    recorded.write_text('{"version": 1, "tools": {"wipe": {"effect": "destructive"}}}')
    queue = ApprovalQueue(approvers={"destructive": ["ops"]})
    kit = Toolkit(approver=queue, entitlements=recorded, audit=[])
    wipe = kit.tool(name="wipe", approve=True)(lambda: "wiped")
    with Session(USER).active(), pytest.raises(ApprovalPending) as waiting:
        wipe()
    request = queue.get(waiting.value.request_id)
    assert (request.effect, request.approvers) == ("destructive", ("ops",))
    with pytest.raises(PermissionError):
        queue.approve(request.id, by="eve")


@pytest.mark.parametrize("key", ["deploy", "effect:deploy", "Destructive", "destructive "])
def test_a_rule_for_an_effect_no_tool_can_have_is_refused(key: str) -> None:
    """A bare key is an effect: ``{"deploy": [...]}`` meant for the tool deploy would match
    nothing, so its requests would go to anyone; the toolkit refuses it, naming the fix."""
    queue = ApprovalQueue(approvers={key: ["rae"]})
    with pytest.raises(ValueError, match="not an effect"):
        Toolkit(approver=queue, audit=[])
    if (effect := key.removeprefix("effect:")).isidentifier():
        Toolkit(approver=queue, effects=[effect], audit=[])  # declared: fine
