"""Where a call's user and session come from (the application's sources, never the model),
the refusal when such a source fails, and the text the model reads for a refusal."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from toolpass.outcome.errors import ToolRefused
from toolpass.toolkit.session import Conversations, Session, session_for

#: Where an adapter finds the user: the name of an attribute (or key) of the run's context
#: object, or a callable given the framework's per-call context object.
UserSource = str | Callable[[Any], Any]
#: What one session lasts for: the run, the framework's conversation (or thread) when it
#: names one, or a callable given the same object as a ``user`` callable, returning an id.
SessionSource = Literal["run", "conversation"] | Callable[[Any], Any]
#: What a refusal becomes: what the model reads (or an exception the framework turns into it).
OnRefuse = Callable[[ToolRefused], Any]


def user_from(source: UserSource, context: Any, arg: Any = None) -> str | None:
    """The user the application named for a call, never one the model names: ``source`` is
    an attribute (or key) of ``context``, or a callable given ``arg``. None when none is
    named; ``ToolRefused`` (``check_error``) when the application's source fails or names
    something other than a string."""
    try:
        if callable(source):
            user = source(arg)
        elif isinstance(context, Mapping):
            user = context.get(source)
        else:
            user = getattr(context, source, None)
    except Exception as exc:
        raise source_failed(
            "Who this call acts for", f"the user source raised {_named(exc)}"
        ) from None
    if user is None:
        return None
    if not isinstance(user, str):
        raise source_failed(
            "Who this call acts for", f"the user must be a string, not {_kind(user)}"
        )
    return user if user.strip() else None


def source_failed(what: str, detail: str) -> ToolRefused:
    """The refusal when the application's source of ``what`` (the user, the session) fails:
    ``check_error``, with ``detail`` for the audit only."""
    return ToolRefused(
        "check_error",
        f"{what} could not be found, so the call was not made. Tell the user.",
        detail=detail,
    )


def _named(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _kind(value: Any) -> str:
    return type(value).__name__


def refusal_text(refused: ToolRefused) -> str:
    """What the model reads when a call is refused: the reason and what to do next."""
    return f"Refused by toolpass ({refused.code}): {refused.message}"


@dataclass(frozen=True, slots=True)
class _Conversation:
    """A session key that is a conversation's id: equal ids share the session."""

    id: str


class _RunSessions:
    """Sessions by (run key, user), the key compared by identity (run contexts are often
    unhashable), or by (conversation id, user). A key that can be weakly referenced keeps its
    sessions while it lives; any other is held strongly, in a table of the ``limit`` most
    recently used sessions, so its ``id()`` cannot pass to a later object while its sessions
    are kept. Conversations are the toolkit's (``Toolkit.conversations``): shared with every
    other guard on it, so an agent or guard made anew for each request still continues the
    conversation's session."""

    def __init__(self, limit: int, conversations: Conversations) -> None:
        self._weak: dict[tuple[int, str], tuple[weakref.ref[Any], Session]] = {}
        self._held: OrderedDict[tuple[int, str], tuple[Any, Session]] = OrderedDict()
        self._conversations = conversations
        self._limit = limit
        self._lock = threading.Lock()

    def get(self, key: Any, user: str) -> Session:
        if isinstance(key, Session):
            if key.user != user:
                raise source_failed(
                    "The session of this call",
                    f"the session source gave {key.user!r}'s session for {user!r}",
                )
            return key
        if isinstance(key, _Conversation):
            return self._conversations.get(key.id, user)
        slot = (id(key), user)
        with self._lock:
            weak = self._weak.get(slot)
            if weak is not None and weak[0]() is key:
                return weak[1]
            held = self._held.get(slot)
            if held is not None and held[0] is key:
                self._held.move_to_end(slot)
                return held[1]
            session = session_for(user)
            try:
                self._weak[slot] = (weakref.ref(key, self._forget(slot)), session)
            except TypeError:  # not weakly referenceable: hold it
                self._held[slot] = (key, session)
                if len(self._held) > self._limit:
                    _oldest = self._held.popitem(last=False)  # freed once the lock is let go
            return session

    def _forget(self, slot: tuple[int, str]) -> Callable[[weakref.ref[Any]], None]:
        weak = self._weak

        def forget(ref: weakref.ref[Any]) -> None:
            # Runs as the key dies, before its id() can be reused; takes no lock, as the
            # collector may run it in a thread that holds it.
            if (entry := weak.get(slot)) is not None and entry[0] is ref:
                weak.pop(slot, None)

        return forget
