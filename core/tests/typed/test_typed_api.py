"""The public API is typed so that ``mypy --strict`` users see their mistakes: a sample
that uses it well passes, and each typo in it is reported (issue #9)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

GOOD = """
import toolpass
from toolpass import CustomEffect, Session, Toolkit, secured_tool

kit = Toolkit(
    limits={"destructive": 3},
    untrusted_inputs="approve",
    unknown_host="refuse",
    effects=["payment"],
    audit=[],
)
toolpass.configure(exfiltration="refuse")


@secured_tool(effect="read", scope={"repo": "acme/*"}, limit=3)
def read_file(repo: str, path: str) -> str:
    return f"{repo}/{path}"


@secured_tool(
    effect="destructive",
    approve=True,
)
def delete(repo: str) -> None:
    return None


@kit.secured_tool(effect=CustomEffect("payment"), approve=True)
def pay(amount: float) -> str:
    return f"paid {amount}"


@toolpass.tool
def plain(x: int) -> int:
    return x


def lookup(key: str) -> str:
    return key


looked_up = kit.secured_tool(lookup, effect="read")  # a function and its options at once


with Session("dana@example.com").active():
    text: str = read_file("acme/x", "README.md")
    number: int = plain(1)
    again: int = plain(2)
    found: str = looked_up("PAY-1")
"""

#: what -> (right, wrong): each typo is on a line of its own, and mypy must flag that line.
TYPOS = {
    "an option": ('secured_tool(effect="read", scope', 'secured_tool(efect="read", scope'),
    "an effect": ('effect="destructive",', 'effect="destrucive",'),
    "an undeclared effect": ('effect=CustomEffect("payment")', 'effect="payment"'),
    "a mode": ('untrusted_inputs="approve"', 'untrusted_inputs="aprove"'),
    "a setting": ('exfiltration="refuse"', 'exfiltraton="refuse"'),
    "an argument type": ("plain(2)", 'plain("2")'),
    "a result type": ("number: int = plain(1)", "number: str = plain(1)"),
}


def _mypy(tmp_path: Path, source: str) -> tuple[int, str]:
    sample = tmp_path / "sample.py"
    sample.write_text(source)
    out, err, status = api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"), str(sample)]
    )
    return status, out + err


def _line(source: str, text: str) -> int:
    return source[: source.index(text)].count("\n") + 1


def test_a_sample_that_uses_the_api_well_passes_and_each_typo_is_caught(tmp_path: Path) -> None:
    status, report = _mypy(tmp_path, GOOD)
    assert status == 0, report
    bad = GOOD
    for right, wrong in TYPOS.values():
        assert GOOD.count(right) == 1, right
        bad = bad.replace(right, wrong)
    status, report = _mypy(tmp_path, bad)
    assert status == 1, report
    flagged = {int(m) for m in re.findall(r"sample\.py:(\d+): error", report)}
    for what, (_, wrong) in TYPOS.items():
        line = _line(bad, wrong)
        # An error on a decorator's call is reported on the line where the call starts.
        near = {line, *range(line - 3, line)}
        assert flagged & near, f"{what} (line {line}) was not caught:\n{report}"


def test_the_toolkit_options_are_the_settings() -> None:
    import dataclasses

    from toolpass.toolkit import Settings, ToolkitOptions

    fields = {f.name for f in dataclasses.fields(Settings)}
    assert set(ToolkitOptions.__annotations__) == fields | {"on_untrusted_input"}


def test_effects_and_options_are_checked_when_a_tool_is_declared() -> None:
    from toolpass import CustomEffect, Toolkit

    kit = Toolkit(audit=[])
    with pytest.raises(ValueError, match="effect 'wrtie' is not one of destructive, read, write"):
        kit.secured_tool(lambda: None, effect="wrtie")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="declare an effect of your own"):
        kit.secured_tool(lambda: None, effect=CustomEffect("payment"))
    paying = Toolkit(effects=["payment"], limits={"payment": 1}, audit=[])
    pay = paying.secured_tool(lambda: "paid", effect=CustomEffect("payment"))
    assert pay.__toolpass__.effect == "payment"  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="unexpected keyword argument 'efect'"):
        kit.secured_tool(lambda: None, efect="read")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="unknown toolkit option 'exfiltraton'"):
        Toolkit(exfiltraton="refuse")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="unknown_host must be one of"):
        Toolkit(unknown_host="deny")  # type: ignore[arg-type]
