"""Notifiers tell the people who decide that a request waits: a signed webhook, a Slack
message through slack_sdk, an email through smtplib (STARTTLS), each with a link to the
request on the approvals page and its approvers, tested against real servers on 127.0.0.1.
Delivery never holds up the call; a failed one is retried, then logged and audited, and the
request stays in the queue."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from email import message_from_bytes
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from fakes.server import FakeServer, Reply, Request
from fakes.slack import FakeSlack
from fakes.tls import make_certs
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass import ApprovalPending, ApprovalQueue, AuditEvent, Session, Toolkit
from toolpass.toolkit.notify import (
    EmailNotifier,
    Notifier,
    SlackNotifier,
    WebhookNotifier,
    signature,
    verify_signature,
)

USER = "dana@example.com"
SECRET = "whsec-test-0123456789"
PAGE = "https://toolpass.example.com/approvals"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a credential's shape


def ask(notifier: Notifier, *, approvers: dict[str, list[str]] | None = None) -> str:
    """A request for approval, heard by ``notifier``; its id."""
    queue = ApprovalQueue(approvers=approvers or {"write": ["lee@example.com"]})
    queue.on_request(notifier)
    kit = Toolkit(approver=queue, audit=[])
    publish = kit.secured_tool(
        lambda text, token: "published", name="publish", effect="write", approve=True
    )
    with Session(USER).active(), pytest.raises(ApprovalPending) as waiting:
        publish("release notes <!channel> & more", TOKEN)
    assert queue.get(waiting.value.request_id).status == "pending"
    return waiting.value.request_id


@pytest.fixture
def receiver() -> Iterator[FakeServer]:
    with FakeServer() as server:
        server.add("POST", "/hooks/toolpass", lambda request: Reply(204))
        yield server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def by_hand(secret: str, header: str, body: bytes) -> bool:
    """The receiver's own check, written from the documented scheme (not toolpass's)."""
    fields = dict(part.split("=", 1) for part in header.split(","))
    signed = fields["t"].encode() + b"." + body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["v1"]) and abs(time.time() - int(fields["t"])) < 60


# --- webhook --------------------------------------------------------------------------


def test_a_webhook_receives_the_request_signed(receiver: FakeServer) -> None:
    notifier = WebhookNotifier(f"{receiver.url}/hooks/toolpass", SECRET, page_url=PAGE)
    request_id = ask(notifier)
    notifier.flush(10)
    (seen,) = receiver.seen("POST", "/hooks/toolpass")
    assert by_hand(SECRET, seen.headers["toolpass-signature"], seen.body)
    payload = seen.json()
    assert payload["type"] == "approval.requested"
    sent = payload["request"]
    assert (sent["id"], sent["user"], sent["tool"]) == (request_id, USER, "publish")
    assert sent["approvers"] == ["lee@example.com"]
    assert sent["url"] == f"{PAGE}?id={request_id}"
    assert "publish" in sent["text"]
    assert request_id in sent["text"]
    assert TOKEN not in seen.body.decode()  # the preview shows a credential by its digest


def test_a_webhook_is_retried_until_it_answers(receiver: FakeServer) -> None:
    events: list[AuditEvent] = []
    receiver.fail(503, times=2)
    notifier = WebhookNotifier(
        f"{receiver.url}/hooks/toolpass", SECRET, audit=[events.append], attempts=3
    )
    ask(notifier)
    notifier.flush(20)
    assert len(receiver.seen("POST", "/hooks/toolpass")) == 3
    assert events == []


def test_the_call_never_waits_on_the_delivery() -> None:
    """The receiver holds the delivery until the call has returned: a call that waited on
    it would return only once the notifier gave up (its timeout), with a failure audited."""
    events: list[AuditEvent] = []
    returned = threading.Event()
    with FakeServer() as held:
        held.add("POST", "/hooks/toolpass", lambda request: returned.wait(30) and Reply(204))
        notifier = WebhookNotifier(
            f"{held.url}/hooks/toolpass", SECRET, audit=[events.append], attempts=1, timeout=10
        )
        ask(notifier)
        assert events == []
        returned.set()
        notifier.flush(20)
        assert len(held.seen("POST", "/hooks/toolpass")) == 1
    assert events == []


def test_a_failing_webhook_is_logged_and_audited_and_the_request_waits_on(
    receiver: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[AuditEvent] = []
    receiver.slow(3.0, times=5)
    notifier = WebhookNotifier(
        f"{receiver.url}/hooks/toolpass", SECRET, audit=[events.append], attempts=2, timeout=0.3
    )
    request_id = ask(notifier)
    notifier.flush(20)
    (event,) = events
    assert (event.outcome, event.code, event.approval_id) == ("error", "notify_failed", request_id)
    assert "WebhookNotifier" in (event.detail or "")
    assert event.user == USER
    assert request_id in caplog.text


def test_a_webhook_refused_with_a_status_is_a_failure(receiver: FakeServer) -> None:
    events: list[AuditEvent] = []
    receiver.fail(401, times=5)
    notifier = WebhookNotifier(
        f"{receiver.url}/hooks/toolpass", SECRET, audit=[events.append], attempts=2
    )
    ask(notifier)
    notifier.flush(20)
    assert [e.code for e in events] == ["notify_failed"]
    assert "HTTP 401" in (events[0].detail or "")


def test_webhook_and_page_urls_are_https_except_on_loopback() -> None:
    for url in ("http://hooks.example.com/x", "ftp://127.0.0.1/x", "https://u:p@example.com/"):
        with pytest.raises(ValueError):
            WebhookNotifier(url, SECRET)
    with pytest.raises(ValueError):
        WebhookNotifier("https://hooks.example.com/x", SECRET, page_url="http://example.com/")
    with pytest.raises(ValueError):
        WebhookNotifier("https://hooks.example.com/x", "")


def test_verify_signature_accepts_the_delivery_and_nothing_else() -> None:
    body, now = b'{"type": "approval.requested"}', time.time()
    header = signature(SECRET, body, int(now))
    assert verify_signature(SECRET, header, body, now=now)
    assert not verify_signature("another secret", header, body, now=now)
    assert not verify_signature(SECRET, header, body + b" ", now=now)
    assert not verify_signature(SECRET, header, body, now=now + 301)  # replayed later
    for broken in (None, "", "t=x,v1=00", header.replace("v1=", "v0="), "v1=" + "0" * 64):
        assert not verify_signature(SECRET, broken, body, now=now)


@settings(max_examples=200)
@given(body=st.binary(max_size=200), other=st.binary(max_size=200))
def test_a_signature_holds_for_its_own_body_only(body: bytes, other: bytes) -> None:
    now = int(time.time())
    header = signature(SECRET, body, now)
    assert verify_signature(SECRET, header, body, now=now)
    assert verify_signature(SECRET, header, other, now=now) == (other == body)


# --- Slack ----------------------------------------------------------------------------

BOT = "xoxb-1111-2222-fake"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeServer() as server:
        fake = FakeSlack(server)
        fake.add_token(BOT, user_id="U0BOT", scopes=("chat:write",))
        fake.add_channel("C0APPROVE", "approvals", members=["U0BOT"])
        fake.add_channel("C0OTHER", "elsewhere", members=[])
        yield fake


def test_slack_gets_a_message_with_blocks_and_a_button_to_the_page(slack: FakeSlack) -> None:
    notifier = SlackNotifier(BOT, "C0APPROVE", base_url=slack.server.url + "/", page_url=PAGE)
    request_id = ask(notifier)
    notifier.flush(10)
    (message,) = slack.messages["C0APPROVE"]
    assert request_id in message["text"]
    (posted,) = slack.server.seen("POST", "/chat.postMessage")
    blocks = json.loads(_form(posted)["blocks"])
    (actions,) = [b for b in blocks if b["type"] == "actions"]
    assert actions["elements"][0]["url"] == f"{PAGE}?id={request_id}"
    text = json.dumps(blocks)
    assert "lee@example.com" in text  # who may decide
    assert "<!channel>" not in text
    assert "&lt;!channel&gt;" in text
    assert TOKEN not in text
    assert TOKEN not in message["text"]


def test_a_slack_error_is_audited(slack: FakeSlack) -> None:
    events: list[AuditEvent] = []
    notifier = SlackNotifier(
        BOT, "C0OTHER", base_url=slack.server.url + "/", audit=[events.append], attempts=1
    )
    request_id = ask(notifier)
    notifier.flush(10)
    (event,) = events
    assert event.approval_id == request_id
    assert "not_in_channel" in (event.detail or "")


def _form(request: Request) -> dict[str, str]:
    from urllib.parse import parse_qs

    if request.headers.get("content-type", "").startswith("application/json"):
        return {k: v if isinstance(v, str) else json.dumps(v) for k, v in request.json().items()}
    return {k: v[0] for k, v in parse_qs(request.body.decode()).items()}


# --- email ----------------------------------------------------------------------------


class Inbox:
    def __init__(self) -> None:
        self.mail: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.mail.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[tuple[Controller, Inbox, str]]:
    """A real SMTP server (aiosmtpd) on 127.0.0.1 that requires STARTTLS."""
    certs = make_certs(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs.cert_file, certs.key_file)
    inbox = Inbox()
    controller = Controller(
        inbox, hostname="127.0.0.1", port=free_port(), tls_context=context, require_starttls=True
    )
    controller.start()
    try:
        yield controller, inbox, certs.ca_file
    finally:
        controller.stop()


def test_an_email_reaches_the_approvers_over_starttls(smtp: tuple[Controller, Inbox, str]) -> None:
    controller, inbox, ca_file = smtp
    notifier = EmailNotifier(
        "127.0.0.1",
        port=controller.port,
        sender="toolpass@example.com",
        ca_file=ca_file,
        page_url=PAGE,
    )
    request_id = ask(notifier, approvers={"write": ["lee@example.com", "ops", "kim@example.com"]})
    notifier.flush(10)
    ((sender, recipients, content),) = inbox.mail
    assert (sender, recipients) == ("toolpass@example.com", ["lee@example.com", "kim@example.com"])
    mail = message_from_bytes(content)
    assert request_id in mail["Subject"]
    assert "publish" in mail["Subject"]
    body = mail.get_payload(decode=True).decode()
    assert f"{PAGE}?id={request_id}" in body
    assert "Who may decide: lee@example.com, ops, kim@example.com" in body
    assert TOKEN not in content.decode()


def test_an_email_without_starttls_to_a_server_that_requires_it_is_audited(
    smtp: tuple[Controller, Inbox, str],
) -> None:
    controller, inbox, _ = smtp
    events: list[AuditEvent] = []
    notifier = EmailNotifier(
        "127.0.0.1",
        port=controller.port,
        sender="toolpass@example.com",
        to=["lee@example.com"],
        starttls=False,
        audit=[events.append],
        attempts=1,
    )
    ask(notifier)
    notifier.flush(10)
    assert inbox.mail == []
    assert [e.code for e in events] == ["notify_failed"]


def test_an_email_with_no_recipient_is_audited(smtp: tuple[Controller, Inbox, str]) -> None:
    controller, _inbox, ca_file = smtp
    events: list[AuditEvent] = []
    notifier = EmailNotifier(
        "127.0.0.1",
        port=controller.port,
        sender="toolpass@example.com",
        ca_file=ca_file,
        audit=[events.append],
        attempts=1,
    )
    ask(notifier, approvers={"write": ["ops-leads"]})
    notifier.flush(10)
    assert "no recipient" in (events[0].detail or "")


def _mrkdwn(blocks: Any) -> list[dict[str, Any]]:
    """Every mrkdwn text object in ``blocks``, at any depth."""
    if isinstance(blocks, list):
        return [t for b in blocks for t in _mrkdwn(b)]
    if not isinstance(blocks, dict):
        return []
    found = [blocks] if blocks.get("type") == "mrkdwn" else []
    return found + [t for v in blocks.values() for t in _mrkdwn(v)]


@settings(max_examples=25, deadline=None)
@given(
    value=st.text(alphabet="`@!<>#&*_~ :/.channelhttpsevilx\n", max_size=40).map(
        lambda tail: "```@channel @here https://evil.example/approvals?id=x ```" + tail
    )
)
def test_an_argument_cannot_mention_link_or_leave_the_preview_in_slack(value: str) -> None:
    """Slack parses mentions (@channel) and turns bare URLs into links in a mrkdwn text object
    unless it is ``verbatim``; and a preview holding ``` would end its code block early, so
    the rest of it reads as the message's own words."""
    with FakeServer() as server:
        fake = FakeSlack(server)
        fake.add_token(BOT, user_id="U0BOT", scopes=("chat:write",))
        fake.add_channel("C0APPROVE", "approvals", members=["U0BOT"])
        notifier = SlackNotifier(
            BOT, "C0APPROVE", base_url=server.url + "/", page_url=PAGE, background=False
        )
        queue = ApprovalQueue()
        queue.on_request(notifier)
        kit = Toolkit(approver=queue, audit=[])
        publish = kit.secured_tool(lambda text: "ok", name="publish", approve=True)
        with Session(USER).active(), pytest.raises(ApprovalPending):
            publish(value)
        (posted,) = server.seen("POST", "/chat.postMessage")
    form = _form(posted)
    assert "evil" not in form["text"]  # the notification's fallback: one line, no preview
    assert str(form.get("unfurl_links")).lower() in ("false", "0")  # no preview of its URLs
    blocks = json.loads(form["blocks"])
    texts = _mrkdwn(blocks)
    assert texts
    assert all(t.get("verbatim") is True for t in texts)
    for text in (t["text"] for t in texts):
        if text.startswith("```"):
            assert "```" not in text[3:-3]  # one code block, whole
        else:
            assert "```" not in text
