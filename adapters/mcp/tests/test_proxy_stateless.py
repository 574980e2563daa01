"""``toolpass mcp-proxy`` on the stateless 2026-07-28 protocol (issue #23): every HTTP
request is a connection of its own, but a client's requests share one upstream connection
(one per client and capabilities; the ``MAX_STATELESS`` last used stay open, the others are
closed). The proxy runs as a real process serving streamable HTTP in front of a real MCP
server on stdio (``full_upstream.py``) whose every start is counted, by its process id."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conformance_run import free_port, wait_listening
from mcp import Client
from mcp_client import text_of
from mcp_types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent
from upstream_processes import COUNTED_UPSTREAM, running, settled, started
from warm_python import python

HERE = Path(__file__).resolve().parent
MAX_STATELESS = 2  # the proxy's bound, set low to see it close what it evicts


# The proxy (``serve``, as ``toolpass mcp-proxy`` runs it) on streamable HTTP.
PROXY = f"""
import sys, anyio, uvicorn
from mcp import StdioServerParameters
from toolpass.mcp import proxy as module

module.MAX_STATELESS = {MAX_STATELESS}
port, log = int(sys.argv[1]), sys.argv[2]
command = {python("-c", COUNTED_UPSTREAM)!r}
upstream = StdioServerParameters(
    command=command[0], args=command[1:], env={{"UPSTREAM_LOG": log}}
)

async def on_http(proxy):
    app = proxy.server.streamable_http_app()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    async with anyio.create_task_group() as proxy.tasks:
        await uvicorn.Server(config).serve()
        proxy.tasks.cancel_scope.cancel()

config = module.ProxyConfig(user="dana@example.com")
anyio.run(lambda: module.serve(upstream, None, config, run=on_http))
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The proxy's URL and the upstream's log."""
    port, log = free_port(), tmp_path / "upstream.jsonl"
    env = {**os.environ, "OTEL_SDK_DISABLED": "true"}
    process = subprocess.Popen(
        python("-c", PROXY, str(port), str(log)), env=env, stderr=subprocess.DEVNULL
    )
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        process.terminate()
        process.wait(10)


async def sample(context: Any, params: Any) -> CreateMessageResult:
    text = TextContent(type="text", text="42")
    return CreateMessageResult(role="assistant", content=text, model="scripted")


async def elicit(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={})


async def roots(context: Any) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///work")])


#: Clients of different capabilities: what the upstream sees of each, and its callbacks.
CLIENTS: list[tuple[str, dict[str, Any]]] = [
    ("none", {}),
    ("sampling", {"sampling_callback": sample}),
    ("elicitation", {"elicitation_callback": elicit}),
    ("roots", {"list_roots_callback": roots}),
]


@pytest.mark.asyncio
async def test_a_stateless_clients_calls_share_one_upstream_connection(
    served: tuple[str, Path],
) -> None:
    url, log = served
    async with Client(url, mode="2026-07-28") as client:
        for _ in range(12):
            assert text_of(await client.call_tool("capabilities", {})) == "none"
        await client.list_tools()
    _probe, *connections = started(log)
    assert len(connections) == 1  # twelve calls and a list: one upstream connection
    assert running(connections) == connections  # kept open for the client's next request


@pytest.mark.asyncio
async def test_clients_of_other_capabilities_get_their_own_connection_bounded(
    served: tuple[str, Path],
) -> None:
    url, log = served
    for _ in range(2):
        for seen, callbacks in CLIENTS:
            async with Client(url, mode="2026-07-28", **callbacks) as client:
                for _ in range(3):  # never a connection opened with other capabilities
                    assert text_of(await client.call_tool("capabilities", {})) == seen
    _probe, *connections = started(log)
    assert len(connections) <= 2 * len(CLIENTS)  # one per client's turn, not per call
    assert len(settled(connections)) <= MAX_STATELESS  # the least recently used: closed


@pytest.mark.asyncio
async def test_a_stateless_client_can_listen_to_the_upstreams_changes(
    served: tuple[str, Path],
) -> None:
    url, _ = served
    async with Client(url, mode="auto") as client:  # asks server/discover
        assert client.protocol_version == "2026-07-28"
        caps = client.server_capabilities
        assert caps.tools is not None  # server/discover: as the upstream's
        assert caps.tools.list_changed
        assert caps.resources is not None
        assert caps.resources.subscribe
        watched = ["note://readme"]
        async with client.listen(tools_list_changed=True, resource_subscriptions=watched) as sub:
            assert sub.honored.tools_list_changed
            assert sub.honored.resource_subscriptions == watched
