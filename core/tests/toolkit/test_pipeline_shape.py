"""The pipeline's shape as its readers meet it: its docstring lists ``CHECKS`` as they are,
checks go by name (no "2b"), and every step a check yields is one named, slotted type."""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolpass import Decision, Session, Toolkit
from toolpass.adapting import Traits
from toolpass.toolkit import checks, pipeline
from toolpass.toolkit.drivers import Step
from toolpass.toolkit.pipeline import CHECKS, steps
from toolpass.toolkit.settings import ToolOptions
from toolpass.toolkit.spec import Declared, ToolSpec
from toolpass.toolkit.toolkit import _secure


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


# Tool options, written once: ``ToolOptions`` (the keywords) -> ``Declared`` (their values and
# defaults) -> ``ToolSpec`` (which is one); an adapter's ``Traits`` are ``Declared`` options.

DECORATOR_ONLY = {"name", "on_refuse", "as_tool", "on_untrusted_input"}
ADAPTER_ONLY = {"fences", "checked_elsewhere", "framework", "default_mode", "approval_wait"}


def test_tool_options_are_written_once() -> None:
    declared = {f.name for f in dataclasses.fields(Declared)}
    assert set(ToolOptions.__optional_keys__) == (declared - ADAPTER_ONLY) | DECORATOR_ONLY
    traits = {f.name for f in dataclasses.fields(Traits)} - {"rule"}
    assert traits <= declared & ToolOptions.__optional_keys__
    # Neither the decorator nor the spec lists the options again.
    assert [p.kind for p in inspect.signature(_secure).parameters.values()][-1] is (
        inspect.Parameter.VAR_KEYWORD
    )
    assert len(inspect.signature(_secure).parameters) == 3
    assert list(inspect.signature(ToolSpec.__init__).parameters) == [
        "self",
        "fn",
        "declared",
        "toolkit",
        "name",
        "binder",
        "key",
    ]


def test_an_unknown_option_is_refused_as_python_would() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'efect'"):
        Toolkit(audit=[]).secured_tool(efect="read")(lambda: None)  # type: ignore[call-overload]


@given(
    effect=st.sampled_from([None, "read", "write", "destructive"]),
    flags=st.fixed_dictionaries(
        {name: st.booleans() for name in ("reads_private", "untrusted_output", "sends_out")}
    ),
    fields=st.lists(st.sampled_from(["body", "title", "url"]), unique=True, max_size=2),
    destinations=st.lists(st.sampled_from(["to", "url"]), unique=True, max_size=2),
    provenance=st.sampled_from([None, "check", "approve", "ignore"]),
)
def test_a_secured_tool_and_an_adapters_traits_declare_alike(
    effect: Any,
    flags: dict[str, bool],
    fields: list[str],
    destinations: list[str],
    provenance: Any,
) -> None:
    """The same options, declared on a secured tool or as a framework tool's ``Traits``,
    give a tool the same declaration."""

    def send(to: str, url: str) -> str:
        return to

    options: dict[str, Any] = {
        "effect": effect,
        **flags,
        "untrusted_fields": fields or None,
        "destinations": destinations,
        "provenance": provenance,
    }
    spec = Toolkit(audit=[]).secured_tool(**options)(send).__toolpass__
    traits = Traits(
        effect=effect,
        **flags,
        untrusted_fields=tuple(fields),
        destinations=tuple(destinations),
        provenance=provenance,
    ).declared()
    for name in {f.name for f in dataclasses.fields(Traits)} - {"rule"}:
        assert getattr(spec, name) == getattr(traits, name), name
