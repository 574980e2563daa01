"""Attacks on a ``resources/read`` rule: a URI the rule reads one way and the server's
resource template another. Both SDKs percent-decode a template's parameters, and fastmcp
normalizes the URI (scheme case, dot segments) before its middleware sees it; toolpass fills
no resource from an argument with ``%`` or a ``.``/``..`` segment (``out_of_scope``). So no
spelling of a refused URI is read. Real client sessions; the engine refuses only the secret
readme (a deny-list)."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any
from urllib.parse import quote

import pytest
from fastmcp import Client as FastMCPClient
from fastmcp import FastMCP
from fastmcp.exceptions import FastMCPError
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.server import MCPServer
from mcp.shared.exceptions import MCPError
from pytest_toolpass import ScriptedEngine
from toolpass import Decision
from toolpass.mcp import Rule, guard

DANA = "dana@example.com"
SECRET = "repo://acme/secret/readme"
RULES = {"resources/read": Rule("files", "READ", "resource:{uri}")}


def reader(ran: list[str]) -> Any:
    def readme(owner: str, name: str) -> str:
        ran.append(f"{owner}/{name}")
        return f"# {owner}/{name}"

    return readme


def servers() -> list[tuple[Any, list[str], ScriptedEngine]]:
    made: list[tuple[Any, list[str], ScriptedEngine]] = []
    for kind in (MCPServer, FastMCP):
        server, ran = kind("ops"), []
        server.resource("repo://{owner}/{name}/readme")(reader(ran))
        engine = ScriptedEngine(
            {(DANA, "READ", f"resource:{SECRET}"): Decision.deny("private")}, default="allow"
        )
        guard(server, engine, RULES, user=DANA)
        made.append((server, ran, engine))
    return made


async def read(server: Any, uri: str) -> str:
    async def go() -> str:
        try:
            if isinstance(server, FastMCP):
                async with FastMCPClient(server) as client:
                    return str((await client.read_resource(uri))[0].text)
            async with Client(server) as client:
                return str((await client.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
        except Exception as error:  # the server's refusal, in anyio's exception groups
            while isinstance(getattr(error, "exceptions", None), tuple):
                error = error.exceptions[0]  # type: ignore[attr-defined]
            if not isinstance(error, (MCPError, FastMCPError)):
                raise
            return f"[error] {error}"

    return await asyncio.create_task(go(), context=contextvars.copy_context())


SERVERS = servers()


def spellings() -> st.SearchStrategy[str]:
    """``SECRET`` with any of its path's characters percent-encoded, its scheme in any case."""
    scheme = st.sampled_from(["repo", "REPO", "Repo", "rEpO"])
    path = "acme/secret/readme"
    chars = [
        st.sampled_from([c, quote(c, safe=""), f"%{ord(c):02X}", f"%{ord(c):02x}"]) for c in path
    ]
    return st.tuples(scheme, st.tuples(*chars).map("".join)).map(lambda p: f"{p[0]}://{p[1]}")


@settings(max_examples=40, deadline=None)
@given(uri=spellings())
@example(uri="REPO://acme/secret/readme")
@example(uri="repo://acme/%73ecret/readme")
def test_no_spelling_of_a_refused_uri_reads_it(uri: str) -> None:
    for server, ran, _ in SERVERS:
        out = asyncio.run(read(server, uri))
        assert "acme/secret" not in ran, f"{type(server).__name__} read {uri!r}: {out}"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "uri",
    [
        "repo://acme/widgets/../secret/readme",
        "repo://acme/./secret/readme",
        "repo://acme/%2e%2e/readme",
    ],
)
async def test_a_uri_with_dot_segments_is_refused_or_read_as_normalized(uri: str) -> None:
    for server, ran, _ in SERVERS:
        out = await read(server, uri)
        assert "Refused by toolpass" in out or "not found" in out  # fastmcp: '..' resolved
        assert ran == []


@pytest.mark.asyncio
async def test_a_plain_uri_is_read_and_asked_as_it_is() -> None:
    for server, ran, engine in SERVERS:
        ran.clear()
        assert await read(server, "repo://acme/widgets/readme") == "# acme/widgets"
        assert engine.asked[-1][3] == "resource:repo://acme/widgets/readme"
        assert ran == ["acme/widgets"]
