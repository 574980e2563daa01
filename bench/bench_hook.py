"""The request hook's overhead per request, on loopback, as a ratio against the same request
with no hook, for requests, httpx (sync and async) and aiohttp.

The GitHub integration's full route table is loaded; the user's permission comes from the
engine's decision cache, as it does for every request after the first. The vendor is a
small HTTP/1.1 keep-alive server in another process, so it does not compete with the client
for the interpreter. Rounds with and without the hook alternate, and medians are reported.

    python bench/bench_hook.py
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import aiohttp
import httpx
import requests
from toolpass import Decision, Session, Toolkit, Toolpass, integrations, intercept
from toolpass.integrations.github import GitHub
from toolpass.integrations.routes import Request
from toolpass.intercept import check as hook

N = 500
ROUNDS = 9
PATH = "/repos/acme/widgets/pulls/7"
SERVER = r"""
import socket, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = b'{"number": 7}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""


class BenchGitHub(GitHub):
    """GitHub with its full route table, whose live check always allows: the bench measures
    the hook, not GitHub."""

    def check(self, user: str, action: str, resource: str) -> Decision:
        return Decision.allow("bench")


def per_request(run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) / N * 1e6


async def aper_request(run: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter()
    await run()
    return (time.perf_counter() - start) / N * 1e6


def main() -> None:
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())  # type: ignore[union-attr]
        measure(f"http://127.0.0.1:{port}")
    finally:
        server.terminate()
        server.wait(5)


def measure(base: str) -> None:
    url = base + PATH
    users = {"dana@example.com": "dana"}
    tp = Toolpass(
        [
            {
                "id": "github",
                "integration": BenchGitHub,
                "url": base,
                "token": "env:PATH",
                "identity": {"mode": "users", "users": users},
            }
        ]
    )
    table = BenchGitHub.route_table()
    assert table.match(Request("GET", PATH)) is not None, "the route table lacks the route"
    loaded = {name: len(integrations.get(name).route_table()) for name in integrations.available()}
    kit = Toolkit(permissions=tp, audit=[])
    session_r, client = requests.Session(), httpx.Client()

    def with_requests() -> None:
        for _ in range(N):
            session_r.get(url).content  # noqa: B018

    def with_httpx() -> None:
        for _ in range(N):
            client.get(url).content  # noqa: B018

    plain: dict[str, list[float]] = {}
    hooked: dict[str, list[float]] = {}
    sync = {"requests": with_requests, "httpx": with_httpx}
    tools = {label: kit.tool(name=label)(fn) for label, fn in sync.items()}

    async def async_rounds() -> None:
        async with httpx.AsyncClient() as ahx, aiohttp.ClientSession() as aio:

            async def with_httpx_async() -> None:
                for _ in range(N):
                    (await ahx.get(url)).content  # noqa: B018

            async def with_aiohttp() -> None:
                for _ in range(N):
                    async with aio.get(url) as resp:
                        await resp.read()

            fns = {"httpx async": with_httpx_async, "aiohttp": with_aiohttp}
            atools = {label: kit.tool(name=label)(fn) for label, fn in fns.items()}
            for _ in range(ROUNDS):
                for label, fn in fns.items():
                    intercept.uninstall()
                    plain.setdefault(label, []).append(await aper_request(fn))
                    intercept.install()
                    hooked.setdefault(label, []).append(await aper_request(atools[label]))

    with Session("dana@example.com").active():
        for label in sync:  # warm up both paths
            sync[label]()
            tools[label]()
        for _ in range(ROUNDS):
            for label, fn in sync.items():
                intercept.uninstall()
                plain.setdefault(label, []).append(per_request(fn))
                intercept.install()
                hooked.setdefault(label, []).append(per_request(tools[label]))
        asyncio.run(async_rounds())

        @kit.tool()
        def check_only() -> None:
            for _ in range(N):
                hook.check("GET", url, {}, b"")

        check_only()
        direct = statistics.median(per_request(check_only) for _ in range(ROUNDS))
    intercept.uninstall()
    match = statistics.median(
        per_request(lambda: [table.match(Request("GET", PATH)) for _ in range(N)])
        for _ in range(ROUNDS)
    )

    print(
        f"request hook on loopback: GitHub table of {len(table)} routes, cached allow, "
        f"{N} GET requests x {ROUNDS} alternating rounds, medians per request"
    )
    print("  route tables loaded: " + ", ".join(f"{k} {v}" for k, v in loaded.items()))
    print(f"  {'client':<12} {'no hook':>10} {'hooked':>10} {'added':>9} {'ratio':>7}")
    for label in plain:
        p, h = statistics.median(plain[label]), statistics.median(hooked[label])
        print(f"  {label:<12} {p:>8.1f}µs {h:>8.1f}µs {h - p:>7.1f}µs {h / p:>6.3f}x")
    print(
        f"  the hook's own check per request (no network): {direct:.1f} µs, "
        f"of which the route match: {match:.1f} µs"
    )


if __name__ == "__main__":
    main()
