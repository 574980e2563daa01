"""A ``fastmcp`` server's resources and prompts under ``FastMCPGuard``, as the SDK middleware's
(test_reads.py): ``resources/read`` and ``prompts/get`` are checked as calls (a rule may name
them; ``strict=True`` refuses them without one), their results carry no connection's secret,
and a listing checks the rules against the tools. Real fastmcp in-memory client sessions."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.github import FakeGitHub
from fastmcp import Client, FastMCP
from fastmcp.exceptions import FastMCPError
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.shared.exceptions import MCPError
from mcp_client import token_for
from pytest_toolpass import ScriptedEngine
from toolpass import AuditEvent, Decision, Toolkit, Toolpass
from toolpass.mcp import FastMCPGuard, Rule, guard

TOKEN = "ghp_fastreads00000000000000000000000000"
DANA, RORY = "dana@example.com", "rory@example.com"
SECRET = "repo://acme/secret/readme"


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Toolpass]:
    with FakeGitHub() as gh:
        gh.add_repo("acme/widgets", {"dana": "write"})
        gh.add_token(TOKEN)
        monkeypatch.setenv("FAST_READS_GITHUB_TOKEN", TOKEN)
        conn = {
            "id": "github",
            "integration": "github",
            "url": gh.api_url,
            "token": "env:FAST_READS_GITHUB_TOKEN",
            "identity": {"mode": "users", "users": {DANA: "dana"}},
        }
        with Toolpass([conn]) as tp:
            yield tp


def ops() -> tuple[FastMCP, list[str]]:
    server = FastMCP("ops")
    ran: list[str] = []

    @server.resource("repo://{owner}/{name}/readme")
    def readme(owner: str, name: str) -> str:
        ran.append(f"readme {owner}/{name}")
        return f"# {owner}/{name} token={TOKEN}"

    @server.prompt()
    def triage(repo: str) -> str:
        ran.append(f"triage {repo}")
        return f"Triage the open issues of {repo} with {TOKEN}."

    @server.tool()
    def settings() -> str:
        """The server's settings."""
        ran.append("settings")
        return "ok"

    return server, ran


async def session(server: FastMCP, user: str, go: Any) -> Any:
    """``go(client)`` in a fastmcp client session of ``user``: its result, or the error."""

    async def run() -> Any:
        auth_context_var.set(token_for(user))
        async with Client(server) as client:
            try:
                return await go(client)
            except (MCPError, FastMCPError) as error:  # the server's refusal, as fastmcp reads it
                return error

    return await asyncio.create_task(run(), context=contextvars.copy_context())


async def read(client: Client) -> Any:
    return await client.read_resource(SECRET)


async def prompt(client: Client) -> Any:
    return await client.get_prompt("triage", {"repo": "acme/widgets"})


@pytest.mark.asyncio
async def test_a_fastmcp_resource_read_and_prompt_are_checked_by_their_rules() -> None:
    server, ran = ops()
    events: list[AuditEvent] = []
    engine = ScriptedEngine(
        {
            (DANA, "READ", f"resource:{SECRET}"): Decision.allow(),
            (DANA, "PROMPT", "prompt:triage"): Decision.allow(),
        }
    )
    rules = {
        "resources/read": Rule("files", "READ", "resource:{uri}"),
        "prompts/get": Rule("files", "PROMPT", "prompt:{name}"),
    }
    added = guard(server, engine, rules, toolkit=Toolkit(audit=[events.append]))
    assert isinstance(added, FastMCPGuard)

    for go in (read, prompt):
        refused = await session(server, RORY, go)
        assert isinstance(refused, Exception)
        assert "Refused by toolpass (not_authorized)" in str(refused)
    assert ran == []
    contents = await session(server, DANA, read)
    assert contents[0].text.startswith("# acme/secret")
    got = await session(server, DANA, prompt)
    assert "Triage the open issues of acme/widgets" in got.messages[0].content.text
    assert ran == ["readme acme/secret", "triage acme/widgets"]
    assert [(e.tool, e.user, e.outcome) for e in events] == [
        ("resources/read", RORY, "refused"),
        ("prompts/get", RORY, "refused"),
        ("resources/read", DANA, "ok"),
        ("prompts/get", DANA, "ok"),
    ]


@pytest.mark.asyncio
async def test_fastmcp_strict_refuses_resources_and_prompts_without_a_rule(
    engine: Toolpass,
) -> None:
    server, ran = ops()
    guard(server, engine, strict=True, user=DANA)
    for go in (read, prompt):
        refused = await session(server, DANA, go)
        assert isinstance(refused, Exception)
        assert "Refused by toolpass (not_configured)" in str(refused)
    assert ran == []


@pytest.mark.asyncio
async def test_fastmcp_resources_and_prompts_never_carry_the_connections_secrets(
    engine: Toolpass,
) -> None:
    server, ran = ops()
    guard(server, engine, user=DANA)
    contents = await session(server, DANA, read)
    assert contents[0].text == "# acme/secret token=[REDACTED]"
    got = await session(server, DANA, prompt)
    assert TOKEN not in str(got)
    assert "[REDACTED]" in got.messages[0].content.text
    assert ran == ["readme acme/secret", "triage acme/widgets"]


@pytest.mark.asyncio
async def test_a_fastmcp_listing_checks_the_rules_against_the_tools() -> None:
    server, _ = ops()
    engine = ScriptedEngine({})
    guard(server, engine, {"settings": Rule("files", "READ", "settings:{section}")})

    async def listed(client: Client) -> Any:
        return await client.list_tools()

    with pytest.warns(UserWarning, match="section"):
        await session(server, DANA, listed)
