"""toolpass for Pydantic AI: every tool call of an agent checked before it runs.

``ToolpassAuthorization`` is a capability for ``Agent(..., capabilities=[...])``: it wraps
every tool call of the agent (function tools, toolsets, MCP servers, tools added per run) in
``wrap_tool_execute``. ``ToolpassToolset`` wraps one toolset instead. Both take the user from
the run's dependencies (``deps.user`` by default), never from the model, run the call inside a
toolpass ``Session`` for that user, and turn a refusal into a failed tool result
(``ToolFailed``) that the model reads while the run goes on::

    agent = Agent(model, deps_type=Deps, tools=[delete_issue],
                  capabilities=[ToolpassAuthorization(tp, {"delete_issue": Rule(
                      "jira-main", "DELETE_ISSUES", "issue:{key}")})])
    agent.run_sync("...", deps=Deps(user=user.email))

A session lasts for the conversation by default: the run's ``conversation_id``, which Pydantic
AI takes from the run's ``conversation_id=`` or the ``message_history`` it continues (a chat
continued over several runs keeps its limits and taint), and makes anew for a new one.

A call waiting for a person pauses the run in Pydantic AI's own way when the agent can output
``DeferredToolRequests`` (or has a ``HandleDeferredToolCalls`` capability): the capability
raises ``ApprovalRequired`` whose metadata is the request's ``Pending.payload()``
(``request_id``, ``tool``, ``arguments``, ``reasons``...). Resume with ``agent.run(...,
message_history=..., deferred_tool_results=DeferredToolResults(approvals={id: ToolApproved()
| ToolApproved(override_args=...) | ToolDenied(message=...)}, metadata=requests.metadata))``
(``metadata[id]["by"]`` names the person): the answer goes through the approval machine, the
check runs again and the queue's record decides; the call runs once. ``wait_for_person(queue,
timeout)`` is a handler for ``HandleDeferredToolCalls`` that waits inline instead. Otherwise,
and under ``ToolpassToolset``, the model reads the ``approval_pending`` refusal.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any, NoReturn

from toolpass.adapting import (
    Answer,
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
)

from pydantic_ai import CallToolsNode, RunContext
from pydantic_ai.capabilities import AbstractCapability, HandleDeferredToolCalls
from pydantic_ai.exceptions import ApprovalRequired, ToolFailed
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.tools import (
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    ToolDefinition,
    ToolDenied,
)
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool, WrapperToolset

__all__ = [
    "Rule",
    "ToolpassAuthorization",
    "ToolpassToolset",
    "UserSource",
    "tool_failed",
    "wait_for_person",
]

log = logging.getLogger("toolpass")


def tool_failed(refused: ToolRefused) -> NoReturn:
    """The default ``on_refuse``: a failed tool result the model reads, with the refusal's
    code and reason. Pydantic AI spends no retry on it and the run goes on.

    Also usable with ``secured_tool(..., as_tool=Tool, on_refuse=tool_failed)``."""
    raise ToolFailed(refusal_text(refused)) from None


class _Run:
    """Identifies one agent run: the session of a run's calls is kept per run."""

    __slots__ = ("__weakref__",)


#: Where a resumed call's metadata carries a person's denial (``ToolDenied.message``), so that
#: the denial goes through the check, and the queue records it, instead of around them.
_DENIED = "toolpass_denied"
_EDITED = "toolpass_edited"  # the resume gave ToolApproved(override_args=...)
_BY = "pydantic-ai deferred tool results"  # who decided, when the resume does not say


async def _guarded(
    guard: Guard,
    ctx: RunContext[Any],
    tool: str,
    arguments: Mapping[str, Any],
    body: Callable[[Mapping[str, Any]], Awaitable[Any]],
    run: _Run | None,
    *,
    pauses: bool = False,
) -> Any:
    """The call checked and run; with ``pauses``, a call waiting for a person raises
    ``ApprovalRequired`` (its metadata: ``Pending.payload()``), and a resumed call (approved,
    edited or denied in ``DeferredToolResults``) goes through the approval machine."""
    try:
        conversation = getattr(ctx, "conversation_id", None)
        user, key = guard.who(tool, arguments, ctx.deps, ctx, run=run, conversation=conversation)
        resumed = _resumed(guard, ctx, tool, arguments) if pauses else None
        if resumed is not None:
            request_id, asked, answer = resumed
            return await guard.aresume(
                user,
                tool,
                asked,
                lambda a: lambda: body(a),
                request_id=request_id,
                answer=answer,
                key=key,
            )
        denied = _metadata(ctx).get(_DENIED) if pauses and ctx.tool_call_approved else None
        if isinstance(denied, str):  # the application's own approval, denied: never run
            return ToolDenied(denied)
        return await guard.arun(user, tool, arguments, lambda: body(arguments), key=key)
    except ToolRefused as refused:
        pending = guard.pending(refused) if pauses else None
        if pending is not None:
            raise ApprovalRequired(metadata=pending.payload()) from None
        if guard.on_refuse is None:
            raise
        return guard.on_refuse(refused)


def _can_pause(ctx: RunContext[Any]) -> bool:
    """Whether the run can pause for a person: its agent's output types include
    ``DeferredToolRequests``, or a ``HandleDeferredToolCalls`` capability resolves deferred
    calls inline. Otherwise a call waiting for a person is the ``approval_pending`` refusal."""
    output = getattr(ctx.agent, "output_type", None)
    outputs = output if isinstance(output, (list, tuple)) else [output]
    if DeferredToolRequests in outputs:
        return True
    found: list[AbstractCapability[Any]] = []
    if ctx.root_capability is not None:
        ctx.root_capability.apply(found.append)
    return any(isinstance(c, HandleDeferredToolCalls) for c in found)


def _metadata(ctx: RunContext[Any]) -> Mapping[str, Any]:
    metadata = ctx.tool_call_metadata
    return metadata if isinstance(metadata, Mapping) else {}


def _resumed(
    guard: Guard, ctx: RunContext[Any], tool: str, arguments: Mapping[str, Any]
) -> tuple[str, Mapping[str, Any], Answer] | None:
    """For a call resumed after toolpass paused it: the request it paused for (named in the
    metadata the pause carried, which the application passes back), the call's arguments as
    the model made them, and the answer the resume carries. None for any other call."""
    metadata = _metadata(ctx)
    request_id = metadata.get("request_id")
    if not ctx.tool_call_approved or not isinstance(request_id, str):
        return None
    by = metadata.get("by")
    by = by if isinstance(by, str) and by.strip() else _BY
    denied = metadata.get(_DENIED)
    if isinstance(denied, str):
        return request_id, arguments, Answer("deny", by=by, reason=denied, request_id=request_id)
    if metadata.get(_EDITED) is True:
        edit = Answer("edit", by=by, arguments=dict(arguments), request_id=request_id)
        return request_id, _made(ctx, arguments), edit
    return request_id, arguments, Answer("approve", by=by, request_id=request_id)


def _made(ctx: RunContext[Any], arguments: Mapping[str, Any]) -> Mapping[str, Any]:
    """The arguments the model gave the call ``ctx`` runs (``ToolApproved(override_args=)``
    replaces them for the run), from the run's messages; ``arguments`` when not found."""
    for message in reversed(ctx.messages):
        if not isinstance(message, ModelResponse):
            continue
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.tool_call_id == ctx.tool_call_id:
                try:
                    return part.args_as_dict()
                except ValueError:
                    return arguments
    return arguments


def _denials_through_the_check(node: CallToolsNode[Any, Any]) -> CallToolsNode[Any, Any]:
    """A resume's ``ToolDenied`` for a call, turned into an approval carrying the denial, so
    the call reaches the capability (which records the denial in the queue and runs no
    tool) instead of being answered around the check; an approval with ``override_args``
    marked as the person's edit."""
    results = dict(node.tool_call_results or {})
    metadata = {k: dict(v) for k, v in (node.tool_call_metadata or {}).items()}
    marks = {
        call_id: {_DENIED: result.message} if isinstance(result, ToolDenied) else {_EDITED: True}
        for call_id, result in results.items()
        if isinstance(result, ToolDenied)
        or (isinstance(result, ToolApproved) and result.override_args is not None)
    }
    if not marks:
        return node
    for call_id, mark in marks.items():
        if _DENIED in mark:
            results[call_id] = ToolApproved()
        metadata[call_id] = {**metadata.get(call_id, {}), **mark}
    return replace(node, tool_call_results=results, tool_call_metadata=metadata)


def wait_for_person(
    queue: Any, timeout: float
) -> Callable[[RunContext[Any], DeferredToolRequests], Awaitable[DeferredToolResults | None]]:
    """A handler for ``HandleDeferredToolCalls(handler=...)`` that waits inline, at most
    ``timeout`` seconds each, for a person to decide on each call toolpass paused
    (``queue.wait_async``), then resumes the call; the queue's record decides (approved: it
    runs once; denied: the model reads the reason; expired: it reads that). A request still
    undecided after the wait, and any call toolpass did not pause, is left to the run's
    ``DeferredToolRequests``."""

    async def handler(
        ctx: RunContext[Any], requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        results = DeferredToolResults()
        for call in requests.approvals:
            metadata = requests.metadata.get(call.tool_call_id) or {}
            request_id = metadata.get("request_id")
            if not isinstance(request_id, str):
                continue
            try:
                request = await queue.wait_async(request_id, timeout)
            except KeyError:
                continue
            if request.status == "pending":
                continue
            results.approvals[call.tool_call_id] = ToolApproved()
            by = request.decided_by or _BY
            results.metadata[call.tool_call_id] = {**metadata, "by": by}
        return results if results.approvals else None

    return handler


def _guard(owner: Any) -> Guard:
    return Guard(
        owner.engine,
        owner.rules,
        strict=owner.strict,
        toolkit=owner.toolkit,
        user=owner.user,
        session=owner.session,
        on_refuse=owner.on_refuse,
    )


def _arguments(tool_def: ToolDefinition) -> list[str] | None:
    properties = tool_def.parameters_json_schema.get("properties")
    return list(properties) if isinstance(properties, dict) else None


@dataclass(eq=False)
class ToolpassAuthorization(AbstractCapability[Any]):
    """Checks every tool call of a Pydantic AI agent with toolpass.

    ``rules`` maps a tool name (or a tuple of names) to a ``Rule(connection, action,
    resource_template)`` or a ``(connection, action, resource)`` tuple; the resource is filled
    from the call's validated arguments. With ``strict=True`` a tool without a rule is refused;
    otherwise it runs unchecked (still in a session, and audited). ``user`` names the attribute
    (or key) of ``ctx.deps`` holding the user (``"user"`` by default), or is a callable
    ``(ctx) -> user``. ``session`` says what one session lasts for: ``"conversation"`` (the
    run's ``conversation_id``; the default), ``"run"``, or a callable ``(ctx) -> id``.
    ``on_refuse`` turns a refusal into the tool's result; by default a failed tool result
    (``ToolFailed``) carrying the reason; None ends the run with the refusal. ``toolkit``
    supplies audit sinks, limits and the request hook. Every option is checked when it is
    made (``toolpass.adapting.Guard``); the rules are checked against the tools the agent
    offers the model at its first step (a warning for each problem), and ``guard.explain()``
    lists them.

    The call runs inside a toolpass ``Session`` for the user (kept for the whole run, so limits
    and taint last the run), so ``secured_tool`` and ``toolpass.tool()`` tools see who they act
    for; a refusal raised inside a tool's body (a request refused by the request hook) also
    reaches the model as a failed result instead of crashing the run.
    """

    engine: PermissionEngine
    rules: Rules | None = None
    _: KW_ONLY
    strict: bool = False
    toolkit: Toolkit | None = None
    user: UserSource = "user"
    session: SessionSource = "conversation"
    on_refuse: OnRefuse | None = tool_failed
    guard: Guard | None = field(default=None, repr=False)
    run: _Run | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.defer_loading:
            # Hooks of a deferred capability fire only once the model loads it.
            raise ValueError("ToolpassAuthorization cannot be deferred: it must check every call")
        if self.guard is None:
            self.guard = _guard(self)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a live engine: not built from an agent spec

    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        return replace(self, run=_Run())

    async def prepare_tools(
        self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        """Offers every tool unchanged; checks the rules against them (warnings, once)."""
        assert self.guard is not None
        if any(t.name not in self.guard.tools for t in tool_defs):
            self.guard.add_tools({t.name: _arguments(t) for t in tool_defs}, late=True)
        return tool_defs

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        assert self.guard is not None
        return await _guarded(
            self.guard,
            ctx,
            call.tool_name,
            args,
            lambda a: handler(dict(a)),
            self.run,
            pauses=_can_pause(ctx),
        )

    async def wrap_node_run(self, ctx: RunContext[Any], *, node: Any, handler: Any) -> Any:
        """A resume's denials go through the check (see ``_denials_through_the_check``)."""
        if isinstance(node, CallToolsNode):
            node = _denials_through_the_check(node)
        return await handler(node)


@dataclass(eq=False)
class ToolpassToolset(WrapperToolset[Any]):
    """One toolset whose every call is checked with toolpass (see ``ToolpassAuthorization``
    for the options); rules are keyed by the tool names this toolset exposes."""

    engine: PermissionEngine
    rules: Rules | None = None
    _: KW_ONLY
    strict: bool = False
    toolkit: Toolkit | None = None
    user: UserSource = "user"
    session: SessionSource = "conversation"
    on_refuse: OnRefuse | None = tool_failed
    guard: Guard | None = field(default=None, repr=False)
    run: _Run | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.guard is None:
            self.guard = _guard(self)
            tools = getattr(self.wrapped, "tools", None)  # a FunctionToolset's, known now
            if isinstance(tools, dict):
                self.guard.add_tools({n: _arguments(t.tool_def) for n, t in tools.items()})

    async def for_run(self, ctx: RunContext[Any]) -> AbstractToolset[Any]:
        # Always a new instance: its ``run`` keeps the session for this run's calls (later
        # per-step copies made with ``replace`` carry it on).
        return replace(self, wrapped=await self.wrapped.for_run(ctx), run=_Run())

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        assert self.guard is not None
        return await _guarded(
            self.guard,
            ctx,
            name,
            tool_args,
            lambda a: self.wrapped.call_tool(name, dict(a), ctx, tool),
            self.run,
        )
