"""Guard's sessions per key (what an adapter has for the run: its context, or an object the
framework makes once per run): kept by the key's identity and the user, so unhashable and
unweakrefable keys (dataclasses, pydantic models, dicts, TypedDicts) keep one session for the
whole run, and nothing else ever shares it."""

import gc
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolpass import current_session
from toolpass.adapting import Guard

USER, OTHER = "dana@example.com", "erin@example.com"


@dataclass
class Context:  # eq=True makes it unhashable, as most run contexts are
    user_id: str


def session_in(guard: Guard, user: str, key: object) -> object:
    return guard.run(user, "whoami", {}, current_session, key=key)


def test_an_unhashable_key_keeps_one_session() -> None:
    guard = Guard(engine=None)
    ctx = Context(USER)
    first = session_in(guard, USER, ctx)
    assert session_in(guard, USER, ctx) is first
    assert session_in(guard, USER, Context(USER)) is not first  # equal, but another run
    assert session_in(guard, OTHER, ctx) is not first  # another user: a new session


def test_a_guard_does_not_keep_a_weakly_referenceable_key_alive() -> None:
    guard = Guard(engine=None)
    ctx = Context(USER)
    session_in(guard, USER, ctx)
    gone = weakref.ref(ctx)
    del ctx
    gc.collect()
    assert gone() is None


@pytest.mark.parametrize("make", [dict, lambda: Context(USER)], ids=["dict", "dataclass"])
def test_a_key_keeps_one_session_per_user(make: Callable[[], object]) -> None:
    """A dict (a TypedDict run context) cannot be weakly referenced: it used to get a new
    session for every call, so limits and taint reset between calls of one run."""
    guard = Guard(engine=None)
    key = make()
    mine, theirs = session_in(guard, USER, key), session_in(guard, OTHER, key)
    assert mine is not theirs
    for _ in range(3):  # a run acting for two users keeps both sessions
        assert session_in(guard, USER, key) is mine
        assert session_in(guard, OTHER, key) is theirs
    assert session_in(guard, USER, make()) is not mine  # an equal key is another run


class SmallGuard(Guard):
    held_sessions = 3


@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from([USER, OTHER])), max_size=40))
def test_held_sessions_are_the_most_recently_used(calls: list[tuple[int, str]]) -> None:
    """Against a model: a run whose key Guard must hold keeps its session while that session
    is among the ``held_sessions`` most recently used; a forgotten one starts afresh."""
    guard = SmallGuard(engine=None)
    keys = [{"run": i} for i in range(6)]
    kept: OrderedDict[tuple[int, str], object] = OrderedDict()
    seen: list[object] = []
    for i, user in calls:
        session = session_in(guard, user, keys[i])
        if (i, user) in kept:
            assert session is kept[(i, user)]
            kept.move_to_end((i, user))
            continue
        assert all(session is not other for other in seen)  # never one of another run
        seen.append(session)
        kept[(i, user)] = session
        if len(kept) > SmallGuard.held_sessions:
            kept.popitem(last=False)


def test_a_later_context_that_reuses_an_id_is_another_run() -> None:
    """CPython gives a freed object's address (its ``id()``) to the next one of its size: a
    later run's context must not find an earlier run's session by it."""
    guard = Guard(engine=None)
    key = Context(USER)
    first, old_id = session_in(guard, USER, key), id(key)
    del key  # freed at once: the guard does not keep it alive
    later = [Context(USER) for _ in range(1000)]  # all kept, so each takes a new address
    [reused] = [k for k in later if id(k) == old_id]
    assert session_in(guard, USER, reused) is not first


class RunDict(dict[str, object]):
    """A dict (as a TypedDict context is) that says when it is freed."""

    __slots__ = ()
    freed: list[int] = []

    def __del__(self) -> None:
        RunDict.freed.append(id(self))


def test_a_held_key_lives_as_long_as_its_session_so_its_id_cannot_be_reused() -> None:
    guard = SmallGuard(engine=None)
    others = [RunDict(run=n) for n in range(SmallGuard.held_sessions)]
    key = RunDict(run="first")
    session_in(guard, USER, key)
    old_id = id(key)
    del key
    assert old_id not in RunDict.freed  # held: no later object can take its id()
    for other in others:  # other runs: the first session is forgotten, and its key freed
        session_in(guard, USER, other)
    assert old_id in RunDict.freed


def test_user_from_reads_what_the_application_named() -> None:
    import pytest
    from toolpass import ToolRefused
    from toolpass.adapting import user_from

    class Ctx:
        user_id = "dana@example.com"

    assert user_from("user_id", Ctx()) == "dana@example.com"
    assert user_from("user_id", {"user_id": "erin@example.com"}) == "erin@example.com"
    assert user_from("user_id", object()) is None
    assert user_from("user_id", {"user_id": "  "}) is None
    assert user_from(lambda run: run["who"], None, {"who": "rory@example.com"}) == (
        "rory@example.com"
    )
    for broken in (lambda run: 1 / 0, lambda run: 42):
        with pytest.raises(ToolRefused) as info:
            user_from(broken, None, None)
        assert info.value.code == "check_error"


def test_a_user_that_cannot_be_a_session_is_refused_not_raised() -> None:
    from toolpass import Decision
    from toolpass.adapting import Guard

    class Engine:
        def check(self, *args: object, **kwargs: object) -> Decision:
            return Decision.allow()

    refused = Guard(Engine()).check("dana@example.com\nadmin", "tool", {})
    assert refused is not None
    assert refused.code == "no_session"


def test_a_conversation_outlives_the_guard_that_began_it() -> None:
    """An application that makes its agent (and guard) anew for each request still continues
    the conversation's session: its taint and limits do not reset with the guard."""
    from toolpass import Toolkit

    kit = Toolkit()
    first = Guard(engine=None, toolkit=kit, session=lambda _: "chat-7")
    second = Guard(engine=None, toolkit=kit, session=lambda _: "chat-7")
    began = session_in(first, USER, first.key(object(), None, None))
    assert session_in(second, USER, second.key(object(), None, None)) is began
    assert session_in(second, OTHER, second.key(object(), None, None)) is not began
    other_kit = Guard(engine=None, toolkit=Toolkit(), session=lambda _: "chat-7")
    assert session_in(other_kit, USER, other_kit.key(object(), None, None)) is not began


def test_the_toolkit_keeps_the_most_recently_used_conversations() -> None:
    from toolpass.toolkit.session import Conversations

    kept = Conversations(limit=2)
    a, b = kept.get("a", USER), kept.get("b", USER)
    assert kept.get("a", USER) is a  # a is now the most recent
    kept.get("c", USER)  # b, the least recent, goes
    assert kept.get("a", USER) is a
    assert kept.get("b", USER) is not b


def test_a_guard_made_anew_continues_the_conversations_tool_limits() -> None:
    """Per-tool limits (and approvals) are kept under the tool, whichever guard checks it: a
    guard made for each request must not give a conversation a fresh allowance."""
    import pytest
    from toolpass import Toolkit, ToolRefused

    kit = Toolkit(tool_limits={"whoami": 1})

    def call() -> object:
        guard = Guard(engine=None, toolkit=kit, session=lambda _: "chat-9")
        return session_in(guard, USER, guard.key(object(), None, None))

    call()
    with pytest.raises(ToolRefused) as info:
        call()
    assert info.value.code == "limit_exceeded"
