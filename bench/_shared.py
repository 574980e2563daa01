"""What the adapter benches share: an engine that allows at once, the interleaved timing loops,
and the table of medians against a baseline variant."""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

from toolpass import Decision


class Engine:
    """Answers at once: the adapter's cost, not an engine's, is measured."""

    def __init__(self) -> None:
        self.allow = Decision.allow("member")

    def check(self, user: str, connection: str, action: str, resource: str, **_: Any) -> Decision:
        return self.allow

    async def acheck(self, *args: Any, **kwargs: Any) -> Decision:
        return self.check(*args, **kwargs)


def _schedule(names: Iterable[str], rounds: int, warmup: int) -> Iterator[tuple[str, bool]]:
    """(name, kept): each variant ``warmup`` times, then ``rounds`` rounds of all in a shuffled
    order, so drift hits every variant alike; a collection before each kept run."""
    order = list(names)
    for name in order:
        for _ in range(warmup):
            yield name, False
    rng = random.Random(7)
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            gc.collect()
            yield name, True


def interleave(
    names: Iterable[str], run: Callable[[str], float], rounds: int, warmup: int
) -> dict[str, list[float]]:
    """The seconds ``run(name)`` reports, per variant, one per round (warm-up dropped)."""
    samples: dict[str, list[float]] = {name: [] for name in names}
    for name, kept in _schedule(samples, rounds, warmup):
        seconds = run(name)
        if kept:
            samples[name].append(seconds)
    return samples


async def ainterleave(
    names: Iterable[str], run: Callable[[str], Awaitable[float]], rounds: int, warmup: int
) -> dict[str, list[float]]:
    """``interleave`` for an async ``run``."""
    samples: dict[str, list[float]] = {name: [] for name in names}
    for name, kept in _schedule(samples, rounds, warmup):
        seconds = await run(name)
        if kept:
            samples[name].append(seconds)
    return samples


def per_call(
    loops: Mapping[str, Callable[[], object]], calls: int, repeats: int = 7
) -> dict[str, float]:
    """Median seconds per call of each loop of ``calls`` calls, the loops taken in turn."""
    times: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(repeats):
        for name, loop in loops.items():
            gc.collect()
            start = time.perf_counter()
            loop()
            times[name].append((time.perf_counter() - start) / calls)
    return {name: statistics.median(t) for name, t in times.items()}


async def aper_call(
    loops: Mapping[str, Callable[[], Awaitable[object]]], calls: int, repeats: int = 7
) -> dict[str, float]:
    """``per_call`` for async loops."""
    times: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(repeats):
        for name, loop in loops.items():
            gc.collect()
            start = time.perf_counter()
            await loop()
            times[name].append((time.perf_counter() - start) / calls)
    return {name: statistics.median(t) for name, t in times.items()}


def table(
    title: str,
    samples: Mapping[str, list[float]],
    base: str | Callable[[str], str],
    *,
    paired: bool = False,
    unit: str = "µs",
) -> None:
    """Print each variant's median per call, the time it adds to its baseline variant
    (``base``, or ``base(name)``) and the ratio. ``paired``: the added time is the median of
    each round's difference to the baseline, so load that drifts between rounds cancels out."""
    scale, digits = (1e3, 2) if unit == "ms" else (1e6, 0)
    width = max(map(len, samples)) + 4
    print(title)
    print(f"  {'variant':<{width}}{'per call':>11}{'added':>12}{'ratio':>8}")
    for name, times in samples.items():
        bare = samples[base if isinstance(base, str) else base(name)]
        b, t = statistics.median(bare), statistics.median(times)
        if paired:
            added = statistics.median(x - y for x, y in zip(times, bare, strict=True))
        else:
            added = t - b
        print(
            f"  {name:<{width}}{t * scale:8.{digits}f} {unit}"
            f"{added * scale:+9.{digits}f} {unit}{(b + added) / b:7.2f}x"
        )
