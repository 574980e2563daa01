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
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any, NoReturn

from toolpass.adapting import (
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

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool, WrapperToolset

__all__ = ["Rule", "ToolpassAuthorization", "ToolpassToolset", "UserSource", "tool_failed"]

log = logging.getLogger("toolpass")


def tool_failed(refused: ToolRefused) -> NoReturn:
    """The default ``on_refuse``: a failed tool result the model reads, with the refusal's
    code and reason. Pydantic AI spends no retry on it and the run goes on.

    Also usable with ``secured_tool(..., as_tool=Tool, on_refuse=tool_failed)``."""
    raise ToolFailed(refusal_text(refused)) from None


class _Run:
    """Identifies one agent run: the session of a run's calls is kept per run."""

    __slots__ = ("__weakref__",)


async def _guarded(
    guard: Guard,
    ctx: RunContext[Any],
    tool: str,
    arguments: Mapping[str, Any],
    body: Callable[[], Awaitable[Any]],
    run: _Run | None,
) -> Any:
    try:
        try:
            user = guard.user_of(ctx.deps, ctx)
            key = guard.key(run, getattr(ctx, "conversation_id", None), ctx)
        except ToolRefused as refused:  # the application's source failed: never run
            log.warning("toolpass: the user or session of %s failed: %s", tool, refused.detail)
            guard.audit_refused(None, tool, arguments, refused)
            raise refused from None
        return await guard.arun(user, tool, arguments, body, key=key)
    except ToolRefused as refused:
        if guard.on_refuse is None:
            raise
        return guard.on_refuse(refused)


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
            lambda: handler(args),
            self.run,
        )


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
            lambda: self.wrapped.call_tool(name, tool_args, ctx, tool),
            self.run,
        )
