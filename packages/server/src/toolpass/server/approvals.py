"""The approvals page: people decide the requests tools keep in the shared store.

``GET /approvals`` shows the pending requests (who, which tool, its effect, why, the whole
preview; retries of one call grouped, with their count), the history of every request
(filtered by ``?user=``, ``?tool=``, ``?state=``, ``?page=``) and the audit tail;
``POST /approvals/decide`` approves or denies one call's requests and redirects (303) to the
page with a note of what was done, so a reload never posts again. The decider's name is the
signed-in identity, never a form field. An approval may also stand for later calls (this
session, N minutes up to ``max_standing_minutes``, or calls with the same arguments); the
page lists the standing approvals in force, and ``POST /approvals/revoke`` ends one (its
grantor, or one who may decide its tool), kept with who ended it for ``history_days``.

Login: an approver key (``approvals.api_keys``, compared as ``POST /check`` keys are) opens a
session, or an identity header (``approvals.proxy``) from one of ``approvals.trusted_proxies``.
A request's address is its peer's, or, from a trusted proxy, the last address of
``X-Forwarded-For`` that is not one (no header is trusted from anyone else). A session is a
random id in a signed cookie (HttpOnly, SameSite=Strict, Secure over TLS) whose record, with
its CSRF token and expiry, lives in the store, so every worker sees it and sign out ends it; a
key's session is checked against the configured keys on every request, so removing (or
changing) a key ends its sessions. Nobody approves a call made for themselves unless
``approvals.self_approval`` is true (the queue enforces it). Every POST needs the session's
CSRF token (compared in constant time) and a same-origin ``Origin`` (or ``Referer``); GET
changes nothing but the session.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from toolpass.outcome.audit_read import event
from toolpass.server import approvals_html as views
from toolpass.server.approvals_config import ApprovalsConfig
from toolpass.server.approvals_view import (
    PAGE_SIZE,
    BadQuery,
    Filters,
    grouped,
    may_revoke,
    same_call,
    standing_of,
)
from toolpass.server.config import resolve_keys
from toolpass.store import Store, StoreUnavailable, open_store
from toolpass.toolkit.approval import ApprovalQueue
from toolpass.toolkit.standing import Standing

log = logging.getLogger("toolpass.server.approvals")
COOKIE = "toolpass_approvals"
LOGIN_COOKIE = "toolpass_approvals_login"
_SIGNING = "approvals-page:signing"
_SESSION = "approvals-page:session:"
_REASON_LIMIT = 500
_FAILED = "approvals-page:failed:"
_FLASH = "approvals-page:flash:"
_REVOKED = "approvals-page:revoked:"
_RUNS_READ = 100_000  # calls run that the page reads to count each standing approval's
_PENDING_SHOWN = 500  # pending requests the page reads at most
_ALL = Filters()
_FAILURES = 10  # failed sign-ins from one address before it must wait
_FAILURE_WINDOW = 300.0
#: Sent with every page: nothing but this server's own script and style, no framing.
PAGE_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}


@dataclass(frozen=True)
class Who:
    """A signed-in person: the name decisions carry, how they signed in, their session."""

    name: str
    via: str  # "key" or "proxy"
    session: str
    csrf: str


class ApprovalsPage:
    """The page's routes over ``ApprovalQueue(store=config.store)``."""

    def __init__(self, config: ApprovalsConfig, *, tls: bool) -> None:
        self.config = config
        # Secure cookies over TLS here, or behind a proxy that serves the page over https.
        self.tls = tls or (config.public_url or "").startswith("https://")
        self.keys = resolve_keys(config.api_keys)
        self.store: Store = open_store(config.store)
        self.queue = ApprovalQueue(
            store=self.store,
            ttl=config.ttl,
            self_approval=config.self_approval,
            keep_history=config.history_days * 86400.0,
            max_standing=config.max_standing_minutes * 60.0,
        )
        self._secret: bytes | None = None

    def routes(self) -> list[Route]:
        return [
            Route("/approvals", self.show, methods=["GET"]),
            Route("/approvals/login", self.login_form, methods=["GET"]),
            Route("/approvals/login", self.login, methods=["POST"]),
            Route("/approvals/logout", self.logout, methods=["POST"]),
            Route("/approvals/decide", self.decide, methods=["POST"]),
            Route("/approvals/revoke", self.revoke, methods=["POST"]),
            Route("/approvals/live", self.live, methods=["GET"]),
            Route("/approvals/static/{name}", self.static, methods=["GET"]),
        ]

    def close(self) -> None:
        self.store.close()

    # --- sessions ---------------------------------------------------------------------

    def secret(self) -> bytes:
        """The key cookies are signed with: made once, kept in the store for every worker."""
        if self._secret is None:
            made = secrets.token_hex(32)
            value: str = self.store.update(_SIGNING, lambda v: (v or made, v or made))
            self._secret = bytes.fromhex(value)
        return self._secret

    def _sign(self, value: str) -> str:
        mac = hmac.new(self.secret(), value.encode(), hashlib.sha256).hexdigest()
        return f"{value}.{mac}"

    def _unsign(self, signed: str | None) -> str | None:
        value, _, mac = (signed or "").rpartition(".")
        if not value or not mac:
            return None
        good = hmac.new(self.secret(), value.encode(), hashlib.sha256).hexdigest()
        return value if hmac.compare_digest(good, mac) else None

    def _new_session(self, name: str, via: str, key: str = "") -> Who:
        sid, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        seconds = self.config.session_minutes * 60
        record = {
            "name": name,
            "via": via,
            "key": key,
            "csrf": csrf,
            "expires": time.time() + seconds,
        }
        self.store.update(_SESSION + sid, lambda _: (record, None), ttl=seconds)
        return Who(name, via, sid, csrf)

    def _session(self, request: Request) -> Who | None:
        sid = self._unsign(request.cookies.get(COOKIE))
        if sid is None:
            return None
        record = self.store.get(_SESSION + sid)
        if not isinstance(record, dict) or record.get("expires", 0) < time.time():
            return None
        if record["via"] == "key" and record.get("key") not in self._key_marks():
            return None  # the key it signed in with is no longer an approver's
        return Who(record["name"], record["via"], sid, record["csrf"])

    def _key_mark(self, name: str, digest: bytes) -> str:
        """What a session keeps of the key it signed in with: it names the key (and its
        name) without being the key's digest."""
        named = b"key|" + name.encode() + b"|" + digest
        return hmac.new(self.secret(), named, hashlib.sha256).hexdigest()

    def _key_marks(self) -> set[str]:
        return {self._key_mark(name, digest) for name, digest in self.keys}

    def client(self, request: Request) -> str:
        """The request's address: its peer's, or, from a trusted proxy, the last address of
        ``X-Forwarded-For`` that is not a trusted proxy's; written one way whatever its
        spelling (no port, an IPv4-mapped address as IPv4, an IPv6 address as its /64), so
        the sign-in limit counts a client once."""
        peer = request.client.host if request.client else "unknown"
        if not self.config.trusts(peer):
            return client_address(peer)
        forwarded = ",".join(request.headers.getlist("x-forwarded-for"))
        for hop in reversed([h.strip() for h in forwarded.split(",") if h.strip()]):
            if not self.config.trusts(_host(hop)):
                return client_address(hop)
        return client_address(peer)

    def _proxy_user(self, request: Request) -> str | None:
        """The person a trusted proxy names: its user header (with the email beside it), each
        sent once; a header sent twice, or holding a comma (two joined), names nobody."""
        proxy = self.config.proxy
        if proxy is None:
            return None
        peer = request.client.host if request.client else None
        if not self.config.trusts(peer):
            if proxy.user_header in request.headers:
                log.warning("ignored %s from %s: not a trusted proxy", proxy.user_header, peer)
            return None
        name = _one_header(request, proxy.user_header)
        email = _one_header(request, proxy.email_header) if proxy.email_header else ""
        if not name or email is None:
            return None
        return f"{name} <{email}>" if email and email != name else name

    def who(self, request: Request) -> tuple[Who | None, bool]:
        """The signed-in person (None: nobody), and whether the session is new (a cookie to
        set). A proxy's header must name the session's person, else a new session starts."""
        session = self._session(request)
        proxied = self._proxy_user(request)
        if proxied is not None:
            if session is not None and session.via == "proxy" and session.name == proxied:
                return session, False
            return self._new_session(proxied, "proxy"), True
        if session is not None and session.via == "proxy":
            return None, False  # the proxy no longer vouches for this person
        return session, False

    def _cookie(self, response: Response, name: str, value: str, seconds: int) -> None:
        response.set_cookie(
            name,
            self._sign(value),
            max_age=seconds,
            path="/approvals",
            secure=self.tls,
            httponly=True,
            samesite="strict",
        )

    def _same_origin(self, request: Request) -> bool:
        expected = self.config.public_url or f"{request.url.scheme}://{request.url.netloc}"
        origin = request.headers.get("origin")
        if origin is None:
            referer = urlsplit(request.headers.get("referer", ""))
            if not referer.scheme or not referer.netloc:
                return False
            origin = f"{referer.scheme}://{referer.netloc}"
        return hmac.compare_digest(origin.lower().encode(), expected.lower().encode())

    # --- routes -----------------------------------------------------------------------

    async def show(self, request: Request) -> Response:
        return await self._guarded(request, self._show)

    def _show(self, request: Request, who: Who | None) -> Response:
        if who is None:
            return RedirectResponse("/approvals/login", 303)
        query = {name: request.query_params.getlist(name) for name in request.query_params}
        try:
            filters = Filters.parse(query)
        except BadQuery as e:
            return self._page(who, str(e), 400)
        return self._page(who, filters=filters, flash=self._take_flash(who))

    def _page(
        self,
        who: Who,
        problem: str = "",
        status: int = 200,
        *,
        filters: Filters = _ALL,
        flash: str = "",
    ) -> Response:
        f = filters
        rows = self.queue.history(
            PAGE_SIZE + 1,
            offset=(f.page - 1) * PAGE_SIZE,
            user=f.user or None,
            tool=f.tool or None,
            state=f.state or None,
        )
        ran = self.queue.history(_RUNS_READ, state="ran")
        standing = self.queue.standing()
        mine = self.config.self_approval
        html = views.page(
            standing=standing,
            revocable={g.id for g in standing if may_revoke(who.name, g, self_approval=mine)},
            revoked=self._revoked(),
            runs=Counter(e.standing for e in ran if e.standing_grant),
            max_standing=self.config.max_standing_minutes,
            user=who.name,
            via=who.via,
            csrf=who.csrf,
            pending=grouped(self.queue.history(_PENDING_SHOWN, state="pending")),
            history=rows[:PAGE_SIZE],
            more=len(rows) > PAGE_SIZE,
            filters=f,
            history_days=self.config.history_days,
            audit=self.audit_tail(),
            audit_configured=self.config.audit_file is not None,
            ttl=self.config.ttl,
            problem=problem,
            flash=flash,
        )
        return HTMLResponse(html, status, headers=PAGE_HEADERS)

    def _flash(self, who: Who, text: str) -> None:
        """Keep ``text`` for the session's next page (what its last decision did)."""
        self.store.update(_FLASH + who.session, lambda _: (text, None), ttl=300)

    def _take_flash(self, who: Who) -> str:
        text: str | None = self.store.update(_FLASH + who.session, lambda found: (None, found))
        return text or ""

    async def login_form(self, request: Request) -> Response:
        return await self._guarded(request, self._login_form)

    def _login_form(self, request: Request, who: Who | None, problem: str = "") -> Response:
        if who is not None:
            return RedirectResponse("/approvals", 303)
        if not self.keys:
            return self._message(
                "Sign in through your proxy",
                "This page signs people in through the organisation's sign-in proxy only.",
                401,
            )
        nonce = secrets.token_urlsafe(24)
        response = HTMLResponse(
            views.login(self._login_token(nonce), problem),
            401 if problem else 200,
            headers=PAGE_HEADERS,
        )
        self._cookie(response, LOGIN_COOKIE, nonce, 600)
        return response

    def _login_token(self, nonce: str) -> str:
        return hmac.new(self.secret(), f"login|{nonce}".encode(), hashlib.sha256).hexdigest()

    async def login(self, request: Request) -> Response:
        form = await _form(request)
        key, token = form.get("key", ""), form.get("token", "")

        def run(request: Request, who: Who | None) -> Response:
            if not self._same_origin(request):
                return self._forbidden("the sign-in did not come from this page")
            nonce = self._unsign(request.cookies.get(LOGIN_COOKIE))
            good = self._login_token(nonce) if nonce else ""
            if not nonce or not hmac.compare_digest(good.encode(), token.encode()):
                return self._login_form(request, None, "The sign-in form expired; try again.")
            client = self.client(request)
            if self._failures(client, 0) >= _FAILURES:
                return self._message(
                    "Too many tries",
                    "Too many failed sign-ins from this address; wait a few minutes.",
                    429,
                )
            found = self._key_name(key)
            if found is None:
                self._failures(client, 1)
                log.warning("approvals page: a failed sign-in from %s", client)
                return self._login_form(request, None, "That is not an approver's key.")
            name, digest = found
            new = self._new_session(name, "key", self._key_mark(name, digest))
            response = RedirectResponse("/approvals", 303)
            self._cookie(response, COOKIE, new.session, self.config.session_minutes * 60)
            response.delete_cookie(LOGIN_COOKIE, path="/approvals")
            log.info("approvals page: %s signed in with a key", name)
            return response

        return await self._guarded(request, run)

    def _failures(self, client: str, add: int) -> int:
        """Failed sign-ins from ``client`` in the last few minutes, after adding ``add``."""

        def count(n: int | None) -> tuple[int | None, int]:
            total = (n or 0) + add
            return (total or None), total

        result: int = self.store.update(_FAILED + client, count, ttl=_FAILURE_WINDOW)
        return result

    def _key_name(self, key: str) -> tuple[str, bytes] | None:
        """The name and digest of the approver key ``key``: every configured key is
        compared, each time."""
        try:
            presented = hashlib.sha256(key.strip().encode("latin-1")).digest()
        except UnicodeEncodeError:
            return None
        found = None
        for name, digest in self.keys:
            if hmac.compare_digest(presented, digest) and found is None:
                found = (name, digest)
        return found

    async def logout(self, request: Request) -> Response:
        form = await _form(request)

        def run(request: Request, who: Who | None) -> Response:
            refused = self._post_check(request, who, form.get("csrf", ""))
            if refused is not None:
                return refused
            assert who is not None
            self.store.update(_SESSION + who.session, lambda _: (None, None))
            response = RedirectResponse("/approvals/login", 303)
            response.delete_cookie(COOKIE, path="/approvals")
            return response

        return await self._guarded(request, run)

    async def decide(self, request: Request) -> Response:
        form = await _form(request)
        names = ("csrf", "id", "decision", "reason", "scope", "minutes")
        fields = {k: form.get(k, "") for k in names}

        def run(request: Request, who: Who | None) -> Response:
            refused = self._post_check(request, who, fields["csrf"])
            if refused is not None:
                return refused
            assert who is not None
            scope = fields["scope"] if fields["decision"] == "approve" else ""
            try:  # how far an approval reaches; a denial reaches its call only
                standing = standing_of(
                    scope or "once", fields["minutes"], self.config.max_standing_minutes
                )
            except BadQuery as e:
                return self._page(who, str(e), 400)
            reason = fields["reason"].strip()
            return self._decide(who, fields["id"], fields["decision"], reason, standing)

        return await self._guarded(request, run)

    def _decide(
        self,
        who: Who,
        request_id: str,
        decision: str,
        reason: str,
        standing: Standing | None = None,
    ) -> Response:
        if decision not in ("approve", "deny"):
            return self._page(who, "Choose approve or deny.", 400)
        if len(reason) > _REASON_LIMIT or not reason.isprintable():
            return self._page(
                who, f"A reason is one line of at most {_REASON_LIMIT} characters.", 400
            )
        if decision == "deny" and not reason:
            return self._page(who, "Say why you deny it: the reason is shown to the agent.", 400)
        pending = self.queue.history(_PENDING_SHOWN, state="pending")
        shown = next((e for e in pending if e.id == request_id), None)
        same = [e.id for e in pending if shown and e.id != request_id and same_call(e, shown)]
        try:
            self._answer(who, request_id, decision, reason, standing)
        except KeyError:
            return self._page(who, "That request is gone (used, expired or unknown).", 404)
        except PermissionError:
            why = "This call was made for you: another approver must approve it."
            return self._page(who, why, 403)
        except ValueError as e:
            return self._page(who, str(e), 409)
        log.info("approvals page: %s %sd request %s", who.name, decision, request_id)
        also = [other for other in same if self._answered(who, other, decision, reason)]
        done = "approved" if decision == "approve" else "denied"
        call = f" ({shown.tool} for {shown.user})" if shown else ""
        more = f" and {len(also)} more request(s) for the same call" if also else ""
        stands = ""
        if standing is not None and decision == "approve":
            granted = [g for g in self.queue.standing() if g.request_id == request_id]
            stands = f", and its later calls {_reach(standing)}" if granted else ""
            log.info("approvals page: %s granted a standing approval with %s", who.name, request_id)
        self._flash(who, f"You {done} request {request_id}{call}{more}{stands}.")
        return RedirectResponse("/approvals", 303)

    def _answer(
        self,
        who: Who,
        request_id: str,
        decision: str,
        reason: str,
        standing: Standing | None = None,
    ) -> None:
        if decision == "approve":
            self.queue.approve(request_id, by=who.name, standing=standing)
        else:
            self.queue.deny(request_id, by=who.name, reason=reason)

    def _answered(self, who: Who, request_id: str, decision: str, reason: str) -> bool:
        """Decide another request for the same call; whether it was decided here."""
        try:
            self._answer(who, request_id, decision, reason)
        except (KeyError, PermissionError, ValueError):
            return False
        log.info("approvals page: %s %sd request %s", who.name, decision, request_id)
        return True

    async def revoke(self, request: Request) -> Response:
        form = await _form(request)
        csrf, standing_id = form.get("csrf", ""), form.get("id", "")

        def run(request: Request, who: Who | None) -> Response:
            refused = self._post_check(request, who, csrf)
            if refused is not None:
                return refused
            assert who is not None
            return self._revoke(who, standing_id)

        return await self._guarded(request, run)

    def _revoke(self, who: Who, standing_id: str) -> Response:
        grant = next((g for g in self.queue.standing() if g.id == standing_id), None)
        if grant is None:
            return self._page(who, "That standing approval is gone (revoked or expired).", 404)
        if not may_revoke(who.name, grant, self_approval=self.config.self_approval):
            why = "Only its grantor or one of its tool's approvers may revoke it."
            return self._page(who, why, 403)
        try:
            self.queue.revoke(grant.id)
        except KeyError:
            return self._page(who, "That standing approval is gone (revoked or expired).", 404)
        ran = self.queue.history(_RUNS_READ, state="ran")
        record = {
            **grant.to_dict(),
            "revoked_by": who.name,
            "revoked_at": time.time(),
            "runs": sum(1 for e in ran if e.standing_grant and e.standing == grant.id),
        }
        keep = self.config.history_days * 86400.0
        self.store.update(_REVOKED + grant.id, lambda _: (record, None), ttl=keep)
        log.warning(
            "approvals page: %s revoked standing approval %s (%s)",
            who.name,
            grant.id,
            grant.describe(),
        )
        self._flash(
            who, f"You revoked standing approval {grant.id} ({grant.tool} for {grant.user})."
        )
        return RedirectResponse("/approvals", 303)

    def _revoked(self) -> list[dict[str, Any]]:
        """The standing approvals revoked on the page in the last ``history_days``."""
        found = (self.store.get(name) for name in self.store.keys(_REVOKED))
        kept = [r for r in found if isinstance(r, dict)]
        return sorted(kept, key=lambda r: r["revoked_at"], reverse=True)

    def _post_check(self, request: Request, who: Who | None, csrf: str) -> Response | None:
        """A refusal for a POST without a session, its CSRF token or a same-origin source."""
        if who is None:
            return self._message("Signed out", "Sign in again: your session has ended.", 401)
        if not self._same_origin(request):
            return self._forbidden("the form did not come from this page (Origin/Referer)")
        if not hmac.compare_digest(who.csrf.encode(), csrf.encode()):
            return self._forbidden("the form's token does not match your session; reload")
        return None

    async def live(self, request: Request) -> Response:
        def run(request: Request, who: Who | None) -> Response:
            if who is None:
                return JSONResponse({"error": "sign in first"}, 401)
            groups = grouped(self.queue.history(_PENDING_SHOWN, state="pending"))
            pending = [e.id for g in groups for e in g]
            return JSONResponse({"pending": pending, "audit": self.audit_tail()})

        return await self._guarded(request, run)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        kinds = {"approvals.js": "text/javascript", "approvals.css": "text/css"}
        if name not in kinds:
            return JSONResponse({"error": "no such path"}, 404)
        text = (
            resources.files("toolpass.server").joinpath("static").joinpath(name).read_text("utf-8")
        )
        return Response(text, media_type=kinds[name], headers=PAGE_HEADERS)

    # --- helpers ----------------------------------------------------------------------

    async def _guarded(
        self, request: Request, handler: Callable[[Request, Who | None], Response]
    ) -> Response:
        """Run ``handler(request, who)`` in a thread (the store blocks); a store that cannot
        be reached is a 503 page, never a page without its checks."""

        def run() -> Response:
            who, new = self.who(request)
            response = handler(request, who)
            if new and who is not None:
                self._cookie(response, COOKIE, who.session, self.config.session_minutes * 60)
            return response

        try:
            result: Awaitable[Response] = run_in_threadpool(run)
            return await result
        except StoreUnavailable as e:
            log.error("approvals page: the store cannot be reached: %s", e)
            return self._message("Unavailable", "The approvals store cannot be reached.", 503)

    def _forbidden(self, why: str) -> Response:
        return self._message("Refused", f"Refused: {why}.", 403)

    def _message(self, title: str, text: str, status: int) -> Response:
        return HTMLResponse(views.message(title, text), status, headers=PAGE_HEADERS)

    def audit_tail(self) -> list[dict[str, str]]:
        """The last ``audit_lines`` events of the audit file, latest first."""
        path = self.config.audit_file
        if path is None:
            return []
        try:
            lines = _last_lines(path, self.config.audit_lines)
        except OSError:
            return []
        records = [r for r in (event(line) for line in lines) if r is not None]
        return [views.audit_row(r) for r in reversed(records[-self.config.audit_lines :])]


def _reach(standing: Standing) -> str:
    """How far a standing approval given on the page reaches, for the note after it."""
    if standing.session:
        return "in this session are approved too"
    if standing.same_arguments:
        return "with the same arguments are approved too"
    return f"are approved too for {standing.minutes:g} minutes"


def _one_header(request: Request, header: str) -> str | None:
    """The one value of ``header`` ("" when absent); None when it is sent more than once or
    is not one printable line of at most 256 characters without a comma."""
    values = request.headers.getlist(header)
    if not values:
        return ""
    value = values[0].strip()
    if len(values) > 1 or len(value) > 256 or not value.isprintable() or "," in value:
        log.warning("approvals page: ignored an ambiguous %s header", header)
        return None
    return value


def _host(hop: str) -> str:
    """A forwarded address without its port or brackets."""
    text = hop.strip().strip('"')
    if text.startswith("["):
        return text[1:].partition("]")[0]
    return text.partition(":")[0] if text.count(":") == 1 else text


def client_address(hop: str) -> str:
    """One spelling of a client's address: no port or brackets, an IPv4-mapped address as
    IPv4, an IPv6 address as its /64 (what one client holds); else the text, cut short."""
    try:
        ip = ipaddress.ip_address(_host(hop))
    except ValueError:
        return hop[:64]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


async def _form(request: Request, limit: int = 16384) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body's fields (the first of each); anything
    else, or a larger body, is no form (every field empty, so every check fails)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return {}
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return {}
    try:
        pairs = parse_qsl(body.decode("utf-8"), max_num_fields=20)
    except (UnicodeDecodeError, ValueError):
        return {}
    form: dict[str, str] = {}
    for name, value in pairs:
        form.setdefault(name, value)
    return form


def _last_lines(path: str, count: int, limit: int = 4 << 20) -> list[str]:
    """The complete lines at the end of ``path`` (a torn last line left out), reading
    backwards in blocks and at most ``limit`` bytes."""
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        data = b""
        at = end
        while at > 0 and data.count(b"\n") <= count and end - at < limit:
            step = min(65536, at)
            at -= step
            f.seek(at)
            data = f.read(step) + data
    lines = data.split(b"\n")
    lines.pop()  # after the last newline: empty, or a write in progress
    if at > 0:
        lines = lines[1:]  # the first may be a part of a line
    return [line.decode("utf-8", "replace") for line in lines[-count * 2 :]]
