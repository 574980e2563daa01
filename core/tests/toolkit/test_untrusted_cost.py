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
