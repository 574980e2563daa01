"""MCP tools (llama-index-tools-mcp's ``McpToolSpec``, a real MCP server over stdio): wrapped,
or called through an applied agent, a refused call never reaches the server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.workflow import Context
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec
from llamaindex_script import FRAMEWORK_WARNINGS, scripted
from pytest_toolpass import ScriptedEngine
from toolpass import Decision
from toolpass.llamaindex import Rule, ToolpassAuthorization

pytestmark = FRAMEWORK_WARNINGS

DANA = "dana@example.com"
SERVER = Path(__file__).with_name("mcp_issues_server.py")


@pytest.mark.parametrize("how", ["wrap", "apply"])
def test_a_refused_mcp_call_never_reaches_the_server(how: str, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    engine = ScriptedEngine({(DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow()})
    guard = ToolpassAuthorization(
        engine, {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}
    )

    async def go() -> list[str]:
        client = BasicMCPClient(sys.executable, args=[str(SERVER), str(log)])
        tools: list[Any] = await McpToolSpec(client=client).to_tool_list_async()
        assert sorted(t.metadata.name for t in tools) == ["delete_issue", "list_issues"]
        # LlamaIndex's MCP client starts the server anew for each call: few calls, then.
        calls = [("delete_issue", {"key": "PAY-2"}), ("list_issues", {"project": "PAY"})]
        agent = FunctionAgent(
            tools=guard.wrap(tools) if how == "wrap" else tools, llm=scripted(calls)
        )
        if how == "apply":
            guard.apply(agent)
        ctx: Context[Any] = Context(agent)
        await ctx.store.set("user_id", DANA)
        handler = agent.run("go", ctx=ctx)
        read = [
            ev.tool_output.content
            async for ev in handler.stream_events()
            if isinstance(ev, ToolCallResult)
        ]
        assert str(await handler) == "done"
        return read

    read = asyncio.run(go())
    assert read[0].startswith("Refused by toolpass (not_authorized)")
    assert "PAY-1, PAY-2" in read[1]  # unchecked (no rule): it ran
    assert log.read_text().splitlines() == ["list_issues PAY"]
