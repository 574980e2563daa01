"""``RemoteToolpass``: asks a toolpass server (``toolpass serve``) instead of the systems.

The protocol: ``POST {url}/check`` with ``Authorization: Bearer <api key>`` and the JSON
``{"user", "connection", "action", "resource", "fresh"}``; the server answers 200 with
``{"decision": "allow"|"deny"|"unknown", "reason", "cached", ...}``, or an error status with
``{"error": "..."}``. Anything but a well-formed 200 is an ``unknown`` decision; redirects
are never followed.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from toolpass.engine.checker import Checker
from toolpass.wire.decision import Decision, Where
from toolpass.wire.errors import ConfigError, LookupFailed
from toolpass.wire.http import HTTPClient, NetOptions, Response, check_url
from toolpass.wire.secrets import Secret, literal


class RemoteToolpass(Checker):
    """A client of a toolpass server, with the methods of :class:`Toolpass`.

    ``url`` must be https://, or http:// on localhost, 127.0.0.1 or ::1.
    """

    def __init__(
        self,
        url: str | None = None,
        api_key: str | Secret | None = None,
        *,
        timeout: float = 10.0,
        ca_file: str | None = None,
    ) -> None:
        url = url or os.environ.get("TOOLPASS_URL")
        if not url:
            raise ConfigError("no toolpass server URL: pass url= or set TOOLPASS_URL")
        try:
            self.url = check_url(url, "url")
        except ConfigError as e:
            raise ConfigError(f"toolpass server URL {url!r}: {e}") from None
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
        try:
            answer = self._http.request(
                "POST",
                f"{self.url}/check",
                headers={"Authorization": f"Bearer {self._key.get()}"},
                json={**where, "fresh": fresh},
                timeout=self._timeout,
                options=self._net,
            )
            self._key_rejected = answer.status in (401, 403)
            decision, configured = _decision(answer, where)
        except (LookupFailed, ConfigError) as e:
            return Decision.unknown(f"toolpass server {self.url}: {e}", **where)
        if configured is False:
            self._unconfigured.add((connection, action))
        else:
            self._unconfigured.discard((connection, action))
        return decision

    def configured(self, connection: str, action: str) -> bool:
        """False when the server rejected this client's key, or said it has no such
        connection or action, on the last check that asked."""
        return not self._key_rejected and (connection, action) not in self._unconfigured

    def close(self) -> None:
        """Close kept-alive connections."""
        self._http.close()

    def __repr__(self) -> str:
        return f"RemoteToolpass({self.url!r})"


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
