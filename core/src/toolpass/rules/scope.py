"""Scope rules: globs, lists of globs, or predicates that an argument's value must satisfy."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

ScopeRule = str | Callable[[Any], Any] | Iterable[str | Callable[[Any], Any]]
Matcher = Callable[[Any], bool]

# Characters that never belong in a name: controls, format characters (zero-width, bidi
# overrides), and line or paragraph separators.
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def has_control(text: str) -> bool:
    """True if ``text`` holds a control, format or separator character."""
    if text.isprintable():
        return False
    return any(unicodedata.category(c) in _BAD_CATEGORIES for c in text)


# Look-alikes of the slash and the backslash that compatibility folding (NFKC) leaves alone,
# but that a code page's "best fit" conversion or a lenient system may read as separators.
_SEPARATOR_LOOKALIKES = frozenset("\\\u2044\u2215\u29f8\u2216\u29f5\u29f9")


def escapes(text: str) -> bool:
    """True if ``text`` could climb out of where it is put: a ``.``/``..`` path segment, a
    backslash, or a control character, also when spelled with look-alikes (a fullwidth
    solidus, a one-dot leader, a division slash, ...)."""
    if text.isascii():  # the common case, without unicodedata
        if not text.isprintable() or "\\" in text:
            return True
        return "." in text and any(seg in (".", "..") for seg in text.split("/"))
    if has_control(text) or "\\" in text:
        return True
    folded = unicodedata.normalize("NFKC", text)
    if folded.count("/") != text.count("/") or not _SEPARATOR_LOOKALIKES.isdisjoint(folded):
        return True
    return any(seg in (".", "..") for seg in folded.split("/"))


def glob_to_regex(glob: str) -> re.Pattern[str]:
    """Compile a glob: ``*`` is zero or more characters and ``?`` exactly one, neither
    crossing ``/``; ``**`` crosses segments. A segment that is only ``*`` names a whole
    segment, which is never empty (``acme/*`` does not match ``acme/``)."""
    return re.compile("/".join(_segment_regex(seg) for seg in glob.split("/")), re.DOTALL)


def _segment_regex(segment: str) -> str:
    if segment and not segment.strip("*") and "**" not in segment:
        return "[^/]+"
    out: list[str] = []
    i = 0
    while i < len(segment):
        if segment.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        c = segment[i]
        out.append("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c))
        i += 1
    return "".join(out)


def _glob_matcher(glob: str) -> Matcher:
    if not isinstance(glob, str) or not glob:
        raise TypeError(f"a scope glob must be a non-empty string, not {glob!r}")
    fullmatch = glob_to_regex(glob).fullmatch

    def match(value: Any) -> bool:
        if type(value) is not str:
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                return False
            value = str(value)
        return not escapes(value) and fullmatch(value) is not None

    match.__qualname__ = f"glob({glob!r})"
    return match


def _predicate_matcher(predicate: Callable[[Any], Any]) -> Matcher:
    def match(value: Any) -> bool:
        return bool(predicate(value))

    return match


def compile_scope(rule: ScopeRule) -> Matcher:
    """Turn a scope rule into one function ``value -> bool``, once, at decoration time.

    A value in a list, tuple or set argument must satisfy the rule element by element; ``None``
    names nothing and passes.
    """
    if isinstance(rule, str):
        alternatives = [_glob_matcher(rule)]
    elif callable(rule):
        alternatives = [_predicate_matcher(rule)]
    else:
        try:
            items = list(rule)
        except TypeError:
            raise TypeError(
                f"a scope rule must be a glob, a list of globs or a predicate, not {rule!r}"
            )
        if not items:
            raise TypeError("an empty scope list would refuse every value; give at least one glob")
        alternatives = [
            _predicate_matcher(r) if callable(r) and not isinstance(r, str) else _glob_matcher(r)
            for r in items
        ]

    if len(alternatives) == 1:
        one = alternatives[0]
    else:

        def one(value: Any) -> bool:
            return any(alt(value) for alt in alternatives)

    def matcher(value: Any) -> bool:
        if type(value) is str:
            return one(value)
        if value is None:
            return True
        if isinstance(value, (list, tuple, set, frozenset)):
            return all(v is not None and one(v) for v in value)
        return one(value)

    return matcher
