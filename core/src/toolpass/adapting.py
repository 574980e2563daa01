"""What every framework adapter shares, written once: rules, the check around a tool call,
the user and session it runs for, the text the model reads when it is refused, and the
checks made when an adapter is built.

An adapter imports only this module (and its framework). It builds one ``Guard`` from its
options (which validates them all), puts ``Guard.run`` (or ``Guard.check``, for frameworks
whose hook only decides) into its framework's own hook, and translates; it holds no policy of
its own. Each call goes through the same pipeline as ``secured_tool``: session,
authorization against the permission engine (the rule's resource filled from the call's
arguments, with the same safety as ``permission_check``), the request hook around the body,
and one audit event.

The same options mean the same thing in every adapter:

- ``user``: where the user is, the name of an attribute (or key) of the framework's run
  context, or a callable given the framework's per-call context object. Never the model.
- ``session``: what one session (limits, untrusted-content record, data flow) lasts for:
  ``"run"`` (one agent run), ``"conversation"`` (the framework's thread or conversation id
  when the run has one, else the run; the default), or a callable given the same object as
  ``user`` that returns an id (None: the run) or the application's own ``Session`` (with
  the request's grants, trusted values and limits).
- ``on_refuse``: what the model reads for a refusal (``refusal_text``, or the framework's
  own failed-tool result); None lets the refusal end the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from toolpass.outcome.audit import AuditEvent, emit
from toolpass.outcome.errors import ApprovalPending, ToolRefused
from toolpass.rules.redact import REDACTED, redact, redact_text
from toolpass.rules.redact import usable as usable_secrets
from toolpass.toolkit import one_event
from toolpass.toolkit.approval import ApprovalQueue, ApprovalRequest, preview_of
from toolpass.toolkit.arguments import Binder
from toolpass.toolkit.authorize import PermissionCheck, PermissionEngine
from toolpass.toolkit.checks import CallState, expired_refusal
from toolpass.toolkit.drivers import run_async, run_sync
from toolpass.toolkit.pipeline import adecided, decided, steps
from toolpass.toolkit.session import Conversations, Session, current_session, session_for
from toolpass.toolkit.settings import Mode, check_mode, configured_mode
from toolpass.toolkit.spec import Declared, ToolCall, ToolSpec
from toolpass.toolkit.task import ToolInfo
from toolpass.toolkit.toolkit import Toolkit, default_toolkit

__all__ = [
    "APPROVAL",
    "REDACTED",
    "Answer",
    "ApprovalPending",
    "Explanation",
    "Guard",
    "OnRefuse",
    "Pending",
    "PermissionEngine",
    "Rule",
    "RuleLike",
    "Rules",
    "SessionSource",
    "ToolArguments",
    "ToolRefused",
    "Toolkit",
    "Traits",
    "UserSource",
    "expired_refusal",
    "redact",
    "redact_text",
    "refusal_text",
    "source_failed",
    "usable_secrets",
    "user_from",
]

T = TypeVar("T")
log = logging.getLogger("toolpass")
#: The refusals whose audit event is written (by the pipeline, or by ``Guard.refusing``).
_audited: weakref.WeakSet[ToolRefused] = weakref.WeakSet()
_audited_lock = threading.Lock()


#: The ``type`` of the payload a framework's pause carries for a call awaiting approval.
APPROVAL = "toolpass_approval"
_APPROVING = frozenset({"y", "yes", "approve", "approved", "accept", "allow"})
_Decision = Literal["approve", "deny", "edit", "expired"]
#: The decision each word a resume value may say means (any other word denies).
_SAID: dict[str, _Decision] = {
    "approve": "approve",
    "approved": "approve",
    "deny": "deny",
    "denied": "deny",
    "reject": "deny",
    "edit": "edit",
    "expired": "expired",
}


@dataclass(frozen=True)
class Pending:
    """A call waiting for a person, as an adapter pauses its framework for it: the request's
    id, who the call is for, the tool, the call's full arguments, why a person must decide,
    what the person reads (``preview``, ``message``) and when the request expires (the
    queue's clock)."""

    request_id: str
    user: str
    tool: str
    arguments: Mapping[str, Any]
    reasons: tuple[str, ...]
    preview: str
    expires: float
    message: str
    #: When the request was made (the queue's clock).
    created: float
    #: Each argument as the preview shows it (secrets by their digest), for a prompt.
    shown: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, request: ApprovalRequest, ttl: float) -> Pending:
        return cls(
            request_id=request.id,
            user=request.user,
            tool=request.tool,
            arguments=dict(request.arguments),
            reasons=tuple(request.reasons),
            preview=request.preview,
            expires=request.created + ttl,
            created=request.created,
            message=request.describe(),
            shown=request.shown_arguments(),
        )

    def payload(self) -> dict[str, Any]:
        """The pause's value, JSON only: ``type`` (``"toolpass_approval"``), ``request_id``,
        ``tool``, ``user``, ``arguments`` (as the preview shows them), ``reasons``,
        ``preview``, ``expires`` and ``message``."""
        return {
            "type": APPROVAL,
            "request_id": self.request_id,
            "tool": self.tool,
            "user": self.user,
            "arguments": dict(self.shown),
            "reasons": list(self.reasons),
            "preview": self.preview,
            "expires": self.expires,
            "message": self.message,
        }


@dataclass(frozen=True)
class Answer:
    """What a resume carries for a paused call: ``approve``, ``deny`` (with the person's
    ``reason``), ``edit`` (approve with the ``arguments`` the person wrote) or ``expired``
    (nobody answered in time); ``by`` names the person; ``request_id``, when given, is the
    request it answers (an answer naming another request is not taken for this one)."""

    decision: Literal["approve", "deny", "edit", "expired"]
    by: str = ""
    reason: str = ""
    arguments: Mapping[str, Any] | None = None
    request_id: str | None = None

    def __post_init__(self) -> None:
        if self.decision not in ("approve", "deny", "edit", "expired"):
            raise ValueError(f"an answer is approve, deny, edit or expired, not {self.decision!r}")
        if (self.decision == "edit") != isinstance(self.arguments, Mapping):
            raise ValueError("an edit (and only an edit) carries the arguments, as a mapping")

    @classmethod
    def of(cls, value: Any, *, by: str = "") -> Answer:
        """The answer a framework's resume value means: an ``Answer``; ``True`` or ``"y"``/
        ``"yes"``/``"approve"`` approve; a mapping with ``decision`` (or ``type``:
        ``approve``, ``deny``/``reject``, ``edit``, ``expired``) or ``approved`` (True or
        False), and ``by``, ``reason`` (or ``message``), ``arguments`` (or ``args``),
        ``request_id``. Anything else denies (an edit without a mapping of arguments too),
        never raises; ``by`` names the person when it does not."""
        if isinstance(value, Answer):
            return value
        if isinstance(value, Mapping):
            return cls._of_mapping(value, by)
        yes = value is True or (isinstance(value, str) and value.strip().lower() in _APPROVING)
        return cls("approve" if yes else "deny", by=by)

    @classmethod
    def _of_mapping(cls, value: Mapping[str, Any], by: str) -> Answer:
        said = value.get("decision", value.get("type"))
        if said is None:
            said = "approve" if value.get("approved", value.get("approve")) is True else "deny"
        decision = _SAID.get(said, "deny") if isinstance(said, str) else "deny"
        arguments = value.get("arguments", value.get("args"))
        if decision == "edit" and not isinstance(arguments, Mapping):
            decision = "deny"  # an edit without the arguments the person wrote
        named = value.get("by")
        request_id = value.get("request_id")
        return cls(
            decision,
            by=named if isinstance(named, str) and named.strip() else by,
            reason=str(value.get("reason") or value.get("message") or ""),
            arguments=arguments if decision == "edit" else None,
            request_id=request_id if isinstance(request_id, str) else None,
        )


@dataclass(frozen=True, slots=True)
class Rule:
    """Before the tool runs, ask ``connection`` whether the user may do ``action`` on
    ``resource`` (a template filled from the call's arguments: ``"issue:{key}"``).
    ``mode="observe"``: its tool's calls are audited as what would be refused, and run."""

    connection: str
    action: str
    resource: str
    fresh: bool = False
    mode: Mode | None = None

    def __post_init__(self) -> None:
        for name in ("connection", "action", "resource"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise TypeError(f"a rule's {name} is a non-empty string, not {value!r}")
        if not isinstance(self.fresh, bool):
            raise TypeError(f"a rule's fresh is True or False, not {self.fresh!r}")
        check_mode("mode", self.mode)

    def __str__(self) -> str:
        fresh = " (fresh)" if self.fresh else ""
        return f"{self.connection} {self.action} {self.resource}{fresh}"


@dataclass(frozen=True, slots=True)
class Traits:
    """What a framework tool does, as the application declares it (a value of ``rules``
    beside or instead of a ``Rule``): its ``effect``; whether it ``sends_out`` data,
    ``reads_private`` data, or returns untrusted content (``untrusted_output``, or only the
    ``untrusted_fields`` of its result); its ``destinations`` (argument names); what happens
    to a destination read only in untrusted content (``provenance``: check, approve, ignore,
    or ``request``: the user must have named it; or ``{argument: mode}``); what happens to
    private data in what it sends out (``private_data``: approve, refuse, ignore);
    whether every call needs a person's approval (``approve``, as ``secured_tool``'s);
    its permission ``rule``, if any; and what a call outside the session's task scope does
    (``outside_task``: ask or refuse; None: the toolkit's). Untrusted output is recorded for
    the checks, not fenced: the framework owns the tool's result."""

    effect: str | None = None
    sends_out: bool = False
    reads_private: bool = False
    untrusted_output: bool = False
    untrusted_fields: tuple[str, ...] = ()
    destinations: tuple[str, ...] = ()
    provenance: (
        Literal["check", "approve", "ignore", "request"]
        | Mapping[str, str]
        | tuple[tuple[str, str], ...]
        | None
    ) = None
    rule: Rule | None = None
    approve: bool = False
    private_data: Literal["approve", "refuse", "ignore"] | None = None
    outside_task: Literal["ask", "refuse"] | None = None

    def __post_init__(self) -> None:
        for name in ("sends_out", "reads_private", "untrusted_output", "approve"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"Traits.{name} is True or False, not {getattr(self, name)!r}")
        if self.effect is not None and not (isinstance(self.effect, str) and self.effect):
            raise TypeError(f"Traits.effect is an effect's name, not {self.effect!r}")
        for name in ("untrusted_fields", "destinations"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
                raise TypeError(f"Traits.{name} is a tuple of names, not {value!r}")
        modes = ("check", "approve", "ignore", "request")
        given = self.provenance
        if isinstance(given, Mapping):
            given = tuple(given.items())
            object.__setattr__(self, "provenance", given)  # frozen: kept hashable
        if isinstance(given, tuple):
            if not all(isinstance(n, str) and m in modes for n, m in given):
                raise ValueError(f"Traits.provenance maps arguments to {modes}, not {given!r}")
            extra = tuple(n for n, _ in given if n not in self.destinations)
            object.__setattr__(self, "destinations", (*self.destinations, *extra))
        elif given not in (None, *modes):
            raise ValueError(
                f"Traits.provenance is check, approve, ignore or request, not {given!r}"
            )
        if self.private_data not in (None, "approve", "refuse", "ignore"):
            raise ValueError(
                f"Traits.private_data is approve, refuse or ignore, not {self.private_data!r}"
            )
        if self.rule is not None and not isinstance(self.rule, Rule):
            raise TypeError(f"Traits.rule is a Rule, not {self.rule!r}")
        check_mode("outside_task", self.outside_task)

    def declared(self, **adapter: Any) -> Declared:
        """What these traits declare, as a ``secured_tool``'s options are declared, with
        what the ``adapter`` adds (its authorizer, preview, mode...)."""
        fields = frozenset(self.untrusted_fields) or None
        shared = {name: getattr(self, name) for name in _SHARED_TRAITS}
        shared.update(
            untrusted_fields=fields, untrusted_output=self.untrusted_output or bool(fields)
        )
        return Declared(**shared, **adapter)


#: The traits that are a secured tool's options of the same name (all but ``rule``).
_SHARED_TRAITS = tuple(f.name for f in dataclasses.fields(Traits) if f.name != "rule")

RuleLike = Rule | tuple[str, str, str] | Traits
#: Tool name (or a tuple of names sharing a rule) -> rule.
Rules = Mapping[str | tuple[str, ...], RuleLike]
#: Where an adapter finds the user: the name of an attribute (or key) of the run's context
#: object, or a callable given the framework's per-call context object.
UserSource = str | Callable[[Any], Any]
#: What one session lasts for: the run, the framework's conversation (or thread) when it
#: names one, or a callable given the same object as a ``user`` callable, returning an id.
SessionSource = Literal["run", "conversation"] | Callable[[Any], Any]
#: What a refusal becomes: what the model reads (or an exception the framework turns into it).
OnRefuse = Callable[[ToolRefused], Any]
#: The tools an adapter knows: name -> the names of its arguments (None: not known).
ToolArguments = Mapping[str, Collection[str] | None]


def _rule(value: RuleLike) -> Rule:
    if isinstance(value, Rule):
        return value
    if isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, str) for v in value):
        return Rule(*value)
    raise TypeError(f"a rule is a Rule or a (connection, action, resource) tuple, not {value!r}")


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


class Guard:
    """The framework-free half of an adapter, and every check of its options.

    ``engine`` answers the rules' questions (``toolpass.Toolpass``, ``Toolpass.remote(...)``
    or any object with its ``check``). ``rules`` maps tool names (or tuples of names sharing
    a rule) to ``Rule``s or ``(connection, action, resource)`` tuples; with ``strict=True`` a
    tool without a rule is refused, otherwise it runs unchecked (and audited). ``toolkit``
    supplies audit sinks, limits and the request hook (``permissions``) for the calls.
    ``user``, ``session`` and ``on_refuse``: see the module's docstring. ``mode="observe"``
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


@dataclass(frozen=True)
class Explanation:
    """What a guard does with each tool (``Guard.explain``)."""

    rules: Mapping[str, Rule]
    #: The tools the guard knows of (name -> argument names, None when not known).
    tools: Mapping[str, frozenset[str] | None]
    strict: bool
    #: Whether ``tools`` are all the agent's tools (else more may come as it runs).
    complete: bool
    problems: tuple[str, ...] = field(default=())

    @property
    def unchecked(self) -> list[str]:
        """The known tools with no rule: refused under ``strict``, else run unchecked."""
        return sorted(t for t in self.tools if t not in self.rules)

    def __str__(self) -> str:
        names = sorted(set(self.tools) | set(self.rules))
        width = max((len(n) for n in names), default=0)
        no_rule = "refused (strict, no rule)" if self.strict else "UNCHECKED (no rule)"
        lines = []
        for name in names:
            rule = self.rules.get(name)
            said = str(rule) if rule else no_rule
            if self.complete and name not in self.tools:
                said += "  (the agent has no such tool)"
            lines.append(f"{name.ljust(width)}  {said}")
        if not self.complete:
            lines.append(
                f"(tools known only as the agent runs: each one without a rule is {no_rule})"
            )
        lines += [f"problem: {p}" for p in self.problems]
        return "\n".join(lines)


def _rules(rules: Rules | None) -> tuple[dict[str, Rule], dict[str, Traits]]:
    """The rules by tool name, and the tools' declared traits."""
    if rules is None:
        return {}, {}
    if not isinstance(rules, Mapping):
        raise TypeError(f"rules map tool names to rules, not {_kind(rules)}")
    found: dict[str, Rule] = {}
    traits: dict[str, Traits] = {}
    for names, value in rules.items():
        for name in (names,) if isinstance(names, str) else names:
            if not isinstance(name, str) or not name:
                raise TypeError(f"a rule's key is a tool name or a tuple of names: {names!r}")
            if name in found or name in traits:
                raise ValueError(f"{name!r} has two rules")
            if isinstance(value, Traits):
                traits[name] = value
                if value.rule is not None:
                    found[name] = value.rule
            else:
                found[name] = _rule(value)
    return found, traits


_NO_TRAITS = Traits()


def _tool_info(name: str, traits: Traits) -> ToolInfo:
    """What a task planner is told of a framework's tool: its traits."""
    return ToolInfo(
        name=name,
        effect=traits.effect,
        destinations=traits.destinations,
        sends_out=traits.sends_out,
        reads_private=traits.reads_private,
        untrusted_output=traits.untrusted_output or bool(traits.untrusted_fields),
    )


def _check_effects(traits: Mapping[str, Traits], known: Collection[str]) -> None:
    """Refuse an effect the toolkit does not know, as ``secured_tool`` does."""
    for tool, declared in traits.items():
        if declared.effect is not None and declared.effect not in known:
            raise ValueError(
                f"{tool}: effect {declared.effect!r} is not one of {', '.join(sorted(known))}; "
                "declare an effect of your own with Toolkit(effects=[...]) first"
            )


def _check_engine(engine: Any, needed: bool) -> None:
    if engine is None and not needed:
        return
    if isinstance(engine, type) or not callable(getattr(engine, "check", None)):
        raise TypeError(
            "engine is a permission engine (toolpass.Toolpass, Toolpass.remote(...) or an "
            f"object with check(user, connection, action, resource)), not {engine!r}"
        )


def _permission_check(engine: Any, tool: str, rule: Rule) -> PermissionCheck:
    try:
        return PermissionCheck(
            engine, rule.connection, rule.action, rule.resource, fresh=rule.fresh
        )
    except ValueError as exc:
        raise ValueError(f"the rule for {tool!r}: {exc}") from None


def _by_rule(rules: Mapping[str, Rule]) -> dict[tuple[str, str], list[str]]:
    grouped: dict[tuple[str, str], list[str]] = {}
    for name, rule in rules.items():
        grouped.setdefault((rule.connection, rule.action), []).append(name)
    return grouped


def _engine_problems(engine: Any, rules: Mapping[str, Rule]) -> list[str]:
    """The rules naming a connection or action the engine says it does not have (an engine
    that cannot tell, a remote one before it has asked, has none)."""
    configured = getattr(engine, "configured", None)
    if not callable(configured):
        return []
    known = getattr(engine, "connections", None)
    problems = []
    for (connection, action), tools in _by_rule(rules).items():
        if configured(connection, action):
            continue
        if isinstance(known, tuple) and connection not in known:
            there = ", ".join(map(str, known)) or "none"
            why = f"the engine has no connection {connection!r} (it has: {there})"
        else:
            why = f"connection {connection!r} has no action {action!r}"
        problems.append(f"the rule for {', '.join(map(repr, tools))}: {why}")
    return problems


def _template_problems(
    checks: Mapping[str, PermissionCheck], tools: Mapping[str, frozenset[str] | None]
) -> list[str]:
    problems = []
    for name, check in checks.items():
        arguments = tools.get(name)
        missing = [] if arguments is None else [f for f in check.fields if f not in arguments]
        if missing:
            takes = ", ".join(sorted(arguments or ())) or "no arguments"
            problems.append(
                f"the rule for {name!r}: resource template {check.template!r} names "
                f"{', '.join(missing)}, which the tool does not take (it takes: {takes})"
            )
    return problems


def _missing_problems(rules: Mapping[str, Rule], tools: Mapping[str, Any]) -> list[str]:
    missing = [name for name in rules if name not in tools]
    if not missing:
        return []
    has = ", ".join(sorted(tools)) or "none"
    return [f"rules for tools the agent does not have: {', '.join(missing)} (it has: {has})"]


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


def _record(queue: ApprovalQueue, request_id: str, answer: Answer) -> None:
    """Write a person's answer into the queue's record of the request."""
    by = answer.by or "the application"
    if answer.decision == "approve":
        queue.approve(request_id, by=by)
    elif answer.decision == "edit":
        assert answer.arguments is not None
        queue.edit(request_id, by=by, arguments=answer.arguments)
    else:
        queue.deny(request_id, by=by, reason=answer.reason)


def _preview(call: ToolCall) -> str:
    """What a person approving a framework tool's call reads: every argument it was given."""
    return preview_of(call.arguments)


def _framework_tool(**arguments: Any) -> Any:
    """Stands for a framework's tool: the adapter passes the real body on each call."""
    raise RuntimeError("an adapter's tool runs through the body it passes")


def _no_rule(call: Any) -> bool:
    raise ToolRefused(
        "not_configured",
        f"toolpass has no rule for {call.name}, so it was not run. Tell the user; an operator "
        "must add one.",
    )
