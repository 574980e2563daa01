"""toolpass.testing's ScriptedEngine: the offline engine of the examples and the tests, used
through the same paths as the real one (permission_check, guarded, an adapter's Guard)."""

from __future__ import annotations

import asyncio

import pytest
from toolpass import (
    Decision,
    PermissionDenied,
    Session,
    Toolkit,
    ToolRefused,
    guarded,
    permission_check,
)
from toolpass.testing import ScriptedEngine

DANA = "dana@example.com"


def test_answers_from_its_table_and_denies_what_is_not_listed() -> None:
    engine = ScriptedEngine(
        {
            (DANA, "pr.create", "repo:acme/a"): "allow",
            (DANA, "pr.create", "repo:acme/b"): Decision.deny("read only"),
            (DANA, "pr.create", "repo:acme/c"): "unknown",
            (DANA, "github", "pr.merge", "repo:acme/a"): True,
        }
    )
    assert engine.check(DANA, "github", "pr.create", "repo:acme/a").allowed
    assert engine.check(DANA, "github", "pr.create", "repo:acme/b").reason == "read only"
    assert engine.check(DANA, "github", "pr.create", "repo:acme/c").decision == "unknown"
    assert engine.allowed(DANA, "github", "pr.merge", "repo:acme/a")
    assert not engine.allowed(DANA, "gitlab", "pr.merge", "repo:acme/a")  # another connection
    other = engine.check("erin@example.com", "github", "pr.create", "repo:acme/a")
    assert (other.decision, other.reason) == ("deny", "not granted")
    with pytest.raises(PermissionDenied):
        engine.require(DANA, "github", "pr.create", "repo:acme/c")
    assert asyncio.run(engine.acheck(DANA, "github", "pr.create", "repo:acme/a")).allowed
    assert engine.asked[0] == (DANA, "github", "pr.create", "repo:acme/a")
    assert len(engine.asked) == 8


def test_an_exception_in_the_table_is_raised_and_the_pipeline_refuses() -> None:
    engine = ScriptedEngine({(DANA, "pr.create", "repo:acme/a"): RuntimeError("engine down")})
    kit = Toolkit(audit=[])

    @kit.secured_tool(authorize=permission_check(engine, "github", "pr.create", "repo:{repo}"))
    def open_pr(repo: str) -> str:
        return "opened"

    with Session(DANA).active(), pytest.raises(ToolRefused) as refused:
        open_pr("acme/a")
    assert refused.value.code in ("authorization_error", "check_error")


def test_it_drives_permission_check_and_guarded() -> None:
    engine = ScriptedEngine({(DANA, "pr.create", "repo:acme/a"): "allow"})
    kit = Toolkit(audit=[])

    @kit.secured_tool(authorize=permission_check(engine, "github", "pr.create", "repo:{repo}"))
    def open_pr(repo: str) -> str:
        return f"opened on {repo}"

    with Session(DANA).active():
        assert open_pr("acme/a") == "opened on acme/a"
        with pytest.raises(ToolRefused) as refused:
            open_pr("acme/b")
    assert refused.value.code == "not_authorized"

    @guarded(engine, "github", "pr.create", "repo:{repo}", user=DANA)
    def merge(repo: str) -> str:
        return "merged"

    assert merge("acme/a") == "merged"
    with pytest.raises(PermissionDenied):
        merge("acme/b")


@pytest.mark.parametrize(
    "answers",
    [{("dana", "x"): "allow"}, {(DANA, "a", "r"): "maybe"}, {(DANA, "a", "r"): 1}],
)
def test_a_table_that_is_not_one_is_refused_when_made(
    answers: dict[tuple[str, ...], object],
) -> None:
    with pytest.raises(TypeError, match=r"ScriptedEngine key|the answer for"):
        ScriptedEngine(answers)


def test_the_old_pytest_toolpass_name_is_the_same_class() -> None:
    pytest.importorskip("pytest_toolpass")
    from pytest_toolpass import ScriptedEngine as Old
    from pytest_toolpass.engine import ScriptedEngine as OlderPath

    assert Old is OlderPath is ScriptedEngine
