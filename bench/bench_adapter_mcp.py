"""toolpass-mcp's added time per tool call, against the same MCP server without it.

One client session makes CALLS ``tools/call`` requests to an ``MCPServer`` through the SDK's
real client and server (in process, on JSON-RPC over in-memory streams: ``mode="legacy"``;
and on the SDK's default stateless path: ``mode="auto"``), no network. The same session is
timed against the bare server, one with a middleware that does nothing (what MCP's middleware
chain costs by itself), and the server guarded by ``guard`` (a tool with a rule, so the
permission engine is asked, and one without); a ``fastmcp`` server bare and with
``FastMCPGuard``. Every variant in the same process, sessions interleaved in a shuffled order,
medians over sessions, so the ratios hold on any machine. The audit sink is a list, so
logging is not measured.

    python bench/bench_adapter_mcp.py
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")

from _shared import Engine, ainterleave, aper_call, table
from fastmcp import Client as FastMCPClient
from fastmcp import FastMCP
from mcp import Client
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from toolpass import Toolkit
from toolpass.mcp import FastMCPGuard, Rule, guard

CALLS = 20  # tool calls per client session
ROUNDS = 40  # sessions per variant, interleaved; the median session is reported
HOOK_CALLS = 5_000  # calls of the middleware alone per timing
USER = "dana@example.com"
RULES = {"delete_issue": Rule("jira", "DELETE_ISSUES", "issue:{key}")}


async def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


async def close_issue(key: str) -> str:
    """Close an issue (no rule: runs unchecked, in a session, audited)."""
    return f"closed {key}"


async def passthrough(ctx: Any, call_next: Any) -> Any:
    return await call_next(ctx)


def mcp_server(variant: str, seen: list[Any]) -> MCPServer:
    server: MCPServer = MCPServer("bench", middleware=[passthrough] if variant == "no-op" else [])
    server.add_tool(delete_issue)
    server.add_tool(close_issue)
    if variant == "guard":
        guard(server, Engine(), RULES, toolkit=Toolkit(audit=[seen.append]))
    return server


def fast_server(variant: str, seen: list[Any]) -> FastMCP:
    server = FastMCP("bench")
    server.tool(delete_issue)
    server.tool(close_issue)
    if variant == "guard":
        server.add_middleware(FastMCPGuard(Engine(), RULES, toolkit=Toolkit(audit=[seen.append])))
    return server


class Variant:
    def __init__(self, kind: str, mode: str, variant: str, tool: str) -> None:
        self.seen: list[Any] = []
        self.kind, self.mode, self.tool = kind, mode, tool
        self.checked = variant == "guard"
        self.server: Any = (mcp_server if kind == "mcp" else fast_server)(variant, self.seen)

    async def timed(self) -> float:
        """Seconds per tool call in one client session (the connection not counted)."""
        client: Any = (
            Client(self.server, mode=self.mode)  # type: ignore[arg-type]
            if self.kind == "mcp"
            else FastMCPClient(self.server)
        )
        async with client:
            start = time.perf_counter()
            for i in range(CALLS):
                await client.call_tool(self.tool, {"key": f"PAY-{i}"})
            return (time.perf_counter() - start) / CALLS


def variants() -> dict[str, Callable[[], Variant]]:
    made: dict[str, Callable[[], Variant]] = {}
    for mode in ("legacy", "auto"):
        made[f"{mode}: bare server"] = lambda m=mode: Variant("mcp", m, "bare", "delete_issue")
        made[f"{mode}: no-op middleware"] = lambda m=mode: Variant(
            "mcp", m, "no-op", "delete_issue"
        )
        made[f"{mode}: guard, rule"] = lambda m=mode: Variant("mcp", m, "guard", "delete_issue")
        made[f"{mode}: guard, no rule"] = lambda m=mode: Variant("mcp", m, "guard", "close_issue")
    made["fastmcp: bare server"] = lambda: Variant("fast", "", "bare", "delete_issue")
    made["fastmcp: FastMCPGuard, rule"] = lambda: Variant("fast", "", "guard", "delete_issue")
    return made


async def main() -> None:
    logging.disable(logging.INFO)  # FastMCP and the SDK log every request at INFO
    auth_context_var.set(
        AuthenticatedUser(AccessToken(token="t", client_id="c", scopes=[], claims={"email": USER}))
    )
    built = {name: make() for name, make in variants().items()}
    samples = await ainterleave(built, lambda name: built[name].timed(), ROUNDS, warmup=3)
    for name, variant in built.items():
        expected = (ROUNDS + 3) * CALLS if variant.checked else 0
        assert len(variant.seen) == expected, (name, len(variant.seen))  # all checked, audited
    title = f"toolpass-mcp: time per tool call in a real MCP client session ({CALLS} per session)"
    table(title, samples, lambda name: name.split(":")[0] + ": bare server")
    hook, bare = await hook_alone()
    print("the middleware alone (around a call_next that returns at once)")
    print(f"  call_next alone               {bare * 1e6:9.2f} µs")
    print(f"  through the guard, rule       {hook * 1e6:9.2f} µs  (+{(hook - bare) * 1e6:.2f} µs)")
    base = statistics.median(samples["legacy: bare server"])
    print(f"  => {(base + hook - bare) / base:.3f}x the bare server's {base * 1e6:.0f} µs per call")


async def hook_alone() -> tuple[float, float]:
    """Median seconds per call of the guard's middleware with a rule (engine asked, audited)
    and of the ``call_next`` it wraps: the loop's own noise does not enter this figure."""
    seen: list[Any] = []
    server: MCPServer = MCPServer("bench")
    server.add_tool(delete_issue)
    middleware = guard(server, Engine(), RULES, toolkit=Toolkit(audit=[seen.append]))
    ctx = ServerRequestContext(
        session=object(),  # type: ignore[arg-type]
        lifespan_context={},
        protocol_version="2025-11-25",
        method="tools/call",
        params={"name": "delete_issue", "arguments": {"key": "PAY-1"}},
        request_id=1,
    )
    done = {"content": [{"type": "text", "text": "deleted"}], "isError": False}

    async def call_next(ctx: Any) -> Any:
        return done

    async def through() -> None:
        for _ in range(HOOK_CALLS):
            await middleware(ctx, call_next)

    async def alone() -> None:
        for _ in range(HOOK_CALLS):
            await call_next(ctx)

    timings = await aper_call({"through": through, "alone": alone}, HOOK_CALLS)
    assert len(seen) == 7 * HOOK_CALLS
    return timings["through"], timings["alone"]


if __name__ == "__main__":
    asyncio.run(main())
