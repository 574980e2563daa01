"""The shared scenario through the Claude Agent SDK's real loop: the Claude Code CLI its wheel
bundles, with a scripted model behind a fake Messages API on 127.0.0.1, calls ``propose_fix``
(a tool that declares nothing, served in-process by ``create_sdk_mcp_server``) once, for a
user who may not open the pull request and for one who may, through ``query()`` and through
``ClaudeSDKClient`` (the SDK has no synchronous run), guarded by ``ToolpassHooks.apply``.

No rule is needed: the request hook checks what the tool does. The refusal raised inside the
tool's body reaches the model as the tool's error result, and the run goes on.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters/claude-agent-sdk/tests"))

from claude_agent_sdk import ClaudeSDKClient, UserMessage, tool
from claude_agent_sdk.types import ToolResultBlock
from claude_harness import fake, options, run
from scenario import ARGUMENTS, MAY, MAY_NOT, Scenario
from toolpass.claude_agent_sdk import ToolpassHooks

PROPOSE = "mcp__repo__propose_fix"


def drive(s: Scenario, user: str, entry: str) -> tuple[str, bool]:
    @tool(
        "propose_fix",
        "Propose a fix to a file of a repository",
        {"repo": str, "path": str, "fix": str},
    )
    async def propose_fix(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": s.propose_fix(**args)}]}

    guarded = ToolpassHooks(s.engine, user=user).apply(options("repo", [propose_fix]))
    script = [(PROPOSE, dict(ARGUMENTS))]
    if entry == "query":
        ran = asyncio.run(run(guarded, script))
        messages, final = ran.messages, ran.final
    else:

        async def chat() -> list[Any]:
            async with ClaudeSDKClient(options=guarded) as client:
                await client.query(fake().script(script))
                return [m async for m in client.receive_response()]

        messages = asyncio.run(chat())
        final = ""
    [result] = [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    text = result.content if isinstance(result.content, str) else str(result.content)
    if entry == "query":
        assert final == "done"  # the run went on after the tool call
    return text, bool(result.is_error)


@pytest.mark.parametrize("entry", ["query", "client"])
def test_a_user_who_may_not_is_refused_and_the_model_reads_why(entry: str) -> None:
    with Scenario() as s:
        text, failed = drive(s, MAY_NOT, entry)
        assert failed  # the tool's error result, which the model reads
        assert "Refused by toolpass (not_authorized)" in text
        s.assert_refused(text)


@pytest.mark.parametrize("entry", ["query", "client"])
def test_a_user_who_may_opens_the_pull_request(entry: str) -> None:
    with Scenario() as s:
        text, failed = drive(s, MAY, entry)
        assert not failed
        s.assert_opened(text)
