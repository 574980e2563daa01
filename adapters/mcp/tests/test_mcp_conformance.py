"""The shared conformance suite through a real MCP client session against an ``MCPServer``
guarded by ``guard``: on the SDK's default in-process path (the stateless 2026-07-28
protocol) and over JSON-RPC on in-memory streams (``mode="legacy"``, the initialize
handshake). The user is the access token's ``email`` claim, as on streamable HTTP with OAuth.

The sync run is the same client driven from synchronous code in its own event loop (MCP's
client is async only; a synchronous application calls a server this way).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from typing import Any, ClassVar, Literal

from http_server import client, oauth_server, serving
from mcp import Client
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.request_state import RequestStateSecurity
from mcp_client import call_all, text_of, token_for
from mcp_types import ElicitResult, InputRequiredResult
from pytest_toolpass import AdapterConformance, Call, KitTools, Transcript
from pytest_toolpass.conformance import DANA
from toolpass import ApprovalQueue
from toolpass.adapting import Answer
from toolpass.mcp import guard


class Server:
    def __init__(self, server: MCPServer, script: list[Call]) -> None:
        self.server, self.script = server, script
        self.queue: Any = None  # the toolkit's approval queue (the approvals page decides)


class TestMCPServer(AdapterConformance):
    client_mode = "auto"

    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Server:
        server: MCPServer = MCPServer("kit")
        for fn in tools.functions():
            server.add_tool(fn)
        guard(server, engine, rules, strict=strict, **options)
        return Server(server, script)

    def run(self, agent: Server, user: str | None) -> Transcript:
        return asyncio.run(self.arun(agent, user))

    async def arun(self, agent: Server, user: str | None) -> Transcript:
        calls = [(c.tool, c.arguments) for c in agent.script]
        return await call_all(agent.server, calls, user, mode=self.client_mode)


class TestMCPServerLegacy(TestMCPServer):
    client_mode = "legacy"


class TestStreamableHTTP(TestMCPServer):
    """Over a real transport: streamable HTTP on 127.0.0.1 with the SDK's OAuth bearer
    middleware; the user is the verified token's ``email`` claim (a run without a user sends
    a token naming none, as an agent host's own client-credentials token does)."""

    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Server:
        server = oauth_server("kit")
        for fn in tools.functions():
            server.add_tool(fn)
        guard(server, engine, rules, strict=strict, **options)
        return Server(server, script)

    async def arun(self, agent: Server, user: str | None) -> Transcript:
        outputs = []
        with serving(agent.server) as url:
            async with client(url, user) as session:
                for call in agent.script:
                    outputs.append(text_of(await session.call_tool(call.tool, call.arguments)))
        return Transcript(outputs, "done")


#: The key the SDK seals a 2026-07-28 request state with, shared by the servers a test builds
#: (a deployment of several processes shares one the same way).
STATE_KEY = b"conformance-request-state-key-0123456789"
PAGE = "https://toolpass.example.com/approvals"


class TestMCPServerElicitation(TestMCPServer):
    """A client that declared URL-mode elicitation: a call waiting for a person pauses (an
    ``InputRequiredResult`` sending the user to the approvals page, its payload in the
    elicitation's ``_meta``), the person decides on the page (the queue), and the client's
    retry with the signed state resumes it: only the queue's record decides."""

    pauses: ClassVar[Literal["native", "refuses"]] = "native"
    answered_on: ClassVar[Literal["resume", "page"]] = "page"  # the retry carries no answer

    def build(
        self,
        engine: Any,
        rules: dict[str, Any],
        *,
        strict: bool,
        tools: KitTools,
        script: list[Call],
        **options: Any,
    ) -> Server:
        security = RequestStateSecurity(keys=[STATE_KEY])
        server = MCPServer("kit", request_state_security=security)
        for fn in tools.functions():
            server.add_tool(fn)
        chosen = {"approvals_url": PAGE, "approval_wait": 0, **options}
        guard(server, engine, rules, strict=strict, **chosen)
        built = Server(server, script)
        toolkit = options.get("toolkit")
        built.queue = toolkit.settings.approver if toolkit is not None else None
        return built

    async def arun(self, agent: Server, user: str | None) -> Transcript:
        out = Transcript([], "done")

        async def calls(client: Client) -> None:
            for call in agent.script:
                result = await client.session.call_tool(
                    call.tool, call.arguments, allow_input_required=True
                )
                if isinstance(result, InputRequiredResult):  # the run pauses for a person
                    [asked] = (result.input_requests or {}).values()
                    out.pending.append(dict(asked.params.meta["toolpass"]))
                    out.state = (call, result)
                    out.final = ""
                    return
                out.outputs.append(text_of(result))

        await in_session(agent.server, user, calls)
        return out

    def resume(self, agent: Server, paused: Transcript, answer: Answer) -> Transcript:
        return asyncio.run(self.aresume(agent, paused, answer))

    async def aresume(self, agent: Server, paused: Transcript, answer: Answer) -> Transcript:
        """The person decides on the approvals page (the queue); then the client retries the
        paused call with its answer to the elicitation (the user opened the page) and the
        signed state."""
        call, pause = paused.state
        request_id = answer.request_id or paused.pending[-1]["request_id"]
        with contextlib.suppress(KeyError, ValueError, PermissionError):  # the page says no
            decide(agent.queue, request_id, answer)
        outputs = list(paused.outputs)

        async def retry(client: Client) -> None:
            result = await client.session.call_tool(
                call.tool,
                call.arguments,
                input_responses={"toolpass": ElicitResult(action="accept")},
                request_state=pause.request_state,
            )
            outputs.append(text_of(result))

        await in_session(agent.server, DANA, retry)
        return Transcript(outputs, "done")


def decide(queue: ApprovalQueue, request_id: str, answer: Answer) -> None:
    """A person's answer, as the approvals page records it."""
    if answer.decision == "approve":
        queue.approve(request_id, by=answer.by)
    elif answer.decision == "edit":
        assert answer.arguments is not None
        queue.edit(request_id, by=answer.by, arguments=answer.arguments)
    elif answer.decision == "expired":
        queue.expire(request_id)
    else:
        queue.deny(request_id, by=answer.by, reason=answer.reason)


async def in_session(server: Any, user: str | None, go: Any) -> None:
    """``go(client)`` in a client session with an elicitation callback (the user opens the
    page), as ``user``'s access token, in a context of its own."""

    async def accept(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept")

    async def session() -> None:
        auth_context_var.set(token_for(user))
        async with Client(server, elicitation_callback=accept) as client:
            await go(client)

    await asyncio.create_task(session(), context=contextvars.copy_context())
