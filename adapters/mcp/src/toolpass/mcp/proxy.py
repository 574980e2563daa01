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
      rules:
        delete_issue: {connection: jira, action: DELETE_ISSUES, resource: "issue:{key}"}
        close_issue, reopen_issue:    # several tools, one rule
          connection: jira
          action: TRANSITION_ISSUES
          resource: "issue:{key}"

Mistakes in the section are errors naming the file and line; a rule for a tool the upstream
does not have, or naming an argument its tool does not take, stops the proxy before it serves.
Exit status: 0 when the client closes the session, 3 for bad usage or configuration.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
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
from toolpass import ConfigError, JsonlSink, LogSink, Toolkit, Toolpass, load_config
from toolpass.adapting import Rule
from toolpass.mcp import guard

from mcp import Client, StdioServerParameters
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["ProxyConfig", "main", "parse_mcp_section", "serve"]

ERROR = 3
_KEYS = ("user", "strict", "audit", "rules")
_RULE_KEYS = ("connection", "action", "resource", "fresh")
log = logging.getLogger("toolpass")


@dataclass(frozen=True)
class ProxyConfig:
    """The ``mcp:`` section of a configuration."""

    user: str
    strict: bool = False
    audit: str | None = None
    rules: dict[str | tuple[str, ...], Rule] = field(default_factory=dict)


def parse_mcp_section(section: Mapping[str, Any], path: str | None) -> ProxyConfig:
    """Validate the ``mcp:`` section; errors name the file and line (``ConfigError``)."""
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
    return ProxyConfig(user.strip(), strict, audit, rules)


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
    upstream: StdioServerParameters | str = args.url or StdioServerParameters(
        command=command[0], args=command[1:], env=dict(os.environ)
    )
    try:
        config = load_config(args.config)
        proxy = parse_mcp_section(config.mcp, config.path)
    except ConfigError as e:
        return _fail(str(e))
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
