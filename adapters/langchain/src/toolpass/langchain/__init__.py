"""toolpass for LangChain 1.x and LangGraph: every tool call checked in the agent's own hook.

``ToolpassMiddleware`` is an agent middleware (``create_agent(..., middleware=[guard])``)
whose ``wrap_tool_call``/``awrap_tool_call`` put each call through toolpass before the tool
runs, for the user the application named in the run's context (never one the model names);
``guard.tool_node(tools)`` gives a checked ``ToolNode`` for graphs built by hand. A refused
call does not run: the model reads why in an error ``ToolMessage`` and the run goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import get_runtime
from langgraph.types import Command
from toolpass import ToolRefused
from toolpass.adapting import Guard, Rule, RuleLike, Rules, refusal_text, user_from
from toolpass.toolkit.toolkit import Toolkit

from langchain.agents.middleware import AgentMiddleware, AgentState

__all__ = ["Rule", "ToolpassMiddleware", "refusal_text"]

Result = ToolMessage | Command[Any]
#: Where the user comes from: the name of an attribute (or key) of the run's context, or a
#: callable given the tool call's runtime (``ToolRuntime``) returning the user.
UserSource = str | Callable[[Any], str | None]


class ToolpassMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Check every tool call of an agent with toolpass before the tool runs.

    ``rules`` maps a tool name (or a tuple of names sharing one rule) to a
    ``Rule(connection, action, resource_template)`` or a ``(connection, action, resource)``
    tuple; the resource is filled from the call's arguments. ``strict=True`` refuses a tool
    without a rule (otherwise it runs unchecked, still in a session and audited).
    ``toolkit`` supplies audit sinks, limits and the request hook. ``user`` says where the
    user is: an attribute (or key) of the run's context, ``"user_id"`` by default, or a
    callable of the call's ``ToolRuntime``. ``on_refuse`` turns a refusal into the text the
    model reads (its code and reason by default).

    List it last among an agent's middleware, so that it checks the very call that runs: a
    middleware listed after it could change the call's arguments after the check.
    """

    def __init__(
        self,
        engine: Any,
        rules: Mapping[Any, RuleLike] | None = None,
        *,
        strict: bool = False,
        toolkit: Toolkit | None = None,
        user: UserSource = "user_id",
        on_refuse: Callable[[ToolRefused], str] = refusal_text,
    ) -> None:
        super().__init__()
        if not (callable(user) or (isinstance(user, str) and user)):
            raise TypeError(f"user is a context attribute's name or a callable, not {user!r}")
        if not callable(on_refuse):
            raise TypeError(f"on_refuse must be callable, not {on_refuse!r}")
        self.guard = Guard(engine, cast(Rules | None, rules), strict=strict, toolkit=toolkit)
        self.user = user
        self.on_refuse = on_refuse

    # The hook.

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Result]
    ) -> Result:
        """Check the call, then run it through ``handler``; a refusal is the tool's reply."""
        call = request.tool_call
        reply: list[ToolMessage] = []

        def body() -> Any:
            return _content(handler(request), reply)

        try:
            user = self._user(request)
            result = self.guard.run(
                user, call["name"], call.get("args") or {}, body, key=_key(request)
            )
        except ToolRefused as refused:
            return self._refusal(request, refused)
        return _message(result, reply, request)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Result]]
    ) -> Result:
        """``wrap_tool_call`` for ``ainvoke``/``astream``."""
        call = request.tool_call
        reply: list[ToolMessage] = []

        async def body() -> Any:
            return _content(await handler(request), reply)

        try:
            user = self._user(request)
            result = await self.guard.arun(
                user, call["name"], call.get("args") or {}, body, key=_key(request)
            )
        except ToolRefused as refused:
            return self._refusal(request, refused)
        return _message(result, reply, request)

    def tool_node(self, tools: Sequence[BaseTool | Callable[..., Any]], **options: Any) -> ToolNode:
        """A LangGraph ``ToolNode`` for ``tools`` whose every call this guard checks, for
        graphs built by hand (``StateGraph(State, context_schema=Context)``)."""
        return ToolNode(
            tools,
            wrap_tool_call=self.wrap_tool_call,
            awrap_tool_call=self.awrap_tool_call,
            **options,
        )

    # Translation.

    def _user(self, request: ToolCallRequest) -> str | None:
        runtime = getattr(request, "runtime", None)
        return user_from(self.user, getattr(runtime, "context", None), runtime)

    def _refusal(self, request: ToolCallRequest, refused: ToolRefused) -> ToolMessage:
        call = request.tool_call
        try:
            text = self.on_refuse(refused)
        except Exception:  # the reason must still reach the model
            text = refusal_text(refused)
        return ToolMessage(
            content=str(text),
            tool_call_id=call.get("id") or "",
            name=call["name"],
            status="error",
        )


def _key(request: ToolCallRequest) -> Any:
    """What a session lasts for: the run. LangGraph makes one ``RunControl`` per ``invoke``,
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
