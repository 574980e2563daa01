"""One hook per HTTP client library; each calls ``toolpass.intercept.check``.

A client module names the distribution it hooks (``DISTRIBUTION``, None for the standard
library), the versions its hooks were tested on (``TESTED``, e.g. ``">=0.27,<1"``), and
``patches()``: each function it replaces, with the parameters that function must have.
Each hook sits at the lowest stable layer of its library, so every higher path passes it;
a layer that checked a request marks it (``check.checked_above``) so a lower hooked layer
does not check the same request again.
"""

from __future__ import annotations

import inspect
import operator
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from toolpass.rules.lazy import lazy_pattern

Wrapper = Callable[[Callable[..., Any]], Callable[..., Any]]


class Patch(NamedTuple):
    """``owner.name`` is replaced by ``wrap(original)``; the original's parameters must be
    ``params`` (the internals the wrapper relies on), or begin with them when ``params``
    ends with ``"..."`` (a wrapper that passes the rest on as it gets them)."""

    owner: Any
    name: str
    wrap: Wrapper
    params: tuple[str, ...]


Applied = list[tuple[Any, str, Any, bool]]  # owner, name, original, defined on owner itself


def problem(patch: Patch) -> str | None:
    """Why ``patch`` cannot be applied safely, or None."""
    where = f"{getattr(patch.owner, '__qualname__', patch.owner.__name__)}.{patch.name}"
    original = getattr(patch.owner, patch.name, None)
    if original is None:
        return f"{where} does not exist"
    try:
        names = tuple(inspect.signature(original).parameters)
    except (TypeError, ValueError):
        return f"{where} has no signature to verify"
    expected = patch.params
    if expected[-1:] == ("...",):
        expected = expected[:-1]
        names = names[: len(expected)]
    if names != expected:
        return f"{where} takes {names}, not {patch.params}"
    return None


def apply(patches: list[Patch]) -> Applied:
    """Replace each function; returns what ``undo`` needs."""
    applied: Applied = []
    for p in patches:
        original = getattr(p.owner, p.name)
        applied.append((p.owner, p.name, original, p.name in vars(p.owner)))
        setattr(p.owner, p.name, p.wrap(original))
    return applied


def undo(applied: Applied) -> None:
    """Put back every function ``apply`` replaced."""
    for owner, name, original, own in reversed(applied):
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)


# --- versions: a tiny comparison, since core depends on nothing ----------------------------

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_CLAUSE = lazy_pattern(r"\s*(>=|<=|==|!=|>|<)\s*([0-9][0-9.]*)\s*")


def numbers(version: str) -> tuple[int, ...]:
    """The release numbers of a version: ``"0.28.1"`` -> (0, 28, 1); ``"1.0rc1"`` -> (1, 0)."""
    found: list[int] = []
    for piece in version.strip().lstrip("v").split("."):
        digits = re.match(r"\d*", piece).group()  # type: ignore[union-attr]
        if not digits:
            break
        found.append(int(digits))
        if len(digits) < len(piece):
            break
    return tuple(found)


def in_range(version: str, spec: str) -> bool:
    """True when ``version`` meets every clause of ``spec`` (e.g. ``">=0.27,<1"``)."""
    have = numbers(version)
    if not have:
        return False
    for clause in spec.split(","):
        match = _CLAUSE.fullmatch(clause)
        if match is None:
            raise ValueError(f"not a version range: {spec!r}")
        bound = numbers(match.group(2))
        width = max(len(have), len(bound))
        padded = have + (0,) * (width - len(have)), bound + (0,) * (width - len(bound))
        if not _OPERATORS[match.group(1)](*padded):
            return False
    return True
