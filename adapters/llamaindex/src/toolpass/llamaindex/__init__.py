"""toolpass for LlamaIndex: every tool call of an agent checked before the tool runs.

LlamaIndex has no hook that runs before a tool (its instrumentation only observes), so
``ToolpassAuthorization`` guards at two places, which may be used together:

- ``guard.wrap(tools)`` wraps each tool (``FunctionTool``, any ``BaseTool`` or
  ``AsyncBaseTool``, the tools of a ``ToolSpec``, MCP tools) in a ``GuardedTool`` with the
  same metadata (name, description, ``fn_schema``), so the model sees the same tool; the
  check runs in the tool's ``acall`` (and ``call``), inside a workflow or outside one.
- ``guard.apply(agent_or_workflow)`` guards the agent's own tool-call step (the
  ``_call_tool`` of ``FunctionAgent``, ``ReActAgent``, ``CodeActAgent`` and of
  ``AgentWorkflow``), so a tool added later, or found by a tool retriever, is not missed. A
  tool both wrapped by this guard and called through an applied agent is checked once.

The user comes from the application, never from the model: the run's workflow ``Context``
(``await ctx.store.get("user_id")`` by default), or a callable given that ``Context`` (None
outside a workflow), or an active toolpass ``Session``. A refusal is the tool's result, a
``ToolOutput(is_error=True)`` reading ``Refused by toolpass (code): reason``, and the run
goes on; anything failing in the check itself refuses, and the tool does not run.

A session lasts for the conversation by default: the workflow ``Context``, which persists
across runs when the application passes the same one again (or restores it with
``Context.from_dict``); toolpass keeps the conversation's id in the context's store, under
``"toolpass_conversation"``. A run without a reused ``Context`` is its own conversation.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, TypeVar

from llama_index.core.agent.workflow import AgentWorkflow, BaseWorkflowAgent
from llama_index.core.agent.workflow.multi_agent_workflow import handoff
from llama_index.core.bridge.pydantic import Field
from llama_index.core.tools import BaseTool, FunctionTool, ToolOutput
from llama_index.core.tools.tool_spec.base import BaseToolSpec
from llama_index.core.tools.types import AsyncBaseTool, ToolMetadata, adapt_to_async_tool
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent
from toolpass.adapting import (
    Answer,
    ApprovalPending,
    Guard,
    OnRefuse,
    PermissionEngine,
    Rule,
    Rules,
    SessionSource,
    Toolkit,
    ToolRefused,
    UserSource,
    refusal_text,
    source_failed,
    user_from,
)

__all__ = [
    "ApprovalDecision",
    "ApprovalRequired",
    "GuardedTool",
    "Rule",
    "ToolpassAuthorization",
    "refusal_text",
]

log = logging.getLogger("toolpass")
Target = TypeVar("Target", bound=BaseWorkflowAgent | AgentWorkflow)

_BY = "llamaindex approval"  # who decided, when the decision does not say
#: Makes the body of a call for the arguments it runs with (a person's edit).
_Bodies = Callable[[Mapping[str, Any]], Awaitable[ToolOutput]]
#: Where toolpass keeps a conversation's id in the workflow context's store.
CONVERSATION_KEY = "toolpass_conversation"
#: Where toolpass keeps the calls waiting for a person's decision (``approvals="events"``).
WAITING_KEY = "toolpass_waiting"
#: What ``Context.wait_for_event`` raises to pause a step (workflows >= 2.9): never a failure.
_WAITING: tuple[type[BaseException], ...]
try:
    from workflows.runtime.types.results import WaitingForEvent

    _WAITING = (WaitingForEvent,)
except ImportError:  # pragma: no cover - older workflows have no such pause
    _WAITING = ()


class ApprovalRequired(InputRequiredEvent):
    """Written to the run's event stream when a tool call waits for a person's approval
    (``approvals="events"``): answer it with ``ctx.send_event(event.decide(...))``."""

    request_id: str
    tool: str
    user: str
    #: What the model would read: why the call waits.
    message: str
    #: Who asks for what and why, with a preview of the arguments, for the person deciding.
    description: str
    #: The request, as every adapter's pause carries it (``Pending.payload()``: ``type``,
    #: ``request_id``, ``tool``, ``user``, ``arguments`` as the preview shows them,
    #: ``reasons``, ``preview``, ``expires``, ``message``).
    payload: dict[str, Any] = Field(default_factory=dict)

    def decide(
        self,
        *,
        approved: bool,
        by: str,
        reason: str = "",
        arguments: Mapping[str, Any] | None = None,
    ) -> ApprovalDecision:
        """The answer to send back into the run (``handler.ctx.send_event(...)``); approved
        with ``arguments``, the call runs with those instead (checked again)."""
        response = None
        if approved and arguments is not None:
            response = {"decision": "edit", "by": by, "arguments": dict(arguments)}
        return ApprovalDecision(
            request_id=self.request_id, approved=approved, by=by, reason=reason, response=response
        )


class ApprovalDecision(HumanResponseEvent):
    """A person's decision on the ``ApprovalRequired`` call of request ``request_id`` (the
    pause it is delivered to): ``approved``, ``by`` whom, and why (``reason``); or
    ``response``, any answer ``toolpass.adapting.Answer.of`` reads (``{"decision": "edit",
    "arguments": {...}}``, ``{"approved": False, "reason": ...}``...), which decides when
    given. toolpass records it in the toolkit's ``ApprovalQueue`` for this call's request only
    and checks the call again: the queue's record decides."""

    request_id: str
    approved: bool = False
    by: str = ""
    reason: str = ""
    response: Any = None

    def answer(self) -> Answer:
        """The decision as the shared approval machine reads it."""
        said = self.response
        if said is None:
            said = {"approved": self.approved, "by": self.by, "reason": self.reason}
        return Answer.of(said, by=self.by or _BY)


class ToolpassAuthorization:
    """Check every tool call of a LlamaIndex agent with toolpass before the tool runs.

    ``rules`` maps a tool name (or a tuple of names sharing a rule) to a
    ``Rule(connection, action, resource_template)`` or a ``(connection, action, resource)``
    tuple; the resource is filled from the call's arguments. ``strict=True`` refuses a tool
    without a rule (otherwise it runs unchecked, still in a session and audited). ``toolkit``
    supplies audit sinks, limits, approvals and the request hook.

    ``user`` says where the user is: a key of the workflow context's store (``"user_id"`` by
    default, read with ``await ctx.store.get(...)``; a dotted path such as
    ``"state.user_id"`` works too), or a callable given the workflow ``Context`` (None
    outside a workflow) that returns the user or an awaitable of it. Outside a workflow an
    active toolpass ``Session`` also names the user. ``session`` says what one session lasts
    for: ``"conversation"`` (the workflow ``Context``, across the runs it is passed to; the
    default), ``"run"`` (one ``agent.run``), or a callable given the same object as ``user``,
    returning an id (or an awaitable of one). ``on_refuse`` turns a refusal into the text the
    model reads (a ``ToolOutput`` it returns is used as it is); None ends the run with the
    refusal. ``approvals``: ``"model"`` (the default) tells the model the call waits for a
    person's approval and to call it again once approved; ``"events"`` pauses the call with
    an ``ApprovalRequired`` event on the run's stream (its ``payload`` is the request,
    ``toolpass.adapting.Pending.payload()``) and resumes on its ``ApprovalDecision``
    (LlamaIndex's human-in-the-loop), inside a workflow, also after the run's ``Context`` was
    saved and restored (``JsonPickleSerializer`` keeps the agent's memory). The shared approval
    machine records the decision for this call's request only, runs the check again, and the
    queue's record decides: the call runs once (with a person's edited arguments, checked
    again), or is refused with the person's reason, or reads ``approval_expired`` when nobody
    decided in time; a decision that records nothing (another request's, the call's own
    user's) leaves the refusal ``approval_pending`` for the model to read. A waiting call is
    kept in the context's store (``"toolpass_waiting"``): a step LlamaIndex replays while it
    waits (a restored context replays it at once) goes on to the decision only, so a call
    decided in the queue meanwhile still runs once, when the decision arrives.

    Every option is checked here (``toolpass.adapting.Guard``); ``wrap`` and ``apply`` check
    the rules against the tools they are given, and ``explain()`` lists them.
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
        approvals: Literal["model", "events"] = "model",
    ) -> None:
        if approvals not in ("model", "events"):
            raise TypeError(f"approvals is 'model' or 'events', not {approvals!r}")
        self.guard = Guard(
            engine,
            rules,
            strict=strict,
            toolkit=toolkit,
            user=user,
            session=session,
            on_refuse=on_refuse,
        )
        # The guard's own session source reads an id this adapter resolves (a callable here
        # may be async); the option above was checked as given.
        if callable(session):
            self.guard.session_source = "conversation"
        self._session = session
        self.approvals = approvals

    # Setting it up.

    def wrap(
        self,
        tools: Iterable[BaseTool | Callable[..., Any]] | BaseToolSpec,
        *,
        complete: bool = True,
    ) -> list[BaseTool]:
        """Each tool wrapped so that every call of it is checked; its metadata (name,
        description, ``fn_schema``) is the tool's own. Plain functions become
        ``FunctionTool``s first; a ``ToolSpec`` gives its ``to_tool_list()``. A rule whose
        template names an argument its tool does not take is a ``ValueError``; so is, with
        ``complete`` (these are all of the agent's tools), a rule for a tool not among them."""
        if isinstance(tools, BaseToolSpec):
            tools = tools.to_tool_list()
        wrapped: list[BaseTool] = [self.wrap_tool(t) for t in tools]
        self.guard.add_tools({_name(t): _arguments(t) for t in wrapped}, complete=complete)
        return wrapped

    def wrap_tool(self, tool: BaseTool | Callable[..., Any]) -> GuardedTool:
        """One tool, wrapped (see ``wrap``); a tool this guard wrapped already is returned
        as it is."""
        if isinstance(tool, GuardedTool) and tool.owner is self:
            return tool
        if not isinstance(tool, BaseTool):
            if not callable(tool):
                raise TypeError(f"a tool is a LlamaIndex BaseTool or a function, not {tool!r}")
            tool = FunctionTool.from_defaults(tool)
        return GuardedTool(tool, self)

    def apply(self, target: Target) -> Target:
        """Guard the tool-call step of an agent (``FunctionAgent``, ``ReActAgent``,
        ``CodeActAgent``, any ``BaseWorkflowAgent``) or of an ``AgentWorkflow`` and each of
        its agents; returns it. Its tools are checked against the rules now (a ``ValueError``
        for a problem; when a tool retriever supplies more tools, only those known now).

        An agent whose tools run from the code its model writes (``CodeActAgent``: the code
        calls the tools' functions directly, past any tool-call step) is a ``ValueError``
        unless every one of those functions checks itself (made by a toolkit's
        ``secured_tool`` or ``toolpass.tool``) and no tool retriever can add others."""
        if isinstance(target, AgentWorkflow):
            hosts: list[Any] = [target, *target.agents.values()]
            agents = list(target.agents.values())
        elif isinstance(target, BaseWorkflowAgent):
            hosts, agents = [target], [target]
        else:
            raise TypeError(
                "apply() takes a LlamaIndex agent (FunctionAgent, ReActAgent, ...) or an "
                f"AgentWorkflow, not {type(target).__name__}"
            )
        for agent in agents:
            _refuse_generated_code(agent)
        coders = [a for a in agents if getattr(a, "code_execute_fn", None) is not None]
        for host in hosts:
            _hook(host, self, coders)
        tools: dict[str, list[str] | None] = {}
        for agent in agents:
            for each in agent.tools or ():
                tool = each if isinstance(each, BaseTool) else FunctionTool.from_defaults(each)
                tools[_name(tool)] = _arguments(tool)
            if agent not in coders:  # the check goes with its tools into any later workflow
                agent.tools = [_Applied.of(each, self) for each in agent.tools or ()]
        complete = all(agent.tool_retriever is None for agent in agents)
        self.guard.add_tools(tools, complete=complete)
        return target

    def explain(self, engine: PermissionEngine | None = None) -> Any:
        """Every tool the guard knows, its rule, and the tools that run unchecked."""
        return self.guard.explain(engine)

    # The call.

    async def acall(
        self,
        ctx: Context[Any] | None,
        name: str,
        arguments: Mapping[str, Any],
        body: _Bodies,
        tool_input: Mapping[str, Any],
    ) -> ToolOutput:
        """Check one call and run ``body(arguments)`` inside the pipeline; the tool's output,
        or the refusal as the tool's output. ``body`` is the framework's, given the arguments
        the call runs with (a person's edit changes them; it may raise: a tool's own
        exception is passed on as it is). With ``approvals="events"`` a call waiting for a
        person pauses the step until their ``ApprovalDecision``, once."""
        started = False
        result: list[ToolOutput] = []

        def bodies(given: Mapping[str, Any]) -> Callable[[], Awaitable[Any]]:
            async def run() -> Any:
                nonlocal started
                started = True
                out = await body(given)
                result.append(out)
                failure = out.exception
                if out.is_error and isinstance(failure, Exception):
                    raise failure  # the framework caught the tool's exception: toolpass sees it
                return out.content

            return run

        try:
            with self._outside(name, arguments):  # the user or session source may fail
                user = await self._user(ctx)
                key = await self._key(ctx)
                self._saw(name)
        except ToolRefused as refused:
            return self._refused(name, tool_input, refused)
        guard = self.guard
        try:
            with self._outside(name, arguments, user, unless=lambda: started):
                waiter = _waiter(user, name, arguments)
                # A step replayed while its call waits for a person goes on to the decision only.
                asked = await _asked(ctx, waiter) if self.approvals == "events" else None
                if asked is None:
                    try:
                        content = await guard.arun(
                            user, name, arguments, bodies(arguments), key=key
                        )
                    except ApprovalPending as waiting:
                        asked = self._pause(ctx, waiting)
                        if asked is None:
                            raise
                        await _remember(ctx, waiter, asked)
                if ctx is not None and asked is not None:
                    answered = await self._answered(ctx, asked, waiter)
                    content = await guard.aresume(
                        user, name, arguments, bodies, **answered, key=key
                    )
        except ToolRefused as refused:  # an answer that released nothing: the model reads so
            return self._refused(name, tool_input, refused)
        except Exception as exc:
            if isinstance(exc, _WAITING):
                raise  # the step waits for an event; LlamaIndex replays it later
            original = getattr(exc, "original", None)  # a ToolError toolpass made of it
            if isinstance(original, _WAITING):
                raise original from None
            return _failed(name, tool_input, exc, result)
        return _output(name, tool_input, content, result)

    def _pause(self, ctx: Context[Any] | None, waiting: ApprovalPending) -> ApprovalRequired | None:
        """The pause for a call waiting for a person, when this guard pauses for it: with
        ``approvals="events"``, inside a workflow, for a request of its toolkit's queue."""
        queue = self.guard.queue
        if self.approvals != "events" or ctx is None or queue is None:
            return None
        pending = self.guard.pending(waiting)
        if pending is None or queue.state(pending.request_id) != "pending":
            return None  # another queue's request: decided there
        return ApprovalRequired(
            request_id=pending.request_id,
            tool=pending.tool,
            user=pending.user,
            description=pending.message,
            message=waiting.message,
            payload=pending.payload(),
        )

    async def _answered(
        self, ctx: Context[Any], asked: ApprovalRequired, waiter: str
    ) -> dict[str, Any]:
        """Pause the step until the person's ``ApprovalDecision`` on ``asked`` arrives
        (LlamaIndex replays the step then): the request it answers and the answer, for
        ``Guard.aresume``. Nobody answering in the request's time is an expired answer."""
        queue = self.guard.queue
        timeout = None if queue is None else queue.ttl  # the request expires then anyway
        request_id, answer = await _decision(ctx, asked, waiter, timeout)
        await _remember(ctx, waiter, None)
        return {"request_id": request_id, "answer": answer}

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        body: Callable[[], ToolOutput],
        tool_input: Mapping[str, Any],
    ) -> ToolOutput:
        """``acall`` for a tool called synchronously, outside a workflow's run: the user is
        the ``user`` callable's (given None) or the active toolpass ``Session``'s."""
        started = False
        result: list[ToolOutput] = []

        def run() -> Any:
            nonlocal started
            started = True
            out = body()
            result.append(out)
            return out.content

        try:
            with self._outside(name, arguments):
                user = _sync_user(self.guard.user)
                key = self.guard.key(None, _sync_session(self._session))
                self._saw(name)
            with self._outside(name, arguments, user, unless=lambda: started):
                content = self.guard.run(user, name, arguments, run, key=key)
        except ToolRefused as refused:
            return self._refused(name, tool_input, refused)
        return _output(name, tool_input, content, result)

    # Translation.

    async def _user(self, ctx: Context[Any] | None) -> str | None:
        """The call's user: from the context's store, or the ``user`` callable (None outside
        a workflow without a callable: the active Session's, if any)."""
        source = self.guard.user
        try:
            if callable(source):
                value = source(ctx)
                if inspect.isawaitable(value):
                    value = await value
            elif ctx is None:
                return None
            else:
                value = await ctx.store.get(source, default=None)
        except Exception as exc:
            raise source_failed("Who this call acts for", f"the user source raised {_named(exc)}")
        return user_from("user", {"user": value})

    async def _key(self, ctx: Context[Any] | None) -> Any:
        """What the call's session is kept under (see ``session``)."""
        run = None if ctx is None else ctx.store  # one store per run, shared by its steps
        source = self._session
        if source == "run":
            return self.guard.key(run)
        if callable(source):
            try:
                value = source(ctx)
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                raise source_failed("The session of this call", f"session raised {_named(exc)}")
            return self.guard.key(run, value)
        return self.guard.key(run, None if ctx is None else await _conversation(ctx))

    def _saw(self, name: str) -> None:
        if name not in self.guard.tools:
            self.guard.add_tools({name: None}, complete=False, late=True)

    def _outside(
        self,
        name: str,
        arguments: Mapping[str, Any],
        user: str | None = None,
        *,
        unless: Callable[[], bool] = lambda: False,
    ) -> AbstractContextManager[None]:
        """Around what runs for a call outside the pipeline: a refusal, or toolpass failing
        (a bug, a broken option: ``check_error``) before the tool ran, refuses the call, as
        the guard audits it; once ``unless()`` (the tool ran), or for a step's wait, an
        exception passes on."""

        def failed(exc: Exception) -> ToolRefused | None:
            if unless() or _waits(exc):
                return None
            log.exception("toolpass: the check of %s failed", name)
            return ToolRefused(
                "check_error",
                "The call could not be checked, so it was not made. Tell the user.",
                detail=_named(exc),
            )

        return self.guard.refusing(name, arguments, user, failed=failed)

    def _refused(
        self, name: str, tool_input: Mapping[str, Any], refused: ToolRefused
    ) -> ToolOutput:
        """The refusal as the tool's output (``on_refuse``)."""
        on_refuse = self.guard.on_refuse
        if on_refuse is None:
            raise refused
        try:
            said = on_refuse(refused)
        except Exception:  # the reason must still reach the model
            log.exception("toolpass: on_refuse failed")
            said = None
        if said is None:
            said = refusal_text(refused)
        if isinstance(said, ToolOutput):
            return said
        return ToolOutput(
            content=str(said),
            tool_name=name,
            raw_input=dict(tool_input),
            raw_output=None,
            is_error=True,
            exception=refused,
        )


class GuardedTool(AsyncBaseTool):
    """A LlamaIndex tool whose every call ``owner`` checks first; ``tool`` is the original,
    whose metadata it shows the model unchanged."""

    def __init__(self, tool: BaseTool, owner: ToolpassAuthorization) -> None:
        self.tool = tool
        self.owner = owner

    @property
    def metadata(self) -> ToolMetadata:
        return self.tool.metadata

    def __repr__(self) -> str:
        return f"GuardedTool({self.tool!r})"

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        tool = self.tool
        arguments = _call_arguments(tool, args, kwargs)

        def body() -> ToolOutput:
            if isinstance(tool, AsyncBaseTool):
                return tool.call(*args, **kwargs)
            return tool(*args, **kwargs)

        return self.owner.call(_name(self), arguments, body, arguments)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        tool = self.tool
        ctx = _step_context()
        if ctx is not None and isinstance(tool, FunctionTool) and tool.requires_context:
            param = tool.ctx_param_name
            if param is not None and param not in kwargs:
                kwargs = {**kwargs, param: ctx}
        arguments = _call_arguments(tool, args, kwargs)

        async def body(given: Mapping[str, Any]) -> ToolOutput:
            positional, named = (
                (args, kwargs) if given is arguments else ((), _edited(kwargs, given))
            )
            if isinstance(tool, AsyncBaseTool):
                return await tool.acall(*positional, **named)
            return await _Threaded(tool).acall(*positional, **named)

        return await self.owner.acall(ctx, _name(self), arguments, body, arguments)


# The agent's tool-call step.


class _Applied(GuardedTool):
    """An applied agent's tool, checked by itself when a host ``apply`` did not guard (an
    ``AgentWorkflow`` made later) runs it; a guarded host runs the tool as LlamaIndex would."""

    @classmethod
    def of(cls, tool: BaseTool | Callable[..., Any], owner: ToolpassAuthorization) -> BaseTool:
        if isinstance(tool, GuardedTool) and tool.owner is owner:
            return tool
        return cls(tool if isinstance(tool, BaseTool) else FunctionTool.from_defaults(tool), owner)


def _hook(host: Any, owner: ToolpassAuthorization, coders: Sequence[Any] = ()) -> None:
    """Replace ``host._call_tool`` (the step that runs every tool call of an agent or an
    agent workflow) with one that checks the call first; while one of ``coders`` (agents
    running generated code) has a tool that does not check itself, every call is refused."""
    original = getattr(host, "_call_tool", None)
    if not inspect.iscoroutinefunction(original):
        raise TypeError(
            f"this llama-index-core's {type(host).__name__} has no async _call_tool(ctx, tool, "
            "tool_input) to guard; wrap the tools with guard.wrap(tools) instead"
        )
    if owner in getattr(original, "_toolpass_owners", ()):
        return  # applied already

    async def _call_tool(
        ctx: Context[Any], tool: AsyncBaseTool, tool_input: dict[str, Any]
    ) -> ToolOutput:
        if _is_handoff(tool):  # the workflow's own control flow, not an application's tool
            output: ToolOutput = await original(ctx, tool, tool_input)
            return output
        inner: AsyncBaseTool = tool
        if isinstance(tool, _Applied) and tool.owner is owner:  # checked here, once
            inner = adapt_to_async_tool(tool.tool)
        elif isinstance(tool, GuardedTool) and tool.owner is owner:
            inner = tool.tool if isinstance(tool.tool, AsyncBaseTool) else _Threaded(tool.tool)
        arguments = {k: v for k, v in tool_input.items() if not isinstance(v, Context)}
        name = "(unnamed tool)"
        try:
            with owner._outside(name, arguments):  # a tool without a name: nothing to check
                name = _name(tool)
            with owner._outside(name, arguments):
                unchecked = _generated_code_problem(coders)
                if unchecked is not None:
                    raise unchecked
        except ToolRefused as refused:
            return owner._refused(name, tool_input, refused)

        def body(given: Mapping[str, Any]) -> Awaitable[ToolOutput]:
            edited = tool_input if given is arguments else _edited(tool_input, given)
            return original(ctx, inner, edited)

        return await owner.acall(ctx, name, arguments, body, tool_input)

    _call_tool._toolpass_owners = (*getattr(original, "_toolpass_owners", ()), owner)  # type: ignore[attr-defined]
    object.__setattr__(host, "_call_tool", _call_tool)


def _is_handoff(tool: Any) -> bool:
    return isinstance(tool, FunctionTool) and tool.real_fn is handoff


class _Threaded(AsyncBaseTool):
    """A synchronous ``BaseTool`` called from the event loop, in a worker thread (as
    ``GuardedTool`` calls it), by keyword."""

    def __init__(self, tool: BaseTool) -> None:
        self.tool = tool

    @property
    def metadata(self) -> ToolMetadata:
        return self.tool.metadata

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        output: ToolOutput = self.tool(*args, **kwargs)
        return output

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        return await asyncio.to_thread(self.call, *args, **kwargs)


# Reading a call.


async def _decision(
    ctx: Context[Any], asked: ApprovalRequired, waiter: str, timeout: float | None
) -> tuple[str, Answer]:
    """Wait for the decision on ``asked``: the request it was sent for, and the answer.
    The wait is named after the call, not the request, so that a replayed step gets the
    decision whatever its request became meanwhile; the decision's request is the one the
    machine then answers."""
    try:
        decision = await ctx.wait_for_event(
            ApprovalDecision,
            waiter_event=asked,
            waiter_id=waiter,
            requirements={"request_id": asked.request_id},
            timeout=timeout,
        )
    except asyncio.TimeoutError:
        return asked.request_id, Answer("expired", request_id=asked.request_id)
    return decision.request_id, decision.answer()


async def _asked(ctx: Context[Any] | None, waiter: str) -> ApprovalRequired | None:
    """What this call paused for, when a step replays while it waits (kept in the context's
    store, so also in a context saved and restored)."""
    if ctx is None:
        return None
    try:
        waiting = await ctx.store.get(WAITING_KEY, default=None)
        asked = waiting.get(waiter) if isinstance(waiting, Mapping) else None
        return ApprovalRequired.model_validate(asked) if isinstance(asked, Mapping) else None
    except Exception:
        log.debug("toolpass: the context's store has no readable approvals", exc_info=True)
        return None


async def _remember(ctx: Context[Any] | None, waiter: str, asked: ApprovalRequired | None) -> None:
    """Keep (or, with None, forget) that this call waits for a person on ``asked``. A store
    that cannot keep it (a typed state without such a field) checks the call again when the
    step replays."""
    if ctx is None:
        return
    try:
        async with ctx.store.edit_state() as state:
            waiting = dict(state.get(WAITING_KEY) or {}) if hasattr(state, "get") else {}
            if asked is None:
                waiting.pop(waiter, None)
            else:
                waiting[waiter] = asked.model_dump(mode="json")
            state[WAITING_KEY] = waiting
    except Exception:
        log.debug("toolpass: the context's store cannot keep a waiting call", exc_info=True)


def _waiter(user: str | None, tool: str, arguments: Mapping[str, Any]) -> str:
    """The name of the wait for a person's decision on this very call."""
    shown = sorted((str(k), repr(v)) for k, v in arguments.items())
    call = repr((user, tool, shown)).encode()
    return f"toolpass-approval-{hashlib.sha256(call).hexdigest()[:32]}"


def _step_context() -> Context[Any] | None:
    """The workflow ``Context`` of the step this runs in, None outside a workflow."""
    try:
        return Context.get_step_context()
    except Exception:
        return None


async def _conversation(ctx: Context[Any]) -> str | None:
    """The conversation's id, kept in the context's store (made at its first call): it
    persists across the runs the same ``Context`` is passed to. None when the store cannot
    keep it (a typed state without such a field): the run is the conversation then."""
    store = ctx.store
    found = await store.get(CONVERSATION_KEY, default=None)
    if isinstance(found, str) and found:
        return found
    try:
        async with store.edit_state() as state:
            found = state.get(CONVERSATION_KEY) if hasattr(state, "get") else None
            if not (isinstance(found, str) and found):
                found = f"llamaindex-{uuid.uuid4().hex}"
                state[CONVERSATION_KEY] = found
    except Exception:
        log.debug("toolpass: the context's store cannot keep a conversation id", exc_info=True)
        return None
    return found


def _sync_user(source: UserSource) -> str | None:
    if not callable(source):
        return None  # a store key needs the workflow's (async) store: the active Session's
    try:
        value = source(None)
    except Exception as exc:
        raise source_failed("Who this call acts for", f"the user source raised {_named(exc)}")
    if inspect.isawaitable(value):
        _close(value)
        raise source_failed("Who this call acts for", "an async user source, in a synchronous call")
    return user_from("user", {"user": value})


def _sync_session(source: SessionSource) -> Any:
    if not callable(source):
        return None
    try:
        value = source(None)
    except Exception as exc:
        raise source_failed("The session of this call", f"session raised {_named(exc)}")
    if inspect.isawaitable(value):
        _close(value)
        raise source_failed(
            "The session of this call", "an async session source, in a synchronous call"
        )
    return value


def _close(value: Any) -> None:
    close = getattr(value, "close", None)
    if callable(close):
        close()


def _named(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _refuse_generated_code(agent: Any) -> None:
    """Refuse an agent that runs its tools from generated code (it has a ``code_execute_fn``)
    unless each tool's function is a toolpass secured tool, checked wherever it is called."""
    if getattr(agent, "code_execute_fn", None) is None:
        return
    unchecked = [
        _name(tool)
        for tool in agent.tools or ()
        if isinstance(tool, BaseTool) and _name(tool) not in _CODE_ACT_OWN
        if getattr(getattr(tool, "real_fn", None), "__toolpass__", None) is None
    ] + [
        getattr(tool, "__name__", repr(tool))
        for tool in agent.tools or ()
        if not isinstance(tool, BaseTool) and getattr(tool, "__toolpass__", None) is None
    ]
    if agent.tool_retriever is not None:
        unchecked.append("(the tools of its tool retriever)")
    if unchecked:
        raise ValueError(
            f"{type(agent).__name__} {getattr(agent, 'name', '')!r} runs its tools from the "
            "code its model writes, which calls them directly, past the tool-call step "
            f"toolpass guards; these would run unchecked: {', '.join(unchecked)}. Make each a "
            "toolpass secured tool (Toolkit.secured_tool or toolpass.tool) before giving it "
            "to the agent and to code_execute_fn, or use a FunctionAgent or ReActAgent."
        )


def _generated_code_problem(coders: Sequence[Any]) -> ToolRefused | None:
    """The refusal for a call of an agent running generated code that was given a tool not
    checking itself after ``apply`` (None while every one checks itself)."""
    for agent in coders:
        try:
            _refuse_generated_code(agent)
        except ValueError as problem:
            return ToolRefused(
                "not_configured",
                "This agent's code cannot be run safely as it is set up, so the call was not "
                "made. Tell the user.",
                detail=str(problem),
            )
    return None


#: The tools a CodeActAgent adds itself: running the model's code, and handing off.
_CODE_ACT_OWN = frozenset({"execute", "handoff"})


def _name(tool: BaseTool) -> str:
    return tool.metadata.get_name()


def _fields(tool: BaseTool) -> list[str] | None:
    schema = tool.metadata.fn_schema
    fields = getattr(schema, "model_fields", None)
    return list(fields) if isinstance(fields, Mapping) else None


def _arguments(tool: BaseTool) -> list[str] | None:
    """The names of the arguments the model gives ``tool`` (None when not known)."""
    try:
        return _fields(tool)
    except Exception:
        return None


def _call_arguments(
    tool: BaseTool, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """The call's arguments by name (positional ones named after the tool's schema), without
    the workflow ``Context`` a tool may take."""
    arguments = {k: v for k, v in kwargs.items() if not isinstance(v, Context)}
    if args:
        names = _fields(tool) or ["input"]
        for i, value in enumerate(args):
            arguments[names[i] if i < len(names) else f"arg{i}"] = value
    return arguments


def _edited(given: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A call's keyword arguments with a person's edited ``arguments`` (the workflow
    ``Context`` a tool takes kept)."""
    return {**{k: v for k, v in given.items() if isinstance(v, Context)}, **arguments}


def _output(
    name: str, tool_input: Mapping[str, Any], content: Any, result: list[ToolOutput]
) -> ToolOutput:
    """The tool's own output, or, when toolpass changed what the model reads (untrusted
    content fenced, a credential redacted), an output of that text."""
    if result and content is result[0].content:
        return result[0]
    return ToolOutput(
        content=str(content), tool_name=name, raw_input=dict(tool_input), raw_output=content
    )


def _waits(exc: BaseException) -> bool:
    """Whether ``exc`` is a workflow step's wait for an event (or toolpass's error of one)."""
    return isinstance(exc, _WAITING) or isinstance(getattr(exc, "original", None), _WAITING)


def _failed(
    name: str, tool_input: Mapping[str, Any], exc: Exception, result: list[ToolOutput]
) -> ToolOutput:
    """A tool's exception that the framework had caught (``result``) as it shows it: its own
    error output, or the redacted (fenced) text toolpass made of it; one it had not is raised
    on to it."""
    if result and result[0].exception is exc:
        return result[0]
    if result:
        return ToolOutput(
            content=str(exc),
            tool_name=name,
            raw_input=dict(tool_input),
            raw_output=str(exc),
            is_error=True,
            exception=exc,
        )
    raise exc
