"""Step 3, limits: caps per effect and per tool, per session; a slot is given back when the
call never reaches its body; caps hold exactly under concurrent calls."""

import asyncio
import threading
from collections import Counter

import pytest
from toolpass import ApprovalQueue, Session, ToolCall, ToolRefused


@pytest.fixture
def session(stored_session):
    """Each test runs with the session's state in the object and in a shared store."""
    return stored_session


def test_a_cap_per_effect_is_shared_by_the_tools_of_that_effect(drive, make_kit, session):
    kit = make_kit(limits={"destructive": 3})
    drop = drive.tool(kit, lambda name: f"dropped {name}", effect="destructive")
    wipe = drive.tool(kit, lambda name: f"wiped {name}", effect="destructive")
    read = drive.tool(kit, lambda name: f"read {name}", effect="read")

    assert drive.call(drop, "a") == "dropped a"
    assert drive.call(wipe, "b") == "wiped b"
    assert drive.call(drop, "c") == "dropped c"
    for tool in (drop, wipe):
        refusal = drive.refused(tool, "d")
        assert refusal.code == "limit_exceeded"
        assert "destructive" in refusal.message
        assert "Do not retry" in refusal.message
    for _ in range(10):
        drive.call(read, "x")  # another effect has no cap


@pytest.mark.parametrize("how", ["limit", "tool_limits"])
def test_a_cap_per_tool(drive, make_kit, session, how):
    kit = make_kit(tool_limits={"send_mail": 2} if how == "tool_limits" else {})
    options = {"limit": 2} if how == "limit" else {}
    send = drive.tool(kit, lambda to: to, name="send_mail", effect="write", **options)
    other = drive.tool(kit, lambda to: to, name="other", effect="write")
    drive.call(send, "a")
    drive.call(send, "b")
    refusal = drive.refused(send, "c")
    assert refusal.code == "limit_exceeded"
    assert "calls of this tool" in refusal.message
    for _ in range(5):
        drive.call(other, "x")


def test_tool_caps_count_each_tool_separately_even_from_one_factory(make_kit, session):
    kit = make_kit()

    def make(name: str):  # how adapters wrap many tools: one inner function, many names
        def call(target: str) -> str:
            return f"{name}:{target}"

        return kit.secured_tool(call, name=name, limit=1)

    first, second = make("first"), make("second")
    assert first("x") == "first:x"
    assert second("x") == "second:x"
    with pytest.raises(ToolRefused) as info:
        first("y")
    assert info.value.code == "limit_exceeded"


def test_limits_are_per_session(drive, make_kit):
    kit = make_kit(limits={"write": 1})
    tool = drive.tool(kit, lambda: "ok")
    with Session("dana@example.com").active():
        drive.call(tool)
        assert drive.refused(tool).code == "limit_exceeded"
    with Session("dana@example.com").active():
        assert drive.call(tool) == "ok"
    with Session("erin@example.com").active():
        assert drive.call(tool) == "ok"


def test_a_cap_of_zero_refuses_every_call(drive, make_kit, session):
    tool = drive.tool(make_kit(limits={"destructive": 0}), lambda: None, effect="destructive")
    assert drive.refused(tool).code == "limit_exceeded"


def test_a_tool_without_an_effect_counts_only_against_its_own_cap(drive, make_kit, session):
    kit = make_kit(limits={"write": 0})
    tool = drive.tool(kit, lambda: "ok", effect=None, limit=1)
    assert drive.call(tool) == "ok"
    assert drive.refused(tool).code == "limit_exceeded"


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3", None])
def test_caps_must_be_whole_numbers(make_kit, bad):
    with pytest.raises(ValueError, match="whole number"):
        make_kit(limits={"write": bad})
    with pytest.raises(ValueError, match="whole number"):
        make_kit().secured_tool(lambda: None, limit=bad if bad is not None else -5)


def test_a_body_that_raises_still_spends_its_slot(drive, make_kit, session):
    def body() -> None:
        raise LookupError("no such branch")

    tool = drive.tool(make_kit(limits={"write": 1}), body)
    with pytest.raises(LookupError):
        drive.call(tool)
    assert drive.refused(tool).code == "limit_exceeded"


# A slot is given back when a later step refuses, so the call never reaches its body.


def test_a_slot_is_given_back_when_authorization_refuses(drive, make_kit, session):
    allow = {"value": False}
    ran = []
    tool = drive.tool(
        make_kit(limits={"write": 1}),
        lambda: ran.append(1) or "ok",
        authorize=lambda call: allow["value"],
    )
    for _ in range(3):
        assert drive.refused(tool).code == "not_authorized"
    allow["value"] = True
    assert drive.call(tool) == "ok"
    assert drive.refused(tool).code == "limit_exceeded"
    assert ran == [1]


def test_a_slot_is_given_back_while_approval_is_pending(drive, make_kit, session):
    queue = ApprovalQueue()
    ran = []
    tool = drive.tool(
        make_kit(limits={"write": 1}, approver=queue), lambda: ran.append(1) or "ok", approve=True
    )
    pending = drive.refused(tool)
    assert pending.code == "approval_pending"
    assert drive.refused(tool).code == "approval_pending"  # not limit_exceeded
    queue.approve(pending.request_id, by="lead@example.com")
    assert drive.call(tool) == "ok"
    assert ran == [1]
    assert drive.refused(tool).code == "limit_exceeded"


def test_a_slot_is_given_back_when_the_credential_is_unavailable(drive, make_kit, session):
    source = {"up": False}

    def credentials(name: str) -> str:
        if not source["up"]:
            raise ConnectionError("vault is restarting")
        return "token-0123456789"

    def body(*, credential: str) -> str:
        return "ok"

    tool = drive.tool(
        make_kit(limits={"write": 1}, credentials=credentials), body, credential="bot"
    )
    assert drive.refused(tool).code == "credential_unavailable"
    assert drive.refused(tool).code == "credential_unavailable"
    source["up"] = True
    assert drive.call(tool) == "ok"
    assert drive.refused(tool).code == "limit_exceeded"


def test_refusals_before_the_limit_step_take_no_slot(drive, make_kit, session):
    tool = drive.tool(make_kit(limits={"write": 1}), lambda repo: repo, scope={"repo": "acme/*"})
    for _ in range(3):
        assert drive.refused(tool, "other/x").code == "out_of_scope"
        assert drive.refused(tool, 1).code == "out_of_scope"
    assert drive.call(tool, "acme/x") == "acme/x"


# Exact caps under concurrency.


def _in_threads(n, session, fn):
    """Run ``fn(i)`` in ``n`` threads that start together, each inside ``session``."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def run(i: int) -> None:
        with session.active():
            barrier.wait()
            try:
                results[i] = fn(i)
            except ToolRefused as refusal:
                results[i] = refusal.code

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_caps_hold_exactly_under_many_threads(make_kit):
    session = Session("dana@example.com")
    kit = make_kit(limits={"destructive": 12})
    ran = Counter()
    lock = threading.Lock()

    def body(which: str) -> str:
        with lock:
            ran[which] += 1
        return "ok"

    drop = kit.secured_tool(body, name="drop", effect="destructive", limit=5)
    wipe = kit.secured_tool(body, name="wipe", effect="destructive")

    results = _in_threads(
        64, session, lambda i: (drop if i % 2 else wipe)("drop" if i % 2 else "wipe")
    )

    assert results.count("ok") == 12
    assert results.count("limit_exceeded") == 64 - 12
    assert ran["drop"] <= 5
    assert ran["drop"] + ran["wipe"] == 12


def test_slots_given_back_under_many_threads_are_all_returned(make_kit):
    session = Session("dana@example.com")
    kit = make_kit(limits={"write": 5})

    def authorize(call: ToolCall) -> bool:
        return call.arguments["verdict"] == "allow"

    tool = kit.secured_tool(lambda verdict: verdict, authorize=authorize)
    denied = _in_threads(48, session, lambda i: tool("deny"))
    assert "not_authorized" in denied
    assert set(denied) <= {"not_authorized", "limit_exceeded"}

    allowed = _in_threads(16, session, lambda i: tool("allow"))
    assert allowed.count("allow") == 5
    assert allowed.count("limit_exceeded") == 11


async def test_caps_hold_exactly_under_many_asyncio_tasks(make_kit):
    session = Session("dana@example.com")
    kit = make_kit(limits={"write": 7})
    ran = []

    async def authorize(call: ToolCall) -> bool:
        await asyncio.sleep(0)  # every task pauses between taking its slot and its body
        return True

    async def body(i: int) -> int:
        await asyncio.sleep(0)
        ran.append(i)
        return i

    tool = kit.secured_tool(body, authorize=authorize)

    async def run(i: int) -> object:
        async with session.active():
            try:
                return await tool(i)
            except ToolRefused as refusal:
                return refusal.code

    results = await asyncio.gather(*(run(i) for i in range(50)))
    assert len(ran) == 7
    assert sum(isinstance(r, int) for r in results) == 7
    assert results.count("limit_exceeded") == 43


async def test_async_slots_given_back_when_a_sync_authorizer_denies(make_kit):
    session = Session("dana@example.com")
    kit = make_kit(limits={"write": 3})
    gate = threading.Event()

    def authorize(call: ToolCall) -> bool:  # runs in a worker thread for an async tool
        gate.wait(timeout=10)
        return call.arguments["verdict"] == "allow"

    async def body(verdict: str) -> str:
        return verdict

    tool = kit.secured_tool(body, authorize=authorize)

    async def run(verdict: str) -> object:
        async with session.active():
            try:
                return await tool(verdict)
            except ToolRefused as refusal:
                return refusal.code

    denied = [asyncio.create_task(run("deny")) for _ in range(3)]
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*denied) == ["not_authorized"] * 3
    allowed = await asyncio.gather(*(run("allow") for _ in range(5)))
    assert allowed.count("allow") == 3
    assert allowed.count("limit_exceeded") == 2
