"""``toolpass mcp-proxy``: any MCP server behind toolpass, without changing its code.

::

    toolpass mcp-proxy [-config FILE] -- COMMAND [ARG ...]   an upstream run on stdio
    toolpass mcp-proxy [-config FILE] --url URL              an upstream on streamable HTTP

The proxy is an MCP server on stdio (what an agent host launches) that lists the upstream's
tools as they are and forwards each ``tools/call`` to it through the same guard as
``toolpass.mcp.guard``: the rule of the tool's name is asked of the connections of the
configuration, a refused call never reaches the upstream (the model reads why, as an
``isError`` result), and every call is one audit event. The configuration is toolpass's YAML
file (its ``connections``) with an ``mcp:`` section::

    mcp:
      user: dana@example.com          # who the calls act for (or env:NAME); required
      strict: true                    # a tool without a rule is refused (default: false)
      audit: /var/log/toolpass.jsonl  # one JSON line per call (default: to stderr)
      upstream_env: [JIRA_URL]        # variables the upstream gets beside the base ones
      rules:
        delete_issue: {connection: jira, action: DELETE_ISSUES, resource: "issue:{key}"}
        close_issue, reopen_issue:    # several tools, one rule
          connection: jira
          action: TRANSITION_ISSUES
          resource: "issue:{key}"

Mistakes in the section are errors naming the file and line; a rule for a tool the upstream
does not have, or naming an argument its tool does not take, stops the proxy before it serves.

An upstream run on stdio gets a minimal environment, never the proxy's (which holds the
engine's secrets): ``BASE_ENV`` (``PATH``, ``HOME``, ``LANG``, ...) and the variables
``upstream_env`` names; naming one a connection's secret is read from, or one holding a
connection's secret under another name, is an error. Only the
tools the upstream listed when the proxy started are served (a call of any other name is
refused, never passed on); resources and prompts are not served. Every result reaches the
client without the connections' secrets. The proxy serves one client, on stdio: its calls
share one session (limits, the record of untrusted content) until the proxy exits.
Exit status: 0 when the client closes the session, 3 for bad usage or configuration.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    Tool,
)
from toolpass import Config, ConfigError, JsonlSink, LogSink, Toolkit, Toolpass, load_config
from toolpass.adapting import Rule, ToolRefused
from toolpass.mcp import guard

from mcp import Client, StdioServerParameters
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["ProxyConfig", "main", "parse_mcp_section", "serve"]

ERROR = 3
_KEYS = ("user", "strict", "audit", "rules", "upstream_env")
#: What an upstream on stdio gets of the proxy's environment, beside ``upstream_env``.
BASE_ENV: tuple[str, ...] = (
    *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TEMP", "TMP"),
    *("LANG", "LC_ALL", "LC_CTYPE", "TZ"),
    *("SYSTEMROOT", "APPDATA", "LOCALAPPDATA", "USERPROFILE"),  # Windows
)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RULE_KEYS = ("connection", "action", "resource", "fresh")
log = logging.getLogger("toolpass")


@dataclass(frozen=True)
class ProxyConfig:
    """The ``mcp:`` section of a configuration."""

    user: str
    strict: bool = False
    audit: str | None = None
    rules: dict[str | tuple[str, ...], Rule] = field(default_factory=dict)
    upstream_env: tuple[str, ...] = ()


def parse_mcp_section(
    section: Mapping[str, Any], path: str | None, secrets: Collection[str] = ()
) -> ProxyConfig:
    """Validate the ``mcp:`` section; errors name the file and line (``ConfigError``).
    ``secrets``: the environment variables the connections read secrets from, which
    ``upstream_env`` may not name."""
    lines: Mapping[str, int] = getattr(section, "lines", {})

    def at(key: str, where: Mapping[str, Any] = section) -> str:
        line = getattr(where, "lines", {}).get(key) or getattr(where, "line", 0)
        return f"{path or 'configuration'}, line {line}" if line else f"{path or 'configuration'}"

    if not section:
        raise ConfigError(
            f"{path or 'configuration'}: mcp-proxy needs an 'mcp:' section (at least its user)"
        )
    for key in section:
        if key not in _KEYS:
            raise ConfigError(
                f"{at(key)}: unknown key {key!r} in mcp (expected one of {', '.join(_KEYS)})"
            )
    user = section.get("user")
    if not isinstance(user, str) or not user.strip():
        where = at("user") if "user" in lines else at("mcp")
        raise ConfigError(f"{where}: mcp.user is the user the calls act for (a string)")
    if user.startswith("env:"):
        name = user[4:]
        value = os.environ.get(name, "")
        if not value.strip():
            raise ConfigError(f"{at('user')}: mcp.user: the environment variable {name} is not set")
        user = value
    strict = section.get("strict", False)
    if not isinstance(strict, bool):
        raise ConfigError(f"{at('strict')}: mcp.strict is true or false, not {strict!r}")
    audit = section.get("audit")
    if audit is not None and (not isinstance(audit, str) or not audit.strip()):
        raise ConfigError(f"{at('audit')}: mcp.audit is the path of a JSON-lines file")
    upstream_env = _upstream_env(section.get("upstream_env", []), secrets, at("upstream_env"))
    raw = section.get("rules", {})
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{at('rules')}: mcp.rules maps tool names to rules")
    rules: dict[str | tuple[str, ...], Rule] = {}
    seen: set[str] = set()
    for names, value in raw.items():
        where = at(names, raw)
        tools = tuple(n.strip() for n in str(names).split(","))
        if not all(tools):
            raise ConfigError(f"{where}: {names!r} is not a tool name (or names, with commas)")
        for tool in tools:
            if tool in seen:
                raise ConfigError(f"{where}: {tool!r} has two rules")
            seen.add(tool)
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"{where}: the rule for {names!r} is a mapping of connection, action, resource"
            )
        for key in value:
            if key not in _RULE_KEYS:
                raise ConfigError(
                    f"{at(key, value)}: unknown key {key!r} in the rule for {names!r} "
                    f"(expected one of {', '.join(_RULE_KEYS)})"
                )
        missing = [k for k in _RULE_KEYS[:3] if k not in value]
        if missing:
            raise ConfigError(f"{where}: the rule for {names!r} lacks {', '.join(missing)}")
        try:
            rule = Rule(
                value["connection"], value["action"], value["resource"], value.get("fresh", False)
            )
        except TypeError as e:
            raise ConfigError(f"{where}: {e}") from None
        rules[tools[0] if len(tools) == 1 else tools] = rule
    return ProxyConfig(user.strip(), strict, audit, rules, upstream_env)


def _upstream_env(names: Any, secrets: Collection[str], where: str) -> tuple[str, ...]:
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{where}: mcp.upstream_env is a list of environment variables")
    for name in names:
        if not _ENV_NAME.fullmatch(name):
            raise ConfigError(f"{where}: mcp.upstream_env: {name!r} is not a variable's name")
        if name in secrets:
            raise ConfigError(
                f"{where}: mcp.upstream_env: {name} holds a connection's secret, which the "
                "upstream must not get"
            )
    return tuple(names)


def _refuse_secrets_in(env: Mapping[str, str], secrets: Collection[str]) -> None:
    """A ``ValueError`` when a variable the upstream would get holds a connection's secret
    (under another name than the one the connection reads: ``GH_TOKEN`` beside
    ``GITHUB_TOKEN``)."""
    holding = sorted(name for name, value in env.items() if any(s in value for s in secrets))
    if holding:
        raise ValueError(
            f"mcp.upstream_env: {', '.join(holding)} holds a connection's secret, which the "
            "upstream must not get"
        )


def upstream_environment(names: Sequence[str]) -> dict[str, str]:
    """The upstream's environment: ``BASE_ENV`` and ``names``, as far as they are set."""
    return {name: os.environ[name] for name in (*BASE_ENV, *names) if name in os.environ}


def secret_variables(config: Config) -> frozenset[str]:
    """The environment variables the configuration reads secrets from (``env:NAME``)."""
    references = config.secret_references()
    return frozenset(r[4:] for r in references if r.startswith("env:"))


async def upstream_tools(client: Client) -> list[Tool]:
    """Every tool the upstream lists (all pages)."""
    tools: list[Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


def proxy_server(client: Client | None, tools: list[Tool]) -> Server[Any]:
    """An MCP server listing ``tools`` and forwarding each call to ``client`` (set as
    ``server.upstream`` once connected)."""
    server: Server[Any]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        if all(t.name != params.name for t in tools):  # never a tool the upstream hides
            raise ToolRefused(
                "invalid_arguments",
                f"There is no tool named {params.name!r} here, so the call was not made. "
                "Call one of the tools listed.",
                detail="a tool the upstream did not list",
            )
        upstream: Client = server.upstream  # type: ignore[attr-defined]
        return await upstream.call_tool(params.name, params.arguments)

    def input_schema(name: str) -> Mapping[str, Any] | None:
        return next((t.input_schema for t in tools if t.name == name), None)

    server = Server(
        "toolpass-mcp-proxy",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )
    server.upstream = client  # type: ignore[attr-defined]
    return server


async def serve(
    upstream: StdioServerParameters | str,
    engine: Any,
    config: ProxyConfig,
    *,
    toolkit: Toolkit | None = None,
) -> None:
    """Check the rules against the engine, connect to ``upstream``, check them against its
    tools, then serve the proxy on stdio until the client closes it. A problem with the rules
    raises ``ValueError`` before anything is served."""
    if toolkit is None:
        sink = JsonlSink(config.audit) if config.audit else LogSink()
        toolkit = Toolkit(audit=[sink])
    tools: list[Tool] = []
    server = proxy_server(None, tools)
    added = guard(
        server, engine, config.rules, strict=config.strict, toolkit=toolkit, user=config.user
    )  # the rules against the engine's connections: before the upstream starts
    if isinstance(upstream, StdioServerParameters):
        _refuse_secrets_in(upstream.env or {}, added._core.secrets())
    async with Client(upstream) as client:
        tools += await upstream_tools(client)
        schema = {t.name: list((t.input_schema or {}).get("properties") or {}) for t in tools}
        added.guard.add_tools(schema)  # complete: every tool the upstream has
        server.upstream = client  # type: ignore[attr-defined]
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolpass mcp-proxy",
        description="Run an MCP server behind toolpass: every tools/call checked, refused "
        "calls never reach it, every call audited.",
    )
    default = os.environ.get("TOOLPASS_CONFIG", "toolpass.yaml")
    parser.add_argument("-config", "--config", default=default, help="the configuration file")
    parser.add_argument("-url", "--url", help="the upstream's streamable HTTP URL")
    parser.add_argument("command", nargs="*", help="after --: the upstream's command on stdio")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the proxy; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1 :]
    args = _parser().parse_args(argv)
    if args.command:
        return _fail(f"unexpected arguments {args.command!r} (the command goes after --)")
    if bool(command) == bool(args.url):
        return _fail("give the upstream either as -- COMMAND [ARG ...] or as --url URL")
    try:
        config = load_config(args.config)
        proxy = parse_mcp_section(config.mcp, config.path, secret_variables(config))
    except ConfigError as e:
        return _fail(str(e))
    upstream: StdioServerParameters | str = args.url or StdioServerParameters(
        command=command[0], args=command[1:], env=upstream_environment(proxy.upstream_env)
    )
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    try:
        with Toolpass.from_config(args.config) as engine:
            anyio.run(serve, upstream, engine, proxy)
    except BaseException as e:
        cause = _leaf(e)
        if isinstance(cause, ConfigError):
            return _fail(str(cause))
        if isinstance(cause, ValueError):  # the rules against the engine or the tools
            return _fail(f"{args.config}: {cause}")
        if isinstance(cause, KeyboardInterrupt):
            return 130
        raise
    return 0


def _leaf(exc: BaseException) -> BaseException:
    """The first exception of a (nested) exception group, or the exception."""
    inner = getattr(exc, "exceptions", None)
    while isinstance(inner, tuple) and inner and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    return exc


def _fail(message: str) -> int:
    sys.stderr.write(f"toolpass mcp-proxy: {message}\n")
    return ERROR


if __name__ == "__main__":
    sys.exit(main())
