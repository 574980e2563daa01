"""toolpass-server: cached checks against the real server process on 127.0.0.1.

Starts ``toolpass serve`` (one worker) with a GitHub connection to core's fake GitHub,
warms the cache with one check, then asks the same cached question from 1 and from
``--threads`` client threads, each with its own ``Toolpass.remote`` client (one kept-alive
connection each). Every loop is bounded by a count and by time. Reports throughput,
p50 and p99 latency, a bare ``GET /healthz`` over the same kind of connection, and the
time spent inside the server's app (from its access log), and the in-process cached check
as the baseline (ratio = server p50 / in-process check).

Client and server share this machine's cores, so the figures include the client's own
Python HTTP code.

    python bench/bench_server.py [--threads 4] [--seconds 5] [--count 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import timeit
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "tests"))

from fakes.github import FakeGitHub
from toolpass.engine import Toolpass
from toolpass.wire.http import HTTPClient

KEY = "bench-key-0123456789abcdef0123"
ASK = ("dana@example.com", "gh", "pr.merge", "repo:acme/widgets")


def start_server(config: Path, log_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    err_path = log_dir / "server.err"
    with err_path.open("wb") as err, (log_dir / "access.log").open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolpass.cli", "serve", "-config", str(config), "--port", "0"],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "BENCH_KEY": KEY, "BENCH_GH_TOKEN": "ghp_bench"},
        )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = re.search(r"listening on (\S+)", err_path.read_text())
        if found:
            return proc, found.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"the server did not start:\n{err_path.read_text()}")


def run_clients(url: str, threads: int, count: int, seconds: float) -> tuple[float, list[float]]:
    """(checks per second, every latency in seconds) of ``threads`` clients."""
    latencies: list[list[float]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads + 1)
    deadline = [0.0]

    def client(out: list[float]) -> None:
        with closing(Toolpass.remote(url, KEY)) as tp:
            tp.check(*ASK)  # connect
            start.wait()
            clock = time.perf_counter
            for _ in range(count):
                t0 = clock()
                d = tp.check(*ASK)
                out.append(clock() - t0)
                if not d.cached:
                    raise SystemExit(f"not a cached allow: {d}")
                if t0 > deadline[0]:
                    break

    workers = [threading.Thread(target=client, args=(out,)) for out in latencies]
    for w in workers:
        w.start()
    deadline[0] = time.perf_counter() + seconds
    began = time.perf_counter()
    start.wait()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - began
    every = [x for out in latencies for x in out]
    return len(every) / elapsed, every


def healthz_latency(url: str, count: int, seconds: float) -> list[float]:
    http = HTTPClient()
    http.request("GET", f"{url}/healthz")
    result: list[float] = []
    end = time.perf_counter() + seconds
    for _ in range(count):
        t0 = time.perf_counter()
        http.request("GET", f"{url}/healthz")
        result.append(time.perf_counter() - t0)
        if t0 > end:
            break
    http.close()
    return result


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0, help="per phase, at most")
    parser.add_argument("--count", type=int, default=20_000, help="per client, at most")
    args = parser.parse_args()

    gh = FakeGitHub()
    with gh, tempfile.TemporaryDirectory() as tmp:
        gh.add_repo("acme/widgets", {"dana": "write"})
        gh.add_token("ghp_bench")
        config = Path(tmp) / "toolpass.yaml"
        config.write_text(
            textwrap.dedent(f"""\
                connections:
                  - id: gh
                    integration: github
                    url: {gh.api_url}
                    token: env:BENCH_GH_TOKEN
                    cache_ttl_allow: 600
                    identity: {{mode: template, template: "{{local}}", domains: [example.com]}}
                server:
                  api_keys: [env:BENCH_KEY]
            """)
        )
        os.environ["BENCH_GH_TOKEN"] = "ghp_bench"
        with Toolpass.from_config(config) as tp:
            tp.check(*ASK)
            number = 100_000
            in_process = min(timeit.repeat(lambda: tp.check(*ASK), number=number, repeat=5))
            in_process /= number
        proc, url = start_server(config, Path(tmp))
        try:
            with closing(Toolpass.remote(url, KEY)) as warm:
                assert warm.check(*ASK).allowed
            health = healthz_latency(url, args.count, args.seconds)
            one_rate, one = run_clients(url, 1, args.count, args.seconds)
            many_rate, many = run_clients(url, args.threads, args.count, args.seconds)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        inside = [
            entry["ms"] / 1000
            for line in (Path(tmp) / "access.log").read_text().splitlines()
            if (entry := json.loads(line))["path"] == "/check" and entry.get("cached")
        ]

    print("toolpass-server, cached checks on 127.0.0.1 (1 server worker, kept-alive clients)")
    print(f"  {'':34} {'checks/s':>9} {'p50 µs':>9} {'p99 µs':>9} {'n':>7}")
    for label, rate, lat in (
        ("1 client thread", one_rate, one),
        (f"{args.threads} client threads", many_rate, many),
    ):
        print(
            f"  {label:34} {rate:9.0f} {pct(lat, 0.5) * 1e6:9.1f} {pct(lat, 0.99) * 1e6:9.1f} "
            f"{len(lat):7d}"
        )
    print(
        f"  {'GET /healthz, 1 client (HTTP only)':34} {'':>9} "
        f"{pct(health, 0.5) * 1e6:9.1f} {pct(health, 0.99) * 1e6:9.1f} {len(health):7d}"
    )
    print(
        f"  {'inside the server app (access log)':34} {'':>9} "
        f"{pct(inside, 0.5) * 1e6:9.1f} {pct(inside, 0.99) * 1e6:9.1f} {len(inside):7d}"
    )
    print(f"  in-process cached check (baseline)  {in_process * 1e6:9.2f} µs")
    p50 = statistics.median(one)
    print(f"  server p50 / in-process             {p50 / in_process:9.0f}x")


if __name__ == "__main__":
    main()
