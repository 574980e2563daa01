"""What Atlassian Cloud products (Jira, Confluence) share: how the engine signs in and asks.

``auth`` is ``basic`` (email + API token, against the site's ``url``), ``scoped`` (email +
scoped API token) or ``oauth`` (a service account's OAuth 2.0 client credentials), both
against the API gateway, ``{gateway_url}/ex/{product}/{cloud_id}``; the cloud id is
discovered from ``<url>/_edge/tenant_info`` when not given. An OAuth token the product
rejects is replaced once.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Mapping
from typing import Any, ClassVar

from toolpass.integrations._kit import IssuedToken
from toolpass.integrations.base import ConfigKey, Integration, LookupFailed, issued_token
from toolpass.wire.errors import ConfigError
from toolpass.wire.http import check_url

CLOUD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,99}")
_NEEDS = {
    "basic": ("email", "api_token"),
    "scoped": ("email", "api_token"),
    "oauth": ("client_id", "client_secret"),
}


def auth_keys(product: str, email: str = "") -> tuple[ConfigKey, ...]:
    """The connection keys of signing in to ``product``; ``email`` adds to the email key's
    help (the least privilege that works, and where to create its token)."""
    return (
        ConfigKey(
            "auth",
            "How the engine signs in: basic (email + API token, against url), scoped "
            "(email + scoped API token, against the API gateway) or oauth (a service "
            "account's OAuth 2.0 client credentials, against the API gateway).",
            default="basic",
            choices=tuple(_NEEDS),
            needs=_NEEDS,
        ),
        ConfigKey("email", f"The engine account's email (auth basic and scoped).{email}"),
        ConfigKey(
            "api_token", "The engine account's API token (auth basic and scoped).", secret=True
        ),
        ConfigKey("client_id", "The service account's OAuth 2.0 client id (auth oauth)."),
        ConfigKey("client_secret", "The OAuth 2.0 client secret (auth oauth).", secret=True),
        ConfigKey(
            "cloud_id",
            "The site's cloud id for the API gateway (auth scoped and oauth); discovered "
            "from <url>/_edge/tenant_info when not given.",
        ),
        ConfigKey(
            "gateway_url",
            f"The Atlassian API gateway; requests go to <gateway_url>/ex/{product}/<cloud_id>.",
            default="https://api.atlassian.com",
        ),
        ConfigKey(
            "token_url",
            "The OAuth 2.0 token endpoint (auth oauth).",
            default="https://auth.atlassian.com/oauth/token",
        ),
    )


class AtlassianSite(Integration):
    """An Atlassian Cloud site: signing in, the gateway, and the JSON request helper."""

    #: Extra headers every request carries (Confluence: ``X-Atlassian-Token: no-check``).
    request_headers: ClassVar[Mapping[str, str]] = {}
    #: What ``_api`` answers must be (``dict``), or None for any JSON value.
    answers: ClassVar[type | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._cloud_id: str | None = self.options.get("cloud_id")
        self._tokens = IssuedToken(self, self._new_token)

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        for key in ("gateway_url", "token_url"):
            check_url(options.get(key), key)
        cloud_id = options.get("cloud_id")
        if cloud_id is not None and not CLOUD_ID.fullmatch(cloud_id):
            raise ConfigError("must be a cloud id (letters, digits and '-')", "cloud_id")

    @property
    def _auth(self) -> str:
        return str(self.options.get("auth", "basic"))

    def _base(self) -> str:
        if self._auth == "basic":
            return self.config.url
        gateway = str(self.options["gateway_url"]).rstrip("/")
        return f"{gateway}/ex/{self.name}/{self._site_cloud_id()}"

    def _site_cloud_id(self) -> str:
        with self._lock:
            if self._cloud_id is not None:
                return self._cloud_id
        what = "tell the site's cloud id (/_edge/tenant_info)"
        data = self.fetch_json("GET", "/_edge/tenant_info", what=what, kind=None)
        found = data.get("cloudId") if isinstance(data, dict) else None
        if not isinstance(found, str) or not CLOUD_ID.fullmatch(found):
            raise LookupFailed(f"{self.name}'s /_edge/tenant_info answer has no valid cloudId")
        with self._lock:
            self._cloud_id = found
        return found

    def _authorization(self) -> str:
        if self._auth == "oauth":
            return f"Bearer {self._access_token()}"
        pair = f"{self.options['email']}:{self.secret('api_token')}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")

    def _access_token(self) -> str:
        return self._tokens.get()

    def _new_token(self) -> tuple[str, float]:
        """A token for the client credentials (Atlassian takes them as JSON, not a form)."""
        body = {
            "grant_type": "client_credentials",
            "client_id": self.options["client_id"],
            "client_secret": self.secret("client_secret"),
        }
        url, what = str(self.options["token_url"]), "issue an OAuth access token"
        data = self.fetch_json("POST", url, what=what, json=body, kind=None)
        return issued_token(data, f"{self.name}'s OAuth token endpoint", self.clock)

    def _forget_token(self, used: str) -> None:
        self._tokens.drop(used.removeprefix("Bearer "))

    def _api(
        self,
        method: str,
        path: str,
        *,
        what: str,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        absent: tuple[int, ...] = (),
    ) -> Any:
        """The JSON answer of the site (or the gateway) to ``path`` (or to a URL the caller
        has checked is the site's), an OAuth token refreshed once when the product rejects
        it; None for an ``absent`` status."""
        for attempt in (1, 2):
            authorization = self._authorization()
            url = path if path.startswith(("http://", "https://")) else self._base() + path
            answer = self.answer(
                method,
                url,
                what=what,
                params=params,
                json=json,
                headers={"Authorization": authorization, **self.request_headers},
            )
            if answer.status == 401 and self._auth == "oauth" and attempt == 1:
                self._forget_token(authorization)  # revoked or expired early: once more
                continue
            if answer.status in absent:
                return None
            if answer.status != 200:
                raise self.failure(answer, what)
            return self.parse(answer, what, self.answers)
        raise AssertionError("unreachable")  # pragma: no cover

    def error_detail(self, data: Any) -> str | None:
        """Jira's ``errorMessages`` first, else the common ``message``."""
        messages = data.get("errorMessages") if isinstance(data, dict) else None
        if isinstance(messages, list) and messages and isinstance(messages[0], str):
            return messages[0]
        return super().error_detail(data)
