"""The shared conformance suite through the Claude Agent SDK's real loop: the bundled Claude
Code CLI, a scripted model behind a fake Messages API on 127.0.0.1, the suite's tools served
by an in-process SDK MCP server (``create_sdk_mcp_server``), guarded by ``ToolpassHooks.apply``.

The SDK has no synchronous run. ``TestHooks`` runs with ``approvals="defer"``: a call waiting
for a person stops the run (``ResultMessage.deferred_tool_use``), resumed with
``ToolpassHooks.answer`` and ``resume=session_id``; ``TestRefusingHooks`` with the default
``approvals="refuse"`` (the model reads ``approval_pending`` and retries).

Rules are keyed by Claude Code's names for the tools (``mcp__kit__delete_issue``; a pause's
payload names them so too, read here as the suite's names); the application's user reaches
the hook through ``user=``, here a callable reading the run's user."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
from claude_harness import _ran, fake, options, run
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass.adapting import Answer
from toolpass.claude_agent_sdk import ToolpassHooks


def claude_name(tool: str) -> str:
    return f"mcp__kit__{tool}"


class Agent:
    """Options guarded for one run, and the user the application names for it."""

    def __init__(self, build: Any) -> None:
        self.user: str | None = None
        self.hooks: ToolpassHooks | None = None
        self.options: ClaudeAgentOptions = build(self)
        self.script: list[Any] = []


class TestHooks(AdapterConformance):
    sync_run = False
    pauses: ClassVar[Literal["native", "refuses"]] = "native"
    approvals = "defer"

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
        options_.setdefault("approvals", self.approvals)

        def build(agent: Agent) -> ClaudeAgentOptions:
            user = options_.pop("user") or (lambda _input: agent.user)
            guard = agent.hooks = ToolpassHooks(engine, named, strict=strict, user=user, **options_)
            return guard.apply(options(served=tools.functions()))

        agent = Agent(build)
        agent.script = [(claude_name(c.tool), c.arguments) for c in script]
        return agent

    def run(self, agent: Agent, user: str | None) -> Transcript:
        raise NotImplementedError  # the SDK has no sync run

    async def arun(self, agent: Agent, user: str | None) -> Transcript:
        agent.user = user
        ran = await run(agent.options, agent.script)
        return self._transcript(agent, ran)

    async def aresume(self, agent: Agent, paused: Transcript, answer: Answer) -> Transcript:
        """The person's answer given to the hooks, then the session resumed: the CLI makes
        the deferred call again and the hook decides it."""
        session_id, prompt, tool_use_id, user = paused.state
        [payload] = paused.pending
        assert agent.hooks is not None
        agent.hooks.answer(tool_use_id, payload["request_id"], answer)
        agent.user = user
        resumed = dataclasses.replace(agent.options, resume=session_id)
        messages = [m async for m in query(prompt="Go on.", options=resumed)]
        return self._transcript(agent, _ran(fake(), prompt, messages), prompt)

    @staticmethod
    def _transcript(agent: Agent, ran: Any, prompt: str | None = None) -> Transcript:
        out = Transcript(ran.outputs, ran.final)
        for message in ran.messages:
            deferred = getattr(message, "deferred_tool_use", None)
            if isinstance(message, ResultMessage) and deferred is not None:
                assert agent.hooks is not None
                request = agent.hooks.deferred(message)
                payloads = [request.payload()] if request is not None else []
                out.pending = [
                    {**p, "tool": p["tool"].removeprefix("mcp__kit__")} for p in payloads
                ]
                out.state = (message.session_id, prompt or ran.prompt, deferred.id, agent.user)
        return out


class TestRefusingHooks(TestHooks):
    """The default: the model reads ``approval_pending`` and retries."""

    pauses: ClassVar[Literal["native", "refuses"]] = "refuses"
    approvals = "refuse"
    # The same hooks as TestHooks but for approvals: each run starts the CLI (about 1 s of
    # CPU), so the tests no approvals mode changes run there only.
    approvals_variant = True
