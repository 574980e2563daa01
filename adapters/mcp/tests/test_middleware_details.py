"""What the middleware's refusals look like to a client, protocol version by version; the
JSON-RPC code of a refusal as an error; a call of a tool the server does not have under
``strict``; a call that failed (the tool raised, the server rejected its arguments) audited
as an error."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import mcp_types.jsonrpc as jsonrpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.server import MCPServer
from mcp_client import call_all
from mcp_types import SERVER_INFO_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from toolpass import AuditEvent, Toolkit
from toolpass.mcp import REFUSED, guard
from warm_python import python

DANA = "dana@example.com"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
SERVER = str(Path(__file__).resolve().parent / "refusing_server.py")
CLIENT = {"name": "raw", "version": "1"}


def raw_call(kind: str, version: str) -> dict[str, Any]:
    """The JSON-RPC response to one ``tools/call`` of ``delete_issue``, as it is on the wire
    (stdio), on a connection of ``version``: the 2025 handshake first, or the 2026-07-28
    request's own ``_meta``."""
    call: dict[str, Any] = {"name": "delete_issue", "arguments": {"key": "PAY-1"}}
    lines: list[dict[str, Any]] = []
    if version in MODERN_PROTOCOL_VERSIONS:
        call["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": CLIENT,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    else:
        init = {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT}
        lines += [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ]
    lines.append({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
    with subprocess.Popen(
        python(SERVER, kind),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as server:
        stdin, stdout = server.stdin, server.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write("".join(json.dumps(line) + "\n" for line in lines))
        stdin.flush()
        try:
            while line := stdout.readline():  # until the answer (or the server's end)
                answer = json.loads(line) if line.startswith("{") else {}
                if answer.get("id") == 1:
                    return dict(answer)
        finally:
            server.kill()
    raise AssertionError("the server ended without answering")


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_a_refusal_is_shaped_for_the_connections_protocol(version: str) -> None:
    refused, ran = raw_call("guarded", version)["result"], raw_call("bare", version)["result"]
    assert refused["isError"] is True
    assert refused["_meta"]["toolpass"] == {"code": "not_configured"}
    # The envelope of the server's own results: no field of another version.
    assert set(refused) - {"_meta", "isError"} <= set(ran)
    assert ("resultType" in refused) == (version in MODERN_PROTOCOL_VERSIONS)
    stamp = refused["_meta"].get(SERVER_INFO_META_KEY)
    assert stamp == ran.get("_meta", {}).get(SERVER_INFO_META_KEY)
    assert (stamp is not None) == (version in MODERN_PROTOCOL_VERSIONS)


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_a_refusal_as_an_error_has_a_code_no_sdk_gives_a_meaning(version: str) -> None:
    error = raw_call("error", version)["error"]
    assert error["code"] == REFUSED
    assert error["data"] == {"code": "not_configured"}
    named = {v for k, v in vars(jsonrpc).items() if k.isupper() and isinstance(v, int)}
    assert REFUSED not in named  # neither REQUEST_TIMEOUT (-32001) nor any other
    assert -32099 <= REFUSED <= -32000  # JSON-RPC's range for servers' own errors


TOOLS = ("delete_issue", "whoami")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.text(st.characters(codec="ascii", categories=["L", "N", "Pd"]), min_size=1))
@pytest.mark.asyncio
async def test_under_strict_a_tool_the_server_lacks_reads_as_unknown(name: str) -> None:
    server = MCPServer("ops")
    server.add_tool(lambda key: key, name="delete_issue")
    server.add_tool(lambda: "me", name="whoami")
    guard(server, None, None, strict=True, user=DANA)
    out = await call_all(server, [(name, {}), ("whoami", {})], DANA)
    if name in TOOLS:
        assert "(not_configured)" in out.outputs[0]
    else:
        assert out.outputs[0].startswith("[error] Refused by toolpass (invalid_arguments): ")
        assert f"Unknown tool: {name}." in out.outputs[0]
    assert "(not_configured)" in out.outputs[1]  # a tool the server has, without a rule


@pytest.mark.asyncio
async def test_a_call_that_failed_is_audited_as_an_error() -> None:
    events: list[AuditEvent] = []
    kit = Toolkit(audit=[events.append])
    server = MCPServer("ops")

    def boom() -> str:
        raise ValueError("internal detail")

    def count(n: int) -> str:
        return str(n)

    server.add_tool(boom)
    server.add_tool(count)
    guard(server, None, None, user=DANA, toolkit=kit)
    out = await call_all(
        server, [("boom", {}), ("count", {"n": "many"}), ("count", {"n": 2})], DANA
    )
    assert out.outputs[0].startswith("[error] Error executing tool boom")  # as MCP makes it
    assert out.outputs[1].startswith("[error]")  # the SDK rejected the arguments
    assert out.outputs[2] == "2"
    assert [(e.tool, e.outcome) for e in events] == [
        ("boom", "error"),
        ("count", "error"),
        ("count", "ok"),
    ]
