"""``Guard``: the framework-free half of every adapter, the check around each tool call (the
same pipeline as ``secured_tool``), the session it runs in, and the approval machine."""

from __future__ import annotations

import contextlib
import logging
import threading
import warnings
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from toolpass.adapting.approvals import Answer, Pending, _preview, _record
from toolpass.adapting.rules import (
    _NO_TRAITS,
    Explanation,
    Rule,
    Rules,
    ToolArguments,
    _check_effects,
    _check_engine,
    _engine_problems,
    _missing_problems,
    _permission_check,
    _rules,
    _template_problems,
    _tool_info,
)
from toolpass.adapting.sources import (
    OnRefuse,
    SessionSource,
    UserSource,
    _Conversation,
    _kind,
    _named,
    _RunSessions,
    refusal_text,
    source_failed,
    user_from,
)
from toolpass.outcome.audit import AuditEvent, emit
from toolpass.outcome.errors import ApprovalPending, ToolRefused
from toolpass.toolkit import one_event
from toolpass.toolkit.approval import ApprovalQueue, ApprovalRequest
from toolpass.toolkit.arguments import Binder
from toolpass.toolkit.authorize import PermissionEngine
from toolpass.toolkit.checks import CallState, expired_refusal
from toolpass.toolkit.drivers import run_async, run_sync
from toolpass.toolkit.pipeline import adecided, decided, steps
from toolpass.toolkit.session import Session, current_session, session_for
from toolpass.toolkit.settings import Mode, check_mode, configured_mode
from toolpass.toolkit.spec import ToolSpec
from toolpass.toolkit.toolkit import Toolkit, default_toolkit

T = TypeVar("T")
log = logging.getLogger("toolpass")
#: The refusals whose audit event is written (by the pipeline, or by ``Guard.refusing``).
_audited: weakref.WeakSet[ToolRefused] = weakref.WeakSet()
_audited_lock = threading.Lock()


class Guard:
    """The framework-free half of an adapter, and every check of its options.

    ``engine`` answers the rules' questions (``toolpass.Toolpass``, ``Toolpass.remote(...)``
    or any object with its ``check``). ``rules`` maps tool names (or tuples of names sharing
    a rule) to ``Rule``s or ``(connection, action, resource)`` tuples; with ``strict=True`` a
    tool without a rule is refused, otherwise it runs unchecked (and audited). ``toolkit``
    supplies audit sinks, limits and the request hook (``permissions``) for the calls.
    ``user``, ``session`` and ``on_refuse``: see ``toolpass.adapting``. ``mode="observe"``
    runs every call and audits what would have been refused (a rule's own ``mode`` wins; None:
    the toolkit's, else the engine's configuration's). ``approval_wait``: seconds a call
    waiting in the approval queue blocks, within its one check and its one audit event, for
    a person's answer (for frameworks with no pause; None: refused ``approval_pending``).

    Everything is checked here, once, for every adapter: a rule that is not one, a resource
    template that cannot be filled, a connection or action the engine says it does not have,
    an engine that is not one, a user, session or ``on_refuse`` of the wrong kind all raise
    (``TypeError`` or ``ValueError``). ``add_tools`` checks the rules against the agent's
    tools once the adapter knows them; ``explain`` says what each tool gets.
    """

    #: How many sessions of runs whose key cannot be weakly referenced, and of conversations,
    #: a guard keeps (the most recently used; see ``session``). Read when the guard is made.
    held_sessions = 1024

    def __init__(
        self,
        engine: PermissionEngine | None,
        rules: Rules | None = None,
        *,
        strict: bool = False,
        toolkit: Toolkit | None = None,
        user: UserSource = "user_id",
        session: SessionSource = "conversation",
        on_refuse: OnRefuse | None = refusal_text,
        mode: Mode | None = None,
        approval_wait: float | None = None,
    ) -> None:
        check_mode("mode", mode)
        if not isinstance(strict, bool):
            raise TypeError(f"strict is True or False, not {strict!r}")
        if toolkit is not None and not isinstance(toolkit, Toolkit):
            raise TypeError(f"toolkit is a toolpass.Toolkit, not {_kind(toolkit)}")
        if not (callable(user) or (isinstance(user, str) and user.strip())):
            raise TypeError(f"user is a context attribute's name or a callable, not {user!r}")
        if not (callable(session) or session in ("run", "conversation")):
            raise TypeError(f"session is 'run', 'conversation' or a callable, not {session!r}")
        if on_refuse is not None and not callable(on_refuse):
            raise TypeError(f"on_refuse is a callable (or None), not {on_refuse!r}")
        self.engine = engine
        self.strict = strict
        self.toolkit = toolkit or default_toolkit
        self.user = user
        self.session_source = session
        self.on_refuse = on_refuse
        self.approval_wait = approval_wait
        self.rules, self.traits = _rules(rules)
        #: ``observe`` or ``enforce`` by tool: its rule's mode, else the guard's (None: the
        #: toolkit's, else the engine's configuration's).
        self.mode = mode
        self.modes = {name: rule.mode or mode for name, rule in self.rules.items()}
        _check_effects(self.traits, self.toolkit.settings.effects)
        _check_engine(engine, bool(self.rules))
        self._checks = {
            name: _permission_check(engine, name, rule) for name, rule in self.rules.items()
        }
        if problems := _engine_problems(engine, self.rules):
            raise ValueError("; ".join(problems))
        self.tools: dict[str, frozenset[str] | None] = {}
        self.tools_complete = False
        self._warned: set[str] = set()
        self._specs: dict[str, ToolSpec] = {}
        self._bodies_only = False  # see for_bodies
        self._sessions = _RunSessions(self.held_sessions, self.toolkit.conversations)

    def for_bodies(self) -> Guard:
        """A guard for the bodies of calls this one has already checked (for frameworks
        whose hook decides before the tool runs and wraps the body apart): the same toolkit,
        sources and traits, but only the session and the body: no check, limit slot or
        approval a second time; the output is recorded as the tools' traits say."""
        body = Guard(
            self.engine,
            None,
            toolkit=self.toolkit,
            user=self.user,
            session=self.session_source,
            on_refuse=self.on_refuse,
            mode=self.mode,
        )
        body.traits, body.modes, body._bodies_only = self.traits, self.modes, True
        return body

    def rule(self, tool: str) -> Rule | None:
        return self.rules.get(tool)

    # What the adapter learns of the agent.

    def add_tools(self, tools: ToolArguments, *, complete: bool = True, late: bool = False) -> None:
        """Check the rules against tools the agent has: ``tools`` maps each name to its
        arguments' names (None when the adapter cannot know them). A rule's template naming
        an argument its tool does not take is an error; so is, when ``complete`` (these are
        all the tools the agent can call), a rule for a tool the agent does not have. With
        ``late`` (the tools became known as the agent runs) each problem is a warning,
        given once, instead of an error, so that a run is not broken."""
        for name, arguments in tools.items():
            known = None if arguments is None else frozenset(arguments)
            if self.tools.get(name) is None:
                self.tools[name] = known
            self.toolkit.know_tool(_tool_info(name, self.traits.get(name, _NO_TRAITS)))
        self.tools_complete = self.tools_complete or complete
        problems = _template_problems(self._checks, self.tools)
        if complete:
            problems += _missing_problems(self.rules, self.tools)
        problems = [p for p in problems if p not in self._warned]
        if not problems:
            return
        if not late:
            raise ValueError("; ".join(problems))
        self._warned.update(problems)
        for problem in problems:
            warnings.warn(f"toolpass: {problem}", stacklevel=3)

    def explain(self, engine: PermissionEngine | None = None) -> Explanation:
        """Every tool the guard knows, its rule, the tools that run unchecked, and what is
        wrong (``problems``; checked against ``engine`` too when one is given, as
        ``toolpass lint`` does). ``str()`` of it is a readable table."""
        problems = _template_problems(self._checks, self.tools)
        if self.tools_complete:
            problems += _missing_problems(self.rules, self.tools)
        if engine is not None:
            problems += _engine_problems(engine, self.rules)
        return Explanation(
            rules=dict(self.rules),
            tools=dict(self.tools),
            strict=self.strict,
            complete=self.tools_complete,
            problems=tuple(problems),
        )

    # What the adapter reads of each call.

    def user_of(self, context: Any, arg: Any = None) -> str | None:
        """The user of a call, from ``context`` (for an attribute name) or ``arg`` (given to
        a callable); see ``user_from``."""
        return user_from(self.user, context, arg)

    def key(self, run: Any, conversation: Any = None, arg: Any = None) -> Any:
        """What a call's session is kept under, by ``session=``: ``run`` (an object the
        framework makes once per run, never anything the model chooses), or the id of the
        framework's ``conversation`` (a string or number; None when the run has none), or what
        the ``session`` callable returns for ``arg``."""
        source = self.session_source
        if source == "run":
            return run
        if source == "conversation":
            value = conversation
        else:
            try:
                value = source(arg)
            except Exception as exc:
                raise source_failed(
                    "The session of this call", f"session raised {_named(exc)}"
                ) from None
        if value is None:
            return run
        if isinstance(value, Session):
            return value  # the application's own session (its grants, request, limits)
        if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
            detail = f"a session id is a non-empty string, a number or a Session, not {value!r}"
            raise source_failed("The session of this call", detail)
        return _Conversation(str(value))

    # The call.

    def _spec(self, tool: str) -> ToolSpec:
        spec = self._specs.get(tool)
        if spec is None:
            authorize: Callable[[Any], Any] | None = self._checks.get(tool)
            if authorize is None and self.strict:
                authorize = _no_rule
            traits = self.traits.get(tool, _NO_TRAITS)
            spec = ToolSpec(
                _framework_tool,
                traits.declared(
                    authorize=authorize,
                    preview=_preview,  # the binder knows no names: show every argument given
                    fences=False,  # the framework owns the result: recorded, not rewritten
                    checked_elsewhere=self._bodies_only,
                    framework=True,
                    mode=self.modes.get(tool, self.mode),
                    default_mode=configured_mode(self.engine),
                    approval_wait=self.approval_wait,
                ),
                toolkit=self.toolkit,
                name=tool,
                binder=Binder.passthrough(),
                key=f"framework tool {tool}",  # one tool, whichever guard checks it
            )
            self._specs[tool] = spec
        return spec

    @contextmanager
    def session(self, user: str | None, key: Any = None) -> Iterator[Session]:
        """The session a call runs in: the active one if the application opened one, else the
        session of ``user`` under ``key`` (from ``key()``).

        A run keeps one session per user while its key lives, if the key can be weakly
        referenced; otherwise (a dict, a TypedDict) the guard holds the key itself, so that no
        later object can take its ``id()``, while its session is among the ``held_sessions``
        most recently used; a conversation's session is kept by its id, also among the
        ``held_sessions`` most recently used. A new key starts a new session; without a key,
        every call does."""
        # The decision of a hook this may be the body of (made for this very user).
        held = one_event.claim(user or getattr(current_session(), "user", None))
        failure: BaseException | None = None
        try:
            active = current_session()
            if active is not None:
                if user and active.user != user:
                    raise ToolRefused(
                        "check_error",
                        "The call's user does not match the active session, so it was not "
                        "made. Tell the user.",
                        detail=f"session user {active.user!r}, framework user {user!r}",
                    )
                yield active
                return
            session = self._session_of(user, key)
            with session.active():
                yield session
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if held is not None:  # a body that ran no pipeline: its decision is written now
                one_event.release(held, failure)

    def _session_of(self, user: str | None, key: Any) -> Session:
        if not isinstance(user, str) or not user.strip():
            source = self.user
            where = (
                f"the callable {getattr(source, '__qualname__', source)!r}"
                if callable(source)
                else f"the run context's {source!r}"
            )
            raise ToolRefused(
                "no_session",
                "No user is known for this call, so it cannot act for anyone. The application "
                f"must pass the user to the agent run (toolpass looked in {where}, and found "
                "no active toolpass Session).",
                detail=f"no user in {where}; no active Session",
            )
        return session_for(user) if key is None else self._sessions.get(key, user)

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
            self._refused(user, tool, arguments, refused, audited=entered)
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
            self._refused(user, tool, arguments, refused, audited=entered)
            raise

    # Approvals: the pause and the resume, for adapters whose framework pauses a run.

    @property
    def queue(self) -> ApprovalQueue | None:
        """The toolkit's approval queue, when its approver is one (else no call pauses)."""
        approver = self.toolkit.settings.approver
        return approver if isinstance(approver, ApprovalQueue) else None

    def pending(self, refused: ToolRefused) -> Pending | None:
        """The pause for ``refused``, when it is a call waiting for a person in the queue
        (None otherwise: the refusal is the answer)."""
        queue = self.queue
        if queue is None or not isinstance(refused, ApprovalPending):
            return None
        request = refused.request
        if not isinstance(request, ApprovalRequest) or request.status != "pending":
            return None  # running already, or not the queue's: the refusal says so
        return Pending.of(request, queue.ttl)

    def answer(
        self,
        request_id: str,
        answer: Answer,
        user: str | None,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        key: Any = None,
    ) -> Mapping[str, Any]:
        """Record a resume's ``answer`` to request ``request_id``, the one this very call
        (``user``, ``tool``, ``arguments``, in the session ``key`` keeps, as ``run`` takes
        it) paused for, and give the arguments the call now runs with (the person's, for an
        edit). The resume decides nothing itself: the check
        runs again after it and the queue's record decides, so an answer for another
        request, another call, or a request decided, used or unknown is not recorded (the
        call asks anew, or is refused by the record). ``ToolRefused``
        (``approval_expired``, audited) once the request has expired."""
        queue = self.queue
        if queue is None or not isinstance(request_id, str):
            return arguments
        state = queue.state(request_id)
        ours = answer.request_id in (None, request_id) and (
            state == "pending" and self._asked_by(queue, request_id, user, tool, arguments, key)
        )
        if ours and answer.decision == "expired":
            queue.expire(request_id)
            state = "expired"
        if state == "expired":
            refused = expired_refusal(request_id)
            self._refused(user, tool, arguments, refused)
            raise refused
        if not ours:
            return arguments
        try:
            _record(queue, request_id, answer)
        except (KeyError, ValueError, PermissionError) as exc:  # decided meanwhile, or theirs
            log.warning("toolpass: the answer to %s was not recorded: %s", request_id, exc)
            return arguments
        return answer.arguments if answer.arguments is not None else arguments

    def waits(
        self,
        request_id: str,
        user: str | None,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        key: Any = None,
    ) -> bool:
        """Whether request ``request_id`` still waits for a person and was made for this
        very call (``user``, ``tool``, ``arguments``, in the session ``key`` keeps)."""
        queue = self.queue
        if queue is None or queue.state(request_id) != "pending":
            return False
        return self._asked_by(queue, request_id, user, tool, arguments, key)

    def _asked_by(
        self,
        queue: ApprovalQueue,
        request_id: str,
        user: str | None,
        tool: str,
        arguments: Mapping[str, Any],
        key: Any,
    ) -> bool:
        """Whether request ``request_id`` was made for this very call: its user, its session
        (the one ``key`` keeps), its tool and its arguments (compared as Python writes them,
        in whichever process the request was made: ``"5"`` is not ``5``)."""
        try:
            request = queue.get(request_id)
        except KeyError:
            return False
        written = {str(name): repr(value) for name, value in arguments.items()}
        same = written == request.written_arguments()
        ours = request.user == user and request.tool == tool and same
        return ours and request.session_id == self._session_id(user, key)

    def _session_id(self, user: str | None, key: Any) -> str | None:
        """The id of the session a call of ``user`` under ``key`` runs in (None when it has
        none: no user, or no key, which makes every call a new session)."""
        active = current_session()
        if active is not None:
            return active.id
        if key is None:
            return None
        try:
            return self._session_of(user, key).id
        except ToolRefused:  # no user, or a session not theirs: the run refuses it
            return None

    def resume(
        self,
        user: str | None,
        tool: str,
        arguments: Mapping[str, Any],
        body: Callable[[Mapping[str, Any]], Callable[[], T]],
        *,
        request_id: str,
        answer: Answer,
        key: Any = None,
    ) -> T:
        """A paused call resumed with ``answer``: the answer recorded (``answer``), then the
        whole check again and the body (``body(arguments)`` makes it for the arguments the
        call runs with), once. Raises ``ToolRefused`` as ``run`` does."""
        runs_with = self.answer(request_id, answer, user, tool, arguments, key=key)
        return self.run(user, tool, runs_with, body(runs_with), key=key)

    async def aresume(
        self,
        user: str | None,
        tool: str,
        arguments: Mapping[str, Any],
        body: Callable[[Mapping[str, Any]], Callable[[], Awaitable[T]]],
        *,
        request_id: str,
        answer: Answer,
        key: Any = None,
    ) -> T:
        """``resume`` for async frameworks."""
        runs_with = self.answer(request_id, answer, user, tool, arguments, key=key)
        return await self.arun(user, tool, runs_with, body(runs_with), key=key)

    def who(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        context: Any,
        arg: Any = None,
        *,
        run: Any = None,
        conversation: Any = None,
    ) -> tuple[str | None, Any]:
        """The call's user (``user_of(context, arg)``) and the key its session is kept under
        (``key(run, conversation, arg)``). When the application's source fails, the call is
        refused before the pipeline sees it: audited here, once, and ``ToolRefused`` raised
        for the adapter to translate."""
        with self.refusing(tool, arguments):
            return self.user_of(context, arg), self.key(run, conversation, arg)

    @contextmanager
    def refusing(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        user: str | None = None,
        *,
        failed: Callable[[Exception], ToolRefused | None] | None = None,
    ) -> Iterator[None]:
        """Around what an adapter does for a call outside the pipeline (reading its user or
        session, a host's prompt, finding the hook's decision): a ``ToolRefused`` raised
        inside, or an exception that ``failed`` makes one of (None, or no ``failed``: it
        propagates), refuses the call: its one audit event is written here (never a second
        one for a refusal the pipeline wrote) and the refusal raised for the adapter to
        translate."""
        try:
            yield
        except ToolRefused as refused:
            self._refused(user, tool, arguments, refused)
            raise
        except Exception as exc:
            failure = None if failed is None else failed(exc)
            if failure is None:
                raise
            self._refused(user, tool, arguments, failure)
            raise failure from None

    def _refused(
        self,
        user: str | None,
        tool: str,
        arguments: Mapping[str, Any],
        refused: ToolRefused,
        *,
        audited: bool = False,
    ) -> None:
        """The one audit event of a call refused outside the pipeline (none when ``audited``:
        the pipeline wrote it), written once however many layers see the refusal."""
        with _audited_lock:
            if refused in _audited:
                return
            _audited.add(refused)
        if audited:
            return
        if refused.code == "check_error":
            log.warning("toolpass: %s was refused before it was checked: %s", tool, refused.detail)
        event = AuditEvent(tool, None)
        event.user = user if isinstance(user, str) and user.strip() else None
        event.arguments = dict(arguments)
        event.code, event.message, event.detail = refused.code, refused.message, refused.detail
        event.detail = event.detail or None
        event.finish()
        emit(event, self.toolkit.sinks)

    def check(
        self,
        user: str | None,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        key: Any = None,
        body_follows: bool = False,
    ) -> ToolRefused | None:
        """For hooks that only decide: the refusal, or None when the call may run.

        ``body_follows``: the framework runs the call's body next, in this context (or a
        task or thread started from it), inside ``session``: an allowed call's audit event
        then waits for the body and is written with it, as one event with the outcome of
        the body (a ``secured_tool``'s own checks included)."""
        try:
            with one_event.holding() if body_follows else contextlib.nullcontext():
                self.run(user, tool, arguments, decided, key=key)
        except ToolRefused as refused:
            return refused
        return None

    @staticmethod
    def held_decision() -> object | None:
        """The allowed decision the last ``check(..., body_follows=True)`` in this context
        holds for its body (None when none), for a framework whose hook and body run in
        different tasks: the adapter hands it to ``body_of`` around the body."""
        return one_event.held()

    @staticmethod
    @contextmanager
    def body_of(decision: object | None) -> Iterator[None]:
        """Run, inside, the body of the call ``decision`` (``held_decision``) allowed: the
        decision's audit event is written with the body's, as one."""
        held = decision if isinstance(decision, CallState) else None
        with one_event.carried(held):
            yield

    async def acheck(
        self,
        user: str | None,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        key: Any = None,
        body_follows: bool = False,
    ) -> ToolRefused | None:
        """``check`` for async frameworks."""
        try:
            with one_event.holding() if body_follows else contextlib.nullcontext():
                await self.arun(user, tool, arguments, adecided, key=key)
        except ToolRefused as refused:
            return refused
        return None


def _framework_tool(**arguments: Any) -> Any:
    """Stands for a framework's tool: the adapter passes the real body on each call."""
    raise RuntimeError("an adapter's tool runs through the body it passes")


def _no_rule(call: Any) -> bool:
    raise ToolRefused(
        "not_configured",
        f"toolpass has no rule for {call.name}, so it was not run. Tell the user; an operator "
        "must add one.",
    )
