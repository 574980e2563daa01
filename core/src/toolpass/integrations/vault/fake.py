"""A fake HashiCorp Vault on 127.0.0.1.

It speaks the documented shapes of the HTTP API (``/v1``):

- ``POST/PUT /v1/sys/capabilities-accessor`` ``{"accessor", "paths"}`` (or the older
  ``"path"``): ``{"<path>": [caps], "capabilities": [caps] (one path), "data": {...}}`` as
  Vault answers (the capabilities at the top level and under ``data``); an unknown accessor
  is 400 ``{"errors": ["invalid accessor"]}``; ``sys/capabilities-self`` the same for the
  caller's token;
- ``GET /v1/auth/token/lookup-self``: ``{"data": {"accessor", "display_name", "policies",
  ...}}``;
- KV v2 at mount ``secret``: ``GET/POST/PUT/DELETE /v1/secret/data/<path>``,
  ``GET /v1/secret/metadata/<path>?list=true`` (``{"data": {"keys": [...]}}``).

Tokens hold policies: a policy maps path patterns (exact, a trailing ``*`` glob, ``+`` for
one segment) to capabilities, the most specific pattern wins as Vault's priority rules say
(exact before glob; a later wildcard, fewer ``+``, a longer pattern first), and a token's
policies merge per pattern (``deny`` wins). A root token holds ``["root"]``. Every request
needs ``X-Vault-Token``; a missing or unknown token is 403 ``{"errors": ["permission
denied"]}``; a KV request the token's capabilities refuse is 403 too, and so is asking the
capabilities of a token whose identity entity is disabled (``Token.entity_disabled``), as
Vault's ``Capabilities`` refuses it.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from fakes.server import FakeServer, Reply, Request

ENGINE_TOKEN = "hvs.engine-token-0000000000000000"
ENGINE_ACCESSOR = "EnGiNeAcCeSsOr0000000000"
DANA_TOKEN = "hvs.dana-token-00000000000000000"
DANA = "DaNaAcCeSsOr000000000000"
RORY_TOKEN = "hvs.rory-token-00000000000000000"
RORY = "RoRyAcCeSsOr000000000000"
ROOT_TOKEN = "hvs.root-token-00000000000000000"
ROOT = "RoOtAcCeSsOr000000000000"
ROLE_ID = "5a1d0000-0000-0000-0000-toolpass0001"
SECRET_ID = "secret-id-0000-0000-0000-000000000001"


def denied() -> Reply:
    return Reply(403, {"errors": ["permission denied"]})


@dataclass
class Token:
    token: str
    accessor: str
    name: str
    policies: list[str] = field(default_factory=list)
    root: bool = False
    entity_disabled: bool = False  # the identity entity the token belongs to is disabled


def _priority(pattern: str) -> tuple[int, int, int, int, int]:
    """A sort key: the higher, the more specific (Vault's policy priority rules)."""
    wild = [i for i, ch in enumerate(pattern) if ch in "*+"]
    first = wild[0] if wild else len(pattern) + 1
    return (
        first,
        0 if pattern.endswith("*") else 1,
        -pattern.count("+"),
        len(pattern),
        0,
    )


def _matches(pattern: str, path: str) -> bool:
    regex = "".join(
        "[^/]+" if part == "+" else re.escape(part) for part in re.split(r"(\+)", pattern)
    )
    if regex.endswith(r"\*"):
        regex = regex[:-2] + ".*"
    return re.fullmatch(regex, path) is not None


class FakeVault(FakeServer):
    """A Vault server; ``url`` is its address (``VAULT_ADDR``)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.tokens: dict[str, Token] = {}
        self.policies: dict[str, dict[str, list[str]]] = {}
        self.kv: dict[str, dict[str, Any]] = {}
        self.approles: dict[str, tuple[str, str]] = {}  # role_id -> (secret_id, token)
        self.lease = 2764800
        self._ids = itertools.count(1)
        self._install()

    # --- state -------------------------------------------------------------------------
    def add_token(self, token: str, accessor: str, name: str, *policies: str) -> Token:
        self.tokens[token] = Token(token, accessor, name, list(policies), root=token == ROOT_TOKEN)
        return self.tokens[token]

    def set_policy(self, name: str, rules: dict[str, list[str]]) -> None:
        self.policies[name] = rules

    def capabilities(self, token: Token, path: str) -> list[str]:
        if token.root:
            return ["root"]
        merged: dict[str, set[str]] = {}
        for name in token.policies:
            for pattern, caps in self.policies.get(name, {}).items():
                merged.setdefault(pattern, set()).update(caps)
        if path in merged:
            caps = merged[path]
        else:
            hits = sorted((p for p in merged if _matches(p, path)), key=_priority)
            caps = merged[hits[-1]] if hits else set()
        if not caps or "deny" in caps:
            return ["deny"]
        return sorted(caps)

    # --- helpers -----------------------------------------------------------------------
    def _caller(self, request: Request) -> Token | Reply:
        token = self.tokens.get(request.headers.get("x-vault-token", ""))
        return denied() if token is None else token

    def _envelope(self, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "request_id": f"00000000-0000-0000-0000-{next(self._ids):012d}",
            "lease_id": "",
            "renewable": False,
            "lease_duration": 0,
            "data": data,
            "wrap_info": None,
            "warnings": None,
            "auth": None,
        }

    def _caps_answer(self, token: Token, paths: list[str]) -> dict[str, Any]:
        found = {p: self.capabilities(token, p) for p in paths}
        if len(paths) == 1:
            found["capabilities"] = found[paths[0]]
        return {**found, **self._envelope(dict(found))}

    def _install(self) -> None:
        def capabilities_accessor(request: Request) -> Reply | dict[str, Any]:
            caller = self._caller(request)
            if isinstance(caller, Reply):
                return caller
            if "update" not in self.capabilities(caller, "sys/capabilities-accessor") and not (
                caller.root
            ):
                return denied()
            body = request.json()
            paths = body.get("paths") or ([body["path"]] if body.get("path") else [])
            if not paths:
                return Reply(400, {"errors": ["missing paths"]})
            target = next(
                (t for t in self.tokens.values() if t.accessor == body.get("accessor")), None
            )
            if target is None:
                return Reply(400, {"errors": ["invalid accessor"]})
            if target.entity_disabled:  # vault/capabilities.go: the entity is disabled
                return denied()
            return self._caps_answer(target, paths)

        def capabilities_self(request: Request) -> Reply | dict[str, Any]:
            caller = self._caller(request)
            if isinstance(caller, Reply):
                return caller
            body = request.json()
            return self._caps_answer(caller, body.get("paths") or [body.get("path")])

        def lookup_self(request: Request) -> Reply | dict[str, Any]:
            caller = self._caller(request)
            if isinstance(caller, Reply):
                return caller
            return self._envelope(
                {
                    "accessor": caller.accessor,
                    "display_name": caller.name,
                    "policies": ["root"] if caller.root else ["default", *caller.policies],
                    "id": caller.token,
                    "path": "auth/token/create",
                    "ttl": 0 if caller.root else 2764800,
                    "type": "service",
                }
            )

        def kv(request: Request) -> Reply | dict[str, Any]:
            caller = self._caller(request)
            if isinstance(caller, Reply):
                return caller
            kind, key = request.params["kind"], request.params["key"]
            path = f"secret/{kind}/{key}"
            caps = set(self.capabilities(caller, path))
            listing = request.method == "GET" and request.arg("list") in ("true", "1")
            need = {
                "GET": "list" if listing else "read",
                "DELETE": "delete",
                "PATCH": "patch",
            }.get(request.method, "update" if key in self.kv else "create")
            if "root" not in caps and need not in caps:
                return denied()
            if listing and kind == "metadata":
                prefix = key.rstrip("/") + "/"
                keys = sorted(
                    {
                        k[len(prefix) :].split("/")[0] + ("/" if "/" in k[len(prefix) :] else "")
                        for k in self.kv
                        if k.startswith(prefix)
                    }
                )
                return self._envelope({"keys": keys}) if keys else Reply(404, {"errors": []})
            if kind != "data":
                return Reply(405, {"errors": ["unsupported in the fake"]})
            if request.method == "GET":
                if key not in self.kv:
                    return Reply(404, {"errors": []})
                meta = {"version": 1, "created_time": "2026-01-01T00:00:00Z", "destroyed": False}
                return self._envelope({"data": self.kv[key], "metadata": meta})
            if request.method == "DELETE":
                self.kv.pop(key, None)
                return Reply(204, None)
            body = request.json()
            self.kv[key] = dict(body.get("data") or {})
            return self._envelope({"version": 1, "created_time": "2026-01-01T00:00:00Z"})

        def approle_login(request: Request) -> Reply | dict[str, Any]:
            body = request.json()
            known = self.approles.get(str(body.get("role_id")))
            if known is None or known[0] != body.get("secret_id"):
                return Reply(400, {"errors": ["invalid role or secret ID"]})
            token = self.tokens[known[1]]
            answer = self._envelope({})
            answer["data"] = None
            answer["auth"] = {
                "client_token": token.token,
                "accessor": token.accessor,
                "policies": ["default", *token.policies],
                "lease_duration": self.lease,
                "renewable": True,
            }
            return answer

        for method in ("POST", "PUT"):
            self.add(method, r"/v1/auth/approle/login", approle_login)
            self.add(method, r"/v1/sys/capabilities-accessor", capabilities_accessor)
            self.add(method, r"/v1/sys/capabilities-self", capabilities_self)
        self.add("GET", r"/v1/auth/token/lookup-self", lookup_self)
        for method in ("GET", "POST", "PUT", "DELETE", "PATCH"):
            self.add(method, r"/v1/secret/(?P<kind>data|metadata)/(?P<key>.+)", kv)


def populate(fake: FakeVault) -> FakeVault:
    """The engine's token (update on sys/capabilities-accessor), Dana (read and write on
    secret/data/app/*, list on the metadata, no delete), Rory (read of secret/data/app/db
    only, deny on secret/data/app/admin) and a root token."""
    fake.set_policy("toolpass-engine", {"sys/capabilities-accessor": ["update"]})
    fake.set_policy(
        "app-rw",
        {
            "secret/data/app/*": ["create", "read", "update"],
            "secret/metadata/app/*": ["list"],
            "secret/metadata/app": ["list"],
            "secret/data/app/admin": ["deny"],
            "sys/audit/*": ["update"],
        },
    )
    fake.set_policy(
        "app-ro",
        {"secret/data/app/db": ["read"], "secret/data/+/create-only": ["create"]},
    )
    fake.add_token(ENGINE_TOKEN, ENGINE_ACCESSOR, "token-toolpass", "toolpass-engine")
    fake.add_token(DANA_TOKEN, DANA, "oidc-dana@example.com", "app-rw")
    fake.add_token(RORY_TOKEN, RORY, "oidc-rory@example.com", "app-ro")
    fake.add_token(ROOT_TOKEN, ROOT, "root")
    fake.approles[ROLE_ID] = (SECRET_ID, ENGINE_TOKEN)
    fake.kv["app/db"] = {"password": "s3cret"}
    return fake
