"""Attacks on the task scope (#22, adversary V6): a plan confirmed for one thing must not
confirm another, the model's arguments must not become the plan, and a call a person denied
stays denied. Every test goes through the public API, sync and async."""

from collections.abc import Callable
from typing import Any

from toolpass import ApprovalPending, ApprovalQueue, Session, TaskScope, Toolkit
from toolpass.store import Store
from toolpass.toolkit.standing import Standing

from .conftest import USER, Drive


def tools(drive: Drive, kit: Toolkit, ran: list[str]) -> tuple[Any, Any]:
    def read_file(path: str) -> str:
        ran.append(f"read {path}")
        return "text"

    def delete_file(path: str) -> str:
        ran.append(f"delete {path}")
        return "deleted"

    return (
        drive.tool(kit, read_file, effect="read"),
        drive.tool(kit, delete_file, effect="destructive"),
    )


def asks(drive: Drive, tool: Any, *args: Any) -> None:
    assert isinstance(drive.refused(tool, *args), ApprovalPending)


def test_a_standing_approval_confirms_only_the_plan_it_was_given_for(
    drive: Drive, make_kit: Callable[..., Toolkit]
) -> None:
    """A person lets read_file run for an hour while confirming a read-only plan; a later
    session's plan (no summary, every tool) is not confirmed by it: it is shown again."""
    ran: list[str] = []
    queue = ApprovalQueue()
    plans = {"read": TaskScope(tools={"read_file"}), "clean up": TaskScope()}
    kit = make_kit(planner=lambda request, _: plans[request], approver=queue)
    read, delete = tools(drive, kit, ran)
    with Session(USER, request="read").active():
        asks(drive, read, "a")
        [request] = queue.pending()
        queue.approve(request.id, by="lee", standing=Standing(minutes=60))
        drive.call(read, "a")
    with Session(USER, request="clean up").active():
        asks(drive, read, "b")  # the new plan is the person's to confirm
        asks(drive, delete, "/")
    assert ran == ["read a"]


def test_a_plan_confirmed_for_one_request_does_not_cover_the_next_request_of_the_session(
    drive: Drive, make_kit: Callable[..., Toolkit], state: Store | None
) -> None:
    """A conversation keeps its session id (and store) across requests: the plan drafted
    and confirmed for "delete the old drafts" does not cover "summarise the docs", and a
    scope the application sets for a later request is not replaced by a kept one."""
    ran: list[str] = []
    queue = ApprovalQueue()

    def planner(request: str, _: Any) -> TaskScope:
        if "delete" in request:
            return TaskScope(tools={"read_file", "delete_file"}, summary="clean up")
        return TaskScope(tools={"read_file"}, summary="read")

    kit = make_kit(planner=planner, approver=queue, outside_task="refuse")
    read, delete = tools(drive, kit, ran)
    with Session(USER, id="conv", store=state, request="delete the old drafts").active():
        asks(drive, read, "a")
        [request] = queue.pending()
        queue.approve(request.id, by="lee")
        drive.call(read, "a")
        drive.call(delete, "drafts/old")
    with Session(USER, id="conv", store=state, request="summarise the docs").active():
        asks(drive, read, "docs")  # a new plan, confirmed anew
        [request] = queue.pending()
        queue.approve(request.id, by="lee")
        drive.call(read, "docs")
        assert drive.refused(delete, "docs").code == "outside_task"
    narrow = TaskScope(tools={"read_file"})
    with Session(USER, id="conv", store=state, request="delete x", task=narrow).active():
        assert drive.refused(delete, "x").code == "outside_task"
    assert ran == ["read a", "delete drafts/old", "read docs"]


def test_the_models_own_task_argument_never_becomes_the_plan(
    drive: Drive, make_kit: Callable[..., Toolkit]
) -> None:
    """A tool with an argument named ``task``: the model fills it with a scope allowing
    everything; the person edits another argument (the title) and keeps the rest as shown.
    That edit is of the call, not of the plan: the drafted plan holds."""
    ran: list[str] = []
    queue = ApprovalQueue()
    drafted = TaskScope(tools={"create_ticket"}, summary="file a ticket")
    kit = make_kit(planner=lambda *_: drafted, approver=queue, outside_task="refuse")

    def create_ticket(title: str, task: dict) -> str:  # type: ignore[type-arg]
        ran.append(f"ticket {title}")
        return "filed"

    ticket = drive.tool(kit, create_ticket, effect="write")
    _, delete = tools(drive, kit, ran)
    wide = TaskScope(summary="file a ticket").to_dict()  # tools None: any tool
    with Session(USER, request="file a ticket about the login bug").active():
        asks(drive, ticket, "bug", wide)
        [request] = queue.pending()
        queue.edit(request.id, by="lee", arguments={"title": "Login fails", "task": wide})
        drive.call(ticket, "Login fails", wide)
        refused = drive.refused(delete, "prod")
        assert refused.code == "outside_task"
    assert ran == ["ticket Login fails"]


def test_a_call_the_person_denied_stays_denied_once_another_call_confirmed_the_plan(
    drive: Drive, make_kit: Callable[..., Toolkit], state: Store | None
) -> None:
    """Two calls ask to confirm the same plan; the person approves the read and denies the
    delete ("keep that file"). The plan is confirmed, but the denied delete does not run."""
    ran: list[str] = []
    queue = ApprovalQueue()
    plan = TaskScope(tools={"read_file", "delete_file"}, summary="tidy the docs")
    read, delete = tools(drive, make_kit(planner=lambda *_: plan, approver=queue), ran)
    with Session(USER, id="tidy", store=state, request="tidy the docs").active():
        asks(drive, read, "docs/a")
        asks(drive, delete, "docs/keep")
        first, second = queue.pending()
        queue.approve(first.id, by="lee")
        queue.deny(second.id, by="lee", reason="keep that file")
        drive.call(read, "docs/a")
        refused = drive.refused(delete, "docs/keep")
        assert refused.code == "approval_denied"
        assert not isinstance(refused, ApprovalPending)
        drive.call(delete, "docs/old")  # another call of the confirmed plan runs
    assert ran == ["read docs/a", "delete docs/old"]


def test_a_denied_call_stays_denied_after_a_later_confirmation_too(
    drive: Drive, make_kit: Callable[..., Toolkit]
) -> None:
    ran: list[str] = []
    queue = ApprovalQueue()
    plan = TaskScope(tools={"read_file", "delete_file"}, summary="tidy the docs")
    read, delete = tools(drive, make_kit(planner=lambda *_: plan, approver=queue), ran)
    with Session(USER, request="tidy the docs").active():
        asks(drive, read, "docs/a")
        asks(drive, delete, "docs/keep")
        first, second = queue.pending()
        queue.approve(first.id, by="lee")
        drive.call(read, "docs/a")  # the plan is confirmed here
        queue.deny(second.id, by="lee", reason="keep that file")
        with_reason = drive.refused(delete, "docs/keep")
        assert with_reason.code == "approval_denied"
    assert ran == ["read docs/a"]


def test_many_calls_asking_at_once_cannot_make_the_session_forget_a_denied_one(
    drive: Drive, make_kit: Callable[..., Toolkit], state: Store | None
) -> None:
    """The session remembers its last 16 requests to confirm the plan. A model that asks with
    the dangerous call first and then with 16 harmless ones would push it out, and the denied
    call would run once the plan is confirmed: past 16 unanswered, a call is not asked."""
    ran: list[str] = []
    queue = ApprovalQueue()
    plan = TaskScope(tools={"read_file", "delete_file"}, summary="tidy the docs")
    read, delete = tools(drive, make_kit(planner=lambda *_: plan, approver=queue), ran)
    with Session(USER, id="flood", store=state, request="tidy the docs").active():
        asks(drive, delete, "docs/keep")
        for i in range(15):
            asks(drive, read, f"docs/{i}")
        assert drive.refused(read, "docs/16").code == "limit_exceeded"
        denied, first, *_ = queue.pending()
        queue.deny(denied.id, by="lee", reason="keep that file")
        queue.approve(first.id, by="lee")
        assert drive.refused(delete, "docs/keep").code == "approval_denied"
    assert "delete docs/keep" not in ran
