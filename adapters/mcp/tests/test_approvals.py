"""A call waiting for a person, through real MCP client sessions: a client that declared
URL-mode elicitation is sent to the approvals page (2026-07-28: ``InputRequiredResult`` with
a signed ``request_state``; 2025-11-25: the error -32042), its retry runs the whole check
again and only the queue's record decides. What the client answers to an elicitation never
approves; a client without URL-mode elicitation reads the refusal as before."""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastmcp import FastMCP
from http_server import oauth_server, serving, token_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters, UrlElicitationRequiredError
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_client import text_of, token_for
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    CallToolRequestParams,
    CallToolResult,
    ElicitCompleteNotification,
    ElicitResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)
from pytest_toolpass.engine import ScriptedEngine
from toolpass import ApprovalQueue, ConfigError, Decision, Session, Toolkit
from toolpass.adapting import APPROVAL, Rule, Traits
from toolpass.cli import main as toolpass_cli
from toolpass.engine.config import Located
from toolpass.mcp import guard
from toolpass.mcp._approvals import PREFIX
from toolpass.mcp.proxy import (
    Proxy,
    ProxyConfig,
    main,
    parse_mcp_section,
    serve,
    upstream_environment,
)
from warm_python import python

DANA = "dana@example.com"
PAGE = "https://toolpass.example.com/approvals"
#: Sends out data it read (private and untrusted): every call asks a person.
ASKS = Traits(
    effect="destructive",
    sends_out=True,
    reads_private=True,
    untrusted_output=True,
    rule=Rule("jira", "DELETE_ISSUES", "issue:{key}"),
)
MODES = ["auto", "legacy"]  # 2026-07-28 (the SDK's default) and the 2025-11-25 handshake


def engine() -> ScriptedEngine:
    return ScriptedEngine(
        {
            (DANA, "DELETE_ISSUES", "issue:PAY-1"): Decision.allow(),
            (DANA, "DELETE_ISSUES", "issue:PAY-2"): Decision.allow(),
            (DANA, "DELETE_ISSUES", "issue:PAY-9"): Decision.deny("not dana's"),
        }
    )


class Kit:
    """A server with ``delete_issue`` guarded with approvals; what ran, in order."""

    def __init__(
        self,
        queue: ApprovalQueue | None = None,
        *,
        low: bool = False,
        http: bool = False,
        **options: Any,
    ) -> None:
        self.queue = queue or ApprovalQueue()
        self.ran: list[str] = []
        self.engine = engine()
        self.server: Any = self._low() if low else self._server(http)
        self.events: list[Any] = []
        kit = Toolkit(approver=self.queue, audit=[self.events.append])
        chosen = {"approvals_url": PAGE, "approval_wait": 0, **options}
        session = Session(DANA, id="conversation-1")
        guard(
            self.server,
            self.engine,
            {"delete_issue": ASKS},
            toolkit=kit,
            session=lambda _: session,
            **chosen,
        )

    def delete_issue(self, key: str) -> str:
        self.ran.append(key)
        return f"deleted {key}"

    def _server(self, http: bool) -> MCPServer:
        server = oauth_server("kit") if http else MCPServer("kit")
        server.add_tool(self.delete_issue, name="delete_issue")
        return server

    def _low(self) -> Server:
        """A low-level server (as the proxy is): no request-state sealing of the SDK's."""
        server = Server("low")
        schema = {"type": "object", "properties": {"key": {"type": "string"}}}

        async def call(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
            done = self.delete_issue(**(params.arguments or {}))
            return CallToolResult(content=[TextContent(type="text", text=done)])

        async def listed(ctx: Any, params: Any) -> ListToolsResult:
            return ListToolsResult(tools=[Tool(name="delete_issue", input_schema=schema)])

        server.add_request_handler("tools/call", CallToolRequestParams, call)
        server.add_request_handler("tools/list", PaginatedRequestParams, listed)
        return server


Elicit = Callable[[Any, Any], Awaitable[Any]]


async def session_of(
    server: Any, mode: str, elicit: Elicit | None, go: Callable[[Client], Awaitable[Any]]
) -> Any:
    """``go(client)`` in a client session as DANA (her access token), in a context of its own."""

    async def run() -> Any:
        auth_context_var.set(token_for(DANA))
        options = {} if elicit is None else {"elicitation_callback": elicit}
        async with Client(server, mode=mode, **options) as client:
            return await go(client)

    return await asyncio.create_task(run(), context=contextvars.copy_context())


async def first_call(client: Client, key: str = "PAY-1") -> Any:
    """The call as an agent host makes it by hand: the pause it answers (2026-07-28: the
    ``InputRequiredResult``; 2025: the -32042 error's elicitations), or the result."""
    try:
        return await client.session.call_tool(
            "delete_issue", {"key": key}, allow_input_required=True
        )
    except MCPError as exc:
        if exc.code != -32042:
            raise
        return UrlElicitationRequiredError.from_error(exc.error)


def asked_of(paused: Any) -> Any:
    """The URL elicitation a pause carries."""
    if isinstance(paused, InputRequiredResult):
        [request] = (paused.input_requests or {}).values()
        return request.params
    [elicitation] = paused.elicitations
    return elicitation


async def retry(client: Client, paused: Any, key: str = "PAY-1", **changed: Any) -> str:
    """The client's retry once the user opened the page: on 2026-07-28 with the answer to
    the elicitation and the echoed state (``changed`` replaces them); on 2025 the same call."""
    try:
        if isinstance(paused, InputRequiredResult):
            answer = {"toolpass": ElicitResult(action="accept")}
            sent = {"input_responses": answer, "request_state": paused.request_state, **changed}
            result = await client.session.call_tool(
                "delete_issue", {"key": key}, allow_input_required=True, **sent
            )
        else:
            result = await client.session.call_tool("delete_issue", {"key": key})
    except MCPError as exc:
        return f"[mcp error {exc.code}] {exc.error.message}"
    if isinstance(result, InputRequiredResult):
        return "[input required]"
    return text_of(result)


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_the_client_is_sent_to_the_page_and_the_approval_decides(mode: str) -> None:
    kit = Kit()

    async def go(client: Client) -> tuple[Any, str, str]:
        paused = await first_call(client)
        before = await retry(client, paused)  # nobody decided yet: still waiting
        [request] = kit.queue.pending()
        kit.queue.approve(request.id, by="lee@example.com")
        return paused, before, await retry(client, paused)

    paused, before, after = await session_of(kit.server, mode, _accept, go)
    [request] = kit.queue.requests() or [None]
    asked = asked_of(paused)
    assert asked.mode == "url"
    request_id = asked.meta["toolpass"]["request_id"]
    assert asked.url == f"{PAGE}?id={request_id}"
    assert asked.meta["toolpass"]["type"] == APPROVAL
    assert asked.meta["toolpass"]["arguments"] == {"key": "'PAY-1'"}
    assert "approval_pending" in before or "-32042" in before
    assert kit.ran == ["PAY-1"]
    assert "deleted PAY-1" in after
    assert request is None  # used up


async def _accept(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept")


@pytest.mark.asyncio
async def test_the_retry_waits_for_the_person_who_opened_the_page() -> None:
    """The SDK's own client loop: the user opens the page (the elicitation's accept), the
    retry waits (``approval_wait``) until the person approves, and the call runs once."""
    kit = Kit(approval_wait=30)

    async def person_decides_later(context: Any, params: Any) -> ElicitResult:
        async def decide() -> None:
            await asyncio.sleep(0.3)
            [request] = kit.queue.pending()
            kit.queue.approve(request.id, by="lee@example.com")

        asyncio.get_running_loop().create_task(decide())
        return ElicitResult(action="accept")

    async def go(client: Client) -> str:
        return text_of(await client.call_tool("delete_issue", {"key": "PAY-1"}))

    out = await session_of(kit.server, "auto", person_decides_later, go)
    assert out == "deleted PAY-1"
    assert kit.ran == ["PAY-1"]


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_what_the_client_answers_never_approves(mode: str) -> None:
    """A client that accepts every elicitation, with any content (as a form's answer), or
    sends an answer of its own, approves nothing: only the queue's record decides."""

    async def approve_everything(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"approved": True, "decision": "approve"})

    kit = Kit()

    async def go(client: Client) -> list[str]:
        outs = []
        for _ in range(3):
            try:
                outs.append(text_of(await client.call_tool("delete_issue", {"key": "PAY-1"})))
            except MCPError as exc:
                outs.append(f"[mcp error {exc.code}]")
        paused = await first_call(client)
        forms = {"toolpass": ElicitResult(action="accept", content={"approve": "yes"})}
        outs.append(await retry(client, paused, input_responses=forms))
        return outs

    outs = await session_of(kit.server, mode, approve_everything, go)
    assert kit.ran == []
    assert len(kit.queue.pending()) == 1  # one request, still waiting for a person
    for out in outs:
        assert "approval_pending" in out or "-32042" in out
        assert "deleted" not in out


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("why", ["no elicitation", "no approvals page"])
async def test_a_client_that_cannot_open_the_page_reads_the_refusal(mode: str, why: str) -> None:
    kit = Kit(approvals_url=None) if why == "no approvals page" else Kit()
    elicit = _accept if why == "no approvals page" else None

    async def go(client: Client) -> str:
        return text_of(await client.call_tool("delete_issue", {"key": "PAY-1"}))

    out = await session_of(kit.server, mode, elicit, go)
    [request] = kit.queue.pending()
    assert out.startswith("[error] ")
    assert "approval_pending" in out
    assert request.id in out
    assert kit.ran == []


def _answer(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC answer of a streamable HTTP response (JSON, or the last SSE event)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


def raw_call(url: str, version: str, elicitation: dict[str, Any]) -> dict[str, Any]:
    """``delete_issue`` called by a client declaring ``elicitation``, as raw JSON-RPC over
    streamable HTTP (the SDK's client always declares both modes)."""
    caps = {"elicitation": elicitation}
    info = {"name": "form-only-host", "version": "1"}
    headers = {
        "Authorization": f"Bearer {token_of(DANA)}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
    }
    call: dict[str, Any] = {"name": "delete_issue", "arguments": {"key": "PAY-1"}}
    with httpx2.Client(headers=headers, timeout=30) as http:
        if version == "2026-07-28":
            meta = {
                PROTOCOL_VERSION_META_KEY: version,
                CLIENT_INFO_META_KEY: info,
                CLIENT_CAPABILITIES_META_KEY: caps,
            }
            extra = {"Mcp-Method": "tools/call", "Mcp-Name": "delete_issue"}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
            return _answer(
                http.post(url, json={**body, "params": {**call, "_meta": meta}}, headers=extra)
            )
        hello = {"protocolVersion": version, "capabilities": caps, "clientInfo": info}
        opened = http.post(
            url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        )
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
        ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        http.post(url, json=ready, headers=session)
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
        return _answer(http.post(url, json=body, headers=session))


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_a_client_with_form_elicitation_only_reads_the_refusal(version: str) -> None:
    kit = Kit(http=True)
    with serving(kit.server) as url:
        answer = raw_call(url, version, {"form": {}})
        sent = raw_call(url, version, {"form": {}, "url": {}})  # the same, with URL mode
    if version == "2026-07-28":
        assert sent["result"]["resultType"] == "input_required"
    else:
        assert sent["error"]["code"] == -32042
    result = answer["result"]
    [request] = kit.queue.pending()
    assert result["isError"] is True
    assert result.get("resultType", "complete") == "complete"
    text = result["content"][0]["text"]
    assert "approval_pending" in text
    assert request.id in text
    assert kit.ran == []


# The signed request state, on a low-level server (as the proxy is): the SDK's MCPServer
# also seals the state itself, so these checks are toolpass's own only here.


async def paused(kit: Kit, key: str = "PAY-1") -> InputRequiredResult:
    result = await session_of(kit.server, "auto", _accept, lambda c: first_call(c, key))
    assert isinstance(result, InputRequiredResult)
    return result


async def retried(kit: Kit, pause: InputRequiredResult, key: str = "PAY-1", **changed: Any) -> str:
    return str(
        await session_of(kit.server, "auto", _accept, lambda c: retry(c, pause, key, **changed))
    )


def request_of(pause: InputRequiredResult) -> str:
    return str(asked_of(pause).meta["toolpass"]["request_id"])


@pytest.mark.asyncio
async def test_a_state_altered_forged_replayed_or_for_other_arguments_is_refused() -> None:
    kit = Kit(low=True)
    pause = await paused(kit)
    request_id = request_of(pause)
    kit.queue.approve(request_id, by="lee@example.com")
    state = str(pause.request_state)
    prefix, _, mac = state.rpartition(".")
    forged = [
        prefix + "." + ("0" if mac[0] != "0" else "1") + mac[1:],  # altered
        prefix + "." + "0" * len(mac),  # signed by nobody
        state.replace(request_id, "0" * len(request_id)),  # another request
    ]
    for state_sent in forged:
        out = await retried(kit, pause, request_state=state_sent)
        assert "check_error" in out
        assert "not valid" in out
    out = await retried(kit, pause, "PAY-2")  # the state of PAY-1 for PAY-2
    assert "check_error" in out
    assert kit.ran == []
    assert kit.queue.state(request_id) == "approved"  # none of them used the approval
    assert await retried(kit, pause) == "deleted PAY-1"
    replayed = await retried(kit, pause)
    assert "check_error" in replayed
    assert kit.ran == ["PAY-1"]  # once


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(at=st.integers(min_value=0), to=st.characters(exclude_categories=("Cs",)))
def test_any_change_to_the_state_is_refused(at: int, to: str) -> None:
    """Whatever character of a state toolpass signed changes (to any character), the retry
    is refused and the approval it carried stays unused."""

    async def case() -> tuple[list[str], str, str]:
        kit = Kit(low=True)
        pause = await paused(kit)
        kit.queue.approve(request_of(pause), by="lee@example.com")
        state = str(pause.request_state)
        # A state without toolpass's prefix is not toolpass's: the server's own (the queue
        # alone then decides, as for a call without a state).
        i = len(PREFIX) + at % (len(state) - len(PREFIX))
        changed = state[:i] + to + state[i + 1 :]
        if changed == state:
            changed = state + to
        out = await retried(kit, pause, request_state=changed)
        return kit.ran, out, kit.queue.state(request_of(pause))

    ran, out, status = asyncio.run(case())
    assert ran == []
    assert "check_error" in out  # refused, for the model to read (not a server error)
    assert status == "approved"


@pytest.mark.asyncio
async def test_an_answer_for_request_a_never_releases_request_b() -> None:
    kit = Kit(low=True)
    a, b = await paused(kit, "PAY-1"), await paused(kit, "PAY-2")
    kit.queue.approve(request_of(a), by="lee@example.com")
    assert "approval_pending" in await retried(kit, b, "PAY-2")
    assert "check_error" in await retried(kit, b, "PAY-2", request_state=a.request_state)
    assert kit.ran == []
    assert kit.queue.state(request_of(b)) == "pending"
    assert await retried(kit, a) == "deleted PAY-1"
    assert kit.ran == ["PAY-1"]


@pytest.mark.asyncio
async def test_an_expired_request_reads_expired_not_denied() -> None:
    now = [1000.0]
    kit = Kit(ApprovalQueue(clock=lambda: now[0], ttl=60), low=True)
    pause = await paused(kit)
    now[0] += 120
    out = await retried(kit, pause)
    assert "approval_expired" in out
    assert request_of(pause) in out
    assert "approval_denied" not in out
    assert kit.ran == []


@pytest.mark.asyncio
async def test_a_denial_reaches_the_model_with_the_persons_reason() -> None:
    kit = Kit(low=True)
    pause = await paused(kit)
    kit.queue.deny(request_of(pause), by="lee@example.com", reason="wrong project")
    out = await retried(kit, pause)
    assert "approval_denied" in out
    assert "wrong project" in out
    assert kit.ran == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("edit", "expected"), [("PAY-2", "deleted PAY-2"), ("PAY-9", "not_authorized")]
)
async def test_a_persons_edit_runs_with_their_arguments_checked_again(
    edit: str, expected: str
) -> None:
    kit = Kit(low=True)
    pause = await paused(kit)
    kit.queue.edit(request_of(pause), by="lee@example.com", arguments={"key": edit})
    out = await retried(kit, pause)
    assert expected in out
    assert kit.ran == ([edit] if edit == "PAY-2" else [])
    assert (DANA, "jira", "DELETE_ISSUES", f"issue:{edit}") in kit.engine.asked


@pytest.mark.asyncio
async def test_a_restart_between_pause_and_retry_with_a_shared_store(tmp_path: Any) -> None:
    store = f"sqlite:///{tmp_path / 'approvals.db'}"
    before = Kit(ApprovalQueue(store=store), low=True)
    pause = await paused(before)
    ApprovalQueue(store=store).approve(request_of(pause), by="lee@example.com")  # the page
    after = Kit(ApprovalQueue(store=store), low=True)  # the server, restarted
    assert await retried(after, pause) == "deleted PAY-1"
    assert before.ran + after.ran == ["PAY-1"]


# The guarding proxy, in this process, in front of a real upstream on stdio that knows
# nothing of toolpass.

UPSTREAM = str(Path(__file__).resolve().parent / "upstream_server.py")
MERGE = Traits(
    effect="destructive",
    sends_out=True,
    reads_private=True,
    untrusted_output=True,
    rule=Rule("github", "pr.merge", "pr:{repo}#{number}"),
)


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_the_proxy_sends_the_client_to_the_page_and_the_approval_decides(
    mode: str, tmp_path: Path
) -> None:
    log = tmp_path / "upstream.jsonl"
    env = {**upstream_environment(()), "UPSTREAM_LOG": str(log), "OTEL_SDK_DISABLED": "true"}
    command, *args = python(UPSTREAM)
    upstream = StdioServerParameters(command=command, args=args, env=env)
    queue = ApprovalQueue()
    allowed = ScriptedEngine({(DANA, "pr.merge", "pr:acme/widgets#7"): Decision.allow()})
    config = ProxyConfig(user=DANA, rules={"merge_pr": MERGE}, approvals_url=PAGE)  # type: ignore[dict-item]
    merge = {"repo": "acme/widgets", "number": 7}
    seen: list[Any] = []

    async def host(proxy: Proxy) -> None:
        async def go(client: Client) -> None:
            try:
                paused: Any = await client.session.call_tool(
                    "merge_pr", merge, allow_input_required=True
                )
            except MCPError as exc:
                paused = UrlElicitationRequiredError.from_error(exc.error)
            seen.append(asked_of(paused))
            queue.approve(seen[0].meta["toolpass"]["request_id"], by="lee@example.com")
            if isinstance(paused, InputRequiredResult):
                result = await client.session.call_tool(
                    "merge_pr",
                    merge,
                    input_responses={"toolpass": ElicitResult(action="accept")},
                    request_state=paused.request_state,
                )
            else:
                result = await client.call_tool("merge_pr", merge)
            seen.append(text_of(result))

        async with anyio.create_task_group() as proxy.tasks:
            async with Client(proxy.server, mode=mode, elicitation_callback=_accept) as client:
                await go(client)
            proxy.tasks.cancel_scope.cancel()

    await serve(upstream, allowed, config, toolkit=Toolkit(approver=queue, audit=[]), run=host)
    asked, out = seen
    assert asked.url == f"{PAGE}?id={asked.meta['toolpass']['request_id']}"
    assert out == "merged acme/widgets#7"
    ran = [json.loads(line) for line in log.read_text().splitlines()]
    assert ran == [{"tool": "merge_pr", "arguments": merge}]  # once, after the approval


def test_the_proxy_reads_approvals_url_and_checks_it(tmp_path: Path) -> None:
    section = Located(user=DANA, approvals_url=PAGE)
    assert parse_mcp_section(section, "t.yaml").approvals_url == PAGE
    for bad in ("toolpass.example.com/approvals", f"{PAGE}?id=1", 42):
        with pytest.raises(ConfigError, match="approvals_url"):
            parse_mcp_section(Located(user=DANA, approvals_url=bad), "t.yaml")


@pytest.mark.asyncio
async def test_a_2025_client_is_told_when_the_person_decided() -> None:
    """On the 2025 versions (no request state), the client is sent
    ``notifications/elicitation/complete`` for the elicitation once the person decided, so
    it retries then."""
    kit = Kit()
    completed: list[str] = []
    told = asyncio.Event()

    async def on_message(message: Any) -> None:
        notification = getattr(message, "root", message)
        if isinstance(notification, ElicitCompleteNotification):
            completed.append(notification.params.elicitation_id)
            told.set()

    async def run() -> str:
        auth_context_var.set(token_for(DANA))
        async with Client(
            kit.server, mode="legacy", elicitation_callback=_accept, message_handler=on_message
        ) as client:
            paused = await first_call(client)
            request_id = asked_of(paused).elicitation_id
            await asyncio.sleep(0.1)
            assert completed == []  # nobody decided yet
            kit.queue.approve(request_id, by="lee@example.com")
            await asyncio.wait_for(told.wait(), 10)
            assert completed == [request_id]
            return await retry(client, paused)

    out = await asyncio.create_task(run(), context=contextvars.copy_context())
    assert out == "deleted PAY-1"
    assert kit.ran == ["PAY-1"]


# A server of the fastmcp package (FastMCPGuard), over streamable HTTP on 127.0.0.1.


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_a_fastmcp_server_sends_the_client_to_the_page(mode: str) -> None:
    queue, ran = ApprovalQueue(), []
    server = FastMCP("kit")

    @server.tool()
    def delete_issue(key: str) -> str:
        """Delete an issue."""
        ran.append(key)
        return f"deleted {key}"

    session = Session(DANA, id="conversation-1")
    kit = Toolkit(approver=queue, audit=[])
    options = {"session": lambda _: session, "approvals_url": PAGE, "approval_wait": 0}
    guard(server, engine(), {"delete_issue": ASKS}, toolkit=kit, user=DANA, **options)

    async def go(client: Client) -> tuple[Any, str, str]:
        paused = await first_call(client)
        before = await retry(client, paused)
        [request] = queue.pending()
        queue.approve(request.id, by="lee@example.com")
        return paused, before, await retry(client, paused)

    with serving(server) as url:
        async with Client(url, mode=mode, elicitation_callback=_accept) as client:
            paused, before, after = await go(client)
    asked = asked_of(paused)
    assert asked.mode == "url"
    assert asked.url.startswith(f"{PAGE}?id=")  # FastMCP passes on no _meta of it
    assert "approval_pending" in before or "-32042" in before
    assert after == "deleted PAY-1"
    assert ran == ["PAY-1"]


def test_the_proxy_needs_the_store_the_page_reads_for_approvals_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "toolpass.yaml"
    path.write_text(f"connections: []\nmcp:\n  user: {DANA}\n  approvals_url: {PAGE}\n")
    assert main(["-config", str(path), "--", *python(UPSTREAM)]) == 3
    assert "mcp.approvals_url needs the store:" in capsys.readouterr().err


def test_toolpass_validate_names_a_bad_approvals_url_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "toolpass.yaml"
    path.write_text(f"connections: []\nmcp:\n  user: {DANA}\n  approvals_url: {PAGE}?id=1\n")
    assert toolpass_cli(["validate", "-config", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}, line 4: mcp.approvals_url has no query" in err
    path.write_text(f"connections: []\nmcp:\n  user: {DANA}\n  approvals_url: {PAGE}\n")
    assert toolpass_cli(["validate", "-config", str(path)]) == 0


@pytest.mark.asyncio
async def test_a_store_that_fails_on_the_retry_refuses(tmp_path: Path) -> None:
    db = tmp_path / "approvals.db"
    kit = Kit(ApprovalQueue(store=f"sqlite:///{db}"), low=True)
    pause = await paused(kit)
    kit.queue.store.close()  # the shared store breaks between the pause and the retry
    for name in tmp_path.glob("approvals.db*"):
        name.unlink()
    db.write_bytes(b"not a database" * 512)
    out = await retried(kit, pause)
    assert out.startswith("[error] ")
    assert "check_error" in out
    assert kit.ran == []
