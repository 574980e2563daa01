"""toolpass for the OpenAI Agents SDK.

``ToolpassGuardrails(engine, rules).apply(agent)`` checks every tool call of the agent (and of
the agents it hands off to or uses as tools) for the user of the run, which the application
passes in the run's context (``Runner.run(agent, input, context=Ctx(user_id=...))``), never the
model.

Two of the SDK's own seams are used, because neither does everything:

- a tool input guardrail (``guardrails.guardrail``) decides: it runs before the tool (and
  before ``on_tool_start`` hooks, and before a human is asked to approve when the run config
  enables pre-approval guardrails), asks the permission engine through the toolpass pipeline,
  and refuses with ``reject_content``, so the model reads why and the run goes on. It is the
  only seam MCP servers' tools have (their body runs in the server).
- a guardrail cannot wrap the body, so ``apply`` also wraps each function tool's
  ``on_invoke_tool``: the body runs in a toolpass ``Session`` for the user (one per run
  context), so ``secured_tool`` and ``toolpass.tool()`` tools and the request hook see who
  they act for. It does not ask the engine again for a call the guardrail allowed; a call
  that reaches it without the guardrail's decision (the guardrail was removed, or the SDK
  skipped guardrails) gets the whole check there instead.

The tools' failure policy is extended so a refusal raised inside a tool's body reaches the
model with its reason (``function_tool`` masks other exceptions, and still does).

Approvals pause the run in the SDK's own way when the call's session outlives the run (a
``session`` callable, or ``RunConfig.group_id`` while tracing is on; otherwise the model reads
the ``approval_pending`` refusal and retries, as before). Each guarded function tool's
``needs_approval`` is toolpass's check itself: it says yes only for a call that toolpass sends
to a person (the approval queue's request), after every other check passed, so a call that
would be refused anyway is never sent to a person (its refusal is what the model reads; the
check is not made twice). The run ends with ``result.interruptions``;
``guardrails.pending(item)`` is the request's ``Pending.payload()`` (``request_id``, ``tool``,
``arguments``, ``reasons``...). Resume with ``state.approve(item)``, or with
``guardrails.answer(state, item, answer)`` to say who decided, deny with a reason or approve
edited arguments, then ``Runner.run(agent, state)``: the answer goes through the approval
machine (``Guard.aresume``), the whole check runs again and the queue's record decides, and the
call runs once. ``state.reject(item)`` alone tells the model the application's message and
leaves the request to expire.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

from agents import Agent, FunctionTool, RunState
from agents._tool_identity import get_function_tool_lookup_key_for_call
from agents.items import ToolApprovalItem
from agents.mcp import MCPServer
from agents.run_context import RunContextWrapper
from agents.tool import (
    maybe_invoke_function_tool_failure_error_function,
    set_function_tool_failure_error_function,
)
from agents.tool_context import ToolContext
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
)
from agents.tracing import get_current_trace
from agents.tracing.traces import NoOpTrace
from toolpass.adapting import (
    Answer,
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

__all__ = ["Rule", "ToolpassGuardrails", "refusal_text"]

_SYNC_MARKER = "__agents_sync_function_tool__"  # set by function_tool on sync tools' invokers
_BY = "openai-agents state.approve"  # who decided, when the application does not say
_HELD = 1024  # decisions and pauses kept per guardrails, for calls not yet run or resumed


class ToolpassGuardrails:
    """Checks every tool call of an OpenAI Agents SDK agent with toolpass.

    ``rules`` maps tool names (or tuples of names sharing a rule) to a ``Rule`` or a
    ``(connection, action, resource)`` tuple; with ``strict=True`` a tool without a rule is
    refused, otherwise it runs unchecked (and audited). ``user`` names the attribute (or key)
    of the run's context object holding the user, ``"user_id"`` by default, or is a callable
    given that object. ``session`` says what one session lasts for: ``"conversation"`` (the
    run's ``RunConfig.group_id``, the SDK's id for a conversation or chat thread, when the
    application sets one; else the run; the default), ``"run"`` (the run's context object
    when it can be weakly referenced, else the run's usage record), or a callable given the
    context object returning an id. ``on_refuse`` turns a refusal into what the model reads
    (``refusal_text`` by default: the reason and what to do next); ``None`` ends the run
    instead. ``toolkit`` supplies audit sinks, limits and the request hook. Every option is
    checked here (``toolpass.adapting.Guard``), and the rules against the agents' tools in
    ``apply``; ``guard.explain()`` lists them.
    """

    def __init__(
        self,
        engine: PermissionEngine,
        rules: Rules | None = None,
        *,
        strict: bool = False,
        toolkit: Toolkit | None = None,
        user: UserSource = "user_id",
        session: SessionSource = "conversation",
        on_refuse: OnRefuse | None = refusal_text,
    ) -> None:
        self.guard = Guard(
            engine,
            rules,
            strict=strict,
            toolkit=toolkit,
            user=user,
            session=session,
            on_refuse=on_refuse,
        )
        # Runs the body of a call the guardrail already allowed: session, request hook and
        # the output recorded as the tool's traits say; no second question to the engine.
        self._body = self.guard.for_bodies()
        self.on_refuse = on_refuse
        #: The tool input guardrail; also usable alone in ``function_tool(tool_input_guardrails=
        #: [...])`` (then the body gets no session: prefer ``apply`` or ``guard_tool``).
        self.guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(self._decide, name="toolpass")
        self._allowed: weakref.WeakKeyDictionary[ToolContext[Any], tuple[str | None, str]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        #: By call id: what ``needs_approval``'s check decided (the key, the arguments, the
        #: refusal or None), for the guardrail to use instead of checking again.
        self._decided: OrderedDict[str, tuple[Any, dict[str, Any], ToolRefused | None]] = (
            OrderedDict()
        )
        #: By call id: the calls paused for a person, and the answers given through ``answer``.
        self._paused: OrderedDict[str, Pending] = OrderedDict()
        self._answers: OrderedDict[str, Answer] = OrderedDict()
        #: The function tools whose body this guards (an approved call's resume runs there).
        self._functions: set[str] = set()

    # Approvals.

    def pending(self, item: ToolApprovalItem) -> dict[str, Any] | None:
        """What a person decides on for an interruption toolpass made: ``Pending.payload()``
        (None for an interruption of the application's own ``needs_approval``)."""
        with self._lock:
            pending = self._paused.get(_call_id(item))
        return None if pending is None else pending.payload()

    def answer(
        self, state: RunState[Any], item: ToolApprovalItem, answer: Any, *, by: str = ""
    ) -> None:
        """Answer an interruption and approve it in ``state`` so the run resumes it:
        ``answer`` is an ``Answer`` (approve, deny with a reason, edit with arguments) or
        what ``Answer.of`` reads; ``by`` names the person. On resume the answer goes through
        the approval machine and the check runs again: a denial reaches the model as
        ``approval_denied`` with the reason, an edit runs with the person's arguments after
        every check; nothing runs that the queue's record does not allow."""
        decided = Answer.of(answer, by=by)
        if by and not decided.by:
            decided = dataclasses.replace(decided, by=by)
        with self._lock:
            _hold(self._answers, _call_id(item), decided)
        state.approve(item)

    # Attaching.

    def apply(self, agent: Agent[Any]) -> Agent[Any]:
        """Guard every tool of ``agent``, of its MCP servers, of the agents it hands off to
        and of the agents it uses as tools; returns ``agent``. A tool the SDK gives no hook
        for (hosted tools, shell, computer) is an error with ``strict``, else a warning.
        A rule for a tool none of these agents has, or whose resource names an argument its
        tool does not take, is a ``ValueError`` (a rule that may name a tool of an MCP
        server is checked as the agent runs, with a warning)."""
        unguarded: list[str] = []
        tools: dict[str, list[str] | None] = {}
        servers = False
        for each in _agents(agent):
            self._guard_at_run_time(each)
            for tool in each.tools:
                name = getattr(tool, "name", type(tool).__name__)
                tools[name] = _arguments_of(tool)
                if isinstance(tool, FunctionTool):
                    self.guard_tool(tool)
                else:
                    unguarded.append(f"{each.name}.{name}")
            for server in each.mcp_servers:
                servers = True
                self.guard_mcp_server(server)
        self.guard.add_tools(tools, complete=not servers)
        if unguarded:
            message = (
                f"toolpass cannot check these tools, which have no tool input guardrail: "
                f"{', '.join(unguarded)}"
            )
            if self.guard.strict:
                raise ValueError(message)
            warnings.warn(message, stacklevel=2)
        return agent

    def _guard_at_run_time(self, agent: Agent[Any]) -> None:
        """Guard, at each run, the function tools the agent has then: tools added after
        ``apply`` and MCP tools listed anew are checked too."""
        listed = agent.get_all_tools
        if getattr(listed, "_toolpass_guards", None) is self:
            return

        async def get_all_tools(run_context: Any) -> list[Any]:
            tools = await listed(run_context)
            for tool in tools:
                if isinstance(tool, FunctionTool):
                    self.guard_tool(tool)
            self.guard.add_tools(
                {t.name: _arguments_of(t) for t in tools}, complete=False, late=True
            )
            return tools

        get_all_tools._toolpass_guards = self  # type: ignore[attr-defined]
        object.__setattr__(agent, "get_all_tools", get_all_tools)

    def guard_tool(self, tool: FunctionTool) -> FunctionTool:
        """Guard one function tool (in place; returns it): the guardrail decides, and its
        body runs in the user's session. Applying twice changes nothing."""
        if not isinstance(tool, FunctionTool):
            raise TypeError(f"guard_tool takes a FunctionTool, not {tool!r}")
        invoker = tool.on_invoke_tool
        if not (isinstance(invoker, _Invoker) and invoker.owner is self):
            policy = copy.copy(tool)  # the tool's own failure policy, kept for other errors
            set_function_tool_failure_error_function(tool, self._failure_function(policy))
            tool.on_invoke_tool = _Invoker(self, invoker)
        guardrails = list(tool.tool_input_guardrails or [])
        if self.guardrail not in guardrails:
            tool.tool_input_guardrails = [self.guardrail, *guardrails]
        self._functions.add(tool.name)
        asks = tool.needs_approval
        if self.guard.queue is None:
            pass  # no call waits for a person: the guardrail alone decides
        elif not (isinstance(asks, _NeedsApproval) and asks.owner is self):
            tool.needs_approval = _NeedsApproval(self, tool.name, asks)
        return tool

    def guard_mcp_server(self, server: MCPServer) -> MCPServer:
        """Put the guardrail on every tool of an MCP server (their bodies run in the server)."""
        guardrails = list(server.tool_input_guardrails or [])
        if self.guardrail not in guardrails:
            server.tool_input_guardrails = [self.guardrail, *guardrails]
        return server

    # The guardrail: decides.

    async def _needs_approval(
        self, ctx: RunContextWrapper[Any], tool: str, params: Any, call_id: str
    ) -> bool:
        """The check of a call, before anyone is asked: True only when it waits for a person
        in the approval queue (every other check passed)."""
        source, conversation = self.guard.session_source, _traced_conversation()
        if source == "run" or (source == "conversation" and conversation is None):
            # A resumed run would be a new session, so its answer could never apply: the
            # guardrail decides, and the model reads the approval_pending refusal.
            return False
        try:
            context = ctx.context
            user = self.guard.user_of(context, context)
            key = self.guard.key(_run(ctx), conversation, context)
            arguments = _parsed(params)
            refused = await self.guard.acheck(user, tool, arguments, key=key, body_follows=True)
        except Exception:  # the guardrail reads them again, refuses and audits it, once
            return False
        pending = None if refused is None else self.guard.pending(refused)
        with self._lock:
            _hold(self._decided, call_id, (key, arguments, None if pending else refused))
            if pending is not None:
                _hold(self._paused, call_id, pending)
        return pending is not None

    async def _decide(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        refused: ToolRefused | None
        try:
            with self.guard.refusing(ctx.tool_name, {}, failed=_check_error):  # it broke: refuse
                user, key, arguments = self._call(ctx, ctx.tool_arguments)
                with self._lock:
                    decided = self._decided.pop(ctx.tool_call_id, None)
                if ctx.tool_name in self._functions and _approved(ctx):
                    # Resumed after a person: the guarded body's resume checks it all.
                    return ToolGuardrailFunctionOutput.allow(output_info={"toolpass": "resumed"})
                if decided is not None and decided[:2] == (key, arguments):
                    refused = decided[2]  # needs_approval checked this very call
                else:
                    refused = await self.guard.acheck(
                        user, ctx.tool_name, arguments, key=key, body_follows=True
                    )
        except ToolRefused as exc:
            refused = exc
        if refused is None:
            with self._lock:
                self._allowed[ctx] = (user, ctx.tool_arguments)
            return ToolGuardrailFunctionOutput.allow(output_info={"toolpass": "allow"})
        info = {"toolpass": refused.code, "message": refused.message}
        if self.on_refuse is None:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=info)
        return ToolGuardrailFunctionOutput.reject_content(self.on_refuse(refused), info)

    # The body: runs in the session.

    async def _invoke(self, inner: Any, ctx: ToolContext[Any], input: str) -> Any:
        with self._lock:
            decided = self._allowed.pop(ctx, None)
        try:

            async def body() -> Any:
                return await inner(ctx, input)

            if decided is not None and decided[1] == input:
                user, key, _ = self._call(ctx, None)
                if user == decided[0]:  # allowed by the guardrail: run it in the session
                    with self.guard.session(user, key):
                        # Nothing to record, hook or watch: the body alone.
                        quiet = ctx.tool_name not in self._body.traits
                        quiet = quiet and not self.guard.toolkit.on_output
                        if self.guard.toolkit.permissions is None and quiet:
                            return await body()
                        arguments = _arguments(input)  # the request hook needs them
                        return await self._body.arun(user, ctx.tool_name, arguments, body, key=key)
            # The guardrail did not decide this very call: check it all here.
            user, key, arguments = self._call(ctx, input)
            if _approved(ctx):
                return await self._resume(inner, ctx, user, key, arguments)
            return await self.guard.arun(user, ctx.tool_name, arguments, body, key=key)
        except ToolRefused as refused:
            if self.on_refuse is None:
                raise
            return self.on_refuse(refused)

    async def _resume(
        self, inner: Any, ctx: ToolContext[Any], user: str | None, key: Any, arguments: Any
    ) -> Any:
        """A call approved in the run's state: the person's answer through the approval
        machine, then the whole check and the body, once. The answer is the one ``answer``
        gave for this very item, else the SDK's approval, taken only for the request this
        process paused this very call for: an approval no pause asked for (the SDK's
        ``always_approve`` covering a later call) answers no request, the queue decides."""
        call_id = ctx.tool_call_id
        with self._lock:
            given = self._answers.pop(call_id, None)
            paused = self._paused.pop(call_id, None)
        answer = given or Answer("approve", by=_BY)
        request_id = answer.request_id or (paused.request_id if paused else None)
        if request_id is None and given is not None:  # answered here, paused in another process
            request_id = self._waiting_request(user, key, ctx.tool_name, arguments)

        def body(runs_with: Mapping[str, Any]) -> Callable[[], Any]:
            return lambda: inner(ctx, json.dumps(dict(runs_with)))

        if request_id is None:  # no request waits for it: the queue's record decides
            return await self.guard.arun(user, ctx.tool_name, arguments, body(arguments), key=key)
        return await self.guard.aresume(
            user, ctx.tool_name, arguments, body, request_id=request_id, answer=answer, key=key
        )

    def _waiting_request(self, user: str | None, key: Any, tool: str, arguments: Any) -> str | None:
        """The request waiting for this very call (a run resumed in another process)."""
        queue = self.guard.queue
        if queue is None:
            return None
        for request in queue.pending():
            if self.guard.waits(request.id, user, tool, arguments, key=key):
                return request.id
        return None

    def _failure_function(self, policy: FunctionTool) -> Callable[..., Any]:
        async def failure(ctx: RunContextWrapper[Any], error: Exception) -> str | None:
            if isinstance(error, ToolRefused) and self.on_refuse is not None:
                return str(self.on_refuse(error))  # a refusal in the body: the model reads it
            return await maybe_invoke_function_tool_failure_error_function(
                function_tool=policy, context=ctx, error=error
            )

        return failure

    # Helpers.

    def _call(
        self, ctx: ToolContext[Any], raw: str | None
    ) -> tuple[str | None, Any, dict[str, Any]]:
        """The run's user (None when the application gave none), the key its session is kept
        under, and the call's arguments (``raw`` parsed; not when None). What refuses here is
        audited here: the pipeline has not started."""
        context = ctx.context
        with self.guard.refusing(ctx.tool_name, {}, failed=_reading_the_user):
            user = self.guard.user_of(context, context)
        with self.guard.refusing(ctx.tool_name, {}, user, failed=_reading_the_user):
            arguments = {} if raw is None else _arguments(raw)
            key = self.guard.key(_run(ctx), _conversation(ctx), context)
        return user, key, arguments


class _NeedsApproval:
    """A guarded function tool's ``needs_approval``: the application's own setting, then
    toolpass's check (see ``ToolpassGuardrails._needs_approval``)."""

    def __init__(self, owner: ToolpassGuardrails, tool: str, own: Any) -> None:
        self.owner, self.tool, self.own = owner, tool, own

    async def __call__(self, ctx: RunContextWrapper[Any], params: Any, call_id: str) -> bool:
        own = self.own
        if callable(own):
            own = own(ctx, params, call_id)
            own = await own if hasattr(own, "__await__") else own
        if own is True:
            return True  # the application asks a person itself
        return await self.owner._needs_approval(ctx, self.tool, params, call_id)


def _hold(table: OrderedDict[str, Any], key: str, value: Any) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > _HELD:
        table.popitem(last=False)


def _call_id(item: ToolApprovalItem) -> str:
    raw = item.raw_item
    call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
    return str(call_id)


def _approved(ctx: ToolContext[Any]) -> bool:
    """Whether the run's state approved this very call (``state.approve``): it was paused."""
    call = ctx.tool_call
    if call is None:
        return False
    item = ToolApprovalItem(
        agent=cast(Any, ctx.agent),  # the item only identifies the call
        raw_item=call,
        tool_name=ctx.tool_name,
        tool_namespace=ctx.tool_namespace,
        tool_lookup_key=get_function_tool_lookup_key_for_call(call),
    )
    status = ctx.get_approval_status(
        ctx.tool_name,
        ctx.tool_call_id,
        tool_namespace=ctx.tool_namespace,
        tool_lookup_key=item.tool_lookup_key,
        current_invocation=item,
    )
    return status is True


def _parsed(params: Any) -> dict[str, Any]:
    """The call's arguments as the SDK parsed them for ``needs_approval``."""
    if isinstance(params, dict):
        return dict(params)
    return _arguments("") if params is None else _arguments("not an object")


def _traced_conversation() -> str | None:
    """The run's conversation where the call's context does not carry the run's config: the
    group id of the run's trace (``RunConfig.group_id``); None while tracing is off."""
    trace = get_current_trace()
    group = None if isinstance(trace, NoOpTrace) else getattr(trace, "group_id", None)
    return group if isinstance(group, str) and group else None


def _run(ctx: RunContextWrapper[Any]) -> Any:
    """What stands for the run: its context object, which applications make per run, when it
    can be weakly referenced; else (a dict, None) the run's usage record."""
    try:
        weakref.ref(ctx.context)
    except TypeError:
        return ctx.usage
    return ctx.context


def _conversation(ctx: ToolContext[Any]) -> str | None:
    """The run's conversation: ``RunConfig.group_id``, which the application sets (the SDK's
    id linking the runs of one conversation or chat thread), never the model."""
    group = getattr(ctx.run_config, "group_id", None)
    return group if isinstance(group, str) and group else None


def _arguments_of(tool: Any) -> list[str] | None:
    """The names of a tool's arguments, from its JSON schema (None when it has none)."""
    schema = getattr(tool, "params_json_schema", None)
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return list(properties) if isinstance(properties, dict) else None


class _Invoker:
    """A guarded function tool's ``on_invoke_tool``: the SDK's own invoker (with its argument
    parsing and failure policy) inside the user's session."""

    def __init__(self, owner: ToolpassGuardrails, inner: Any) -> None:
        self.owner = owner
        self.inner = inner
        if getattr(inner, _SYNC_MARKER, False):
            setattr(self, _SYNC_MARKER, True)

    async def __call__(self, ctx: ToolContext[Any], input: str) -> Any:
        return await self.owner._invoke(self.inner, ctx, input)

    def __agents_bind_function_tool__(self, tool: FunctionTool) -> _Invoker:
        # A copied FunctionTool rebinds its invoker to the copy; keep ours around it.
        bind = getattr(self.inner, "__agents_bind_function_tool__", None)
        inner = bind(tool) if callable(bind) else self.inner
        return self if inner is self.inner else _Invoker(self.owner, inner)

    def __repr__(self) -> str:
        return f"<toolpass-guarded {self.inner!r}>"


def _agents(agent: Agent[Any]) -> Iterator[Agent[Any]]:
    """The agent, the agents it hands off to and the agents it uses as tools, once each."""
    seen: set[int] = set()
    todo = [agent]
    while todo:
        each = todo.pop()
        if id(each) in seen:
            continue
        seen.add(id(each))
        yield each
        for handoff in each.handoffs:
            if isinstance(handoff, Agent):
                todo.append(handoff)
            else:  # a Handoff keeps a weak reference to its agent
                ref = getattr(handoff, "_agent_ref", None)
                target = ref() if callable(ref) else None
                if isinstance(target, Agent):
                    todo.append(target)
        for tool in each.tools:
            nested = getattr(tool, "_agent_instance", None)  # Agent.as_tool()
            if isinstance(nested, Agent):
                todo.append(nested)


def _arguments(raw: str) -> dict[str, Any]:
    """The call's arguments, parsed as the SDK parses them; anything else refuses."""
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise ToolRefused(
            "invalid_arguments",
            "The tool's arguments are not a JSON object, so it was not called. Call it again "
            "with a JSON object of its parameters.",
        )
    return parsed


def _reading_the_user(exc: BaseException) -> ToolRefused:
    return _check_error(exc, "reading the user")


def _check_error(exc: BaseException, what: str = "the toolpass guardrail") -> ToolRefused:
    return ToolRefused(
        "check_error",
        "A safety check could not be completed, so the call was not made. "
        "Try again later, or tell the user.",
        detail=f"{what} raised {type(exc).__name__}: {exc}",
    )
