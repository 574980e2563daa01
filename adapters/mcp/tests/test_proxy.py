"""``toolpass mcp-proxy`` end to end: the proxy as a real subprocess (started through the
``toolpass`` command) in front of a real MCP server that knows nothing of toolpass (on stdio,
and on streamable HTTP), driven by the mcp ``Client``; the engine asks a fake GitHub on
127.0.0.1. A refused call never reaches the upstream, the model reads why, every call is one
audit event. Then the configuration's mistakes, each named with its file and line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.github import FakeGitHub
from mcp import Client, StdioServerParameters
from mcp_client import text_of
from toolpass import ConfigError
from toolpass.engine.config import load_config
from toolpass.mcp.proxy import main, parse_mcp_section, secret_variables
from warm_python import python

HERE = Path(__file__).resolve().parent
UPSTREAM = str(HERE / "upstream_server.py")
TOKEN = "ghp_engine000000000000000000000000000000"
RORY, DANA = "rory@example.com", "dana@example.com"


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        roles = {"dana": "write", "rory": "read"}
        repo = gh.add_repo("acme/widgets", roles, branches={"main": False})
        for number in range(1, 8):  # a merge's check reads its pull request (#7)
            pull = {"id": number, "number": number, "title": "fix", "body": None}
            repo.pulls.append({**pull, "user": {"login": "dana"}, "head_ref": "fix"})
            repo.pulls[-1]["base_ref"] = "main"
        gh.add_token(TOKEN)
        yield gh


def config(tmp_path: Path, github: FakeGitHub, mcp: str) -> Path:
    path = tmp_path / "toolpass.yaml"
    path.write_text(
        f"""connections:
  - id: github
    integration: github
    url: {github.api_url}
    token: env:PROXY_TEST_GITHUB_TOKEN
    identity:
      mode: users
      users: {{{DANA}: dana, {RORY}: rory}}
mcp:
{mcp}""",
        encoding="utf-8",
    )
    return path


MCP = """  user: {user}
  audit: {audit}
  upstream_env: [UPSTREAM_LOG, OTEL_SDK_DISABLED]
  rules:
    merge_pr: {{connection: github, action: pr.merge, resource: "pr:{{repo}}#{{number}}"}}
"""


def environment(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PROXY_TEST_GITHUB_TOKEN": TOKEN,
        "UPSTREAM_LOG": str(tmp_path / "upstream.jsonl"),
        "OTEL_SDK_DISABLED": "true",
    }


def ran(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "upstream.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def audit(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]


def proxy(
    cfg: Path, env: dict[str, str], *upstream: str, warm: bool = False
) -> StdioServerParameters:
    """``toolpass mcp-proxy`` (``python -m toolpass.cli``) in front of ``upstream``; ``warm``:
    started warm (warm_python.py). The command's cold start, and what it hands the upstream
    of its environment, stay tested cold."""
    run = ["-m", "toolpass.cli", "mcp-proxy", "-config", str(cfg), *upstream]
    command, *args = python(*run) if warm else [sys.executable, *run]
    return StdioServerParameters(command=command, args=args, env=env)


async def session(params: StdioServerParameters) -> tuple[list[str], list[str]]:
    async with Client(params) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        outputs = [
            text_of(await client.call_tool("merge_pr", {"repo": "acme/widgets", "number": 7})),
            text_of(await client.call_tool("read_file", {"path": "README.md"})),
            text_of(await client.call_tool("explode", {})),
        ]
    return listed, outputs


@pytest.mark.asyncio
async def test_the_proxy_refuses_before_the_upstream_and_audits_every_call(
    tmp_path: Path, github: FakeGitHub
) -> None:
    cfg = config(tmp_path, github, MCP.format(user=RORY, audit=tmp_path / "audit.jsonl"))
    env = environment(tmp_path)
    listed, outputs = await session(proxy(cfg, env, "--", *python(UPSTREAM)))
    assert listed[:3] == ["merge_pr", "read_file", "explode"]  # the upstream's, as they are
    assert outputs[0].startswith("[error] Refused by toolpass (not_authorized)")
    assert outputs[1] == "contents of README.md"  # no rule, not strict: runs (audited)
    assert outputs[2] == "[error] Error executing tool explode"  # MCP's own masking, kept
    assert [r["tool"] for r in ran(tmp_path)] == ["read_file", "explode"]  # merge never arrived
    events = audit(tmp_path)
    assert [(e["tool"], e["user"], e["code"]) for e in events] == [
        ("merge_pr", RORY, "not_authorized"),
        ("read_file", RORY, None),
        ("explode", RORY, None),
    ]


@pytest.fixture
def http_upstream(tmp_path: Path) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        python(UPSTREAM, "http", str(port)),
        env=environment(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the upstream did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.asyncio
async def test_an_allowed_call_reaches_an_upstream_on_streamable_http(
    tmp_path: Path, github: FakeGitHub, http_upstream: str
) -> None:
    cfg = config(tmp_path, github, MCP.format(user=DANA, audit=tmp_path / "audit.jsonl"))
    listed, outputs = await session(
        proxy(cfg, environment(tmp_path), "--url", http_upstream, warm=True)
    )
    assert listed == ["merge_pr", "read_file", "explode", "getenv", "show"]
    assert outputs[:2] == ["merged acme/widgets#7", "contents of README.md"]
    merged = {"tool": "merge_pr", "arguments": {"repo": "acme/widgets", "number": 7}}
    assert ran(tmp_path)[0] == merged
    events = audit(tmp_path)
    assert [(e["tool"], e["user"], e["outcome"]) for e in events] == [
        ("merge_pr", DANA, "ok"),
        ("read_file", DANA, "ok"),
        ("explode", DANA, "error"),  # the upstream made its failure an isError result
    ]


@pytest.mark.parametrize(
    ("section", "error"),
    [
        ("  user: 42\n", "line 10: mcp.user is the user"),
        ("  user: a@b.c\n  stric: true\n", "line 11: unknown key 'stric' in mcp"),
        ("  user: a@b.c\n  strict: yes please\n", "line 11: mcp.strict is true or false"),
        ("  user: a@b.c\n  rules: [merge_pr]\n", "line 11: mcp.rules maps tool names"),
        (
            "  user: a@b.c\n  rules:\n    merge_pr: {connection: github, action: pr.merge}\n",
            "line 12: the rule for 'merge_pr' lacks resource",
        ),
        (
            "  user: a@b.c\n  rules:\n    merge_pr:\n      connection: github\n      acton: x\n",
            "line 14: unknown key 'acton' in the rule for 'merge_pr'",
        ),
        (
            "  user: a@b.c\n  rules:\n    a, b: {connection: c, action: d, resource: e}\n"
            "    b: {connection: c, action: d, resource: e}\n",
            "line 13: 'b' has two rules",
        ),
        ("  user: env:PROXY_TEST_NOBODY\n", "line 10: mcp.user: the environment variable"),
        (
            "  user: a@b.c\n  rules:\n    merge_pr: {connection: c, action: d, resource: e, "
            "mode: watch}\n",
            "line 12: mode must be one of enforce, observe, not 'watch'",
        ),
    ],
)
def test_mistakes_in_the_mcp_section_name_file_and_line(
    tmp_path: Path, github: FakeGitHub, section: str, error: str
) -> None:
    cfg = config(tmp_path, github, section)
    loaded = load_config(cfg)
    with pytest.raises(ConfigError) as raised:
        parse_mcp_section(loaded.mcp, loaded.path)
    assert f"{cfg}, {error}" in str(raised.value)


def test_a_rule_for_a_tool_the_upstream_lacks_stops_the_proxy(
    tmp_path: Path,
    github: FakeGitHub,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    section = (
        "  user: a@b.c\n  rules:\n    merge_pr: {connection: github, action: pr.merge, "
        'resource: "pr:{repo}#{num}"}\n    close_pr: {connection: github, action: pr.update, '
        'resource: "pr:{repo}#{number}"}\n'
    )
    cfg = config(tmp_path, github, section)
    for name, value in environment(tmp_path).items():
        monkeypatch.setenv(name, value)
    assert main(["-config", str(cfg), "--", *python(UPSTREAM)]) == 3
    err = capsys.readouterr().err
    assert "names num, which the tool does not take" in err
    assert "rules for tools the agent does not have: close_pr" in err
    assert ran(tmp_path) == []


def test_a_rule_the_engine_cannot_answer_stops_the_proxy_before_it_starts_the_upstream(
    tmp_path: Path,
    github: FakeGitHub,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    section = (
        "  user: a@b.c\n  rules:\n    merge_pr: {connection: github, action: pr.squash, "
        'resource: "pr:{repo}#{number}"}\n'
    )
    cfg = config(tmp_path, github, section)
    monkeypatch.setenv("PROXY_TEST_GITHUB_TOKEN", TOKEN)
    assert main(["-config", str(cfg), "--", sys.executable, "-c", "raise SystemExit(9)"]) == 3
    assert "connection 'github' has no action 'pr.squash'" in capsys.readouterr().err


def test_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-config", "x.yaml"]) == 3
    assert main(["-config", "x.yaml", "--url", "http://127.0.0.1:1/mcp", "--", "srv"]) == 3
    assert "either as -- COMMAND" in capsys.readouterr().err
    assert main(["-config", "/nonexistent/toolpass.yaml", "--", "srv"]) == 3
    assert "cannot read" in capsys.readouterr().err


# What the upstream gets, what it may be asked, and what comes back.


async def calls(params: StdioServerParameters, *made: tuple[str, dict[str, Any]]) -> list[str]:
    async with Client(params) as client:
        return [text_of(await client.call_tool(name, arguments)) for name, arguments in made]


@pytest.mark.asyncio
async def test_the_upstream_gets_a_minimal_environment_never_the_engines_token(
    tmp_path: Path, github: FakeGitHub
) -> None:
    cfg = config(tmp_path, github, MCP.format(user=DANA, audit=tmp_path / "audit.jsonl"))
    env = {**environment(tmp_path), "PROXY_TEST_UNLISTED": "the proxy's own"}
    outputs = await calls(
        proxy(cfg, env, "--", *python(UPSTREAM)),
        *(
            ("getenv", {"name": name})
            for name in ("PROXY_TEST_GITHUB_TOKEN", "PROXY_TEST_UNLISTED")
        ),
        ("getenv", {"name": "PATH"}),
        ("getenv", {"name": "UPSTREAM_LOG"}),
    )
    assert outputs[:2] == ["(unset)", "(unset)"]  # not even redacted: never there
    assert outputs[2] == os.environ["PATH"]
    assert outputs[3] == str(tmp_path / "upstream.jsonl")  # named in upstream_env


@pytest.mark.parametrize(
    ("names", "error"),
    [
        ("PROXY_TEST_GITHUB_TOKEN", "PROXY_TEST_GITHUB_TOKEN holds a connection's secret"),
        ("'A-B'", "'A-B' is not a variable's name"),
        ("{}", "mcp.upstream_env is a list"),
    ],
)
def test_upstream_env_is_checked(
    tmp_path: Path, github: FakeGitHub, names: str, error: str
) -> None:
    cfg = config(tmp_path, github, f"  user: a@b.c\n  upstream_env: [{names}]\n")
    if names == "{}":
        cfg = config(tmp_path, github, "  user: a@b.c\n  upstream_env: {}\n")
    loaded = load_config(cfg)
    with pytest.raises(ConfigError) as raised:
        parse_mcp_section(loaded.mcp, loaded.path, secret_variables(loaded))
    assert f"{cfg}, line 11: mcp.upstream_env" in str(raised.value)
    assert error in str(raised.value)


@pytest.mark.asyncio
async def test_output_never_carries_the_connections_secrets(
    tmp_path: Path, github: FakeGitHub
) -> None:
    dump = tmp_path / "settings.txt"
    dump.write_text(f"github token: {TOKEN}\n", encoding="utf-8")
    cfg = config(tmp_path, github, MCP.format(user=DANA, audit=tmp_path / "audit.jsonl"))
    [shown] = await calls(
        proxy(cfg, environment(tmp_path), "--", *python(UPSTREAM), warm=True),
        ("show", {"path": str(dump)}),
    )
    assert shown == "github token: [REDACTED]\n"


@pytest.mark.asyncio
async def test_only_the_tools_the_upstream_listed_are_passed_on(
    tmp_path: Path, github: FakeGitHub
) -> None:
    cfg = config(tmp_path, github, MCP.format(user=DANA, audit=tmp_path / "audit.jsonl"))
    params = proxy(cfg, environment(tmp_path), "--", *python(UPSTREAM), warm=True)
    async with Client(params) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        [dropped] = [text_of(await client.call_tool("drop_database", {}))]
    assert "drop_database" not in listed
    assert dropped.startswith("[error] Refused by toolpass (invalid_arguments)"), dropped
    assert ran(tmp_path) == []
    assert [(e["tool"], e["code"]) for e in audit(tmp_path)] == [
        ("drop_database", "invalid_arguments")
    ]


@pytest.mark.asyncio
async def test_the_clients_calls_share_one_session(tmp_path: Path, github: FakeGitHub) -> None:
    """On the protocol the SDK negotiates by default every request is a connection of its
    own: the proxy's one client keeps one session across them."""
    cfg = config(tmp_path, github, MCP.format(user=DANA, audit=tmp_path / "audit.jsonl"))
    await calls(
        proxy(cfg, environment(tmp_path), "--", *python(UPSTREAM), warm=True),
        *[("read_file", {"path": "README.md"})] * 3,
    )
    sessions = {e["session"] for e in audit(tmp_path)}
    assert len(sessions) == 1, sessions


@pytest.mark.parametrize("copy", [TOKEN, f"Bearer {TOKEN}"])
def test_a_variable_holding_a_connections_secret_under_another_name_stops_the_proxy(
    tmp_path: Path,
    github: FakeGitHub,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    copy: str,
) -> None:
    cfg = config(tmp_path, github, "  user: a@b.c\n  upstream_env: [UPSTREAM_LOG, GH_TOKEN]\n")
    for name, value in environment(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GH_TOKEN", copy)  # the same token, read by the upstream's own CLI
    assert main(["-config", str(cfg), "--", *python(UPSTREAM)]) == 3
    err = capsys.readouterr().err
    assert "GH_TOKEN holds a connection's secret" in err
    assert TOKEN not in err
    assert ran(tmp_path) == []  # never started


def test_a_rule_may_observe_while_the_rest_enforce(tmp_path: Path, github: FakeGitHub) -> None:
    section = (
        "  user: a@b.c\n  rules:\n"
        "    merge_pr: {connection: github, action: pr.merge, resource: 'repo:{repo}', "
        "mode: observe}\n"
        "    read_file: {connection: github, action: contents.read, resource: 'repo:{repo}'}\n"
    )
    loaded = load_config(config(tmp_path, github, section))
    parsed = parse_mcp_section(loaded.mcp, loaded.path)
    assert parsed.rules["merge_pr"].mode == "observe"
    assert parsed.rules["read_file"].mode is None  # the guard's (and the file's) mode applies
