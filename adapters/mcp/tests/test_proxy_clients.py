"""``toolpass mcp-proxy`` served on streamable HTTP to several clients: what one client's
upstream connection carries never reaches another's. A connection (an MCP session) that
ends closes its upstream connection; two people signed in through the same client
application (one OAuth ``client_id``) never share one, so the upstream's requests and
notifications for one person's call (sampling, elicitation, log messages) reach that person
only. The proxy runs as a real process in front of a real MCP server on stdio
(``full_upstream.py``) whose every start is counted, by its process id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conformance_run import free_port, wait_listening
from http_server import token_of
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_client import text_of

HERE = Path(__file__).resolve().parent
UPSTREAM = str(HERE / "full_upstream.py")

# The upstream: full_upstream.py, recording each start (its pid) first.
COUNTED_UPSTREAM = f"""
import json, os, runpy, sys
with open(os.environ["UPSTREAM_LOG"], "a") as log:
    log.write(json.dumps({{"event": "started", "pid": os.getpid()}}) + "\\n")
sys.argv = [{UPSTREAM!r}]
runpy.run_path({UPSTREAM!r}, run_name="__main__")
"""

# The proxy (``serve``, as ``toolpass mcp-proxy`` runs it) on streamable HTTP; with "auth",
# behind the SDK's bearer middleware whose tokens name their user (``http_server.Verifier``:
# every token has the client_id "agent-host").
PROXY = f"""
import sys, anyio, uvicorn
sys.path.insert(0, {str(HERE)!r})
from mcp import StdioServerParameters
from mcp.server.auth.settings import AuthSettings
from http_server import ISSUER, Verifier
from toolpass.mcp import proxy as module

port, log, auth = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "auth"
upstream = StdioServerParameters(
    command=sys.executable, args=["-c", {COUNTED_UPSTREAM!r}], env={{"UPSTREAM_LOG": log}}
)
options = dict(
    auth=AuthSettings(
        issuer_url=ISSUER, resource_server_url="http://127.0.0.1/mcp",
        validate_token_resource=False,
    ),
    token_verifier=Verifier(),
) if auth else {{}}

async def on_http(proxy):
    app = proxy.server.streamable_http_app(**options)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    async with anyio.create_task_group() as proxy.tasks:
        await uvicorn.Server(config).serve()
        proxy.tasks.cancel_scope.cancel()

config = module.ProxyConfig(user="operator@example.com")
anyio.run(lambda: module.serve(upstream, None, config, run=on_http))
"""


def serve_proxy(tmp_path: Path, auth: bool) -> Iterator[tuple[str, Path]]:
    port, log = free_port(), tmp_path / "upstream.jsonl"
    env = {**os.environ, "OTEL_SDK_DISABLED": "true"}
    process = subprocess.Popen(
        [sys.executable, "-c", PROXY, str(port), str(log), "auth" if auth else "-"],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The proxy's URL (no sign-in) and the upstream's log."""
    yield from serve_proxy(tmp_path, auth=False)


@pytest.fixture
def signed_in(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The proxy's URL (a bearer token naming the user) and the upstream's log."""
    yield from serve_proxy(tmp_path, auth=True)


def started(log: Path) -> list[int]:
    """The process ids of the upstream's starts, the proxy's first look at it left out."""
    events = [json.loads(line) for line in log.read_text().splitlines()]
    return [e["pid"] for e in events if e["event"] == "started"][1:]


def running(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (not exited, nor a zombie)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def settled(pids: list[int], seconds: float = 10.0) -> list[int]:
    """Those of ``pids`` still running once the closed ones had ``seconds`` to exit."""
    deadline = time.monotonic() + seconds
    while running(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return running(pids)


@asynccontextmanager
async def signed_in_client(url: str, user: str, **callbacks: Any) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token_of(user)}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(
            streamable_http_client(url, http_client=http),  # type: ignore[arg-type]
            mode="2026-07-28",
            **callbacks,
        ) as client,
    ):
        yield client


@pytest.mark.asyncio
async def test_a_client_session_that_ends_closes_its_upstream_connection(
    served: tuple[str, Path],
) -> None:
    url, log = served
    for _ in range(3):
        async with Client(url, mode="legacy") as client:  # an MCP session (Mcp-Session-Id)
            assert text_of(await client.call_tool("capabilities", {})) == "none"
    connections = started(log)
    assert len(connections) == 3  # one per session
    assert settled(connections) == []  # each closed with its session, none left behind


@pytest.mark.asyncio
async def test_two_people_of_one_client_application_never_share_an_upstream_connection(
    signed_in: tuple[str, Path],
) -> None:
    """dana's and rory's agent hosts are the same OAuth client (``agent-host``) with the
    same capabilities, on the stateless protocol: each person's calls go through an upstream
    connection of their own (whose state, and whose notifications sent with a call, are that
    person's), and each person's next call reuses it."""
    url, log = signed_in
    for _ in range(2):
        for person in ("dana@example.com", "rory@example.com"):
            async with signed_in_client(url, person) as client:
                assert text_of(await client.call_tool("capabilities", {})) == "none"
    assert len(started(log)) == 2  # one upstream connection per person, kept for the next
