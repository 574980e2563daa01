"""HashiCorp Vault: a token's capabilities on an API path, asked live.

Vault authorizes tokens: every request's path is checked against the token's ACL policies
(its own, its entity's and the entity's groups'), capability by capability (``read``,
``list``, ``create``, ``update``, ``patch``, ``delete``, ``sudo``). The engine asks Vault
itself, ``POST /v1/sys/capabilities-accessor`` with ``{"accessor", "paths": [path]}``, and
gets the capabilities the user's token holds on the path (``["deny"]`` for none, ``["root"]``
for a root token); it never sees the user's token, only its accessor.

Users are token accessors: the application's user maps, through the shared identity modes
(``users``, ``file``, ``http``, ``callable``; ``template`` where accessors can be written as
one), to the accessor of the token the agent acts with for that user (a token minted for the
user; ``vault token lookup`` shows its accessor). Vault has no capability check for an
entity without a token, so there is no look-up by email here: an entity found by alias
(``identity/lookup/entity``) names no token to ask about.

Resources: ``path:API_PATH``, the path as the API names it without ``/v1`` (KV v2 data at
``secret/data/app/db``, its metadata at ``secret/metadata/app/db``), relative to the
connection's ``namespace``. Actions are capabilities (``sudo.*`` for root-protected paths,
``write`` for a POST/PUT that needs ``create`` on a new path and ``update`` on an existing
one). What capabilities do not cover is the operator's: Sentinel policies (Enterprise),
control groups, MFA and a policy's parameter constraints (``allowed_parameters``,
``denied_parameters``, ``required_parameters``) can still refuse a request Vault's ACL
allows; ``constrained_paths`` lists path prefixes where an allow is answered unknown.

Authentication of the engine (``auth``): ``token`` (a periodic token) or ``approle``
(``role_id`` + ``secret_id``, logged in at ``auth/<approle_mount>/login``; the client token is
kept until shortly before its lease ends, and dropped when Vault refuses it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolpass.integrations._kit import Cache, IssuedToken, UserIds, asked, declared
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Integration,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import Match, Request
from toolpass.wire.errors import ConfigError
from toolpass.wire.http import Response

__all__ = ["Vault"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
KNOWN_CAPABILITIES = frozenset(
    {"create", "read", "update", "patch", "delete", "list", "sudo", "deny", "root"}
    | {"subscribe", "recover"}
)
_SEGMENT = r"(?!\.\.?(?:/|$))[A-Za-z0-9_.@:+=,~-]+"
#: An API path (and a namespace path), as ``actions.json`` declares the kind ``path``.
_PATH = re.compile(declared(__name__, "kinds")["path"])
_ACCESSOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{3,127}")
_TRUE, _FALSE = frozenset({"1", "t", "true"}), frozenset({"0", "f", "false"})
CREDENTIAL = (
    "Least privilege: a periodic token whose only policy grants update on "
    'sys/capabilities-accessor (path "sys/capabilities-accessor" { capabilities = '
    '["update"] }); it reads no secret. Create it with `vault policy write toolpass-engine '
    "toolpass.hcl` and `vault token create -orphan -period=768h -policy=toolpass-engine "
    "-display-name=toolpass` (renew it, or let an agent renew it); the token itself may "
    "always look itself up (auth/token/lookup-self, the default policy) and ask its own "
    "capabilities (sys/capabilities-self), which the probe uses. Keep it away from the agent: "
    "it reveals what any token of the namespace may do."
)


USER_IDS = UserIds(_ACCESSOR, "a Vault token accessor")


class Vault(Integration):
    """HashiCorp Vault, through sys/capabilities-accessor."""

    name = "vault"
    description = (
        "HashiCorp Vault: the capabilities (read, list, create, update, patch, delete, sudo) "
        "the user's token holds on an API path, asked live (POST "
        "/v1/sys/capabilities-accessor with the token's accessor). " + CREDENTIAL
    )
    default_url = "https://127.0.0.1:8200"  # Vault's own default address (VAULT_ADDR)
    keys = (
        ConfigKey(
            "auth",
            "How the engine signs in: token (a Vault token, e.g. a periodic one) or approle "
            "(role_id + secret_id, logged in at auth/<approle_mount>/login; the token it gets "
            "is kept until shortly before its lease ends).",
            default="token",
            choices=("token", "approle"),
            needs={"token": ("token",), "approle": ("role_id", "secret_id")},
        ),
        ConfigKey(
            "token",
            "The engine's Vault token (auth token; sent as X-Vault-Token); see the catalog's "
            "description for its policy.",
            secret=True,
        ),
        ConfigKey("role_id", "The AppRole's role_id (auth approle)."),
        ConfigKey("secret_id", "The AppRole's secret_id (auth approle).", secret=True),
        ConfigKey("approle_mount", "Where the AppRole auth method is mounted.", default="approle"),
        ConfigKey(
            "namespace",
            "The Vault Enterprise namespace the engine and the users' tokens live in (sent as "
            "X-Vault-Namespace); resources are paths relative to it. Empty: the root.",
        ),
        ConfigKey(
            "constrained_paths",
            "Path prefixes (e.g. secret/data/prod/) where Sentinel, control groups, MFA or "
            "parameter constraints may refuse what capabilities allow: an allow there is "
            "unknown.",
            default=(),
            type="list",
        ),
        ConfigKey(
            "capability_cache_ttl",
            "Seconds a token's capabilities on a path are kept (0: never). Policy edits take "
            "effect in Vault at once.",
            default=5.0,
            minimum=0.0,
            unit="seconds",
        ),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._caps: Cache[tuple[str, str], frozenset[str]] = Cache.option(
            self, "capability_cache_ttl", 10_000
        )
        self._tokens = IssuedToken(self, self._approle_login)

    # --- configuration ---------------------------------------------------------------
    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        if not re.fullmatch(
            _SEGMENT + r"(?:/" + _SEGMENT + ")*", options.get("approle_mount", "approle")
        ):
            raise ConfigError("must be an auth mount path", "approle_mount")
        namespace = options.get("namespace")
        if namespace and not _PATH.fullmatch(str(namespace)):
            raise ConfigError("must be a namespace path (ns1/ns2)", "namespace")
        for prefix in options.get("constrained_paths", ()):
            if not isinstance(prefix, str) or not _PATH.fullmatch(prefix):
                raise ConfigError(f"{prefix!r} is not a Vault API path", "constrained_paths")

    # --- requests --------------------------------------------------------------------
    def auth_headers(self) -> Mapping[str, str]:
        headers = self._plain_headers()
        if self.options.get("auth") == "approle":
            headers["X-Vault-Token"] = self._login()
        else:
            headers["X-Vault-Token"] = self.secret("token")
        return headers

    def _plain_headers(self) -> dict[str, str]:
        namespace = self.options.get("namespace")
        return {"X-Vault-Namespace": str(namespace)} if namespace else {}

    def _login(self) -> str:
        """The AppRole login's client token, kept until shortly before its lease ends."""
        return self._tokens.get()

    def _approle_login(self) -> tuple[str, float]:
        mount = self.options.get("approle_mount", "approle")
        what = "log the engine in with its AppRole"
        data = self.fetch_json(
            "POST",
            f"/v1/auth/{mount}/login",
            what=what,
            json={"role_id": self.options["role_id"], "secret_id": self.secret("secret_id")},
            headers=self._plain_headers(),
        )
        auth = data.get("auth")
        token = auth.get("client_token") if isinstance(auth, dict) else None
        lease = auth.get("lease_duration") if isinstance(auth, dict) else None
        if not isinstance(token, str) or not token:
            raise LookupFailed(f"vault's answer to {what} has no client_token")
        if isinstance(lease, bool) or not isinstance(lease, (int, float)) or lease < 0:
            raise LookupFailed(f"vault's answer to {what} has no lease_duration")
        life = float(lease) or 86400.0  # 0: a token that does not expire
        return token, self.clock() + life - min(60.0, life / 10)

    def failure(self, answer: Response, what: str) -> LookupFailed:
        """As the kit says; a refused AppRole token is dropped, so the next check logs in."""
        held = self.issued
        if answer.status in (401, 403) and held is not None:
            self._tokens.drop(held[0])
        return super().failure(answer, what)

    def error_detail(self, data: Any) -> str | None:
        """Vault's ``{"errors": ["..."]}``."""
        errors = data.get("errors") if isinstance(data, dict) else None
        if isinstance(errors, list):
            text = "; ".join(e for e in errors if isinstance(e, str))
            return text or None
        return super().error_detail(data)

    # --- the request hook --------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """Vault reads ``GET ?list=true`` as LIST; a request to another namespace (the
        ``X-Vault-Namespace`` header) names no resource of this connection."""
        if request.method == "GET" and "list" in request.query:
            values = {v.strip().lower() for v in request.query["list"]}
            if values <= _TRUE:
                request = Request(
                    "LIST",
                    request.path,
                    request.query_string,
                    request.headers,
                    request.body,
                    request.host,
                )
            elif not values <= _FALSE | {""}:
                found = self.route_table().match(request)
                return None if found is None else Match(found.route, found.params, None)
        found = self.route_table().match(request)
        if found is None:
            return None
        sent = request.headers.get("x-vault-namespace", "").strip("/")
        if sent != str(self.options.get("namespace") or "").strip("/"):
            return Match(found.route, found.params, None)
        return found

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        got = asked(self, action, resource, user, USER_IDS)
        if isinstance(got, Decision):
            return got
        path, accessor = got.on.id, got.uid
        held = self._capabilities(accessor, path)
        needed = tuple(got.terms["caps"])
        if "root" in held:
            return self._allowed(path, f"the token {accessor} is a root token")
        if "deny" in held or not held:
            return Decision.deny(f"Vault grants the token {accessor} nothing on {path}")
        has = [c for c in needed if c in held]
        if len(has) == len(needed):
            return self._allowed(
                path, f"Vault grants the token {accessor} {'+'.join(needed)} on {path}"
            )
        text = f"the token {accessor} holds {', '.join(sorted(held))} on {path}"
        if has and got.terms.get("partial") == "unknown":
            return Decision.unknown(
                f"{text}: a write needs create for a new path and update for an existing one"
            )
        return Decision.deny(f"{text}, not {'+'.join(needed)}")

    def _allowed(self, path: str, text: str) -> Decision:
        for prefix in self.options.get("constrained_paths", ()):
            if path.startswith(prefix):
                return Decision.unknown(
                    f"{text}, but {prefix} is a constrained path (Sentinel, control groups, "
                    "MFA or parameter constraints may refuse it)"
                )
        return Decision.allow(text)

    def _capabilities(self, accessor: str, path: str) -> frozenset[str]:
        return self._caps.get((accessor, path), lambda: self._read_capabilities(accessor, path))

    def _read_capabilities(self, accessor: str, path: str) -> frozenset[str]:
        what = f"ask the capabilities of a token on {path}"
        data = self.fetch_json(
            "POST",
            "/v1/sys/capabilities-accessor",
            what=what,
            json={"accessor": accessor, "paths": [path]},
        )
        inner = data.get("data")
        source = inner if isinstance(inner, dict) and path in inner else data
        found = source.get(path, source.get("capabilities"))
        if not isinstance(found, list) or not all(isinstance(c, str) for c in found):
            raise LookupFailed(f"vault's answer to {what} has no list of capabilities")
        unknown = set(found) - KNOWN_CAPABILITIES
        if unknown:
            raise LookupFailed(f"vault answered unknown capabilities {sorted(unknown)} to {what}")
        return frozenset(found)

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        me = self.get_json("/v1/auth/token/lookup-self", what="look the engine's token up")
        data = me.get("data")
        if not isinstance(data, dict):
            return ProbeResult(False, "vault's lookup-self answer has no data")
        who = f"{data.get('display_name') or 'token'} ({data.get('accessor') or '?'})"
        what = "ask the engine's own capabilities"
        answer = self.answer(
            "POST",
            "/v1/sys/capabilities-self",
            what=what,
            json={"paths": ["sys/capabilities-accessor"]},
        )
        if answer.status != 200:
            return ProbeResult(False, f"signed in as {who}, but {self.failure(answer, what)}")
        caps = self.parse(answer, what)
        inner = caps.get("data")
        source = inner if isinstance(inner, dict) else caps
        held = source.get("sys/capabilities-accessor", source.get("capabilities")) or []
        if not isinstance(held, list) or not ({"update", "root"} & set(held)):
            return ProbeResult(
                False, f"signed in as {who}, but the token may not update sys/capabilities-accessor"
            )
        return ProbeResult(True, f"signed in to {self.config.url} as {who}")


INTEGRATION = Vault
