"""The conformance suite every adapter passes, through ``create_agent``'s real loop."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from scripted_langchain import Context, scripted, transcript
from toolpass.langchain import ToolpassMiddleware


class TestLangChainConformance(AdapterConformance):
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
        )

    def run(self, agent: Any, user: str | None) -> Transcript:
        state = agent.invoke({"messages": [HumanMessage("go")]}, context=Context(user_id=user))
        return transcript(state["messages"])

    async def arun(self, agent: Any, user: str | None) -> Transcript:
        state = await agent.ainvoke(
            {"messages": [HumanMessage("go")]}, context=Context(user_id=user)
        )
        return transcript(state["messages"])
