"""The shared scenario through Strands Agents' real loop: a scripted model (a
``strands.models.model.Model`` streaming Bedrock-Converse-style events; Strands ships no fake)
calls ``propose_fix`` (a tool that declares nothing) once, for a user who may not open the
pull request and for one who may, with ``agent(...)`` and ``await agent.invoke_async(...)``,
guarded by the ``ToolpassAuthorization`` intervention.

No rule is needed: the request hook checks what the tool does, inside the session the
intervention opens for the invocation's user. The refusal raised inside the tool's body
reaches the model as the tool's error result with its reason, and the run goes on.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncGenerator
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

import pytest
from github import Auth, Github
from scenario import ARGUMENTS, MAY, MAY_NOT, REPO, TOKEN, Scenario
from strands import Agent, tool
from strands.models.model import Model
from toolpass import AuditEvent, Toolkit
from toolpass.strands import ToolpassAuthorization


class ProposeOnce(Model):
    """Calls the one tool once, then answers "done"."""

    def __init__(self, name: str, arguments: dict[str, Any]) -> None:
        self.name, self.arguments = name, arguments

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        yield {"messageStart": {"role": "assistant"}}
        if len(messages) == 1:
            yield {
                "contentBlockStart": {"start": {"toolUse": {"toolUseId": "p", "name": self.name}}}
            }
            yield {
                "contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(self.arguments)}}}
            }
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": "done"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def run(agent: Agent, user: str, mode: str) -> dict[str, Any]:
    state = {"user_id": user}
    if mode == "sync":
        result = agent("Fix the typo in the README", invocation_state=state)
    else:
        result = asyncio.run(
            agent.invoke_async("Fix the typo in the README", invocation_state=state)
        )
    assert str(result).strip() == "done"  # the run went on after the tool call
    [reply] = [
        block["toolResult"]
        for message in agent.messages
        if message["role"] == "user"
        for block in message["content"]
        if "toolResult" in block
    ]
    return dict(reply)


def drive(s: Scenario, user: str, mode: str) -> dict[str, Any]:
    agent = Agent(
        model=ProposeOnce("propose_fix", dict(ARGUMENTS)),
        tools=[tool(s.propose_fix)],
        interventions=[ToolpassAuthorization(s.engine)],
        callback_handler=None,
    )
    return run(agent, user, mode)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_user_who_may_not_is_refused_and_the_model_reads_why(mode: str) -> None:
    with Scenario() as s:
        reply = drive(s, MAY_NOT, mode)
        assert reply["status"] == "error"
        [text] = [part["text"] for part in reply["content"]]
        # The toolpass text, once: not Strands' "Error: ToolRefused - ..." nor "DENIED: ...".
        assert text.startswith("Refused by toolpass (not_authorized): "), text
        s.assert_refused(text)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_user_who_may_opens_the_pull_request(mode: str) -> None:
    with Scenario() as s:
        reply = drive(s, MAY, mode)
        assert reply["status"] == "success"
        s.assert_opened(reply["content"][0]["text"])


@pytest.mark.parametrize(("user", "opened"), [(MAY_NOT, False), (MAY, True)])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_plain_strands_tool_is_held_to_the_request_hook_of_the_adapters_toolkit(
    user: str, opened: bool, mode: str
) -> None:
    """Not a toolpass tool: the adapter's own toolkit puts the request hook around its body,
    and the call has exactly one audit event, with the request it made."""
    with Scenario() as s:

        @tool
        def open_pull_request(repo: str, title: str) -> str:
            """Open a pull request."""
            # lazy: no read before the write, so only the pull request is checked
            gh = Github(base_url=s.github.api_url, auth=Auth.Token(TOKEN), retry=None, lazy=True)
            pr = gh.get_repo(repo).create_pull(title=title, body="", head="fix", base="main")
            return f"opened pull request #{pr.number}"

        events: list[AuditEvent] = []
        kit = Toolkit(permissions=s.engine, audit=events.append)
        agent = Agent(
            model=ProposeOnce("open_pull_request", {"repo": REPO, "title": "t"}),
            tools=[open_pull_request],
            interventions=[ToolpassAuthorization(s.engine, toolkit=kit)],
            callback_handler=None,
        )
        reply = run(agent, user, mode)
        posted = any(r.method == "POST" for r in s.github.requests)
        assert posted is opened
        text = reply["content"][0]["text"]
        if opened:
            assert text == "opened pull request #1"
        else:
            assert text.startswith("Refused by toolpass (not_authorized)"), text
            assert "pr.create" in text
        [event] = events
        assert event.outcome == ("ok" if opened else "refused")
        assert event.user == user
        assert [a["action"] for a in event.actions] == ["pr.create"]
