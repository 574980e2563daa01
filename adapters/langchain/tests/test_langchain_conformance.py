"""The conformance suite every adapter passes, through ``create_agent``'s real loop."""

from __future__ import annotations

import secrets
from dataclasses import asdict
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from scripted_langchain import Context, scripted, transcript
from toolpass.adapting import Answer
from toolpass.langchain import ToolpassMiddleware


class TestLangChainConformance(AdapterConformance):
    """Runs with a checkpointer (one per test, shared by the agents a test builds, as a
    database is by an application's processes), so approvals pause with ``interrupt()``."""

    pauses = "native"

    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Any:
        guard = ToolpassMiddleware(engine, rules, strict=strict, **options)
        return create_agent(
            scripted(script),
            tools=tools.functions(),
            middleware=[guard],
            context_schema=Context,
            checkpointer=self._saver(),
        )

    def _saver(self) -> InMemorySaver:
        if "saver" not in self.__dict__:
            self.__dict__["saver"] = InMemorySaver()
        saver: InMemorySaver = self.__dict__["saver"]
        return saver

    def run(self, agent: Any, user: str | None) -> Transcript:
        config, context = _thread(), Context(user_id=user)
        state = agent.invoke({"messages": [HumanMessage("go")]}, config, context=context)
        return _read(state, (config, context))

    async def arun(self, agent: Any, user: str | None) -> Transcript:
        config, context = _thread(), Context(user_id=user)
        state = await agent.ainvoke({"messages": [HumanMessage("go")]}, config, context=context)
        return _read(state, (config, context))

    def resume(self, agent: Any, paused: Transcript, answer: Answer) -> Transcript:
        config, context = paused.state
        state = agent.invoke(Command(resume=asdict(answer)), config, context=context)
        return _read(state, paused.state)

    async def aresume(self, agent: Any, paused: Transcript, answer: Answer) -> Transcript:
        config, context = paused.state
        state = await agent.ainvoke(Command(resume=asdict(answer)), config, context=context)
        return _read(state, paused.state)


def _thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"thread-{secrets.token_hex(6)}"}}


def _read(state: dict[str, Any], kept: Any) -> Transcript:
    """What the model read, and the payloads of the pauses the run stopped for."""
    out = transcript(state["messages"])
    out.pending = [i.value for i in state.get("__interrupt__", ())]
    out.state = kept
    return out
