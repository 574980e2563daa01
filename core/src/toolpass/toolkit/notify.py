"""Notifiers: tell the people who decide that an approval request waits for them.

A notifier is an ``on_request`` listener: ``queue.on_request(WebhookNotifier(url, secret,
page_url=...))``. It reads what it sends from the request at once, then delivers it from a
thread of its own, trying ``attempts`` times with a ``timeout`` each, so the call that made
the request never waits on it. A delivery that fails every attempt is logged and written to
``audit`` (code ``notify_failed``, with the request's id); the request stays in the queue.
What is sent is the request's description (its preview shows a secret by its digest alone),
who may decide it, and a link to the approvals page, never the raw arguments.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
import logging
import smtplib
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any
from urllib.parse import urlencode

from toolpass.outcome.audit import AuditEvent
from toolpass.toolkit.approval import ApprovalRequest, printable
from toolpass.wire.http import HTTPClient, NetOptions, check_url

log = logging.getLogger("toolpass")

#: The header a webhook's signature is sent in: ``t=<unix time>,v1=<hex HMAC-SHA256>``.
SIGNATURE_HEADER = "Toolpass-Signature"


@dataclass(frozen=True)
class Notice:
    """What a notifier sends about one request."""

    request_id: str
    user: str
    session_id: str
    tool: str
    effect: str | None
    reasons: tuple[str, ...]
    preview: str
    approvers: tuple[str, ...]
    text: str  # who asks for what and why, with the preview
    url: str | None  # the request on the approvals page

    @classmethod
    def of(cls, request: ApprovalRequest, page_url: str | None) -> Notice:
        url = None if page_url is None else f"{page_url}?{urlencode({'id': request.id})}"
        return cls(
            request_id=request.id,
            user=request.user,
            session_id=request.session_id,
            tool=request.tool,
            effect=request.effect,
            reasons=tuple(request.reasons),
            preview=request.preview,
            approvers=tuple(request.approvers),
            text=request.describe(),
            url=url,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON a webhook receives (under ``"request"``)."""
        return {
            "id": self.request_id,
            "user": self.user,
            "session_id": self.session_id,
            "tool": self.tool,
            "effect": self.effect,
            "reasons": list(self.reasons),
            "preview": self.preview,
            "approvers": list(self.approvers),
            "text": self.text,
            "url": self.url,
        }


class Notifier:
    """The delivery every notifier shares; a subclass writes :meth:`send`.

    ``page_url``: the approvals page (``https://toolpass.example.com/approvals``), linked
    with ``?id=<request id>``. ``audit``: the audit sinks told of a failed delivery.
    ``background=False`` delivers in the calling thread (still bounded by the attempts).
    """

    def __init__(
        self,
        *,
        page_url: str | None = None,
        attempts: int = 3,
        timeout: float = 5.0,
        audit: Iterable[Callable[[AuditEvent], object]] = (),
        background: bool = True,
    ) -> None:
        if attempts < 1:
            raise ValueError(f"attempts is at least 1, not {attempts!r}")
        self.page_url = None if page_url is None else check_url(page_url, "page_url")
        self.attempts = attempts
        self.timeout = timeout
        self.audit = list(audit)
        self.background = background
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()

    def __call__(self, request: ApprovalRequest) -> None:
        notice = Notice.of(request, self.page_url)
        if not self.background:
            self._deliver(notice)
            return
        thread = threading.Thread(target=self._deliver, args=(notice,), name="toolpass-notify")
        with self._lock:
            self._threads.add(thread)
        thread.start()

    def send(self, notice: Notice) -> None:
        """Deliver ``notice`` once; raise on failure."""
        raise NotImplementedError

    def flush(self, timeout: float | None = None) -> None:
        """Wait for the deliveries under way (at most ``timeout`` seconds)."""
        with self._lock:
            running = list(self._threads)
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in running:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _deliver(self, notice: Notice) -> None:
        try:
            failures: list[Exception] = []
            for attempt in range(self.attempts):
                if attempt:
                    time.sleep(min(0.5 * 2 ** (attempt - 1), 5.0))
                try:
                    self.send(notice)
                    return
                except Exception as exc:  # any failure is retried, then audited
                    failures.append(exc)
            self._failed(notice, failures[-1])
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _failed(self, notice: Notice, exc: BaseException) -> None:
        name = type(self).__name__
        detail = f"{name}: {type(exc).__name__}: {exc}"
        log.warning(
            "toolpass could not notify of approval request %s: %s", notice.request_id, detail
        )
        event = AuditEvent(notice.tool, notice.effect)
        event.user, event.session_id, event.approval_id = (
            notice.user,
            notice.session_id,
            notice.request_id,
        )
        event.outcome, event.code = "error", "notify_failed"
        event.message = (
            f"{name} could not tell the approvers of request {notice.request_id} "
            f"after {self.attempts} attempts; it still waits on the approvals page"
        )
        event.detail = detail
        event.finish()
        for sink in self.audit:
            try:
                sink(event)
            except Exception:
                log.exception("toolpass audit sink %r failed", sink)


class WebhookNotifier(Notifier):
    """POSTs ``{"type": "approval.requested", "request": {...}}`` as JSON to ``url``, signed
    like Stripe's and GitHub's webhooks: header ``Toolpass-Signature: t=<unix time>,v1=<hex>``
    where ``<hex>`` is the HMAC-SHA256, keyed with ``secret``, of ``"<t>." + body``. A
    receiver checks it with :func:`verify_signature`. Any answer but 2xx is a failure (no
    redirect is followed); ``url`` is https (http only on loopback), its certificate checked
    against the system's roots or ``ca_file``. Each delivery opens its own connection."""

    def __init__(
        self, url: str, secret: str | bytes, *, ca_file: str | None = None, **options: Any
    ) -> None:
        super().__init__(**options)
        if not secret:
            raise ValueError("a webhook needs a secret to sign with")
        self.url = check_url(url, "url")
        self._secret = secret.encode() if isinstance(secret, str) else bytes(secret)
        self._client = HTTPClient(max_idle=0)
        self._net = NetOptions(ca_file=ca_file)

    def __repr__(self) -> str:
        return f"WebhookNotifier({self.url!r})"

    def send(self, notice: Notice) -> None:
        body = json.dumps({"type": "approval.requested", "request": notice.to_dict()}).encode()
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: signature(self._secret, body, int(time.time())),
        }
        answer = self._client.request(
            "POST", self.url, body=body, headers=headers, timeout=self.timeout, options=self._net
        )
        if not 200 <= answer.status < 300:
            raise RuntimeError(f"the webhook answered HTTP {answer.status}")


def signature(secret: str | bytes, body: bytes, timestamp: int) -> str:
    """The ``Toolpass-Signature`` header's value for ``body`` sent at ``timestamp``."""
    key = secret.encode() if isinstance(secret, str) else secret
    mac = hmac.new(key, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_signature(
    secret: str | bytes,
    header: str | None,
    body: bytes,
    *,
    tolerance: float = 300.0,
    now: float | None = None,
) -> bool:
    """Whether ``header`` (``Toolpass-Signature``) signs ``body`` with ``secret`` and was
    made within ``tolerance`` seconds of ``now`` (a replayed old delivery is refused)."""
    fields = dict(part.partition("=")[::2] for part in (header or "").split(","))
    try:
        timestamp = int(fields.get("t", ""))
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = signature(secret, body, timestamp).partition(",v1=")[2]
    return hmac.compare_digest(expected, fields.get("v1", ""))


class SlackNotifier(Notifier):
    """Posts the request to a Slack ``channel`` through ``slack_sdk``'s ``WebClient``
    (``chat.postMessage`` with blocks; the bot token needs ``chat:write``), with a button
    to the approvals page. ``base_url`` is for a Slack-compatible API elsewhere.
    Needs ``pip install slack_sdk``."""

    def __init__(
        self, token: str, channel: str, *, base_url: str | None = None, **options: Any
    ) -> None:
        super().__init__(**options)
        try:
            web_client: Any = importlib.import_module("slack_sdk").WebClient
        except ImportError:
            raise ImportError("SlackNotifier needs slack_sdk: pip install slack_sdk") from None
        self.channel = channel
        kwargs: dict[str, Any] = {"token": token, "timeout": int(max(1, self.timeout))}
        if base_url is not None:
            kwargs["base_url"] = base_url
        self._client: Any = web_client(**kwargs)

    def __repr__(self) -> str:
        return f"SlackNotifier({self.channel!r})"

    def send(self, notice: Notice) -> None:
        self._client.chat_postMessage(
            channel=self.channel,
            text=_slack(f"{notice.user} wants to run {notice.tool} (request {notice.request_id})"),
            blocks=slack_blocks(notice),
            unfurl_links=False,
            unfurl_media=False,
        )


def slack_blocks(notice: Notice) -> list[dict[str, Any]]:
    """The message's Block Kit blocks: who asks for what and why, the preview, who may
    decide, and a button to the page. Text is escaped and ``verbatim`` (Slack neither parses
    mentions nor links URLs in it), and the preview stays inside its code block, so no
    argument can mention ``@channel``, make a link or write outside the preview."""
    effect = f" ({notice.effect})" if notice.effect else ""
    head = f"*{notice.user}* wants to run *{notice.tool}*{effect}"
    blocks: list[dict[str, Any]] = [
        _section(f"{_slack(head)}\n*Why:* {_slack('; '.join(notice.reasons))}"),
        _section(_code_block(_slack(notice.preview))),
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "verbatim": True,
                    "text": _slack(
                        f"Request {notice.request_id} · approvers: "
                        + (", ".join(notice.approvers) or "anyone but the user")
                    ),
                }
            ],
        },
    ]
    if notice.url is not None:
        button = {
            "type": "button",
            "text": {"type": "plain_text", "text": "Open the approvals page"},
            "url": notice.url,
        }
        blocks.append({"type": "actions", "elements": [button]})
    return blocks


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:3000], "verbatim": True}}


def _code_block(text: str, limit: int = 2900) -> str:
    """``text`` (its first ``limit`` characters) as one code block: a zero-width space after
    each backtick that another follows, and beside one at either end, so nothing in it
    closes the block early (it looks the same)."""
    inner = text.replace("``", "`\u200b`").replace("``", "`\u200b`")[:limit]
    before, after = (
        ("\u200b" if inner.startswith("`") else ""),
        ("\u200b" if inner.endswith("`") else ""),
    )
    return f"```{before}{inner}{after}```"


def _slack(text: str) -> str:
    """Text Slack shows as it is: ``&``, ``<`` and ``>`` escaped (no mention, no link)."""
    return printable(text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


class EmailNotifier(Notifier):
    """Emails the request through the SMTP server at ``host``:``port`` from ``sender`` to
    ``to`` (default: the request's approvers that are addresses). ``starttls=True`` (the
    default) upgrades the connection and verifies the server (``ca_file`` replaces the
    system's roots) before ``username``/``password`` log in."""

    def __init__(
        self,
        host: str,
        *,
        sender: str,
        to: Sequence[str] = (),
        port: int = 587,
        starttls: bool = True,
        username: str | None = None,
        password: str | None = None,
        ca_file: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.host, self.port, self.sender, self.to = host, port, sender, tuple(to)
        self.starttls, self.username, self._password = starttls, username, password
        self.ca_file = ca_file

    def __repr__(self) -> str:
        return f"EmailNotifier({self.host!r}, {self.port})"

    def send(self, notice: Notice) -> None:
        recipients = self.to or tuple(a for a in notice.approvers if "@" in a)
        if not recipients:
            raise ValueError("no recipient: give to=[...] or approvers that are addresses")
        with smtplib.SMTP(self.host, self.port, timeout=self.timeout) as smtp:
            if self.starttls:
                smtp.starttls(context=ssl.create_default_context(cafile=self.ca_file))
            if self.username is not None:
                smtp.login(self.username, self._password or "")
            smtp.send_message(email_of(notice, self.sender, recipients))


def email_of(notice: Notice, sender: str, recipients: Sequence[str]) -> EmailMessage:
    """The message for ``notice``: one line of subject, the description and the link."""
    message = EmailMessage()
    message["Subject"] = printable(
        f"Approval needed: {notice.user} wants to run {notice.tool} (request {notice.request_id})"
    )
    message["From"] = sender
    message["To"] = ", ".join(recipients)
    approvers = ", ".join(notice.approvers) or "anyone but the user"
    link = f"\n\nDecide on the approvals page: {notice.url}" if notice.url else ""
    message.set_content(f"{notice.text}\nWho may decide: {approvers}{link}\n")
    return message
