"""The engine's own AWS credential: static keys or the ambient chain (environment, web
identity, container credentials, IMDSv2), and optionally a read-only role assumed with it
(STS ``AssumeRole`` with an ExternalId); temporary credentials are kept until shortly before
they expire, one refresh at a time, and dropped when AWS no longer accepts them."""

from __future__ import annotations

import os
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from toolpass.integrations.aws._answers import expiry, text
from toolpass.integrations.aws._sigv4 import Credentials
from toolpass.wire.errors import LookupFailed
from toolpass.wire.http import Response, is_loopback

__all__ = ["AMBIENT", "STS_VERSION", "CredentialChain"]

STS_VERSION = "2011-06-15"
AMBIENT = ("env", "web_identity", "container", "imds")
_CONTAINER_HOSTS = ("169.254.170.2", "169.254.170.23", "[fd00:ec2::23]", "fd00:ec2::23")
_IMDS = "http://169.254.169.254"


class Sts(Protocol):
    """An STS Query call (``AssumeRole*``): the ``<ActionResponse>`` element."""

    def __call__(
        self,
        params: Mapping[str, str],
        subject: str,
        *,
        credentials: Credentials | None = None,
        signed: bool = True,
    ) -> ET.Element: ...


#: A request to a local credential endpoint (method, URL, headers).
Plain = Callable[[str, str, Mapping[str, str]], Response]


class CredentialChain:
    """The engine's credential for IAM, read from the connection's options."""

    def __init__(
        self, options: Mapping[str, Any], secret: Callable[[str], str], sts: Sts, plain: Plain
    ) -> None:
        self._options = options
        self._secret = secret
        self._sts = sts
        self._plain = plain
        self._lock = threading.Lock()
        self._refresh = threading.Lock()
        self._base: Credentials | None = None
        self._assumed: Credentials | None = None

    def held(self) -> Iterator[Credentials]:
        """The credentials in use now (the base one, the assumed role's)."""
        for creds in (self._base, self._assumed):
            if creds is not None:
                yield creds

    def forget(self, code: str, creds: Credentials | None) -> None:
        """Drop cached temporary credentials AWS no longer accepts."""
        if code in ("ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId"):
            with self._lock:
                if creds is not None and creds in (self._assumed, self._base):
                    self._assumed = None
                    if self._base is not None and self._base.expires is not None:
                        self._base = None

    # --- the chain --------------------------------------------------------------------
    def current(self) -> Credentials:
        """The engine's credential for IAM: the base one, or the assumed role's."""
        margin = float(self._options["credential_refresh_seconds"])
        role = self._options.get("role_arn")
        if not role:
            return self._base_credentials(margin)
        with self._lock:
            assumed = self._assumed
        if assumed is not None and assumed.fresh(margin):
            return assumed
        with self._refresh:  # one refresh at a time; the others use its result
            with self._lock:
                assumed = self._assumed
            if assumed is not None and assumed.fresh(margin):
                return assumed
            assumed = self._assume_role(self._base_credentials(margin), role)
            with self._lock:
                self._assumed = assumed
            return assumed

    def _base_credentials(self, margin: float) -> Credentials:
        if self._options["credentials"] == "static":
            token = self._options.get("session_token")
            return Credentials(
                self._secret("access_key_id"),
                self._secret("secret_access_key"),
                self._secret("session_token") if token is not None else None,
                source="static",
            )
        with self._lock:
            base = self._base
        if base is not None and base.fresh(margin):
            return base
        base = self._ambient()
        if base.expires is not None:  # temporary: keep until shortly before expiry
            with self._lock:
                self._base = base
        return base

    def _ambient(self) -> Credentials:
        tried = []
        for source in self._options["ambient_sources"]:
            found: Credentials | None
            if source == "env":
                found = _from_env()
            elif source == "web_identity":
                found = self._web_identity()
            elif source == "container":
                found = self._container()
            else:
                found = self._imds()
            if found is not None:
                return found
            tried.append(source)
        raise LookupFailed(f"no AWS credentials found (tried {', '.join(tried)})")

    def _assume_role(self, base: Credentials, role: str) -> Credentials:
        params = {
            "Action": "AssumeRole",
            "Version": STS_VERSION,
            "RoleArn": role,
            "RoleSessionName": self._options["role_session_name"],
            "DurationSeconds": str(self._options["role_duration_seconds"]),
        }
        if self._options.get("external_id"):
            params["ExternalId"] = self._options["external_id"]
        root = self._sts(params, role, credentials=base)
        return _sts_credentials(root, "AssumeRole", f"assumed {role}")

    def _web_identity(self) -> Credentials | None:
        token_file = os.environ.get("AWS_WEB_IDENTITY_TOKEN_FILE")
        role = os.environ.get("AWS_ROLE_ARN")
        if not token_file or not role:
            return None
        try:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            raise LookupFailed(f"cannot read AWS_WEB_IDENTITY_TOKEN_FILE ({e.strerror})")
        params = {
            "Action": "AssumeRoleWithWebIdentity",
            "Version": STS_VERSION,
            "RoleArn": role,
            "RoleSessionName": os.environ.get("AWS_ROLE_SESSION_NAME")
            or self._options["role_session_name"],
            "WebIdentityToken": token,
        }
        root = self._sts(params, role, signed=False)
        return _sts_credentials(root, "AssumeRoleWithWebIdentity", f"web identity {role}")

    def _container(self) -> Credentials | None:
        full = os.environ.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        relative = os.environ.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        if relative:
            url = f"http://169.254.170.2{relative}"
        elif full:
            parts = urlsplit(full)
            host = parts.hostname or ""
            if parts.scheme != "https" and not (
                parts.scheme == "http" and (is_loopback(host) or host in _CONTAINER_HOSTS)
            ):
                raise LookupFailed(
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https or a loopback or "
                    "container-agent address"
                )
            url = full
        else:
            return None
        headers = {}
        token = os.environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN")
        token_file = os.environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
        if token_file:
            try:
                with open(token_file, encoding="utf-8") as f:
                    token = f.read().strip()
            except OSError as e:
                raise LookupFailed(f"cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE ({e})")
        if token:
            if any(c in token for c in "\r\n"):
                raise LookupFailed("the container authorization token holds a line break")
            headers["Authorization"] = token
        answer = self._plain("GET", url, headers)
        if answer.status != 200:
            raise LookupFailed(f"the container credentials endpoint answered HTTP {answer.status}")
        return _json_credentials(answer.json(), "container")

    def _imds(self) -> Credentials | None:
        if os.environ.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true":
            return None
        base = os.environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT", _IMDS).rstrip("/")
        answer = self._plain(
            "PUT", f"{base}/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "21600"}
        )
        if answer.status != 200 or not answer.body:
            raise LookupFailed(f"instance metadata refused a session token (HTTP {answer.status})")
        session = {"X-aws-ec2-metadata-token": answer.body.decode("ascii", "replace").strip()}
        path = f"{base}/latest/meta-data/iam/security-credentials/"
        answer = self._plain("GET", path, session)
        if answer.status == 404:
            return None
        if answer.status != 200:
            raise LookupFailed(f"instance metadata answered HTTP {answer.status}")
        roles = answer.body.decode("utf-8", "replace").split()
        if len(roles) != 1:
            raise LookupFailed(f"instance metadata lists {len(roles)} roles, expected one")
        answer = self._plain("GET", path + quote(roles[0], safe=""), session)
        if answer.status != 200:
            raise LookupFailed(f"instance metadata answered HTTP {answer.status} for the role")
        return _json_credentials(answer.json(), "instance metadata")


def _from_env() -> Credentials | None:
    key = os.environ.get("AWS_ACCESS_KEY_ID")
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        return None
    return Credentials(key, secret, os.environ.get("AWS_SESSION_TOKEN") or None, source="env")


def _sts_credentials(root: ET.Element, operation: str, source: str) -> Credentials:
    creds = root.find(f"{operation}Result/Credentials")
    key, secret = text(creds, "AccessKeyId"), text(creds, "SecretAccessKey")
    token = text(creds, "SessionToken")
    if not key or not secret or not token:
        raise LookupFailed(f"STS {operation}'s answer has no credentials")
    return Credentials(key, secret, token, expiry(text(creds, "Expiration")), source)


def _json_credentials(data: object, source: str) -> Credentials:
    if not isinstance(data, dict):
        raise LookupFailed(f"the {source} credentials are not a JSON object")
    key, secret = data.get("AccessKeyId"), data.get("SecretAccessKey")
    token = data.get("Token")
    if not isinstance(key, str) or not key or not isinstance(secret, str) or not secret:
        raise LookupFailed(f"the {source} credentials lack AccessKeyId or SecretAccessKey")
    expires = expiry(data["Expiration"]) if data.get("Expiration") is not None else None
    return Credentials(
        key, secret, token if isinstance(token, str) and token else None, expires, source
    )
