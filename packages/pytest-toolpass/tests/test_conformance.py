"""The suite itself: a correct adapter passes it, and broken ones fail it.

The "framework" here is the smallest agent loop there is: it calls each scripted tool
through ``toolpass.adapting.Guard`` and hands the result (or the refusal) back.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from toolpass import ToolRefused
from toolpass.adapting import Guard, refusal_text


class Run:
    """What the loop makes once per run: the key of the run's session."""


class MiniLoop:
    def __init__(self, guard: Guard, tools: KitTools, script: list[Call]) -> None:
        self.guard = guard
        self.tools = {f.__name__: f for f in tools.functions()}
        self.script = script

    def step(self, user: str | None, call: Call, run: Run) -> str:
        fn = self.tools[call.tool]
        try:
            user, key = self.guard.who(call.tool, call.arguments, {"user_id": user}, call, run=run)
            return str(
                self.guard.run(
                    user, call.tool, call.arguments, lambda: fn(**call.arguments), key=key
                )
            )
        except ToolRefused as refused:
            return refusal_text(refused)

    async def astep(self, user: str | None, call: Call, run: Run) -> str:
        fn = self.tools[call.tool]

        async def body() -> str:
            return fn(**call.arguments)

        try:
            user, key = self.guard.who(call.tool, call.arguments, {"user_id": user}, call, run=run)
            return str(await self.guard.arun(user, call.tool, call.arguments, body, key=key))
        except ToolRefused as refused:
            return refusal_text(refused)


class TestMiniLoop(AdapterConformance):
    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> MiniLoop:
        return MiniLoop(Guard(engine, rules, strict=strict, **options), tools, script)

    def run(self, agent: MiniLoop, user: str | None) -> Transcript:
        run = Run()
        return Transcript([agent.step(user, c, run) for c in agent.script], "done")

    async def arun(self, agent: MiniLoop, user: str | None) -> Transcript:
        run = Run()
        return Transcript([await agent.astep(user, c, run) for c in agent.script], "done")


@pytest.fixture(autouse=True)
def _ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


BROKEN = """
from pytest_toolpass import AdapterConformance, Transcript
from toolpass import ToolRefused
from toolpass.adapting import Guard, refusal_text
import pytest


class Loop:
    def __init__(self, guard, tools, script):
        self.guard, self.script = guard, script
        self.tools = {f.__name__: f for f in tools.functions()}


class TestBroken(AdapterConformance):
    async_run = False

    def build(self, engine, rules, *, strict, tools, script, **options):
        return Loop(Guard(engine, rules, strict=strict, **options), tools, script)

    def run(self, agent, user):
        outs = []
        for call in agent.script:
            fn = agent.tools[call.tool]
            %s
        return Transcript(outs, "done")
"""


def test_an_adapter_that_checks_nothing_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(BROKEN % "outs.append(fn(**call.arguments))  # no check at all")
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    # Only the override check, and the options check (the loop builds a Guard it never uses).
    result.assert_outcomes(passed=2, failed=33, skipped=33)


def test_an_adapter_that_hides_the_reason_fails(pytester: pytest.Pytester) -> None:
    body = """try:
                outs.append(agent.guard.run(user, call.tool, call.arguments,
                                            lambda: fn(**call.arguments)))
            except ToolRefused:
                outs.append("An error occurred.")  # the model never reads why"""
    pytester.makepyfile(BROKEN % body)
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7, failed=28, skipped=33)


#: A loop that checks every call and shows the model the refusal's text.
CHECKS = """try:
                outs.append(agent.guard.run(user, call.tool, call.arguments,
                                            lambda: fn(**call.arguments)))
            except ToolRefused as refused:
                outs.append(refusal_text(refused))"""


def test_an_override_marked_xfail_is_refused(pytester: pytest.Pytester) -> None:
    """An expected failure would let an adapter that fails a test pass for conformance."""
    source = (
        BROKEN % CHECKS
        + """
    @pytest.mark.xfail(reason="a known gap")
    def test_unknown_is_refused(self, mode):
        raise AssertionError("refuses nothing")
"""
    )
    pytester.makepyfile(source)
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*TestBroken overrides test_unknown_is_refused*"])


def test_the_skips_a_suite_allows_are_counted_with_their_reasons(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(BROKEN % CHECKS)  # no async run: each async case is a skip
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    skipped = result.parseoutcomes()["skipped"]
    result.stdout.fnmatch_lines(
        [
            f"*pytest-toolpass: {skipped} conformance tests skipped*",
            f"*{skipped:4d}  the framework has no async run",
        ]
    )


def test_overriding_or_skipping_a_test_fails(pytester: pytest.Pytester) -> None:
    source = (
        BROKEN % CHECKS
        + """
    def test_unknown_is_refused(self, mode):
        pass

    def test_no_user_refuses(self, mode):
        pytest.skip("inconvenient")
"""
    )
    pytester.makepyfile(source)
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    # It also keeps no session over a run: the session check fails too, and so do the two
    # provenance checks (what one call read is forgotten by the next) and the grant (the
    # application's session is never asked for), and so do the approval checks that need the
    # person's answer or the session to carry over from the pause to the run, and the task
    # scope, provenance="request", private data, record trust and planted-write checks
    # (each needs what one call read, or the session's request, at the next).
    result.assert_outcomes(passed=15, failed=20, skipped=33)
    result.stdout.fnmatch_lines(
        ["*TestBroken overrides test_no_user_refuses, test_unknown_is_refused*"]
    )
    result.stdout.fnmatch_lines(["*conformance tests may not be skipped (inconvenient)*"])


def test_an_approvals_variant_runs_only_the_tests_its_mode_changes(
    pytester: pytest.Pytester,
) -> None:
    """A class that is its parent's agent with only another approvals mode runs the tests
    where that mode matters; the rest are allowed skips, counted, run in the parent."""
    pytester.makepyfile(
        BROKEN % CHECKS
        + """

class TestVariant(TestBroken):
    approvals_variant = True
"""
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider", "-rs")
    parent = pytester.runpytest("-q", "-p", "no:cacheprovider", "-k", "not TestVariant")
    every = parent.parseoutcomes()
    both = result.parseoutcomes()
    ran_in_variant = (
        both["passed"] + both.get("failed", 0) - every["passed"] - every.get("failed", 0)
    )
    counted = re.search(r"(\d+)  runs in the parent class", result.stdout.str())
    assert counted is not None
    assert int(counted[1]) > ran_in_variant  # the tests no approvals mode changes
    assert ran_in_variant == 13  # the approval tests and those that run no agent


def test_an_approvals_variant_of_the_suite_itself_fails(pytester: pytest.Pytester) -> None:
    """A variant leaves tests to its parent: the suite's own class runs none."""
    pytester.makepyfile(
        """
from pytest_toolpass import AdapterConformance


class TestVariant(AdapterConformance):
    approvals_variant = True
"""
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == 0
    assert outcomes.get("skipped", 0) == 0
    assert outcomes["errors"] > 0  # each test's setup fails
    result.stdout.fnmatch_lines(
        ["*TestVariant is an approvals_variant of AdapterConformance, which does not run*"]
    )
