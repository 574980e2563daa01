"""The approvals page's history (#20): every request kept after its call ran, was denied or
expired (who decided, when, why, whether it ran), across a restart; filters by user, tool and
state; post/redirect/get with a one-time note; retries of one call in one card; and the
decider's name in the audit event of the run, decided in a ``toolpass serve`` process."""

from __future__ import annotations

import html
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from conftest import ServerProcess, approvals_config
from hypothesis import given
from hypothesis import strategies as st
from test_approvals_page import LEE_KEY, ORIGIN, Tool, client_for, csrf_of, server_config, sign_in
from toolpass import ApprovalPending, ApprovalQueue, Session, Toolkit, ToolRefused
from toolpass.engine import Toolpass
from toolpass.server import approvals_html as views
from toolpass.server import create_app
from toolpass.server.approvals_view import BadQuery, Filters
from toolpass.toolkit.standing import Standing


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/state.db"


@pytest.fixture
def engine() -> Iterator[Toolpass]:
    with Toolpass([]) as tp:
        yield tp


@pytest.fixture
def tool(store: str, tmp_path: Path) -> Tool:
    return Tool(store, tmp_path / "audit.jsonl")


def rows(page: str) -> dict[str, str]:
    """The history's rows by request id, as text (tags removed, entities read)."""
    section = page.split("<section id=decided>", 1)[1].split("</section>", 1)[0]
    found = re.findall(r'<tr data-id="([0-9a-f]+)"[^>]*>(.*?)</tr>', section, re.S)
    return {rid: html.unescape(re.sub(r"<[^>]+>", " ", row)) for rid, row in found}


async def decide(
    c: httpx.AsyncClient, request_id: str, decision: str = "approve", reason: str = ""
) -> httpx.Response:
    page = await c.get("/approvals")
    data = {"csrf": csrf_of(page.text), "id": request_id, "decision": decision, "reason": reason}
    return await c.post("/approvals/decide", data=data, headers={"Origin": ORIGIN})


async def test_the_history_keeps_a_request_after_its_call_ran_and_a_restart(
    engine: Toolpass, store: str, tool: Tool
) -> None:
    request_id = tool.ask(note="roll out 1.2")
    async with client_for(create_app(engine, server_config(store))) as c:
        await sign_in(c)
        await decide(c, request_id)
    assert tool.retry() == "deployed web"
    # Another server over the same store file: as after a restart.
    async with client_for(create_app(engine, server_config(store))) as c:
        page = await sign_in(c)
    row = rows(page.text)[request_id]
    assert "approved and run at " in row
    assert "lee@example.com" in row
    assert "dana@example.com" in row
    assert "note = 'roll out 1.2'" in row  # the call, as its preview showed it


async def test_the_history_says_denied_with_the_reason_and_expired(
    client_store: tuple[httpx.AsyncClient, str], tool: Tool
) -> None:
    c, _ = client_store
    denied = tool.ask(note="first")
    waiting = tool.ask(note="second")
    await sign_in(c)
    await decide(c, denied, "deny", "not during the <freeze>")
    with pytest.raises(ToolRefused):
        tool.retry(note="first")  # reads the denial: the live request is dropped
    tool.queue.expire(waiting)
    found = rows((await c.get("/approvals")).text)
    assert "denied" in found[denied]
    assert "not during the <freeze>" in found[denied]
    assert "expired" in found[waiting]


@pytest.fixture
async def client_store(
    engine: Toolpass, store: str, tmp_path: Path
) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    app = create_app(engine, server_config(store, audit_file=str(tmp_path / "audit.jsonl")))
    async with client_for(app) as c:
        yield c, store


async def test_the_history_is_filtered_by_user_tool_and_state(
    client_store: tuple[httpx.AsyncClient, str], tool: Tool
) -> None:
    c, _ = client_store
    dana = tool.ask(note="a")
    rory = tool.ask(note="b", user="rory@example.com")
    ran = tool.ask(note="c")
    await sign_in(c)
    await decide(c, ran)
    assert tool.retry(note="c") == "deployed web"

    async def shown(**query: str) -> set[str]:
        answer = await c.get("/approvals", params=query)
        assert answer.status_code == 200
        return set(rows(answer.text))

    assert await shown() == {dana, rory, ran}
    assert await shown(user="rory@example.com") == {rory}
    assert await shown(user="dana@example.com", state="pending") == {dana}
    assert await shown(state="ran") == {ran}
    assert await shown(tool="deploy", state="denied") == set()
    assert await shown(tool="other") == set()


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("state=approved'><script>", "A state filter is one of"),
        ("user=" + "x" * 300, "at most 256 characters"),
        ("user=a%0Ab", "one line"),
        ("tool=a&tool=b", "Give the tool filter once"),
        ("page=0", "A page is a number"),
        ("page=%D9%A3", "A page is a number"),  # an Arabic-Indic digit is no page number
    ],
)
async def test_a_bad_filter_is_refused_and_said_why(
    client_store: tuple[httpx.AsyncClient, str], query: str, problem: str
) -> None:
    c, _ = client_store
    await sign_in(c)
    answer = await c.get(f"/approvals?{query}")
    assert answer.status_code == 400
    assert problem in answer.text
    assert "<script>" not in answer.text


async def test_a_filter_value_is_shown_escaped(
    client_store: tuple[httpx.AsyncClient, str],
) -> None:
    c, _ = client_store
    await sign_in(c)
    hostile = '"><img src=x onerror=alert(1)>'
    answer = await c.get("/approvals", params={"user": hostile})
    assert answer.status_code == 200
    assert "<img" not in answer.text
    assert 'value="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"' in answer.text


async def test_the_history_is_paged_newest_first(
    client_store: tuple[httpx.AsyncClient, str], tool: Tool
) -> None:
    c, _ = client_store
    asked = [tool.ask(note=f"note {n}") for n in range(53)]
    await sign_in(c)
    first = await c.get("/approvals", params={"tool": "deploy"})
    assert list(rows(first.text)) == asked[::-1][:50]
    older = re.search(r'<a rel=next href="([^"]+)">older</a>', first.text)
    assert older, "no link to the older requests"
    link = html.unescape(older.group(1))
    assert parse_qs(urlsplit(link).query) == {"tool": ["deploy"], "page": ["2"]}
    second = await c.get(link)
    assert list(rows(second.text)) == asked[::-1][50:]
    assert "rel=next" not in second.text
    assert 'rel=prev href="/approvals?tool=deploy"' in second.text


async def test_a_decision_redirects_to_the_page_with_a_note_shown_once(
    client_store: tuple[httpx.AsyncClient, str], tool: Tool
) -> None:
    c, _ = client_store
    request_id = tool.ask()
    page = await sign_in(c)
    data = {"csrf": csrf_of(page.text), "id": request_id, "decision": "approve"}
    answer = await c.post(
        "/approvals/decide", data=data, headers={"Origin": ORIGIN}, follow_redirects=False
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == "/approvals"
    shown = await c.get("/approvals")
    assert f"You approved request {request_id} (deploy for dana@example.com)." in shown.text
    assert "id=flash" not in (await c.get("/approvals")).text  # a reload: the note is gone


async def test_a_note_is_for_its_own_session(engine: Toolpass, store: str, tool: Tool) -> None:
    app = create_app(engine, server_config(store))
    request_id = tool.ask()
    async with client_for(app) as deciding, client_for(app) as watching:
        await sign_in(deciding)
        await sign_in(watching)
        await decide(deciding, request_id)
        assert "id=flash" not in (await watching.get("/approvals")).text


async def test_retries_of_one_call_are_one_card_with_their_count(
    client_store: tuple[httpx.AsyncClient, str], tool: Tool
) -> None:
    c, _ = client_store
    first = tool.ask()
    assert tool.ask() == first  # the same call again, same session: the same request
    assert tool.ask() == first
    page = await sign_in(c)
    assert page.text.count("<article class=request") == 1
    assert "asked <span class=attempts>3</span> times" in page.text
    answer = await decide(c, first)
    assert f"You approved request {first}" in answer.text
    assert tool.retry() == "deployed web"
    assert rows(answer.text)[first].split()[-1] == "3"  # its attempts


async def test_the_same_call_in_another_session_is_its_own_card(
    client_store: tuple[httpx.AsyncClient, str], tool: Tool
) -> None:
    """An approval binds to the session it was asked in: one click never decides the same
    call waiting in another session."""
    c, _ = client_store
    first = tool.ask()
    another_run = Session("dana@example.com", id="conv-2")
    with another_run.active(), pytest.raises(ApprovalPending) as other:
        tool.deploy("web", "roll out 1.2")
    second = other.value.request_id
    page = await sign_in(c)
    assert page.text.count("<article class=request") == 2
    assert "for this same call" not in page.text
    await decide(c, second)
    assert tool.queue.get(second).status == "approved"
    assert tool.queue.get(first).status == "pending"


async def test_different_calls_are_not_grouped(
    client_store: tuple[httpx.AsyncClient, str], tool: Tool
) -> None:
    c, _ = client_store
    tool.ask(note="a")
    tool.ask(note="b")
    tool.ask(note="a", user="rory@example.com")
    page = await sign_in(c)
    assert page.text.count("<article class=request") == 3
    assert "for this same call" not in page.text


@given(
    user=st.text(max_size=300),
    tool=st.text(max_size=40),
    state=st.sampled_from(["", "pending", "ran", "denied", "bogus"]),
    page=st.text(max_size=5),
)
def test_filters_are_read_back_from_their_own_link_and_shown_inert(
    user: str, tool: str, state: str, page: str
) -> None:
    query = {"user": [user], "tool": [tool], "state": [state], "page": [page]}
    try:
        filters = Filters.parse(query)
    except BadQuery:
        return
    link = urlsplit(filters.link(filters.page)).query
    assert Filters.parse(parse_qs(link, keep_blank_values=True)) == filters
    shown = views.page(
        user="lee",
        via="key",
        csrf="t",
        pending=[],
        history=[],
        more=True,
        filters=filters,
        history_days=7,
        audit=[],
        audit_configured=False,
        ttl=900,
    )
    for value in (filters.user, filters.tool):
        assert f'value="{views.esc(value)}"' in shown
    body = shown.split("<body>", 1)[1]
    assert body.count("<form") == 2  # the filters and sign out
    assert body.count("<input") == 3
    assert "<script" not in body


@pytest.fixture
def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Callable[..., ServerProcess]
) -> tuple[ServerProcess, str]:
    """``toolpass serve`` with the page, over a SQLite store, in its own process."""
    monkeypatch.setenv("TP_SERVICE_KEY", "tp-service-key-0123456789abcdef")
    monkeypatch.setenv("TP_APPROVER_LEE", LEE_KEY)
    config, url = approvals_config(
        tmp_path,
        """\
        api_keys:
          - name: lee@example.com
            key: env:TP_APPROVER_LEE
        history_days: 2
        """,
    )
    return start("-config", str(config), "--port", "0"), url


def test_the_run_approved_in_another_process_carries_the_deciders_name(
    served: tuple[ServerProcess, str], tmp_path: Path
) -> None:
    server, store = served
    audit = tmp_path / "audit.jsonl"
    tool = Tool(store, audit)
    request_id = tool.ask()
    with httpx.Client(base_url=server.url) as person:
        form = person.get("/approvals/login")
        token = re.search(r'name=token value="([^"]+)"', form.text)
        assert token
        page = person.post(
            "/approvals/login",
            data={"key": LEE_KEY, "token": token.group(1)},
            headers={"Origin": server.url},
            follow_redirects=True,
        )
        data = {"csrf": csrf_of(page.text), "id": request_id, "decision": "approve"}
        decided = person.post("/approvals/decide", data=data, headers={"Origin": server.url})
        assert decided.status_code == 303
        assert tool.retry() == "deployed web"
        assert "approved and run" in rows(person.get("/approvals").text)[request_id]
    events = [json.loads(line) for line in audit.read_text().splitlines()]
    ran = [e for e in events if e["outcome"] == "ok"]
    assert len(ran) == 1
    assert ran[0]["approved_by"] == "lee@example.com"
    assert ran[0]["approval_id"] == request_id
    assert ApprovalQueue(store=store).history(state="ran")[0].decided_by == "lee@example.com"


async def test_one_click_never_decides_a_call_that_differs_beyond_its_preview(
    client_store: tuple[httpx.AsyncClient, str],
) -> None:
    """A tool's own preview may leave arguments out; two calls that look the same on the
    page but differ in them (or are two tools of one name) are two cards and two decisions,
    never one click that runs both."""
    c, store = client_store
    queue = ApprovalQueue(store=store)
    kit = Toolkit(approver=queue, audit=[])
    ran: list[str] = []

    @kit.secured_tool(effect="write", approve=True, preview=lambda call: "deploy web")
    def deploy(service: str, version: str) -> str:
        ran.append(version)
        return f"deployed {version}"

    asked = []
    with Session("dana@example.com", id="conv-1").active():
        for version in ("1.2", "6.6.6-backdoor"):
            with pytest.raises(ApprovalPending) as waiting:
                deploy("web", version)
            asked.append(waiting.value.request_id)
    page = await sign_in(c)
    assert page.text.count("<article class=request") == 2
    await decide(c, asked[0])
    assert queue.get(asked[1]).status == "pending"
    with Session("dana@example.com", id="conv-1").active():
        assert deploy("web", "1.2") == "deployed 1.2"
        with pytest.raises(ApprovalPending):
            deploy("web", "6.6.6-backdoor")
    assert ran == ["1.2"]


async def test_the_history_says_a_call_ran_under_a_standing_approval(
    client_store: tuple[httpx.AsyncClient, str], tool: Tool
) -> None:
    """A call a standing approval let run was never shown to its grantor: its row names the
    standing approval beside the grantor, not the grantor alone as if they decided it."""
    c, _ = client_store
    first = tool.ask(note="a")
    tool.queue.approve(first, by="lee@example.com", standing=Standing(minutes=10))
    assert tool.retry(note="a") == "deployed web"
    assert tool.retry(note="b") == "deployed web"  # never asked: the standing approval
    (grant,) = tool.queue.standing()
    found = rows((await sign_in(c)).text)
    (later,) = set(found) - {first}
    assert f"standing approval {grant.id}" in found[later]
    assert "through standing approval" not in found[first]  # lee decided this one
    assert f"granted standing approval {grant.id}" in found[first]  # and granted it with it
