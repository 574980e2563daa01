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
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any, NoReturn

from toolpass.adapting import Guard, Rule, Rules, refusal_text, user_from
from toolpass.toolkit.authorize import PermissionEngine
from toolpass.toolkit.errors import ToolRefused
from toolpass.toolkit.toolkit import Toolkit

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool, WrapperToolset

__all__ = ["Rule", "ToolpassAuthorization", "ToolpassToolset", "UserSource", "tool_failed"]

log = logging.getLogger("toolpass")

#: Where the user comes from: the name of an attribute (or key) of ``ctx.deps``, or a
#: callable ``(ctx) -> user``. Never the model's arguments.
UserSource = str | Callable[[RunContext[Any]], str | None]
#: What a refusal becomes: a tool result, or an exception Pydantic AI turns into one.
OnRefuse = Callable[[ToolRefused], Any]


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
    source: UserSource,
    on_refuse: OnRefuse,
    ctx: RunContext[Any],
    tool: str,
    arguments: Mapping[str, Any],
    body: Callable[[], Awaitable[Any]],
    run: _Run | None,
) -> Any:
    try:
        try:
            user = user_from(source, ctx.deps, ctx)
        except ToolRefused as refused:  # the application's user source failed: never run
            log.warning("toolpass: the user source of %s failed: %s", tool, refused.detail)
            guard.audit_refused(None, tool, arguments, refused)
            raise refused from None
        return await guard.arun(user, tool, arguments, body, key=run)
    except ToolRefused as refused:
        return on_refuse(refused)


@dataclass(eq=False)
class ToolpassAuthorization(AbstractCapability[Any]):
    """Checks every tool call of a Pydantic AI agent with toolpass.

    ``rules`` maps a tool name (or a tuple of names) to a ``Rule(connection, action,
    resource_template)`` or a ``(connection, action, resource)`` tuple; the resource is filled
    from the call's validated arguments. With ``strict=True`` a tool without a rule is refused;
    otherwise it runs unchecked (still in a session, and audited). ``user`` names the attribute
    (or key) of ``ctx.deps`` holding the user, or is a callable ``(ctx) -> user``.
    ``on_refuse`` turns a refusal into the tool's result; by default a failed tool result
    (``ToolFailed``) carrying the reason. ``toolkit`` supplies audit sinks, limits and the
    request hook.

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
    on_refuse: OnRefuse = tool_failed
    guard: Guard | None = field(default=None, repr=False)
    run: _Run | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.defer_loading:
            # Hooks of a deferred capability fire only once the model loads it.
            raise ValueError("ToolpassAuthorization cannot be deferred: it must check every call")
        if not (isinstance(self.user, str) or callable(self.user)):
            raise TypeError("user must be the name of an attribute of deps, or a callable (ctx)")
        if self.guard is None:
            self.guard = Guard(self.engine, self.rules, strict=self.strict, toolkit=self.toolkit)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a live engine: not built from an agent spec

    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        return replace(self, run=_Run())

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
            self.user,
            self.on_refuse,
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
    on_refuse: OnRefuse = tool_failed
    guard: Guard | None = field(default=None, repr=False)
    run: _Run | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.user, str) or callable(self.user)):
            raise TypeError("user must be the name of an attribute of deps, or a callable (ctx)")
        if self.guard is None:
            self.guard = Guard(self.engine, self.rules, strict=self.strict, toolkit=self.toolkit)

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
            self.user,
            self.on_refuse,
            ctx,
            name,
            tool_args,
            lambda: self.wrapped.call_tool(name, tool_args, ctx, tool),
            self.run,
        )
