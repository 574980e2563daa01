"""``lazy_pattern``: a regular expression compiled on first use behaves as the compiled one
wherever toolpass's code (or an application holding one) takes it: copied, deep-copied,
pickled (a process pool, a cache), asked for an attribute it lacks, and first used by many
threads at once."""

from __future__ import annotations

import copy
import pickle
import re
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass.rules.lazy import lazy_pattern

SOURCES = [r"\w+", r"[0-9]{2,}", r"(?P<user>[a-z]+)@(?P<host>[a-z.]+)", "x|y"]


@settings(max_examples=40, deadline=None)
@given(source=st.sampled_from(SOURCES), ignore_case=st.booleans(), text=st.text(max_size=30))
def test_a_copied_or_pickled_pattern_finds_what_the_compiled_one_does(
    source: str, ignore_case: bool, text: str
) -> None:
    flags = re.IGNORECASE if ignore_case else 0
    compiled = re.compile(source, flags)
    for used_first in (False, True):
        lazy = lazy_pattern(source, flags)
        if used_first:
            lazy.search("")
        for made in (copy.copy(lazy), copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy))):
            assert (made.pattern, made.flags) == (compiled.pattern, compiled.flags)
            assert made.findall(text) == compiled.findall(text)


def test_an_attribute_the_pattern_lacks_is_an_attribute_error() -> None:
    lazy = lazy_pattern(r"\d")
    assert not hasattr(lazy, "_no_such_field")
    with pytest.raises(AttributeError):
        lazy.no_such_method  # noqa: B018
    assert lazy.match("7") is not None


def found_at_once(lazy: re.Pattern[str], text: str, threads: int = 8) -> list[str | None]:
    """What ``threads`` threads, started together, each find in ``text`` on first use."""
    found: list[str | None] = []
    start = threading.Barrier(threads)

    def use() -> None:
        start.wait()
        match = lazy.search(text)
        found.append(match.group() if match else None)

    running = [threading.Thread(target=use) for _ in range(threads)]
    for t in running:
        t.start()
    for t in running:
        t.join()
    return found


def test_first_use_by_many_threads_at_once_finds_the_same() -> None:
    for n in range(20):
        word = f"a{n}"
        lazy = lazy_pattern(rf"(?:{word})+b")
        assert found_at_once(lazy, f"xx{word}{word}b") == [f"{word}{word}b"] * 8
