"""The suite's rule for property tests (core/conftest.py): a test whose filters or
``assume`` calls reject most of what Hypothesis generates fails, though Hypothesis alone
passes it as long as one input got through (and its health check looks only at the
first few dozen)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

PROPERTIES = """
from hypothesis import assume, given, strategies as st

@given(st.integers(0, 10**6).filter(lambda n: n % 20 < 3))
def test_a_filter_that_rejects_most(n):
    assert n % 20 < 3

@given(st.integers(0, 10**6))
def test_an_assumption_that_rejects_most(n):
    assume(n % 20 < 7)

@given(st.integers(0, 10**6).filter(lambda n: n % 4))
def test_a_filter_that_accepts_most(n):
    assume(n % 3)

@given(st.booleans())
def test_a_small_space_exhausted(flag):
    assert flag in (True, False)
"""


def test_a_property_test_that_rejects_most_inputs_fails(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_properties=PROPERTIES)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=2, failed=2)
    failed = [line for line in result.outlines if line.startswith("FAILED")]
    assert {line.split()[1] for line in failed} == {
        "test_properties.py::test_a_filter_that_rejects_most",
        "test_properties.py::test_an_assumption_that_rejects_most",
    }
    # Each fails for the rule's reason (a report may repeat it, or cut its summary line).
    assert str(result.stdout).count("AssertionError: the property test accepted") >= 2
