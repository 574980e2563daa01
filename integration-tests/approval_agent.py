"""Process A of test_approvals_two_processes.py: a LangChain agent (its real loop, a scripted
model) whose deploy needs a person. The run pauses with ``interrupt()``; the process then
waits on the queue (``queue.wait``: no polling here) while a person decides in another
process sharing the SQLite store, and resumes the run once with ``Command(resume=...)``.

    python approval_agent.py <store.db> <webhook url> <audit.jsonl> <ran.txt>

(run with LANGSMITH_TRACING=false: no trace leaves for LangSmith)
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from toolpass import ApprovalQueue, JsonlSink, Toolkit, WebhookNotifier
from toolpass.langchain import ToolpassMiddleware
from toolpass.testing import ScriptedEngine

USER = "dana@example.com"
SECRET = "whsec-two-processes"
store, webhook, audit, ran = sys.argv[1:5]


class ScriptedChat(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        return self


@dataclass
class Context:
    user_id: str


queue = ApprovalQueue(store=f"sqlite:///{store}")
notifier = WebhookNotifier(webhook, SECRET, page_url="http://127.0.0.1:8080/approvals")
queue.on_request(notifier)
kit = Toolkit(approver=queue, audit=[JsonlSink(audit)])


@kit.secured_tool(effect="write", approve=True)
def deploy(service: str, version: str) -> str:
    """Deploy a version of a service to production."""
    with open(ran, "a") as f:
        f.write(f"{service} {version}\n")
    return f"deployed {service} {version}"


call = {"name": "deploy", "args": {"service": "payments-api", "version": "2.4.1"}, "id": "c0"}
model = ScriptedChat(messages=iter([AIMessage("", tool_calls=[call]), "done"]))
guard = ToolpassMiddleware(ScriptedEngine({}), toolkit=kit, session=lambda _: "ticket-PAY-7")
agent: Any = create_agent(
    model, tools=[deploy], middleware=[guard], context_schema=Context, checkpointer=InMemorySaver()
)
thread = {"configurable": {"thread_id": "t1"}}

state = agent.invoke({"messages": [HumanMessage("Ship it")]}, thread, context=Context(USER))
[pause] = state["__interrupt__"]
request_id = pause.value["request_id"]
print(json.dumps({"paused": request_id}), flush=True)

decided = queue.wait(request_id, timeout=120).status  # the person decides, in any process
decision = {"approved": "approve", "denied": "deny"}.get(decided, "expired")
resume = Command(resume={"decision": decision, "request_id": request_id, "by": "the page"})
state = agent.invoke(resume, thread, context=Context(USER))
notifier.flush(10)
read = [str(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]
print(json.dumps({"status": decided, "read": read, "final": state["messages"][-1].content}))
