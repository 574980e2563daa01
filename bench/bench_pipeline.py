"""The pipeline's overhead per call, and the untrusted-input check against 1 MB of text.

Figures are medians over repeats, measured in one run beside their baseline, so the ratios
hold on any machine.

    python bench/bench_pipeline.py
"""

from __future__ import annotations

import random
import statistics
import timeit
from collections.abc import Callable

import toolpass
from toolpass import Decision, Session, Toolkit

REPEATS = 15


def per_call(fn: Callable[[], object], number: int) -> float:
    """Median seconds per call."""
    fn()
    runs = timeit.repeat(fn, number=number, repeat=REPEATS)
    return statistics.median(runs) / number


def pipeline() -> None:
    seen: list[int] = []
    kit = Toolkit(limits={"write": 10**12}, audit=[lambda event: seen.append(1)])
    allow = Decision.allow("member")

    def plain(repo: str, title: str) -> str:
        return repo

    @kit.secured_tool(effect="write", scope={"repo": "acme/gitops-*"}, authorize=lambda c: allow)
    def secured(repo: str, title: str) -> str:
        return repo

    @kit.secured_tool(effect="write")
    def bare(repo: str, title: str) -> str:
        return repo

    n = 20_000
    with Session("dana@example.com").active():
        base = per_call(lambda: plain("acme/gitops-prod", "bump"), n)
        minimal = per_call(lambda: bare("acme/gitops-prod", "bump"), n)
        full = per_call(lambda: secured("acme/gitops-prod", "bump"), n)
        seen.clear()
        secured("acme/gitops-prod", "bump")
        assert seen == [1], "the audit sink must see every call"
    print("pipeline overhead per call (sync)")
    print(f"  plain function                       {base * 1e6:8.2f} µs")
    print(
        f"  secured_tool, no checks but audit    {minimal * 1e6:8.2f} µs  "
        f"(+{(minimal - base) * 1e6:.2f} µs)"
    )
    print(
        f"  secured_tool, scope+limits+authz+audit {full * 1e6:6.2f} µs  "
        f"(+{(full - base) * 1e6:.2f} µs, {full / base:.0f}x a bare call)"
    )


def words(n: int, rng: random.Random) -> str:
    vocab = [f"w{i}" for i in range(5000)] + ["the", "and", "please", "send", "data"]
    return " ".join(rng.choice(vocab) for _ in range(n))


def untrusted() -> None:
    rng = random.Random(7)
    argument = words(60, rng)  # a typical argument: one paragraph
    small, large = Session("a@example.com"), Session("b@example.com")
    small.record_untrusted(words(170, rng))  # ~1 KB
    text = words(200_000, rng)  # over 1 MB
    large.record_untrusted(text)
    assert len(text) > 1_000_000
    n = 5_000
    t_small = per_call(lambda: small.untrusted.find(argument), n)
    t_large = per_call(lambda: large.untrusted.find(argument), n)
    big_arg = words(6_000, rng)
    t_big_arg = per_call(lambda: large.untrusted.find(big_arg), 50)
    print("untrusted-input check (one 60-word argument)")
    print(f"  against 1 KB recorded                {t_small * 1e6:8.2f} µs")
    print(
        f"  against 1 MB recorded                {t_large * 1e6:8.2f} µs  "
        f"(ratio {t_large / t_small:.2f}: cost follows the argument, not the record)"
    )
    print(f"  a 6,000-word argument, 1 MB recorded {t_big_arg * 1e6:8.2f} µs")


if __name__ == "__main__":
    print(f"toolpass {toolpass.__version__}")
    pipeline()
    untrusted()
