"""What every framework adapter shares, written once: rules, the check around a tool call,
the session it runs in, and the text the model reads when it is refused.

An adapter puts ``Guard.run`` (or ``Guard.check``, for frameworks whose hook only decides)
into its framework's own hook and translates; it holds no policy of its own. Each call goes
through the same pipeline as ``secured_tool``: session, authorization against the permission
engine (the rule's resource filled from the call's arguments, with the same safety as
``permission_check``), the request hook around the body, and one audit event.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from toolpass.toolkit.arguments import Binder
from toolpass.toolkit.audit import AuditEvent, emit
from toolpass.toolkit.authorize import PermissionCheck, PermissionEngine
from toolpass.toolkit.drivers import run_async, run_sync
from toolpass.toolkit.errors import ToolRefused
from toolpass.toolkit.pipeline import steps
from toolpass.toolkit.session import Session, current_session, session_for
from toolpass.toolkit.spec import ToolSpec
from toolpass.toolkit.toolkit import Toolkit, default_toolkit

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Rule:
    """Before the tool runs, ask ``connection`` whether the user may do ``action`` on
    ``resource`` (a template filled from the call's arguments: ``"issue:{key}"``)."""

    connection: str
    action: str
    resource: str
    fresh: bool = False


RuleLike = Rule | tuple[str, str, str]
#: Tool name (or a tuple of names sharing a rule) -> rule.
Rules = Mapping[str | tuple[str, ...], RuleLike]


def _rule(value: RuleLike) -> Rule:
    if isinstance(value, Rule):
        return value
    if isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, str) for v in value):
        return Rule(*value)
    raise TypeError(f"a rule is a Rule or a (connection, action, resource) tuple, not {value!r}")


#: Where an adapter finds the user: the name of an attribute (or key) of the run's context
#: object, or a callable the adapter gives the framework's own run context.
UserSource = str | Callable[[Any], Any]


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
        raise _unknown_user(f"the user source raised {type(exc).__name__}: {exc}") from None
    if user is None:
        return None
    if not isinstance(user, str):
        raise _unknown_user(f"the user must be a string, not {type(user).__name__}")
    return user if user.strip() else None


def _unknown_user(detail: str) -> ToolRefused:
    return ToolRefused(
        "check_error",
        "Who this call acts for could not be found, so it was not made. Tell the user.",
        detail=detail,
    )


def refusal_text(refused: ToolRefused) -> str:
    """What the model reads when a call is refused: the reason and what to do next."""
    return f"Refused by toolpass ({refused.code}): {refused.message}"


class Guard:
    """The framework-free half of an adapter.

    ``rules`` maps tool names to ``Rule``s; with ``strict=True`` a tool without a rule is
    refused, otherwise it runs unchecked (and audited). ``toolkit`` supplies audit sinks,
    limits and the request hook (``permissions``) for the calls.
    """

    #: How many sessions of runs whose key cannot be weakly referenced a guard keeps (the
    #: most recently used; see ``session``). Read when the guard is made.
    held_sessions = 1024

    def __init__(
        self,
        engine: PermissionEngine,
        rules: Rules | None = None,
        *,
        strict: bool = False,
        toolkit: Toolkit | None = None,
    ) -> None:
        self.engine = engine
        self.strict = strict
        self.toolkit = toolkit or default_toolkit
        self.rules: dict[str, Rule] = {}
        for names, value in (rules or {}).items():
            for name in (names,) if isinstance(names, str) else names:
                if not isinstance(name, str) or not name:
                    raise TypeError(f"a rule's key is a tool name or a tuple of names: {names!r}")
                self.rules[name] = _rule(value)
        self._specs: dict[str, ToolSpec] = {}
        self._sessions = _RunSessions(self.held_sessions)

    def rule(self, tool: str) -> Rule | None:
        return self.rules.get(tool)

    def _spec(self, tool: str) -> ToolSpec:
        spec = self._specs.get(tool)
        if spec is None:
            rule = self.rules.get(tool)
            authorize: Callable[[Any], Any] | None = None
            if rule is not None:
                authorize = PermissionCheck(
                    self.engine, rule.connection, rule.action, rule.resource, fresh=rule.fresh
                )
            elif self.strict:
                authorize = _no_rule
            spec = ToolSpec(
                _framework_tool,
                toolkit=self.toolkit,
                name=tool,
                effect=None,
                binder=Binder.passthrough(),
                scope=(),
                validators=(),
                limit=None,
                authorize=authorize,
                approve=False,
                preview=None,
                credential=None,
                reads_private=False,
                untrusted_output=False,
                sends_out=False,
                untrusted_inputs=None,
                exfiltration=None,
            )
            self._specs[tool] = spec
        return spec

    @contextmanager
    def session(self, user: str | None, key: Any = None) -> Iterator[Session]:
        """The session a call runs in: the active one if the application opened one, else the
        session of ``user`` in the run that ``key`` stands for (an object the framework makes
        once per run, never anything the model chooses).

        A run keeps one session per user while its key lives, if the key can be weakly
        referenced; otherwise (a dict, a TypedDict) the guard holds the key itself, so that no
        later object can take its ``id()``, while its session is among the ``held_sessions``
        most recently used. A new key starts a new session; without a key, every call does."""
        active = current_session()
        if active is not None:
            if user and active.user != user:
                raise ToolRefused(
                    "check_error",
                    "The call's user does not match the active session, so it was not made. "
                    "Tell the user.",
                    detail=f"session user {active.user!r}, framework user {user!r}",
                )
            yield active
            return
        if not isinstance(user, str) or not user.strip():
            raise ToolRefused(
                "no_session",
                "No user is known for this call, so it cannot act for anyone. The application "
                "must pass the user to the agent run.",
            )
        session = self._session_for(user, key)
        with session.active():
            yield session

    def _session_for(self, user: str, key: Any) -> Session:
        if key is None:
            return session_for(user)
        return self._sessions.get(key, user)

    def run(
        self,
        user: str | None,
        tool: str,
        arguments: Mapping[str, Any],
        body: Callable[[], T],
        *,
        key: Any = None,
    ) -> T:
        """Check the call, then run ``body`` (the framework's handler) inside the pipeline.
        Raises ``ToolRefused`` when the call may not run."""
        entered = False
        try:
            with self.session(user, key):
                entered = True
                result: T = run_sync(steps(self._spec(tool), (), dict(arguments), body))
                return result
        except ToolRefused as refused:
            if not entered:  # refused for want of a user: the pipeline never saw the call
                self.audit_refused(user, tool, arguments, refused)
            raise

    async def arun(
        self,
        user: str | None,
        tool: str,
        arguments: Mapping[str, Any],
        body: Callable[[], Awaitable[T]],
        *,
        key: Any = None,
    ) -> T:
        """``run`` for async frameworks; ``body`` returns an awaitable."""
        entered = False
        try:
            with self.session(user, key):
                entered = True
                result: T = await run_async(steps(self._spec(tool), (), dict(arguments), body))
                return result
        except ToolRefused as refused:
            if not entered:
                self.audit_refused(user, tool, arguments, refused)
            raise

    def audit_refused(
        self, user: str | None, tool: str, arguments: Mapping[str, Any], refused: ToolRefused
    ) -> None:
        """One audit event for a call refused before the pipeline saw it: no user, a user
        other than the active session's (``run`` does this itself), or a refusal an adapter
        makes on its own (its user source failed)."""
        event = AuditEvent(tool, None)
        event.user = user if isinstance(user, str) and user.strip() else None
        event.arguments = dict(arguments)
        event.code, event.message, event.detail = refused.code, refused.message, refused.detail
        event.detail = event.detail or None
        event.finish()
        emit(event, self.toolkit.sinks)

    def check(
        self, user: str | None, tool: str, arguments: Mapping[str, Any], *, key: Any = None
    ) -> ToolRefused | None:
        """For hooks that only decide: the refusal, or None when the call may run."""
        try:
            self.run(user, tool, arguments, _allowed, key=key)
        except ToolRefused as refused:
            return refused
        return None

    async def acheck(
        self, user: str | None, tool: str, arguments: Mapping[str, Any], *, key: Any = None
    ) -> ToolRefused | None:
        try:
            await self.arun(user, tool, arguments, _aallowed, key=key)
        except ToolRefused as refused:
            return refused
        return None


class _RunSessions:
    """Sessions by (run key, user), the key compared by identity (run contexts are often
    unhashable). A key that can be weakly referenced keeps its sessions while it lives; any
    other is held strongly, in a table of the ``limit`` most recently used sessions, so its
    ``id()`` cannot pass to a later object while its sessions are kept."""

    def __init__(self, limit: int) -> None:
        self._weak: dict[tuple[int, str], tuple[weakref.ref[Any], Session]] = {}
        self._held: OrderedDict[tuple[int, str], tuple[Any, Session]] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def get(self, key: Any, user: str) -> Session:
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


def _framework_tool(**arguments: Any) -> Any:
    """Stands for a framework's tool: the adapter passes the real body on each call."""
    raise RuntimeError("an adapter's tool runs through the body it passes")


def _no_rule(call: Any) -> bool:
    raise ToolRefused(
        "not_configured",
        f"toolpass has no rule for {call.name}, so it was not run. Tell the user; an operator "
        "must add one.",
    )


def _allowed() -> None:
    return None


async def _aallowed() -> None:
    return None
