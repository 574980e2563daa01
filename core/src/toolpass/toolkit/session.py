"""Who a call acts for, and what the session has seen so far."""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Mapping
from contextvars import ContextVar, Token
from typing import Any

from toolpass.outcome.errors import ToolRefused
from toolpass.rules.scope import has_control
from toolpass.toolkit.untrusted import MAX_TEXT, UntrustedIndex

_current: ContextVar[Session | None] = ContextVar("toolpass_session", default=None)


class Session:
    """One user's run of an agent: limits, untrusted content and data flow are counted here.

    A session is active inside ``with session.active():`` (or ``async with``), per thread and
    per asyncio task; tools called there act for ``user``. ``untrusted_limit``: how many
    characters of untrusted text it remembers (default ``MAX_TEXT``, with proportionally many
    six-word runs); past it, calls that change or send something are refused or sent for
    approval for the rest of the session.
    """

    __slots__ = (
        "_lock",
        "attributes",
        "counts",
        "id",
        "private_from",
        "tainted",
        "untrusted",
        "user",
    )

    def __init__(self, user: str, *, untrusted_limit: int | None = None, **attributes: Any) -> None:
        if not isinstance(user, str) or not user.strip() or has_control(user):
            raise ValueError(
                "Session needs the user's identity as a non-empty string without control characters"
            )
        self.user = user
        self.attributes: Mapping[str, Any] = attributes
        self.id = secrets.token_hex(8)
        self.counts: dict[str, int] = {}
        limit = MAX_TEXT if untrusted_limit is None else untrusted_limit
        self.untrusted = UntrustedIndex(max_text=limit)
        self.private_from: set[str] = set()  # where private data was read ("*": not said)
        self.tainted = False  # a tool whose output is untrusted has run
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Session({self.user!r}, id={self.id!r})"

    def active(self) -> _Activation:
        """Make this the current session inside ``with`` (or ``async with``) blocks."""
        return _Activation(self)

    # Limits: a slot is taken before the body and given back if the body never runs.
    def take(self, keys: tuple[tuple[str, int], ...]) -> str | None:
        """Take one slot under each ``(key, cap)``; return the first key that is full."""
        with self._lock:
            counts = self.counts
            for key, cap in keys:
                if counts.get(key, 0) >= cap:
                    return key
            for key, _ in keys:
                counts[key] = counts.get(key, 0) + 1
            return None

    def give_back(self, keys: tuple[tuple[str, int], ...]) -> None:
        with self._lock:
            for key, _ in keys:
                self.counts[key] -= 1

    def note_private(self, source: str = "*") -> None:
        """Private data was read, from ``source`` (a connection and resource) if known."""
        self.private_from.add(source)

    @property
    def private(self) -> bool:
        """Whether private data was read in this session."""
        return bool(self.private_from)

    def record_untrusted(self, text: str) -> None:
        """Remember text from an untrusted source, so arguments repeating it are caught."""
        self.tainted = True
        self.untrusted.add(text)


class _Activation:
    __slots__ = ("_session", "_tokens")

    def __init__(self, session: Session) -> None:
        self._session = session
        self._tokens: list[Token[Session | None]] = []

    def __enter__(self) -> Session:
        self._tokens.append(_current.set(self._session))
        return self._session

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._tokens.pop())

    async def __aenter__(self) -> Session:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


def session_for(user: object) -> Session:
    """A new session for ``user``; a user that cannot be one is refused (``no_session``)."""
    try:
        return Session(user)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ToolRefused(
            "no_session",
            "No valid user is known for this call, so it cannot act for anyone. The "
            "application must pass the user's identity.",
            detail=str(exc),
        ) from None


def current_session() -> Session | None:
    """The session active in this thread or task, if any."""
    return _current.get()


class Conversations:
    """Sessions by conversation id and user, for the ``limit`` most recently used pairs: the
    same conversation, continued by another run, another agent or another adapter of the same
    toolkit, keeps its limits, untrusted-content record and data flow."""

    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._sessions: OrderedDict[tuple[str, str], Session] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, conversation: str, user: str) -> Session:
        slot = (conversation, user)
        with self._lock:
            session = self._sessions.get(slot)
            if session is None:
                session = self._sessions[slot] = session_for(user)
                if len(self._sessions) > self.limit:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(slot)
            return session
