"""Salesforce: record access (sharing) and object permissions of a user, asked live with SOQL.

- record actions (``record:<SObject>/<Id>``): ``UserRecordAccess`` answers, for one user and
  record, ``HasReadAccess`` / ``HasEditAccess`` / ``HasDeleteAccess`` / ``HasTransferAccess``
  / ``HasAllAccess``, the sharing model's own verdict. Salesforce's documentation leaves open
  whether it folds in the object's CRUD, so the object permission is asked as well and both
  must hold. ``UserRecordAccess`` does not consider restriction rules: reads of objects
  named in ``restriction_rules`` are unknown when sharing allows them.
- object actions (``object:<SObject>``): ``ObjectPermissions`` of the permission sets
  (profiles included) assigned to the user, through ``PermissionSetAssignment``.
- ``org``: ``org.access`` (an active user), ``org.admin`` (Modify All Data).

The user is a User Id (``005...``), found by exact ``Email`` (``email``), ``Username``
(``username``) or ``FederationIdentifier`` (``federation``); an inactive user
(``User.IsActive``) is denied, and with ``frozen_users`` a frozen one (``UserLogin.IsFrozen``,
which needs Manage Users on the engine's user; unknown when it cannot be read).

The engine's user needs API Enabled and View Setup and Configuration (to read permission set
assignments); keep its credential away from the agent. Authentication (``auth``): ``token``
(an access token given as a secret) or ``client_credentials`` (a connected app's OAuth 2.0
client credentials flow at ``<url>/services/oauth2/token``, run as its integration user; the
token is refreshed once when Salesforce rejects it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from toolpass.integrations._kit import IssuedToken, UserIds, asked, paged, token_from
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Integration,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import Match, Request, Route
from toolpass.wire.errors import ConfigError
from toolpass.wire.identity import same_email

__all__ = ["Salesforce", "soql_object"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
_USER_ID = re.compile(r"005[A-Za-z0-9]{12}(?:[A-Za-z0-9]{3})?")
_SOBJECT = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,79}")  # an object's API name
_VERSION = re.compile(r"[0-9]{2}\.[0-9]")
_PAGES = 20
_FROM = re.compile(r"\bFROM\s+([A-Za-z][A-Za-z0-9_]*)", re.I)
_NESTED = re.compile(r"\(\s*SELECT\b|\bTYPEOF\b", re.I)
_QUERY = re.compile(r"/services/data/v[0-9]{2}\.[0-9]/(query|queryAll)/?")


def soql_object(soql: str) -> str | None:
    """The one object a SOQL query reads, when it reads exactly one: a single ``FROM`` and no
    subquery or ``TYPEOF`` (which read other objects); None otherwise."""
    if _NESTED.search(soql):
        return None
    found = _FROM.findall(soql)
    return found[0] if len(found) == 1 else None


def _quote(text: str) -> str:
    """A SOQL string literal."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return "'" + escaped.replace("\n", "\\n").replace("\r", "\\r") + "'"


USER_IDS = UserIds(_USER_ID, "a User Id")


class Salesforce(Integration):
    """Salesforce, through UserRecordAccess and ObjectPermissions queried for the user."""

    name = "salesforce"
    description = (
        "Salesforce: record access (UserRecordAccess) and object permissions "
        "(ObjectPermissions of the user's permission sets), asked live with SOQL. "
        "Credential: a dedicated integration user (Salesforce Integration license, profile "
        "Minimum Access - API Only Integrations) with a permission set granting API Enabled "
        "and View Setup and Configuration, nothing else; sign in with an External Client "
        "App (Setup > External Client App Manager, Enable Client Credentials Flow, run as "
        "that user; auth client_credentials) or give its access token (auth token)."
    )
    default_url = None
    identity_modes = ("email", "username", "federation")
    keys = (
        ConfigKey(
            "auth",
            "How the engine signs in: token (an OAuth access token or session id) or "
            "client_credentials (an External Client App's or connected app's client "
            "credentials flow at "
            "<url>/services/oauth2/token, run as its integration user).",
            default="token",
            choices=("token", "client_credentials"),
            needs={
                "token": ("access_token",),
                "client_credentials": ("client_id", "client_secret"),
            },
        ),
        ConfigKey("access_token", "The engine's access token (auth token).", secret=True),
        ConfigKey("client_id", "The client app's consumer key (auth client_credentials)."),
        ConfigKey(
            "client_secret",
            "The client app's consumer secret (auth client_credentials).",
            secret=True,
        ),
        ConfigKey("api_version", "The REST API version asked, e.g. 62.0.", default="62.0"),
        ConfigKey(
            "not_found",
            "What a record UserRecordAccess does not list means (it does not exist, or the "
            "engine cannot see it): unknown (the default) or deny.",
            default="unknown",
            choices=("unknown", "deny"),
        ),
        ConfigKey(
            "frozen_users",
            "Read whether the user is frozen (UserLogin.IsFrozen; a frozen user cannot sign "
            "in, whatever their permissions). Reading UserLogin needs Manage Users on the "
            "engine's user: when on and it cannot be read, the check is unknown.",
            default=False,
        ),
        ConfigKey(
            "restriction_rules",
            "Objects with restriction rules, which UserRecordAccess does not consider: a "
            "read of their records that sharing allows is unknown.",
            default=(),
            type="list",
        ),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._issued = IssuedToken(self, self._client_credentials)

    # --- configuration -----------------------------------------------------------------
    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        if not _VERSION.fullmatch(str(options.get("api_version", "62.0"))):
            raise ConfigError("must be an API version such as 62.0", "api_version")
        rules = options.get("restriction_rules", [])
        if not isinstance(rules, (list, tuple)) or not all(
            isinstance(r, str) and _SOBJECT.fullmatch(r) for r in rules
        ):
            raise ConfigError("must be a list of object API names", "restriction_rules")

    # --- the request hook --------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The table's route; a SOQL query (``/query?q=``) reads the one object it names:
        it answers every record the agent's credential sees, so it is ``object.view_all``
        (View All Records) on ``object:<SObject>``; any other query stays ``org.admin``."""
        found = self.route_table().match(request)
        if found is None or not _QUERY.fullmatch(request.path.split("?")[0]):
            return found
        values = request.query.get("q") or []
        sobject = soql_object(values[0]) if len(set(values)) == 1 else None
        if sobject is None or not _SOBJECT.fullmatch(sobject):
            return found
        route = found.route
        narrowed = Route(
            route.method, route.path, "object.view_all", "object:{q}", "read", True, False, False
        )
        return Match(narrowed, found.params, f"object:{sobject}")

    # --- requests ----------------------------------------------------------------------
    @property
    def _data(self) -> str:
        return f"/services/data/v{self.options.get('api_version', '62.0')}"

    def _access_token(self) -> str:
        if self.options.get("auth", "token") == "token":
            return self.secret("access_token")
        return self._issued.get()

    def _client_credentials(self) -> tuple[str, float]:
        form = {
            "grant_type": "client_credentials",
            "client_id": str(self.options["client_id"]),
            "client_secret": self.secret("client_secret"),
        }
        return token_from(self, "/services/oauth2/token", form, who="salesforce's token endpoint")

    def _get(self, path: str, what: str, params: Mapping[str, str] | None = None) -> Any:
        """A GET with the engine's token; a client-credentials token rejected once is
        replaced once."""
        for attempt in (1, 2):
            token = self._access_token()
            headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
            answer = self.answer("GET", path, what=what, params=params, headers=headers)
            if answer.status == 401 and attempt == 1 and self.issued and self.issued[0] == token:
                self._issued.drop(token)
                continue
            if answer.status != 200:
                raise self.failure(answer, what)
            return self.parse(answer, what)
        raise AssertionError("unreachable")  # pragma: no cover

    def query(self, soql: str, what: str) -> list[dict[str, Any]]:
        """Every record a SOQL query answers, following ``nextRecordsUrl`` (bounded)."""
        records = paged(
            self,
            f"{self._data}/query",
            what=what,
            too_many=f"salesforce: {what}: too many pages",
            style="next_url",
            items="records",
            each=dict,
            params={"q": soql},
            pages=_PAGES,
            next_at="nextRecordsUrl",
            done_at="done",
            get=lambda url, what, params, absent: self._get(url, what, params),
        )
        return list(records)

    def error_detail(self, data: Any) -> str | None:
        """Salesforce's errors are a list of ``{"message", "errorCode"}``; OAuth's are
        ``error_description``."""
        if isinstance(data, list) and data and isinstance(data[0], dict):
            message, code = data[0].get("message"), data[0].get("errorCode")
            if isinstance(message, str) and message:
                return f"{code}: {message}" if isinstance(code, str) else message
        if isinstance(data, dict) and isinstance(data.get("error_description"), str):
            return str(data["error_description"])
        return super().error_detail(data)

    # --- identity ----------------------------------------------------------------------
    def _find(self, field: str, value: str) -> Sequence[str]:
        soql = f"SELECT Id, Email, Username, FederationIdentifier FROM User WHERE {field} = "  # noqa: S608 - SOQL; values quoted
        records = self.query(soql + _quote(value), f"find the user by {field}")
        found = []
        for record in records:
            ident, got = record.get("Id"), record.get(field)
            if not isinstance(ident, str) or not _USER_ID.fullmatch(ident):
                raise LookupFailed("salesforce's user answer holds a user without an Id")
            exact = same_email(got, value) if field != "FederationIdentifier" else got == value
            if isinstance(got, str) and exact:
                found.append(ident)
        if not found:
            raise LookupFailed(f"salesforce has no user whose {field} is {value}")
        return found

    def lookup_email(self, email: str) -> Sequence[str]:
        """Users whose ``Email`` is ``email`` (not unique in Salesforce: several is unknown)."""
        return self._find("Email", email)

    def lookup_username(self, email: str) -> Sequence[str]:
        """The user whose ``Username`` (unique across Salesforce) is ``email``."""
        return self._find("Username", email)

    def lookup_federation(self, email: str) -> Sequence[str]:
        """The user whose ``FederationIdentifier`` (the SAML subject) is ``email``."""
        return self._find("FederationIdentifier", email)

    def _active(self, user: str) -> bool:
        soql = f"SELECT Id, IsActive FROM User WHERE Id = {_quote(user)}"  # noqa: S608 - SOQL; values quoted
        records = self.query(soql, "read the user")
        if not records:
            raise LookupFailed(f"salesforce has no user {user}")
        active = records[0].get("IsActive")
        if not isinstance(active, bool):
            raise LookupFailed("salesforce's user answer has no IsActive")
        return active

    def _frozen(self, user: str) -> bool:
        """``UserLogin.IsFrozen`` of the user (``LookupFailed`` when it cannot be read)."""
        soql = f"SELECT UserId, IsFrozen FROM UserLogin WHERE UserId = {_quote(user)}"  # noqa: S608 - SOQL; values quoted
        records = self.query(soql, "read whether the user is frozen (UserLogin)")
        frozen = [r.get("IsFrozen") for r in records if r.get("UserId") == user]
        if len(frozen) != 1 or not isinstance(frozen[0], bool):
            raise LookupFailed(f"salesforce's UserLogin answer for {user} has no one IsFrozen")
        return frozen[0]

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        got = asked(self, action, resource, user, USER_IDS)
        if isinstance(got, Decision):
            return got
        declared, scope, uid = got.action, got.terms["scope"], got.uid
        sobject, _, record = got.on.id.partition("/")  # object:Account/ is Account
        if not self._active(uid):
            return Decision.deny(f"{user}'s Salesforce user {uid} is inactive")
        if self.options.get("frozen_users") and self._frozen(uid):
            return Decision.deny(f"{user}'s Salesforce user {uid} is frozen")
        if declared.terms.get("needs") == "active":
            return Decision.allow(f"{user}'s Salesforce user {uid} is active")
        assigned = (
            "(SELECT PermissionSetId FROM PermissionSetAssignment WHERE AssigneeId = "  # noqa: S608 - SOQL; values quoted
            f"{_quote(uid)})"
        )
        if declared.terms.get("needs") == "modify_all_data":
            soql = (
                "SELECT Id FROM PermissionSet WHERE PermissionsModifyAllData = true AND Id IN "  # noqa: S608 - SOQL; values quoted
                + assigned
            )
            if self.query(soql, "check Modify All Data"):
                return Decision.allow(f"Salesforce grants {uid} Modify All Data")
            return Decision.deny(f"Salesforce does not grant {uid} Modify All Data")
        if scope == "record":
            shared = self._record_access(uid, sobject, record, str(declared.terms["access"]))
            if isinstance(shared, Decision):
                return shared
        field = str(declared.terms["object"])
        soql = (
            f"SELECT ParentId, {field} FROM ObjectPermissions WHERE SobjectType = "  # noqa: S608 - SOQL; values quoted
            f"{_quote(sobject)} AND ParentId IN {assigned}"
        )
        rows = self.query(soql, f"read the user's permissions on {sobject}")
        if any(row.get(field) is True for row in rows):
            what = f"{field} on {sobject}"
            if scope == "record":
                return Decision.allow(f"Salesforce shares {sobject} {record} with {uid}, {what}")
            return Decision.allow(f"Salesforce grants {uid} {what}")
        return Decision.deny(f"Salesforce does not grant {uid} {field} on {sobject}")

    def _record_access(self, uid: str, sobject: str, record: str, field: str) -> Decision | None:
        """Deny or unknown from UserRecordAccess; None when sharing grants ``field``."""
        soql = (
            "SELECT RecordId, HasReadAccess, HasEditAccess, HasDeleteAccess, "  # noqa: S608 - SOQL; values quoted
            "HasTransferAccess, HasAllAccess, MaxAccessLevel FROM UserRecordAccess WHERE "
            f"UserId = {_quote(uid)} AND RecordId = {_quote(record)}"
        )
        rows = self.query(soql, "read the user's access to the record")
        row = next((r for r in rows if str(r.get("RecordId", ""))[:15] == record[:15]), None)
        if row is None:
            text = f"Salesforce lists no access to {sobject} {record} (missing or not visible)"
            if self.options.get("not_found") == "deny":
                return Decision.deny(text)
            return Decision.unknown(text)
        held = row.get(field)
        if not isinstance(held, bool):
            raise LookupFailed(f"salesforce's UserRecordAccess answer has no {field}")
        if not held:
            level = row.get("MaxAccessLevel")
            return Decision.deny(
                f"Salesforce's sharing gives {uid} {level or 'no'} access to {sobject} {record}, "
                f"not {field}"
            )
        if field == "HasReadAccess" and sobject in self.options.get("restriction_rules", []):
            return Decision.unknown(
                f"sharing lets {uid} read {sobject} {record}, but {sobject} has restriction "
                "rules, which UserRecordAccess does not consider"
            )
        return None

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        me = self._get("/services/oauth2/userinfo", "tell who the engine is")
        who, org = me.get("user_id"), me.get("organization_id")
        if not isinstance(who, str) or not isinstance(org, str):
            return ProbeResult(False, "salesforce's userinfo answer has no user_id")
        name = me.get("preferred_username") or who
        try:
            self.query("SELECT Id FROM PermissionSetAssignment LIMIT 1", "read assignments")
        except LookupFailed as e:
            return ProbeResult(
                False,
                f"signed in to org {org} as {name}, but cannot read permission set "
                f"assignments (needs View Setup and Configuration): {e}",
            )
        return ProbeResult(
            True, f"signed in to org {org} as {name}, reading permission set assignments"
        )


INTEGRATION = Salesforce
