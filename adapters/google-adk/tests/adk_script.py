"""A scripted model on Google ADK's real loop (a ``BaseLlm``; ADK ships no fake), and helpers
to run an agent and read back what the model was given after each tool call."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, Iterable
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.events import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

APP = "toolpass-test"
_ids = itertools.count()


class ScriptedLlm(BaseLlm):
    """Makes ``calls`` (tool name, arguments), one per model turn, each after the previous
    call's response came back, then answers ``"done"``. A turn whose last content is not a
    function response (a new user message) starts over where the script stands."""

    model: str = "scripted"
    calls: list[tuple[str, dict[str, Any]]] = []
    parallel: bool = False
    made: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        if self.parallel and self.made == 0 and self.calls:
            self.made = len(self.calls)
            parts = [_call(name, args) for name, args in self.calls]
            yield LlmResponse(content=types.Content(role="model", parts=parts))
            return
        if self.made < len(self.calls):
            name, args = self.calls[self.made]
            self.made += 1
            yield LlmResponse(content=types.Content(role="model", parts=[_call(name, args)]))
            return
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))


def _call(name: str, args: dict[str, Any]) -> types.Part:
    return types.Part(
        function_call=types.FunctionCall(name=name, args=dict(args), id=f"call-{next(_ids)}")
    )


def scripted(calls: Iterable[tuple[str, dict[str, Any]]], parallel: bool = False) -> ScriptedLlm:
    return ScriptedLlm(calls=list(calls), parallel=parallel)


def message(text: str = "go") -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def runner_for(agent: Any, plugins: list[Any] | None = None) -> Runner:
    app = App(name=APP, root_agent=agent, plugins=plugins or [])
    return Runner(app=app, session_service=InMemorySessionService())


def run(
    runner: Runner,
    user: str,
    session_id: str | None = None,
    new_message: types.Content | None = None,
    state: dict[str, Any] | None = None,
) -> tuple[list[Event], str]:
    """A sync run (``runner.run``); the events and the session's id."""
    service = runner.session_service
    if session_id is None:
        session_id = asyncio.run(service.create_session(app_name=APP, user_id=user, state=state)).id
    events = list(
        runner.run(user_id=user, session_id=session_id, new_message=new_message or message())
    )
    return events, session_id


async def arun(
    runner: Runner,
    user: str,
    session_id: str | None = None,
    new_message: types.Content | None = None,
    state: dict[str, Any] | None = None,
) -> tuple[list[Event], str]:
    service = runner.session_service
    if session_id is None:
        session = await service.create_session(app_name=APP, user_id=user, state=state)
        session_id = session.id
    events = [
        e
        async for e in runner.run_async(
            user_id=user, session_id=session_id, new_message=new_message or message()
        )
    ]
    return events, session_id


def responses(events: list[Event]) -> list[dict[str, Any]]:
    """The function responses (what the model reads of each tool call), in order."""
    found = []
    for event in events:
        for response in event.get_function_responses():
            found.append(dict(response.response or {}))
    return found


def read_back(events: list[Event]) -> list[str]:
    """Each function response as text: its result, or its error."""
    out = []
    for r in responses(events):
        value = r.get("result", r.get("error", r))
        out.append(value if isinstance(value, str) else str(value))
    return out


def final(events: list[Event]) -> str:
    texts = [
        p.text
        for e in events
        if e.content and e.content.parts and e.is_final_response()
        for p in e.content.parts
        if p.text
    ]
    return texts[-1] if texts else ""


def agent_with(
    tools: list[Any], calls: Iterable[tuple[str, dict[str, Any]]], **kw: Any
) -> LlmAgent:
    return LlmAgent(name="ops", model=scripted(calls), tools=tools, **kw)
