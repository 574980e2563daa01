"""The adapter's interface, without running the CLI: options checked when the hooks are made,
rules checked against the in-process tools when applied, and what the hook returns for each
input (its callback called as the SDK calls it)."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from claude_harness import options
from pytest_toolpass import ScriptedEngine
from toolpass import Decision
from toolpass.claude_agent_sdk import Rule, ToolpassHooks

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira", "DELETE_ISSUES", "issue:{key}")
BASH = Rule("shell", "RUN", "command:{command}")


def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


def hook_of(opts: Any) -> Any:
    [hook] = opts.hooks["PreToolUse"][0].hooks
    return hook


def said(hook: Any, tool: str, arguments: dict[str, Any], **more: Any) -> Any:
    input = {
        "hook_event_name": "PreToolUse",
        "session_id": "sess-1",
        "prompt_id": "prompt-1",
        "tool_name": tool,
        "tool_input": arguments,
        "tool_use_id": "toolu_1",
        **more,
    }
    return asyncio.run(hook(input, "toolu_1", {"signal": None}))


@pytest.mark.parametrize(
    ("option", "error", "match"),
    [
        ({"engine": "https://toolpass.example"}, TypeError, "permission engine"),
        ({"rules": {"Bash": ("shell", "RUN")}}, TypeError, "a rule is"),
        ({"rules": {"Bash": Rule("shell", "RUN", "command:{command")}}, Exception, "command"),
        ({"rules": {("Bash", "Bash"): BASH}}, ValueError, "two rules"),
        ({"user": ""}, TypeError, "user"),
        ({"user": 42}, TypeError, "user"),
        ({"user": None}, TypeError, "user"),
        ({"session": "forever"}, TypeError, "session"),
        ({"on_refuse": "text"}, TypeError, "on_refuse"),
        ({"strict": "yes"}, TypeError, "strict"),
        ({"timeout": 0}, TypeError, "timeout"),
        ({"timeout": "30"}, TypeError, "timeout"),
        ({"timeout": math.nan}, TypeError, "timeout"),
        ({"timeout": True}, TypeError, "timeout"),
        ({"timeuot": 30}, TypeError, "timeuot"),
    ],
)
def test_a_bad_option_is_an_error_when_made(
    option: dict[str, Any], error: type, match: str
) -> None:
    chosen = {"engine": ScriptedEngine(), "rules": {"Bash": BASH}, "user": DANA, **option}
    with pytest.raises(error, match=match):
        ToolpassHooks(**chosen)


def test_apply_checks_the_rules_against_the_in_process_tools() -> None:
    wrong = Rule("jira", "DELETE_ISSUES", "issue:{issue_key}")
    guard = ToolpassHooks(ScriptedEngine(), {"mcp__ops__delete_issue": wrong}, user=DANA)
    with pytest.raises(ValueError, match="names issue_key, which the tool does not take"):
        guard.apply(options("ops", [delete_issue]))
    # No built-ins, no settings, every server copied: these are all the session's tools.
    guard = ToolpassHooks(ScriptedEngine(), {"mcp__ops__delete_isue": DELETE}, user=DANA)
    with pytest.raises(ValueError, match="tools the agent does not have: mcp__ops__delete_isue"):
        guard.apply(options("ops", [delete_issue]))
    # Built-in tools too: a rule for one is not an error, and the rest are listed.
    guard = ToolpassHooks(ScriptedEngine(), {"Bash": BASH}, user=DANA)
    guard.apply(options("ops", [delete_issue], tools=["Bash"]))
    explained = guard.explain()
    assert explained.unchecked == ["mcp__ops__delete_issue"]
    assert "Bash" in str(explained)
    assert "tools known only as the agent runs" in str(explained)
    with pytest.raises(TypeError, match="ClaudeAgentOptions"):
        guard.apply({"mcp_servers": {}})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("more", "environ"),
    [
        ({"extra_args": {"bare": None}}, None),
        ({"extra_args": {"--bare": None}}, None),
        ({"extra_args": {"BARE": None}}, None),
        ({"env": {"CLAUDE_CODE_SIMPLE": "1"}}, None),
        ({"env": {"CLAUDE_CODE_SIMPLE": "false"}}, None),
        ({"env": {"CLAUDE_CODE_SIMPLE": "1"}}, "1"),
        ({}, "1"),
    ],
)
def test_claude_codes_minimal_mode_is_refused_when_applied(
    more: dict[str, Any], environ: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under --bare or CLAUDE_CODE_SIMPLE the CLI runs a built-in tool the hook denied.
    if environ is None:
        monkeypatch.delenv("CLAUDE_CODE_SIMPLE", raising=False)
    else:
        monkeypatch.setenv("CLAUDE_CODE_SIMPLE", environ)
    guard = ToolpassHooks(ScriptedEngine(), {"Bash": BASH}, user=DANA)
    base = options("ops", [delete_issue], tools=["Bash"])
    env = {**base.env, **more.get("env", {})}
    with pytest.raises(ValueError, match="minimal mode"):
        guard.apply(replace(base, env=env, extra_args=more.get("extra_args", {})))
    monkeypatch.delenv("CLAUDE_CODE_SIMPLE", raising=False)
    guard.apply(options("ops", [delete_issue], tools=["Bash"], extra_args={"debug": None}))


@pytest.mark.parametrize(
    "more",
    [
        {"system_prompt": "--bare"},
        {"system_prompt": {"type": "file", "path": "--bare"}},
        {"disallowed_tools": ["--bare"]},
        {"allowed_tools": ["Bash", "--bare"]},
        {"add_dirs": [Path("--bare")]},
        {"model": "--bare"},
        {"settings": "--bare"},
        {"betas": ["--bare"]},
    ],
)
def test_the_bare_flag_as_any_options_word_is_refused(
    more: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CLI starts bare when any word of its argv is --bare, an option's value too
    # (--disallowedTools --bare): the SDK puts these options' values on it as words.
    monkeypatch.delenv("CLAUDE_CODE_SIMPLE", raising=False)
    guard = ToolpassHooks(ScriptedEngine(), {"Bash": BASH}, user=DANA)
    with pytest.raises(ValueError, match="minimal mode"):
        guard.apply(replace(options("ops", [delete_issue], tools=["Bash"]), **more))


@pytest.mark.parametrize("inline", [True, False])
def test_claude_code_simple_in_the_settings_env_is_refused(
    inline: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --settings' env reaches the CLI's environment before it decides (measured: 2.1.332).
    monkeypatch.delenv("CLAUDE_CODE_SIMPLE", raising=False)
    text = json.dumps({"env": {"CLAUDE_CODE_SIMPLE": "1"}})
    (tmp_path / "settings.json").write_text(text)
    base = replace(options("ops", [delete_issue], tools=["Bash"]), cwd=str(tmp_path))
    guard = ToolpassHooks(ScriptedEngine(), {"Bash": BASH}, user=DANA)
    with pytest.raises(ValueError, match="minimal mode"):
        guard.apply(replace(base, settings=text if inline else "settings.json"))
    (tmp_path / "settings.json").write_text(json.dumps({"env": {"OTHER": "1"}}))
    guard.apply(replace(base, settings="settings.json"))
    with pytest.raises(ValueError, match="settings"):
        guard.apply(replace(base, settings="missing.json"))


@pytest.mark.parametrize("sources", [None, ["user"], ["project", "user"]])
def test_claude_code_simple_in_the_user_settings_file_is_refused(
    sources: list[str] | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user's settings file (CLAUDE_CONFIG_DIR, else ~/.claude) is read unless
    # setting_sources leaves "user" out; its env reached the CLI (measured: 2.1.332).
    monkeypatch.delenv("CLAUDE_CODE_SIMPLE", raising=False)
    (tmp_path / "settings.json").write_text(json.dumps({"env": {"CLAUDE_CODE_SIMPLE": "1"}}))
    base = options("ops", [delete_issue], tools=["Bash"])
    base = replace(base, env={**base.env, "CLAUDE_CONFIG_DIR": str(tmp_path)})
    guard = ToolpassHooks(ScriptedEngine(), {"Bash": BASH}, user=DANA)
    with pytest.raises(ValueError, match="minimal mode"):
        guard.apply(replace(base, setting_sources=sources))
    guard.apply(replace(base, setting_sources=["project"]))


def test_the_hook_says_no_objection_only_for_an_allowed_call() -> None:
    engine = ScriptedEngine({(DANA, "RUN", "command:ls"): Decision.allow()})
    hook = hook_of(ToolpassHooks(engine, {"Bash": BASH}, user=DANA).apply(options(tools=["Bash"])))
    # {}: Claude Code's own permission rules still decide; "allow" would skip them.
    assert said(hook, "Bash", {"command": "ls"}) == {}
    denied = said(hook, "Bash", {"command": "rm"})
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert denied["hookSpecificOutput"]["permissionDecisionReason"].startswith(
        "Refused by toolpass (not_authorized)"
    )
    assert "continue_" not in denied  # the run goes on
    assert engine.asked == [
        (DANA, "shell", "RUN", "command:ls"),
        (DANA, "shell", "RUN", "command:rm"),
    ]


def test_a_user_callable_is_given_the_hooks_input() -> None:
    """The hook names no application user: a callable can map Claude Code's session id."""
    users = {"sess-1": DANA, "sess-2": ERIN}
    engine = ScriptedEngine({(DANA, "RUN", "command:ls"): Decision.allow()})
    guard = ToolpassHooks(engine, {"Bash": BASH}, user=lambda input: users.get(input["session_id"]))
    hook = hook_of(guard.apply(options(tools=["Bash"])))
    assert said(hook, "Bash", {"command": "ls"}) == {}
    refused = said(hook, "Bash", {"command": "ls"}, session_id="sess-2")
    assert "not_authorized" in refused["hookSpecificOutput"]["permissionDecisionReason"]
    nobody = said(hook, "Bash", {"command": "ls"}, session_id="sess-3")
    assert "no_session" in nobody["hookSpecificOutput"]["permissionDecisionReason"]
    assert [u for u, *_ in engine.asked] == [DANA, ERIN]


def test_strict_refuses_a_tool_without_a_rule_at_the_hook() -> None:
    hook = hook_of(
        ToolpassHooks(ScriptedEngine(), {"Bash": BASH}, user=DANA, strict=True).apply(
            options(tools=["Bash"])
        )
    )
    out = said(hook, "WebFetch", {"url": "https://example.com"})
    assert "not_configured" in out["hookSpecificOutput"]["permissionDecisionReason"]
    hook = hook_of(
        ToolpassHooks(ScriptedEngine(), {"Bash": BASH}, user=DANA).apply(options(tools=["Bash"]))
    )
    assert said(hook, "WebFetch", {"url": "https://example.com"}) == {}  # unchecked, audited


def test_on_refuse_none_stops_the_run_at_a_refusal() -> None:
    hook = hook_of(
        ToolpassHooks(ScriptedEngine(), {"Bash": BASH}, user=DANA, on_refuse=None).apply(
            options(tools=["Bash"])
        )
    )
    out = said(hook, "Bash", {"command": "rm"})
    assert out["continue_"] is False
    assert "not_authorized" in out["stopReason"]
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_tool_of_an_external_server_with_an_sdk_name_is_decided_by_the_hook() -> None:
    """Only the servers these very options' copies serve are left to their handlers: an
    external server that happens to share a name is decided by the hook."""
    engine = ScriptedEngine()
    guard = ToolpassHooks(engine, {"mcp__ops__delete_issue": DELETE}, user=DANA)
    guard.apply(options("ops", [delete_issue]))  # another session's options
    external = {"ops": {"type": "stdio", "command": "ops-server"}}
    hook = hook_of(guard.apply(options(mcp_servers=external)))
    out = said(
        hook,
        "mcp__ops__delete_issue",
        {"key": "PAY-1"},
        mcp_server={"name": "ops", "source": "sdk"},
    )
    assert "not_authorized" in out["hookSpecificOutput"]["permissionDecisionReason"]
    assert engine.asked == [(DANA, "jira", "DELETE_ISSUES", "issue:PAY-1")]


def test_many_sessions_at_once_each_get_their_own_user() -> None:
    """The hook's calls of many Claude Code sessions, concurrently, on one guard: each is
    checked for the user its session maps to, never another's."""
    users = {f"sess-{n}": (DANA if n % 2 else ERIN) for n in range(40)}
    engine = ScriptedEngine({(DANA, "RUN", "command:ls"): Decision.allow()})
    guard = ToolpassHooks(engine, {"Bash": BASH}, user=lambda input: users[input["session_id"]])
    hook = hook_of(guard.apply(options(tools=["Bash"])))

    async def one(session: str) -> tuple[str, Any]:
        input = {"session_id": session, "tool_name": "Bash", "tool_input": {"command": "ls"}}
        return session, await hook(input, f"toolu-{session}", {"signal": None})

    async def all_at_once() -> list[tuple[str, Any]]:
        return list(await asyncio.gather(*(one(s) for s in users)))

    for session, out in asyncio.run(all_at_once()):
        assert (out == {}) == (users[session] == DANA), (session, out)
    assert sorted(u for u, *_ in engine.asked) == sorted(users.values())
