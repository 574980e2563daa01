"""What Microsoft's systems (Azure Resource Manager, Microsoft 365 through Graph) share: how
the engine signs in to Entra ID, and how it finds a user in the directory.

The engine is an Entra ID application (``tenant_id`` + ``client_id``) that takes an access
token per API (``https://management.azure.com/.default``, ``https://graph.microsoft.com/
.default``, or the sovereign cloud's) from ``{authority_host}/{tenant}/oauth2/v2.0/token``
with the client credentials grant. ``auth`` says how it proves who it is: ``secret`` (a
client secret), ``certificate`` (a client assertion: a JWT signed RS256 with the
certificate's private key, ``x5t`` its SHA-1 thumbprint; the ``crypto`` extra) or
``workload_identity`` (a federated token a workload identity writes to a file, re-read for
each new access token: AKS, GitHub Actions). ``cloud`` picks the authority host and the API
audiences of AzureCloud, AzureUSGovernment or AzureChinaCloud; ``authority_host`` and
``graph_url`` override them (sovereign clouds, tests). A token an API rejects (401) is
dropped and taken again once.

Users are Entra ID object ids. The look-up ``email`` reads ``GET /v1.0/users/{email}`` (a user
whose userPrincipalName is the email), else ``$filter=mail eq '{email}'``, keeping only exact
matches. Every check reads the user's account (``GET /v1.0/users/{id}``, kept
``permission_cache_ttl`` seconds, asked anew by ``fresh=True``), in every identity mode: a
disabled account (``accountEnabled`` false) is denied whatever roles it still holds, and one
whose state Graph does not tell (``accountEnabled`` missing: the app lacks User.Read.All) is
unknown.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

from toolpass.integrations._kit import Absent, Cache, paged, token_from
from toolpass.integrations.base import (
    ConfigKey,
    Decision,
    Integration,
    LookupFailed,
)
from toolpass.wire.errors import ConfigError
from toolpass.wire.http import Response, check_url
from toolpass.wire.identity import same_email
from toolpass.wire.jwt import rs256

#: cloud -> (authority host, Resource Manager endpoint, Graph endpoint)
CLOUDS: dict[str, tuple[str, str, str]] = {
    "AzureCloud": (
        "https://login.microsoftonline.com",
        "https://management.azure.com",
        "https://graph.microsoft.com",
    ),
    "AzureUSGovernment": (
        "https://login.microsoftonline.us",
        "https://management.usgovcloudapi.net",
        "https://graph.microsoft.us",
    ),
    "AzureChinaCloud": (
        "https://login.chinacloudapi.cn",
        "https://management.chinacloudapi.cn",
        "https://microsoftgraph.chinacloudapi.cn",
    ),
}
GUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,99}")
_NEEDS = {
    "secret": "client_secret",
    "certificate": "certificate",
    "workload_identity": "federated_token_file",
}
_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def entra_keys(credential: str, graph_url: bool = True) -> tuple[ConfigKey, ...]:
    """The keys of signing in to Entra ID; ``credential`` says what the app needs;
    ``graph_url`` for a system whose own url is not Graph's."""
    graph = (ConfigKey("graph_url", "The Microsoft Graph endpoint (default: the cloud's)."),)
    return (
        ConfigKey("tenant_id", "The Entra ID tenant (directory) id or domain.", required=True),
        ConfigKey(
            "client_id", f"The engine's application (client) id. {credential}", required=True
        ),
        ConfigKey(
            "auth",
            "How the engine proves who it is: secret (client_secret), certificate (a PEM with "
            "the private key and the certificate, signed client assertions; the crypto extra) "
            "or workload_identity (federated_token_file: AKS puts its path in "
            "AZURE_FEDERATED_TOKEN_FILE).",
            default="secret",
            choices=tuple(_NEEDS),
            needs={auth: (key,) for auth, key in _NEEDS.items()},
        ),
        ConfigKey("client_secret", "The application's client secret (auth secret).", secret=True),
        ConfigKey(
            "certificate",
            "A PEM holding the application certificate's unencrypted private key and the "
            "certificate (auth certificate).",
            secret=True,
        ),
        ConfigKey(
            "federated_token_file",
            "The file a workload identity writes its federated token to (auth "
            "workload_identity); read anew for each access token.",
        ),
        ConfigKey(
            "cloud",
            "The Microsoft cloud: its authority host and API audiences.",
            default="AzureCloud",
            choices=tuple(CLOUDS),
        ),
        ConfigKey("authority_host", "The Entra ID authority host (default: the cloud's)."),
        *(graph if graph_url else ()),
    )


class MicrosoftCloud(Integration):
    """An Entra ID application: its access tokens, Graph requests and the directory look-up."""

    identity_modes = ("email",)
    #: The API the connection's ``url`` is: "arm" or "graph" (its token's audience).
    api: ClassVar[str] = "arm"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        name = str(self.options.get("cloud") or "AzureCloud")
        cloud = CLOUDS[name]
        if name != "AzureCloud" and self.config.url == self.default_url:
            raise ConfigError(
                f"connection {self.config.id!r}: url must be the {name} endpoint",
                "url",
            )
        self._authority = str(self.options.get("authority_host") or cloud[0]).rstrip("/")
        graph = self.config.url if self.api == "graph" else self.options.get("graph_url")
        self._graph = str(graph or cloud[2]).rstrip("/")
        self._audience = {"arm": cloud[1], "graph": cloud[2]}
        self._tokens: dict[str, tuple[str, float]] = {}
        self._token_lock = threading.Lock()
        self._accounts: Cache[str, dict[str, Any] | None] = Cache.option(
            self, "permission_cache_ttl", keep_none=False
        )

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        if not _TENANT.fullmatch(str(options.get("tenant_id"))):
            raise ConfigError("must be a tenant id or domain", "tenant_id")
        for key in ("authority_host", "graph_url"):
            if options.get(key) is not None:
                check_url(options[key], key)

    # --- tokens ----------------------------------------------------------------------------
    def token(self, api: str) -> str:
        """An access token for ``api`` ("arm" or "graph"), taken anew a minute before it
        expires."""
        with self._token_lock:
            held = self._tokens.get(api)
            if held is not None and self.clock() < held[1]:
                return held[0]
            url = f"{self._authority}/{quote(str(self.options['tenant_id']))}/oauth2/v2.0/token"
            form = {
                "grant_type": "client_credentials",
                "client_id": str(self.options["client_id"]),
                "scope": self._audience[api] + "/.default",
                **self._proof(url),
            }
            who, what = "Entra ID's token endpoint", "take an access token from Entra ID"
            got = token_from(self, url, form, who=who, what=what)
            self._tokens[api] = got
            self.issued = got
            return got[0]

    def _proof(self, token_url: str) -> dict[str, str]:
        auth = str(self.options.get("auth") or "secret")
        if auth == "secret":
            return {"client_secret": self.secret("client_secret")}
        if auth == "workload_identity":
            path = Path(str(self.options["federated_token_file"]))
            try:
                assertion = path.read_text("utf-8").strip()
            except OSError as e:
                raise LookupFailed(f"the federated token file cannot be read ({e.strerror})")
            if not assertion:
                raise LookupFailed("the federated token file is empty")
        else:
            pem = self.secret("certificate")
            now = int(time.time())
            claims = {
                "aud": token_url,
                "iss": self.options["client_id"],
                "sub": self.options["client_id"],
                "jti": str(uuid.uuid4()),
                "nbf": now,
                "iat": now,
                "exp": now + 600,
            }
            assertion = rs256(claims, pem, {"x5t": thumbprint(pem)})
        return {"client_assertion_type": _ASSERTION, "client_assertion": assertion}

    def _forget(self, api: str, used: str) -> None:
        with self._token_lock:
            if self._tokens.get(api, ("",))[0] == used:
                del self._tokens[api]

    def call(
        self,
        method: str,
        url: str,
        *,
        api: str,
        what: str,
        params: Mapping[str, str | None] | None = None,
        json: Any = None,
    ) -> Response:
        """One request to ``url`` with ``api``'s token, taken again once when rejected."""
        for attempt in (1, 2):
            token = self.token(api)
            headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
            answer = self.answer(method, url, what=what, params=params, json=json, headers=headers)
            if answer.status == 401 and attempt == 1:
                self._forget(api, token)
                continue
            return answer
        raise AssertionError("unreachable")  # pragma: no cover

    def api_json(
        self,
        method: str,
        url: str,
        *,
        api: str,
        what: str,
        params: Mapping[str, str | None] | None = None,
        json: Any = None,
        absent: tuple[int, ...] = (),
    ) -> Any:
        """The JSON object ``url`` answers (None for an ``absent`` status)."""
        answer = self.call(method, url, api=api, what=what, params=params, json=json)
        if answer.status in absent:
            return None
        if answer.status != 200:
            raise self.failure(answer, what)
        return self.parse(answer, what)

    def graph(self, path: str, *, what: str, **kw: Any) -> Any:
        """A Graph v1.0 GET (or ``method=``) of ``path``."""
        method = kw.pop("method", "GET")
        return self.api_json(method, f"{self._graph}/v1.0{path}", api="graph", what=what, **kw)

    def graph_list(
        self, path: str, *, what: str, params: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]] | None:
        """Every item of a Graph collection, page by page (``@odata.nextLink`` on Graph's own
        host only); None when the collection's owner is not found (404)."""
        listing = paged(
            self,
            f"{self._graph}/v1.0{path}",
            what=what,
            too_many=f"{self.name}: {what}: too many pages",
            style="next_url",
            items="value",
            each=dict,
            params=params,
            pages=50,
            next_at=("@odata.nextLink",),
            origin=self._graph,
            absent=True,
            get=partial(self.api_json, "GET", api="graph"),
        )
        try:
            return list(listing)
        except Absent:
            return None

    def error_detail(self, data: Any) -> str | None:
        """ARM's and Graph's ``{"error": {"code", "message"}}``; Entra ID's
        ``error_description``."""
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                return f"{error.get('code')}: {error['message']}"
            if isinstance(data.get("error_description"), str):
                return str(data["error_description"]).splitlines()[0]
        return super().error_detail(data)

    def secret_values(self) -> Iterator[str]:
        yield from super().secret_values()
        yield from (t for t, _ in list(self._tokens.values()))

    # --- the directory ---------------------------------------------------------------------
    def lookup_email(self, email: str) -> Sequence[str]:
        """The Entra ID user whose userPrincipalName or mail is ``email`` (exactly)."""
        select = {"$select": "id,userPrincipalName,mail,accountEnabled"}
        what = "find the user in Entra ID"
        one = self.graph(
            f"/users/{quote(email, safe='@')}", what=what, params=select, absent=(404,)
        )
        found = [one] if one is not None and same_email(one.get("userPrincipalName"), email) else []
        if not found:
            escaped = email.replace("'", "''")
            params = {**select, "$filter": f"mail eq '{escaped}'"}
            listed = self.graph("/users", what=what, params=params).get("value")
            if not isinstance(listed, list):
                raise LookupFailed(f"{self.name}: Graph's answer to {what} has no value list")
            found = [u for u in listed if isinstance(u, dict) and same_email(u.get("mail"), email)]
        return [
            str(u["id"]) for u in found if isinstance(u.get("id"), str) and GUID.fullmatch(u["id"])
        ]

    def member_of(self, oid: str, groups: list[str]) -> set[str]:
        """The ``groups`` the user is a (transitive) member of, through Graph."""
        found: set[str] = set()
        for i in range(0, len(groups), 20):
            data = self.graph(
                f"/directoryObjects/{oid}/checkMemberGroups",
                what="check the user's group memberships",
                method="POST",
                json={"groupIds": groups[i : i + 20]},
            )
            value = data.get("value")
            if not isinstance(value, list):
                raise LookupFailed("Graph's checkMemberGroups answer has no value list")
            found |= {str(v).lower() for v in value}
        return found

    def account(self, oid: str) -> dict[str, Any] | None:
        """The user's directory entry (``accountEnabled``, ``userType``, ``userPrincipalName``,
        ``mail``), kept ``permission_cache_ttl`` seconds; None when Entra ID has no such user."""
        select = {"$select": "id,accountEnabled,userType,userPrincipalName,mail"}
        return self._accounts.get(
            oid.lower(),
            lambda: self.graph(f"/users/{oid}", what="read the user", params=select, absent=(404,)),
        )

    def account_refusal(self, oid: str, account: Mapping[str, Any] | None) -> Decision | None:
        """A deny for an absent or disabled account, unknown when Graph does not say whether
        it is enabled; None for an enabled one."""
        if account is None:
            return Decision.deny(f"Entra ID has no user {oid}")
        enabled = account.get("accountEnabled")
        if enabled is False:
            return Decision.deny(f"the Entra ID account {oid} is disabled")
        if enabled is not True:
            return Decision.unknown(
                f"Graph does not tell whether the Entra ID account {oid} is enabled (the "
                "engine's app needs the User.Read.All application permission)"
            )
        return None


def thumbprint(pem: str) -> str:
    """The base64url SHA-1 thumbprint (``x5t``) of the certificate in ``pem``."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import Encoding
    except ImportError:
        raise ConfigError(
            "a certificate credential needs the crypto extra: pip install 'toolpass-core[crypto]'"
        ) from None
    start = pem.find("-----BEGIN CERTIFICATE-----")
    if start < 0:
        raise ConfigError("the certificate PEM holds no CERTIFICATE block", "certificate")
    try:
        cert = x509.load_pem_x509_certificate(pem[start:].encode())
    except ValueError:
        raise ConfigError("the certificate PEM's CERTIFICATE block is not valid") from None
    digest = hashlib.sha1(cert.public_bytes(Encoding.DER)).digest()  # noqa: S324 - x5t is SHA-1
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
