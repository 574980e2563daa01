"""Each adapter's example (examples/<module>_agent.py) runs as a user would run it: a
subprocess of this environment's Python, offline. Its output shows the helpdesk story of
examples/helpdesk.py: an allowed call, a denied one, the untrusted ticket fenced, the
exfiltration refused, the deploy waiting for approval and then run once.

Run by each adapter's nox session, whose environment holds that one framework: the examples
of the others are not collected.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MODULES = [
    "langchain",
    "openai_agents",
    "pydantic_ai",
    "crewai",
    "strands",
    "llamaindex",
    "google_adk",
    "claude_agent_sdk",
    "mcp",
]
HERE = [m for m in MODULES if importlib.util.find_spec(f"toolpass.{m}") is not None]
#: How each example shows the deploy waiting for a person: its framework's own pause (and
#: resume).
PAUSES = {
    "langchain": "interrupt toolpass_approval",
    "openai_agents": "interruptions toolpass_approval",
    "pydantic_ai": "DeferredToolRequests toolpass_approval",
    "crewai": "approved from another thread; the waiting call then ran, once",
    "strands": "interrupt toolpass-approval",
    "llamaindex": "ApprovalRequired toolpass_approval",
    "google_adk": "the run pauses for ADK's tool confirmation",
    "claude_agent_sdk": "deferred_tool_use toolpass_approval",
    "mcp": "InputRequiredResult toolpass_approval",
}


def test_every_adapter_has_an_example() -> None:
    adapters = {
        p.parent.name.replace("-", "_") for p in EXAMPLES.parent.glob("adapters/*/pyproject.toml")
    }
    assert adapters == set(MODULES)
    assert {m for m in MODULES if (EXAMPLES / f"{m}_agent.py").is_file()} == set(MODULES)


@pytest.mark.parametrize("module", HERE)
def test_the_example_tells_the_story(module: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{module}_agent.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=EXAMPLES.parent,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    flat = " ".join(w for w in out.split() if w not in ("│", "┆"))  # long lines are wrapped
    calls = [line for line in out.splitlines() if line.startswith("▶ ")]
    made = ["delete_issue", "delete_issue", "lookup_customer", "read_ticket", "send_email"]
    # CrewAI's hook waits for the person, so its deploy is called once; elsewhere the run
    # pauses (or the model is refused) and the deploy goes on in a second run.
    deploys = ["deploy"] if module == "crewai" else ["deploy", "deploy"]
    assert [c.split("(")[0] for c in calls] == [f"▶ model calls {n}" for n in made + deploys], out
    for shown in (
        "deleted PAY-1",  # allowed by the engine
        "Refused by toolpass (not_authorized)",  # denied by it
        "lacks Delete Issues in project PAY-2",  # with its reason
        "<untrusted-content id=",  # the ticket, fenced
        "Refused by toolpass (exfiltration)",
        "deployed payments-api 2.4.1",  # once approved
    ):
        assert shown in flat, f"{shown!r} not in:\n{out}"
    # The deploy waits for a person in the framework's own pause: never the refusal where
    # the framework can pause.
    assert PAUSES[module] in flat, out
    if module != "google_adk":  # ADK's pause also answers the call with the refusal text
        assert "approval_pending" not in flat.split("=== audit")[0], out
    # What the person approving reads (Claude Code names an in-process tool mcp__<server>__<tool>).
    assert re.search(r"wants to run (mcp__\w+__)?deploy \(write\)", flat), out
    assert "deleted PAY-2" not in out
    assert "sent to" not in out  # the email never went
    assert out.count("deployed payments-api") == 1  # the approval ran its call once
    audit = out.split("=== audit")[1]
    assert "not_authorized" in audit
    assert "exfiltration" in audit
