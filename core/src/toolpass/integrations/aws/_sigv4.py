"""AWS Signature Version 4: how the aws integration signs its own requests to IAM, STS and
the other APIs it asks, with the engine's credentials."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

__all__ = ["Credentials", "form", "sign_v4"]

_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True)
class Credentials:
    """AWS credentials; ``expires`` is a Unix time (None: they do not expire)."""

    access_key_id: str
    secret_access_key: str = ""
    session_token: str | None = None
    expires: float | None = None
    source: str = ""

    def __repr__(self) -> str:
        return f"Credentials({self.access_key_id[:4]}***, {self.source or 'static'})"

    def fresh(self, margin: float, now: float | None = None) -> bool:
        """True while more than ``margin`` seconds remain before they expire."""
        if self.expires is None:
            return True
        return self.expires - margin > (time.time() if now is None else now)


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def _canonical_query(query: str) -> str:
    if not query:
        return ""
    pairs = [pair.partition("=") for pair in query.split("&")]
    return "&".join(f"{k}={v}" for k, v in sorted((k, v) for k, _, v in pairs))


def _host(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    default = 443 if parts.scheme == "https" else 80
    return host if parts.port in (None, default) else f"{host}:{parts.port}"


def sign_v4(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    credentials: Credentials,
    region: str,
    service: str,
    now: datetime.datetime | None = None,
) -> dict[str, str]:
    """``headers`` plus ``Host``, ``X-Amz-Date``, ``X-Amz-Security-Token`` and the SigV4
    ``Authorization`` for one request; every header given is signed."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    day = stamp[:8]
    signed: dict[str, str] = {"Host": _host(url), **headers, "X-Amz-Date": stamp}
    if credentials.session_token:
        signed["X-Amz-Security-Token"] = credentials.session_token
    parts = urlsplit(url)
    canonical_headers: dict[str, str] = {}
    for name, value in signed.items():
        lower = name.lower()
        value = " ".join(value.split())
        canonical_headers[lower] = (
            f"{canonical_headers[lower]},{value}" if lower in canonical_headers else value
        )
    names = sorted(canonical_headers)
    signed_names = ";".join(names)
    canonical = "\n".join(
        [
            method.upper(),
            quote(parts.path or "/", safe="/~"),
            _canonical_query(parts.query),
            "".join(f"{n}:{canonical_headers[n]}\n" for n in names),
            signed_names,
            hashlib.sha256(body).hexdigest() if body else _EMPTY_SHA256,
        ]
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()]
    )
    key = _hmac(("AWS4" + credentials.secret_access_key).encode("utf-8"), day)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    signed["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={credentials.access_key_id}/{scope}, "
        f"SignedHeaders={signed_names}, Signature={signature}"
    )
    return signed


def form(params: Mapping[str, str]) -> bytes:
    """A Query API body: ``k=v`` pairs, percent-encoded as AWS expects."""
    return "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in params.items()
    ).encode()
