"""What a new user trips on in the toolkit: a credential whose secret reference gives
nothing is an operator's to fix (``not_configured``), never "try again shortly"; a
framework tool's ``Traits(effect=...)`` is held to the toolkit's effects as
``secured_tool`` is."""

from __future__ import annotations

import asyncio

import pytest
from toolpass import Session, Toolkit, ToolRefused, env, file
from toolpass.adapting import Guard, Traits


def fetch(*, credential: str) -> str:
    return "ran"


@pytest.mark.parametrize(
    "reference", [env("FIRST_USE_NEVER_SET"), file("/nonexistent/first-use/token")]
)
def test_a_credential_whose_reference_gives_nothing_is_not_configured(
    reference: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FIRST_USE_NEVER_SET", raising=False)
    kit = Toolkit(credentials={"bot": reference}, audit=[])
    tool = kit.secured_tool(fetch, effect="read", credential="bot")
    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as refused:
        tool()
    assert refused.value.code == "not_configured"
    assert "operator" in refused.value.message
    assert "shortly" not in refused.value.message
    assert "FIRST_USE_NEVER_SET" not in refused.value.message  # the detail is the audit's


def test_the_async_driver_refuses_it_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRST_USE_NEVER_SET", raising=False)
    kit = Toolkit(credentials={"bot": env("FIRST_USE_NEVER_SET")}, audit=[])

    async def afetch(*, credential: str) -> str:
        return "ran"

    tool = kit.secured_tool(afetch, effect="read", credential="bot")

    async def call() -> None:
        async with Session("dana@example.com").active():
            await tool()

    with pytest.raises(ToolRefused) as refused:
        asyncio.run(call())
    assert refused.value.code == "not_configured"


def test_a_credential_that_fails_otherwise_is_still_unavailable() -> None:
    def flaky(name: str) -> str:
        raise TimeoutError("vault did not answer")

    kit = Toolkit(credentials=flaky, audit=[])
    tool = kit.secured_tool(fetch, effect="read", credential="bot")
    with Session("dana@example.com").active(), pytest.raises(ToolRefused) as refused:
        tool()
    assert refused.value.code == "credential_unavailable"


@pytest.mark.parametrize("effect", ["delete", "Write", "reads"])
def test_traits_with_an_effect_the_toolkit_lacks_are_refused_like_secured_tool(
    effect: str,
) -> None:
    kit = Toolkit(audit=[])
    with pytest.raises(ValueError, match=rf"drop_table: effect '{effect}' is not one of") as e:
        Guard(None, {"drop_table": Traits(effect=effect)}, toolkit=kit)
    with pytest.raises(ValueError, match=rf"effect '{effect}' is not one of") as same:
        kit.secured_tool(fetch, name="drop_table", effect=effect)
    assert str(e.value) == str(same.value)
    own = Toolkit(effects=[effect], audit=[]) if effect.isidentifier() else kit
    Guard(None, {"drop_table": Traits(effect=effect)}, toolkit=own)
