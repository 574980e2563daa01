"""The helpdesk story (examples/helpdesk.py) through the Claude Agent SDK's real loop,
offline.

The SDK runs the Claude Code CLI its wheel bundles; here the CLI talks to a fake Messages API
on 127.0.0.1 whose scripted model makes the story's calls (the fake is the one the adapter's
tests use, in ``adapters/claude-agent-sdk/tests``: no API key, no network). The tools are
served in-process (``create_sdk_mcp_server``) and guarded by ``ToolpassHooks``; the user is
the application's, given to the hooks. The deploy waits for a person with
``approvals="defer"``: the hook answers ``permissionDecision: "defer"``, the run stops with
``ResultMessage.deferred_tool_use`` (``guard.deferred(result)`` is toolpass's request); once a
person has decided in the queue (or on the approvals page), the session is resumed
(``resume=session_id``), toolpass checks the call again, and the queue's record decides.
(``approvals="ask"`` asks the host's ``can_use_tool`` prompt instead.) The hook checks before
the body, so the deploy is a plain tool whose rule says it needs a person:
``Traits(approve=True)``. Needs ``pip install ./core ./adapters/claude-agent-sdk``
(or, once published, ``pip install toolpass-claude-agent-sdk``) and a checkout.

    python examples/claude_agent_sdk_agent.py
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import sys
from pathlib import Path

os.environ["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"  # no traffic but the fake's
os.environ["DISABLE_TELEMETRY"] = "1"
# The fake Messages API and the options pointing the CLI at it: the adapter's test harness.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters/claude-agent-sdk/tests"))

from typing import Any

import claude_agent_sdk
from claude_agent_sdk import ResultMessage
from claude_harness import fake, options
from claude_harness import run as run_claude
from helpdesk import CONVERSATION, HOOKED_RULES, HOOKED_TOOLS, USER, Script, engine, kit, main
from toolpass.claude_agent_sdk import ToolpassHooks

SERVER = "helpdesk"  # Claude Code names an in-process tool mcp__<server>__<tool>
guard = ToolpassHooks(
    engine,
    {f"mcp__{SERVER}__{name}": rule for name, rule in HOOKED_RULES.items()},
    user=USER,  # the application's user: options are made per user
    toolkit=kit,
    session=lambda _: CONVERSATION,
    approvals="defer",  # a call waiting for a person stops the run, to be resumed later
)
#: The session that stopped for a person, and what the model had read then, if one did.
paused: dict[str, Any] = {}


def run(script: Script) -> list[str]:
    """The first run; the second, once a person has decided, resumes the first's session."""
    opts = guard.apply(options(SERVER, list(HOOKED_TOOLS)))
    if paused:  # the person decided in the queue: resume the session; the record decides
        before, prompt = paused.pop("read"), paused.pop("prompt")
        resumed = dataclasses.replace(opts, resume=paused.pop("session"))
        ran = asyncio.run(run_claude(resumed, []))
        assert ran.final == "done"
        return fake().outputs(prompt)[before:]  # the session's reads, since it stopped
    calls = [(f"mcp__{SERVER}__{name}", arguments) for name, arguments in script]
    ran = asyncio.run(run_claude(opts, calls))
    [result] = [m for m in ran.messages if isinstance(m, ResultMessage)]
    asked = guard.deferred(result)
    if asked is None:
        assert ran.final == "done"
        return ran.outputs
    paused.update(session=ran.session_id, read=len(ran.outputs), prompt=ran.prompt)
    return [
        *ran.outputs,
        f"(the run stops for a person: deferred_tool_use {asked.payload()['type']}, "
        f"request {asked.request_id})",
    ]


def cli_present() -> bool:
    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return bundled.exists() or shutil.which("claude") is not None


if __name__ == "__main__":
    if not cli_present():
        print("the Claude Code CLI is not here (neither bundled in the wheel nor on PATH): skipped")
        sys.exit(0)
    fake()  # start the fake Messages API
    main("Claude Agent SDK", run)
