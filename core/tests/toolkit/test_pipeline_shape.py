"""The pipeline's shape as its readers meet it: its docstring lists ``CHECKS`` as they are,
checks go by name (no "2b"), and every step a check yields is one named, slotted type."""

from __future__ import annotations

import re
from typing import Any

from toolpass import Decision, Session, Toolkit
from toolpass.toolkit import checks, pipeline
from toolpass.toolkit.drivers import Step
from toolpass.toolkit.pipeline import CHECKS, steps


def test_the_pipeline_docstring_names_every_check_in_order() -> None:
    assert pipeline.__doc__ is not None
    listed = re.search(r"``toolkit\.checks``: ([^)]*)\)", pipeline.__doc__)
    assert listed is not None
    named = [n.strip() for n in " ".join(listed.group(1).split()).split(",")]
    assert named == [check.__name__ for check in CHECKS]


def test_checks_go_by_name_not_number() -> None:
    numbered = re.compile(r"^\s*\d+[a-z]?\.\s")
    documented = [*CHECKS, checks.credential, pipeline._body]
    assert [f.__name__ for f in documented if numbered.match(f.__doc__ or "")] == []
    assert re.search(r"\b\d[ab]\b", checks.__doc__ or "") is None


def test_every_step_is_one_named_slotted_type() -> None:
    """A tool that needs the driver at every turn (a validator, an authorizer, an approver,
    a credential, its body): each step yielded is a ``Step``, with no per-instance dict."""
    kit = Toolkit(audit=[], approver=lambda request: True, credentials=lambda name: "s3cret")

    @kit.secured_tool(
        effect="write",
        validators={"key": str.strip},
        authorize=lambda call: Decision.allow(),
        approve=True,
        credential="jira",
    )
    def close(key: str, *, credential: str) -> str:
        return key

    spec = close.__toolpass__  # type: ignore[attr-defined]
    seen: list[Any] = []
    gen = steps(spec, (), {"key": "PAY-1"})

    def watched() -> Any:
        value: Any = None
        while True:
            try:
                step = gen.send(value)
            except StopIteration as stop:
                return stop.value
            seen.append(step)
            value = step.fn(*step.args, **step.kwargs)

    with Session("dana@example.com").active():
        assert watched() == "PAY-1"
    assert len(seen) == 5  # validator, authorizer, approver, credential, body
    assert {type(s) for s in seen} == {Step}
    assert not hasattr(seen[0], "__dict__")
