"""Step 7, approval: a call waits for a person's decision, bound to exactly what was shown,
and runs once; or any callable approver decides on the spot."""

import asyncio
import threading

import pytest
from toolpass import ApprovalPending, ApprovalQueue, ApprovalRequest, Session, ToolCall, ToolRefused
from toolpass.toolkit.approval import printable

from .conftest import USER

LEAD = "lead@example.com"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def queue(state):
    """A queue keeping its requests in memory, and one keeping them in SQLite."""
    return ApprovalQueue(store=state)


@pytest.fixture
def merge(drive, make_kit, queue):
    """A tool that always needs approval; ``merge.runs`` lists the calls that ran."""
    runs: list[tuple[str, int]] = []
    kit = make_kit(approver=queue)
    tool = drive.tool(
        kit,
        lambda repo, pr: runs.append((repo, pr)) or f"merged {pr}",
        name="merge_pr",
        effect="write",
        approve=True,
    )
    tool.runs = runs
    tool.kit = kit
    return tool


def test_a_call_waits_for_approval(drive, session, events, queue, merge):
    pending = drive.refused(merge, "acme/app", 7)

    assert isinstance(pending, ApprovalPending)
    assert pending.code == "approval_pending"
    assert "Tell the user" in pending.message
    assert "call the tool again with exactly the same arguments" in pending.message
    assert pending.request_id in pending.message
    assert merge.runs == []
    [event] = events
    assert (event.code, event.approval_id) == ("approval_pending", pending.request_id)
    assert event.reasons == ["this tool always needs approval"]
    [request] = queue.pending()
    assert request.id == pending.request_id
    assert queue.get(request.id) is request


def test_retrying_while_pending_does_not_make_a_new_request(drive, session, queue, merge):
    heard: list[ApprovalRequest] = []
    queue.on_request(heard.append)
    first = drive.refused(merge, "acme/app", 7)
    second = drive.refused(merge, "acme/app", 7)
    assert first.request_id == second.request_id
    assert [r.id for r in heard] == [first.request_id]


def test_describe_says_who_what_why_and_shows_a_preview(drive, session, queue, merge):
    heard: list[ApprovalRequest] = []

    @queue.on_request
    def listener(request: ApprovalRequest) -> None:
        heard.append(request)

    assert listener in queue.listeners
    drive.refused(merge, "acme/app", 7)
    [request] = heard
    text = request.describe()
    assert USER in text
    assert "merge_pr (write)" in text
    assert "this tool always needs approval" in text
    assert "repo = 'acme/app'" in text
    assert "pr = 7" in text
    assert request.id in text
    assert (request.user, request.tool, request.arguments) == (
        USER,
        "merge_pr",
        {"repo": "acme/app", "pr": 7},
    )


def test_a_failing_listener_does_not_change_the_outcome(drive, session, queue, merge):
    heard = []

    def broken(request: ApprovalRequest) -> None:
        raise RuntimeError("pager is down")

    queue.on_request(broken)
    queue.on_request(heard.append)
    assert drive.refused(merge, "acme/app", 7).code == "approval_pending"
    assert len(heard) == 1


def test_approve_runs_the_call_once(drive, session, events, queue, merge):
    pending = drive.refused(merge, "acme/app", 7)
    request = queue.approve(pending.request_id, by=LEAD)
    assert (request.status, request.decided_by) == ("approved", LEAD)
    assert queue.pending() == []

    assert drive.call(merge, "acme/app", 7) == "merged 7"
    assert merge.runs == [("acme/app", 7)]
    assert request.status == "spent"
    assert events[-1].approval_id == pending.request_id
    assert events[-1].outcome == "ok"

    again = drive.refused(merge, "acme/app", 7)  # the approval ran its call; a new one is due
    assert again.code == "approval_pending"
    assert again.request_id != pending.request_id
    assert merge.runs == [("acme/app", 7)]


def test_deny_refuses_the_retry_with_the_reason(drive, session, queue, merge):
    pending = drive.refused(merge, "acme/app", 7)
    queue.deny(pending.request_id, by=LEAD, reason="freeze until Monday")
    refusal = drive.refused(merge, "acme/app", 7)
    assert refusal.code == "approval_denied"
    assert LEAD in refusal.message
    assert "freeze until Monday" in refusal.message
    assert "Do not retry" in refusal.message
    assert merge.runs == []


def test_deciding_needs_a_name_an_existing_request_and_happens_once(drive, session, queue, merge):
    pending = drive.refused(merge, "acme/app", 7)
    with pytest.raises(ValueError, match="who"):
        queue.approve(pending.request_id, by="")
    with pytest.raises(KeyError):
        queue.approve("no-such-id", by=LEAD)
    queue.deny(pending.request_id, by=LEAD)
    with pytest.raises(ValueError, match="already denied"):
        queue.approve(pending.request_id, by=LEAD)


# An approval is bound to the session, the tool, the exact arguments, reasons and preview.


def test_an_approval_covers_only_the_exact_arguments(drive, session, queue, merge):
    pending = drive.refused(merge, "acme/app", 7)
    queue.approve(pending.request_id, by=LEAD)
    other = drive.refused(merge, "acme/app", 8)
    assert other.code == "approval_pending"
    assert other.request_id != pending.request_id
    assert drive.refused(merge, "acme/app", pr=8).request_id == other.request_id
    assert drive.call(merge, pr=7, repo="acme/app") == "merged 7"  # same values, other spelling
    assert merge.runs == [("acme/app", 7)]


def test_equal_values_of_another_type_need_their_own_approval(drive, make_kit, session, queue):
    kit = make_kit(approver=queue)
    tool = drive.tool(kit, lambda labels: "ok", approve=True)
    pending = drive.refused(tool, {"a": 1, "b": [1, 2]})
    queue.approve(pending.request_id, by=LEAD)
    assert drive.refused(tool, {"a": True, "b": [1, 2]}).code == "approval_pending"  # True == 1
    assert drive.refused(tool, {"a": 1.0, "b": [1, 2]}).code == "approval_pending"  # 1.0 == 1
    assert drive.refused(tool, {"a": 1, "b": (1, 2)}).code == "approval_pending"
    assert drive.refused(tool, {"a": 1, "b": [2, 1]}).code == "approval_pending"
    assert drive.call(tool, {"a": 1, "b": [1, 2]}) == "ok"


def test_an_approval_belongs_to_its_session(drive, queue, merge):
    with Session(USER).active():
        pending = drive.refused(merge, "acme/app", 7)
    queue.approve(pending.request_id, by=LEAD)
    with Session(USER).active():  # same user, another session
        assert drive.refused(merge, "acme/app", 7).code == "approval_pending"
    assert merge.runs == []


def test_an_approval_belongs_to_its_tool(drive, make_kit, session, queue):
    kit = make_kit(approver=queue)
    ran = []

    def make(name: str):  # one inner function under two names, as an adapter would
        def call(target: str) -> str:
            ran.append(name)
            return name

        return drive.tool(kit, call, name=name, approve=True)

    archive, delete = make("archive"), make("delete")
    pending = drive.refused(archive, "acme/app")
    queue.approve(pending.request_id, by=LEAD)
    assert drive.refused(delete, "acme/app").code == "approval_pending"
    assert ran == []
    assert drive.call(archive, "acme/app") == "archive"


def test_an_approval_belongs_to_the_preview_shown(drive, make_kit, session, queue):
    kit = make_kit(approver=queue)
    shown = {"text": "diff v1"}
    tool = drive.tool(
        kit,
        lambda repo: "deployed",
        approve=True,
        preview=lambda call: f"{call.arguments['repo']}: {shown['text']}",
    )
    pending = drive.refused(tool, "acme/app")
    assert queue.get(pending.request_id).preview.endswith("acme/app: diff v1")
    queue.approve(pending.request_id, by=LEAD)
    shown["text"] = "diff v2"  # what would run is no longer what the person saw
    changed = drive.refused(tool, "acme/app")
    assert changed.code == "approval_pending"
    assert changed.request_id != pending.request_id


def test_a_tool_s_own_preview_never_hides_an_argument(drive, make_kit, session, queue):
    """A tool's own preview may leave arguments out; the person still sees every one (each
    as the standard preview shows it), before the tool's text, wherever they are asked."""
    kit = make_kit(approver=queue)
    tool = drive.tool(
        kit, lambda repo, ref: "deployed", approve=True, preview=lambda call: "deploy acme/app"
    )
    pending = drive.refused(tool, "acme/app", "6.6.6-backdoor")
    request = queue.get(pending.request_id)
    for shown in (request.preview, request.describe(), request.to_dict()["preview"]):
        assert "ref = '6.6.6-backdoor'" in shown
        assert "repo = 'acme/app'" in shown
        assert shown.index("ref = ") < shown.index("deploy acme/app")


def test_a_tool_s_own_preview_writes_no_invisible_character(drive, make_kit, session, queue):
    """A tool's own preview (which may quote an argument) keeps its lines, but no character
    a terminal or browser would not show as itself (an ANSI escape that erases a line, a
    bidi override that reverses text) is written raw, as in the standard preview."""
    kit = make_kit(approver=queue)
    tool = drive.tool(
        kit,
        lambda title: "opened",
        approve=True,
        preview=lambda call: f"open issue\ntitle: {call.arguments['title']}",
    )
    hostile = "fix typo\x1b[2K\r\u202edelete everything\u2028Request id: 000000000000"
    pending = drive.refused(tool, hostile)
    preview = queue.get(pending.request_id).preview
    assert preview.endswith("open issue\ntitle: " + printable(hostile))
    assert preview.count("\n") == 3  # the argument's line, the label, the tool's two lines
    assert all(c.isprintable() for c in preview.replace("\n", ""))


def test_an_approval_belongs_to_its_reasons(drive, make_kit, session, queue):
    kit = make_kit(approver=queue)
    reason = {"text": "production deploy"}
    tool = drive.tool(kit, lambda env: "deployed", approve=lambda call: reason["text"])
    pending = drive.refused(tool, "prod")
    assert queue.get(pending.request_id).reasons == ("production deploy",)
    queue.approve(pending.request_id, by=LEAD)
    reason["text"] = "production deploy during a freeze"
    assert drive.refused(tool, "prod").request_id != pending.request_id


# Spent only when the body is reached.


def test_a_credential_briefly_unavailable_does_not_cost_the_approval(
    drive, make_kit, session, queue
):
    vault = {"up": False}

    def credentials(name: str) -> str:
        if not vault["up"]:
            raise ConnectionError("vault sealed")
        return "ghp_0123456789abcdef"

    kit = make_kit(approver=queue, credentials=credentials)
    runs = []
    tool = drive.tool(
        kit,
        lambda repo, *, credential: runs.append(repo) or "merged",
        approve=True,
        credential="bot",
    )
    pending = drive.refused(tool, "acme/app")
    queue.approve(pending.request_id, by=LEAD)
    assert drive.refused(tool, "acme/app").code == "credential_unavailable"
    assert drive.refused(tool, "acme/app").code == "credential_unavailable"
    vault["up"] = True
    assert drive.call(tool, "acme/app") == "merged"
    assert runs == ["acme/app"]
    assert drive.refused(tool, "acme/app").code == "approval_pending"


def test_a_body_that_raises_has_spent_its_approval(drive, make_kit, session, queue):
    def body(repo: str) -> None:
        raise RuntimeError("merge conflict")

    tool = drive.tool(make_kit(approver=queue), body, approve=True)
    pending = drive.refused(tool, "acme/app")
    queue.approve(pending.request_id, by=LEAD)
    with pytest.raises(RuntimeError, match="merge conflict"):
        drive.call(tool, "acme/app")
    assert drive.refused(tool, "acme/app").request_id != pending.request_id


# Exactly once under concurrent retries.


def test_an_approved_call_runs_once_when_retried_from_many_threads(make_kit, queue):
    session = Session(USER)
    runs: list[int] = []
    release = threading.Event()

    def body(repo: str) -> str:
        runs.append(threading.get_ident())
        release.wait(timeout=30)  # hold the body until every other retry has been answered
        return "merged"

    tool = make_kit(approver=queue).secured_tool(body, approve=True)
    with session.active(), pytest.raises(ApprovalPending) as info:
        tool("acme/app")
    queue.approve(info.value.request_id, by=LEAD)

    n = 32
    barrier = threading.Barrier(n)
    answered = threading.Condition()
    results: list[object] = []

    def retry() -> None:
        with session.active():
            barrier.wait()
            try:
                result: object = tool("acme/app")
            except ToolRefused as refusal:
                result = refusal
        with answered:
            results.append(result)
            answered.notify_all()

    threads = [threading.Thread(target=retry) for _ in range(n)]
    for t in threads:
        t.start()
    with answered:
        answered.wait_for(lambda: len(results) >= n - 1, timeout=30)
    release.set()
    for t in threads:
        t.join()

    assert len(runs) == 1
    assert results.count("merged") == 1
    refusals = [r for r in results if r != "merged"]
    assert len(refusals) == n - 1
    assert all(r.code == "approval_pending" for r in refusals)
    assert all("running already" in r.message for r in refusals)
    assert queue.pending() == []  # no second request for a person to approve by mistake


async def test_an_approved_call_runs_once_when_retried_from_many_tasks(make_kit, queue):
    session = Session(USER)
    runs = []
    release = asyncio.Event()

    async def body(repo: str) -> str:
        runs.append(repo)
        await release.wait()
        return "merged"

    tool = make_kit(approver=queue).secured_tool(body, approve=True)
    async with session.active():
        with pytest.raises(ApprovalPending) as info:
            await tool("acme/app")
        queue.approve(info.value.request_id, by=LEAD)

        async def retry() -> object:
            try:
                return await tool("acme/app")
            except ToolRefused as refusal:
                return refusal

        n = 40
        tasks = [asyncio.create_task(retry()) for _ in range(n)]
        for _ in range(1000):  # let every retry but the running one be answered
            if sum(t.done() for t in tasks) == n - 1:
                break
            await asyncio.sleep(0)
        release.set()
        results = await asyncio.gather(*tasks)
    assert runs == ["acme/app"]
    assert results.count("merged") == 1
    refusals = [r for r in results if r != "merged"]
    assert len(refusals) == n - 1
    assert all(r.code == "approval_pending" for r in refusals)
    assert all("running already" in r.message for r in refusals)


# Expiry, with an injected clock.


def test_the_default_ttl_is_fifteen_minutes():
    assert ApprovalQueue().ttl == 15 * 60


def test_an_undecided_request_expires(drive, make_kit, session):
    clock = Clock()
    queue = ApprovalQueue(ttl=60, clock=clock)
    tool = drive.tool(make_kit(approver=queue), lambda: "ok", approve=True)
    pending = drive.refused(tool)
    clock.now += 59
    assert [r.id for r in queue.pending()] == [pending.request_id]
    clock.now += 2
    assert queue.pending() == []
    with pytest.raises(KeyError):
        queue.approve(pending.request_id, by=LEAD)
    fresh = drive.refused(tool)
    assert fresh.request_id != pending.request_id


def test_an_unused_approval_expires_ttl_after_it_was_granted(drive, make_kit, session):
    clock = Clock()
    queue = ApprovalQueue(ttl=60, clock=clock)
    runs = []
    tool = drive.tool(make_kit(approver=queue), lambda x: runs.append(x), approve=True)

    first = drive.refused(tool, 1)
    clock.now += 50
    queue.approve(first.request_id, by=LEAD)  # granted at +50: good until +110
    clock.now += 55
    drive.call(tool, 1)
    assert runs == [1]

    second = drive.refused(tool, 2)
    queue.approve(second.request_id, by=LEAD)
    clock.now += 61
    again = drive.refused(tool, 2)
    assert again.code == "approval_pending"
    assert again.request_id != second.request_id
    assert runs == [1]


# A callable approver.


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (False, "approval_denied"),
        (None, "approval_pending"),
        ("yes", "approval_pending"),
        (1, "approval_pending"),
    ],
)
def test_a_callable_approver_that_does_not_say_true(drive, make_kit, session, events, answer, code):
    asked: list[ApprovalRequest] = []
    kit = make_kit(approver=lambda request: asked.append(request) or answer)
    ran = []
    tool = drive.tool(kit, lambda repo: ran.append(repo), name="deploy", approve=True)
    refusal = drive.refused(tool, "acme/app")
    assert refusal.code == code
    assert ran == []
    [request] = asked
    assert "deploy" in request.describe()
    assert events[-1].approval_id == request.id


def test_a_callable_approver_saying_true_runs_the_call(drive, make_kit, session):
    asked = []
    kit = make_kit(approver=lambda request: asked.append(request.arguments) or True)
    tool = drive.tool(kit, lambda repo: f"deployed {repo}", approve=True)
    assert drive.call(tool, "acme/a") == "deployed acme/a"
    assert drive.call(tool, "acme/a") == "deployed acme/a"
    assert asked == [{"repo": "acme/a"}, {"repo": "acme/a"}]  # asked every time


def test_an_approver_that_raises_refuses(drive, make_kit, session, events):
    def approver(request: ApprovalRequest) -> bool:
        raise ConnectionError("chat service down")

    ran = []
    tool = drive.tool(make_kit(approver=approver), lambda: ran.append(1), approve=True)
    assert drive.refused(tool).code == "check_error"
    assert ran == []
    assert "chat service down" in events[-1].detail


async def test_an_async_approver_is_awaited(make_kit, session):
    async def approver(request: ApprovalRequest) -> bool:
        await asyncio.sleep(0)
        return request.arguments["env"] == "staging"

    async def deploy(env: str) -> str:
        return f"deployed {env}"

    tool = make_kit(approver=approver).secured_tool(deploy, approve=True)
    assert await tool("staging") == "deployed staging"
    with pytest.raises(ToolRefused) as info:
        await tool("prod")
    assert info.value.code == "approval_denied"


def test_without_an_approver_approval_is_not_configured(drive, kit, session):
    ran = []
    tool = drive.tool(kit, lambda: ran.append(1), approve=True)
    refusal = drive.refused(tool)
    assert refusal.code == "not_configured"
    assert "operator" in refusal.message
    assert ran == []


# Approval rules on the arguments.


def test_an_approval_rule_decides_per_call(drive, make_kit, session, queue):
    seen: list[ToolCall] = []

    def rule(call: ToolCall) -> object:
        seen.append(call)
        if call.arguments["amount"] > 1000:
            return f"amount {call.arguments['amount']} is over 1000"
        return call.arguments["amount"] > 500  # truthy: approval with a generic reason

    tool = drive.tool(make_kit(approver=queue), lambda amount: f"paid {amount}", approve=rule)
    assert drive.call(tool, 10) == "paid 10"
    big = drive.refused(tool, 5000)
    assert queue.get(big.request_id).reasons == ("amount 5000 is over 1000",)
    mid = drive.refused(tool, 600)
    assert queue.get(mid.request_id).reasons == ("its approval rule asks for it",)
    assert [c.arguments["amount"] for c in seen] == [10, 5000, 600]


def test_an_approval_rule_or_preview_that_raises_fails_closed(drive, make_kit, session, queue):
    def broken(call: ToolCall) -> str:
        raise KeyError("threshold")

    kit = make_kit(approver=queue)
    by_rule = drive.tool(kit, lambda: None, approve=broken)
    by_preview = drive.tool(kit, lambda: None, approve=True, preview=broken)
    assert drive.refused(by_rule).code == "check_error"
    assert drive.refused(by_preview).code == "check_error"
    assert queue.pending() == []
