"""Attacks on the redaction of a guarded MCP server's results: a connection's secret inside the
base64 of an image, an audio clip or a binary resource (which the client decodes), or split
across a result's text blocks (which the client's model reads as one text). Real client
sessions against a real engine's configured secret."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client as FastMCPClient
from fastmcp import FastMCP
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.server import MCPServer
from mcp.server.mcpserver.utilities.types import Audio, Image
from mcp_types import AudioContent, ImageContent, TextContent
from toolpass import Toolpass, literal
from toolpass.mcp import guard

TOKEN = "ghp_binary000000000000000000000000000000"
DANA = "dana@example.com"


@pytest.fixture(scope="module")
def engine() -> Iterator[Toolpass]:
    from fakes.github import FakeGitHub

    with FakeGitHub() as gh:
        gh.add_token(TOKEN)
        conn = {
            "id": "github",
            "integration": "github",
            "url": gh.api_url,
            "token": literal(TOKEN),
            "identity": {"mode": "users", "users": {DANA: "dana"}},
        }
        with Toolpass([conn]) as tp:
            yield tp


def leaky(prefix: bytes = b"", cut: int = 10) -> MCPServer:
    server = MCPServer("leaky")
    payload = prefix + b"GITHUB_TOKEN=" + TOKEN.encode() + b"\n"

    @server.tool()
    def screenshot() -> Image:
        """A screenshot of the settings page."""
        return Image(data=payload, format="png")

    @server.tool()
    def recording() -> Audio:
        """The last call's recording."""
        return Audio(data=payload, format="wav")

    @server.tool()
    def pieces() -> list[str]:
        """The settings, in pieces."""
        return [f"token={TOKEN[:cut]}", TOKEN[cut:]]

    @server.resource("file:///app/env", mime_type="application/octet-stream")
    def env() -> bytes:
        return payload

    return server


def decoded(data: str) -> bytes:
    return base64.b64decode(data)


@pytest.mark.asyncio
async def test_a_secret_in_binary_contents_is_redacted(engine: Toolpass) -> None:
    server = leaky()
    guard(server, engine, user=DANA)
    async with Client(server) as client:
        image = (await client.call_tool("screenshot", {})).content[0]
        audio = (await client.call_tool("recording", {})).content[0]
        blob = (await client.read_resource("file:///app/env")).contents[0]
    assert isinstance(image, ImageContent)
    assert isinstance(audio, AudioContent)
    for data in (image.data, audio.data, blob.blob):  # type: ignore[union-attr]
        assert TOKEN.encode() not in decoded(data)
        assert b"GITHUB_TOKEN=[REDACTED]" in decoded(data)


@pytest.mark.asyncio
async def test_a_secret_split_across_text_blocks_is_redacted(engine: Toolpass) -> None:
    server = leaky()
    guard(server, engine, user=DANA)
    async with Client(server) as client:
        result = await client.call_tool("pieces", {})
    texts = "".join(c.text for c in result.content if isinstance(c, TextContent))
    assert TOKEN not in texts
    assert "[REDACTED]" in texts


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(prefix=st.binary(max_size=7), cut=st.integers(min_value=1, max_value=len(TOKEN) - 1))
@pytest.mark.asyncio
async def test_no_alignment_or_cut_of_the_secret_gets_through(
    engine: Toolpass, prefix: bytes, cut: int
) -> None:
    server = leaky(prefix, cut)
    guard(server, engine, user=DANA)
    async with Client(server) as client:
        image = (await client.call_tool("screenshot", {})).content[0]
        pieces = await client.call_tool("pieces", {})
    assert TOKEN.encode() not in decoded(image.data)  # type: ignore[union-attr]
    assert TOKEN not in "".join(c.text for c in pieces.content if isinstance(c, TextContent))


@pytest.mark.asyncio
async def test_fastmcp_binary_contents_are_redacted(engine: Toolpass) -> None:
    server = FastMCP("leaky")
    payload = b"GITHUB_TOKEN=" + TOKEN.encode()

    @server.tool()
    def screenshot() -> Any:
        """A screenshot."""
        from fastmcp.utilities.types import Image as FastImage

        return FastImage(data=payload, format="png")

    @server.resource("file:///app/env", mime_type="application/octet-stream")
    def env() -> bytes:
        return payload

    guard(server, engine, user=DANA)
    async with FastMCPClient(server) as client:
        image = (await client.call_tool("screenshot", {})).content[0]
        blob = (await client.read_resource("file:///app/env"))[0]
    assert TOKEN.encode() not in decoded(image.data)  # type: ignore[union-attr]
    assert TOKEN.encode() not in decoded(blob.blob)  # type: ignore[union-attr]
