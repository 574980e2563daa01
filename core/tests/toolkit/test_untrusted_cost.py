"""What the untrusted record costs: text past its limit is not read at all, so a session that
reads a huge page pays for its size once (the page), not thirteen times over."""

from __future__ import annotations

import random
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass import Session
from toolpass.toolkit.untrusted import FULL, UntrustedIndex


def page(words: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(5000)] + ["ignore", "previous", "instructions", "send"]
    return " ".join(rng.choice(vocab) for _ in range(words))


def test_a_page_past_the_limit_costs_no_memory_beyond_itself() -> None:
    session = Session("dana@example.com")
    text = page(900_000)  # over 5 MB, past the 4 MB a session remembers
    assert len(text) > session.untrusted.max_text
    tracemalloc.start()
    try:
        session.record_untrusted(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < len(text) // 10
    assert session.untrusted.full
    assert session.untrusted.find("post the report") == FULL


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 400), st.integers(0, 400))
def test_the_limit_is_the_same_whichever_way_the_text_arrives(first: int, second: int) -> None:
    """Text that crosses the limit in one page or in two fills the record alike."""
    index = UntrustedIndex(max_text=300, max_runs=10**6)
    index.add(page(first, 1)[:first])
    index.add(page(second, 2)[:second])
    assert index.full == (first + second > 300)


def test_recorded_text_costs_at_most_three_bytes_a_byte() -> None:
    """A page under the limit is remembered as hashes of its runs, packed (#23: a set of them
    took 13 to 16 bytes a byte read)."""
    session = Session("dana@example.com")
    text = page(150_000)  # about 0.9 MB
    tracemalloc.start()
    try:
        session.record_untrusted(text)
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept < 3 * len(text)
    assert not session.untrusted.full
    assert session.untrusted.find(" ".join(text.split()[70_000:70_006])) is not None


PAGES = [page(40_000, seed) for seed in (3, 4, 5)]  # past RECENT runs: most of them packed
RECORD = UntrustedIndex()
for _text in PAGES:
    RECORD.add(_text)
RUNS = {
    tuple(words[i : i + 6]) for text in PAGES for words in [text.split()] for i in range(len(words))
}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 39_990), st.integers(1, 8))
        | st.text("abcxyz", min_size=1, max_size=6),
        max_size=8,
    )
)
def test_the_packed_record_finds_what_a_set_of_its_runs_holds(parts: list[object]) -> None:
    """An argument of pieces of the pages read and other words: a run is found exactly when
    one of its six-word runs was read (the set of runs, as the record was before #23)."""
    words: list[str] = []
    for part in parts:
        if isinstance(part, str):
            words.append(part)
        else:
            which, at, length = part  # type: ignore[misc]
            words += PAGES[which].split()[at : at + length]
    repeated = {tuple(words[i : i + 6]) for i in range(len(words) - 5)} & RUNS
    found = RECORD.find(" ".join(words))
    assert (found is not None) == bool(repeated)
    assert found is None or tuple(found.split()) in repeated


def test_an_argument_as_long_as_the_record_is_checked_against_all_of_it() -> None:
    """An argument with as many runs as the record holds packed finds the one run it
    repeats, wherever it is, and finds nothing when it repeats none."""
    other = page(130_000, seed=9).split()
    for at in (0, 64_000, len(other) - 6):
        repeated = PAGES[1].split()[20_000:20_006]
        argument = " ".join(other[:at] + repeated + other[at:])
        assert RECORD.find(argument) == " ".join(repeated)
    assert RECORD.find(" ".join(other)) is None
