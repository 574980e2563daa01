"""An adapter's ``Guard`` in observe mode, through the conformance suite's reference loop
(``MiniLoop``): the suite's tools, its scripted engine and its rule. The refused call runs,
the model reads its output, and the audit event says what would have been refused; a rule's
``mode="enforce"`` keeps its tool enforced in an observing guard."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pytest_toolpass import Call, KitTools
from pytest_toolpass.conformance import DELETE, ERIN
from test_conformance import MiniLoop, Run
from toolpass import Decision, Toolkit
from toolpass.adapting import Guard, Rule
from toolpass.testing import ScriptedEngine

SCRIPT = [Call("delete_issue", {"key": "PAY-1"}), Call("read_file", {"path": "a.md"})]


def loop(rules: dict[str, Any], events: list[Any], **options: Any) -> tuple[MiniLoop, KitTools]:
    engine = ScriptedEngine(
        {(ERIN, "DELETE_ISSUES", "issue:PAY-1"): Decision.deny("erin lacks Delete Issues")}
    )
    tools = KitTools()
    kit = Toolkit(audit=events.append)
    return MiniLoop(Guard(engine, rules, toolkit=kit, **options), tools, SCRIPT), tools


def outputs(agent: MiniLoop, driver: str) -> list[str]:
    run = Run()
    if driver == "sync":
        return [agent.step(ERIN, call, run) for call in agent.script]

    async def go() -> list[str]:
        return [await agent.astep(ERIN, call, run) for call in agent.script]

    return asyncio.run(go())


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_an_observing_guard_runs_the_refused_call(driver: str) -> None:
    events: list[Any] = []
    agent, tools = loop({"delete_issue": DELETE}, events, mode="observe")
    out = outputs(agent, driver)
    assert tools.names() == ["delete_issue", "read_file"]
    assert out[0] == "deleted PAY-1"
    deleted = events[0]
    assert deleted.outcome == "ok"
    assert [w["code"] for w in deleted.would_refuse] == ["not_authorized"]
    assert "erin lacks Delete Issues" in deleted.would_refuse[0]["message"]
    assert deleted.authorization == ("deny", "erin lacks Delete Issues")
    assert events[1].would_refuse == ()  # read_file has no rule: nothing to refuse


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_rules_enforce_wins_in_an_observing_guard(driver: str) -> None:
    events: list[Any] = []
    rule = Rule(DELETE.connection, DELETE.action, DELETE.resource, mode="enforce")
    agent, tools = loop({"delete_issue": rule}, events, mode="observe")
    out = outputs(agent, driver)
    assert tools.names() == ["read_file"]
    assert "not_authorized" in out[0]
    assert events[0].code == "not_authorized"


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_rules_observe_in_an_enforcing_guard(driver: str) -> None:
    events: list[Any] = []
    rule = Rule(DELETE.connection, DELETE.action, DELETE.resource, mode="observe")
    agent, tools = loop({"delete_issue": rule}, events, strict=True)
    out = outputs(agent, driver)
    assert tools.names() == ["delete_issue"]  # read_file has no rule: strict refuses it
    assert out[0] == "deleted PAY-1"
    assert "not_configured" in out[1]
    assert [w["code"] for w in events[0].would_refuse] == ["not_authorized"]
