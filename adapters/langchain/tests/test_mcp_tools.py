"""MCP tools (through langchain-mcp-adapters) are checked by the same middleware: a refused
call never reaches the MCP server."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp.server.fastmcp import FastMCP
from mcp.shared.memory import create_connected_server_and_client_session
from pytest_toolpass import Call, ScriptedEngine
from scripted_langchain import DANA, DANA_MAY_DELETE_PAY_1, DELETE, ERIN, Context, scripted
from toolpass.langchain import ToolpassMiddleware


def server(ran: list[str]) -> FastMCP:
    mcp = FastMCP("jira")

    @mcp.tool()
    def delete_issue(key: str) -> str:
        """Delete an issue."""
        ran.append(key)
        return f"deleted {key}"

    return mcp


async def run(guard: ToolpassMiddleware, ran: list[str], user: str) -> list[str]:
    script = [Call("delete_issue", {"key": "PAY-1"})]
    async with create_connected_server_and_client_session(server(ran)._mcp_server) as session:
        agent: Any = create_agent(
            scripted(script),
            tools=await load_mcp_tools(session),
            middleware=[guard],
            context_schema=Context,
        )
        state = await agent.ainvoke(
            {"messages": [HumanMessage("go")]}, context=Context(user_id=user)
        )
    assert state["messages"][-1].content == "done"
    return [str(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]


def test_mcp_tools_are_checked_like_any_other() -> None:
    engine = ScriptedEngine(DANA_MAY_DELETE_PAY_1)
    guard = ToolpassMiddleware(engine, {"delete_issue": DELETE})
    ran: list[str] = []
    [ok] = asyncio.run(run(guard, ran, DANA))
    assert "deleted PAY-1" in ok
    [refused] = asyncio.run(run(guard, ran, ERIN))
    assert "not_authorized" in refused
    assert ran == ["PAY-1"]  # erin's call never reached the MCP server
    assert [a[0] for a in engine.asked] == [DANA, ERIN]
