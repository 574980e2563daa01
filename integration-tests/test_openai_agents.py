"""The shared scenario through the OpenAI Agents SDK's real loop: the SDK's ``ScriptedModel``
calls ``propose_fix`` (a tool that declares nothing) once, for a user who may not open the
pull request and for one who may, with ``Runner.run_sync`` and ``Runner.run``, guarded by
``ToolpassGuardrails``.

No rule is needed: the request hook checks what the tool does, inside the session the
adapter opens for the run's user. The refusal raised inside the tool's body reaches the model
with its reason, where the SDK would otherwise send its masked "An error occurred" text.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"

import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from github import Auth, Github
from scenario import ARGUMENTS, MAY, MAY_NOT, REPO, TOKEN, Scenario
from toolpass import AuditEvent, Toolkit
from toolpass.openai_agents import ToolpassGuardrails

set_tracing_disabled(True)


@dataclass
class Ctx:
    user_id: str


def drive(s: Scenario, user: str, mode: str) -> str:
    model = ScriptedModel(
        [[function_call("propose_fix", ARGUMENTS, call_id="p")], [assistant_message("done")]]
    )
    agent = Agent(name="fixer", model=model, tools=[function_tool(s.propose_fix)])
    ToolpassGuardrails(s.engine).apply(agent)
    result: Any
    if mode == "sync":
        loop = asyncio.new_event_loop()  # run_sync keeps a thread's loop open on purpose
        asyncio.set_event_loop(loop)
        try:
            result = Runner.run_sync(agent, "Fix the typo in the README", context=Ctx(user))
        finally:
            asyncio.set_event_loop(None)
            loop.close()
    else:
        result = asyncio.run(Runner.run(agent, "Fix the typo in the README", context=Ctx(user)))
    assert result.final_output == "done"  # the run went on after the tool call
    [output] = outputs(model)
    return output


def outputs(model: ScriptedModel) -> list[str]:
    """What the model read back after its tool calls, from the last request it was sent."""
    model.assert_complete()
    last = model.last_call
    assert last is not None
    return [
        str(item["output"])
        for item in last.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_user_who_may_not_is_refused_and_the_model_reads_why(mode: str) -> None:
    with Scenario() as s:
        s.assert_refused(drive(s, MAY_NOT, mode))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_user_who_may_opens_the_pull_request(mode: str) -> None:
    with Scenario() as s:
        s.assert_opened(drive(s, MAY, mode))


@pytest.mark.parametrize(("user", "opened"), [(MAY_NOT, False), (MAY, True)])
def test_a_plain_function_tool_is_held_to_the_request_hook_of_the_adapters_toolkit(
    user: str, opened: bool
) -> None:
    """Not a toolpass tool: the adapter's own toolkit puts the request hook around its body."""
    with Scenario() as s:

        @function_tool
        def open_pull_request(repo: str, title: str) -> str:
            """Open a pull request."""
            # lazy: no read before the write, so only the pull request is checked
            gh = Github(base_url=s.github.api_url, auth=Auth.Token(TOKEN), retry=None, lazy=True)
            pr = gh.get_repo(repo).create_pull(title=title, body="", head="fix", base="main")
            return f"opened pull request #{pr.number}"

        events: list[AuditEvent] = []
        kit = Toolkit(permissions=s.engine, audit=events.append)
        model = ScriptedModel(
            [
                [function_call("open_pull_request", {"repo": REPO, "title": "t"}, call_id="p")],
                [assistant_message("done")],
            ]
        )
        agent = Agent(name="fixer", model=model, tools=[open_pull_request])
        ToolpassGuardrails(s.engine, toolkit=kit).apply(agent)
        result = asyncio.run(Runner.run(agent, "Open it", context=Ctx(user)))
        assert result.final_output == "done"
        [output] = outputs(model)
        posted = any(r.method == "POST" for r in s.github.requests)
        assert posted is opened
        if opened:
            assert output == "opened pull request #1"
        else:
            assert output.startswith("Refused by toolpass (not_authorized)"), output
            assert "pr.create" in output
        # One event: the guardrail's decision written with the body's run and its request.
        assert [e.outcome for e in events] == ["ok" if opened else "refused"]
        assert [a["action"] for a in events[0].actions] == ["pr.create"]
