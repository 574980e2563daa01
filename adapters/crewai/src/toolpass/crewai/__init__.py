"""toolpass for CrewAI: every tool call of a crew checked before it runs.

``ToolpassHooks`` puts toolpass into CrewAI's own tool-call hooks (``crewai.hooks``,
``InterceptionPoint.PRE_TOOL_CALL`` and ``POST_TOOL_CALL``) for the crews kicked off inside it::

    hooks = ToolpassHooks(tp, {"delete_issue": Rule("jira-main", "DELETE_ISSUES", "issue:{key}")})
    with hooks:                                     # this block (and what it runs) only
        crew.kickoff(inputs={"user_id": user.email})

    @hooks                                          # the same, around a function (or coroutine)
    def run(user: str) -> CrewOutput: ...

    hooks.install() / hooks.uninstall()             # every crew of the process

The user is the kickoff's ``inputs["user_id"]`` (``user=`` names another key, or is a callable
given the ``ToolCallHookContext``), never anything the model says. Each kickoff keeps its own
inputs: they are captured by an ``InterceptionPoint.INPUT`` hook into a ContextVar for that
execution (restored at ``EXECUTION_END``), so concurrent crews (threads, ``kickoff_async``,
``akickoff``) and a crew kicked off inside another crew's tool each act for their own user;
a nested crew whose inputs name no user acts for the enclosing one's.

Why the hook runs the tool. CrewAI's hooks only decide: a ``PRE_TOOL_CALL`` hook may abort the
call, and CrewAI then runs the tool itself, outside any hook. toolpass must run the body inside
its pipeline (a ``Session`` for the user, the request hook watching the tool's HTTP requests,
one audit event that records what the body did), and CrewAI fails open around hooks: a hook
that raises anything but ``HookAborted``, or returns anything but ``False``, lets the tool run.
So the pre-call hook runs the whole call itself, through ``Guard.run``, with the tool's own
``run`` (the original ``BaseTool.run``, as CrewAI would call it: argument validation, usage
count, async tools) as the body, and then always raises ``HookAborted``: CrewAI never runs a
guarded tool, so no failure of the guard, expected or not, can let it run. CrewAI then hands
the model a fixed ``"Tool execution blocked by hook"`` text (the abort's reason is dropped);
the post-call hook replaces it with what the call produced: the tool's result (formatted as
CrewAI formats it), ``"Error executing tool: <message>"`` for a tool's exception (CrewAI's own
text), or the refusal text (``refusal_text``: ``Refused by toolpass (<code>): <reason>``), and
the run goes on. ``on_refuse=None`` ends the run instead: the post-call hook raises
``RunRefused`` (a ``HookAborted`` and a ``ToolRefused``), which ``kickoff`` raises.

What follows for guarded calls: CrewAI's result cache is neither read nor written (a cached
result would reach a second user without a check), ``result_as_answer`` does not apply (CrewAI
withholds it from a blocked call), CrewAI's tool-failure policy is not applied to a tool's
exception, and CrewAI's hook telemetry counts each call as aborted. Hooks registered after
``ToolpassHooks`` in the same scope do not run for guarded calls (register yours globally or
before it). Hooks are synchronous, so a remote engine's check blocks the hook, within the
engine's time budget; in an event loop (CrewAI's ReAct path under ``akickoff``) the tool runs
in a worker thread while the hook waits.

Both registrations are made: scoped (``crewai.hooks.dispatch.scoped_hooks``, a ContextVar, so
a ``with`` block guards what runs inside it and nothing else) and, while any ``ToolpassHooks``
is active, global hooks that act only where one is active in the current context, so that
neither a nested ``scoped_hooks()`` nor ``clear_before_tool_call_hooks()`` by other code leaves
a guarded crew unchecked. Nested ``ToolpassHooks`` all apply (the outer one's ``on_refuse``
decides what the model reads).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Any, TypeVar, cast

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

from crewai.hooks.dispatch import (
    HookAborted,
    InterceptionPoint,
    get_scoped_hooks,
    register,
    register_scoped,
    scoped_hooks,
    unregister,
)
from crewai.hooks.tool_hooks import ToolCallHookContext
from crewai.tools.base_tool import BaseTool
from crewai.tools.tool_failure import ToolFailure
from crewai.utilities.string_utils import sanitize_tool_name

__all__ = ["Rule", "RunRefused", "ToolpassHooks", "UserSource", "ask_human", "current_inputs"]

log = logging.getLogger("toolpass")

F = TypeVar("F", bound=Callable[..., Any])

#: The text CrewAI's own execution gives a tool's exception (native tool calling).
TOOL_ERROR = "Error executing tool: {error}"


class RunRefused(HookAborted, ToolRefused):
    """Ends a crew's run for a refused call when ``on_refuse=None``: ``kickoff`` raises it.
    It is CrewAI's ``HookAborted`` (the only exception CrewAI lets out of a hook) and the
    ``ToolRefused`` it carries (``code``, ``message``, ``detail``)."""

    def __init__(self, refused: ToolRefused) -> None:
        Exception.__init__(self, refused.message)
        self.reason, self.source = refused.message, "toolpass"
        self.code, self.message = refused.code, refused.message
        self.detail, self.extra = refused.detail, refused.extra
        self.refused = refused

    def __str__(self) -> str:
        return self.message


class _Execution:
    """One crew (or flow) execution: its inputs, and the key of its run's sessions."""

    __slots__ = ("__weakref__", "context", "inputs", "outer", "owner")

    def __init__(self, context: Any, inputs: Any, owner: Any, outer: _Execution | None) -> None:
        self.context, self.inputs, self.owner, self.outer = context, inputs, owner, outer


#: The execution in progress in this context (set by the INPUT hook, restored at its end).
_execution: contextvars.ContextVar[_Execution | None] = contextvars.ContextVar(
    "toolpass_crewai_execution", default=None
)
#: The ``ToolpassHooks`` whose ``with`` blocks (or decorated functions) this context is in.
_scoped: contextvars.ContextVar[tuple[ToolpassHooks, ...]] = contextvars.ContextVar(
    "toolpass_crewai_scoped", default=()
)
#: The tool call whose pre-call hook is running in this context (for ``ask_human``).
_current_call: contextvars.ContextVar[ToolCallHookContext | None] = contextvars.ContextVar(
    "toolpass_crewai_call", default=None
)
#: What the post-call hook hands the model for the call the pre-call hook just ran.
_pending: contextvars.ContextVar[tuple[object, str | RunRefused] | None] = contextvars.ContextVar(
    "toolpass_crewai_pending", default=None
)


def current_inputs() -> Mapping[str, Any]:
    """The inputs of the crew kickoff in progress (empty outside one): for a ``user=`` or
    ``session=`` callable, ``lambda ctx: current_inputs()["chat_id"]``."""
    execution = _execution.get()
    inputs = execution.inputs if execution is not None else None
    return inputs if isinstance(inputs, Mapping) else {}


def ask_human(request: Any) -> bool:
    """An approver for ``Toolkit(approver=ask_human)`` that asks the CrewAI way: the hook
    context's ``request_human_input`` (CrewAI pauses its live console output and reads the
    answer from standard input). The call runs only if the person types ``approve``; outside
    a CrewAI tool call it raises, which refuses the call."""
    ctx = _current_call.get()
    if ctx is None:
        raise RuntimeError("ask_human asks only inside a CrewAI tool call checked by toolpass")
    reply = ctx.request_human_input(
        prompt=f"toolpass: approval needed\n{request.describe()}",
        default_message="Type 'approve' to run it; anything else denies it:",
    )
    return reply.strip().lower() == "approve"


# The hooks: the same functions registered scoped and globally; each acts once per call.


def _before_tool_call(ctx: ToolCallHookContext) -> None:
    guards = _active()
    if not guards:
        return
    pending = _pending.get()
    if pending is not None and pending[0] is ctx:
        raise HookAborted("toolpass ran this call", source="toolpass")  # the other registration
    outcome: str | RunRefused
    token = _current_call.set(ctx)
    try:
        outcome = _call(guards, ctx)
    except RunRefused as end:
        outcome = end
    except Exception:  # a bug of toolpass's own: the tool did not run
        log.exception("toolpass: the call of %s failed in the adapter", _name(ctx))
        outcome = refusal_text(_adapter_failed())
    finally:
        _current_call.reset(token)
    _pending.set((ctx, outcome))
    raise HookAborted("toolpass ran this call", source="toolpass")


def _after_tool_call(ctx: ToolCallHookContext) -> str | None:
    pending = _pending.get()
    if pending is None or not _same_call(pending[0], ctx):
        return None
    _pending.set(None)
    outcome = pending[1]
    if isinstance(outcome, RunRefused):
        raise outcome
    return outcome


def _on_input(ctx: Any) -> None:
    current = _execution.get()
    if current is not None and current.context is ctx:
        return  # the other registration saw it
    owner = getattr(ctx, "crew", None) or getattr(ctx, "flow", None)
    inputs = ctx.payload if isinstance(ctx.payload, Mapping) else getattr(ctx, "inputs", None)
    _execution.set(_Execution(ctx, inputs, owner, current))


def _on_end(ctx: Any) -> None:
    current = _execution.get()
    owner = getattr(ctx, "crew", None) or getattr(ctx, "flow", None)
    if current is not None and owner is not None and current.owner is owner:
        _execution.set(current.outer)


_HOOKS: tuple[tuple[InterceptionPoint, Callable[[Any], Any]], ...] = (
    (InterceptionPoint.INPUT, _on_input),
    (InterceptionPoint.EXECUTION_END, _on_end),
    (InterceptionPoint.PRE_TOOL_CALL, _before_tool_call),
    (InterceptionPoint.POST_TOOL_CALL, _after_tool_call),
)


def _same_call(ran: object, ctx: ToolCallHookContext) -> bool:
    """The post-call context CrewAI makes anew carries the same arguments dict and tool."""
    if not isinstance(ran, ToolCallHookContext):
        return False
    return ran.tool_input is ctx.tool_input and ran.tool is ctx.tool


class _Global:
    """The global registration, held while any ``ToolpassHooks`` is active anywhere."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.installed: tuple[ToolpassHooks, ...] = ()

    def hold(self) -> None:
        with self.lock:
            self.users += 1
            if self.users == 1:
                for point, hook in _HOOKS:
                    register(point, hook)

    def release(self) -> None:
        with self.lock:
            self.users -= 1
            if self.users == 0:
                for point, hook in _HOOKS:
                    unregister(point, hook)


_global = _Global()


def _active() -> tuple[ToolpassHooks, ...]:
    found: list[ToolpassHooks] = []
    for hooks in (*_global.installed, *_scoped.get()):
        if not any(h is hooks for h in found):
            found.append(hooks)
    return tuple(found)


# One call.


def _name(ctx: ToolCallHookContext) -> str:
    name = getattr(ctx, "tool_name", None)
    return name if isinstance(name, str) else "?"


def _adapter_failed() -> ToolRefused:
    return ToolRefused(
        "check_error",
        "toolpass could not check this call, so it was not made. Tell the user.",
        detail="the CrewAI adapter failed; see the log",
    )


class _Body:
    """The tool's own run, as CrewAI would make it; remembers whether it started."""

    def __init__(self, ctx: ToolCallHookContext, arguments: dict[str, Any]) -> None:
        self.tool = ctx.tool
        self.arguments = arguments
        self.started = False

    def __call__(self) -> Any:
        tool, arguments = self.tool, self.arguments
        original = getattr(tool, "_original_tool", None)
        run: Callable[[], Any]
        if isinstance(original, BaseTool):
            run = functools.partial(original.run, **arguments)
        elif tool is not None and callable(getattr(tool, "invoke", None)):
            run = functools.partial(tool.invoke, arguments)
        else:
            raise ToolRefused(
                "check_error",
                "There is no such tool here, so nothing was run. Use one of your tools.",
                detail=f"no runnable tool in CrewAI's hook context: {tool!r}",
            )
        self.started = True
        return _off_the_loop(run)

    def text(self, raw: Any) -> str:
        """The result as CrewAI hands it to the model."""
        if isinstance(raw, ToolFailure):
            return raw.as_agent_message()
        tool = getattr(self.tool, "_original_tool", None) or self.tool
        formatter = getattr(tool, "format_output_for_agent", None)
        return str(formatter(raw)) if callable(formatter) else str(raw)


def _off_the_loop(run: Callable[[], Any]) -> Any:
    """``run()``, in a worker thread (with this context) when an event loop runs here: a
    hook called from a coroutine may not block on ``asyncio.run``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run()
    with ThreadPoolExecutor(1, thread_name_prefix="toolpass-crewai") as pool:
        return pool.submit(contextvars.copy_context().run, run).result()


def _call(guards: tuple[ToolpassHooks, ...], ctx: ToolCallHookContext) -> str:
    """Runs the call through every active guard (the outermost first) and returns what the
    model reads; raises ``RunRefused`` when the outer guard's ``on_refuse`` is None."""
    name = _name(ctx)
    tool_input = ctx.tool_input
    arguments = dict(tool_input) if isinstance(tool_input, Mapping) else {}
    execution = _execution.get()
    for hooks in guards:
        _learn_tools(hooks.guard, ctx, name)
    body = _Body(ctx, arguments)
    run: Callable[[], Any] = body
    for hooks in reversed(guards):
        run = functools.partial(_through, hooks, ctx, name, arguments, run, execution)
    outer = guards[0].guard
    try:
        raw = run()
    except ToolRefused as refused:
        if outer.on_refuse is None:
            raise RunRefused(refused) from None
        return str(outer.on_refuse(refused))
    except Exception as exc:
        if not body.started:
            raise
        return TOOL_ERROR.format(error=exc)  # the tool's own exception, as CrewAI shows it
    return body.text(raw)


def _learn_tools(guard: Guard, ctx: ToolCallHookContext, name: str) -> None:
    """Checks the rules against the calling agent's tools the first time one is called (a
    warning for each problem: the tools are known only as the crew runs)."""
    if name in guard.tools:
        return
    tools = [*(getattr(ctx.agent, "tools", None) or ()), ctx.tool]
    try:
        found = {sanitize_tool_name(t.name): _arguments(t) for t in tools if t is not None}
        guard.add_tools(found, complete=False, late=True)
    except Exception:  # advisory only: never decides a call
        log.exception("toolpass: could not check the rules against the tools of %s", name)


def _arguments(tool: Any) -> list[str] | None:
    fields = getattr(getattr(tool, "args_schema", None), "model_fields", None)
    return list(fields) if isinstance(fields, Mapping) else None


def _through(
    hooks: ToolpassHooks,
    ctx: ToolCallHookContext,
    name: str,
    arguments: dict[str, Any],
    body: Callable[[], Any],
    execution: _Execution | None,
) -> Any:
    guard = hooks.guard
    with guard.refusing(name, arguments):  # the application's source may fail: never run
        user = _user(guard, ctx, execution)
        key = guard.key(execution, None, ctx)
    return guard.run(user, name, arguments, body, key=key)


def _user(guard: Guard, ctx: ToolCallHookContext, execution: _Execution | None) -> str | None:
    if callable(guard.user):
        return guard.user_of(None, ctx)
    while execution is not None:  # the innermost kickoff naming a user
        user = guard.user_of(execution.inputs if execution.inputs is not None else {}, ctx)
        if user is not None:
            return user
        execution = execution.outer
    return None


class ToolpassHooks:
    """Checks every tool call of the crews kicked off inside it with toolpass.

    ``rules`` maps a tool name as the model calls it (CrewAI's sanitized name: ``"Delete
    issue"`` is ``delete_issue``), or a tuple of names, to a ``Rule(connection, action,
    resource_template)`` or a ``(connection, action, resource)`` tuple; the resource is filled
    from the call's arguments. With ``strict=True`` a tool without a rule is refused;
    otherwise it runs unchecked (still in a session, and audited). ``user`` is the key of the
    kickoff's ``inputs`` holding the user (``"user_id"`` by default), or a callable given the
    ``ToolCallHookContext`` (``current_inputs()`` reads the kickoff's inputs). ``session``:
    ``"conversation"`` (the default) and ``"run"`` both keep one session per kickoff (CrewAI
    names no conversation), or a callable ``(ctx) -> id`` names one that outlives kickoffs.
    ``on_refuse`` turns a refusal into the text the model reads (``refusal_text`` by
    default); None ends the run with ``RunRefused``. ``toolkit`` supplies audit sinks, limits
    and the request hook. Every option is checked when it is made (``toolpass.adapting.
    Guard``); ``guard.explain()`` lists the rules and the tools seen so far.

    ``approval_timeout``: CrewAI has no tool-level pause, so a call waiting for a person (the
    toolkit's approver is an ``ApprovalQueue``) blocks its hook on ``queue.wait`` for at most
    this many seconds; once a person decides (on the approvals page, or anywhere that records
    in the queue) the check runs again and the queue's record decides: the call runs once if
    approved, else the model reads ``approval_denied`` with the person's reason,
    ``approval_expired``, or ``approval_edited``. Nobody deciding in time: ``approval_pending``
    (the request stays on the page; the model's retry of the same call runs once it is
    approved). None (the default): no wait, the ``approval_pending`` refusal at once.

    Use it as a context manager (``with hooks:``; re-entrant, and usable from several threads
    and tasks at once), as a decorator of a function or coroutine function that kicks off
    crews, or process-wide with ``install()`` / ``uninstall()``.
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
        approval_timeout: float | None = None,
    ) -> None:
        if approval_timeout is not None and (
            isinstance(approval_timeout, bool)
            or not isinstance(approval_timeout, (int, float))
            or not 0 < approval_timeout < float("inf")
        ):
            raise TypeError(
                f"approval_timeout is a number of seconds above 0 (or None), not "
                f"{approval_timeout!r}"
            )
        self.approval_timeout = None if approval_timeout is None else float(approval_timeout)
        self.guard = Guard(
            engine,
            rules,
            strict=strict,
            toolkit=toolkit,
            user=user,
            session=session,
            on_refuse=on_refuse,
            approval_wait=self.approval_timeout,  # blocks in the check: one event per call
        )
        self._lock = threading.Lock()

    # The scoped form.

    @contextmanager
    def active(self) -> Iterator[ToolpassHooks]:
        """The crews kicked off inside this block (in this thread or task, and the threads and
        tasks it starts) are checked."""
        with ExitStack() as stack:
            _global.hold()
            stack.callback(_global.release)
            # Keep the hooks of an enclosing scope (CrewAI's scoped_hooks() starts empty).
            scope = {point: get_scoped_hooks(point) for point in InterceptionPoint}
            stack.enter_context(scoped_hooks({p: h for p, h in scope.items() if h}))
            for point, hook in _HOOKS:
                if hook not in get_scoped_hooks(point):
                    register_scoped(point, hook)
            token = _scoped.set((*_scoped.get(), self))
            stack.callback(_scoped.reset, token)
            execution = _execution.get()
            stack.callback(_execution.set, execution)
            yield self

    def __enter__(self) -> ToolpassHooks:
        manager = self.active()
        manager.__enter__()
        _entries.set((*_entries.get(), (self, manager)))
        return self

    def __exit__(self, *exc: Any) -> None:
        entries = _entries.get()
        for i in range(len(entries) - 1, -1, -1):
            if entries[i][0] is self:
                manager = entries[i][1]
                _entries.set(entries[:i] + entries[i + 1 :])
                manager.__exit__(*exc)
                return
        raise RuntimeError("ToolpassHooks.__exit__ without a matching __enter__ here")

    def __call__(self, fn: F) -> F:
        """Decorates a function (or coroutine function) that kicks off crews: each call runs
        inside ``with self``."""
        if not callable(fn) or isinstance(fn, type):
            raise TypeError(
                "ToolpassHooks decorates a function or coroutine function that kicks off a "
                f"crew (such as main.py's run()), not {fn!r}; for a @CrewBase class, decorate "
                "the function that calls its crew().kickoff(), or use install()"
            )
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def arun(*args: Any, **kwargs: Any) -> Any:
                with self.active():
                    return await fn(*args, **kwargs)

            return cast(F, arun)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self.active():
                return fn(*args, **kwargs)

        return cast(F, run)

    # The process-wide form.

    def install(self) -> None:
        """Checks the tool calls of every crew of the process, in every thread, until
        ``uninstall()``."""
        with _global.lock:
            if any(h is self for h in _global.installed):
                return
            _global.installed = (*_global.installed, self)
        _global.hold()

    def uninstall(self) -> None:
        with _global.lock:
            if not any(h is self for h in _global.installed):
                return
            _global.installed = tuple(h for h in _global.installed if h is not self)
        _global.release()


_entries: contextvars.ContextVar[tuple[tuple[ToolpassHooks, Any], ...]] = contextvars.ContextVar(
    "toolpass_crewai_entries", default=()
)
