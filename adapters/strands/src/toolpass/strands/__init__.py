"""toolpass for Strands Agents: every tool call of an agent checked before it runs.

``ToolpassAuthorization`` is an intervention handler
(``Agent(..., interventions=[ToolpassAuthorization(tp, rules)])``). The user comes from the
invocation's state, which the application passes
(``agent("...", invocation_state={"user_id": user.email})``), never from the model.

Why the check runs around the tool, not in ``before_tool_call`` alone: an intervention only
decides, and toolpass must also run the tool's body inside the call (a toolpass ``Session``
for the user, the request hook watching what the body sends, one audit event for the whole
call, the call's limit slot and approval spent only when the body runs). So
``before_tool_call`` swaps ``event.selected_tool`` (writable for this purpose) for a wrapper,
and the whole toolpass pipeline runs when Strands executes that wrapper, with the real tool as
the pipeline's body step. This has three consequences, all on purpose:

- the check sees the very call that runs: after every other handler and hook, every
  ``Transform`` and every ``ExecuteToolStage`` middleware has had its say;
- it composes with Strands' own ``CedarAuthorization`` and ``HumanInTheLoop`` in either order,
  the most restrictive wins: a call they deny or a person refuses never reaches toolpass (and
  spends nothing), and one they let through is still refused by toolpass when it must be;
- a refusal is the tool's error result, so the model reads the toolpass text once, exactly
  (``Refused by toolpass (<code>): <reason>``), not Strands' ``DENIED: `` form, and the run
  goes on. The tool's streamed events are passed on when the call is over (the body runs
  inside the pipeline), not as they come.

The price: a person asked by ``HumanInTheLoop`` may be asked about a call toolpass then
refuses, and a handler or hook listed after toolpass that swaps the selected tool again takes
the call out of its hands (list toolpass after any handler that replaces tools).

Approvals: when the pipeline needs a person (``toolkit=Toolkit(approver=ApprovalQueue())``
and a check asking for approval), the call raises a Strands interrupt named
``"toolpass-approval:<request id>"`` whose ``reason`` carries the request
(``toolpass.adapting.Pending.payload()``: ``type``, ``request_id``, ``tool``, ``user``,
``arguments`` as the preview shows them, ``reasons``, ``preview``, ``expires``, and
``message``: who asks for what, why, with every argument; and ``"toolpass": "approval"``).
Each request is its own interrupt: two calls that share a
``toolUseId`` (one model message can hold both) are asked, and answered, apart. The run
stops with ``stop_reason == "interrupt"``; the application
resumes it with the person's answer (``{"interruptResponse": {"interruptId": ..., "response":
"y"}}``; ``True``, ``"y"``, ``"yes"`` or ``{"approved": True, "by": "lee"}`` approve, anything
else denies, ``{"approved": False, "by": ..., "reason": ...}`` says why, ``{"decision": "edit",
"arguments": {...}}`` approves other arguments, which are checked again; see
``toolpass.adapting.Answer.of``). The shared approval machine records the answer in the
toolkit's ``ApprovalQueue`` for this very call's request only (a request of another queue
must be decided there), runs the check again, and the queue's record decides: the call runs
once, or is refused with the person's reason, or reads ``approval_expired`` when nobody
decided in time; a request decided in the queue directly before resuming keeps that
decision.

Sessions: ``session="conversation"`` (the default) keeps one session per user for the agent's
``session_id`` (the session manager's id when the agent has one, so a conversation restored by
another agent instance continues its session; else the agent instance's own conversation),
``"run"`` one per invocation (``agent(...)``/``invoke_async``; resuming after an interrupt is
a new invocation; the handler marks each invocation under the ``"toolpass:run"`` key of its
``invocation_state``), or a callable given the ``BeforeToolCallEvent``.

A failure of the handler itself refuses the call (``Deny`` with a generic ``check_error``
reason; its exception text never reaches the model), and ``on_error`` stays ``"throw"``: a
failure Strands sees ends the run rather than letting the call through. The framework's
structured-output tool is not checked (it only shapes the model's final answer).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, cast
from weakref import WeakKeyDictionary

from toolpass.adapting import (
    Answer,
    ApprovalPending,
    Guard,
    OnRefuse,
    Pending,
    PermissionEngine,
    Rule,
    Rules,
    SessionSource,
    Toolkit,
    ToolRefused,
    UserSource,
    refusal_text,
)

from strands.hooks import AfterToolCallEvent, BeforeInvocationEvent, BeforeToolCallEvent
from strands.interrupt import InterruptException
from strands.interventions import Deny, InterventionHandler, OnError, Proceed
from strands.types.tools import AgentTool, ToolGenerator, ToolResult, ToolSpec, ToolUse

try:
    from strands.types.events import ToolResultEvent
except ImportError:  # strands-agents < 1.62: the same class, not yet public
    from strands.types._events import ToolResultEvent

__all__ = ["APPROVAL", "Rule", "ToolpassAuthorization", "refusal_text"]

log = logging.getLogger("toolpass")

#: How the name of the Strands interrupt a call waiting for a person's approval raises begins
#: (``"toolpass-approval:<request id>"``).
APPROVAL = "toolpass-approval"
_RUN = "toolpass:run"  # the invocation_state key of the current invocation's token
_BY = "strands interrupt"  # who decided, when the answer does not say
_Bodies = Callable[[Mapping[str, Any]], Callable[[], Awaitable[Any]]]


class _Run:
    """Stands for one agent invocation (the session of ``session="run"``)."""

    __slots__ = ("__weakref__",)


class ToolpassAuthorization(InterventionHandler):
    """Checks every tool call of a Strands agent with toolpass.

    ``rules`` maps a tool name (or a tuple of names sharing a rule) to a
    ``Rule(connection, action, resource_template)`` or a ``(connection, action, resource)``
    tuple; the resource is filled from the call's input. ``strict=True`` refuses a tool without
    a rule (otherwise it runs unchecked, still in a session and audited). ``user`` says where
    the user is: a key of the invocation state (``"user_id"`` by default) or a callable given
    the ``BeforeToolCallEvent``. ``session``: ``"conversation"`` (the agent's ``session_id``;
    the default), ``"run"`` (one invocation) or a callable given the event returning an id.
    ``on_refuse`` turns a refusal into the text the model reads (``refusal_text`` by default);
    None ends the run with the refusal instead (Strands raises ``EventLoopException`` from it).
    ``toolkit`` supplies audit sinks, limits, the approver and the request hook. ``tools``
    (the agent's tools, optional) checks the rules against them now: a rule for a tool not
    among them, or naming an argument its tool does not take, is a ``ValueError``; without it
    the rules are checked (with warnings) when the agent is first invoked. ``name`` is the
    handler's name among the agent's interventions. Every option is checked here
    (``toolpass.adapting.Guard``); ``guard.explain()`` lists what each tool gets.
    """

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
        tools: Sequence[AgentTool] | None = None,
        name: str = "toolpass",
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"name is a non-empty string, not {name!r}")
        self.guard = Guard(
            engine,
            rules,
            strict=strict,
            toolkit=toolkit,
            user=user,
            session=session,
            on_refuse=on_refuse,
        )
        self._name = name
        if tools is not None:
            self.guard.add_tools(_arguments_of(tools))
        self._checked: WeakKeyDictionary[Any, int] = WeakKeyDictionary()
        self._lock = threading.Lock()
        #: The requests asked about, by agent: (toolUseId, request id) in the order asked.
        self._approvals: WeakKeyDictionary[Any, dict[tuple[str, str], None]] = WeakKeyDictionary()

    @property
    def name(self) -> str:
        return self._name

    @property
    def on_error(self) -> OnError:
        """``"throw"``: a failure of this handler that escapes it ends the run (fail closed),
        and its text never reaches the model (``"deny"`` would show it)."""
        return "throw"

    # The hooks.

    def before_invocation(self, event: BeforeInvocationEvent, **kwargs: Any) -> Proceed:
        """Marks the invocation (``session="run"``) and checks the rules against the agent's
        tools (a warning for each problem, once)."""
        event.invocation_state[_RUN] = _Run()
        try:
            with self._lock:
                self._check_tools(event.agent)
        except Exception:
            log.exception("toolpass: could not check the rules against the agent's tools")
        return Proceed()

    def before_tool_call(self, event: BeforeToolCallEvent, **kwargs: Any) -> Proceed | Deny:
        """Puts the pipeline around the selected tool; nothing is decided yet."""
        tool = event.selected_tool
        try:
            with self.guard.refusing(str(event.tool_use.get("name")), {}, failed=_check_error):
                if tool is None or tool.tool_type == "structured_output":
                    return Proceed()  # an unknown tool does not run; an answer's shape: no call
                user: str | None = None
                failed: ToolRefused | None = None
                try:
                    user = self.guard.user_of(event.invocation_state, event)
                    key = self._key(event)
                except ToolRefused as exc:  # the application's source failed: refused as it runs
                    failed, key = exc, None
                event.selected_tool = _Guarded(self, tool, event, user, key, failed)
                return Proceed()
        except ToolRefused as refused:  # the handler broke: refuse, without its text
            if self.guard.on_refuse is None:
                raise
            return Deny(reason=self._text(refused))

    def after_tool_call(self, event: AfterToolCallEvent, **kwargs: Any) -> Proceed:
        """With ``on_refuse=None``, ends the run with the refusal."""
        if self.guard.on_refuse is None and isinstance(event.exception, ToolRefused):
            raise event.exception
        return Proceed()

    # Helpers.

    def _key(self, event: BeforeToolCallEvent) -> Any:
        state = event.invocation_state
        run = state.get(_RUN)
        if not isinstance(run, _Run):  # a call outside an invocation (agent.tool.x())
            run = state
        conversation = getattr(event.agent, "session_id", None)
        return self.guard.key(run, conversation, event)

    def _text(self, refused: ToolRefused) -> str:
        """What the model reads; a failing ``on_refuse`` still refuses, with the plain text."""
        on_refuse = self.guard.on_refuse
        assert on_refuse is not None
        try:
            return str(on_refuse(refused))
        except Exception:
            log.exception("toolpass: on_refuse failed")
            return refusal_text(refused)

    def _check_tools(self, agent: Any) -> None:
        registry = getattr(agent, "tool_registry", None)
        if registry is None:
            return
        tools = [*registry.registry.values(), *registry.dynamic_tools.values()]
        if self._checked.get(agent) == len(tools):
            return
        self._checked[agent] = len(tools)
        tools = [t for t in tools if t.tool_type != "structured_output"]
        self.guard.add_tools(_arguments_of(tools), late=True)

    def _asked(self, event: BeforeToolCallEvent) -> list[str]:
        """The approval requests calls with this ``toolUseId`` stopped the run for: resumed,
        the answer is recorded before the pipeline runs again, so an approved call runs at
        its first retry."""
        call = str(event.tool_use.get("toolUseId"))
        with self._lock:
            asked = self._approvals.get(event.agent, {})
            return [request for each, request in asked if each == call]

    def _remember(self, event: BeforeToolCallEvent, request_id: str, keep: bool = True) -> None:
        """Remember (or, with ``keep=False``, forget) that this call asks ``request_id``."""
        slot = (str(event.tool_use.get("toolUseId")), request_id)
        with self._lock:
            asked = self._approvals.setdefault(event.agent, {})
            if not keep:
                asked.pop(slot, None)
                return
            asked[slot] = None
            while len(asked) > 256:  # unanswered questions of long-gone calls
                del asked[next(iter(asked))]


class _Outcome:
    """What the real tool produced inside the pipeline's body step."""

    __slots__ = ("content", "events", "interrupt", "result")

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.result: ToolResultEvent | None = None
        self.interrupt: Any = None
        self.content: Any = None


class _Guarded(AgentTool):
    """The selected tool of one call, run inside the toolpass pipeline."""

    def __init__(
        self,
        owner: ToolpassAuthorization,
        inner: AgentTool,
        event: BeforeToolCallEvent,
        user: str | None,
        key: Any,
        failed: ToolRefused | None,
    ) -> None:
        super().__init__()
        self.inner = inner
        self._owner = owner
        self._event = event
        self._user = user
        self._key = key
        self._failed = failed
        self._is_dynamic = inner.is_dynamic

    @property
    def tool_name(self) -> str:
        return self.inner.tool_name

    @property
    def tool_spec(self) -> ToolSpec:
        return self.inner.tool_spec

    @property
    def tool_type(self) -> str:
        return self.inner.tool_type

    @property
    def supports_hot_reload(self) -> bool:
        return self.inner.supports_hot_reload

    def get_display_properties(self) -> dict[str, str]:
        return self.inner.get_display_properties()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"<toolpass-guarded {self.inner!r}>"

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> ToolGenerator:
        owner, guard = self._owner, self._owner.guard
        name = self.inner.tool_name  # the rule of the tool that runs, whatever renamed the call
        outcome = _Outcome()

        def body(given: Mapping[str, Any]) -> Callable[[], Awaitable[Any]]:
            nonlocal outcome
            outcome = _Outcome()
            use = (
                tool_use
                if given is arguments
                else cast(ToolUse, {**tool_use, "input": dict(given)})
            )
            return self._body(use, invocation_state, kwargs, outcome)

        try:
            arguments = _arguments(tool_use)
            if self._failed is not None:
                with guard.refusing(name, arguments, self._user):
                    raise self._failed
            output = await self._resumed(arguments, body)
            if output is _NOTHING:
                try:
                    output = await guard.arun(
                        self._user, name, arguments, body(arguments), key=self._key
                    )
                except ApprovalPending as waiting:
                    pending = guard.pending(waiting)
                    if pending is None:
                        raise
                    output = await self._ask(pending, arguments, body)
        except InterruptException:
            raise
        except ToolRefused as refused:
            yield _refusal(owner, tool_use, refused)
            return
        except Exception as exc:
            for event in outcome.events:
                yield event
            result = outcome.result
            if result is not None and result.exception is exc:
                yield result  # the tool's own error, as Strands shows it without toolpass
                return
            raise  # a ToolError (redacted or fenced): Strands gives the model its text
        for event in outcome.events:
            yield event
        if outcome.interrupt is not None:
            yield outcome.interrupt  # the tool asked a person: Strands stops the run
            return
        result = outcome.result
        assert result is not None
        if output is not outcome.content:  # the pipeline fenced (or redacted) it
            text = output if isinstance(output, str) else json.dumps(output, default=repr)
            changed: ToolResult = {**result.tool_result, "content": [{"text": text}]}
            result = ToolResultEvent(changed, exception=result.exception)
        yield result

    async def _resumed(self, arguments: Mapping[str, Any], body: _Bodies) -> Any:
        """Resumed after asking: the answer goes through the machine first, so an approved
        call runs at once (one more audit event, not two). ``_NOTHING`` when this call asked
        nothing that still waits."""
        owner, guard, name = self._owner, self._owner.guard, self.inner.tool_name
        for asked in owner._asked(self._event):
            queue = guard.queue
            expired = queue is not None and queue.state(asked) == "expired"
            if expired or guard.waits(asked, self._user, name, arguments, key=self._key):
                response = self._event.interrupt(_interrupt(asked))  # unanswered: asks again
                owner._remember(self._event, asked, keep=False)
                return await guard.aresume(
                    self._user,
                    name,
                    arguments,
                    body,
                    request_id=asked,
                    answer=Answer.of(response, by=_BY),
                    key=self._key,
                )
        return _NOTHING

    async def _ask(self, pending: Pending, arguments: Mapping[str, Any], body: _Bodies) -> Any:
        """Asks through Strands: the first time this stops the run (InterruptException);
        resumed, the person's answer goes through the machine and the call is retried."""
        owner, guard = self._owner, self._owner.guard
        owner._remember(self._event, pending.request_id)
        response = self._event.interrupt(_interrupt(pending.request_id), reason=_request(pending))
        owner._remember(self._event, pending.request_id, keep=False)
        return await guard.aresume(
            self._user,
            self.inner.tool_name,
            arguments,
            body,
            request_id=pending.request_id,
            answer=Answer.of(response, by=_BY),
            key=self._key,
        )

    def _body(
        self,
        tool_use: ToolUse,
        invocation_state: dict[str, Any],
        kwargs: dict[str, Any],
        outcome: _Outcome,
    ) -> Callable[[], Awaitable[Any]]:
        inner = self.inner

        async def body() -> Any:
            last: Any = _NOTHING
            async with aclosing(inner.stream(tool_use, invocation_state, **kwargs)) as events:
                async for event in events:
                    if isinstance(event, ToolResultEvent):
                        outcome.result = event
                        break
                    if isinstance(event, dict) and "tool_interrupt_event" in event:
                        outcome.interrupt = event
                        return None
                    outcome.events.append(event)
                    last = event
            if outcome.result is None:
                outcome.result = _final(tool_use, last)
            error = outcome.result.exception
            if error is not None:  # the pipeline records it, and decides on a refusal in it
                raise error
            # The whole ToolResult: its content blocks are read as the envelope's, not as
            # records of the result (a ``trust=`` predicate is asked of the records inside).
            outcome.content = outcome.result.tool_result
            return outcome.content

        return body


_NOTHING = object()


def _final(tool_use: ToolUse, last: Any) -> ToolResultEvent:
    """The result of a tool that yielded no ``ToolResultEvent``: its last value, as Strands
    takes it."""
    if last is _NOTHING:
        return ToolResultEvent(
            {
                "toolUseId": str(tool_use.get("toolUseId")),
                "status": "error",
                "content": [{"text": f"Tool '{tool_use['name']}' did not return a result"}],
            }
        )
    return ToolResultEvent(cast(ToolResult, last))


def _refusal(owner: ToolpassAuthorization, tool_use: ToolUse, refused: ToolRefused) -> Any:
    text = refusal_text(refused) if owner.guard.on_refuse is None else owner._text(refused)
    result: ToolResult = {
        "toolUseId": str(tool_use.get("toolUseId")),
        "status": "error",
        "content": [{"text": text}],
    }
    return ToolResultEvent(result, exception=refused)


def _arguments(tool_use: ToolUse) -> Mapping[str, Any]:
    value = tool_use.get("input")
    if value is None:
        return {}
    if isinstance(value, str):  # some providers leave unparsed JSON
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            value = None
    if not isinstance(value, Mapping):
        raise ToolRefused(
            "invalid_arguments",
            "The tool's input is not an object of its parameters, so it was not called. Call "
            "it again with an object of its parameters.",
        )
    return value


def _arguments_of(tools: Sequence[Any]) -> dict[str, list[str] | None]:
    found: dict[str, list[str] | None] = {}
    for tool in tools:
        if not isinstance(tool, AgentTool):
            raise TypeError(f"tools are Strands tools (AgentTool, @tool functions), not {tool!r}")
        schema = tool.tool_spec.get("inputSchema", {})
        body = schema.get("json", schema) if isinstance(schema, dict) else None
        properties = body.get("properties") if isinstance(body, dict) else None
        found[tool.tool_name] = list(properties) if isinstance(properties, dict) else None
    return found


def _interrupt(request_id: str) -> str:
    """The name of the interrupt asking about ``request_id``: Strands makes an interrupt's id
    of its name and the ``toolUseId``, which two calls can share."""
    return f"{APPROVAL}:{request_id}"


def _request(pending: Pending) -> dict[str, Any]:
    """An approval interrupt's reason: what the person decides on, every argument shown
    (JSON, so Strands' session managers can keep it): the machine's payload, and
    ``"toolpass": "approval"``."""
    return {"toolpass": "approval", **pending.payload()}


def _check_error(exc: BaseException) -> ToolRefused:
    """The refusal when toolpass's intervention failed (logged: a bug, or a broken option)."""
    log.error("toolpass: the intervention failed", exc_info=exc)
    return ToolRefused(
        "check_error",
        "A safety check could not be completed, so the call was not made. "
        "Try again later, or tell the user.",
        detail=f"the toolpass intervention raised {type(exc).__name__}: {exc}",
    )
