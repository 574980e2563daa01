from __future__ import annotations

from contextvars import ContextVar

import pytest
from fakes.server import FakeServer
from toolpass import Toolkit, guarded
from toolpass.engine import PermissionDenied, Toolpass

current_user: ContextVar[str] = ContextVar("current_user")


def test_sync_allow_runs_the_body_and_deny_does_not(tp: Toolpass, fake: FakeServer) -> None:
    ran: list[str] = []

    @guarded(tp, "demo", "item.read", "item:{key}", user="dana@example.com")
    def read(key: str) -> str:
        ran.append(key)
        return f"item {key}"

    @guarded(tp, "demo", "item.write", "item:{key}", user="dana@example.com")
    def write(key: str, text: str = "") -> str:
        ran.append("write")
        return "written"

    assert read("PAY-1") == "item PAY-1"
    assert fake.seen(path="/grants/d1")[0].query == {"resource": ["item:PAY-1"]}
    with pytest.raises(PermissionDenied) as info:
        write(key="PAY-1", text="x")
    assert info.value.decision.decision == "deny"
    assert ran == ["PAY-1"]
    assert read.__name__ == "read"


async def test_async_and_deny_message(tp: Toolpass) -> None:
    ran: list[int] = []

    @guarded(tp, "demo", "item.write", "item:{n}", user="dana@example.com", deny="Not allowed.")
    async def write(n: int) -> str:
        ran.append(n)
        return "written"

    @guarded(tp, "demo", "item.write", "item:{n}", user="erin@example.com")
    async def write_as_erin(n: int) -> str:
        ran.append(n)
        return "written"

    assert await write(7) == "Not allowed."
    assert await write_as_erin(8) == "written"
    assert ran == [8]


def test_user_from_contextvar_and_callable(tp: Toolpass) -> None:
    @guarded(tp, "demo", "item.read", "item:{key}", user=current_user)
    def read(key: str) -> str:
        return "ok"

    with pytest.raises(PermissionDenied, match="no user is set"):
        read("1")
    token = current_user.set("dana@example.com")
    try:
        assert read("1") == "ok"
    finally:
        current_user.reset(token)

    def broken() -> str:
        raise RuntimeError("no session")

    @guarded(tp, "demo", "item.read", "item:{key}", user=broken)
    def read2(key: str) -> str:
        return "ok"

    with pytest.raises(PermissionDenied, match=r"could not be told .*no session"):
        read2("1")
    assert guarded(tp, "demo", "item.read", "x", user=lambda: "dana@example.com")(lambda: 1)() == 1


def test_the_user_never_comes_from_the_call(tp: Toolpass) -> None:
    @guarded(tp, "demo", "item.write", "item:{key}", user="dana@example.com")
    def write(key: str, user: str = "") -> str:
        return "written"

    with pytest.raises(PermissionDenied):
        write("1", user="erin@example.com")


@pytest.mark.parametrize(
    "value", ["a?b", "a#b", "a@b", "../x", "a b", "a\nb", "a\x00", "a\u202eb", "", True, None, 1.5]
)
def test_unsafe_resource_values_are_refused_before_any_check(
    tp: Toolpass, fake: FakeServer, value: object
) -> None:
    @guarded(tp, "demo", "item.read", "item:{key}", user="dana@example.com")
    def read(key: object) -> str:
        return "ran"

    with pytest.raises(PermissionDenied, match=r"resource (it names cannot be checked|template)"):
        read(value)
    assert fake.requests == []


def test_template_mistakes_fail_at_decoration(tp: Toolpass) -> None:
    with pytest.raises(TypeError, match="names key, which the tool does not take"):
        guarded(tp, "demo", "item.read", "item:{key}", user="u")(lambda other: 1)
    for template in ("item:{key.attr}", "item:{key[0]}", "item:{key!r}", "item:{key:>9}", "{"):
        with pytest.raises(ValueError, match="resource template"):
            guarded(tp, "demo", "item.read", template, user="u")


def test_defaults_fill_the_template(tp: Toolpass, fake: FakeServer) -> None:
    @guarded(tp, "demo", "item.read", "repo:{owner}/{name}", user="dana@example.com")
    def read(name: str, owner: str = "acme") -> str:
        return "ok"

    assert read("x") == "ok"
    assert fake.seen(path="/grants/d1")[0].query == {"resource": ["repo:acme/x"]}


def test_each_call_goes_through_the_pipeline_and_is_audited(tp: Toolpass) -> None:
    events: list[object] = []
    kit = Toolkit(audit=[events.append])

    @guarded(tp, "demo", "item.read", "item:{key}", user="dana@example.com", toolkit=kit)
    def read(key: str) -> str:
        return "ok"

    @guarded(tp, "demo", "item.write", "item:{key}", user="dana@example.com", toolkit=kit)
    def write(key: str) -> str:
        return "written"

    assert read("1") == "ok"
    with pytest.raises(PermissionDenied):
        write("1")
    assert [(e.tool, e.user, e.outcome, e.code) for e in events] == [  # type: ignore[attr-defined]
        ("read", "dana@example.com", "ok", None),
        ("write", "dana@example.com", "refused", "not_authorized"),
    ]
