"""``toolpass mcp-proxy`` served on streamable HTTP to several clients: what one client's
upstream connection carries never reaches another's. A connection (an MCP session) that
ends closes its upstream connection; two people signed in through the same client
application (one OAuth ``client_id``) never share one, so the upstream's requests and
notifications for one person's call (sampling, elicitation, log messages) reach that person
only. The proxy runs as a real process in front of a real MCP server on stdio
(``full_upstream.py``) whose every start is counted, by its process id."""

from __future__ import annotations

import os
import subprocess
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
from upstream_processes import COUNTED_UPSTREAM, settled, started
from warm_python import python

HERE = Path(__file__).resolve().parent


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
command = {python("-c", COUNTED_UPSTREAM)!r}
upstream = StdioServerParameters(
    command=command[0], args=command[1:], env={{"UPSTREAM_LOG": log}}
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
        python("-c", PROXY, str(port), str(log), "auth" if auth else "-"),
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


def connections(log: Path) -> list[int]:
    """The upstream processes started for clients: the proxy's own first look left out."""
    return started(log)[1:]


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
    started_for_clients = connections(log)
    assert len(started_for_clients) == 3  # one per session
    assert settled(started_for_clients) == []  # each closed with its session, none left behind


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
    assert len(connections(log)) == 2  # one upstream connection per person, kept for the next
