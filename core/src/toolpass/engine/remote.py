"""``RemoteToolpass``: asks a toolpass server (``toolpass serve``) instead of the systems.

The protocol: ``POST {url}/check`` with ``Authorization: Bearer <api key>`` and the JSON
``{"user", "connection", "action", "resource", "fresh"}``; the server answers 200 with
``{"decision": "allow"|"deny"|"unknown", "reason", "cached", ...}``, or an error status with
``{"error": "..."}``. Anything but a well-formed 200 is an ``unknown`` decision; redirects
are never followed.

Several servers (the processes of one deployment, sharing one store) fail over: a server that
gives no answer (it cannot be reached, the connection drops, it times out, or it answers 502,
503 or 504) is skipped for the next, and the client keeps asking the one that answered. An
answer (allow, deny, unknown, a rejected key) is final. A check changes nothing, so asking it
again elsewhere never runs anything twice.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Sequence
from typing import Any

from toolpass.engine.checker import Checker
from toolpass.wire.decision import Decision, Where
from toolpass.wire.errors import ConfigError, LookupFailed
from toolpass.wire.http import HTTPClient, HTTPError, NetOptions, Response, check_url
from toolpass.wire.secrets import Secret, literal


class RemoteToolpass(Checker):
    """A client of a toolpass server, with the methods of :class:`Toolpass`.

    ``url`` must be https://, or http:// on localhost, 127.0.0.1 or ::1; a list of URLs (or
    ``TOOLPASS_URL`` with commas) names several servers of one deployment, which fail over.
    """

    def __init__(
        self,
        url: str | Sequence[str] | None = None,
        api_key: str | Secret | None = None,
        *,
        timeout: float = 10.0,
        ca_file: str | None = None,
    ) -> None:
        self.urls = _urls(url or os.environ.get("TOOLPASS_URL", ""))
        self._at = 0  # the server asked first: the last one that answered
        self._moving = threading.Lock()
        if api_key is None:
            api_key = os.environ.get("TOOLPASS_API_KEY")
            if not api_key:
                raise ConfigError("no toolpass API key: pass api_key= or set TOOLPASS_API_KEY")
        self._key = api_key if isinstance(api_key, Secret) else literal(api_key)
        self._timeout = timeout
        self._net = NetOptions(ca_file=ca_file)
        self._http = HTTPClient()
        # What the server said it is not set up for, and whether it rejected our key: both
        # are an operator's to fix (not_configured), not a failed look-up.
        self._unconfigured: set[tuple[str, str]] = set()
        self._key_rejected = False

    def check(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        """Ask the server; an unreachable or misbehaving server is ``unknown``."""
        where: Where = {"user": user, "connection": connection, "action": action}
        where["resource"] = resource
        url = self.url
        try:
            url, answer = self._ask({**where, "fresh": fresh})
            self._key_rejected = answer.status in (401, 403)
            decision, configured = _decision(answer, where)
        except (LookupFailed, ConfigError) as e:
            return Decision.unknown(f"toolpass server {url}: {e}", **where)
        if configured is False:
            self._unconfigured.add((connection, action))
        else:
            self._unconfigured.discard((connection, action))
        return decision

    @property
    def url(self) -> str:
        """The server asked first: the last one that answered."""
        return self.urls[self._at]

    def _ask(self, question: dict[str, Any]) -> tuple[str, Response]:
        """The first answer, from the server that answered last, else the next that does;
        :class:`HTTPError` naming every server when none answers."""
        start, failed = self._at, list[str]()
        error: HTTPError | None = None
        for turn in range(len(self.urls)):
            at = (start + turn) % len(self.urls)
            url = self.urls[at]
            try:
                answer = self._http.request(
                    "POST",
                    f"{url}/check",
                    headers={"Authorization": f"Bearer {self._key.get()}"},
                    json=question,
                    timeout=self._timeout,
                    options=self._net,
                )
            except HTTPError as e:
                failed.append(f"{url}: {e}")
                error = e
                continue
            if answer.status in _NO_ANSWER and turn + 1 < len(self.urls):
                failed.append(f"{url}: HTTP {answer.status}")
                continue
            with self._moving:
                self._at = at
            return url, answer
        if len(self.urls) == 1 and error is not None:
            raise error
        raise HTTPError("no server answered (" + "; ".join(failed) + ")")

    def configured(self, connection: str, action: str) -> bool:
        """False when the server rejected this client's key, or said it has no such
        connection or action, on the last check that asked."""
        return not self._key_rejected and (connection, action) not in self._unconfigured

    def close(self) -> None:
        """Close kept-alive connections."""
        self._http.close()

    def __repr__(self) -> str:
        return (
            f"RemoteToolpass({self.url!r})"
            if len(self.urls) == 1
            else f"RemoteToolpass({list(self.urls)!r})"
        )


#: Statuses of a server that is going away or overloaded: the next server is asked.
_NO_ANSWER = frozenset({502, 503, 504})


def _urls(given: str | Sequence[str]) -> tuple[str, ...]:
    """Each server's URL, checked; ``ConfigError`` when there is none or one is not allowed."""
    listed = given.split(",") if isinstance(given, str) else list(given)
    urls = tuple(u.strip() for u in listed if isinstance(u, str) and u.strip())
    if not urls or len(urls) != len(listed):
        raise ConfigError(
            "no toolpass server URL: pass url= (one URL or a list) or set TOOLPASS_URL"
            if not urls
            else f"toolpass server URLs {given!r}: each must be a non-empty URL"
        )
    return tuple(_checked(u) for u in urls)


def _checked(url: str) -> str:
    try:
        return check_url(url, "url")
    except ConfigError as e:
        raise ConfigError(f"toolpass server URL {url!r}: {e}") from None


def _decision(answer: Response, where: Where) -> tuple[Decision, bool | None]:
    if answer.status in (401, 403):
        raise LookupFailed(f"the server rejected the API key (HTTP {answer.status})")
    if 300 <= answer.status < 400:
        raise LookupFailed(f"redirected (HTTP {answer.status}); redirects are not followed")
    if answer.status != 200:
        raise LookupFailed(f"HTTP {answer.status}{_error(answer)}")
    data = answer.json()
    verdict = data.get("decision") if isinstance(data, dict) else None
    if verdict not in ("allow", "deny", "unknown"):
        raise LookupFailed("the answer has no valid decision")
    reason = data.get("reason")
    cause = data.get("cause")
    decision = Decision(
        verdict,
        reason if isinstance(reason, str) else "",
        cause=cause if cause in ("identity", "resource") else "",
        **where,
    )
    configured = data.get("configured")
    return (
        dataclasses.replace(decision, cached=data.get("cached") is True),
        configured if isinstance(configured, bool) else None,
    )


def _error(answer: Response) -> str:
    try:
        data: Any = answer.json()
    except LookupFailed:
        return ""
    message = data.get("error") if isinstance(data, dict) else None
    return f" ({message})" if isinstance(message, str) else ""
