"""A ``CodeActAgent`` runs its tools from the code its model writes: that code calls the
tools' functions directly, past the tool-call step ``apply`` guards. ``apply`` refuses such
an agent unless every function it offers the code checks itself (a toolpass secured tool)."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, CodeActAgent
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llamaindex_script import FRAMEWORK_WARNINGS
from pytest_toolpass import ScriptedEngine
from toolpass import Toolkit
from toolpass.llamaindex import ToolpassAuthorization

pytestmark = FRAMEWORK_WARNINGS


async def run_code(code: str) -> dict[str, Any]:
    """The application's code executor (never reached here)."""
    raise AssertionError("not run")


def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


def agent(*tools: Any, **options: Any) -> CodeActAgent:
    return CodeActAgent(
        code_execute_fn=run_code, tools=list(tools), llm=MockFunctionCallingLLM(), **options
    )


def test_a_code_act_agent_with_a_plain_tool_is_refused() -> None:
    guard = ToolpassAuthorization(ScriptedEngine(), user="dana@example.com")
    with pytest.raises(ValueError, match=r"runs its tools from the code .*: delete_issue\."):
        guard.apply(agent(delete_issue))
    workflow = AgentWorkflow(agents=[agent(delete_issue, name="coder")])
    with pytest.raises(ValueError, match="'coder' runs its tools from the code"):
        guard.apply(workflow)


def test_a_code_act_agent_whose_tools_check_themselves_is_guarded() -> None:
    kit = Toolkit()
    secured = kit.secured_tool(effect="destructive")(delete_issue)
    coder = agent(secured)
    guard = ToolpassAuthorization(ScriptedEngine(), user="dana@example.com")
    assert guard.apply(coder) is coder
