"""Attacks on ``toolpass mcp-proxy``'s pass-through: under ``strict`` nothing that runs the
upstream's code on a resource or prompt gets past without a rule (completions, which list
a template's or a prompt's values, and subscriptions, as reads are). The proxy as a real
subprocess in front of ``full_upstream.py`` (both started warm: warm_python.py), driven by
the mcp ``Client``."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.github import FakeGitHub
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference, ResourceTemplateReference
from test_proxy import TOKEN, audit, config, environment, github, proxy
from test_proxy_passthrough import UPSTREAM, Host, events, section
from warm_python import python

__all__ = ["github"]  # the fixture, shared with test_proxy

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


@pytest.mark.asyncio
async def test_strict_refuses_completions_and_subscriptions_without_a_rule(
    tmp_path: Path, github: FakeGitHub
) -> None:
    env = environment(tmp_path)
    cfg = config(tmp_path, github, section(tmp_path, "  strict: true\n"))
    template = ResourceTemplateReference(uri="note://{name}/text")
    async with Host().client(proxy(cfg, env, "--", *python(UPSTREAM), warm=True)) as client:
        with pytest.raises(MCPError, match="Refused by toolpass"):
            await client.complete(template, {"name": "name", "value": ""})
        with pytest.raises(MCPError, match="Refused by toolpass"):
            await client.complete(PromptReference(name="greet"), {"name": "name", "value": "A"})
        with pytest.raises(MCPError, match="Refused by toolpass"):
            await client.subscribe_resource("note://readme")
        assert (await client.list_resources()).resources  # listing is not a read
    assert [e["event"] for e in events(tmp_path)] == []  # nothing reached the upstream
    refused = [(e["tool"], e["outcome"], e["code"]) for e in audit(tmp_path)]
    assert refused == [
        ("completion/complete", "refused", "not_configured"),
        ("completion/complete", "refused", "not_configured"),
        ("resources/subscribe", "refused", "not_configured"),
    ]


@pytest.mark.asyncio
async def test_a_rule_for_completions_and_subscriptions_is_asked(
    tmp_path: Path, github: FakeGitHub
) -> None:
    """A rule naming the methods checks them as calls: dana may read acme/widgets (the
    fake GitHub says), so both pass; the completion's reference and argument fill the rule."""
    rules = (
        "  strict: true\n"
        "  rules:\n"
        "    completion/complete, resources/subscribe:\n"
        "      {connection: github, action: contents.read, resource: 'repo:acme/widgets'}\n"
    )
    env = environment(tmp_path)
    cfg = config(tmp_path, github, section(tmp_path, rules))
    async with Host().client(proxy(cfg, env, "--", *python(UPSTREAM), warm=True)) as client:
        done = await client.complete(PromptReference(name="greet"), {"name": "name", "value": "A"})
        assert done.completion.values == ["Ada", "Alan"]
        await client.subscribe_resource("note://readme")
    assert [e["event"] for e in events(tmp_path)] == ["subscribe"]
    checked = [(e["tool"], e["outcome"]) for e in audit(tmp_path)]
    assert checked == [("completion/complete", "ok"), ("resources/subscribe", "ok")]


LEAKY = str(Path(__file__).resolve().parent / "leaky_upstream.py")


@pytest.mark.asyncio
async def test_nothing_but_results_carries_the_connections_secrets_either(
    tmp_path: Path, github: FakeGitHub
) -> None:
    """The upstream came across the engine's token (a file it read): its instructions and
    the errors of messages the guard does not check (a completion, a subscription) reach
    the client without it, as its results do."""
    secret = tmp_path / "secret.txt"
    secret.write_text(f"the token is {TOKEN}", encoding="utf-8")
    env = {**environment(tmp_path), "LEAK_FILE": str(secret)}
    cfg = config(tmp_path, github, section(tmp_path).replace("UPSTREAM_LOG", "LEAK_FILE"))
    said: list[str] = []
    async with Host().client(proxy(cfg, env, "--", *python(LEAKY), warm=True)) as client:
        said.append(client.instructions or "")
        with pytest.raises(MCPError) as completing:
            await client.complete(PromptReference(name="greet"), {"name": "name", "value": ""})
        said += [completing.value.error.message, str(completing.value.error.data)]
        with pytest.raises(MCPError) as subscribing:
            await client.subscribe_resource("note://ada/text")
        said.append(subscribing.value.error.message)
    assert len(said) == 4
    assert all("the token is" in text for text in said)
    assert not any(TOKEN in text for text in said)


@pytest.mark.asyncio
async def test_strict_refuses_watching_a_resource_through_a_listen_stream_too(
    tmp_path: Path, github: FakeGitHub
) -> None:
    """On 2026-07-28 a resource is watched with ``subscriptions/listen``
    (``resourceSubscriptions``): checked as ``resources/subscribe`` is, each resource a call;
    a stream that watches no resource (list changes only) is a listing, not checked."""
    env = environment(tmp_path)
    cfg = config(tmp_path, github, section(tmp_path, "  strict: true\n"))
    server = proxy(cfg, env, "--", *python(UPSTREAM), warm=True)
    async with Client(server, mode="2026-07-28") as client:
        with pytest.raises(MCPError, match="Refused by toolpass"):
            async with client.listen(resource_subscriptions=["note://readme"]):
                pass
        async with client.listen(tools_list_changed=True) as stream:
            assert stream.honored.tools_list_changed
    refused = [(e["tool"], e["outcome"], e.get("code")) for e in audit(tmp_path)]
    assert refused == [("resources/subscribe", "refused", "not_configured")]
