"""toolpass for Google ADK: every tool call of an agent, its sub-agents and its agent-tools
checked before it runs, and run inside a toolpass session for the run's user.

``ToolpassCallbacks(tp, rules)`` holds one guard and reaches ADK two ways::

    agent = ToolpassCallbacks(tp, rules).apply(LlmAgent(...))   # the agent tree
    app = App(name="ops", root_agent=agent, plugins=[ToolpassCallbacks(tp, rules).plugin()])
    runner = Runner(app=app, session_service=...)                # the user: the run's user_id

The user is the ``user_id`` the application passes to ``runner.run_async`` / ``runner.run``
(``tool_context.user_id``), never the model; ``user=`` names another attribute of the
``ToolContext`` or a key of the session's state, or is a callable given the ``ToolContext``.
``session="conversation"`` (the default) keeps one toolpass session per user for the ADK
session (``tool_context.session.id``), ``"run"`` one per invocation, or a callable given the
``ToolContext`` returns an id.

Why the tools are wrapped, not only called back: ADK's ``before_tool_callback`` only decides
(a non-None dict answers the call instead of the tool), and toolpass must also run the tool's
body inside the call: the toolpass ``Session`` for the user, the request hook watching what
the body sends, one audit event for the whole call, the call's limit slot and approval spent
only when the body runs. Running the tool from inside the callback would skip everything ADK
does after it (the app's own agent callbacks when the plugin answers, and ADK's confirmation
gate for ``FunctionTool(require_confirmation=...)``). So each of the agent's tools (and
each toolset's) is wrapped in a tool whose ``run_async`` runs the whole toolpass pipeline with
the real tool's ``run_async`` as its body. ADK's order stays as it is: plugin callbacks, the
agent's ``before_tool_callback``s, the confirmation gate, then the call, checked last, so
toolpass sees the very call that runs and a call another callback answers or a person
rejects never reaches it (and spends nothing).

``apply(agent)`` wraps the tools of the agent and of every agent below it (``sub_agents``, and
the agent of each ``AgentTool``, at any depth) in place, and adds toolpass's
``before_tool_callback`` and ``on_tool_error_callback`` to each (after the agent's own).
``plugin()`` is an ADK plugin for ``App(plugins=[...])`` that wraps the tools of every agent
the app runs (in ``before_agent_callback``, in place, so also the agents of ``AgentTool``\\s,
which inherit the app's plugins) and holds the same two callbacks for all of them.

The ``before_tool_callback`` is the safety net: a call whose tool is not wrapped (a workflow
node, a tool put on an agent after it was wrapped) runs through the pipeline right there, its
result the call's answer; a tool ADK's confirmation gate holds back is left to the gate first.
As a plugin, answering a call skips the agents' own ``before_tool_callback``\\s (ADK's rule for
plugins), so only for such calls. The tools ADK adds itself to steer the run
(``transfer_to_agent``, ``set_model_response``) are left to ADK: they act on no system, and the
agent they transfer to is guarded too.

A refusal is the tool's result (``{"error": "Refused by toolpass (<code>): <reason>"}`` by
default, ``on_refuse``), the model reads it and the run goes on; ``on_refuse=None`` ends the
run with the ``ToolRefused``. A tool's own exception (without toolpass it ends the run) becomes
``{"error": "<Type>: <message>"}`` in ``on_tool_error_callback``, redacted of the call's
credential and fenced when its text is untrusted, as the pipeline makes it; an app's own error
callback listed before toolpass's (or a plugin listed before it) still has the first say.

Approvals: when the pipeline needs a person (``toolkit=Toolkit(approver=ApprovalQueue())``
and a check asking for approval), the call asks through ADK's tool confirmation
(``tool_context.request_confirmation``): the run pauses with an ``adk_request_confirmation``
call whose ``ToolConfirmation`` hint is the request's description (who asks for what, why,
every argument) and whose payload is the request (``toolpass.adapting.Pending.payload()``:
``type``, ``request_id``, ``tool``, ``user``, ``arguments`` as the preview shows them,
``reasons``, ``preview``, ``expires``, ``message``; and ``"toolpass": "approval"``). The
application answers it the ADK way (a ``FunctionResponse`` named ``adk_request_confirmation``
with ``{"confirmed": true}``, and a payload saying who and why: ``{"by": "lee"}``,
``{"by": ..., "reason": ...}``, or ``{"decision": "edit", "arguments": {...}}`` to approve
other arguments, which are checked again; see ``toolpass.adapting.Answer.of``; a
confirmation that is not ``confirmed`` never approves). The request is the one toolpass
asked under the call's function call id, read from the ADK session (so a guard made anew,
or after a restart on a persistent session service, finds it). The shared approval machine
records the answer in the toolkit's ``ApprovalQueue`` for this very call's request only,
runs the check again, and the queue's record decides: the call runs once, or is refused
with the person's reason (``approval_denied``), or reads ``approval_expired`` when nobody
decided in time; an answer naming another request records nothing (the call asks again),
and a request decided in the queue directly keeps that decision.

A failure of the adapter itself (the user source raising, a bug here) refuses the call with
``check_error``; its text never reaches the model.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.models.llm_request import LlmRequest
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.set_model_response_tool import SetModelResponseTool
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.adk.tools.tool_context import ToolContext
from google.adk.tools.transfer_to_agent_tool import TransferToAgentTool
from google.genai import types
from toolpass.adapting import (
    APPROVAL,
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
    user_from,
)

__all__ = ["Rule", "ToolpassCallbacks", "ToolpassPlugin", "refusal_result", "refusal_text"]

log = logging.getLogger("toolpass")

#: The tools ADK adds itself to steer the run (not the application's tools): left to ADK.
_ADK_CONTROL = (TransferToAgentTool, SetModelResponseTool)
_HELD = 1024  # invocations (session="run") remembered, most recent first
_BY = "google-adk confirmation"  # who decided, when the answer does not say
_Bodies = Callable[[Mapping[str, Any]], Callable[[], Awaitable[Any]]]


def refusal_result(refused: ToolRefused) -> dict[str, Any]:
    """The default ``on_refuse``: the tool's result, which ADK hands the model as the
    ``FunctionResponse`` (``{"error": "Refused by toolpass (<code>): <reason>"}``)."""
    return {"error": refusal_text(refused)}


class _Run:
    """Stands for one invocation (the session of ``session="run"``)."""

    __slots__ = ("__weakref__",)


class ToolpassCallbacks:
    """Checks every tool call of a Google ADK agent with toolpass.

    ``rules`` maps a tool name (or a tuple of names sharing a rule) to a
    ``Rule(connection, action, resource_template)`` or a ``(connection, action, resource)``
    tuple; the resource is filled from the call's arguments. ``strict=True`` refuses a tool
    without a rule (otherwise it runs unchecked, still in a session and audited). ``user``: an
    attribute of the ``ToolContext`` (``"user_id"``, the run's user, by default) or else a key
    of the session state, or a callable given the ``ToolContext``. ``session``:
    ``"conversation"`` (the ADK session; the default), ``"run"`` (one invocation) or a callable
    given the ``ToolContext``. ``on_refuse`` turns a refusal into the tool's result
    (``refusal_result`` by default; a callable returning None gives it too); None ends the run
    with the refusal. ``toolkit`` supplies audit sinks, limits, the approver and the request
    hook. Every option is checked here (``toolpass.adapting.Guard``); ``apply`` checks the
    rules against the agent tree's tools, and ``guard.explain()`` lists what each tool gets.
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
        on_refuse: OnRefuse | None = refusal_result,
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
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, _Run] = OrderedDict()

    # What the application calls.

    def apply(self, agent: BaseAgent) -> BaseAgent:
        """Guards ``agent`` and every agent below it (sub-agents, the agents of
        ``AgentTool``\\s), in place, and returns it: their tools and toolsets wrapped, and
        toolpass's ``before_tool_callback`` and ``on_tool_error_callback`` added after their
        own. The rules are checked against the tools now (a ``ValueError`` for a rule naming a
        tool none of them has, or an argument its tool does not take; a toolset's tools are
        only known as it runs)."""
        if not isinstance(agent, BaseAgent):
            raise TypeError(f"apply() takes an ADK agent, not {type(agent).__name__}")
        complete = True
        for each in _agents(agent):
            complete = self._wrap_tools(each) and complete
            if isinstance(each, LlmAgent):
                each.before_tool_callback = _added(
                    each.before_tool_callback, self.before_tool_callback
                )
                each.on_tool_error_callback = _added(
                    each.on_tool_error_callback, self.on_tool_error_callback
                )
        self.guard.add_tools(_known(agent), complete=complete)
        return agent

    def plugin(self, name: str = "toolpass") -> ToolpassPlugin:
        """An ADK plugin for ``App(plugins=[...])``: every agent the app runs, guarded."""
        return ToolpassPlugin(self, name)

    # ADK's callbacks (usable on an agent directly).

    async def before_tool_callback(
        self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
    ) -> Any:
        """None for a wrapped tool (it is checked as it runs); a call of a tool that is not
        wrapped runs through the pipeline here, and its result answers the call."""
        try:
            with self.guard.refusing(tool.name, args, failed=_check_error):
                if isinstance(tool, (_GuardedTool, *_ADK_CONTROL)) or type(tool) is BaseTool:
                    # Checked as it runs; ADK's own control flow; or a tool the model made up
                    # (ADK answers that it does not exist).
                    return None
                confirmation = tool_context.tool_confirmation
                if await tool.check_require_confirmation(args, tool_context) is True and not (
                    confirmation is not None and confirmation.confirmed
                ):
                    return None  # ADK's gate asks first (or answers a rejection): nothing runs
        except ToolRefused as refused:  # the callback itself failed: refuse
            if self.guard.on_refuse is None:
                raise
            return self._result(refused)

        def body(given: Mapping[str, Any]) -> Callable[[], Awaitable[Any]]:
            return lambda: tool.run_async(args=dict(given), tool_context=tool_context)

        try:
            result = await self._call(tool.name, args, tool_context, body)
        except Exception as exc:  # the tool's own: ADK's error callbacks would not see it
            return _error_result(exc)
        return {"result": None} if result is None else result

    async def on_tool_error_callback(
        self,
        tool: BaseTool,
        args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> dict[str, Any] | None:
        """A guarded tool's exception as a result the model reads, so the run goes on; a
        refusal with ``on_refuse=None`` (and any error of a tool toolpass did not run) is left
        to ADK."""
        if not isinstance(tool, _GuardedTool) or isinstance(error, ToolRefused):
            return None
        return _error_result(error)

    # The call.

    async def _call(
        self,
        name: str,
        args: Mapping[str, Any],
        tool_context: ToolContext,
        body: _Bodies,
    ) -> Any:
        """The pipeline around ``body(arguments)``, resumed with the person's answer when the
        call paused for one; a refusal is the ``on_refuse`` result (or raised)."""
        guard = self.guard
        try:
            with guard.refusing(name, args, failed=_check_error):  # a source may fail
                arguments = dict(args)
                user = self._user(tool_context)
                key = self._key(tool_context)
                resumed = _resumed(guard, tool_context, user, key, name, arguments)
            try:
                if resumed is None:
                    return await guard.arun(user, name, arguments, body(arguments), key=key)
                request_id, answer = resumed
                return await guard.aresume(
                    user, name, arguments, body, request_id=request_id, answer=answer, key=key
                )
            except ApprovalPending as waiting:
                _ask(tool_context, guard.pending(waiting))
                raise
        except ToolRefused as refused:
            if guard.on_refuse is None:
                raise
            return self._result(refused)

    def _user(self, tool_context: ToolContext) -> str | None:
        source = self.guard.user
        if callable(source):
            return user_from(source, None, tool_context)
        user = user_from(source, tool_context)
        if user is None:
            state = tool_context.state
            user = user_from(source, {source: state.get(source)} if source in state else {})
        return user

    def _key(self, tool_context: ToolContext) -> Any:
        """The call's session key: the ADK session's id (``"conversation"``), what the
        ``session`` callable returns, or the invocation (``"run"``, or when neither names
        one)."""
        invocation = tool_context.invocation_id
        with self._lock:
            run = self._runs.get(invocation)
            if run is None:
                run = self._runs[invocation] = _Run()
                while len(self._runs) > _HELD:
                    self._runs.popitem(last=False)
            else:
                self._runs.move_to_end(invocation)
        conversation = None
        if self.guard.session_source == "conversation":
            conversation = tool_context.session.id
        return self.guard.key(run, conversation, tool_context)

    def _result(self, refused: ToolRefused) -> Any:
        """What the model reads; a failing ``on_refuse`` (or one returning None) still
        refuses, with the plain result."""
        on_refuse = self.guard.on_refuse
        assert on_refuse is not None
        try:
            result = on_refuse(refused)
        except Exception:
            log.exception("toolpass: on_refuse failed")
            result = None
        return refusal_result(refused) if result is None else result

    # Wrapping.

    def _wrap_tools(self, agent: Any) -> bool:
        """Wraps ``agent``'s tools in place; whether all of them are known now."""
        tools = getattr(agent, "tools", None)
        if not isinstance(tools, list):
            return True
        wrapped = [self._wrapped(t) for t in tools]
        if any(new is not old for new, old in zip(wrapped, tools, strict=True)):
            agent.tools = wrapped
        return not any(isinstance(t, BaseToolset) for t in wrapped)

    def _wrapped(self, tool: Any) -> Any:
        if isinstance(tool, (_GuardedTool, _GuardedToolset)) and tool.owner is self:
            return tool
        if isinstance(tool, BaseTool):
            return _GuardedTool(self, tool)
        if isinstance(tool, BaseToolset):
            return _GuardedToolset(self, tool)
        if callable(tool) and not isinstance(tool, type) and not _is_node(tool):
            return _GuardedTool(self, FunctionTool(func=tool))
        return tool  # a workflow node: checked by the before-tool callback


class ToolpassPlugin(BasePlugin):
    """The plugin of ``ToolpassCallbacks.plugin()``: every agent of the app guarded."""

    def __init__(self, owner: ToolpassCallbacks, name: str = "toolpass") -> None:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"name is a non-empty string, not {name!r}")
        super().__init__(name=name)
        self.owner = owner
        self.guard = owner.guard

    async def before_agent_callback(
        self, *, agent: BaseAgent, callback_context: CallbackContext
    ) -> types.Content | None:
        """Wraps the agent's tools before it runs (once; a warning for a rule that does not
        fit them)."""
        try:
            before = list(getattr(agent, "tools", None) or ())
            self.owner._wrap_tools(agent)
            if any(not isinstance(t, (_GuardedTool, _GuardedToolset)) for t in before):
                self.guard.add_tools(_known(agent, below=False), complete=False, late=True)
        except Exception:
            log.exception("toolpass: could not wrap the tools of agent %s", agent.name)
        return None

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        # ADK types the answer as a dict; any value answers the call (as a tool's result).
        result = await self.owner.before_tool_callback(tool, tool_args, tool_context)
        return cast("dict[str, Any] | None", result)

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> dict[str, Any] | None:
        return await self.owner.on_tool_error_callback(tool, tool_args, tool_context, error)


class _GuardedTool(BaseTool):
    """One of the agent's tools whose every call runs inside the toolpass pipeline."""

    def __init__(self, owner: ToolpassCallbacks, inner: BaseTool) -> None:
        super().__init__(
            name=inner.name,
            description=inner.description,
            is_long_running=inner.is_long_running,
            custom_metadata=inner.custom_metadata,
            behavior=inner.behavior,
            response_scheduling=inner.response_scheduling,
        )
        self._defers_response = inner._defers_response
        self.owner = owner
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("inner", "owner"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"<toolpass-guarded {self.inner!r}>"

    def _get_declaration(self) -> types.FunctionDeclaration | None:
        return self.inner._get_declaration()

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        await self.inner.process_llm_request(tool_context=tool_context, llm_request=llm_request)
        if llm_request.tools_dict.get(self.name) is self.inner:
            llm_request.tools_dict[self.name] = self  # calls of it come here

    async def check_require_confirmation(
        self, args: dict[str, Any], tool_context: ToolContext
    ) -> bool:
        return await self.inner.check_require_confirmation(args, tool_context)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        inner = self.inner

        def body(given: Mapping[str, Any]) -> Callable[[], Awaitable[Any]]:
            return lambda: inner.run_async(args=dict(given), tool_context=tool_context)

        return await self.owner._call(self.name, args, tool_context, body)


class _GuardedToolset(BaseToolset):
    """A toolset whose tools are wrapped as it lists them."""

    def __init__(self, owner: ToolpassCallbacks, inner: BaseToolset) -> None:
        super().__init__()
        self.owner = owner
        self.inner = inner

    def __repr__(self) -> str:
        return f"<toolpass-guarded {self.inner!r}>"

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        tools = await self.inner.get_tools_with_prefix(readonly_context)
        wrapped = [self.owner._wrapped(t) for t in tools]
        try:
            self.owner.guard.add_tools(
                {t.name: _arguments(t) for t in wrapped}, complete=False, late=True
            )
        except Exception:
            log.exception("toolpass: could not check the rules against a toolset's tools")
        return wrapped

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        await self.inner.process_llm_request(tool_context=tool_context, llm_request=llm_request)

    async def close(self) -> None:
        await self.inner.close()


# Helpers.


def _agents(root: BaseAgent) -> list[BaseAgent]:
    """``root`` and every agent below it: sub-agents and the agents of agent-tools."""
    found: list[BaseAgent] = []
    todo: list[Any] = [root]
    while todo:
        agent = todo.pop()
        if not isinstance(agent, BaseAgent) or any(agent is a for a in found):
            continue
        found.append(agent)
        todo.extend(getattr(agent, "sub_agents", None) or ())
        for tool in getattr(agent, "tools", None) or ():
            tool = tool.inner if isinstance(tool, _GuardedTool) else tool
            if isinstance(tool, AgentTool):
                todo.append(tool.agent)
    return found


def _known(root: BaseAgent, *, below: bool = True) -> dict[str, list[str] | None]:
    """The tools of ``root`` (and the agents below it) known now: name -> arguments."""
    known: dict[str, list[str] | None] = {}
    for agent in _agents(root) if below else [root]:
        for tool in getattr(agent, "tools", None) or ():
            if isinstance(tool, BaseTool):
                known[tool.name] = _arguments(tool)
    return known


def _arguments(tool: BaseTool) -> list[str] | None:
    try:
        declaration = tool._get_declaration()
    except Exception:
        return None
    if declaration is None:
        return None
    schema = declaration.parameters
    if schema is not None:
        return list(schema.properties or {})
    json_schema = declaration.parameters_json_schema
    if isinstance(json_schema, Mapping):
        properties = json_schema.get("properties")
        return list(properties) if isinstance(properties, Mapping) else None
    return []


def _added(existing: Any, callback: Callable[..., Any]) -> Any:
    """``existing`` callbacks with ``callback`` after them (once)."""
    if existing is None:
        return callback
    callbacks = list(existing) if isinstance(existing, list) else [existing]
    if any(c == callback for c in callbacks):
        return existing
    return [*callbacks, callback]


def _is_node(tool: Any) -> bool:
    try:
        from google.adk.workflow import BaseNode
    except ImportError:  # pragma: no cover - ADK without workflows
        return False
    return isinstance(tool, BaseNode)


# Approvals through ADK's tool confirmation, on the shared machine.


def _ask(tool_context: ToolContext, pending: Pending | None) -> None:
    """Pause the run with ADK's tool confirmation for ``pending`` (None: nothing to ask;
    the refusal is the answer): its hint is what the person reads, its payload the request
    (``Pending.payload()`` and ``"toolpass": "approval"``)."""
    if pending is None or not tool_context.function_call_id:
        return
    tool_context.request_confirmation(
        hint=pending.message, payload={"toolpass": "approval", **pending.payload()}
    )
    tool_context.actions.skip_summarization = True  # the pause is no result to summarize


def _resumed(
    guard: Guard,
    tool_context: ToolContext,
    user: str | None,
    key: Any,
    tool: str,
    arguments: Mapping[str, Any],
) -> tuple[str, Answer] | None:
    """The request this call paused for and the person's answer, when ADK resumes it with a
    confirmation (None otherwise). The request is read from the session, where ADK keeps the
    confirmation toolpass asked under this function call id (so a guard made anew, or after
    a restart, finds it); of several asked under one id, the one made for this very call."""
    confirmation = tool_context.tool_confirmation
    call = tool_context.function_call_id
    if confirmation is None or not call:
        return None
    asked = _asked(tool_context.session.events, call)
    waiting = [r for r in asked if guard.waits(r, user, tool, arguments, key=key)]
    if waiting:
        return waiting[-1], _answer(confirmation)
    if len(asked) == 1:  # decided in the queue, expired, used: the machine says which
        return asked[0], _answer(confirmation)
    return None


def _asked(events: Sequence[Any], call: str) -> list[str]:
    """The requests toolpass asked a confirmation for under function call id ``call``."""
    found = []
    for event in events:
        asked = event.actions.requested_tool_confirmations or {}
        payload = getattr(asked.get(call), "payload", None)
        if isinstance(payload, Mapping) and payload.get("type") == APPROVAL:
            request_id = payload.get("request_id")
            if isinstance(request_id, str) and request_id not in found:
                found.append(request_id)
    return found


def _answer(confirmation: ToolConfirmation) -> Answer:
    """The person's answer in ADK's ``ToolConfirmation``: ``confirmed``, and in its payload
    who (``by``), why (``reason``), an edit (``{"decision": "edit", "arguments": ...}``) or
    the request it answers (``request_id``); a confirmation that is not ``confirmed`` never
    approves. The request's own payload, echoed back, decides nothing of itself."""
    payload = confirmation.payload if isinstance(confirmation.payload, Mapping) else {}
    said = {k: v for k, v in payload.items() if not (k == "type" and v == APPROVAL)}
    answer = Answer.of({"approved": confirmation.confirmed is True, **said}, by=_BY)
    if confirmation.confirmed is not True and answer.decision in ("approve", "edit"):
        answer = Answer("deny", by=answer.by, reason=answer.reason, request_id=answer.request_id)
    return answer


def _error_result(error: BaseException) -> dict[str, Any]:
    """A tool's exception as the model reads it: a ``ToolError``'s text is already redacted
    (and fenced) by the pipeline; any other is its type and message."""
    if type(error).__name__ == "ToolError" and type(error).__module__.startswith("toolpass"):
        return {"error": str(error)}
    return {"error": f"{type(error).__name__}: {error}"}


def _check_error(exc: BaseException) -> ToolRefused:
    """The refusal when toolpass's callback failed (logged: a bug, or a broken option)."""
    log.error("toolpass: the callback failed", exc_info=exc)
    return ToolRefused(
        "check_error",
        "A safety check could not be completed, so the call was not made. "
        "Try again later, or tell the user.",
        detail=f"the toolpass callback raised {type(exc).__name__}: {exc}",
    )
