"""The helpdesk story (examples/helpdesk.py) through the Claude Agent SDK's real loop,
offline.

The SDK runs the Claude Code CLI its wheel bundles; here the CLI talks to a fake Messages API
on 127.0.0.1 whose scripted model makes the story's calls (the fake is the one the adapter's
tests use, in ``adapters/claude-agent-sdk/tests``: no API key, no network). The tools are
served in-process (``create_sdk_mcp_server``) and guarded by ``ToolpassHooks``; the user is
the application's, given to the hooks. Needs ``pip install ./core ./adapters/claude-agent-sdk``
(or, once published, ``pip install toolpass-claude-agent-sdk``) and a checkout.

    python examples/claude_agent_sdk_agent.py
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

os.environ["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"  # no traffic but the fake's
os.environ["DISABLE_TELEMETRY"] = "1"
# The fake Messages API and the options pointing the CLI at it: the adapter's test harness.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters/claude-agent-sdk/tests"))

import claude_agent_sdk
from claude_harness import fake, options
from claude_harness import run as run_claude
from helpdesk import CONVERSATION, RULES, TOOLS, USER, Script, engine, kit, main
from toolpass.claude_agent_sdk import ToolpassHooks

SERVER = "helpdesk"  # Claude Code names an in-process tool mcp__<server>__<tool>
guard = ToolpassHooks(
    engine,
    {f"mcp__{SERVER}__{name}": rule for name, rule in RULES.items()},
    user=USER,  # the application's user: options are made per user
    toolkit=kit,
    session=lambda _: CONVERSATION,
)


def run(script: Script) -> list[str]:
    calls = [(f"mcp__{SERVER}__{name}", arguments) for name, arguments in script]
    ran = asyncio.run(run_claude(guard.apply(options(SERVER, list(TOOLS))), calls))
    assert ran.final == "done"
    return ran.outputs


def cli_present() -> bool:
    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return bundled.exists() or shutil.which("claude") is not None


if __name__ == "__main__":
    if not cli_present():
        print("the Claude Code CLI is not here (neither bundled in the wheel nor on PATH): skipped")
        sys.exit(0)
    fake()  # start the fake Messages API
    main("Claude Agent SDK", run)
