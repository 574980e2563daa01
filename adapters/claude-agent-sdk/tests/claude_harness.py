"""Runs the Claude Agent SDK's real loop (the CLI its wheel bundles) against the fake Messages
API of ``fake_claude``, started once per test process."""

from __future__ import annotations

import atexit
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    SdkMcpTool,
    TextBlock,
    create_sdk_mcp_server,
    query,
    tool,
)
from fake_claude import FakeClaude

_fake: FakeClaude | None = None
_lock = threading.Lock()


def fake() -> FakeClaude:
    """The fake Messages API of this test process (started on first use)."""
    global _fake
    with _lock:
        if _fake is None:
            _fake = FakeClaude().__enter__()
            atexit.register(_fake.__exit__, None, None, None)
        return _fake


def sdk_tool(fn: Callable[..., Any]) -> SdkMcpTool[Any]:
    """A plain function (string arguments) as an ``@tool``."""
    schema = {name: str for name in inspect.signature(fn).parameters}

    async def handler(args: dict[str, Any]) -> dict[str, Any]:
        result = fn(**args)
        if inspect.isawaitable(result):
            result = await result
        return {"content": [{"type": "text", "text": str(result)}]}

    return tool(fn.__name__, fn.__doc__ or fn.__name__, schema)(handler)


def options(
    server: str = "kit", served: list[Any] | None = None, **more: Any
) -> ClaudeAgentOptions:
    """Options for a run against the fake: ``served`` (functions or ``@tool``s) served
    in-process as ``server`` and allowed, no built-in tools, no settings read from disk."""
    f = fake()
    mcp_servers = dict(more.pop("mcp_servers", {}))
    allowed = list(more.pop("allowed_tools", []))
    if served:
        built = [t if isinstance(t, SdkMcpTool) else sdk_tool(t) for t in served]
        mcp_servers[server] = create_sdk_mcp_server(server, tools=built)
        allowed += [f"mcp__{server}__{t.name}" for t in built]
    more.setdefault("tools", [])
    return ClaudeAgentOptions(
        mcp_servers=mcp_servers,
        allowed_tools=allowed,
        setting_sources=[],
        env=f.env(),
        cwd=f.home.name,
        **more,
    )


@dataclass
class Ran:
    """What one run showed: the model's reads after each call, its last answer, the
    session id, and every message."""

    outputs: list[str]
    final: str
    session_id: str | None
    messages: list[Any] = field(default_factory=list)
    #: The run's prompt (naming its script).
    prompt: str = ""


async def run(opts: ClaudeAgentOptions, calls: list[Any]) -> Ran:
    """One ``query()`` whose model makes ``calls`` (``(tool, arguments)``, one response each;
    a list of them for parallel calls), then says "done"."""
    f = fake()
    prompt = f.script(calls)
    messages = [m async for m in query(prompt=prompt, options=opts)]
    return _ran(f, prompt, messages)


def _ran(f: FakeClaude, prompt: str, messages: list[Any]) -> Ran:
    final, session = "", None
    for m in messages:
        if isinstance(m, AssistantMessage):
            final = "".join(b.text for b in m.content if isinstance(b, TextBlock)) or final
        if isinstance(m, ResultMessage):
            session = m.session_id
    return Ran(f.outputs(prompt), final, session, messages, prompt)
