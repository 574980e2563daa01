"""The pipeline's overhead per call, the default audit line, and the untrusted-input check:
its speed against 1 MB of recorded text and on a 1 MB argument, and its memory per byte read.

Figures are medians over repeats, measured in one run beside their baseline, so the ratios
hold on any machine.

    python bench/bench_pipeline.py
"""

from __future__ import annotations

import io
import random
import statistics
import timeit
import tracemalloc
from collections.abc import Callable

import toolpass
from toolpass import AuditEvent, Decision, Session, StderrSink, Toolkit
from toolpass.outcome.audit_text import line
from toolpass.toolkit.untrusted import UntrustedIndex

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


def audit_line() -> None:
    """The default sink's line for an allowed call: formatted from the full record (as before
    issue #23) and straight from the event, and the whole sink writing to a stream."""
    event = AuditEvent("deploy", "write")
    event.user, event.outcome = "dana@example.com", "ok"
    event.arguments = {"repo": "acme/gitops-prod", "title": "bump"}
    event.authorization = ("allow", "member")
    event.finish()
    sink, n = StderrSink(stream=io.StringIO()), 20_000
    via_record = per_call(lambda: line(event.to_dict()), n)
    direct = per_call(event.line, n)
    written = per_call(lambda: sink(event), n)
    print("default audit line (text, stderr)")
    print(f"  from the full record (before #23)    {via_record * 1e6:8.2f} µs")
    print(f"  from the event                       {direct * 1e6:8.2f} µs")
    print(f"  the sink, written and flushed        {written * 1e6:8.2f} µs  (to a StringIO)")


def untrusted_cost() -> None:
    """Memory per byte of recorded text (tracemalloc), and a 1 MB argument's check, against a
    60-word argument's in the same run (linear: the ratio follows the sizes)."""
    rng = random.Random(11)
    text = words(150_000, rng)  # under the 4 MB a session remembers
    tracemalloc.start()
    index = UntrustedIndex()
    index.add(text)
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    past = words(1_800_000, rng)  # over 10 MB, past the limit
    tracemalloc.start()
    Session("c@example.com").record_untrusted(past)
    _, past_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    small, big = words(60, rng), words(180_000, rng)
    t_small = per_call(lambda: index.find(small), 2_000)
    t_big = per_call(lambda: index.find(big), 3)
    print("untrusted record: memory and a large argument")
    print(
        f"  {len(text) / 1e6:.2f} MB recorded                     {kept / len(text):8.1f} "
        f"bytes per byte kept (peak {peak / len(text):.1f})"
    )
    print(
        f"  {len(past) / 1e6:.1f} MB read past the limit            {past_peak / 1e6:8.2f} MB peak"
    )
    print(
        f"  a {len(big) / 1e6:.2f} MB argument                      {t_big * 1e3:8.2f} ms  "
        f"({t_big / t_small:.0f}x a 60-word one; sizes {len(big) / len(small):.0f}x)"
    )


def large_argument() -> None:
    """A 1 MB argument through a secured call (every check, and the output's values recorded
    as some tool declares a destination), after reading a page of untrusted text; the fastest
    of three, against a 60-word argument's call."""
    rng = random.Random(13)
    page, small = words(1_000, rng), words(60, rng)
    bigs = [words(180_000, rng) for _ in range(3)]  # each new: nothing is cached across calls
    kit = Toolkit(audit=[])
    read = kit.secured_tool(lambda: page, name="read", effect="read", untrusted_output=True)
    post = kit.secured_tool(lambda body: "posted", name="post", effect="write", sends_out=True)
    kit.secured_tool(lambda to: "sent", name="send", effect="write", destinations=("to",))
    with Session("e@example.com", request="hi").active():
        t_clean = min(timeit.timeit(lambda big=big: post(big), number=1) for big in bigs)
    with Session("f@example.com", request="hi").active():
        read()
        t_small = min(timeit.repeat(lambda: post(small), number=200, repeat=5)) / 200
        t_big = min(timeit.timeit(lambda big=big: post(big), number=1) for big in bigs)
    print("a secured call with a 1 MB argument (a tool sending out, destinations declared)")
    size = f"{len(bigs[0]) / 1e6:.2f} MB argument"
    print(f"  {size}, nothing untrusted read  {t_clean * 1e3:8.1f} ms")
    print(
        f"  {size}, after an untrusted page {t_big * 1e3:8.1f} ms  "
        f"(a 60-word one: {t_small * 1e6:.0f} µs)"
    )


if __name__ == "__main__":
    print(f"toolpass {toolpass.__version__}")
    pipeline()
    audit_line()
    untrusted()
    untrusted_cost()
    large_argument()
