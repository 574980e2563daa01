"""The shared scenario through Pydantic AI's real agent loop: a scripted ``FunctionModel``
calls ``propose_fix`` (a tool that declares nothing) once, for a user who may not open the
pull request and for one who may, sync and async, guarded by ``ToolpassAuthorization``.

No rule is needed: the request hook checks what the tool does. The refusal raised inside the
tool's body reaches the model as a failed tool result instead of crashing the run.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

import pydantic_ai.models
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from scenario import ARGUMENTS, MAY, MAY_NOT, Scenario
from toolpass.pydantic_ai import ToolpassAuthorization

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False


@dataclass
class Deps:
    user: str


def propose_once(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("propose_fix", dict(ARGUMENTS), tool_call_id="p")])
    return ModelResponse(parts=[TextPart("done")])


def drive(s: Scenario, user: str, mode: str) -> ToolReturnPart:
    agent = Agent(
        FunctionModel(propose_once),
        deps_type=Deps,
        tools=[s.propose_fix],
        capabilities=[ToolpassAuthorization(s.engine)],
    )
    result: Any
    if mode == "sync":
        try:
            result = agent.run_sync("Fix the typo in the README", deps=Deps(user))
        finally:  # run_sync leaves its event loop set on this thread
            asyncio.get_event_loop_policy().get_event_loop().close()
            asyncio.set_event_loop(None)
    else:
        result = asyncio.run(agent.run("Fix the typo in the README", deps=Deps(user)))
    assert result.output == "done"  # the run went on after the tool call
    [reply] = [
        part
        for message in result.all_messages()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    return reply


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_user_who_may_not_is_refused_and_the_model_reads_why(mode: str) -> None:
    with Scenario() as s:
        reply = drive(s, MAY_NOT, mode)
        # The refusal raised inside the tool's body reached the model as a failed tool result
        # (no retry spent) and the run went on.
        assert reply.outcome == "failed"
        assert reply.model_response_str().startswith('{"error":"Refused by toolpass (')
        s.assert_refused(reply.model_response_str())


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_user_who_may_opens_the_pull_request(mode: str) -> None:
    with Scenario() as s:
        reply = drive(s, MAY, mode)
        assert reply.outcome == "success"
        s.assert_opened(reply.model_response_str())
