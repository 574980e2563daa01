"""The shared scenario through Google ADK's real loop: a scripted model (a ``BaseLlm``; ADK
ships no fake) calls ``propose_fix`` (a tool that declares nothing) once, for a user who may not
open the pull request and for one who may, with ``runner.run`` and ``runner.run_async``, guarded
by ``ToolpassCallbacks`` applied to the agent and as the ``App``'s plugin.

No rule is needed: the request hook checks what the tool does, inside the session the adapter
opens for the run's ``user_id``. The refusal raised inside the tool's body reaches the model as
the tool's result with its reason, and the run goes on.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

import pytest
from github import Auth, Github
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from pydantic import Field
from scenario import ARGUMENTS, MAY, MAY_NOT, REPO, TOKEN, Scenario
from toolpass import AuditEvent, Toolkit
from toolpass.google_adk import ToolpassCallbacks


class ProposeOnce(BaseLlm):
    """Calls the one tool once, then answers "done"."""

    model: str = "scripted"
    tool: str = "propose_fix"
    arguments: dict[str, Any] = Field(default_factory=dict)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        if not any(p.function_response for p in last.parts or ()):
            call = types.FunctionCall(name=self.tool, args=dict(self.arguments), id="p")
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)])
            )
            return
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))


def run(agent: LlmAgent, user: str, mode: str, plugins: list[Any]) -> dict[str, Any]:
    runner = Runner(
        app=App(name="ops", root_agent=agent, plugins=plugins),
        session_service=InMemorySessionService(),
    )

    session = asyncio.run(runner.session_service.create_session(app_name="ops", user_id=user))
    message = types.Content(role="user", parts=[types.Part(text="Fix the typo in the README")])
    if mode == "sync":  # Runner.run runs the agent on a thread of its own, with its own loop
        events = list(runner.run(user_id=user, session_id=session.id, new_message=message))
    else:

        async def go() -> list[Any]:
            return [
                e
                async for e in runner.run_async(
                    user_id=user, session_id=session.id, new_message=message
                )
            ]

        events = asyncio.run(go())
    assert events[-1].content.parts[0].text == "done"  # the run went on after the tool call
    [reply] = [r.response for e in events for r in e.get_function_responses()]
    return dict(reply or {})


def drive(s: Scenario, user: str, mode: str, how: str) -> dict[str, Any]:
    callbacks = ToolpassCallbacks(s.engine)
    agent = LlmAgent(
        name="ops",
        model=ProposeOnce(arguments=dict(ARGUMENTS)),
        tools=[s.propose_fix],
    )
    if how == "apply":
        return run(callbacks.apply(agent), user, mode, [])
    return run(agent, user, mode, [callbacks.plugin()])


@pytest.mark.parametrize("how", ["apply", "plugin"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_user_who_may_not_is_refused_and_the_model_reads_why(mode: str, how: str) -> None:
    with Scenario() as s:
        reply = drive(s, MAY_NOT, mode, how)
        # The toolpass text, as the tool's result: ADK without toolpass ends the run on it.
        assert list(reply) == ["error"], reply
        assert reply["error"].startswith("Refused by toolpass (not_authorized): "), reply
        s.assert_refused(reply["error"])


@pytest.mark.parametrize("how", ["apply", "plugin"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_user_who_may_opens_the_pull_request(mode: str, how: str) -> None:
    with Scenario() as s:
        reply = drive(s, MAY, mode, how)
        s.assert_opened(reply["result"])


@pytest.mark.parametrize(("user", "opened"), [(MAY_NOT, False), (MAY, True)])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_plain_adk_tool_is_held_to_the_request_hook_of_the_adapters_toolkit(
    user: str, opened: bool, mode: str
) -> None:
    """Not a toolpass tool: the adapter's own toolkit puts the request hook around its body,
    and the call has exactly one audit event, with the request it made."""
    with Scenario() as s:

        def open_pull_request(repo: str, title: str) -> str:
            """Open a pull request."""
            # lazy: no read before the write, so only the pull request is checked
            gh = Github(base_url=s.github.api_url, auth=Auth.Token(TOKEN), retry=None, lazy=True)
            pr = gh.get_repo(repo).create_pull(title=title, body="", head="fix", base="main")
            return f"opened pull request #{pr.number}"

        events: list[AuditEvent] = []
        kit = Toolkit(permissions=s.engine, audit=events.append)
        agent = LlmAgent(
            name="ops",
            model=ProposeOnce(tool="open_pull_request", arguments={"repo": REPO, "title": "t"}),
            tools=[open_pull_request],
        )
        reply = run(ToolpassCallbacks(s.engine, toolkit=kit).apply(agent), user, mode, [])
        posted = any(r.method == "POST" for r in s.github.requests)
        assert posted is opened
        if opened:
            assert reply == {"result": "opened pull request #1"}
        else:
            assert reply["error"].startswith("Refused by toolpass (not_authorized)"), reply
            assert "pr.create" in reply["error"]
        [event] = events
        assert event.outcome == ("ok" if opened else "refused")
        assert event.user == user
        assert [a["action"] for a in event.actions] == ["pr.create"]
