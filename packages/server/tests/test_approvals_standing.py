"""Standing approvals on the approvals page (#20): granted with a decision (this session, N
minutes up to the page's bound, calls with the same arguments), listed with who granted
them, what they cover, until when and how many calls they let run, revoked by their grantor
or one who may decide their tool (CSRF, same origin, post/redirect/get), and the revocation
kept in the history; against ``toolpass serve`` in its own process on 127.0.0.1. Also: a
preview's lines shown as lines."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from conftest import ServerProcess, approvals_config
from hypothesis import given
from hypothesis import strategies as st
from test_approvals_page import LEE_KEY, csrf_of
from toolpass import ApprovalPending, ApprovalQueue, Session, Toolkit
from toolpass.server import approvals_html as views
from toolpass.server.approvals_view import BadQuery, standing_of
from toolpass.toolkit.approval import printable

KIM_KEY = "approver-kim-0123456789abcdef"
BOUND = 60  # max_standing_minutes in the server's config


class Tool:
    """A real secured tool that always needs approval; its requests go to lee only."""

    def __init__(self, store: str, audit: Path) -> None:
        self.queue = ApprovalQueue(store=store, approvers={"tool:deploy": ["lee@example.com"]})
        self.audit = audit
        self.runs: list[str] = []
        kit = Toolkit(approver=self.queue, audit=[str(audit)])

        @kit.secured_tool(effect="write", approve=True)
        def deploy(service: str, note: str) -> str:
            self.runs.append(note)
            return f"deployed {service}"

        self.deploy = deploy

    def call(self, note: str, session: str = "conv-1") -> str:
        """The call's result, or ``asked <request id>`` when it waits for a person."""
        with Session("dana@example.com", id=session).active():
            try:
                result: str = self.deploy("web", note)
            except ApprovalPending as waiting:
                return f"asked {waiting.request_id}"
            return result

    def events(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.audit.read_text().splitlines()]


def standing_config(directory: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """The server's configuration (lee and kim approve), its keys in the environment."""
    monkeypatch.setenv("TP_SERVICE_KEY", "tp-service-key-0123456789abcdef")
    monkeypatch.setenv("TP_APPROVER_LEE", LEE_KEY)
    monkeypatch.setenv("TP_APPROVER_KIM", KIM_KEY)
    return approvals_config(
        directory,
        f"""\
        api_keys:
          - {{name: lee@example.com, key: env:TP_APPROVER_LEE}}
          - {{name: kim@example.com, key: env:TP_APPROVER_KIM}}
        max_standing_minutes: {BOUND}
        """,
    )


@pytest.fixture
def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Callable[..., ServerProcess]
) -> tuple[ServerProcess, Tool]:
    config, url = standing_config(tmp_path, monkeypatch)
    server = start("-config", str(config), "--port", "0")
    return server, Tool(url, tmp_path / "audit.jsonl")


@pytest.fixture(scope="module")
def one_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    """One server and its store for the tests after which no approval stands (each asks its
    own request): the server and the store's URL."""
    directory = tmp_path_factory.mktemp("standing")
    with pytest.MonkeyPatch.context() as monkeypatch:
        config, url = standing_config(directory, monkeypatch)
        server = ServerProcess(directory, "-config", str(config), "--port", "0")
        try:
            yield server.wait_ready(), url
        finally:
            server.close()


@pytest.fixture
def shared(one_server: tuple[ServerProcess, str], tmp_path: Path) -> tuple[ServerProcess, Tool]:
    """``one_server``, and a tool of this test's own asking through its store."""
    server, url = one_server
    return server, Tool(url, tmp_path / "audit.jsonl")


@contextmanager
def person(server: ServerProcess, key: str = LEE_KEY) -> Iterator[httpx.Client]:
    """A browser-like client signed in to the page with ``key``."""
    with httpx.Client(base_url=server.url, follow_redirects=True) as client:
        form = client.get("/approvals/login")
        token = re.search(r'name=token value="([^"]+)"', form.text)
        assert token, form.text
        signed = client.post(
            "/approvals/login",
            data={"key": key, "token": token.group(1)},
            headers={"Origin": server.url},
        )
        assert signed.status_code == 200, signed.text
        yield client


def approve(
    client: httpx.Client, server: ServerProcess, request_id: str, scope: str, minutes: str = ""
) -> httpx.Response:
    data = {
        "csrf": csrf_of(client.get("/approvals").text),
        "id": request_id,
        "decision": "approve",
        "scope": scope,
        "minutes": minutes,
    }
    return client.post("/approvals/decide", data=data, headers={"Origin": server.url})


def revoke(
    client: httpx.Client, server: ServerProcess, standing_id: str, **changed: str
) -> httpx.Response:
    data = {"csrf": csrf_of(client.get("/approvals").text), "id": standing_id}
    headers = {"Origin": changed.pop("origin", server.url)}
    return client.post("/approvals/revoke", data={**data, **changed}, headers=headers)


def standing_rows(page: str) -> dict[str, str]:
    """The standing approvals section's rows by id, as text."""
    section = page.split("<section id=standing>", 1)[1].split("</section>", 1)[0]
    found = re.findall(r'<tr data-(?:standing|revoked)="([0-9a-f]+)">(.*?)</tr>', section, re.S)
    return {sid: html.unescape(re.sub(r"<[^>]+>", " ", row)) for sid, row in found}


def test_a_session_approval_from_the_page_runs_each_later_call_once_audited(
    served: tuple[ServerProcess, Tool],
) -> None:
    server, tool = served
    first = tool.call("a").removeprefix("asked ")
    with person(server) as lee:
        decided = approve(lee, server, first, "session")
        assert decided.status_code == 200  # after the 303
        assert "its later calls in this session are approved too" in decided.text
        assert tool.call("a") == "deployed web"
        assert tool.call("b") == "deployed web"  # never asked: the standing approval
        assert tool.call("c") == "deployed web"
        assert tool.call("b", session="conv-2").startswith("asked ")  # another session
        (grant,) = tool.queue.standing()
        row = standing_rows(lee.get("/approvals").text)[grant.id]
    assert tool.runs == ["a", "b", "c"]
    assert "lee@example.com" in row
    assert "dana@example.com" in row
    assert "session conv-1" in row
    assert row.split()[-2:] == ["2", "Revoke"]  # two calls it let run
    ran = [e for e in tool.events() if e["outcome"] == "ok"]
    assert [e["approved_by"] for e in ran] == ["lee@example.com"] * 3
    assert [e["standing_approval"] for e in ran] == [None, grant.id, grant.id]


def test_an_approval_for_the_same_arguments_covers_only_those(
    served: tuple[ServerProcess, Tool],
) -> None:
    server, tool = served
    first = tool.call("roll out 1.2").removeprefix("asked ")
    with person(server) as lee:
        approve(lee, server, first, "arguments")
        (grant,) = tool.queue.standing()
        row = standing_rows(lee.get("/approvals").text)[grant.id]
    assert "any session" in row
    assert "note = 'roll out 1.2'" in row
    assert tool.call("roll out 1.2") == "deployed web"
    assert tool.call("roll out 1.2", session="conv-2") == "deployed web"
    assert tool.call("roll out 6.6.6").startswith("asked ")
    assert tool.runs == ["roll out 1.2", "roll out 1.2"]


@pytest.mark.parametrize("minutes", [str(BOUND + 1), "0", "-5", "1e3", "", "10.5", "٣"])
def test_minutes_beyond_the_bound_or_not_a_number_are_refused(
    shared: tuple[ServerProcess, Tool], minutes: str
) -> None:
    server, tool = shared
    request_id = tool.call("a").removeprefix("asked ")
    with person(server) as lee:
        answer = approve(lee, server, request_id, "minutes", minutes)
    assert answer.status_code == 400
    assert f"a whole number of minutes from 1 to {BOUND}" in answer.text
    assert tool.queue.get(request_id).status == "pending"
    assert tool.queue.standing() == []


def test_a_denial_reaches_its_call_only(shared: tuple[ServerProcess, Tool]) -> None:
    server, tool = shared
    request_id = tool.call("a").removeprefix("asked ")
    with person(server) as lee:
        data = {
            "csrf": csrf_of(lee.get("/approvals").text),
            "id": request_id,
            "decision": "deny",
            "reason": "not now",
            "scope": "minutes",
            "minutes": "99999",
        }
        denied = lee.post("/approvals/decide", data=data, headers={"Origin": server.url})
    assert denied.status_code == 200
    assert tool.queue.standing() == []
    assert tool.queue.state(request_id) == "denied"


def test_minutes_within_the_bound_last_that_long(served: tuple[ServerProcess, Tool]) -> None:
    server, tool = served
    request_id = tool.call("a").removeprefix("asked ")
    with person(server) as lee:
        assert approve(lee, server, request_id, "minutes", str(BOUND)).status_code == 200
    (grant,) = tool.queue.standing()
    assert grant.expires - grant.created == BOUND * 60
    assert grant.session_id is None
    assert grant.match == {}


@given(minutes=st.text(max_size=6))
def test_the_page_grants_only_whole_minutes_within_its_bound(minutes: str) -> None:
    try:
        standing = standing_of("minutes", minutes, BOUND)
    except BadQuery:
        assert not (minutes.isascii() and minutes.isdigit() and 1 <= int(minutes) <= BOUND)
        return
    assert standing is not None
    assert standing.minutes == int(minutes) <= BOUND


def test_a_revoked_standing_approval_stops_the_next_call_and_stays_in_the_history(
    served: tuple[ServerProcess, Tool],
) -> None:
    server, tool = served
    first = tool.call("a").removeprefix("asked ")
    with person(server) as lee:
        approve(lee, server, first, "session")
        assert tool.call("a") == "deployed web"
        assert tool.call("b") == "deployed web"
        (grant,) = tool.queue.standing()
        answer = revoke(lee, server, grant.id)
        assert answer.status_code == 200  # after the 303
        assert answer.history[0].headers["location"] == "/approvals"
        assert f"You revoked standing approval {grant.id}" in answer.text
        assert tool.queue.standing() == []
        later = tool.call("c")
        assert later.startswith("asked ")
        page = lee.get("/approvals").text
    assert tool.runs == ["a", "b"]
    row = standing_rows(page)[grant.id]
    assert "revoked by lee@example.com" in row
    assert row.split()[-1] == "1"
    history = page.split("<section id=decided>", 1)[1]
    assert f"granted standing approval {grant.id}, revoked by lee@example.com" in history
    assert f"revoked standing approval {grant.id}" in server.stderr  # the server's log


def test_a_forged_or_cross_user_revoke_is_refused(served: tuple[ServerProcess, Tool]) -> None:
    """kim signs in but may not decide deploy (routed to lee), and did not grant it; a
    revoke without the session's token or from another origin, or signed out, is refused."""
    server, tool = served
    first = tool.call("a").removeprefix("asked ")
    with person(server) as lee, person(server, KIM_KEY) as kim:
        approve(lee, server, first, "session")
        (grant,) = tool.queue.standing()
        assert "Revoke" not in standing_rows(kim.get("/approvals").text)[grant.id]
        refused = revoke(kim, server, grant.id)
        assert refused.status_code == 403
        assert "Only its grantor or one of its tool&#x27;s approvers" in refused.text
        assert (
            revoke(lee, server, grant.id, csrf=csrf_of(kim.get("/approvals").text)).status_code
            == 403
        )
        assert revoke(lee, server, grant.id, origin="http://evil.example").status_code == 403
        with httpx.Client(base_url=server.url) as nobody:
            data = {"csrf": "", "id": grant.id}
            signed_out = nobody.post("/approvals/revoke", data=data, headers={"Origin": server.url})
            assert signed_out.status_code == 401
        assert revoke(lee, server, "0123456789ab").status_code == 404
    assert tool.queue.standing() == [grant]
    assert tool.call("b") == "deployed web"


def test_a_multi_line_preview_shows_its_lines_escaped(
    served: tuple[ServerProcess, Tool],
) -> None:
    server, tool = served
    tool.call("<b>bold</b>\u202e")
    with person(server) as lee:
        page = lee.get("/approvals").text
    pre = re.search(r"<pre class=preview>(.*?)</pre>", page, re.S)
    assert pre
    assert pre.group(1) == (
        "  service = &#x27;web&#x27;\n  note = &#x27;&lt;b&gt;bold&lt;/b&gt;\\u202e&#x27;"
    )


@given(text=st.text())
def test_a_preview_keeps_line_breaks_and_escapes_everything_else(text: str) -> None:
    shown = views.esc_lines(text)
    assert all(c.isprintable() or c == "\n" for c in shown)
    assert "<" not in shown
    assert ">" not in shown
    assert html.unescape(shown).split("\n") == [printable(line) for line in text.split("\n")]
