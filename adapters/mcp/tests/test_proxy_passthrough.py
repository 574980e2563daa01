"""``toolpass mcp-proxy`` passes the whole protocol on: the proxy as a real subprocess in
front of a real MCP server using every part of MCP (``full_upstream.py``, on stdio and on
streamable HTTP), driven by the mcp ``Client`` with its own sampling, elicitation, roots,
logging and progress callbacks. Resources and prompts pass the guard as tools do. Both
processes are started warm (warm_python.py: forked once mcp is imported)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from conformance_run import free_port, wait_listening
from fakes.github import FakeGitHub
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_client import text_of
from mcp_types import (
    CreateMessageResult,
    ElicitResult,
    ListRootsResult,
    PromptReference,
    ResourceUpdatedNotification,
    Root,
    TextContent,
)
from test_proxy import TOKEN, audit, config, environment, github, proxy
from warm_python import python

__all__ = ["github"]  # the fixture, shared with test_proxy

# The 2025 methods the 2026-07-28 protocol deprecates (logging, subscriptions, roots) are
# passed on all the same.
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
HERE = Path(__file__).resolve().parent
UPSTREAM = str(HERE / "full_upstream.py")
USER = "dana@example.com"


def events(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "upstream.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    return [json.loads(line) for line in lines]


def section(tmp_path: Path, extra: str = "") -> str:
    audit_file = tmp_path / "audit.jsonl"
    return f"  user: {USER}\n  audit: {audit_file}\n  upstream_env: [UPSTREAM_LOG]\n{extra}"


class Host:
    """What an agent host answers the server's requests with; what it was told."""

    def __init__(self) -> None:
        self.sampled: list[str] = []
        self.logs: list[str] = []
        self.notified: list[Any] = []

    async def sample(self, context: Any, params: Any) -> CreateMessageResult:
        self.sampled.append(params.messages[0].content.text)
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="42"), model="scripted"
        )

    async def elicit(self, context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"colour": "teal"})

    async def roots(self, context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///work/project")])

    async def log(self, params: Any) -> None:
        self.logs.append(str(params.data))

    async def message(self, message: Any) -> None:
        self.notified.append(message)

    def client(self, server: Any, **options: Any) -> Client:
        callbacks = {
            "sampling_callback": self.sample,
            "elicitation_callback": self.elicit,
            "list_roots_callback": self.roots,
            "logging_callback": self.log,
            "message_handler": self.message,
        }
        return Client(server, mode="legacy", **{**callbacks, **options})


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_every_method_and_notification_passes_both_ways(
    tmp_path: Path, github: FakeGitHub, transport: str
) -> None:
    env = environment(tmp_path)
    cfg = config(tmp_path, github, section(tmp_path))
    upstream: list[str] = ["--", *python(UPSTREAM)]
    web: subprocess.Popen[bytes] | None = None
    if transport == "http":
        port = free_port()
        web = subprocess.Popen(
            python(UPSTREAM, "http", str(port)), env=env, stderr=subprocess.DEVNULL
        )
        wait_listening(port, web)
        upstream = ["--url", f"http://127.0.0.1:{port}/mcp"]
    host = Host()
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    try:
        async with host.client(proxy(cfg, env, *upstream, warm=True)) as client:
            assert client.instructions == "The upstream's instructions."
            resources = await client.list_resources()
            assert [str(r.uri) for r in resources.resources] == ["note://readme"]
            templates = await client.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == ["note://{name}/text"]
            read = await client.read_resource("note://readme")
            assert read.contents[0].text == "the readme"  # type: ignore[union-attr]
            assert (await client.read_resource("note://ada/text")).contents[0].text == "note ada"  # type: ignore[union-attr]
            assert [p.name for p in (await client.list_prompts()).prompts] == ["greet"]
            prompt = await client.get_prompt("greet", {"name": "Ada"})
            assert prompt.messages[0].content.text == "Say hello to Ada."  # type: ignore[union-attr]
            done = await client.complete(
                PromptReference(name="greet"), {"name": "name", "value": "A"}
            )
            assert done.completion.values == ["Ada", "Alan"]
            await client.set_logging_level("debug")
            await client.subscribe_resource("note://readme")
            await client.session.unsubscribe_resource("note://readme")
            assert (
                text_of(await client.call_tool("ask_model", {"prompt": "6*7?"})) == "model said: 42"
            )
            assert host.sampled == ["6*7?"]
            assert (
                text_of(await client.call_tool("ask_user", {"question": "colour?"}))
                == "user accept: teal"
            )
            assert text_of(await client.call_tool("where", {})) == "file:///work/project"
            slow = await client.call_tool("slow", {}, progress_callback=on_progress)
            assert text_of(slow) == "slow done"
            assert progress == [(1, "step 1"), (2, "step 2"), (3, "step 3")]
            assert host.logs == ["did step 1", "did step 2", "did step 3"]
            echoed = await client.call_tool("echo_meta", {}, meta={"trace": "t-1"})  # type: ignore[typeddict-unknown-key]
            assert json.loads(text_of(echoed)) == {"trace": "t-1"}
            await client.call_tool("touch", {})
            with anyio.fail_after(10):
                while not any(isinstance(n, ResourceUpdatedNotification) for n in host.notified):
                    await anyio.sleep(0.05)
    finally:
        if web is not None:
            web.terminate()
            web.wait(timeout=10)
    seen = [e["event"] for e in events(tmp_path)]
    assert [e for e in seen if "sub" in e or e == "set_level"] == [
        "set_level",
        "subscribe",
        "unsubscribe",
    ]
    called = [e["tool"] for e in audit(tmp_path)]
    assert called.count("resources/read") == 2
    assert called.count("prompts/get") == 1


@pytest.mark.asyncio
async def test_the_upstream_sees_the_clients_capabilities(
    tmp_path: Path, github: FakeGitHub
) -> None:
    env = environment(tmp_path)
    params = proxy(
        config(tmp_path, github, section(tmp_path)), env, "--", *python(UPSTREAM), warm=True
    )
    async with Host().client(params) as client:
        assert text_of(await client.call_tool("capabilities", {})) == "sampling,elicitation,roots"
    async with Client(params, mode="legacy") as bare:
        assert text_of(await bare.call_tool("capabilities", {})) == "none"


@pytest.mark.asyncio
async def test_a_cancelled_call_is_cancelled_upstream(tmp_path: Path, github: FakeGitHub) -> None:
    env = environment(tmp_path)
    params = proxy(
        config(tmp_path, github, section(tmp_path)), env, "--", *python(UPSTREAM), warm=True
    )
    async with Host().client(params) as client:
        with anyio.move_on_after(30):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(client.call_tool, "wait", {})
                while "waiting" not in [e["event"] for e in events(tmp_path)]:
                    await anyio.sleep(0.05)
                tasks.cancel_scope.cancel()
        with anyio.fail_after(10):
            while "cancelled" not in [e["event"] for e in events(tmp_path)]:
                await anyio.sleep(0.05)


@pytest.mark.asyncio
async def test_a_tool_the_upstream_adds_is_served_once_it_says_so(
    tmp_path: Path, github: FakeGitHub
) -> None:
    env = environment(tmp_path)
    params = proxy(
        config(tmp_path, github, section(tmp_path)), env, "--", *python(UPSTREAM), warm=True
    )
    host = Host()
    async with host.client(params) as client:
        assert "grown" not in [t.name for t in (await client.list_tools()).tools]
        assert text_of(await client.call_tool("grow", {})) == "grew"
        with anyio.fail_after(10):
            while "grown" not in [t.name for t in (await client.list_tools()).tools]:
                await anyio.sleep(0.05)
        assert text_of(await client.call_tool("grown", {})) == "grown ran"
    assert "grown" in [e["event"] for e in events(tmp_path)]


@pytest.mark.asyncio
async def test_strict_refuses_resources_and_prompts_without_a_rule(
    tmp_path: Path, github: FakeGitHub
) -> None:
    env = environment(tmp_path)
    cfg = config(tmp_path, github, section(tmp_path, "  strict: true\n"))
    async with Host().client(proxy(cfg, env, "--", *python(UPSTREAM), warm=True)) as client:
        with pytest.raises(MCPError, match="Refused by toolpass"):
            await client.read_resource("note://readme")
        with pytest.raises(MCPError, match="Refused by toolpass"):
            await client.get_prompt("greet", {"name": "Ada"})
        assert (await client.list_resources()).resources  # listing is not a read
    assert [e["event"] for e in events(tmp_path)] == []  # neither reached the upstream
    refused = [(e["tool"], e["outcome"]) for e in audit(tmp_path)]
    assert ("resources/read", "refused") in refused
    assert ("prompts/get", "refused") in refused


@pytest.mark.asyncio
async def test_nothing_the_upstream_sends_carries_the_connections_secrets(
    tmp_path: Path, github: FakeGitHub
) -> None:
    env = environment(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text(f"the token is {TOKEN}", encoding="utf-8")
    params = proxy(
        config(tmp_path, github, section(tmp_path)), env, "--", *python(UPSTREAM), warm=True
    )
    host, said = Host(), []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        said.append(message or "")

    async with host.client(params) as client:
        result = await client.call_tool(
            "shout", {"path": str(secret)}, progress_callback=on_progress
        )
    everything = [text_of(result), *host.logs, *host.sampled, *said]
    assert len(everything) == 4
    assert all("the token is" in text for text in everything)
    assert not any(TOKEN in text for text in everything)
