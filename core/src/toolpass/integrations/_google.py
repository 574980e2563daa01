"""What Google systems (Google Cloud, Google Workspace) share: how the engine signs in.

``auth`` is ``service_account`` (a service account's JSON key, by reference: the engine
signs a JWT with its private key, RS256 through core's ``crypto`` extra, and trades it at the
OAuth token endpoint, ``token_uri``, for an access token of the connection's ``scopes``;
``subject`` makes it domain-wide delegation, the token then acting as that user),
``metadata`` (the attached service account's token from the metadata server: on GCE, GKE
with workload identity, Cloud Run) or ``token`` (an access token, by reference). Issued
tokens are kept until a minute before they expire and dropped when Google rejects them.

Route tables are generated from google-api-python-client's discovery documents with paths
``/<host><path>``: a request to ``<service>.googleapis.com`` takes the route of its host; one
to the connection's own host (a private endpoint, a fake) the one route its path fits among
every host's, or none when hosts differ on it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit

from toolpass.integrations._kit import token_from
from toolpass.integrations.base import ConfigKey, Integration, LookupFailed, issued_token
from toolpass.integrations.routes import Match, Request, Route, RouteTable
from toolpass.wire.errors import ConfigError
from toolpass.wire.http import check_url, is_loopback
from toolpass.wire.jwt import rs256

TOKEN_URI = "https://oauth2.googleapis.com/token"  # noqa: S105 - a URL
METADATA_URL = (
    "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token"
)
_METADATA_HOSTS = ("metadata.google.internal", "169.254.169.254")
_AUTHS = ("service_account", "metadata", "token")
_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def auth_keys(scopes: tuple[str, ...], subject: str = "") -> tuple[ConfigKey, ...]:
    """The connection keys of signing in to Google with ``scopes`` by default; ``subject``
    documents the ``subject`` key (domain-wide delegation)."""
    return (
        ConfigKey(
            "auth",
            "How the engine signs in: service_account (a JSON key in credentials: a signed "
            "JWT traded at token_uri), metadata (the metadata server's token of the attached "
            "service account: GCE, GKE workload identity, Cloud Run) or token (access_token).",
            default="service_account",
            choices=_AUTHS,
            needs={"service_account": ("credentials",), "token": ("access_token",)},
        ),
        ConfigKey(
            "credentials",
            "The service account's JSON key file, by reference (file:/path/key.json or "
            "env:NAME) (auth service_account).",
            secret=True,
        ),
        ConfigKey("access_token", "An OAuth 2.0 access token (auth token).", secret=True),
        ConfigKey(
            "token_uri",
            "The OAuth 2.0 token endpoint the JWT is traded at (auth service_account); "
            "default: the key file's token_uri, else " + TOKEN_URI + ".",
        ),
        ConfigKey(
            "metadata_url",
            "The metadata server's token URL (auth metadata).",
            default=METADATA_URL,
        ),
        ConfigKey(
            "scopes",
            "The OAuth scopes the engine's token is asked for (auth service_account).",
            default=list(scopes),
        ),
        ConfigKey("subject", subject or "A user to act as (domain-wide delegation).", type="str"),
    )


class GoogleIntegration(Integration):
    """A Google API: signing in (service account JWT, metadata server, token) and errors."""

    _path_table: ClassVar[RouteTable | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._token_lock = threading.Lock()
        self._delegated: dict[tuple[str, tuple[str, ...]], tuple[str, float]] = {}

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        if options.get("token_uri") is not None:
            check_url(options.get("token_uri"), "token_uri")
        metadata = urlsplit(str(options.get("metadata_url", METADATA_URL)))
        host = metadata.hostname or ""
        if not (
            metadata.scheme == "https"
            or (metadata.scheme == "http" and (host in _METADATA_HOSTS or is_loopback(host)))
        ):
            raise ConfigError("must be the metadata server's URL", "metadata_url")
        scopes = options.get("scopes", [])
        if not isinstance(scopes, list) or not all(isinstance(s, str) and s for s in scopes):
            raise ConfigError("must be a list of OAuth scopes", "scopes")

    # --- requests the hook sees ---------------------------------------------------------
    def serves(self, scheme: str, host: str, port: int) -> bool:
        """Every Google API host (``*.googleapis.com``), over HTTPS."""
        return scheme == "https" and host.lower().rstrip(".").endswith(".googleapis.com")

    def match_request(self, request: Request) -> Match | None:
        host = (request.host or request.headers.get("host", "")).lower().partition(":")[0]
        host = host.rstrip(".")
        if host.endswith(".googleapis.com"):
            qualified = Request(
                request.method,
                f"/{host}/{request.path.lstrip('/')}",
                request.query_string,
                request.headers,
                request.body,
                host,
            )
            return self.route_table().match(qualified)
        found = self._by_path().match(request)
        return found if found is not None and found.action else None

    @classmethod
    def _by_path(cls) -> RouteTable:
        """The table without hosts: a path two hosts route differently goes nowhere (its
        action is empty)."""
        table = cls.__dict__.get("_path_table")
        if table is None:
            rows: dict[tuple[str, str], Route] = {}
            for r in cls.route_table().routes:
                path = "/" + r.path.lstrip("/").partition("/")[2]
                mine = Route(
                    r.method,
                    path,
                    r.action,
                    r.resource,
                    r.effect,
                    r.untrusted,
                    r.sends_out,
                    r.agent,
                )
                known = rows.get((r.method, path))
                if known is not None and (known.action, known.resource) != (r.action, r.resource):
                    mine = Route(r.method, path, "", "", "write")
                rows[(r.method, path)] = mine
            table = RouteTable(tuple(rows.values()))
            cls._path_table = table
        return table

    @property
    def _auth(self) -> str:
        return str(self.options.get("auth", "service_account"))

    def _key(self) -> dict[str, Any]:
        """The service account's JSON key."""
        try:
            key = json.loads(self.secret("credentials"))
        except ValueError:
            raise ConfigError("credentials is not a JSON key file", "credentials") from None
        if not (
            isinstance(key, dict)
            and isinstance(key.get("client_email"), str)
            and isinstance(key.get("private_key"), str)
        ):
            raise ConfigError("credentials has no client_email or private_key", "credentials")
        return key

    def access_token(self, subject: str | None = None, scopes: tuple[str, ...] = ()) -> str:
        """The engine's access token: its own, or one acting as ``subject`` (domain-wide
        delegation, service_account only) with ``scopes``; issued or kept until near expiry."""
        if subject and self._auth != "service_account":
            raise LookupFailed(
                f"only a service account with domain-wide delegation can act as {subject} "
                f"(auth {self._auth})"
            )
        if self._auth == "token":
            return self.secret("access_token")
        subject = subject or self.options.get("subject") or None
        scopes = scopes or tuple(self.options.get("scopes") or ())
        with self._token_lock:
            own = subject == self.options.get("subject") and scopes == tuple(
                self.options.get("scopes") or ()
            )
            held = self.issued if own else self._delegated.get((subject or "", scopes))
            if held is not None and self.clock() < held[1]:
                return held[0]
            if self._auth == "metadata":
                url = str(self.options.get("metadata_url", METADATA_URL))
                data = self.fetch_json(
                    "GET",
                    url,
                    what="get the engine's token from the metadata server",
                    headers={"Metadata-Flavor": "Google"},
                )
                found = issued_token(data, "the metadata server", self.clock)
            else:
                found = self._jwt_token(subject, scopes)
            if own:
                self.issued = found
            else:
                if len(self._delegated) > 1000:
                    self._delegated.clear()
                self._delegated[(subject or "", scopes)] = found
            return found[0]

    def _jwt_token(self, subject: str | None, scopes: tuple[str, ...]) -> tuple[str, float]:
        key = self._key()
        uri = str(self.options.get("token_uri") or key.get("token_uri") or TOKEN_URI)
        check_url(uri, "token_uri")
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": key["client_email"],
            "scope": " ".join(scopes),
            "aud": TOKEN_URI,  # always, wherever the token is asked (Google's documentation)
            "iat": now,
            "exp": now + 3600,
        }
        if subject:
            claims["sub"] = subject
        assertion = rs256(claims, key["private_key"])
        form = {"grant_type": _JWT_BEARER, "assertion": assertion}
        what = "issue the engine's access token" + (f" as {subject}" if subject else "")
        return token_from(self, uri, form, who="Google's token endpoint", what=what)

    def forget_token(self, token: str) -> None:
        """Drop ``token`` (Google rejected it: revoked, or expired early)."""
        with self._token_lock:
            if self.issued is not None and self.issued[0] == token:
                self.issued = None
            for k, v in list(self._delegated.items()):
                if v[0] == token:
                    del self._delegated[k]

    def google(
        self,
        method: str,
        url: str,
        *,
        what: str,
        params: Mapping[str, str | None] | None = None,
        json: Any = None,
        absent: tuple[int, ...] = (),
        subject: str | None = None,
        scopes: tuple[str, ...] = (),
    ) -> Any:
        """The JSON object Google answers (None for an ``absent`` status); an issued token
        Google rejects (401) is replaced once."""
        for attempt in (1, 2):
            token = self.access_token(subject, scopes)
            answer = self.answer(
                method,
                url,
                what=what,
                params=params,
                json=json,
                headers={
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/json",
                    **self.google_headers(),
                },
            )
            if answer.status == 401 and self._auth != "token" and attempt == 1:
                self.forget_token(token)
                continue
            if answer.status in absent:
                return None
            if answer.status != 200:
                raise self.failure(answer, what)
            return self.parse(answer, what)
        raise AssertionError("unreachable")  # pragma: no cover

    def google_headers(self) -> Mapping[str, str]:
        """Headers every API request carries beside the token. Default: none."""
        return {}

    def error_detail(self, data: Any) -> str | None:
        """Google's ``{"error": {"code", "message", "status"}}``; OAuth's
        ``error_description``; redacted before it is cut short."""
        found: str | None = None
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                status = error.get("status")
                found = f"{status}: {error['message']}" if isinstance(status, str) else None
                found = found or str(error["message"])
            elif isinstance(data.get("error_description"), str):
                found = str(data["error_description"])
        found = found or super().error_detail(data)
        return self.redact(found) if found else None

    def secret_values(self) -> Iterator[str]:
        """The connection's secrets, and the JSON key's private key and its id."""
        yield from super().secret_values()
        for token, _ in list(self._delegated.values()):
            yield token
        if self.options.get("credentials") is not None:
            try:
                key = json.loads(self.secret("credentials"))
            except Exception:
                return
            if isinstance(key, dict):
                for name in ("private_key", "private_key_id"):
                    if isinstance(key.get(name), str):
                        yield key[name]
