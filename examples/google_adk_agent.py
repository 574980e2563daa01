"""The helpdesk story (examples/helpdesk.py) through Google ADK's real loop, offline.

An ``LlmAgent`` on a scripted model (a ``BaseLlm``; ADK ships no fake; no API key), guarded
by ``ToolpassCallbacks``; the user is the runner's ``user_id``, the conversation the session
callable's. Needs ``pip install ./core ./adapters/google-adk`` (or, once published,
``pip install toolpass-google-adk``).

    python examples/google_adk_agent.py
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncGenerator
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from helpdesk import CONVERSATION, RULES, TOOLS, USER, Script, engine, kit, main
from pydantic import Field
from toolpass.google_adk import ToolpassCallbacks


class ScriptedModel(BaseLlm):
    """Makes the script's calls one per turn, then answers "done"."""

    model: str = "scripted"
    script: list[Any] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        made = sum(
            1
            for c in llm_request.contents
            for p in c.parts or ()
            if p.function_response and p.function_response.name != "adk_request_confirmation"
        )
        if made < len(self.script):
            name, args = self.script[made]
            call = types.FunctionCall(name=name, args=dict(args), id=f"call-{made}")
            part = types.Part(function_call=call)
        else:
            part = types.Part(text="done")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


logging.getLogger("google_adk").setLevel(logging.ERROR)  # no telemetry notes on stderr
callbacks = ToolpassCallbacks(engine, RULES, toolkit=kit, session=lambda _: CONVERSATION)
model = ScriptedModel()
runner = Runner(
    app=App(
        name="helpdesk",
        root_agent=callbacks.apply(LlmAgent(name="helpdesk", model=model, tools=TOOLS)),
    ),
    session_service=InMemorySessionService(),
)
#: The ADK session of the conversation, and the confirmation the run paused on, if it did.
state: dict[str, Any] = {}
CONFIRM = "adk_request_confirmation"


def run(script: Script) -> list[str]:
    """The first run; the second, once a person has approved, answers the confirmation the
    first paused on: a call waiting for approval asks through ADK's tool confirmation."""
    if "session" not in state:
        session = asyncio.run(
            runner.session_service.create_session(app_name="helpdesk", user_id=USER)
        )
        state["session"] = session.id
    if ask := state.pop("asked", None):  # the person's answer is in the queue already
        answer = types.FunctionResponse(name=CONFIRM, id=ask.id, response={"confirmed": True})
        message = types.Content(role="user", parts=[types.Part(function_response=answer)])
    else:
        model.script = script
        message = types.Content(role="user", parts=[types.Part(text="Tidy up PAY")])

    async def go() -> list[Any]:
        turn = runner.run_async(user_id=USER, session_id=state["session"], new_message=message)
        return [e async for e in turn]

    events = asyncio.run(go())
    replies = [
        r.response or {} for e in events for r in e.get_function_responses() if r.name != CONFIRM
    ]
    read = [str(r.get("result", r.get("error", r))) for r in replies]
    asked = [c for e in events for c in e.get_function_calls() if c.name == CONFIRM]
    if asked:
        state["asked"] = asked[0]
        payload = asked[0].args["toolConfirmation"]["payload"]
        read[-1] += f"\n(the run pauses for ADK's tool confirmation of {payload['request_id']})"
    else:
        assert events[-1].content.parts[0].text == "done"
    return read


if __name__ == "__main__":
    main("Google ADK", run)
