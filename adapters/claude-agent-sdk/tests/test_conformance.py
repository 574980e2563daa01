"""The shared conformance suite through the Claude Agent SDK's real loop: the bundled Claude
Code CLI, a scripted model behind a fake Messages API on 127.0.0.1, the suite's tools served
by an in-process SDK MCP server (``create_sdk_mcp_server``), guarded by ``ToolpassHooks.apply``.

The SDK has no synchronous run. Rules are keyed by Claude Code's names for the tools
(``mcp__kit__delete_issue``); the application's user reaches the hook through ``user=``, here a
callable reading the run's user."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import ClaudeAgentOptions
from claude_harness import options, run
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass.claude_agent_sdk import ToolpassHooks


def claude_name(tool: str) -> str:
    return f"mcp__kit__{tool}"


class Agent:
    """Options guarded for one run, and the user the application names for it."""

    def __init__(self, build: Any) -> None:
        self.user: str | None = None
        self.options: ClaudeAgentOptions = build(self)
        self.script: list[Any] = []


class TestHooks(AdapterConformance):
    sync_run = False

    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options_: Any,
    ) -> Agent:
        named = {claude_name(k): v for k, v in rules.items()}
        options_.setdefault("user", None)

        def build(agent: Agent) -> ClaudeAgentOptions:
            user = options_.pop("user") or (lambda _input: agent.user)
            guard = ToolpassHooks(engine, named, strict=strict, user=user, **options_)
            return guard.apply(options(served=tools.functions()))

        agent = Agent(build)
        agent.script = [(claude_name(c.tool), c.arguments) for c in script]
        return agent

    def run(self, agent: Agent, user: str | None) -> Transcript:
        raise NotImplementedError  # the SDK has no sync run

    async def arun(self, agent: Agent, user: str | None) -> Transcript:
        agent.user = user
        ran = await run(agent.options, agent.script)
        return Transcript(ran.outputs, ran.final)
