"""The one GraphQL reader GitHub and Linear share (``integrations/_graphql.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolpass.integrations._graphql import Fields, Unreadable, operation, resolve
from toolpass.integrations.routes import Request


def graphql(query: str, **more: Any) -> Request:
    body = json.dumps({"query": query, **more}).encode()
    return Request("POST", "/graphql", "", {"content-type": "application/json"}, body)


def test_an_operation_is_read_with_its_fragments_aliases_and_variables() -> None:
    query = """
        query Mine($owner: String!) {
          mine: repository(owner: $owner, name: "widgets") { ...Bits }
        }
        fragment Bits on Repository { name issues(first: 2) { nodes { title } } }
    """
    found = operation(graphql(query, variables={"owner": "acme"}, operationName="Mine"))
    assert found is not None
    assert found.kind == "query"
    [(name, args, children)] = Fields(found.fragments).fields(found.roots)
    assert name == "repository"  # the field, never its alias
    assert resolve(args, found.variables) == {"owner": "acme", "name": "widgets"}
    assert [f[0] for f in Fields(found.fragments).fields(children)] == ["name", "issues"]


@pytest.mark.parametrize(
    ("query", "more"),
    [
        ("{ repository(owner: ", {}),  # cut short
        ("query A { a } query B { b }", {}),  # two operations, none chosen
        ("query A { a }", {"operationName": "B"}),  # the chosen one is not there
        ("{ a }", {"variables": "not json"}),
        ("{ a(x: 1, x: 2) }", {}),  # an argument given twice
    ],
)
def test_a_request_naming_no_one_readable_operation_has_none(
    query: str, more: dict[str, Any]
) -> None:
    assert operation(graphql(query, **more)) is None


def test_a_fragment_that_spreads_itself_is_unreadable() -> None:
    found = operation(graphql("{ ...A } fragment A on Query { ...A }"))
    assert found is not None
    with pytest.raises(Unreadable, match="spreads itself"):
        Fields(found.fragments).fields(found.roots)


def test_fragments_multiplying_fields_past_the_budget_are_unreadable() -> None:
    fragments = "".join(
        f"fragment F{n} on Query {{ {' '.join([f'...F{n + 1}'] * 8)} }}" for n in range(6)
    )
    found = operation(graphql("{ ...F0 } " + fragments + " fragment F6 on Query { a }"))
    assert found is not None
    with pytest.raises(Unreadable, match="too many fields"):
        Fields(found.fragments).fields(found.roots)


@given(st.text(max_size=200))
def test_any_text_is_read_or_refused_never_raised(text: str) -> None:
    found = operation(graphql(text))
    assert found is None or found.kind in ("query", "mutation", "subscription")
