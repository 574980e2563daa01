"""Attacks on how a tool is named: a call whose name the guard reads one way and the server
another (case, Unicode look-alikes and compatibility forms, whitespace, zero-width
characters, ``/`` or ``.``) never runs a tool past its rule. Real client sessions against an
MCP SDK ``MCPServer`` and a ``fastmcp`` server, the rule's engine refusing everything."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from typing import Any

import pytest
from fastmcp import Client as FastMCPClient
from fastmcp import FastMCP
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.server import MCPServer
from pytest_toolpass import ScriptedEngine
from toolpass.mcp import Rule, guard

NAME = "delete_issue"
RULES = {NAME: Rule("jira", "DELETE_ISSUES", "issue:{key}")}
SEPARATORS = ["", " ", "\t", "\n", "\u200b", "\u00a0", "\ufeff", "/", ".", "\u2024"]


def variants() -> st.SearchStrategy[str]:
    """Names a lenient server might take for ``delete_issue``."""
    look_alike = {
        "e": ["E", "\u0435", "\uff45"],
        "i": ["I", "\u0456", "\u0131"],
        "_": ["-", "\uff3f"],
    }
    letters = [st.sampled_from([c, *look_alike.get(c, [])]) for c in NAME]
    body = st.tuples(*letters).map("".join)
    edge = st.sampled_from(SEPARATORS)
    prefix = st.sampled_from(["", "ops/", "ops.", "ops__", "mcp__ops__"])
    return st.tuples(prefix, edge, body, edge).map("".join).filter(lambda n: n != NAME)


def servers() -> list[tuple[Any, list[str]]]:
    made: list[tuple[Any, list[str]]] = []
    for kind in (MCPServer, FastMCP):
        server, ran = kind("ops"), []

        def delete_issue(key: str, ran: list[str] = ran) -> str:
            """Delete an issue."""
            ran.append(key)
            return "deleted"

        server.tool()(delete_issue)
        guard(server, ScriptedEngine({}), RULES, user="dana@example.com")
        made.append((server, ran))
    return made


async def call(server: Any, name: str) -> None:
    async def go() -> None:
        if isinstance(server, FastMCP):
            async with FastMCPClient(server) as client:
                await client.call_tool(name, {"key": "PAY-1"}, raise_on_error=False)
        else:
            async with Client(server) as client:
                await client.call_tool(name, {"key": "PAY-1"})

    with contextlib.suppress(Exception):  # an unknown tool may be an error: nothing ran
        await asyncio.create_task(go(), context=contextvars.copy_context())


SERVERS = servers()


@settings(max_examples=60, deadline=None)
@given(name=variants())
def test_no_other_spelling_of_a_ruled_tool_runs_it(name: str) -> None:
    for server, ran in SERVERS:
        asyncio.run(call(server, name))
        assert ran == [], f"{type(server).__name__} ran {NAME} for {name!r} past its rule"


@pytest.mark.asyncio
async def test_the_tool_itself_is_refused() -> None:
    for server, ran in SERVERS:
        await call(server, NAME)
        assert ran == []
