"""A call waiting for a person, sent to the approvals page by URL-mode elicitation.

When the check answers ``ApprovalPending`` and the client declared URL-mode elicitation, the
client is asked to open the approvals page at the request (``<approvals_url>?id=<id>``), the
way the SDK does it for the connection's protocol version: on 2026-07-28 an
``InputRequiredResult`` whose ``request_state`` is signed here (HMAC-SHA256 over the request
id and a digest of the tool and its arguments); on the 2025 versions the error -32042
(``UrlElicitationRequiredError``). The client's answer to the elicitation decides nothing
(an ``accept`` only says the user opened the page): the retry runs the whole check again and
the queue's record decides.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
from collections.abc import Callable, Mapping
from secrets import token_hex
from typing import Any, cast
from urllib.parse import urlencode, urlsplit

from mcp_types import (
    ElicitRequest,
    ElicitRequestURLParams,
    InputRequiredResult,
    RequestParamsMeta,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from toolpass.adapting import ApprovalPending, Guard, Pending, ToolRefused, expired_refusal

from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError

#: Where a state this guard signed starts (any other ``requestState`` is the server's own).
PREFIX = "toolpass-approval."
#: The key of the input request in an ``InputRequiredResult`` (and of the payload in the
#: elicitation's ``_meta``).
KEY = "toolpass"
_STORE_KEY = "toolpass-mcp:approval-state-key"
#: The watches sending ``notifications/elicitation/complete``, by request and connection,
#: held until they end (one for each, however often the client retries meanwhile).
_telling: dict[tuple[str, int], asyncio.Task[None]] = {}
log = logging.getLogger("toolpass")


def approvals_url(url: str | None) -> str | None:
    """``url`` checked: the approvals page, ``http(s)://host/path`` (None: no page)."""
    if url is None:
        return None
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"approvals_url is the approvals page, such as https://toolpass.example.com/approvals, "
            f"not {url!r}"
        )
    if parts.query or parts.fragment:
        raise ValueError(f"approvals_url has no query or fragment (the id is added): {url!r}")
    return url


def wants_url(capabilities: Any) -> bool:
    """Whether a client declared URL-mode elicitation (form mode alone is not enough)."""
    elicitation = getattr(capabilities, "elicitation", None)
    return getattr(elicitation, "url", None) is not None


def digest(tool: str, arguments: Mapping[str, Any] | None) -> str:
    """The digest of one call: its tool and its arguments, as JSON with sorted keys."""
    text = json.dumps([tool, arguments or {}], sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Approvals:
    """What pauses a call for a person: the page's URL, the signing key, and how long a
    retry after the client opened the page waits for the decision."""

    def __init__(self, guard: Guard, url: str | None, key: bytes | str | None, wait: float) -> None:
        if key is not None and (not isinstance(key, bytes | str) or len(key) < 32):
            raise ValueError("approval_key is a secret of at least 32 bytes (or None)")
        if isinstance(wait, bool) or not isinstance(wait, int | float) or wait < 0:
            raise ValueError(f"approval_wait is a number of seconds, 0 or more, not {wait!r}")
        self.guard, self.url, self.wait = guard, approvals_url(url), float(wait)
        self._key = key.encode() if isinstance(key, str) else key

    def key(self) -> bytes:
        """The signing key: the one given, else one kept in the queue's store (so every
        process sharing the store, and a restarted one, reads the others' states)."""
        if self._key is not None:
            return self._key
        queue = self.guard.queue
        assert queue is not None, "a state is signed only for a request of the queue"
        made = token_hex(32)
        kept: str = queue.store.update(_STORE_KEY, lambda found: (found or made, found or made))
        return kept.encode()

    def sign(self, request_id: str, call: str) -> str:
        mac = hmac.new(self.key(), f"{request_id}.{call}".encode(), hashlib.sha256).hexdigest()
        return f"{PREFIX}{request_id}.{call}.{mac}"

    def verify(self, state: str, tool: str, arguments: Mapping[str, Any] | None) -> str:
        """The request id ``state`` names when this guard signed it for this very call;
        ``ToolRefused`` when it was altered, forged, or signed for other arguments."""
        request_id, _, rest = state.removeprefix(PREFIX).partition(".")
        call = rest.partition(".")[0]
        signed = self.guard.queue is not None and _same(self.sign(request_id, call), state)
        if not signed or not _same(call, digest(tool, arguments)):
            why = "not signed by this server" if not signed else "signed for other arguments"
            raise invalid_state(why)
        return request_id

    async def resumed(self, state: str, tool: Any, arguments: Any) -> Any:
        """The arguments a retry carrying a state signed here runs with (a person's edit),
        once the state is verified for this very call; waits (``wait``) while the request
        still waits for the person. ``ToolRefused`` for a state altered, forged, made for
        other arguments or for a request used or running, and for an expired request."""
        try:
            return await self._resumed(state, tool, arguments)
        except ToolRefused:
            raise
        except Exception as exc:  # the store failed, or a bug: refused, never run
            log.exception("toolpass: the approval state of %s could not be checked", tool)
            raise ToolRefused(
                "check_error",
                "toolpass could not check this call's approval, so it was not made. Tell the user.",
                detail=f"{type(exc).__name__}: {exc}",
            ) from None

    async def _resumed(self, state: str, tool: Any, arguments: Any) -> Any:
        queue = self.guard.queue
        if not isinstance(tool, str) or not (arguments is None or isinstance(arguments, Mapping)):
            raise invalid_state("sent with a call that cannot be read")
        request_id = self.verify(state, tool, arguments)
        assert queue is not None, "verify needs the queue"
        status = queue.state(request_id)
        if status == "pending" and self.wait > 0:
            with contextlib.suppress(KeyError):
                await queue.wait_async(request_id, self.wait)
            status = queue.state(request_id)
        if status == "expired":
            raise expired_refusal(request_id)
        if status not in ("pending", "approved", "edited", "denied"):  # running, used, unknown
            raise invalid_state(f"names request {request_id}, which is {status}")
        written = queue.edited_arguments(request_id) if status == "edited" else None
        return edited(written) if written is not None else arguments

    def pauser(
        self, capabilities: Any, tool: Any, arguments: Any, version: str, session: Any
    ) -> Callable[[ToolRefused], Any] | None:
        """What answers a call waiting for a person (``pause``) for a client whose
        ``capabilities`` declare URL-mode elicitation; None (the refusal's text) for any
        other client, or without a page. A failure to make the answer gives the refusal."""
        if self.url is None or not wants_url(capabilities):
            return None

        def pause(refused: ToolRefused) -> Any:
            try:
                return self.pause(refused, str(tool), arguments, version, session)
            except MCPError:
                raise  # the 2025 versions' answer: -32042
            except Exception:
                log.exception("toolpass: could not send the client to the approvals page")
                return None

        return pause

    def pause(
        self, refused: ToolRefused, tool: str, arguments: Any, version: str, session: Any = None
    ) -> Any:
        """The answer for a call waiting for a person: an ``InputRequiredResult`` (2026-07-28)
        or a raised ``UrlElicitationRequiredError`` (the 2025 versions, whose ``session`` is
        told ``notifications/elicitation/complete`` once the person decided); None when it is
        not one of the queue's requests or there is no page (the refusal's text then)."""
        pending = self.guard.pending(refused) if isinstance(refused, ApprovalPending) else None
        if pending is None or self.url is None:
            return None
        link = f"{self.url}?{urlencode({'id': pending.request_id})}"
        meta = cast(RequestParamsMeta, {KEY: pending.payload()})
        if version in MODERN_PROTOCOL_VERSIONS:
            params = ElicitRequestURLParams(message=_message(pending), url=link, _meta=meta)
            return InputRequiredResult(
                input_requests={KEY: ElicitRequest(params=params)},
                request_state=self.sign(pending.request_id, digest(tool, arguments)),
            )
        elicitation = ElicitRequestURLParams(
            message=_message(pending), url=link, elicitation_id=pending.request_id, _meta=meta
        )
        if session is not None:
            self._tell_when_decided(pending.request_id, session)
        raise UrlElicitationRequiredError([elicitation], refused.message)

    def _tell_when_decided(self, request_id: str, session: Any) -> None:
        """Once the person decides (or the request expires), send the client
        ``notifications/elicitation/complete`` so it may retry; nothing when the connection
        is gone by then, or off asyncio."""
        queue = self.guard.queue
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio)
            return
        watch = (request_id, id(getattr(session, "_connection", session)))
        if queue is None or watch in _telling:
            return

        async def tell() -> None:
            try:
                await queue.wait_async(request_id, queue.ttl)
                await session.send_elicit_complete(request_id)
            except Exception as exc:  # the session ended: the client retries on its own
                log.debug("toolpass: elicitation %s not completed: %s", request_id, exc)

        _telling[watch] = loop.create_task(tell())
        _telling[watch].add_done_callback(lambda _: _telling.pop(watch, None))


def edited(arguments: Mapping[str, str]) -> dict[str, Any]:
    """A person's edited arguments (each as Python writes it) as values again; ``ToolRefused``
    when one is not a plain value (JSON's: text, numbers, true/false/null, lists, objects)."""
    try:
        return {name: ast.literal_eval(text) for name, text in arguments.items()}
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ToolRefused(
            "approval_edited",
            "A person approved this call only with changed arguments, which could not be "
            "read, so it was not made. Tell the user.",
            detail=f"edited arguments not literals: {exc}",
        ) from None


def _same(a: str, b: str) -> bool:
    """``a == b`` in constant time, for any text (``compare_digest`` takes ASCII only)."""
    return hmac.compare_digest(
        a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass")
    )


def invalid_state(why: str) -> ToolRefused:
    return ToolRefused(
        "check_error",
        "The approval state sent with this call is not valid for it (altered, already used, "
        "or made for another call), so the call was not made. Call the tool again to ask for "
        "a person's approval.",
        detail=f"request state {why}",
    )


def _message(pending: Pending) -> str:
    why = "; ".join(pending.reasons)
    return (
        f"{pending.tool} needs a person's approval before it runs ({why}). Open the approvals "
        f"page to see the whole call (request {pending.request_id}) and decide, or ask an "
        "approver to."
    )
