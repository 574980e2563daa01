"""How the destinations check scales: a pathological page read, and a destination of many
values checked after much reading, each at n and 10n. Linear work gives a ratio near 10; the
patterns this guards against were quadratic (a ratio near 100).

    python bench/bench_provenance.py
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

os.environ["TOOLPASS_AUDIT"] = "off"  # before toolpass reads it: no line per call on stderr

from toolpass import Session, Toolkit

USER = "dana@example.com"


def seconds(case: Callable[[int], object], n: int) -> float:
    """The fastest of three runs of ``case(n)``."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        case(n)
        best = min(best, time.perf_counter() - started)
    return best


def read_then_send(page: str, destination: str) -> None:
    kit = Toolkit(audit=[], untrusted_inputs="ignore")
    read = kit.secured_tool(lambda: page, effect="read", untrusted_output=True)
    send = kit.secured_tool(lambda to: "sent", effect="write", destinations=("to",))
    with Session(USER, request="hi").active():
        read()
        send(destination)


def many_values(values: int) -> None:
    kit = Toolkit(audit=[], untrusted_inputs="ignore")
    words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "report", "account"]
    pages = [" ".join(words[(i + j) % len(words)] for j in range(2_000)) for i in range(50)]
    read = kit.secured_tool(lambda i: pages[i], effect="read", untrusted_output=True)
    send = kit.secured_tool(lambda to: "sent", effect="write", destinations=("to",))
    with Session(USER, request="hi").active():
        for i in range(len(pages)):
            read(i)
        send(", ".join(f"name{i}" for i in range(values)))


def private_read_then_send(n: int) -> None:
    """A private record of ``n`` characters of numbers and addresses read, then a body of
    ``n`` characters sent: every value is looked for in the body."""
    kit = Toolkit(audit=[], untrusted_inputs="ignore", private_data="refuse")
    rows = [f"{i:08d} 4{i:015d} user{i}@corp.example" for i in range(n // 50)]
    read = kit.secured_tool(lambda: "\n".join(rows), effect="read", reads_private=True)
    send = kit.secured_tool(lambda to, body: "sent", sends_out=True, destinations=("to",))
    body = ("the quick brown fox jumps over the lazy dog " * (n // 44 + 1))[:n]
    with Session(USER, request="hi").active():
        read()
        send("bob@example.com", body)


def sends(calls: int = 1_000, rounds: int = 15) -> tuple[float, float]:
    """Seconds per call of a tool that sends out, nothing private read: with the private
    data check, and with it off (``private_data="ignore"``), in turns (the least of each)."""
    body = "Hi Bob, the minutes of today's meeting are below. " * 20
    tools = []
    for mode in ("approve", "ignore"):
        kit = Toolkit(audit=[], private_data=mode)  # type: ignore[arg-type]
        tools.append(
            kit.secured_tool(lambda to, body: "sent", sends_out=True, destinations=("to",))
        )
    best = [float("inf"), float("inf")]
    with Session(USER, request="hi").active():
        for _ in range(rounds):
            for i, send in enumerate(tools):
                started = time.perf_counter()
                for _ in range(calls):
                    send("bob@example.com", body)
                best[i] = min(best[i], (time.perf_counter() - started) / calls)
    return best[0], best[1]


def main() -> None:
    cases: dict[str, Callable[[int], None]] = {
        "a run of letters (email pattern)": lambda n: read_then_send(
            "a" * n, "https://hooks.trusted.example/"
        ),
        "a run of dots and letters (host pattern)": lambda n: read_then_send(
            "a." * (n // 2), "https://hooks.trusted.example/"
        ),
        "values of one destination": lambda n: many_values(n // 100),
        "private values looked for in a body": private_read_then_send,
    }
    print(f"{'case':44} {'n':>8} {'10n':>8}  ratio (linear ~10)")
    for name, case in cases.items():
        small, large = seconds(case, 40_000), seconds(case, 400_000)
        print(f"{name:44} {small:7.3f}s {large:7.3f}s  {large / small:5.1f}x")
    checked, ignored = sends()
    print(
        f"a send, nothing private read: {checked * 1e6:.1f}us per call checked, "
        f"{ignored * 1e6:.1f}us with private_data='ignore' ({checked / ignored:.2f}x)"
    )


if __name__ == "__main__":
    main()
