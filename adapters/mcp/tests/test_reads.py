"""What a guarded server gives back besides a tool call: ``resources/read`` and ``prompts/get``
are checked as calls (a rule may name them; ``strict=True`` refuses them without one), and no
result carries the engine's connections' secrets. Real client sessions, a real engine asking
a fake GitHub on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.github import FakeGitHub
from mcp import Client
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.shared.exceptions import MCPError
from mcp_client import text_of, token_for
from pytest_toolpass import ScriptedEngine
from toolpass import AuditEvent, Decision, Toolkit, Toolpass
from toolpass.mcp import Rule, guard

TOKEN = "ghp_reads0000000000000000000000000000000"
DANA, RORY = "dana@example.com", "rory@example.com"


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Toolpass]:
    with FakeGitHub() as gh:
        gh.add_repo("acme/widgets", {"dana": "write", "rory": "read"})
        gh.add_repo("acme/secret", {"dana": "read"})
        gh.add_token(TOKEN)
        monkeypatch.setenv("READS_TEST_GITHUB_TOKEN", TOKEN)
        conn = {
            "id": "github",
            "integration": "github",
            "url": gh.api_url,
            "token": "env:READS_TEST_GITHUB_TOKEN",
            "identity": {"mode": "users", "users": {DANA: "dana", RORY: "rory"}},
        }
        with Toolpass([conn]) as tp:
            yield tp


def ops() -> tuple[MCPServer, list[str]]:
    server = MCPServer("ops")
    ran: list[str] = []

    @server.resource("repo://{owner}/{name}/readme")
    def readme(owner: str, name: str) -> str:
        ran.append(f"readme {owner}/{name}")
        return f"# {owner}/{name}"

    @server.prompt()
    def triage(repo: str) -> str:
        ran.append(f"triage {repo}")
        return f"Triage the open issues of {repo}."

    @server.tool()
    def settings() -> str:
        """The server's settings."""
        ran.append("settings")
        return f"token={TOKEN}"

    return server, ran


async def session(server: MCPServer, user: str, go: Any) -> Any:
    """``go(client)`` in a client session of ``user``: its result, or the MCPError raised."""
    auth_context_var.set(token_for(user))
    async with Client(server) as client:
        try:
            return await go(client)
        except MCPError as error:
            return error


SECRET = "repo://acme/secret/readme"


@pytest.mark.asyncio
async def test_a_resource_read_is_checked_by_its_rule() -> None:
    server, ran = ops()
    events: list[AuditEvent] = []
    engine = ScriptedEngine({(DANA, "READ", f"resource:{SECRET}"): Decision.allow()})
    rules = {"resources/read": Rule("files", "READ", "resource:{uri}")}
    guard(server, engine, rules, toolkit=Toolkit(audit=[events.append]))

    async def read(client: Client) -> Any:
        return await client.read_resource(SECRET)

    refused = await session(server, RORY, read)
    assert "Refused by toolpass (not_authorized)" in refused.error.message
    assert ran == []
    result = await session(server, DANA, read)
    assert result.contents[0].text == "# acme/secret"
    assert ran == ["readme acme/secret"]
    assert [(e.tool, e.user, e.outcome) for e in events] == [
        ("resources/read", RORY, "refused"),
        ("resources/read", DANA, "ok"),
    ]


@pytest.mark.asyncio
async def test_strict_refuses_resources_and_prompts_without_a_rule(engine: Toolpass) -> None:
    server, ran = ops()
    guard(server, engine, strict=True, user=DANA)

    async def read(client: Client) -> Any:
        return await client.read_resource("repo://acme/widgets/readme")

    async def prompt(client: Client) -> Any:
        return await client.get_prompt("triage", {"repo": "acme/widgets"})

    for go in (read, prompt):
        refused = await session(server, DANA, go)
        assert "Refused by toolpass (not_configured)" in refused.error.message
    assert ran == []


@pytest.mark.asyncio
async def test_results_never_carry_the_connections_secrets(engine: Toolpass) -> None:
    server, ran = ops()
    guard(server, engine)

    async def call(client: Client) -> str:
        return text_of(await client.call_tool("settings", {}))

    assert await session(server, DANA, call) == "token=[REDACTED]"
    assert ran == ["settings"]
