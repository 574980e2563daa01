"""Numeric validators: only finite numbers pass, compared exactly, never through a float."""

from __future__ import annotations

import numbers
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolpass import Session, Toolkit, ToolRefused
from toolpass.rules.validators import at_least, at_most, max_length


class FloatScalar(float):
    """A float subclass, as numpy's ``float64`` is."""


class WrappedReal:
    """A ``numbers.Real`` that is not a float (as numpy's ``float32`` is)."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __float__(self) -> float:
        return self.value

    def __gt__(self, other: Any) -> bool:
        return self.value > other

    def __lt__(self, other: Any) -> bool:
        return self.value < other


numbers.Real.register(WrappedReal)

NON_FINITE = [float("nan"), float("inf"), float("-inf"), -float("nan")]
non_finite = st.one_of(
    st.sampled_from(NON_FINITE),
    st.sampled_from(NON_FINITE).map(FloatScalar),
    st.sampled_from(NON_FINITE).map(WrappedReal),
    st.sampled_from(["NaN", "-NaN", "sNaN", "Infinity", "-Infinity", "inf"]).map(Decimal),
)
finite_limits = st.one_of(
    st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6), st.decimals(-(10**6), 10**6, places=3)
)
finite_values = st.one_of(
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.fractions(),
)


@given(value=non_finite, limit=finite_limits)
def test_nan_and_infinities_never_pass_a_numeric_validator(value: Any, limit: Any) -> None:
    for validator in (at_most(limit), at_least(limit)):
        with pytest.raises(ValueError, match="must be a finite number"):
            validator(value)


@given(value=finite_values, limit=finite_limits)
def test_finite_numbers_are_compared_exactly(value: Any, limit: Any) -> None:
    assert _passes(at_most(limit), value) == (value <= limit)
    assert _passes(at_least(limit), value) == (value >= limit)


def _passes(validator: Any, value: Any) -> bool:
    try:
        return bool(validator(value))
    except ValueError as e:
        if "must be at" not in str(e):
            raise
        return False


@pytest.mark.parametrize(
    ("value", "passes"),
    [
        (10**400, False),  # too big for a float: compared as an int, not an OverflowError
        (-(10**400), True),
        (Decimal("1000.0000000000000000001"), False),  # a float would round it to 1000.0
        (Fraction(2001, 2), False),
        (FloatScalar(999.5), True),
        (WrappedReal(1000.5), False),
    ],
)
def test_numbers_of_every_kind_are_compared_as_they_are(value: Any, passes: bool) -> None:
    assert _passes(at_most(1000), value) == passes


@pytest.mark.parametrize("limit", [float("nan"), float("inf"), Decimal("NaN"), "10", True])
def test_a_limit_that_is_not_a_finite_number_fails_at_decoration(limit: Any) -> None:
    with pytest.raises(ValueError, match="a numeric limit must be a"):
        at_most(limit)
    with pytest.raises(ValueError, match="a numeric limit must be a"):
        at_least(limit)


def test_nan_is_refused_in_the_pipeline_with_a_sentence_the_model_can_act_on() -> None:
    paid: list[Any] = []

    @Toolkit(audit=[]).secured_tool(validators={"amount": at_most(1000)})
    def pay(amount: float) -> str:
        paid.append(amount)
        return "paid"

    with Session("dana@example.com").active():
        for value in (float("nan"), float("inf")):
            with pytest.raises(ToolRefused) as info:
                pay(value)
            assert info.value.code == "invalid_arguments"
            assert "must be a finite number" in info.value.message
        assert pay(999.5) == "paid"
    assert paid == [999.5]


@pytest.mark.parametrize("limit", [float("inf"), float("nan"), 2.5, -1, True, "3"])
def test_a_length_limit_that_is_not_a_whole_number_fails_at_decoration(limit: Any) -> None:
    with pytest.raises(ValueError, match="a length limit must be a whole number"):
        max_length(limit)
