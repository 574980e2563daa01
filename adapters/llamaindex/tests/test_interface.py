"""The adapter interface through LlamaIndex's real loop: ``session=`` (a workflow ``Context``
passed to several runs keeps its session), and options, rules and tools checked when the
guard is made, or when it wraps tools or is applied to an agent, not when a call arrives."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.workflow import Context
from llamaindex_script import FRAMEWORK_WARNINGS, read_back, scripted
from pytest_toolpass import ScriptedEngine
from toolpass import Decision, Toolkit, ToolRefused
from toolpass.llamaindex import CONVERSATION_KEY, Rule, ToolpassAuthorization

pytestmark = FRAMEWORK_WARNINGS

DANA, ERIN = "dana@example.com", "erin@example.com"
DELETE = Rule("jira-main", "DELETE_ISSUES", "issue:{key}")
MAY_DELETE = {
    (u, "DELETE_ISSUES", f"issue:PAY-{n}"): Decision.allow() for u in (DANA, ERIN) for n in range(5)
}


def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


def whoami() -> str:
    """Who this call acts for."""
    return "someone"


def chat(n: int = 0, **options: Any) -> FunctionAgent:
    """An agent that deletes PAY-<n> once per run, with a limit of one delete per session."""
    kit = Toolkit(limits={"tool:delete_issue": 1}, audit=[])
    guard = ToolpassAuthorization(
        ScriptedEngine(MAY_DELETE), {"delete_issue": DELETE}, toolkit=kit, **options
    )
    agent = FunctionAgent(
        tools=[delete_issue, whoami], llm=scripted([("delete_issue", {"key": f"PAY-{n}"})])
    )
    return guard.apply(agent)


async def said(agent: FunctionAgent, ctx: Context[Any]) -> str:
    await agent.run("go", ctx=ctx)
    return (await read_back(ctx))[-1]


async def new_context(agent: FunctionAgent, user: str) -> Context[Any]:
    ctx: Context[Any] = Context(agent)
    await ctx.store.set("user_id", user)
    return ctx


def test_a_context_passed_to_two_runs_is_one_conversation() -> None:
    """The conversation is the workflow Context: a chat continued by passing the same one
    again keeps its limits and taint; a new Context starts afresh."""

    async def go() -> None:
        agent = chat()
        ctx = await new_context(agent, DANA)
        assert await said(agent, ctx) == "deleted PAY-0"
        assert "limit_exceeded" in await said(agent, ctx)
        conversation = await ctx.store.get(CONVERSATION_KEY)
        assert isinstance(conversation, str)
        assert conversation
        restored = Context.from_dict(agent, ctx.to_dict())  # a chat saved and loaded later
        assert "limit_exceeded" in await said(agent, restored)
        fresh = await new_context(agent, DANA)
        assert await said(agent, fresh) == "deleted PAY-0"
        other = await new_context(agent, ERIN)  # another user: their own session
        await other.store.set(CONVERSATION_KEY, conversation)
        assert await said(agent, other) == "deleted PAY-0"

    asyncio.run(go())


def test_session_run_starts_afresh_at_every_run() -> None:
    async def go() -> None:
        agent = chat(session="run")
        ctx = await new_context(agent, DANA)
        assert await said(agent, ctx) == "deleted PAY-0"
        assert await said(agent, ctx) == "deleted PAY-0"

    asyncio.run(go())


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_session_callable_is_given_the_context(kind: str) -> None:
    async def desk(ctx: Context[Any]) -> str:
        return f"desk-{await ctx.store.get('user_id')}"

    def sync_desk(ctx: Context[Any]) -> str:
        assert isinstance(ctx, Context)
        return "desk-dana"

    async def go() -> None:
        agent = chat(session=desk if kind == "async" else sync_desk)
        assert await said(agent, await new_context(agent, DANA)) == "deleted PAY-0"
        again = await new_context(agent, DANA)  # a new Context, the same desk
        assert "limit_exceeded" in await said(agent, again)

    asyncio.run(go())


@pytest.mark.parametrize("kind", ["key", "path", "sync", "async"])
def test_the_user_is_a_store_key_a_path_or_a_callable(kind: str) -> None:
    async def from_state(ctx: Context[Any]) -> Any:
        return (await ctx.store.get("state"))["user"]

    user: Any = {
        "key": "account",
        "path": "state.user",
        "sync": lambda ctx: DANA if isinstance(ctx, Context) else None,
        "async": from_state,
    }[kind]

    async def go() -> None:
        engine = ScriptedEngine(MAY_DELETE)
        guard = ToolpassAuthorization(engine, {"delete_issue": DELETE}, user=user)
        agent = guard.apply(
            FunctionAgent(
                tools=[delete_issue],
                llm=scripted([("delete_issue", {"key": "PAY-1"})]),
                initial_state={"user": DANA},
            )
        )
        ctx: Context[Any] = Context(agent)
        await ctx.store.set("account", DANA)
        assert await said(agent, ctx) == "deleted PAY-1"
        assert engine.asked == [(DANA, "jira-main", "DELETE_ISSUES", "issue:PAY-1")]

    asyncio.run(go())


def test_on_refuse_none_ends_the_run() -> None:
    async def go() -> None:
        agent = chat(on_refuse=None)
        await agent.run("go", ctx=await new_context(agent, "nobody@example.com"))

    with pytest.raises(ToolRefused) as refused:
        asyncio.run(go())
    assert refused.value.code == "not_authorized"


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"engine": None}, TypeError, "permission engine"),
        ({"rules": {"delete_issue": Rule("jira", "X", "issue:{key.id}")}}, ValueError, "plain"),
        ({"rules": {"delete_issue": ("jira", "X")}}, TypeError, "a rule is"),
        ({"session": "thread"}, TypeError, "session"),
        ({"user": 42}, TypeError, "user"),
        ({"on_refuse": 3}, TypeError, "on_refuse"),
        ({"approvals": "ask"}, TypeError, "approvals"),
        ({"sesion": "run"}, TypeError, "sesion"),
    ],
)
def test_a_bad_option_is_an_error_when_built(
    options: dict[str, Any], error: type, match: str
) -> None:
    options = {"engine": ScriptedEngine(), "rules": {"delete_issue": DELETE}, **options}
    with pytest.raises(error, match=match):
        ToolpassAuthorization(**options)


def test_wrap_checks_the_rules_against_the_tools() -> None:
    guard = ToolpassAuthorization(ScriptedEngine(), {"delete_isue": DELETE})
    with pytest.raises(ValueError, match="tools the agent does not have: delete_isue"):
        guard.wrap([delete_issue, whoami])
    wrong = Rule("jira-main", "DELETE_ISSUES", "issue:{issue}")
    guard = ToolpassAuthorization(ScriptedEngine(), {"delete_issue": wrong})
    with pytest.raises(ValueError, match="names issue, which the tool does not take"):
        guard.wrap([delete_issue])
    guard = ToolpassAuthorization(ScriptedEngine(), {"delete_issue": DELETE})
    guard.wrap([whoami], complete=False)  # some of the agent's tools: the rest come later
    guard.wrap([delete_issue], complete=False)
    assert guard.explain().unchecked == ["whoami"]
    assert "delete_issue  jira-main DELETE_ISSUES issue:{key}" in str(guard.explain())


def test_apply_checks_the_rules_against_the_agents_tools() -> None:
    agent = FunctionAgent(tools=[delete_issue, whoami], llm=scripted([]))
    with pytest.raises(ValueError, match="tools the agent does not have: delete_isue"):
        ToolpassAuthorization(ScriptedEngine(), {"delete_isue": DELETE}).apply(agent)
    other = FunctionAgent(name="b", description="B.", tools=[whoami], llm=scripted([]))
    first = FunctionAgent(name="a", description="A.", tools=[delete_issue], llm=scripted([]))
    workflow = AgentWorkflow(agents=[first, other], root_agent="a")
    guard = ToolpassAuthorization(ScriptedEngine(), {"delete_issue": DELETE})
    assert guard.apply(workflow) is workflow
    assert guard.explain().unchecked == ["whoami"]


def test_apply_takes_only_an_agent_or_a_workflow() -> None:
    guard = ToolpassAuthorization(ScriptedEngine())
    with pytest.raises(TypeError, match="AgentWorkflow"):
        guard.apply(object())  # type: ignore[type-var]
