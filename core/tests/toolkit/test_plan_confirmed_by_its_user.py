"""The user confirms the plan drafted from their own request, and answers for a call outside
what they asked for, with the default queue (no ``self_approval``); any other reason still
needs another person."""

from __future__ import annotations

import pytest
from toolpass import ApprovalPending, ApprovalQueue, Session, TaskScope, Toolkit

USER = "dana@example.com"


def planner(request: str, tools: object) -> TaskScope:
    return TaskScope(tools={"read_file"}, summary="read the docs")


def kit_and_tools(queue: ApprovalQueue) -> tuple[Toolkit, object, object]:
    kit = Toolkit(audit=[lambda event: None], approver=queue, planner=planner)

    @kit.secured_tool(effect="read")
    def read_file(path: str) -> str:
        return f"contents of {path}"

    @kit.secured_tool(effect="destructive", approve=True)
    def delete_file(path: str) -> str:
        return "deleted"

    return kit, read_file, delete_file


def pending(call: object, *args: object) -> str:
    with pytest.raises(ApprovalPending) as info:
        call(*args)  # type: ignore[operator]
    return info.value.request_id


def test_the_user_confirms_their_own_plan_with_the_default_queue() -> None:
    queue = ApprovalQueue()
    _, read_file, _ = kit_and_tools(queue)
    with Session(USER, request="read the docs").active():
        asked = pending(read_file, "docs/a.md")
        queue.approve(asked, by=USER)
        assert read_file("docs/a.md") == "contents of docs/a.md"


def test_the_user_answers_for_a_call_outside_what_they_asked_for() -> None:
    queue = ApprovalQueue()
    kit, _, _ = kit_and_tools(queue)

    @kit.secured_tool(effect="write")
    def write_file(path: str) -> str:
        return "written"

    with Session(USER, request="read the docs", task=TaskScope(tools={"read_file"})).active():
        asked = pending(write_file, "notes.md")
        assert any(r.startswith("outside what you asked for") for r in queue.get(asked).reasons)
        queue.approve(asked, by=USER)
        assert write_file("notes.md") == "written"


def test_a_call_that_needs_approval_for_another_reason_still_needs_another_person() -> None:
    queue = ApprovalQueue()
    _, _, delete_file = kit_and_tools(queue)
    scope = TaskScope(tools={"delete_file"})
    with Session(USER, request="delete the draft", task=scope, confirm_task=True).active():
        asked = pending(delete_file, "draft.md")
        with pytest.raises(PermissionError):
            queue.approve(asked, by=USER)
        queue.approve(asked, by="lee@example.com")
        assert delete_file("draft.md") == "deleted"


def test_another_user_cannot_confirm_a_plan_as_its_user() -> None:
    queue = ApprovalQueue(approvers={"read": ["lee@example.com"]})
    _, read_file, _ = kit_and_tools(queue)
    with Session(USER, request="read the docs").active():
        asked = pending(read_file, "docs/a.md")
        with pytest.raises(PermissionError):
            queue.approve(asked, by="eve@example.com")  # neither its user nor its approver
        queue.approve(asked, by=USER)
        assert read_file("docs/a.md") == "contents of docs/a.md"
