"""Snowflake: the user's grant graph, read live and evaluated (Snowflake has no check for
another user).

Read through the REST resource APIs (``snowflakedb/snowflake-rest-api-specs``): the user
(``GET /api/v2/users/{name}``: ``disabled``, ``default_role``, ``default_secondary_roles``),
the roles granted to them (``GET /api/v2/users/{name}/grants``, what ``SHOW GRANTS TO USER``
lists; PUBLIC, which every user and role holds, is added), and for each role, recursively,
what was granted to it (``GET /api/v2/roles/{name}/grants``; a database role's at
``/api/v2/databases/{db}/database-roles/{name}/grants``): privileges on securables and
``USAGE`` on the roles below it. These GETs answer JSON of a published schema and never run
SQL the engine composes (the SQL API's ``SHOW GRANTS`` would need a warehouse-free statement,
its result partitions and identifiers spliced into SQL); a 202 is polled at
``/api/v2/results/{handler}``, a ``Link: rel="next"`` page is followed.

What is evaluated, per Snowflake's access-control model: an object's privilege (or its
OWNERSHIP, which holds every privilege on it) plus USAGE on its containers (database, and
schema for what a schema holds); IMPORTED PRIVILEGES on a shared database hold the reads
inside it. Roles in session (``roles: session``, the default): the user's DEFAULT_ROLE (when
granted to them; else PUBLIC) as primary, and every granted role as secondary when
DEFAULT_SECONDARY_ROLES is ``('ALL')``; CREATE privileges count from the primary role only
(Snowflake authorizes CREATE statements with the primary role). ``roles: any``: any role the
user could activate. Not evaluated: future grants (they do not apply to existing objects),
row access and masking policies, network and authentication policies, grants to
applications. A user Snowflake refuses whatever their grants is denied: ``disabled``,
``snowflake_lock``, locked after failed logins (``mins_to_unlock`` above 0, ``locked_until``
ahead), expired (``days_to_expiry`` 0 or less, ``expires_at`` past); a value of another shape
is unknown.

Identifiers fold as Snowflake does: unquoted parts upper-case, quoted parts exact. Users are
Snowflake user names written as identifiers (``dana`` is DANA, ``"dana@example.com"`` exact);
the look-ups ``email`` and ``login_name`` find the one user whose EMAIL or LOGIN_NAME is the
address (exact, case-insensitive) in the paged user list (``GET /api/v2/users``, whose
filters match names only).
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from toolpass.integrations._kit import Cache, IssuedToken, asked, ttl_key
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
from toolpass.integrations.snowflake._sql import classify
from toolpass.wire.errors import ConfigError
from toolpass.wire.jwt import rs256

__all__ = ["Snowflake", "canonical", "names"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
PUBLIC = "PUBLIC"
_PART = r'"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*'
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_UPPER = re.compile(r"[A-Z_][A-Z0-9_$]*")
_DEPTH = {"warehouse": 1, "database": 1, "schema": 2, "table": 3}
_DOTTED = {k: re.compile(rf"(?:{_PART})(?:\.(?:{_PART})){{{n - 1}}}") for k, n in _DEPTH.items()}
_SPLIT = re.compile(_PART)
_TABLES = frozenset(
    {
        "TABLE",
        "VIEW",
        "MATERIALIZED VIEW",
        "DYNAMIC TABLE",
        "EXTERNAL TABLE",
        "ICEBERG TABLE",
        "EVENT TABLE",
        "HYBRID TABLE",
    }
)
_Node = tuple[str, tuple[str, ...]]  # (ROLE | DATABASE ROLE | a securable kind, name parts)
_ONE_PART = frozenset({"DATABASE", "WAREHOUSE", "ROLE", "USER", "INTEGRATION"})
_IMPORTED = "IMPORTED PRIVILEGES"
_READS = frozenset({"USAGE", "SELECT"})
_HANDLE = re.compile(r"[A-Za-z0-9_-]{1,128}")
_MAX_ROLES, _PAGES, _POLLS = 500, 50, 20
_USERS_PAGE = 1000
CREDENTIAL = (
    "Least privilege: a service user (CREATE USER toolpass_engine TYPE = SERVICE "
    "RSA_PUBLIC_KEY = '...' DEFAULT_ROLE = toolpass_grants_reader) whose default role is a "
    "custom role holding MANAGE GRANTS on the account (GRANT MANAGE GRANTS ON ACCOUNT TO ROLE "
    "toolpass_grants_reader): Snowflake shows another user's and other roles' grants, and "
    "lists every user, only to a role with MANAGE GRANTS (or SECURITYADMIN, which holds it). "
    "That privilege is not read-only: the engine only sends GETs, but keep the key away from "
    "the agent, and restrict the user with a network policy. It needs no warehouse and no "
    "data privilege."
)


class Snowflake(Integration):
    """Snowflake, through the live grant graph of the user's roles."""

    name = "snowflake"
    description = (
        "Snowflake: the user, the roles granted to them and every role's grants "
        "(GET /api/v2/users/{name}, /users/{name}/grants, /roles/{name}/grants, database "
        "roles' grants), read live and evaluated as Snowflake does: the object's privilege or "
        "OWNERSHIP plus USAGE on its database and schema, the role hierarchy, PUBLIC, the "
        "default role and DEFAULT_SECONDARY_ROLES, CREATE from the primary role only; future "
        "grants, row access and masking policies are not evaluated. " + CREDENTIAL
    )
    default_url = None
    identity_modes = ("email", "login_name")
    keys = (
        ConfigKey(
            "auth",
            "How the engine signs in: keypair (a key-pair JWT: account, user, private_key), "
            "oauth (an OAuth access token) or pat (a programmatic access token). The url is "
            "the account's, https://<orgname>-<account_name>.snowflakecomputing.com.",
            default="keypair",
            choices=("keypair", "oauth", "pat"),
            needs={
                "keypair": ("account", "user", "private_key"),
                "oauth": ("access_token",),
                "pat": ("access_token",),
            },
        ),
        ConfigKey(
            "account",
            "The account identifier for the JWT issuer (ORGNAME-ACCOUNT_NAME, or the "
            "account locator without its region) (auth keypair).",
        ),
        ConfigKey("user", "The engine's Snowflake user name (auth keypair)."),
        ConfigKey(
            "private_key",
            "The engine user's RSA private key, unencrypted PEM (auth keypair; needs the "
            "crypto extra).",
            secret=True,
        ),
        ConfigKey("access_token", "The OAuth access token or PAT (auth oauth, pat).", secret=True),
        ConfigKey(
            "roles",
            "Which of the user's roles count: session (the default role as primary, every "
            "granted role as secondary when DEFAULT_SECONDARY_ROLES is ('ALL'); CREATE from the "
            "primary only) or any (any role the user could activate).",
            default="session",
            choices=("session", "any"),
        ),
        ConfigKey(
            "not_found",
            "What a 404 for the user means (no such user, or one the engine cannot see): "
            "unknown (the default) or deny.",
            default="unknown",
            choices=("unknown", "deny"),
        ),
        ttl_key("grant", "a user, their grants and a role's grants", 60.0),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tokens = IssuedToken(self, self._new_jwt)
        self._reads: Cache[str, Any] = Cache.option(self, "grant_cache_ttl")

    # --- the request hook ----------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The table's route; a SQL API statement (``POST /api/v2/statements``) is narrowed
        by :func:`~toolpass.integrations.snowflake._sql.classify` to the action and object its
        one plain statement names; any other statement stays ``account.admin``."""
        found = self.route_table().match(request)
        if found is None or request.path.rstrip("/") != "/api/v2/statements":
            return found
        return classify(found, request.form.get("statement"))

    # --- requests ------------------------------------------------------------------------
    def auth_headers(self) -> Mapping[str, str]:
        auth = self.options.get("auth", "keypair")
        if auth == "keypair":
            token, kind = self._jwt(), "KEYPAIR_JWT"
        else:
            token = self.secret("access_token")
            kind = "OAUTH" if auth == "oauth" else "PROGRAMMATIC_ACCESS_TOKEN"
        return {
            "Authorization": f"Bearer {token}",
            "X-Snowflake-Authorization-Token-Type": kind,
            "Accept": "application/json",
            "User-Agent": "toolpass",
        }

    def _jwt(self) -> str:
        """A key-pair JWT (RS256): iss ``ACCOUNT.USER.SHA256:<public key fingerprint>``, sub
        ``ACCOUNT.USER``, an hour long, made again five minutes before it ends."""
        return self._tokens.get()

    def _new_jwt(self) -> tuple[str, float]:
        pem = self.secret("private_key")
        account = str(self.options["account"]).split(".")[0].upper()
        who = f"{account}.{str(self.options['user']).upper()}"
        now = int(time.time())
        claims = {
            "iss": f"{who}.SHA256:{_fingerprint(pem)}",
            "sub": who,
            "iat": now,
            "exp": now + 3600,
        }
        return rs256(claims, pem), time.monotonic() + 3300

    def error_detail(self, data: Any) -> str | None:
        """Snowflake's ``{"message", "code"}``."""
        if isinstance(data, dict) and isinstance(data.get("message"), str) and data["message"]:
            code = data.get("code") or data.get("error_code")
            return f"{code}: {data['message']}" if isinstance(code, str) else data["message"]
        return super().error_detail(data)

    def _read(
        self, path: str, what: str, *, params: Mapping[str, str] | None = None, absent: bool = True
    ) -> Any:
        """The JSON answer to a GET: a 202 polled at ``/api/v2/results/{handler}``, list pages
        joined along ``Link: rel="next"``; None on 404."""
        answer = self.answer("GET", path, what=what, params=params)
        out: list[Any] = []
        for _ in range(_PAGES):
            for poll in range(_POLLS + 1):
                if answer.status != 202:
                    break
                handler = self.parse(answer, what).get("resultHandler")
                if poll == _POLLS or not isinstance(handler, str) or not _HANDLE.fullmatch(handler):
                    raise LookupFailed(f"snowflake did not finish answering {what}")
                time.sleep(min(0.05 * 2**poll, 1.0))
                answer = self.answer("GET", f"/api/v2/results/{handler}", what=what)
            if answer.status == 404 and not out and absent:
                return None
            if answer.status != 200:
                raise self.failure(answer, what)
            data = self.parse(answer, what, None)
            if not isinstance(data, list):
                if out or not isinstance(data, dict):
                    raise LookupFailed(f"snowflake's answer to {what} is not of its shape")
                return data
            out.extend(data)
            nxt = _next_link(answer.header("link"))
            if nxt is None:
                return out
            answer = self.answer("GET", nxt, what=what)
        raise LookupFailed(f"snowflake: {what}: too many pages")

    def _kept_read(self, path: str, what: str) -> Any:
        """:meth:`_read`, its answer (None: absent) kept ``grant_cache_ttl``."""
        return self._reads.get(path, lambda: self._read(path, what))

    # --- identity ------------------------------------------------------------------------
    def _users(self) -> list[dict[str, Any]]:
        """Every user the engine can see (``GET /api/v2/users``, ``showLimit`` pages after
        ``fromName``)."""
        seen: dict[str, dict[str, Any]] = {}
        after: str | None = None
        for _ in range(_PAGES):
            params = {"showLimit": str(_USERS_PAGE)} | ({"fromName": after} if after else {})
            page = self._read("/api/v2/users", "list the users", params=params, absent=False)
            if not isinstance(page, list):
                raise LookupFailed("snowflake's list of users is not a list")
            new = [u for u in page if isinstance(u, dict) and isinstance(u.get("name"), str)]
            fresh = [u for u in new if u["name"] not in seen]
            seen.update((u["name"], u) for u in fresh)
            if len(page) < _USERS_PAGE or not fresh:
                return list(seen.values())
            after = str(new[-1]["name"])
        raise LookupFailed("snowflake has too many users to list")

    def _lookup(self, email: str, field: str) -> Sequence[str]:
        found = [
            str(u["name"])  # as an identifier: the check folds it
            for u in self._users()
            if isinstance(u.get(field), str) and u[field].strip().lower() == email.lower()
        ]
        if not found:
            raise LookupFailed(f"snowflake has no user whose {field} is {email}")
        return found

    def lookup_email(self, email: str) -> Sequence[str]:
        """The user whose EMAIL property is ``email`` (exact, case-insensitive)."""
        return self._lookup(email, "email")

    def lookup_login_name(self, email: str) -> Sequence[str]:
        """The user whose LOGIN_NAME is ``email`` (exact, case-insensitive)."""
        return self._lookup(email, "login_name")

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        ask = asked(self, action, resource)
        if isinstance(ask, Decision):
            return ask
        declared, kind = ask.action, str(ask.terms["kind"])
        target = names(ask.on.id, kind) or ()
        name = canonical(self.user_id(user))
        info = self._kept_read(f"/api/v2/users/{_path(name)}", f"read the user {name}")
        if info is None:
            text = f"Snowflake has no user {name} the engine can see (404)"
            deny = self.options.get("not_found") == "deny"
            return Decision.deny(text) if deny else Decision.unknown(text)
        if not isinstance(info, dict):
            raise LookupFailed(f"snowflake's user {name} is not an object")
        refused = _refused_state(info)
        if refused is not None:
            return Decision.deny(f"the Snowflake user {name} {refused}, whatever their roles")
        if (
            kind == "account"
            and "privilege" not in declared.terms
            and not declared.terms.get("database_role")
        ):
            return Decision.allow(f"{name} is an enabled Snowflake user")
        granted = self._user_roles(name)
        default = info.get("default_role")
        primary = canonical(default) if isinstance(default, str) and default else PUBLIC
        if ("ROLE", (primary,)) not in self._closure(granted):
            primary = PUBLIC  # Snowflake starts with PUBLIC when the default is not held
        secondary = _secondary(info.get("default_secondary_roles"))
        if self.options.get("roles") == "any":
            return self._decide(name, declared, target, [granted], granted)
        if secondary is None:  # Snowflake did not say: both readings must agree
            one = self._decide(name, declared, target, *self._session(primary, granted, True))
            two = self._decide(name, declared, target, *self._session(primary, granted, False))
            if one.decision != two.decision:
                return Decision.unknown(
                    f"whether {name} may {action} depends on secondary roles, and Snowflake "
                    "did not say the user's DEFAULT_SECONDARY_ROLES"
                )
            return one
        return self._decide(name, declared, target, *self._session(primary, granted, secondary))

    def _session(
        self, primary: str, granted: set[_Node], secondary: bool
    ) -> tuple[list[set[_Node]], set[_Node]]:
        first: set[_Node] = {("ROLE", (primary,)), ("ROLE", (PUBLIC,))}
        return [first], (first | granted) if secondary else first

    def _decide(
        self,
        name: str,
        action: Action,
        target: tuple[str, ...],
        creators: list[set[_Node]],
        active: set[_Node],
    ) -> Decision:
        """Whether ``active`` roles hold what ``action`` needs on ``target``; a CREATE
        privilege must be held by one of the role sets in ``creators``."""
        held = self._closure(active)
        kind, terms = str(action.terms["kind"]), action.terms
        needs: list[tuple[frozenset[str], tuple[str, ...], str]] = []
        if kind in ("schema", "table"):
            needs += [(frozenset({"DATABASE"}), target[:1], "USAGE")]
            if kind == "table":
                needs += [(frozenset({"SCHEMA"}), target[:2], "USAGE")]
        kinds = {
            "table": _TABLES,
            "schema": frozenset({"SCHEMA"}),
            "database": frozenset({"DATABASE"}),
            "warehouse": frozenset({"WAREHOUSE"}),
            "account": frozenset({"ACCOUNT"}),
        }[kind]
        if "database_role" in terms:
            needs.append((frozenset({"DATABASE ROLE"}), tuple(terms["database_role"]), "USAGE"))
        else:
            needs.append((kinds, target, str(terms["privilege"])))
        imported = ("DATABASE", target[:1]) in held and _IMPORTED in held[("DATABASE", target[:1])]
        for i, (types, names_, privilege) in enumerate(needs):
            last = i == len(needs) - 1
            pool = [self._closure(c) for c in creators] if last and terms.get("create") else [held]
            if imported and kind != "account" and privilege in _READS and kind != "warehouse":
                continue  # a shared database's IMPORTED PRIVILEGES hold the reads inside it
            if not any(_holds(p, types, names_, privilege) for p in pool):
                noun = sorted(types)[0].lower() if len(types) == 1 else "table or view"
                what = f"{noun} {'.'.join(names_)}" if names_ else "the account"
                by = " by the primary role" if last and terms.get("create") else ""
                return Decision.deny(
                    f"Snowflake does not grant {name} {privilege} on {what}{by} "
                    f"(roles {', '.join(sorted(r[1][-1] for r in creators[0] | active))})"
                )
        got = ", ".join(f"{p} on {'.'.join(n) or 'the account'}" for _, n, p in needs)
        return Decision.allow(f"Snowflake grants {name} {got}")

    def _user_roles(self, name: str) -> set[_Node]:
        rows = self._kept_read(f"/api/v2/users/{_path(name)}/grants", f"read the grants of {name}")
        if not isinstance(rows, list):
            raise LookupFailed(f"snowflake's grants of {name} are not a list")
        return {edge for row in rows for edge in _edges(row)}

    def _closure(self, roles: Iterable[_Node]) -> dict[_Node, set[str]]:
        """Every privilege the roles hold, through the roles granted to them (PUBLIC too)."""
        held: dict[_Node, set[str]] = {}
        todo = [*roles, ("ROLE", (PUBLIC,))]
        seen: set[_Node] = set()
        while todo:
            role = todo.pop()
            if role in seen:
                continue
            seen.add(role)
            if len(seen) > _MAX_ROLES:
                raise LookupFailed(f"snowflake: more than {_MAX_ROLES} roles to read")
            held.setdefault(role, set()).add("USAGE")
            for row in self._role_grants(role):
                edges = _edges(row)
                todo.extend(edges)
                key = _securable(row)
                if key is not None and not edges:
                    held.setdefault(key, set()).update(_privileges(row))
        return held

    def _role_grants(self, role: _Node) -> list[dict[str, Any]]:
        kind, parts = role
        if kind == "ROLE":
            path = f"/api/v2/roles/{_path(parts[0])}/grants"
        else:
            db, name = parts
            path = f"/api/v2/databases/{_path(db)}/database-roles/{_path(name)}/grants"
        rows = self._kept_read(path, f"read the grants to {kind.lower()} {'.'.join(parts)}")
        if rows is None:
            return []  # a role dropped since it was granted holds nothing
        if not isinstance(rows, list):
            raise LookupFailed(f"snowflake's grants to {'.'.join(parts)} are not a list")
        return [r for r in rows if isinstance(r, dict)]

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        page = self._read(
            "/api/v2/users", "list the users", params={"showLimit": "10"}, absent=False
        )
        if not isinstance(page, list) or not page:
            return ProbeResult(
                False,
                f"signed in to {self.config.url}, but the engine's role sees no user: it "
                "needs MANAGE GRANTS on the account",
            )
        self._read(f"/api/v2/roles/{PUBLIC}/grants", "read the grants to PUBLIC")
        return ProbeResult(True, f"signed in to {self.config.url}; users and grants readable")


def canonical(value: str) -> str:
    """An identifier as Snowflake stores it: quoted exact (``""`` is ``"``), unquoted
    upper-case; anything else (a name as stored) as it is."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('""', '"')
    return value.upper() if _PLAIN.fullmatch(value) else value


def names(ref: str, kind: str) -> tuple[str, ...] | None:
    """``ref`` (``DB.SCHEMA.TABLE``, quoted parts allowed) as its stored parts, or None."""
    pattern = _DOTTED.get(kind)
    if pattern is None or not pattern.fullmatch(ref):
        return None
    return tuple(canonical(m.group(0)) for m in _SPLIT.finditer(ref))


def _path(name: str) -> str:
    """A stored name as an identifier in a URL path."""
    ident = name if _UPPER.fullmatch(name) else '"' + name.replace('"', '""') + '"'
    return quote(ident, safe="")


def _fingerprint(pem: str) -> str:
    try:
        from cryptography.hazmat.primitives import serialization
    except ImportError:
        raise ConfigError(
            "key-pair auth needs the crypto extra: pip install 'toolpass-core[crypto]'"
        ) from None
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        raise ConfigError("the private key is not an unencrypted PEM private key") from None
    der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def _next_link(header: str | None) -> str | None:
    for part in (header or "").split(","):
        m = re.fullmatch(r'\s*<([^>]*)>\s*;\s*rel="?next"?\s*', part)
        if m:
            if not re.fullmatch(r"/api/v2/results/[A-Za-z0-9_-]+\?page=\d+", m.group(1)):
                raise LookupFailed("snowflake's next page is not one of its result pages")
            return m.group(1)
    return None


def _refused_state(info: Mapping[str, Any]) -> str | None:
    """Why Snowflake refuses the user whatever their grants (disabled, locked by Snowflake or
    after failed logins, expired), or None; :class:`LookupFailed` for a value of another
    shape than the user's documented one."""
    now = datetime.now(timezone.utc)
    unlock, until = _number(info, "mins_to_unlock"), _when(info, "locked_until")
    days, expires = _number(info, "days_to_expiry"), _when(info, "expires_at")
    if _flag(info, "disabled"):
        return "is disabled"
    if _flag(info, "snowflake_lock"):
        return "is locked by Snowflake"
    if (unlock is not None and unlock > 0) or (until is not None and until > now):
        return "is locked after failed logins (MINS_TO_UNLOCK)"
    if (days is not None and days <= 0) or (expires is not None and expires <= now):
        return "has expired (DAYS_TO_EXPIRY)"
    return None


def _flag(info: Mapping[str, Any], key: str) -> bool:
    value = info.get(key)
    if value in (None, "", False) or str(value).lower() == "false":
        return False
    if value is True or str(value).lower() == "true":
        return True
    raise LookupFailed(f"snowflake's user has a {key} that is not true or false")


def _number(info: Mapping[str, Any], key: str) -> float | None:
    value = info.get(key)
    if value is None or value == "" or str(value).lower() == "null":
        return None
    try:
        if isinstance(value, bool):
            raise ValueError(key)
        number = float(value)
    except (TypeError, ValueError):
        raise LookupFailed(f"snowflake's user has a {key} that is not a number") from None
    if number != number:  # NaN
        raise LookupFailed(f"snowflake's user has a {key} that is not a number")
    return number


def _when(info: Mapping[str, Any], key: str) -> datetime | None:
    value = info.get(key)
    if value is None or value == "":
        return None
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        raise LookupFailed(f"snowflake's user has a {key} that is not a time") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _secondary(value: Any) -> bool | None:
    """DEFAULT_SECONDARY_ROLES: ``('ALL')``, ``["ALL"]`` or ``ALL`` is on; None when unsaid."""
    if value is None:
        return None
    text = re.sub(r"[\s()\[\]'\"]", "", str(value)).upper()
    return text == "ALL"


def _kind(row: Mapping[str, Any]) -> str:
    value = row.get("securable_type")
    return str(value).upper().replace("_", " ").strip() if isinstance(value, str) else ""


def _securable(row: Mapping[str, Any]) -> _Node | None:
    """The securable a grant row names, as ``(KIND, stored name parts)``: ``securable``'s
    ``database``, ``schema`` and ``name`` that are set (a database named twice, or by
    ``database`` alone, is one part)."""
    kind, found = _kind(row), row.get("securable")
    if kind == "ACCOUNT":
        return ("ACCOUNT", ())
    if not kind or not isinstance(found, dict):
        return None
    given = [found.get(k) for k in ("database", "schema", "name")]
    parts = tuple(canonical(p) for p in given if isinstance(p, str) and p)
    if kind in _ONE_PART and len(set(parts)) == 1:
        parts = parts[:1]
    return (kind, parts) if parts else None


def _privileges(row: Mapping[str, Any]) -> set[str]:
    got = row.get("privileges")
    return {p.upper() for p in got if isinstance(p, str)} if isinstance(got, list) else set()


def _edges(row: Mapping[str, Any]) -> list[_Node]:
    """The role a grant row makes its grantee hold: a role or database role granted with no
    privilege named (as the REST API lists a role granted to a user) or with USAGE; a row
    naming only OWNERSHIP of a role is a privilege on it, not a grant of it."""
    key = _securable(row)
    privileges = _privileges(row)
    if key is None or (privileges and "USAGE" not in privileges):
        return []
    depth = {"ROLE": 1, "DATABASE ROLE": 2}.get(key[0])
    return [key] if depth is not None and len(key[1]) == depth else []


def _holds(
    held: Mapping[_Node, set[str]],
    types: frozenset[str],
    parts: tuple[str, ...],
    privilege: str,
) -> bool:
    for kind in types:
        got = held.get((kind, parts), set())
        if privilege in got or "OWNERSHIP" in got:
            return True
    return False


INTEGRATION = Snowflake
