"""toolpass for LangChain 1.x and LangGraph: every tool call checked in the agent's own hook.

``ToolpassMiddleware`` is an agent middleware (``create_agent(..., middleware=[guard])``)
whose ``wrap_tool_call``/``awrap_tool_call`` put each call through toolpass before the tool
runs, for the user the application named in the run's context (never one the model names);
``guard.tool_node(tools)`` gives a checked ``ToolNode`` for graphs built by hand. A refused
call does not run: the model reads why in an error ``ToolMessage`` and the run goes on.

Approvals: when a call needs a person (``toolkit=Toolkit(approver=ApprovalQueue(...))``) and
the run has a checkpointer, the middleware pauses the run with LangGraph's ``interrupt()``.
``result["__interrupt__"][0].value`` (``result.interrupts`` with ``version="v2"``) is then::

    {"type": "toolpass_approval", "request_id": "3f9c...", "tool": "delete_issue",
     "user": "dana@example.com", "arguments": {"key": "'PAY-1'"}, "reasons": [...],
     "preview": "...", "expires": 1790000000.0, "message": "dana wants to run ..."}

(``arguments`` as the preview shows them: a secret by its digest). Resume the thread with
``agent.invoke(Command(resume=answer), config)`` where ``answer`` is ``{"decision":
"approve", "by": "lee", "request_id": ...}``, ``{"decision": "deny", "reason": ...}``,
``{"decision": "edit", "arguments": {...}}`` or ``{"decision": "expired"}`` (``True`` or
``"yes"`` approve; see ``toolpass.adapting.Answer.of``). Echo ``request_id``: the answer
is recorded only for the request of this very call, then the whole check runs again and the
queue's record decides (an answer for another request, or for one that expired, never
runs the call; an expired one reads ``approval_expired``). A request decided on the
approvals page before resuming keeps that decision. Without a checkpointer the model reads
the ``approval_pending`` refusal instead. The pause comes from the tools node, so it sits
beside ``HumanInTheLoopMiddleware`` (whose interrupts come after the model call).

A session lasts for the conversation by default: the run's ``configurable.thread_id`` when
it has one (a thread continued over several invokes keeps its limits and taint), else the run
(LangGraph's ``RunControl``, one per ``invoke``/``ainvoke``/``stream``/``astream``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import get_runtime
from langgraph.types import Command, interrupt
from toolpass.adapting import (
    Answer,
    ApprovalPending,
    Guard,
    OnRefuse,
    PermissionEngine,
    Rule,
    RuleLike,
    Rules,
    SessionSource,
    Toolkit,
    ToolRefused,
    UserSource,
    refusal_text,
)

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain.agents.middleware.types import ModelResponse

__all__ = ["Rule", "ToolpassMiddleware", "refusal_text"]

Result = ToolMessage | Command[Any]
ModelResult = ModelResponse | AIMessage
#: How many times one call pauses again in a row (an answer that was not its request's).
_PAUSES = 8
_CHECKPOINTER = "__pregel_checkpointer"  # langgraph's config key of the run's checkpointer


class ToolpassMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Check every tool call of an agent with toolpass before the tool runs.

    ``rules`` maps a tool name (or a tuple of names sharing one rule) to a
    ``Rule(connection, action, resource_template)`` or a ``(connection, action, resource)``
    tuple; the resource is filled from the call's arguments. ``strict=True`` refuses a tool
    without a rule (otherwise it runs unchecked, still in a session and audited).
    ``toolkit`` supplies audit sinks, limits and the request hook. ``user`` says where the
    user is: an attribute (or key) of the run's context, ``"user_id"`` by default, or a
    callable of the call's ``ToolRuntime``. ``session`` says what one session lasts for:
    ``"conversation"`` (the run's ``configurable.thread_id``, else the run; the default),
    ``"run"``, or a callable of the ``ToolRuntime`` returning an id. ``on_refuse`` turns a
    refusal into the text the model reads (its code and reason by default); None ends the
    run with the refusal instead. Every option is checked here (``toolpass.adapting.Guard``);
    the rules are checked against the tools when ``tool_node`` is made, or (with a warning)
    when the agent first offers its tools to the model. ``guard.explain()`` lists them.

    List it last among an agent's middleware, so that it checks the very call that runs: a
    middleware listed after it could change the call's arguments after the check.
    """

    def __init__(
        self,
        engine: PermissionEngine,
        rules: Mapping[Any, RuleLike] | None = None,
        *,
        strict: bool = False,
        toolkit: Toolkit | None = None,
        user: UserSource = "user_id",
        session: SessionSource = "conversation",
        on_refuse: OnRefuse | None = refusal_text,
    ) -> None:
        super().__init__()
        self.guard = Guard(
            engine,
            cast(Rules | None, rules),
            strict=strict,
            toolkit=toolkit,
            user=user,
            session=session,
            on_refuse=on_refuse,
        )
        self._offered: frozenset[str] = frozenset()

    # The hook.

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Result]
    ) -> Result:
        """Check the call, then run it through ``handler``; a refusal is the tool's reply, a
        call waiting for a person pauses the run (``interrupt``)."""
        call = request.tool_call
        reply: list[ToolMessage] = []
        arguments = call.get("args") or {}

        def body(given: Mapping[str, Any]) -> Callable[[], Any]:
            sent = _with_arguments(request, given)
            return lambda: _content(handler(sent), reply)

        guard = self.guard
        try:
            user, key = self._who(request)
            since = _now(guard)
            try:
                result = guard.run(user, call["name"], arguments, body(arguments), key=key)
            except ApprovalPending as waiting:
                for _ in range(_PAUSES):
                    asked, answer = self._ask(waiting, since)
                    try:
                        result = guard.resume(
                            user,
                            call["name"],
                            arguments,
                            body,
                            request_id=asked,
                            answer=answer,
                            key=key,
                        )
                        break
                    except ApprovalPending as again:
                        waiting = again
                else:
                    raise waiting from None
        except ToolRefused as refused:
            return self._refusal(request, refused)
        return _message(result, reply, request)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Result]]
    ) -> Result:
        """``wrap_tool_call`` for ``ainvoke``/``astream``."""
        call = request.tool_call
        reply: list[ToolMessage] = []
        arguments = call.get("args") or {}

        def body(given: Mapping[str, Any]) -> Callable[[], Awaitable[Any]]:
            sent = _with_arguments(request, given)

            async def run() -> Any:
                return _content(await handler(sent), reply)

            return run

        guard = self.guard
        try:
            user, key = self._who(request)
            since = _now(guard)
            try:
                result = await guard.arun(user, call["name"], arguments, body(arguments), key=key)
            except ApprovalPending as waiting:
                for _ in range(_PAUSES):
                    asked, answer = self._ask(waiting, since)
                    try:
                        result = await guard.aresume(
                            user,
                            call["name"],
                            arguments,
                            body,
                            request_id=asked,
                            answer=answer,
                            key=key,
                        )
                        break
                    except ApprovalPending as again:
                        waiting = again
                else:
                    raise waiting from None
        except ToolRefused as refused:
            return self._refusal(request, refused)
        return _message(result, reply, request)

    def _ask(self, waiting: ApprovalPending, since: float | None) -> tuple[str, Answer]:
        """Pause the run for the person (``interrupt``); resumed, the request their answer
        is for and the answer. Re-raises ``waiting`` (the refusal) without a checkpointer."""
        pending = self.guard.pending(waiting)
        if pending is None or not _checkpointed():
            raise waiting
        answer = Answer.of(interrupt(pending.payload()), by="langgraph resume")
        # Resumed, the node runs again: a request made just now is not the one the person
        # saw (theirs expired or was used), so only an answer naming its request counts.
        new = since is not None and pending.created >= since
        asked = answer.request_id or ("" if new else pending.request_id)
        return asked, answer

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResult]
    ) -> ModelResult:
        """Passes the model call on; the first time it offers a tool, checks the rules
        against the agent's tools (a warning for each problem, as the run must go on)."""
        self._saw(request.tools)
        return handler(request)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResult]]
    ) -> ModelResult:
        self._saw(request.tools)
        return await handler(request)

    def tool_node(self, tools: Sequence[BaseTool | Callable[..., Any]], **options: Any) -> ToolNode:
        """A LangGraph ``ToolNode`` for ``tools`` whose every call this guard checks, for
        graphs built by hand (``StateGraph(State, context_schema=Context)``). A rule for a
        tool not among ``tools``, or whose resource names an argument its tool does not
        take, is a ``ValueError`` here."""
        node = ToolNode(
            tools,
            wrap_tool_call=self.wrap_tool_call,
            awrap_tool_call=self.awrap_tool_call,
            **options,
        )
        self.guard.add_tools({n: _arguments(t) for n, t in node.tools_by_name.items()})
        return node

    # Translation.

    def _who(self, request: ToolCallRequest) -> tuple[str | None, Any]:
        """The call's user, and what its session is kept under (a failing source refuses)."""
        call, runtime = request.tool_call, getattr(request, "runtime", None)
        return self.guard.who(
            call["name"],
            call.get("args") or {},
            getattr(runtime, "context", None),
            runtime,
            run=_run(request),
            conversation=_thread(runtime),
        )

    def _saw(self, tools: Sequence[BaseTool | dict[str, Any]]) -> None:
        named = {_name(t): t for t in tools}
        if named.keys() <= self._offered:
            return
        self._offered = self._offered | named.keys()
        arguments = {
            n: _arguments(t) if isinstance(t, BaseTool) else None for n, t in named.items()
        }
        self.guard.add_tools(arguments, late=True)

    def _refusal(self, request: ToolCallRequest, refused: ToolRefused) -> ToolMessage:
        call = request.tool_call
        if self.guard.on_refuse is None:
            raise refused
        try:
            text = self.guard.on_refuse(refused)
        except Exception:  # the reason must still reach the model
            text = refusal_text(refused)
        return ToolMessage(
            content=str(text),
            tool_call_id=call.get("id") or "",
            name=call["name"],
            status="error",
        )


def _with_arguments(request: ToolCallRequest, arguments: Mapping[str, Any]) -> ToolCallRequest:
    """``request`` with the arguments a person approved (itself when they are its own)."""
    call = request.tool_call
    if arguments is call.get("args") or (not arguments and not call.get("args")):
        return request
    return request.override(tool_call={**call, "args": dict(arguments)})


def _now(guard: Guard) -> float | None:
    queue = guard.queue
    return None if queue is None else queue.now()


def _checkpointed() -> bool:
    """Whether the run has a checkpointer, without which LangGraph cannot pause it."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a graph run
        return False
    return configurable.get(_CHECKPOINTER) is not None


def _run(request: ToolCallRequest) -> Any:
    """What stands for the run. LangGraph makes one ``RunControl`` per ``invoke``,
    ``ainvoke``, ``stream`` or ``astream`` (a subgraph shares its parent's) and gives it to
    every call of the run, parallel ones too, whatever the context is (a dict, or none).
    Outside a graph run, the run's context object stands for it."""
    try:
        control = get_runtime().control
    except (RuntimeError, AttributeError):  # not inside a graph run
        control = None
    if control is not None:
        return control
    return getattr(getattr(request, "runtime", None), "context", None)


def _thread(runtime: Any) -> Any:
    """The run's conversation: ``configurable.thread_id``, which the application (or the
    checkpointer's caller) sets, never the model. None when the run has none."""
    config = getattr(runtime, "config", None)
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    thread = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
    return None if thread is None else str(thread)


def _name(tool: BaseTool | dict[str, Any]) -> str:
    if isinstance(tool, BaseTool):
        return tool.name
    function = tool.get("function")
    return str((function if isinstance(function, dict) else tool).get("name", "?"))


def _arguments(tool: BaseTool) -> list[str] | None:
    """The names of the arguments the model gives ``tool`` (None when they cannot be had)."""
    try:
        return list(tool.args)
    except Exception:
        return None


def _content(result: Any, reply: list[ToolMessage]) -> Any:
    """The content of the tool's reply (text or content blocks), so toolpass sees (and,
    when the tool read untrusted content, fences) what the model will read; the message is
    kept in ``reply``."""
    if isinstance(result, ToolMessage):
        reply.append(result)
        return result.content
    return result


def _message(result: Any, reply: list[ToolMessage], request: ToolCallRequest) -> Result:
    if not reply:
        if isinstance(result, (ToolMessage, Command)):
            return result
        # What the framework returned became text (fenced untrusted content): the model
        # reads it as the tool's reply.
        call = request.tool_call
        return ToolMessage(
            content=str(result), tool_call_id=call.get("id") or "", name=call["name"]
        )
    message = reply[0]
    if result is message.content:
        return message
    return message.model_copy(update={"content": result})
