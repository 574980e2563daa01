"""toolpass for the Claude Agent SDK: every tool call Claude Code makes is checked before it runs.

::

    guard = ToolpassHooks(tp, {"mcp__ops__delete_issue": Rule("jira", "DELETE_ISSUES",
                                                             "issue:{key}")}, user=user.email)
    options = guard.apply(ClaudeAgentOptions(mcp_servers={"ops": server}, ...))
    async with ClaudeSDKClient(options=options) as client: ...  # or query(prompt, options=...)

Rules use Claude Code's tool names: ``mcp__<server>__<tool>`` for MCP tools (``<server>`` is the
key of ``mcp_servers``), ``Bash``, ``Read``, ``Write``, ... for built-ins.

Two seams, so each call is checked exactly once and audited once:

- **In-process SDK MCP tools** (``create_sdk_mcp_server`` + ``@tool``): ``apply`` puts, in the
  options it returns, a copy of each such server whose tool handlers run inside the toolpass
  pipeline: session, arguments, authorization, approval, the credential, the request hook
  active in the body (a request the user may not make is refused inside the tool), and one
  audit event. A refusal is the tool's error result (``is_error``), which the model reads.
- **Everything else** (built-in tools, external MCP servers, and SDK servers toolpass cannot
  copy, such as an ``mcp.server.Server`` built by hand): a ``PreToolUse`` hook
  (``HookMatcher`` for every tool, ``on_failure="block"``, with a timeout) decides: the
  pipeline runs without the body (which runs in the CLI or another process, out of toolpass's
  reach) and a refusal is ``permissionDecision: "deny"`` with the reason. For the tools of a
  copied server the same hook only reads who the call is for and in which session (so the
  tool's handler knows), and leaves the deciding to the handler.

Every path of the hook returns a decision: a deny, or ``{}`` ("no objection": Claude Code's
own permission rules, ``allowed_tools`` and ``can_use_tool`` still apply; an ``allow`` would
skip them). It never returns ``{}`` for a call toolpass refused or could not check: a failure
of the guard itself (the engine, the user or session source, a bug, running out of time)
denies. A handler that cannot tell which checked call it is serving refuses too.

The user: Claude Code's hook input names no application user, only its own ``session_id``.
``user=`` is the application's: the user's id (a string: options made per user, as is usual),
or a callable given the hook's input (``PreToolUseHookInput``: ``session_id``, ``tool_name``,
``agent_id`` in a subagent, ...) returning it. ``ClaudeAgentOptions.user`` is the OS account
the CLI runs as and is never used. ``session="conversation"`` (the default) keeps a session per
Claude Code session id (a client's conversation, continued when it is resumed); ``"run"`` one
per prompt (the hook's ``prompt_id``); a callable is given the hook's input.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import logging
import math
import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal, cast

import anyio
from toolpass.adapting import (
    Answer,
    Explanation,
    Guard,
    OnRefuse,
    Pending,
    PermissionEngine,
    Rule,
    Rules,
    SessionSource,
    Toolkit,
    ToolRefused,
    refusal_text,
)

from claude_agent_sdk import (
    ClaudeAgentOptions,
    HookMatcher,
    McpSdkServerConfig,
    SdkMcpTool,
    create_sdk_mcp_server,
)
from claude_agent_sdk.types import (
    HookContext,
    HookInput,
    HookJSONOutput,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    ToolPermissionContext,
)

__all__ = ["Answer", "Approvals", "Pending", "Rule", "ToolpassHooks", "refusal_text"]

#: How a call waiting for a person reaches Claude Code: toolpass's refusal (the model reads
#: ``approval_pending``), the host's own permission prompt (``can_use_tool``), or the run
#: stopped until the application resumes it (``ResultMessage.deferred_tool_use``).
Approvals = Literal["refuse", "ask", "defer"]

log = logging.getLogger("toolpass")

#: The key of ``tools/call``'s ``_meta`` in which Claude Code names the call's ``tool_use_id``.
TOOL_USE_ID = "claudecode/toolUseId"
#: How many calls seen by the hook and not yet run by their handler are remembered.
_HELD = 4096
#: Time the hook keeps for answering, out of the matcher's timeout.
_MARGIN = 1.0

_serving: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "toolpass_claude_tool_use_id", default=None
)


@dataclass(frozen=True, slots=True)
class _Seen:
    """What the hook read of one call of a copied server's tool, for its handler."""

    tool: str
    user: str | None
    key: Any
    #: The hook checked the call whole (``approvals`` ask or defer): the handler runs the body.
    checked: bool = False
    #: The hook's decision (``Guard.held_decision``): audited with the body, as one event.
    decision: Any = None


@dataclass(frozen=True, slots=True)
class _Asked:
    """A call the hook paused for a person, by its ``tool_use_id``."""

    pending: Pending | None
    user: str | None
    key: Any
    tool: str
    arguments: dict[str, Any]
    #: A tool of a copied server: its handler runs the body once the call may run.
    copied: bool = False


class _Run:
    """Stands for one prompt of one Claude Code session (``session="run"``)."""

    __slots__ = ("__weakref__",)


class _Pending:
    """The calls of one ``apply``'s options that its hook saw, by ``tool_use_id``."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, _Seen] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, tool_use_id: str, seen: _Seen) -> None:
        with self._lock:
            self._seen[tool_use_id] = seen
            while len(self._seen) > _HELD:
                self._seen.popitem(last=False)

    def take(self, tool_use_id: str | None) -> _Seen | None:
        if tool_use_id is None:
            return None
        with self._lock:
            return self._seen.pop(tool_use_id, None)


class ToolpassHooks:
    """Checks every tool call of a Claude Agent SDK session with toolpass.

    ``rules`` maps Claude Code tool names (or tuples of names sharing a rule) to a ``Rule`` or
    a ``(connection, action, resource)`` tuple, the resource filled from the call's input;
    with ``strict=True`` a tool without a rule is refused, otherwise it runs unchecked (and
    audited). ``user`` is the application's user: a string, or a callable given the hook's
    input. ``session``: ``"conversation"`` (Claude Code's session id; the default), ``"run"``
    (one prompt) or a callable given the hook's input. ``on_refuse`` makes the text the model
    reads (``refusal_text`` by default); None stops the run at a refusal the hook makes
    (``continue: false``). ``timeout`` is the hook's, in seconds: a check that has not
    answered a second before it refuses. ``toolkit`` supplies audit sinks, limits, the
    approver and the request hook. Every option is checked here; ``apply`` checks the rules
    against the in-process tools it finds.

    ``approvals``: what a call waiting for a person (the toolkit's approver is an
    ``ApprovalQueue``) becomes. ``"refuse"`` (the default): the model reads the
    ``approval_pending`` refusal, and its retry runs once a person approved it on the
    approvals page. ``"ask"``: ``permissionDecision: "ask"`` with the request's description
    as the reason, so Claude Code asks the host's ``can_use_tool`` (required in the options;
    its ``ToolPermissionContext.decision_reason``); its allow (with ``updated_input``: an
    edit) or deny (its ``message``: the reason) is recorded in the queue, and the check runs
    again before the call runs. ``"defer"``: ``permissionDecision: "defer"``, the run stops
    (``ResultMessage.deferred_tool_use``; ``deferred(result)`` is the request); resume the
    session (``resume=session_id``) after ``answer(...)`` or a decision on the approvals page:
    the check runs again and the queue's record decides. With ``"ask"`` or ``"defer"`` the
    hook checks every call, in-process tools too, and their handlers run only the body.
    """

    def __init__(
        self,
        engine: PermissionEngine | None,
        rules: Rules | None = None,
        *,
        user: str | Callable[[Any], Any],
        strict: bool = False,
        toolkit: Toolkit | None = None,
        session: SessionSource = "conversation",
        on_refuse: OnRefuse | None = refusal_text,
        timeout: float = 30.0,
        approvals: Approvals = "refuse",
    ) -> None:
        if approvals not in ("refuse", "ask", "defer"):
            raise ValueError(f"approvals is 'refuse', 'ask' or 'defer', not {approvals!r}")
        if isinstance(user, str):
            if not user.strip():
                raise TypeError("user is the application's user id (or a callable), not ''")
            source: Any = _Fixed(user)
        else:
            source = user  # Guard checks it is a callable
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= _MARGIN
        ):
            raise TypeError(f"timeout is a number of seconds above {_MARGIN}, not {timeout!r}")
        self.guard = Guard(
            engine,
            rules,
            strict=strict,
            toolkit=toolkit,
            user=source,
            session=session,
            on_refuse=on_refuse,
        )
        self.timeout = float(timeout)
        self.approvals = approvals
        self._bodies = self.guard.for_bodies()
        self._asked: OrderedDict[str, _Asked] = OrderedDict()
        self._answers: dict[str, tuple[str, Answer]] = {}
        self._runs: OrderedDict[tuple[str, str], _Run] = OrderedDict()
        self._lock = threading.Lock()

    # Attaching.

    def apply(self, options: ClaudeAgentOptions) -> ClaudeAgentOptions:
        """A copy of ``options`` with toolpass's ``PreToolUse`` hook first among its hooks
        and each in-process SDK MCP server replaced by a copy whose tools run inside toolpass.
        ``options`` itself is left as it was. A rule whose resource names an argument its tool
        does not take is a ``ValueError``; so is, when these are all the tools the session has
        (``tools=[]``, ``setting_sources=[]``, no plugins, every server copied), a rule for a
        tool it does not have. An SDK server toolpass cannot copy (one not made by
        ``create_sdk_mcp_server``) is left as it is: the hook decides for its tools. Options
        starting Claude Code in its minimal mode (``--bare``, ``CLAUDE_CODE_SIMPLE``), which
        runs a built-in tool whose ``PreToolUse`` hook denied it, are a ``ValueError``."""
        if not isinstance(options, ClaudeAgentOptions):
            raise TypeError(f"apply takes ClaudeAgentOptions, not {type(options).__name__}")
        _refuse_minimal_mode(options)
        pending = _Pending()
        wrapped: dict[str, frozenset[str]] = {}  # a copied server -> its tools' full names
        servers = options.mcp_servers
        tools: dict[str, list[str] | None] = {}
        if isinstance(servers, Mapping):
            copied: dict[str, Any] = {}
            for key, config in servers.items():
                before = set(tools)
                copy = self._copy_server(key, config, pending, tools)
                if copy is not None:
                    wrapped[key] = frozenset(set(tools) - before)
                copied[key] = config if copy is None else copy
            servers = copied
        complete = (  # no built-in tools, no settings or plugins that could add servers
            options.tools == []
            and options.setting_sources == []
            and not options.plugins
            and isinstance(servers, Mapping)
            and set(wrapped) == set(servers)
        )
        self.guard.add_tools(tools, complete=complete)
        names = frozenset(servers) if isinstance(servers, Mapping) else frozenset()
        hook = self._hook(_Served(wrapped, names), pending)
        matcher = HookMatcher(matcher=None, hooks=[hook], timeout=self.timeout, on_failure="block")
        hooks = {event: list(matchers) for event, matchers in (options.hooks or {}).items()}
        hooks["PreToolUse"] = [matcher, *hooks.get("PreToolUse", [])]
        more: dict[str, Any] = {}
        if self.approvals == "ask":
            if options.can_use_tool is None:
                raise ValueError(
                    "approvals='ask' needs the host's prompt: can_use_tool in the options "
                    "(or use approvals='defer')"
                )
            if options.permission_mode == "bypassPermissions":
                raise ValueError(
                    "approvals='ask' cannot rely on a prompt under permission_mode="
                    "'bypassPermissions' (use approvals='defer')"
                )
            more["can_use_tool"] = self._asking(options.can_use_tool, pending)
        return replace(options, mcp_servers=servers, hooks=cast(Any, hooks), **more)

    # Approvals: the host's prompt, or the run stopped and resumed.

    def deferred(self, result: ResultMessage) -> Pending | None:
        """The request a run stopped for (``approvals="defer"``), from its ``ResultMessage``:
        None when it did not stop for one, or these hooks did not see it (another process:
        the approvals page lists it)."""
        deferred = getattr(result, "deferred_tool_use", None)
        with self._lock:
            asked = self._asked.get(deferred.id) if deferred is not None else None
        return asked.pending if asked is not None else None

    def answer(self, tool_use_id: str, request_id: str, answer: Answer | Any) -> None:
        """A person's ``answer`` (an ``Answer``, or what ``Answer.of`` reads) to request
        ``request_id``, the one the deferred call ``tool_use_id``
        (``ResultMessage.deferred_tool_use.id``) stopped for. It is recorded when the resumed
        session makes that call again, if the request was made for that very call; the
        check then runs again and the queue's record decides. (A decision made on the
        approvals page needs no answer here: resume, and the record decides.)"""
        if not isinstance(tool_use_id, str) or not isinstance(request_id, str):
            raise TypeError("answer takes the deferred call's tool_use_id and the request id")
        with self._lock:
            self._answers[tool_use_id] = (request_id, Answer.of(answer))
            while len(self._answers) > _HELD:
                del self._answers[next(iter(self._answers))]

    def explain(self, engine: PermissionEngine | None = None) -> Explanation:
        """Every tool the guard knows (those of the copied servers, and any with a rule), its
        rule, the tools that run unchecked, and what is wrong; ``str()`` is a table."""
        return self.guard.explain(engine)

    def _copy_server(
        self, key: str, config: Any, pending: _Pending, tools: dict[str, list[str] | None]
    ) -> McpSdkServerConfig | None:
        """A copy of an SDK server made by ``create_sdk_mcp_server`` whose handlers run in the
        pipeline, or None when ``config`` is not one (or its tools cannot be read)."""
        if not _is_sdk(config):
            return None
        found = _sdk_tools(config["instance"])
        if found is None:
            warnings.warn(
                f"toolpass: the tools of the in-process MCP server {key!r} could not be read "
                "(not made by create_sdk_mcp_server, or an SDK release toolpass does not know): "
                "the PreToolUse hook still checks each call, but the request hook does not "
                "watch their bodies and no credential is given to them",
                stacklevel=3,
            )
            return None
        guarded = []
        for each in found:
            name = f"mcp__{key}__{each.name}"
            tools[name] = _arguments(each.input_schema)
            guarded.append(replace(each, handler=self._handler(name, each.handler, pending)))
        version = getattr(config["instance"], "version", None) or "1.0.0"
        copy = create_sdk_mcp_server(config.get("name", key), version, tools=guarded)
        server = copy["instance"]
        entry = server.get_request_handler("tools/call")
        if entry is None:  # pragma: no cover - create_sdk_mcp_server always serves tools/call
            return None
        server.add_request_handler("tools/call", entry.params_type, _naming_the_call(entry.handler))
        return copy

    # The hook: decides, or reads the call for a copied server's handler.

    def _hook(
        self, wrapped: _Served, pending: _Pending
    ) -> Callable[[HookInput, str | None, HookContext], Awaitable[HookJSONOutput]]:
        async def pre_tool_use(
            input: HookInput, tool_use_id: str | None, context: HookContext
        ) -> HookJSONOutput:
            tool = _text(input, "tool_name") or "(unknown tool)"
            try:
                with self.guard.refusing(tool, {}, failed=_check_error):  # the hook broke
                    decided: HookJSONOutput | None = None
                    with anyio.move_on_after(self.timeout - _MARGIN):
                        decided = await self._decide(input, tool_use_id, wrapped, pending)
            except ToolRefused as refused:
                return self._deny(refused)
            if decided is None:
                return self._deny(_late(self.timeout - _MARGIN))
            return decided

        pre_tool_use.__qualname__ = "ToolpassHooks.pre_tool_use"
        return pre_tool_use

    async def _decide(
        self,
        input: Any,
        tool_use_id: str | None,
        wrapped: _Served,
        pending: _Pending,
    ) -> HookJSONOutput:
        tool, arguments = _call(input)
        try:
            run, session = self._run(input), _text(input, "session_id")
            user, key = self.guard.who(tool, arguments, None, input, run=run, conversation=session)
        except ToolRefused as failed:  # the application's source failed: never run
            return self._deny(failed)
        server = wrapped.server_of(input, tool)
        call_id = tool_use_id or _text(input, "tool_use_id")
        if self.approvals != "refuse":
            copied = server is not None and call_id is not None
            call = _Asked(None, user, key, tool, arguments, copied)
            return await self._pausing(call, call_id, pending)
        if server is not None and call_id:
            # Its handler runs the whole pipeline (and audits it): tell it for whom.
            pending.put(call_id, _Seen(tool, user, key))
            return {}
        refused = await self.guard.acheck(user, tool, arguments, key=key)
        if refused is None:
            return {}
        return self._deny(refused)

    async def _pausing(
        self, call: _Asked, call_id: str | None, pending: _Pending
    ) -> HookJSONOutput:
        """The hook under ``approvals`` ask or defer: an answer given for this call recorded,
        the whole check, and a pause for a call that waits for a person."""
        try:
            runs_with = self._answered(call, call_id)
            refused = await self.guard.acheck(
                call.user, call.tool, runs_with, key=call.key, body_follows=call.copied
            )
        except ToolRefused as expired:  # the answer came too late: audited by the guard
            return self._deny(expired)
        if refused is None:
            if call.copied and call_id:
                decision = self.guard.held_decision()
                pending.put(call_id, _Seen(call.tool, call.user, call.key, True, decision))
            return _decision("allow", "", runs_with) if runs_with != call.arguments else {}
        paused = self.guard.pending(refused)
        if paused is None or call_id is None:
            return self._deny(refused)
        with self._lock:
            self._asked[call_id] = replace(call, pending=paused)
            while len(self._asked) > _HELD:
                self._asked.popitem(last=False)
        return _decision(self.approvals, paused.message)

    def _answered(self, call: _Asked, call_id: str | None) -> dict[str, Any]:
        """The arguments the call runs with, once an answer given for it is recorded."""
        with self._lock:
            given = self._answers.pop(call_id, None) if call_id else None
        if given is None:
            return call.arguments
        request_id, answer = given
        runs_with = self.guard.answer(
            request_id, answer, call.user, call.tool, call.arguments, key=call.key
        )
        return dict(runs_with)

    def _asking(self, host: Callable[..., Any], pending: _Pending) -> Callable[..., Any]:
        """The options' ``can_use_tool``: the host's prompt, its answer to a call toolpass
        asked about recorded in the queue, and the whole check again."""

        async def can_use_tool(
            name: str, input: dict[str, Any], context: ToolPermissionContext
        ) -> PermissionResultAllow | PermissionResultDeny:
            with self._lock:
                call = self._asked.pop(context.tool_use_id or "", None)
            if call is None or call.pending is None:  # Claude Code's own question
                said: Any = await host(name, input, context)
                return cast(PermissionResultAllow | PermissionResultDeny, said)
            try:  # the host's prompt may fail: nobody decided
                with self.guard.refusing(call.tool, call.arguments, call.user, failed=_check_error):
                    said = await host(name, input, context)
                    answer = _answer_of(said, call.arguments)
                    request_id = call.pending.request_id
                    runs_with = self.guard.answer(
                        request_id, answer, call.user, call.tool, call.arguments, key=call.key
                    )
                    refused = await self.guard.acheck(
                        call.user, call.tool, runs_with, key=call.key, body_follows=call.copied
                    )
            except ToolRefused as failed:  # expired (audited by the guard), or it failed
                return PermissionResultDeny(message=self._text(failed))
            if refused is not None:
                return PermissionResultDeny(message=self._text(refused))
            if call.copied and context.tool_use_id:
                decision = self.guard.held_decision()
                seen = _Seen(call.tool, call.user, call.key, True, decision)
                pending.put(context.tool_use_id, seen)
            kept = said.updated_permissions if isinstance(said, PermissionResultAllow) else None
            return PermissionResultAllow(updated_input=dict(runs_with), updated_permissions=kept)

        return can_use_tool

    def _deny(self, refused: ToolRefused) -> HookJSONOutput:
        text = self._text(refused)
        out: dict[str, Any] = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": text,
            }
        }
        if self.guard.on_refuse is None:
            out["continue_"] = False
            out["stopReason"] = text
        return cast(HookJSONOutput, out)

    def _text(self, refused: ToolRefused) -> str:
        on_refuse = self.guard.on_refuse
        if on_refuse is None:
            return refusal_text(refused)
        try:
            text = on_refuse(refused)
        except Exception:
            log.exception("toolpass: on_refuse failed; the model reads toolpass's own text")
            return refusal_text(refused)
        return text if isinstance(text, str) and text else refusal_text(refused)

    def _run(self, input: Any) -> _Run:
        """The object standing for the call's run (one prompt of one session)."""
        slot = (_text(input, "session_id") or "", _text(input, "prompt_id") or "")
        with self._lock:
            run = self._runs.get(slot)
            if run is None:
                run = self._runs[slot] = _Run()
                while len(self._runs) > self.guard.held_sessions:
                    self._runs.popitem(last=False)
            else:
                self._runs.move_to_end(slot)
            return run

    # A copied server's tool handler: the whole pipeline around the body.

    def _handler(
        self,
        tool: str,
        handler: Callable[[Any], Awaitable[dict[str, Any]]],
        pending: _Pending,
    ) -> Callable[[Any], Awaitable[dict[str, Any]]]:
        async def guarded(args: Any) -> dict[str, Any]:
            arguments = args if isinstance(args, Mapping) else {}
            try:
                seen = pending.take(_serving.get())
                if seen is None or seen.tool != tool:
                    with self.guard.refusing(tool, arguments):
                        raise _unseen()

                async def body() -> dict[str, Any]:
                    return await handler(args)

                if seen.checked:
                    with self.guard.body_of(seen.decision):
                        return await self._body_only(seen, arguments, body)
                return await self.guard.arun(seen.user, tool, arguments, body, key=seen.key)
            except ToolRefused as refused:
                return {
                    "content": [{"type": "text", "text": self._text(refused)}],
                    "is_error": True,
                }

        guarded.__qualname__ = f"toolpass-guarded {tool}"
        return guarded

    async def _body_only(
        self,
        seen: _Seen,
        arguments: Mapping[str, Any],
        body: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """The body of a call the hook checked whole: in its session, its output recorded
        and the request hook active when the toolkit has any of them; no second check."""
        kit = self._bodies.toolkit
        quiet = seen.tool not in self._bodies.traits and not kit.on_output
        if quiet and kit.permissions is None:
            with self.guard.session(seen.user, seen.key):
                return await body()
        return await self._bodies.arun(seen.user, seen.tool, arguments, body, key=seen.key)


def _decision(
    decision: str, reason: str, updated: Mapping[str, Any] | None = None
) -> HookJSONOutput:
    out: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": decision}
    if reason:
        out["permissionDecisionReason"] = reason
    if updated is not None:
        out["updatedInput"] = dict(updated)
    return cast(HookJSONOutput, {"hookSpecificOutput": out})


def _answer_of(said: Any, arguments: Mapping[str, Any]) -> Answer:
    """What the host's ``can_use_tool`` said, as an answer: an allow (an edit when it
    changed the input), else a deny with its message."""
    if isinstance(said, PermissionResultAllow):
        edited = said.updated_input
        if edited is not None and dict(edited) != dict(arguments):
            return Answer("edit", by="can_use_tool", arguments=dict(edited))
        return Answer("approve", by="can_use_tool")
    reason = said.message if isinstance(said, PermissionResultDeny) else ""
    return Answer("deny", by="can_use_tool", reason=reason)


class _Fixed:
    """``user="..."``: the same user for every call of these options."""

    __slots__ = ("user",)

    def __init__(self, user: str) -> None:
        self.user = user

    def __call__(self, _input: Any) -> str:
        return self.user

    def __repr__(self) -> str:
        return f"user {self.user!r}"


def _naming_the_call(handler: Callable[[Any, Any], Awaitable[Any]]) -> Callable[..., Any]:
    """``tools/call`` of a copied server: makes the call's ``tool_use_id`` (from ``_meta``)
    known to the tool's handler, which runs in the same task."""

    async def call_tool(ctx: Any, params: Any) -> Any:
        meta = getattr(params, "meta", None)
        tool_use_id = meta.get(TOOL_USE_ID) if isinstance(meta, Mapping) else None
        token = _serving.set(tool_use_id if isinstance(tool_use_id, str) else None)
        try:
            return await handler(ctx, params)
        finally:
            _serving.reset(token)

    call_tool.__wrapped__ = handler  # type: ignore[attr-defined]
    return call_tool


def _is_sdk(config: Any) -> bool:
    return isinstance(config, Mapping) and config.get("type") == "sdk" and "instance" in config


def _sdk_tools(server: Any) -> list[SdkMcpTool[Any]] | None:
    """The ``@tool``s of a server made by ``create_sdk_mcp_server`` (which keeps them only in
    its ``tools/call`` handler), or None for any other server."""
    get = getattr(server, "get_request_handler", None)
    if not callable(get):
        return None  # mcp 1.x
    entry = get("tools/call")
    handler: Any = getattr(entry, "handler", None)
    handler = getattr(handler, "__wrapped__", handler)  # a copy made by apply
    try:
        run_tool: Any = inspect.getclosurevars(handler).nonlocals.get("run_tool")
        found = inspect.getclosurevars(run_tool).nonlocals.get("tools_by_name")
    except TypeError:
        return None
    if not isinstance(found, dict) or not all(isinstance(t, SdkMcpTool) for t in found.values()):
        return None
    return list(found.values())


def _arguments(schema: Any) -> list[str] | None:
    """The argument names of an ``@tool``'s input schema (a dict of names to types, a JSON
    schema, or a TypedDict)."""
    if isinstance(schema, Mapping):
        properties = schema.get("properties") if "type" in schema else schema
        return [str(k) for k in properties] if isinstance(properties, Mapping) else None
    annotations = getattr(schema, "__annotations__", None)
    return list(annotations) if isinstance(annotations, dict) else None


def _call(input: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(input, Mapping):
        raise TypeError(f"the hook's input is a mapping, not {type(input).__name__}")
    tool = input.get("tool_name")
    arguments = input.get("tool_input")
    if not isinstance(tool, str) or not tool:
        raise TypeError(f"the hook's input names no tool: {tool!r}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise TypeError(f"the tool's input is not an object: {type(arguments).__name__}")
    return tool, dict(arguments)


def _text(input: Any, name: str) -> str | None:
    value = input.get(name) if isinstance(input, Mapping) else None
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True, slots=True)
class _Served:
    """The servers of one ``apply``'s options: each copied one with its tools' full names
    (``mcp__<server>__<tool>``), and the names of all of them."""

    tools: Mapping[str, frozenset[str]]
    names: frozenset[str]

    def server_of(self, input: Any, tool: str) -> str | None:
        """The copied server whose tool this call is: the one serving a tool of exactly this
        name (the one the hook input's ``mcp_server`` names, when it names one), never by a
        prefix of it. None when another server of these options might be the one (``ops``
        beside ``ops__admin``: both make ``mcp__ops__admin__...``): then the hook decides."""
        server = input.get("mcp_server") if isinstance(input, Mapping) else None
        if isinstance(server, Mapping):
            name = server.get("name")
            if server.get("source") != "sdk" or not isinstance(name, str):
                return None
            return name if tool in self.tools.get(name, ()) else None
        found = [name for name, tools in self.tools.items() if tool in tools]
        unknown = self.names - set(self.tools)  # servers whose tools toolpass cannot list
        if len(found) != 1 or any(tool.startswith(f"mcp__{name}__") for name in unknown):
            return None
        return found[0]


def _check_error(exc: BaseException) -> ToolRefused:
    """The refusal when toolpass's hook failed (logged: a bug, or a broken option)."""
    log.error("toolpass: the hook failed", exc_info=exc)
    return ToolRefused(
        "check_error",
        "A safety check could not be completed, so the call was not made. "
        "Try again later, or tell the user.",
        detail=f"the toolpass hook raised {type(exc).__name__}: {exc}",
    )


def _unseen() -> ToolRefused:
    return ToolRefused(
        "check_error",
        "A safety check could not be completed, so the call was not made. "
        "Try again later, or tell the user.",
        detail="toolpass's PreToolUse hook did not see this call (is the "
        "hook of ToolpassHooks.apply in the options?)",
    )


def _late(seconds: float) -> ToolRefused:
    return ToolRefused(
        "authorization_error",
        "The permission check did not answer in time, so the call was not made. Try again later.",
        detail=f"the check took longer than the hook's {seconds:g} s",
    )


def _refuse_minimal_mode(options: ClaudeAgentOptions) -> None:
    """A ``ValueError`` when ``options`` start Claude Code in its minimal mode: ``--bare``
    (an ``extra_args`` flag, or any option's value, which the SDK puts on the CLI's argv as
    a word of its own and the CLI reads as the flag wherever it stands) or
    ``CLAUDE_CODE_SIMPLE`` set to anything (in the options' environment, this process's,
    which the CLI inherits, or the ``env`` of the ``settings`` it is given or of a settings
    file its ``setting_sources`` load). Claude Code
    2.1.317 and 2.1.332 run a built-in tool there even when a ``PreToolUse`` hook denied it."""
    flags = {str(flag).lstrip("-").lower() for flag in (options.extra_args or {})}
    words = (w for f in fields(options) for w in _argv_words(getattr(options, f.name)))
    simple = (options.env or {}).get("CLAUDE_CODE_SIMPLE", os.environ.get("CLAUDE_CODE_SIMPLE"))
    if (
        "bare" in flags
        or any(w.strip() == "--bare" for w in words)
        or simple
        or any("CLAUDE_CODE_SIMPLE" in env for env in _settings_envs(options))
    ):
        raise ValueError(
            "Claude Code's minimal mode (--bare, CLAUDE_CODE_SIMPLE) does not enforce a "
            "PreToolUse hook's deny for built-in tools: start it without that mode"
        )


def _settings_envs(options: ClaudeAgentOptions) -> Iterator[Mapping[str, Any]]:
    """The ``env`` of the ``settings`` the CLI is given (JSON text, or a file relative to
    ``cwd``, read as the SDK reads them; a ``ValueError`` when they cannot be read) and of
    the settings files it loads (``setting_sources``; None loads them all)."""
    text = str(options.settings or "{}").strip()
    cwd = Path(options.cwd or "")
    try:
        if not (text.startswith("{") and text.endswith("}")):
            text = (cwd / text).read_text(encoding="utf-8-sig")
        given = json.loads(text)
    except (OSError, ValueError) as e:
        raise ValueError(f"the settings given to Claude Code cannot be read ({e})") from None
    yield _env_of(given, "the settings given to Claude Code")
    env = {**os.environ, **{k: v for k, v in (options.env or {}).items() if v is not None}}
    home = Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME", "~"), ".claude"))
    files = {
        "user": [home.expanduser() / "settings.json"],
        "project": [cwd / ".claude" / "settings.json"],
        "local": [cwd / ".claude" / "settings.local.json"],
    }
    sources = files if options.setting_sources is None else options.setting_sources
    for path in (p for source in sources for p in files.get(str(source), [])):
        try:
            found = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            continue  # a settings file Claude Code cannot read sets nothing
        yield _env_of(found, str(path))


def _env_of(settings: object, where: str) -> Mapping[str, Any]:
    """The ``env`` of ``settings`` (a ``ValueError`` when they are not a settings object)."""
    env = settings.get("env", {}) if isinstance(settings, dict) else None
    if not isinstance(env, dict):
        raise ValueError(f"{where} are not a settings object")
    return env


def _argv_words(value: object) -> Iterator[str]:
    """Every word an option's ``value`` could put on the CLI's argv: a string or path, each
    item or mapping value within, and a list's items joined by commas (``--tools a,b``)."""
    if isinstance(value, (str, os.PathLike)):
        yield str(os.fspath(value))
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _argv_words(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        yield ",".join(str(item) for item in value)
        for item in value:
            yield from _argv_words(item)
