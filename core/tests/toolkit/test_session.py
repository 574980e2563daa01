"""Step 1, session: no current session, no call; sessions are per thread and per task."""

import asyncio
import threading

import pytest
from toolpass import Session, ToolCall, ToolRefused, current_session


def test_no_session_is_refused_before_the_body(drive, kit, events):
    ran = []
    tool = drive.tool(kit, lambda x: ran.append(x), effect="read")

    refusal = drive.refused(tool, 1)

    assert refusal.code == "no_session"
    assert "Session" in refusal.message
    assert ran == []
    [event] = events
    assert (event.outcome, event.code, event.user) == ("refused", "no_session", None)


def test_an_active_session_is_who_the_call_acts_for(drive, kit):
    seen: list[ToolCall] = []

    def authorize(call: ToolCall) -> bool:
        seen.append(call)
        return True

    tool = drive.tool(kit, lambda: "done", effect="read", authorize=authorize)
    s = Session("erin@example.com", team="infra")
    with s.active():
        assert current_session() is s
        assert drive.call(tool) == "done"
    assert current_session() is None
    [call] = seen
    assert call.user == "erin@example.com"
    assert call.session is s
    assert call.session.attributes == {"team": "infra"}


def test_the_session_ends_with_its_block(drive, kit):
    tool = drive.tool(kit, lambda: "done", effect="read")
    with Session("dana@example.com").active():
        drive.call(tool)
    assert drive.refused(tool).code == "no_session"


def test_nested_sessions_restore_the_outer_one(kit):
    users = []
    tool = kit.secured_tool(lambda: users.append(current_session().user), effect="read")
    outer, inner = Session("outer@example.com"), Session("inner@example.com")
    with outer.active():
        tool()
        with inner.active():
            tool()
        tool()
    assert users == ["outer@example.com", "inner@example.com", "outer@example.com"]


@pytest.mark.parametrize("user", ["", "   ", None, 42, "dana@example.com\nadmin", "dana\u202e@x"])
def test_a_session_needs_a_user(user):
    with pytest.raises(ValueError, match="user"):
        Session(user)


async def test_async_with_activates_a_session(kit, events):
    async def whoami() -> str:
        return current_session().user

    tool = kit.secured_tool(whoami, effect="read")
    async with Session("dana@example.com").active() as s:
        assert await tool() == "dana@example.com"
        assert current_session() is s
    assert current_session() is None
    with pytest.raises(ToolRefused) as info:
        await tool()
    assert info.value.code == "no_session"
    assert [e.outcome for e in events] == ["ok", "refused"]


def test_a_new_thread_does_not_inherit_the_session(session, kit):
    tool = kit.secured_tool(lambda: "done", effect="read")
    results = []

    def run() -> None:
        try:
            results.append(tool())
        except ToolRefused as exc:
            results.append(exc.code)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert results == ["no_session"]
    assert tool() == "done"  # the main thread still has its session


def test_sessions_are_per_thread(kit):
    n = 8
    barrier = threading.Barrier(n)
    seen: dict[str, list[str]] = {}
    lock = threading.Lock()

    def whoami(tag: str) -> str:
        barrier.wait()  # every thread is inside its own session, inside the tool, at once
        user = current_session().user
        with lock:
            seen.setdefault(tag, []).append(user)
        return user

    tool = kit.secured_tool(whoami, effect="read")

    def run(i: int) -> None:
        with Session(f"user{i}@example.com").active():
            assert tool(str(i)) == f"user{i}@example.com"

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {str(i): [f"user{i}@example.com"] for i in range(n)}


async def test_sessions_are_per_asyncio_task(kit):
    n = 10
    seen: dict[int, str] = {}
    gate = asyncio.Event()

    async def whoami(i: int) -> str:
        await gate.wait()  # all tasks are suspended inside their own sessions together
        seen[i] = current_session().user
        return seen[i]

    tool = kit.secured_tool(whoami, effect="read")

    async def run(i: int) -> str:
        async with Session(f"user{i}@example.com").active():
            return await tool(i)

    tasks = [asyncio.create_task(run(i)) for i in range(n)]
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*tasks)
    assert results == [f"user{i}@example.com" for i in range(n)]
    assert current_session() is None  # no task's session leaked into the parent


async def test_a_task_started_inside_a_session_inherits_it(kit):
    async def whoami() -> str:
        return current_session().user

    tool = kit.secured_tool(whoami, effect="read")
    async with Session("dana@example.com").active():
        task = asyncio.create_task(tool())
    assert await task == "dana@example.com"


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("session_id", "id"),
        ("thread_id", "id"),
        ("allowed_effects", "allow_effects"),
        ("allow_tool", "allow_tools"),
        ("limit", "limits"),
        ("untrusted_limits", "untrusted_limit"),
        ("requests", "request"),
    ],
)
def test_a_misspelled_keyword_is_refused_not_kept_as_an_attribute(given: str, meant: str) -> None:
    with pytest.raises(TypeError, match=rf"{given!r} \(did you mean {meant!r}\?\)"):
        Session("dana@example.com", **{given: "x"})


def test_the_applications_own_attributes_are_kept() -> None:
    session = Session("dana@example.com", team="payments", tenant="acme")
    assert session.attributes == {"team": "payments", "tenant": "acme"}
