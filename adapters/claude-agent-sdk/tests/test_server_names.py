"""A call belongs to a copied in-process server only if that server serves a tool of exactly
that name (``mcp__<server>__<tool>``), never because the name starts with the server's: an
external ``ops__admin`` beside an in-process ``ops`` is decided by the hook, and a tool of an
in-process ``ops__admin`` is its own handler's. The hook is called as the SDK calls it."""

from __future__ import annotations

import asyncio
from typing import Any

from claude_agent_sdk import create_sdk_mcp_server
from claude_harness import options, sdk_tool
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest_toolpass import ScriptedEngine
from toolpass.claude_agent_sdk import Rule, ToolpassHooks

DANA = "dana@example.com"
DELETE = Rule("ops", "DELETE", "thing:{key}")


def delete(key: str) -> str:
    """Delete a thing."""
    return f"deleted {key}"


def hook_of(opts: Any) -> Any:
    [hook] = opts.hooks["PreToolUse"][0].hooks
    return hook


def said(hook: Any, tool: str, **more: Any) -> Any:
    input = {"session_id": "s", "tool_name": tool, "tool_input": {"key": "K-1"}, **more}
    return asyncio.run(hook(input, "toolu_1", {"signal": None}))


def sdk_server(name: str, tool: str) -> Any:
    made = sdk_tool(delete)
    return create_sdk_mcp_server(name, tools=[type(made)(tool, *list(vars(made).values())[1:])])


def test_an_external_server_named_like_an_in_process_one_is_decided_by_the_hook() -> None:
    engine = ScriptedEngine()
    guard = ToolpassHooks(engine, {"mcp__ops__admin__delete": DELETE}, user=DANA, strict=True)
    external = {"ops__admin": {"type": "stdio", "command": "admin-server"}}
    hook = hook_of(guard.apply(options("ops", [delete], mcp_servers=external)))
    out = said(hook, "mcp__ops__admin__delete")
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert engine.asked == [(DANA, "ops", "DELETE", "thing:K-1")]


def test_a_tool_of_an_in_process_server_named_like_another_is_its_own() -> None:
    engine = ScriptedEngine()
    guard = ToolpassHooks(engine, {"mcp__ops__admin__delete": DELETE}, user=DANA)
    servers = {"ops__admin": sdk_server("ops__admin", "delete")}
    hook = hook_of(guard.apply(options("ops", [delete], mcp_servers=servers)))
    assert said(hook, "mcp__ops__admin__delete") == {}  # its handler runs the pipeline
    assert engine.asked == []


#: A server or tool name: never starting with "_" (made so, not filtered).
NAME = st.builds(str.__add__, st.sampled_from("ab"), st.text("ab_", max_size=4))


@settings(max_examples=60, deadline=None)
@given(inner=NAME, suffix=NAME, tool=NAME)
def test_only_a_tool_the_copied_server_serves_is_left_to_its_handler(
    inner: str, suffix: str, tool: str
) -> None:
    """For any server ``inner`` served in process and an external server ``inner__suffix``,
    a call named after the external server's tool is decided by the hook unless the
    in-process server serves a tool of exactly that name, and no other server could."""
    engine = ScriptedEngine()
    external = f"{inner}__{suffix}"
    name = f"mcp__{external}__{tool}"
    guard = ToolpassHooks(engine, {name: DELETE}, user=DANA)
    servers = {external: {"type": "stdio", "command": "other"}}
    hook = hook_of(guard.apply(options(inner, [delete], mcp_servers=servers)))
    out = said(hook, name)
    assert out != {} or engine.asked, (inner, suffix, tool)
    assert out.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"
