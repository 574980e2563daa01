"""``Session(user, **attributes)`` keeps other keywords as the application's own attributes;
a keyword that reads as a restriction (which tools or effects, how many calls, what is
denied) but is not one of ``Session``'s would be kept and restrict nothing, so the session
would allow every tool and effect. Such a name must be refused, whatever its spelling, as
``allowed_tools`` already is."""

from __future__ import annotations

import pytest
from toolpass import Session

USER = "dana@example.com"
FIX = (
    "session.py _check_attribute_names: compare names case-folded without '_' / case "
    "boundaries, and refuse any name one of whose words is a restriction's (tool, effect, "
    "limit, allow, deny, block, permit, trust, grant, max, rate, quota)"
)

#: Names an application may write meaning a restriction (none is Session's own keyword).
RESTRICTIONS = [
    "tools",
    "effects",
    "allowed",
    "allowlist",
    "permitted_tools",
    "tool_allowlist",
    "ALLOW_EFFECTS",
    "deny_tools",
    "blocked_tools",
    "rate_limits",
    "max_calls",
    "call_limits",
    "trusted_values",
]


@pytest.mark.xfail(strict=True, reason=f"a hole in core's toolkit, not fixed here: {FIX}")
@pytest.mark.parametrize("name", RESTRICTIONS)
def test_a_restriction_under_another_name_is_refused_not_kept(name: str) -> None:
    with pytest.raises(TypeError, match="unexpected keyword"):
        Session(USER, **{name: ["read"]})


@pytest.mark.parametrize("name", ["allowed_tools", "allowed_effects", "limit", "session_id"])
def test_a_misspelled_keyword_is_refused(name: str) -> None:
    with pytest.raises(TypeError, match="unexpected keyword"):
        Session(USER, **{name: ["read"]})


@pytest.mark.parametrize("name", ["tenant", "team", "locale", "roles"])
def test_the_applications_own_attributes_are_kept(name: str) -> None:
    assert Session(USER, **{name: "x"}).attributes == {name: "x"}
