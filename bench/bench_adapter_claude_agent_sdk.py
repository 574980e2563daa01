"""toolpass-claude-agent-sdk's added time per tool call, against the same session without it.

The Claude Agent SDK's real loop: the Claude Code CLI its wheel bundles, with a scripted model
behind a fake Messages API on 127.0.0.1 (no network). One ``ClaudeSDKClient`` per variant is
kept open, so the CLI's start is not timed; each turn makes CALLS calls of an in-process tool
(``create_sdk_mcp_server``). Variants: the bare session, one with a PreToolUse hook that only
says ``{}`` (what the SDK's hook round trip costs by itself, toolpass or not), and
``ToolpassHooks.apply`` (a rule, so the engine is asked; the hook, then the whole pipeline in
the tool's handler; audited). Turns are interleaved in a shuffled order and medians reported,
so the ratios hold on any machine. The audit sink is a list, so logging is not measured.

    python bench/bench_adapter_claude_agent_sdk.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters/claude-agent-sdk/tests"))

from _shared import Engine, ainterleave, aper_call, table
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, HookMatcher, ResultMessage
from claude_harness import fake, options
from toolpass import Toolkit
from toolpass.claude_agent_sdk import Rule, ToolpassHooks

CALLS = 10  # tool calls per turn
ROUNDS = 12  # turns per variant, interleaved; the median turn is reported
HOOK_CALLS = 2_000  # calls of the hook and the handler alone per timing
USER = "dana@example.com"
TOOL = "mcp__ops__delete_issue"


def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


async def no_opinion(input: Any, tool_use_id: Any, context: Any) -> Any:
    return {}


def variants() -> dict[str, tuple[ClaudeAgentOptions, list[Any]]]:
    rules = {TOOL: Rule("jira", "DELETE_ISSUES", "issue:{key}")}
    bare = options("ops", [delete_issue])
    noop = options("ops", [delete_issue], hooks={"PreToolUse": [HookMatcher(hooks=[no_opinion])]})
    seen: list[Any] = []
    guard = ToolpassHooks(Engine(), rules, user=USER, toolkit=Toolkit(audit=[seen.append]))
    return {
        "bare session": (bare, []),
        "no-op hook": (noop, []),
        "toolpass, rule": (guard.apply(options("ops", [delete_issue])), seen),
    }


async def turn(client: ClaudeSDKClient) -> float:
    """Seconds per tool call in one turn."""
    prompt = fake().script([(TOOL, {"key": f"PAY-{n}"}) for n in range(CALLS)])
    start = time.perf_counter()
    await client.query(prompt)
    async for message in client.receive_response():
        if isinstance(message, ResultMessage):
            assert not message.is_error, message
    elapsed = time.perf_counter() - start
    assert fake().outputs(prompt) == [f"deleted PAY-{n}" for n in range(CALLS)]
    return elapsed / CALLS


async def main() -> None:
    built = variants()
    clients = {name: ClaudeSDKClient(options=opts) for name, (opts, _) in built.items()}
    for client in clients.values():
        await client.connect()
    try:
        samples = await ainterleave(clients, lambda name: turn(clients[name]), ROUNDS, warmup=2)
    finally:
        for client in clients.values():
            await client.disconnect()
    seen = built["toolpass, rule"][1]
    assert len(seen) == (ROUNDS + 2) * CALLS, len(seen)  # every call checked and audited once
    title = f"toolpass-claude-agent-sdk: time per tool call in the real loop ({CALLS} per turn)"
    table(title, samples, "bare session", unit="ms")
    base = statistics.median(samples["bare session"])
    hook, handler, alone = await alone_timings()
    added = hook + handler - alone
    print("toolpass's own work per call (the hook, then the handler with the whole pipeline)")
    print(f"  tool handler alone      {alone * 1e6:9.1f} µs")
    print(f"  hook + guarded handler  {(hook + handler) * 1e6:9.1f} µs  (+{added * 1e6:.1f} µs)")
    print(f"  => {(base + added) / base:.4f}x the bare session's {base * 1e3:.2f} ms per tool call")


async def alone_timings() -> tuple[float, float, float]:
    """Median seconds per call of toolpass's hook and of the guarded handler, and of the
    handler alone: the loop's own noise does not enter this figure."""
    from claude_agent_sdk import SdkMcpTool, create_sdk_mcp_server, tool
    from toolpass.claude_agent_sdk import _serving

    rules = {TOOL: Rule("jira", "DELETE_ISSUES", "issue:{key}")}
    seen: list[Any] = []
    guard = ToolpassHooks(Engine(), rules, user=USER, toolkit=Toolkit(audit=[seen.append]))

    @tool("delete_issue", "Delete an issue", {"key": str})
    async def handler(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"deleted {args['key']}"}]}

    opts = guard.apply(
        ClaudeAgentOptions(mcp_servers={"ops": create_sdk_mcp_server("ops", tools=[handler])})
    )
    assert opts.hooks is not None
    [hook] = opts.hooks["PreToolUse"][0].hooks
    from toolpass.claude_agent_sdk import _sdk_tools

    [guarded] = _sdk_tools(opts.mcp_servers["ops"]["instance"]) or []  # type: ignore[index]
    assert isinstance(guarded, SdkMcpTool)
    args = {"key": "PAY-1"}
    inputs = [
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s",
            "prompt_id": "p",
            "tool_name": TOOL,
            "tool_input": args,
            "tool_use_id": f"t{n}",
            "mcp_server": {"name": "ops", "source": "sdk"},
        }
        for n in range(HOOK_CALLS)
    ]

    async def hooks() -> None:
        for n in range(HOOK_CALLS):
            await hook(inputs[n], f"t{n}", {"signal": None})

    async def handled() -> None:
        for n in range(HOOK_CALLS):
            token = _serving.set(f"t{n}")
            await guarded.handler(args)
            _serving.reset(token)

    async def alone() -> None:
        for _ in range(HOOK_CALLS):
            await handler.handler(args)

    timings = await aper_call({"hook": hooks, "handled": handled, "alone": alone}, HOOK_CALLS)
    assert len(seen) == 7 * HOOK_CALLS
    return timings["hook"], timings["handled"], timings["alone"]


if __name__ == "__main__":
    asyncio.run(main())
