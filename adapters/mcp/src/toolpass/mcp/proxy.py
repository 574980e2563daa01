"""``toolpass mcp-proxy``: any MCP server behind toolpass, without changing its code.

::

    toolpass mcp-proxy [-config FILE] -- COMMAND [ARG ...]   an upstream run on stdio
    toolpass mcp-proxy [-config FILE] --url URL              an upstream on streamable HTTP

The proxy is an MCP server on stdio (what an agent host launches) that passes every MCP
request and notification on, both ways: the upstream's tools, resources, prompts,
completions and logging as they are (with the client's ``_meta``, progress and
cancellation), and the upstream's own requests (sampling, elicitation, roots) to the client,
which the upstream sees with the client's capabilities. Each ``tools/call``,
``resources/read`` and ``prompts/get`` first passes the same guard as
``toolpass.mcp.guard``: the rule of the tool's name (or of ``resources/read``,
``prompts/get``; under ``strict`` or with a rule, ``completion/complete`` and
``resources/subscribe`` too) is asked of the connections of the configuration, a refused
call never reaches the upstream (the model reads why), and every call is one audit event.
The configuration is toolpass's YAML file (its ``connections``) with an ``mcp:`` section::

    mcp:
      user: dana@example.com          # who the calls act for (or env:NAME); required
      strict: true                    # a tool without a rule is refused (default: false)
      audit: /var/log/toolpass.jsonl  # one JSON line per call (default: to stderr)
      upstream_env: [JIRA_URL]        # variables the upstream gets beside the base ones
      approvals_url: https://toolpass.example.com/approvals  # needs the file's store:
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
tools the upstream listed are served (a call of any other name is refused, never passed on;
the upstream's ``notifications/tools/list_changed`` reads its list again). The upstream is
started once to read its tools and capabilities (the rules are checked against them), then
again when the client connects, with the client's capabilities. Every result reaches the
client without the connections' secrets. With ``approvals_url`` (and the file's ``store:``,
which the approvals page reads), a call waiting for a person sends a client that declared
URL-mode elicitation to the page, as ``guard`` does. The proxy serves one client, on stdio:
its calls share one session (limits, the record of untrusted content) until the proxy exits.
Exit status: 0 when the client closes the session, 3 for bad usage or configuration.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    INTERNAL_ERROR,
    PROTOCOL_VERSION_META_KEY,
    CallToolRequestParams,
    ClientCapabilities,
    CompleteRequestParams,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitationCapability,
    ElicitRequest,
    ElicitRequestParams,
    ElicitResult,
    GetPromptRequestParams,
    ListRootsRequest,
    ListRootsResult,
    ListToolsResult,
    NotificationParams,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    RequestParamsMeta,
    RootsCapability,
    ServerCapabilities,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    Tool,
    ToolListChangedNotification,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from toolpass import (
    ApprovalQueue,
    Config,
    ConfigError,
    JsonlSink,
    LogSink,
    Toolkit,
    Toolpass,
    load_config,
)
from toolpass.adapting import Rule, ToolRefused, redact_text
from toolpass.mcp import _connection_of, guard, redacted
from toolpass.mcp._approvals import approvals_url

from mcp import Client, StdioServerParameters
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.subscriptions import ServerEvent, ToolsListChanged

__all__ = ["Proxy", "ProxyConfig", "main", "parse_mcp_section", "serve"]

ERROR = 3
_KEYS = ("user", "strict", "audit", "rules", "upstream_env", "approvals_url")
#: What an upstream on stdio gets of the proxy's environment, beside ``upstream_env``.
BASE_ENV: tuple[str, ...] = (
    *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TEMP", "TMP"),
    *("LANG", "LC_ALL", "LC_CTYPE", "TZ"),
    *("SYSTEMROOT", "APPDATA", "LOCALAPPDATA", "USERPROFILE"),  # Windows
)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RULE_KEYS = ("connection", "action", "resource", "fresh", "mode")
log = logging.getLogger("toolpass")
#: How many stateless clients' upstream connections stay open (the least recently used
#: is closed beyond).
MAX_STATELESS = 16
ONE_CLIENT = "(this server's client)"


@dataclass(frozen=True)
class ProxyConfig:
    """The ``mcp:`` section of a configuration."""

    user: str
    strict: bool = False
    audit: str | None = None
    rules: dict[str | tuple[str, ...], Rule] = field(default_factory=dict)
    upstream_env: tuple[str, ...] = ()
    #: The approvals page a call waiting for a person sends a client to (URL elicitation).
    approvals_url: str | None = None


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
    page = section.get("approvals_url")
    try:
        page = approvals_url(page)
    except ValueError as e:
        raise ConfigError(f"{at('approvals_url')}: mcp.{e}") from None
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
                value["connection"],
                value["action"],
                value["resource"],
                value.get("fresh", False),
                mode=value.get("mode"),
            )
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{where}: {e}") from None
        rules[tools[0] if len(tools) == 1 else tools] = rule
    return ProxyConfig(user.strip(), strict, audit, rules, upstream_env, page)


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


#: The ``_meta`` keys the SDK stamps for the connection it makes: the client's are not
#: passed on (the upstream connection has its own); ``progressToken`` is the proxy's own.
_CONNECTION_META = frozenset(
    {PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY, "progressToken"}
)


async def upstream_tools(client: Client) -> list[Tool]:
    """Every tool the upstream lists (all pages)."""
    tools: list[Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


def forwarded_meta(ctx: ServerRequestContext[Any]) -> RequestParamsMeta | None:
    """The client's ``_meta`` of a request, as the upstream gets it."""
    meta = {k: v for k, v in (ctx.meta or {}).items() if k not in _CONNECTION_META}
    return RequestParamsMeta(**meta) if meta else None  # type: ignore[typeddict-item]


class _Downstream:
    """One client's connection to the proxy: its upstream connection (opened on its first
    request, with the client's capabilities) and its requests in flight, which the
    upstream's own requests (sampling, elicitation, roots) and notifications are sent with."""

    def __init__(
        self, ctx: ServerRequestContext[Any], secrets: Callable[[], tuple[str, ...]]
    ) -> None:
        self.first, self.secrets = ctx, secrets
        self.in_flight: list[ServerRequestContext[Any]] = []
        self.ready, self.done = anyio.Event(), anyio.Event()
        self.client: Client | None = None
        self.retired = False

    def ended(self, ctx: ServerRequestContext[Any]) -> None:
        """``ctx`` answered: a retired connection closes once none is in flight."""
        self.in_flight.remove(ctx)
        if self.retired and not self.in_flight:
            self.done.set()

    def retire(self) -> None:
        """Close the upstream connection once no request of its is in flight."""
        self.retired = True
        if not self.in_flight:
            self.done.set()

    @property
    def current(self) -> ServerRequestContext[Any]:
        return self.in_flight[-1] if self.in_flight else self.first

    def callbacks(self, on_notification: Callable[[Any], Awaitable[None]]) -> dict[str, Any]:
        """The upstream client's callbacks: each of the client's capabilities passed on."""
        session = self.first.session
        sampling = session.client_capabilities.sampling if session.client_capabilities else None
        can = session.check_client_capability
        # The upstream's notifications, its log messages too, reach ``message_handler``.
        callbacks: dict[str, Any] = {"message_handler": on_notification}
        if sampling is not None:
            callbacks |= {"sampling_callback": self.sample, "sampling_capabilities": sampling}
        if can(ClientCapabilities(elicitation=ElicitationCapability())):
            callbacks["elicitation_callback"] = self.elicit
        if can(ClientCapabilities(roots=RootsCapability())):
            callbacks["list_roots_callback"] = self.list_roots
        return callbacks

    async def ask(self, request: Any, result_type: Any) -> Any:
        """A request of the upstream's sent to the client (with the request in flight that
        it belongs to); an error of the client's is the upstream's answer."""
        ctx = self.current
        related = (
            ServerMessageMetadata(related_request_id=ctx.request_id) if self.in_flight else None
        )
        try:
            clean = redacted(request, self.secrets())
            return await ctx.session.send_request(clean, result_type, metadata=related)
        except MCPError as e:
            return e.error

    async def sample(self, context: Any, params: CreateMessageRequestParams) -> Any:
        wanted = CreateMessageResultWithTools if params.tools else CreateMessageResult
        return await self.ask(CreateMessageRequest(params=params), wanted)

    async def elicit(self, context: Any, params: ElicitRequestParams) -> Any:
        return await self.ask(ElicitRequest(params=params), ElicitResult)

    async def list_roots(self, context: Any) -> Any:
        return await self.ask(ListRootsRequest(), ListRootsResult)

    async def notify(self, notification: Any) -> None:
        ctx = self.current
        related = ctx.request_id if self.in_flight else None
        clean = redacted(notification, self.secrets())
        await ctx.session.send_notification(clean, related_request_id=related)


class Proxy:
    """The proxy's MCP server: every request and notification of a client passed to the
    upstream (the client's ``_meta``, progress, cancellation), and the upstream's requests
    and notifications passed to the client; ``tools/call``, ``resources/read`` and
    ``prompts/get`` pass the guard (the server's middleware) first."""

    def __init__(
        self,
        upstream: StdioServerParameters | str,
        probe: Client,
        tools: list[Tool],
        on_tools: Callable[[list[Tool]], None],
    ) -> None:
        self.upstream, self.on_tools = upstream, on_tools
        self.tools = {t.name: t for t in tools}
        self.downstreams: dict[Any, _Downstream] = {}
        #: The stateless clients' upstream connections, least recently used first.
        self.stateless: OrderedDict[Any, _Downstream] = OrderedDict()
        #: The name of a request's client (the guard's ``client_of``: ``client=``, the
        #: access token's ``client_id``, or the server's one client).
        self.client_name: Callable[[ServerRequestContext[Any]], str] = lambda ctx: ONE_CLIENT
        #: The person a request acts for (the guard's: the access token's claim, else the
        #: configuration's user); None when it names nobody.
        self.user_of: Callable[[ServerRequestContext[Any]], str | None] = lambda ctx: None
        self.tasks: TaskGroup | None = None  # where the upstream connections run
        #: What nothing the client gets may carry: the secrets of the engine's connections.
        self.secrets: Callable[[], tuple[str, ...]] = lambda: ()
        caps = probe.server_capabilities
        self.server: Server[Any] = Server(
            "toolpass-mcp-proxy",
            version=probe.server_info.version if probe.server_info else "",
            instructions=probe.instructions,
            get_tool_input_schema=lambda name: (
                self.tools[name].input_schema if name in self.tools else None
            ),
        )
        self.notifications = NotificationOptions(
            prompts_changed=bool(caps.prompts and caps.prompts.list_changed),
            resources_changed=bool(caps.resources and caps.resources.list_changed),
            tools_changed=bool(caps.tools and caps.tools.list_changed),
        )
        self.server.extensions = dict(caps.extensions or {})
        self.experimental = caps.experimental
        self._register(caps)

    def _register(self, caps: ServerCapabilities) -> None:
        handlers: list[tuple[str, type[Any], Any]] = [
            ("tools/list", PaginatedRequestParams, self.list_tools),
            ("tools/call", CallToolRequestParams, self.call_tool),
        ]
        if caps.resources is not None:
            handlers += [
                ("resources/list", PaginatedRequestParams, self.list_resources),
                ("resources/templates/list", PaginatedRequestParams, self.list_templates),
                ("resources/read", ReadResourceRequestParams, self.read_resource),
            ]
            if caps.resources.subscribe:
                handlers += [
                    ("resources/subscribe", SubscribeRequestParams, self.subscribe),
                    ("resources/unsubscribe", UnsubscribeRequestParams, self.unsubscribe),
                ]
        if caps.prompts is not None:
            handlers += [
                ("prompts/list", PaginatedRequestParams, self.list_prompts),
                ("prompts/get", GetPromptRequestParams, self.get_prompt),
            ]
        if caps.completions is not None:
            handlers.append(("completion/complete", CompleteRequestParams, self.complete))
        if caps.logging is not None:
            handlers.append(("logging/setLevel", SetLevelRequestParams, self.set_level))
        if _notifies(caps):  # 2026-07-28: its change notifications, on listen streams
            handlers.append(("subscriptions/listen", SubscriptionsListenRequestParams, self.listen))
        for method, params, handler in handlers:
            self.server.add_request_handler(method, params, handler)
        self.server.add_notification_handler(
            "notifications/roots/list_changed", NotificationParams, self.roots_changed
        )

    async def serve_stdio(self) -> None:
        """Serve the client on stdio until it closes; its upstream connection closes with
        it."""
        async with stdio_server() as (read, write), anyio.create_task_group() as self.tasks:
            options = self.server.create_initialization_options(
                self.notifications, self.experimental
            )
            await self.server.run(read, write, options)
            self.tasks.cancel_scope.cancel()

    def downstream_of(self, ctx: ServerRequestContext[Any]) -> _Downstream:
        """The request's client's connection to the upstream, opened on its first request.
        A connection that outlasts the request (stdio, an MCP session) has its own, closed
        when that connection ends; a stateless client (2026-07-28, a connection per request)
        has one per person, name and capabilities, the ``MAX_STATELESS`` last used kept
        open."""
        key = self._key_of(ctx)
        downstream = self.downstreams.get(key)
        if downstream is None or downstream.retired:
            downstream = self.downstreams[key] = _Downstream(ctx, self.secrets)
            assert self.tasks is not None, "serve() opens the upstream connections"
            self.tasks.start_soon(self._connect, downstream)
            if key[0] == "connection":
                self._close_with(key, downstream)
        if key[0] == "stateless":
            downstream.first = ctx  # where its notifications go between requests
            self.stateless[key] = downstream
            self.stateless.move_to_end(key)
            while len(self.stateless) > MAX_STATELESS:
                evicted, gone = self.stateless.popitem(last=False)
                del self.downstreams[evicted]
                gone.retire()
        return downstream

    def _close_with(self, key: tuple[Any, ...], downstream: _Downstream) -> None:
        """Close ``downstream``'s upstream connection once the client's connection ends (an
        MCP session closed or timed out), so none outlives its client."""

        def ended() -> None:
            if self.downstreams.get(key) is downstream:
                del self.downstreams[key]
            downstream.retire()

        stack = getattr(key[1], "exit_stack", None)
        if stack is not None:
            stack.callback(ended)

    def _key_of(self, ctx: ServerRequestContext[Any]) -> tuple[Any, ...]:
        connection = _connection_of(ctx.session)
        session_id = getattr(connection, "session_id", None)
        if session_id or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return ("connection", connection)
        caps = ctx.session.client_capabilities
        seen = caps.model_dump_json(exclude_none=True) if caps else ""
        person = self._person(ctx)
        return ("stateless", person, self.client_name(ctx), ctx.protocol_version, seen)

    def _person(self, ctx: ServerRequestContext[Any]) -> str | None:
        """Who the request acts for: people signed in through one client application never
        share an upstream connection (nor what it sends with their calls)."""
        try:
            return self.user_of(ctx)
        except ToolRefused:  # names nobody: the guard refuses its calls
            return None

    async def client_of(self, downstream: _Downstream) -> Client:
        """The upstream connection of ``downstream``, once open."""
        await downstream.ready.wait()
        if downstream.client is None:
            raise MCPError(INTERNAL_ERROR, "The MCP server behind toolpass could not be reached.")
        return downstream.client

    async def _connect(self, downstream: _Downstream) -> None:
        async def on_notification(message: Any) -> None:
            await self._upstream_notified(downstream, message)

        try:
            mode = _mode_of(downstream.first.session.protocol_version)
            callbacks = downstream.callbacks(on_notification)
            async with Client(self.upstream, mode=mode, **callbacks) as client:
                await upstream_tools(client)  # its x-mcp-header arguments: sent as headers
                downstream.client = client
                downstream.ready.set()
                await downstream.done.wait()
        except Exception as exc:
            log.error("toolpass mcp-proxy: the upstream connection failed: %s", exc)
        finally:
            downstream.client = None
            downstream.retired = True
            downstream.ready.set()

    async def _upstream_notified(self, downstream: _Downstream, message: Any) -> None:
        if isinstance(message, Exception):
            log.warning("toolpass mcp-proxy: the upstream connection: %s", message)
            return
        notification = getattr(message, "root", message)
        if isinstance(notification, ToolListChangedNotification) and downstream.client:
            tools = await upstream_tools(downstream.client)
            self.tools = {t.name: t for t in tools}
            self.on_tools(tools)
        await downstream.notify(notification)

    async def forward(
        self, ctx: ServerRequestContext[Any], send: Callable[[Client], Awaitable[Any]]
    ) -> Any:
        """``send`` the request to the upstream, with the request in flight (so the
        upstream's own requests of it reach this client's request); its answer, or its
        error, without the connections' secrets."""
        downstream = self.downstream_of(ctx)
        downstream.in_flight.append(ctx)
        try:
            client = await self.client_of(downstream)
            return redacted(await send(client), self.secrets())
        except MCPError as e:  # the upstream's error reaches the client: without them too
            raise MCPError.from_error_data(redacted(e.error, self.secrets())) from None
        finally:
            downstream.ended(ctx)

    async def listen(
        self, ctx: ServerRequestContext[Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        """A ``subscriptions/listen`` stream (2026-07-28): one of the upstream's, with the
        same filter, its events passed on until either side ends it."""
        downstream = self.downstream_of(ctx)
        downstream.in_flight.insert(0, ctx)  # the upstream's requests go to another first
        try:
            client = await self.client_of(downstream)
            return await self._relay(client, ctx, params)
        finally:
            downstream.ended(ctx)

    async def _relay(
        self,
        client: Client,
        ctx: ServerRequestContext[Any],
        params: SubscriptionsListenRequestParams,
    ) -> SubscriptionsListenResult:
        wanted = params.notifications
        bus = InMemorySubscriptionBus()
        stream = ListenHandler(bus, max_subscriptions=1)
        upstream_listen = client.listen(
            tools_list_changed=bool(wanted.tools_list_changed),
            prompts_list_changed=bool(wanted.prompts_list_changed),
            resources_list_changed=bool(wanted.resources_list_changed),
            resource_subscriptions=wanted.resource_subscriptions or (),
        )

        async def pump() -> None:
            try:
                async for event in subscription:
                    await self._saw_event(client, event)
                    await bus.publish(event)
            except Exception as exc:  # the upstream dropped it: the client re-listens
                log.warning("toolpass mcp-proxy: the upstream's listen stream: %s", exc)
            finally:
                stream.close()

        async with upstream_listen as subscription, anyio.create_task_group() as tasks:
            tasks.start_soon(pump)
            result = await stream(ctx, params)
            tasks.cancel_scope.cancel()
        return result

    async def _saw_event(self, client: Client, event: ServerEvent) -> None:
        """The upstream's tools read again when it says they changed."""
        if isinstance(event, ToolsListChanged):
            tools = await upstream_tools(client)
            self.tools = {t.name: t for t in tools}
            self.on_tools(tools)

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams
    ) -> Any:
        meta = forwarded_meta(ctx)
        listed: ListToolsResult = await self.forward(
            ctx, lambda c: c.list_tools(cursor=params.cursor, meta=meta, cache_mode="bypass")
        )
        listed.tools = [t for t in listed.tools if t.name in self.tools]
        return listed

    async def call_tool(self, ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> Any:
        if params.name not in self.tools:  # never a tool the upstream hides
            raise ToolRefused(
                "invalid_arguments",
                f"There is no tool named {params.name!r} here, so the call was not made. "
                "Call one of the tools listed.",
                detail="a tool the upstream did not list",
            )
        meta = forwarded_meta(ctx)
        return await self.forward(
            ctx,
            lambda c: c.session.call_tool(
                params.name,
                params.arguments,
                progress_callback=_progress(ctx, self.secrets),
                meta=meta,
                **_input_of(params),
            ),
        )

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams
    ) -> Any:
        meta = forwarded_meta(ctx)
        return await self.forward(
            ctx, lambda c: c.list_resources(cursor=params.cursor, meta=meta, cache_mode="bypass")
        )

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams
    ) -> Any:
        meta = forwarded_meta(ctx)
        return await self.forward(
            ctx,
            lambda c: c.list_resource_templates(
                cursor=params.cursor, meta=meta, cache_mode="bypass"
            ),
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: ReadResourceRequestParams
    ) -> Any:
        meta = forwarded_meta(ctx)
        return await self.forward(
            ctx, lambda c: c.session.read_resource(str(params.uri), meta=meta, **_input_of(params))
        )

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: SubscribeRequestParams
    ) -> Any:
        meta = forwarded_meta(ctx)
        return await self.forward(ctx, lambda c: c.subscribe_resource(str(params.uri), meta=meta))

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams
    ) -> Any:
        meta = forwarded_meta(ctx)
        return await self.forward(
            ctx, lambda c: c.session.unsubscribe_resource(str(params.uri), meta=meta)
        )

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams
    ) -> Any:
        meta = forwarded_meta(ctx)
        return await self.forward(
            ctx, lambda c: c.list_prompts(cursor=params.cursor, meta=meta, cache_mode="bypass")
        )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: GetPromptRequestParams
    ) -> Any:
        meta = forwarded_meta(ctx)
        return await self.forward(
            ctx,
            lambda c: c.session.get_prompt(
                params.name, params.arguments, meta=meta, **_input_of(params)
            ),
        )

    async def complete(self, ctx: ServerRequestContext[Any], params: CompleteRequestParams) -> Any:
        context = params.context.arguments if params.context else None
        argument = {"name": params.argument.name, "value": params.argument.value}
        return await self.forward(ctx, lambda c: c.complete(params.ref, argument, context))

    async def set_level(self, ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> Any:
        meta = forwarded_meta(ctx)
        return await self.forward(ctx, lambda c: c.set_logging_level(params.level, meta=meta))

    async def roots_changed(
        self, ctx: ServerRequestContext[Any], params: NotificationParams
    ) -> None:
        downstream = self.downstreams.get(self._key_of(ctx))
        if downstream is not None and downstream.client is not None:
            await downstream.client.send_roots_list_changed()


def _notifies(caps: ServerCapabilities) -> bool:
    """Whether the upstream says it notifies of any change (lists, subscribed resources)."""
    changes = (caps.tools, caps.prompts, caps.resources)
    return any(c is not None and c.list_changed for c in changes) or bool(
        caps.resources and caps.resources.subscribe
    )


def _input_of(params: Any) -> dict[str, Any]:
    """A request's answers to the upstream's input requests (2026-07-28), passed back to
    it; its ``InputRequiredResult`` reaches the client as it is."""
    return {
        "input_responses": getattr(params, "input_responses", None),
        "request_state": getattr(params, "request_state", None),
        "allow_input_required": True,
    }


def _mode_of(version: str) -> str:
    """The upstream connection's protocol: the client's (the handshake of the 2025 versions,
    else the 2026 version it speaks)."""
    return version if version in MODERN_PROTOCOL_VERSIONS else "legacy"


def _progress(
    ctx: ServerRequestContext[Any], secrets: Callable[[], tuple[str, ...]]
) -> ProgressFnT | None:
    """The client's progress of a request, when it asked for it: the upstream's progress
    reported to it."""
    if not (ctx.meta or {}).get("progressToken"):
        return None

    async def report(progress: float, total: float | None, message: str | None) -> None:
        said = redact_text(message, secrets()) if message else message
        await ctx.session.report_progress(progress, total, said)

    return report


async def serve(
    upstream: StdioServerParameters | str,
    engine: Any,
    config: ProxyConfig,
    *,
    toolkit: Toolkit | None = None,
    run: Callable[[Proxy], Awaitable[None]] = Proxy.serve_stdio,
) -> None:
    """Check the rules against the engine, connect to ``upstream``, check them against its
    tools, then serve the proxy (``run``: on stdio) until the client closes it. A problem with the
    rules raises ``ValueError`` before anything is served. The upstream is connected to once
    to read its tools and capabilities, then once for the client, with its capabilities."""
    if toolkit is None:
        toolkit = proxy_toolkit(config)
    placeholder = Server("toolpass-mcp-proxy")
    added = guard(
        placeholder,
        engine,
        config.rules,
        strict=config.strict,
        toolkit=toolkit,
        user=config.user,
        approvals_url=config.approvals_url,
    )  # the rules against the engine's connections: before the upstream starts
    if isinstance(upstream, StdioServerParameters):
        _refuse_secrets_in(upstream.env or {}, added._core.secrets())
    async with Client(upstream, mode="legacy") as probe:  # every capability, deprecated too
        tools = await upstream_tools(probe)
        added.guard.add_tools(_schemas(tools))  # complete: every tool the upstream has
        proxy = Proxy(upstream, probe, tools, lambda t: added._core.saw_tools(_schemas(t)))
    proxy.secrets = added._core.secrets  # every message to the client: without them
    proxy.client_name = added._core.client_of  # a stateless client: the guard's name of it
    proxy.user_of = lambda ctx: added.guard.user_of(None, ctx)  # and the person it acts for
    proxy.server.instructions = redacted(proxy.server.instructions, proxy.secrets())
    added.server = proxy.server  # its serverInfo on a refusal (2026-07-28)
    added._core.known_tools = lambda: proxy.tools  # strict: an unknown tool reads as one
    proxy.server.middleware.append(added)
    await run(proxy)


def proxy_toolkit(config: ProxyConfig, store: str | None = None) -> Toolkit:
    """The proxy's toolkit: its audit sink, and with ``approvals_url`` an approval queue on
    ``store`` (the configuration's, shared with the approvals page)."""
    sink = JsonlSink(config.audit) if config.audit else LogSink()
    queue = ApprovalQueue(store=store) if config.approvals_url and store else None
    return Toolkit(audit=[sink], approver=queue)


def _schemas(tools: list[Tool]) -> dict[str, list[str] | None]:
    return {t.name: list((t.input_schema or {}).get("properties") or {}) for t in tools}


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
    if proxy.approvals_url and not config.store:
        return _fail(f"{args.config}: mcp.approvals_url needs the store: the approvals page reads")
    upstream: StdioServerParameters | str = args.url or StdioServerParameters(
        command=command[0], args=command[1:], env=upstream_environment(proxy.upstream_env)
    )
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    # The proxy passes on the methods the 2026-07-28 protocol deprecates: not its warnings.
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    try:
        with Toolpass.from_config(args.config) as engine:
            toolkit = proxy_toolkit(proxy, config.store)
            anyio.run(lambda: serve(upstream, engine, proxy, toolkit=toolkit))
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
