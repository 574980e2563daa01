"""Guard's sessions per key (an adapter's run context): kept by the key's identity, so
unhashable contexts (dataclasses, pydantic models) keep one session for the whole run."""

import gc
from dataclasses import dataclass

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


def test_a_session_goes_with_its_key() -> None:
    guard = Guard(engine=None)
    ctx = Context(USER)
    session_in(guard, USER, ctx)
    assert len(guard._sessions) == 1
    del ctx
    gc.collect()
    assert guard._sessions == {}


def test_a_key_that_cannot_be_weakly_referenced_gives_one_session_per_call() -> None:
    guard = Guard(engine=None)
    key = {"user_id": USER}
    assert session_in(guard, USER, key) is not session_in(guard, USER, key)
    assert guard._sessions == {}


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
