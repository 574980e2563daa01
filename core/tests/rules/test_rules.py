"""Ready-made validators, alone and in the pipeline."""

from __future__ import annotations

import pytest
from toolpass import Session, Toolkit, ToolRefused
from toolpass.rules.validators import at_least, at_most, matches, max_length, one_of, path_under


def test_validators_accept_or_say_why() -> None:
    cases = [
        (at_most(10), [3, 10, 2.5], [11, "3", True]),
        (at_least(1), [1, 7], [0, -1, None]),
        (one_of("low", "high", 3), ["low", 3], ["mid", 3.0, True]),
        (max_length(3), ["abc", [1, 2]], ["abcd", 5]),
        (matches(r"[A-Z]+-\d+"), ["PAY-12"], ["pay-12", "PAY-12\n", 12]),
        (
            path_under("/srv/data"),
            ["a/b.txt", "/srv/data/x"],
            ["/etc/passwd", "../x", "a/../../x", "/srv/database", "a\\b", "", 3],
        ),
    ]
    for validator, good, bad in cases:
        for value in good:
            assert validator(value) is True
        for value in bad:
            with pytest.raises(ValueError, match="must"):
                validator(value)


def test_validators_in_the_pipeline_tell_the_model_why() -> None:
    kit = Toolkit(audit=[])

    @kit.secured_tool(validators={"amount": at_most(1000), "path": path_under("/srv")})
    def pay(amount: int, path: str) -> str:
        return "paid"

    with Session("dana@example.com").active():
        assert pay(10, "invoices/1.pdf") == "paid"
        with pytest.raises(ToolRefused) as info:
            pay(5000, "invoices/1.pdf")
    assert info.value.code == "invalid_arguments"
    assert "must be at most 1000" in info.value.message
