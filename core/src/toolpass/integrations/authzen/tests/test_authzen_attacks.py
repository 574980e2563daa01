"""Attacks on the ``authzen`` connection through a fake decision point on 127.0.0.1: an
answer a reader could take two ways is unknown, never the allow one reader sees."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.authzen import DANA, ENGINE_TOKEN, FakePDP, populate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolpass import Toolpass
from toolpass.engine import literal

PLAN = "document:plan.md"


@pytest.fixture(scope="module")
def pdp() -> Iterator[FakePDP]:
    with FakePDP() as server:
        yield populate(server)


def conn(pdp: FakePDP) -> dict[str, Any]:
    return {
        "id": "policy",
        "integration": "authzen",
        "url": pdp.url,
        "token": literal(ENGINE_TOKEN),
        "identity": {"mode": "template", "template": "{email}", "domains": ["example.com"]},
    }


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.booleans(),
    last=st.booleans(),
    where=st.sampled_from(["top", "context"]),
)
def test_an_answer_that_repeats_a_key_is_unknown(
    pdp: FakePDP, first: bool, last: bool, where: str
) -> None:
    """``{"decision": false, "decision": true}``: Python keeps the last, other readers the
    first; whichever the decision point meant, toolpass cannot tell, so it is unknown (a
    repeated key anywhere in the answer, its context too, makes it one to distrust)."""
    flag = {True: "true", False: "false"}
    if where == "top":
        body = f'{{"decision": {flag[first]}, "decision": {flag[last]}}}'
    else:
        body = f'{{"decision": {flag[last]}, "context": {{"reason": "a", "reason": "b"}}}}'
    pdp.fail(200, body=body.encode(), headers={"Content-Type": "application/json"}, times=1)
    with Toolpass([conn(pdp)]) as tp:
        d = tp.check(DANA, "policy", "can_read", PLAN)
    assert d.decision == "unknown", d.reason
    assert "repeats a key" in d.reason
