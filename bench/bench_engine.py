"""The permission engine: a cached check, and an uncached one over a kept-alive connection
against a new connection each time (a fake system on 127.0.0.1).

Figures are medians over repeats, measured in one run, so the ratios hold on any machine.

    python bench/bench_engine.py
"""

from __future__ import annotations

import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "tests"))

from fakes.server import FakeServer
from toolpass.engine import Decision, Toolpass, literal
from toolpass.integrations.base import Action, ConfigKey, Integration, ProbeResult
from toolpass.wire.http import HTTPClient

REPEATS = 9


class Bench(Integration):
    name = "bench"
    description = "One grant read per check."
    keys = (ConfigKey("token", "The engine's token.", secret=True, required=True),)
    actions = (Action("item.read", "Read an item.", "read"),)

    def check(self, user: str, action: str, resource: str) -> Decision:
        uid = self.user_id(user)
        answer = self.request("GET", f"/grants/{uid}", headers={"Authorization": "Bearer x"})
        return Decision.allow() if answer.json()["ok"] else Decision.deny()

    def probe(self) -> ProbeResult:
        return ProbeResult(True, "")


def per_call(fn: Callable[[], object], number: int) -> float:
    """Median seconds per call."""
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=REPEATS)) / number


def main() -> None:
    with FakeServer() as fake:
        fake.add("GET", r"/grants/\w+", lambda request: {"ok": True})
        conn = {
            "id": "b",
            "integration": Bench,
            "url": fake.url,
            "token": literal("x"),
            "identity": {"mode": "users", "users": {"dana@example.com": "dana"}},
        }
        with Toolpass([conn]) as tp:
            ask = ("dana@example.com", "b", "item.read", "item:1")
            cached = per_call(lambda: tp.check(*ask), 100_000)
            uncached = per_call(lambda: tp.check(*ask, fresh=True), 300)
        url = f"{fake.url}/grants/dana"
        kept = HTTPClient()
        fresh = HTTPClient(max_idle=0)
        kept_alive = per_call(lambda: kept.request("GET", url), 300)
        new_each = per_call(lambda: fresh.request("GET", url), 300)
        kept.close()
        clients = {r.client for r in fake.requests}
    print("permission engine, per check")
    print(f"  cached check (in process)                {cached * 1e6:9.2f} µs")
    print(f"  uncached check, kept-alive connection    {uncached * 1e6:9.2f} µs")
    print("engine HTTP client, one GET to 127.0.0.1")
    print(f"  kept-alive connection                    {kept_alive * 1e6:9.2f} µs")
    print(
        f"  new connection each time                 {new_each * 1e6:9.2f} µs  "
        f"({new_each / kept_alive:.1f}x)"
    )
    print(f"  ({len(clients)} client connections in all)")


if __name__ == "__main__":
    main()
