"""Step 2, arguments: binding to the signature, strict types, validators, the credential slot.

Scope rules (the last part of step 2) are in test_scope.py.
"""

import enum
import inspect
import re
from typing import Annotated, Any, Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass import Session, Toolkit, ToolRefused

from .conftest import attempt

PROPERTY = settings(deadline=None, database=None, max_examples=300)


# Binding.


def test_arguments_reach_the_body_with_defaults_applied(drive, kit, session):
    def body(repo: str, title: str = "bump", *, draft: bool = False) -> tuple[str, str, bool]:
        return repo, title, draft

    tool = drive.tool(kit, body)
    assert drive.call(tool, "acme/x") == ("acme/x", "bump", False)
    assert drive.call(tool, "acme/x", "fix", draft=True) == ("acme/x", "fix", True)
    assert drive.call(tool, title="t", repo="acme/y") == ("acme/y", "t", False)


@pytest.mark.parametrize(
    ("args", "kwargs", "says"),
    [
        (("a", "b", "c"), {}, "Too many positional"),
        (("a",), {"colour": "red"}, "Unexpected argument 'colour'"),
        (("a",), {"repo": "b"}, "given twice"),
        ((), {"title": "t"}, "Missing argument 'repo'"),
        (("a", "b", True), {}, "Too many positional"),  # draft is keyword-only
    ],
)
def test_binding_errors_are_invalid_arguments(drive, kit, session, events, args, kwargs, says):
    ran = []

    def body(repo: str, title: str = "bump", *, draft: bool = False) -> None:
        ran.append(repo)

    tool = drive.tool(kit, body)
    refusal = drive.refused(tool, *args, **kwargs)
    assert refusal.code == "invalid_arguments"
    assert says in refusal.message
    assert "call the tool again" in refusal.message
    assert ran == []
    [event] = events
    assert event.code == "invalid_arguments"


def test_binding_with_positional_only_varargs_and_varkw(drive, kit, session):
    def body(a: int, /, *rest: int, flag: bool = False, **extra: str) -> Any:
        return a, rest, flag, extra

    tool = drive.tool(kit, body)
    assert drive.call(tool, 1, 2, 3, flag=True, note="x") == (1, (2, 3), True, {"note": "x"})
    assert drive.refused(tool, a=1).code == "invalid_arguments"  # positional-only by keyword
    assert drive.refused(tool).code == "invalid_arguments"


# Strict types.


class Colour(enum.Enum):
    RED = "red"


class Point:
    pass


TYPE_CASES = [
    (int, [0, 40, -3], ["40", True, False, 4.0, None]),
    (float, [1.5, 2, -0.0], [True, "1.5", None]),
    (bool, [True, False], [1, 0, "true", None]),
    (str, ["", "x"], [b"x", 1, None]),
    (Optional[int], [None, 3], ["3", False, 3.0]),  # noqa: UP045 (the spelling under test)
    (int | None, [None, 3], ["3", True]),
    (list[str], [[], ["a", "b"]], [("a",), ["a", 1], "ab", {"a"}, None]),
    (list[int], [[1, 2]], [[1, True], ["1"]]),
    (Literal["open", "closed"], ["open", "closed"], ["Open", "merged", 1, None]),
    (Literal[1, 2], [1, 2], [True, "1", 1.0, 3]),
    (dict[str, int], [{}, {"a": 1}], [{"a": "1"}, {1: 1}, {"a": True}, [("a", 1)], None]),
    (dict, [{}, {"a": object()}], [[], "{}"]),
    (tuple[int, str], [(1, "a")], [(1, 2), (1, "a", 3), [1, "a"], ("1", "a")]),
    (tuple[int, ...], [(), (1, 2, 3)], [(1, "2"), [1]]),
    (Annotated[int, "a count"], [5], ["5", True]),
    (Colour, [Colour.RED], ["red", None]),
    (Point, [Point()], [object(), None]),
    (list[str] | None, [None, ["a"]], [[None], "a"]),
]


def described(value: object) -> str:
    """A parameter's id: its repr without a memory address (the same in every process)."""
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


@pytest.mark.parametrize(("hint", "good", "bad"), TYPE_CASES, ids=lambda v: described(v)[:30])
def test_types_are_strict(drive, kit, session, hint, good, bad):
    ran = []

    def body(value: Any) -> None:
        ran.append(value)

    body.__annotations__ = {"value": hint, "return": None}
    tool = drive.tool(kit, body, effect="read")
    for value in good:
        drive.call(tool, value)
    assert ran == good
    for value in bad:
        refusal = drive.refused(tool, value)
        assert refusal.code == "invalid_arguments", value
        assert "'value'" in refusal.message
    assert ran == good


@pytest.mark.parametrize("hint", [Any, object, inspect.Parameter.empty])
def test_unconstrained_arguments_take_anything(kit, session, hint):
    def body(value):  # type: ignore[no-untyped-def]
        return value

    if hint is not inspect.Parameter.empty:
        body.__annotations__ = {"value": hint}
    tool = kit.secured_tool(body, effect="read")
    for value in (1, True, "x", None, object):
        assert tool(value) is value
    assert tool([1]) == [1]  # a container is passed as a snapshot: equal, not the same


def test_an_annotation_that_cannot_be_resolved_fails_closed(drive, kit, session, events):
    def body(value: "NoSuchType") -> None:  # type: ignore[name-defined]  # noqa: F821
        raise AssertionError("must not run")

    tool = drive.tool(kit, body)
    assert drive.refused(tool, 1).code == "check_error"
    [event] = events
    assert "NameError" in event.detail


# Validators.


@pytest.mark.parametrize("answer", [True, 1, "yes", [0], object()])
def test_a_truthy_validator_accepts(drive, kit, session, answer):
    seen = []

    def valid(value: int) -> Any:
        seen.append(value)
        return answer

    tool = drive.tool(kit, lambda n: n * 2, validators={"n": valid})
    assert drive.call(tool, 21) == 42
    assert seen == [21]


@pytest.mark.parametrize("answer", [False, None, 0, "", []])
def test_a_falsy_validator_rejects(drive, kit, session, events, answer):
    ran = []
    tool = drive.tool(kit, lambda n: ran.append(n), validators={"n": lambda v: answer})
    refusal = drive.refused(tool, 5)
    assert refusal.code == "invalid_arguments"
    assert "'n' is not valid" in refusal.message
    assert ran == []
    [event] = events
    assert event.code == "invalid_arguments"


def test_a_raising_validator_rejects_and_may_explain(drive, kit, session):
    def at_most_ten(v: int) -> bool:
        if v > 10:
            raise ValueError("at most 10")
        return True

    def broken(v: int) -> bool:
        raise RuntimeError("internal detail that is not for the model")

    tool = drive.tool(kit, lambda n, m=0: n, validators={"n": at_most_ten, "m": broken})
    refusal = drive.refused(tool, 11)
    assert refusal.code == "invalid_arguments"
    assert "at most 10" in refusal.message
    refusal = drive.refused(tool, 1, 0)
    assert refusal.code == "invalid_arguments"
    assert "internal detail" not in refusal.message


def test_a_validator_may_refuse_with_its_own_code(drive, kit, session):
    def valid(v: str) -> bool:
        raise ToolRefused("out_of_scope", "That project is not yours.")

    tool = drive.tool(kit, lambda p: p, validators={"p": valid})
    refusal = drive.refused(tool, "x")
    assert (refusal.code, refusal.message) == ("out_of_scope", "That project is not yours.")


def test_types_are_checked_before_validators(drive, kit, session):
    seen = []

    def body(n: int) -> int:
        return n

    tool = drive.tool(kit, body, validators={"n": lambda v: seen.append(v) or True})
    assert drive.refused(tool, "5").code == "invalid_arguments"
    assert seen == []


async def test_an_async_validator_runs_for_an_async_tool(kit, session):
    async def valid(v: int) -> bool:
        return v > 0

    async def double(n: int) -> int:
        return n * 2

    tool = kit.secured_tool(double, validators={"n": valid})
    assert await tool(2) == 4
    with pytest.raises(ToolRefused) as info:
        await tool(-2)
    assert info.value.code == "invalid_arguments"


def test_validator_mistakes_fail_at_decoration(kit):
    async def avalid(v: int) -> bool:
        return True

    with pytest.raises(TypeError, match="not take"):
        kit.secured_tool(lambda a: a, validators={"b": bool})
    with pytest.raises(TypeError, match="not callable"):
        kit.secured_tool(lambda a: a, validators={"a": "yes"})
    with pytest.raises(TypeError, match="async"):
        kit.secured_tool(lambda a: a, validators={"a": avalid})


# The credential slot: injected by toolpass, never passed by the caller.


def test_the_visible_signature_omits_credential(kit):
    def open_pr(repo: str, title: str, *, credential: str) -> str:
        """Open a pull request."""
        return f"{repo}:{title}:{credential}"

    tool = kit.secured_tool(open_pr, credential="bot")
    assert list(inspect.signature(tool).parameters) == ["repo", "title"]
    assert "credential" not in tool.__annotations__
    assert tool.__annotations__["repo"] is str


@pytest.mark.parametrize("varkw", [False, True])
def test_a_caller_passing_credential_is_refused(drive, kit, session, varkw):
    kit.configure(credentials={"bot": "s3cret-token-value"})
    ran = []

    if varkw:

        def body(repo: str, *, credential: str, **extra: Any) -> None:
            ran.append(credential)

    else:

        def body(repo: str, *, credential: str) -> None:
            ran.append(credential)

    tool = drive.tool(kit, body, credential="bot")
    refusal = drive.refused(tool, "acme/x", credential="attacker-chosen-value")
    assert refusal.code == "invalid_arguments"
    assert "credential" in refusal.message
    assert ran == []
    drive.call(tool, "acme/x")
    assert ran == ["s3cret-token-value"]


def test_credential_needs_a_keyword_only_parameter(kit):
    with pytest.raises(TypeError, match="keyword-only"):
        kit.secured_tool(lambda repo, credential: None, credential="bot")
    with pytest.raises(TypeError, match="keyword-only"):
        kit.secured_tool(lambda repo: None, credential="bot")


# Properties.

_quiet = Toolkit(audit=[lambda event: None])


def _echo_int(value: int) -> int:
    return value


def _echo_opt(value: int | None) -> int | None:
    return value


def _echo_strs(value: list[str]) -> list[str]:
    return value


def _echo_map(value: dict[str, int]) -> dict[str, int]:
    return value


typed = {
    "int": (_quiet.secured_tool(_echo_int, effect="read"), lambda v: type(v) is int),
    "optional": (
        _quiet.secured_tool(_echo_opt, effect="read"),
        lambda v: v is None or type(v) is int,
    ),
    "list[str]": (
        _quiet.secured_tool(_echo_strs, effect="read"),
        lambda v: type(v) is list and all(type(x) is str for x in v),
    ),
    "dict[str, int]": (
        _quiet.secured_tool(_echo_map, effect="read"),
        lambda v: type(v) is dict and all(type(k) is str and type(x) is int for k, x in v.items()),
    ),
}

scalars = st.one_of(
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.integers().map(str),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(max_size=3), st.integers()), inner, max_size=3),
    ),
    max_leaves=8,
)


@PROPERTY
@given(kind=st.sampled_from(sorted(typed)), value=values)
def test_strict_types_accept_exactly_the_values_of_the_type(kind, value):
    tool, expected = typed[kind]
    with Session("prop@example.com").active():
        outcome, result = attempt(tool, value)
    if expected(value):
        assert (outcome, result) == ("ok", value)
        assert type(result) is type(value)  # the checked snapshot: equal, of the same type
    else:
        assert (outcome, result.code) == ("refused", "invalid_arguments")


def _signature_body(a: Any, b: Any = 2, *, c: Any = 3) -> tuple[Any, Any, Any]:
    return a, b, c


_bound_tool = _quiet.secured_tool(_signature_body, effect="read")
_signature = inspect.signature(_signature_body)


@PROPERTY
@given(
    args=st.lists(st.integers(), max_size=4),
    kwargs=st.dictionaries(st.sampled_from(["a", "b", "c", "d", "credential"]), st.integers()),
)
def test_binding_agrees_with_the_python_signature(args, kwargs):
    try:
        bound = _signature.bind(*args, **kwargs)
    except TypeError:
        expected = None
    else:
        bound.apply_defaults()
        expected = (bound.arguments["a"], bound.arguments["b"], bound.arguments["c"])
    with Session("prop@example.com").active():
        outcome, result = attempt(_bound_tool, *args, **kwargs)
    if expected is None:
        assert (outcome, result.code) == ("refused", "invalid_arguments")
    else:
        assert (outcome, result) == ("ok", expected)
