"""Shared fixtures for the pipeline tests.

Most step tests run twice, once per driver: ``mode`` is ``"sync"`` or ``"async"``, and the
``drive`` fixture turns a plain test body into a sync tool or an async tool with the same
signature, then calls it the matching way. The checks, hooks and toolkits are real; nothing
of toolpass is replaced.
"""

import asyncio
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import toolpass
from toolpass import AuditEvent, Decision, Session, Toolkit, ToolRefused
from toolpass.store import Store, open_store

USER = "dana@example.com"


class Drive:
    """Declares a tool sync or async and calls it the matching way."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.is_async = mode == "async"

    def tool(self, kit: Toolkit, fn: Callable[..., Any] | None = None, **options: Any) -> Any:
        """``kit.secured_tool(**options)`` over ``fn``, made a coroutine function in async mode."""

        def decorate(f: Callable[..., Any]) -> Any:
            if not self.is_async:
                return kit.secured_tool(f, **options)

            @functools.wraps(f)
            async def body(*args: Any, **kwargs: Any) -> Any:
                await asyncio.sleep(0)  # a real suspension point inside the body
                return f(*args, **kwargs)

            return kit.secured_tool(body, **options)

        return decorate(fn) if fn is not None else decorate

    def call(self, tool: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Call a tool made by ``tool()``: directly, or on a fresh event loop (which copies
        the caller's context, so the active session is seen)."""
        if self.is_async:
            return asyncio.run(tool(*args, **kwargs))
        return tool(*args, **kwargs)

    def refused(self, tool: Any, /, *args: Any, **kwargs: Any) -> ToolRefused:
        """Call and return the refusal; fail if the call was not refused."""
        with pytest.raises(ToolRefused) as info:
            self.call(tool, *args, **kwargs)
        return info.value


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def drive(mode: str) -> Drive:
    return Drive(mode)


@pytest.fixture
def events() -> list[AuditEvent]:
    """Every audit event of the test's toolkits, in order."""
    return []


@pytest.fixture
def make_kit(events: list[AuditEvent]) -> Callable[..., Toolkit]:
    """A fresh ``Toolkit`` whose audit goes to ``events`` (plus any extra sinks given)."""

    def make(*, audit: list[Any] | None = None, **settings: Any) -> Toolkit:
        return Toolkit(audit=[events.append, *(audit or [])], **settings)

    return make


@pytest.fixture
def kit(make_kit: Callable[..., Toolkit]) -> Toolkit:
    return make_kit()


@pytest.fixture
def session() -> Iterator[Session]:
    """A session for ``USER``, active for the whole test (thread and tasks started from it)."""
    s = Session(USER, team="ops")
    with s.active():
        yield s


@pytest.fixture(params=["in the session", "sqlite"])
def state(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Store | None]:
    """Where a session keeps its state: in the object, or a shared SQLite store (modules
    whose checks count, flag or record in the session run against both)."""
    if request.param == "in the session":
        yield None
        return
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    yield store
    store.close()


@pytest.fixture
def stored_session(state: Store | None) -> Iterator[Session]:
    """``session``, its state kept as ``state`` says."""
    s = Session(USER, id="conversation-1", store=state, team="ops")
    with s.active():
        yield s


@pytest.fixture
def default_kit() -> Iterator[Toolkit]:
    """The global default toolkit, restored to its settings after the test."""
    kit = toolpass.default_toolkit
    saved = dict(vars(kit))
    try:
        yield kit
    finally:
        vars(kit).clear()
        vars(kit).update(saved)


class RecordingEngine:
    """A permission engine double: answers from a table and records every question.

    ``answers`` maps ``(user, action, resource)`` to a ``Decision`` (deny by default);
    ``asked`` holds ``(user, connection, action, resource, fresh, how)`` where ``how`` is
    ``"check"`` or ``"acheck"``, and ``threads`` the thread each question ran on.
    """

    def __init__(self, answers: dict[tuple[str, str, str], Decision] | None = None) -> None:
        self.answers = dict(answers or {})
        self.asked: list[tuple[str, str, str, str, bool, str]] = []
        self.threads: list[int] = []
        self.error: Exception | None = None

    def _answer(
        self, user: str, connection: str, action: str, resource: str, fresh: bool, how: str
    ) -> Decision:
        self.asked.append((user, connection, action, resource, fresh, how))
        self.threads.append(threading.get_ident())
        if self.error is not None:
            raise self.error
        return self.answers.get(
            (user, action, resource), Decision.deny("no grant", user=user, resource=resource)
        )

    def check(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        return self._answer(user, connection, action, resource, fresh, "check")

    async def acheck(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        await asyncio.sleep(0)
        return self._answer(user, connection, action, resource, fresh, "acheck")


@pytest.fixture
def engine() -> RecordingEngine:
    return RecordingEngine()


def attempt(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """A call's outcome as a value: ``("ok", result)`` or ``("refused", refusal)``."""
    try:
        return "ok", fn(*args, **kwargs)
    except ToolRefused as refusal:
        return "refused", refusal
