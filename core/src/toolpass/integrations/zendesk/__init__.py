"""Zendesk Support: a user's role, ticket restriction and custom role, and the ticket itself,
read live and evaluated.

Zendesk has no "may this user do this" question for another user, so the check reads the
documented model from live data:

- the user (``GET /api/v2/users/{id}``): ``active`` and ``suspended`` (else denied), ``role``
  (``end-user``, ``agent``, ``admin``), ``ticket_restriction`` (which tickets Zendesk lets
  them see: none for all, ``groups``, ``organization``, ``assigned``, ``requested``; Zendesk
  derives it from the role or custom role), ``custom_role_id``, ``organization_id`` and
  ``only_private_comments``; their groups (``GET /api/v2/users/{id}/group_memberships``);
- their custom role's ``configuration`` (``GET /api/v2/custom_roles``, which agents may
  read; showing one role needs ``manage_roles``): ``ticket_access``, ``ticket_editing``,
  ``ticket_merge``, ``ticket_deletion``, ``ticket_comment_access``,
  ``end_user_profile_access``;
- the ticket (``GET /api/v2/tickets/{id}``): requester, CCs, followers, assignee, group and
  organization, and its ``status`` (a closed ticket takes no edit, public comment or merge,
  whoever asks); a group's ``is_public`` when the custom role sees public groups; the account
  setting ``tickets.agent_ticket_deletion`` for agents without a custom role.

Users are Zendesk user ids. The look-up ``email`` is ``GET /api/v2/users/search?query=
email:...`` compared exactly; an active, unsuspended account is preferred.

Authentication of the engine (``auth``): ``token`` (an agent's email and API token, HTTP
basic ``{email}/token:{api_token}``) or ``bearer`` (an OAuth access token).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from toolpass.integrations._kit import Cache, UserIds, asked, declared, paged, ttl_key
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Integration,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import AMBIGUOUS, UNREADABLE, Match, Request, Route
from toolpass.wire.errors import ConfigError

__all__ = ["Zendesk"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
_ID = re.compile(r"[1-9][0-9]{0,19}")
_UPDATE = "/api/v2/tickets/{ticket_id}"
_PUBLIC = Route("PUT", _UPDATE, "ticket.comment_public", "ticket:{ticket_id}", "write", False, True)
_PROFILE = "/api/v2/users/{user_id}"
_ADMIN = Route("PUT", _PROFILE, "account.admin", "account", "write")
_CREATE = "/api/v2/users"
_CREATE_OR_UPDATE = "/api/v2/users/create_or_update"
#: User fields only an administrator may change (a profile update setting one administers),
#: and those a user may change on their own account (any other needs an agent or admin).
_PRIVILEGED = frozenset(declared(__name__, "admin_fields"))
_OWN = frozenset(declared(__name__, "own_fields"))
_RESTRICTED = Route("PUT", _PROFILE, "user.manage_restricted", "user:{user_id}", "write")
_PROFILE_EDIT = ("edit", "full")
CREDENTIAL = (
    "Least privilege: an API token (Admin Center > Apps and integrations > Zendesk API > "
    "API tokens) used with the email of an agent who sees every ticket (no ticket "
    "restriction), ideally a custom role limited to viewing tickets and users; reading "
    "custom roles and account settings is allowed for agents. Or an OAuth access token with "
    "the read scope (auth bearer)."
)


USER_IDS = UserIds(_ID, "a Zendesk user id")


class Zendesk(Integration):
    """Zendesk Support, through users, custom roles, group memberships and tickets."""

    name = "zendesk"
    description = (
        "Zendesk Support: the user's role, ticket_restriction, custom role configuration and "
        "groups, and the ticket's requester, CCs, assignee, group and organization, read live "
        "and evaluated (Zendesk has no check for another user). " + CREDENTIAL
    )
    default_url = None  # https://<subdomain>.zendesk.com
    identity_modes = ("email",)
    keys = (
        ConfigKey(
            "auth",
            "How the engine signs in: token (email + api_token, HTTP basic "
            "{email}/token:{api_token}) or bearer (an OAuth access token). The url is "
            "https://<subdomain>.zendesk.com.",
            default="token",
            choices=("token", "bearer"),
            needs={"token": ("email", "api_token"), "bearer": ("access_token",)},
        ),
        ConfigKey("email", "The email of the agent whose API token is used (auth token)."),
        ConfigKey("api_token", "A Zendesk API token (auth token).", secret=True),
        ConfigKey("access_token", "An OAuth access token (auth bearer).", secret=True),
        ttl_key("user", "a user's role, restriction and groups", 300.0),
        ttl_key("role", "custom roles and account settings", 3600.0),
        ttl_key("ticket", "a ticket's requester, assignee, group and organization", 30.0),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._users: Cache[str, tuple[dict[str, Any], frozenset[int]]] = Cache.option(
            self, "user_cache_ttl"
        )
        self._tickets: Cache[str, dict[str, Any]] = Cache.option(self, "ticket_cache_ttl")
        self._roles: Cache[str, dict[Any, Any]] = Cache.option(self, "role_cache_ttl", 1)
        self._agents_deleting: Cache[str, bool] = Cache.option(self, "role_cache_ttl", 1)

    def auth_headers(self) -> Mapping[str, str]:
        if self.options.get("auth", "token") == "bearer":
            return {"Authorization": f"Bearer {self.secret('access_token')}"}
        pair = f"{self.options['email']}/token:{self.secret('api_token')}"
        return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}

    def secret_values(self) -> Any:
        yield from super().secret_values()
        if self.options.get("auth", "token") == "token":
            try:  # the basic credential as sent, which an echo may carry
                yield self.auth_headers()["Authorization"].removeprefix("Basic ")
            except ConfigError:
                return

    def error_detail(self, data: Any) -> str | None:
        """Zendesk's ``{"error": "...", "description": "..."}``, ``{"error": {"title",
        "message"}}`` or ``{"errors": [...]}``."""
        if not isinstance(data, dict):
            return None
        error: Any = data.get("error")
        said: Any = data.get("description")
        if isinstance(error, dict):
            error, said = error.get("title"), error.get("message")
        errors = data.get("errors")
        if error is None and isinstance(errors, list) and errors:
            first = errors[0]
            error = first.get("title") or first.get("code") if isinstance(first, dict) else first
            said = first.get("detail") if isinstance(first, dict) else None
        parts = [str(p) for p in (error, said) if isinstance(p, str) and p]
        return ": ".join(parts) or super().error_detail(data)

    def match_request(self, request: Request) -> Match | None:
        """The table's route (a ``.json`` suffix, as Zenpy sends, is dropped); a ticket
        update carrying a comment that is not ``"public": false`` adds a public comment; a
        profile update setting a role, restriction or suspension administers the account, one
        setting any field but those a user may change on their own (name, alias, signature,
        photo, locale, time zone) is ``user.manage_restricted``; a profile or ticket update
        with anything beside its ``user`` or ``ticket`` object (other fields, a query string,
        a form's ``ticket[comment][public]``) is unresolved; a user created with a role or
        another admin's field, or created-or-updated, administers the account."""
        if request.path.endswith(".json"):
            request = Request(
                request.method,
                request.path[: -len(".json")],
                request.query_string,
                request.headers,
                request.body,
                request.host,
            )
        found = self.route_table().match(request)
        if found is not None and found.route.path in (_CREATE, _CREATE_OR_UPDATE):
            return _new_user(found, request)
        if (
            found is None
            or found.route.method != "PUT"
            or found.route.path
            not in (
                _UPDATE,
                _PROFILE,
            )
        ):
            return found
        form = request.form
        key = "ticket" if found.route.path == _UPDATE else "user"
        data = form.get(key) if form is not UNREADABLE else AMBIGUOUS
        if data is AMBIGUOUS:
            return Match(found.route, found.params, None)
        if key == "user":
            return _profile(found, request, data)
        if set(form) - {"ticket"} or request.query_string:
            return Match(found.route, found.params, None)  # Zendesk may read more than we do
        comment = data.get("comment") if isinstance(data, dict) else None
        if comment is None:
            return found
        if isinstance(comment, dict) and comment.get("public") is False:
            return found
        return Match(_PUBLIC, found.params, found.resource)

    # --- identity ------------------------------------------------------------------------
    def lookup_email(self, email: str) -> list[str]:
        what = "find the user by email"
        data = self.get_json("/api/v2/users/search", what=what, params={"query": f"email:{email}"})
        users = data.get("users")
        if not isinstance(users, list):
            raise LookupFailed(f"zendesk's answer to {what} has no users")
        found = [
            (str(u["id"]), u.get("active") is not False and not u.get("suspended"))
            for u in users
            if isinstance(u, dict)
            and isinstance(u.get("id"), int)
            and str(u.get("email") or "").lower() == email.lower()
        ]
        return [uid for uid, ok in found if ok] or [uid for uid, _ in found]

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        got = asked(self, action, resource, user, USER_IDS)
        if isinstance(got, Decision):
            return got
        terms, rid, uid = got.action, got.on.id, got.uid
        scope = str(terms.terms.get("scope"))
        me, groups = self._user(uid)
        who = f"Zendesk user {uid} ({me.get('role')})"
        if me.get("active") is False or me.get("suspended") is True:
            return Decision.deny(f"Zendesk user {uid} is suspended or deleted")
        role = me.get("role")
        admin, agent = role == "admin", role in ("agent", "admin")
        role_id = me.get("custom_role_id")
        cfg = self._custom_role(role_id) if agent and not admin and role_id else None
        needs = terms.terms.get("needs")
        if needs == "every_ticket":
            restricted = me.get("ticket_restriction")
            return _said(
                admin or (agent and restricted is None),
                f"{who} sees every ticket",
                f"{who} does not see every ticket (ticket_restriction {restricted!r}): search "
                "or list within what they may see, or open tickets by id",
            )
        if scope == "account":
            if needs == "active" or admin or (agent and needs == "agent"):
                return Decision.allow(f"{who} may {action}")
            return Decision.deny(f"{who} may not {action}")
        if scope == "user":
            return self._on_user(uid, me, cfg, terms, rid, who)
        ticket = self._ticket(rid)
        own = int(uid) == ticket.get("requester_id") or int(uid) in _ids(
            ticket, "collaborator_ids", "email_cc_ids"
        )
        followed = int(uid) in _ids(ticket, "follower_ids")
        if not (admin or own or followed or (agent and self._sees(uid, me, cfg, groups, ticket))):
            return Decision.deny(f"ticket {rid} is not visible to {who}")
        if needs == "visible":
            return Decision.allow(f"ticket {rid} is visible to {who}")
        if terms.terms.get("open") and _closed(ticket):
            return Decision.deny(
                f"ticket {rid} is closed: Zendesk takes no change, public comment or merge on "
                "a closed ticket, whoever asks (a follow-up ticket can be created instead)"
            )
        if not agent:
            if terms.terms.get("requester") and own:
                return Decision.allow(f"{who} is the requester or a CC of ticket {rid}")
            return Decision.deny(f"{who} may only view and comment on their own tickets")
        edits = admin or cfg is None or cfg.get("ticket_editing") is True
        if needs == "ticket_editing":
            return _said(edits, f"{who} may edit tickets", f"{who}'s role lacks ticket_editing")
        if needs == "public_comment":
            private = me.get("only_private_comments") is True or (
                cfg is not None and cfg.get("ticket_comment_access") != "public"
            )
            if not edits:
                return Decision.deny(f"{who}'s role lacks ticket_editing")
            return _said(
                not private, f"{who} may comment publicly", f"{who} may only comment privately"
            )
        if needs == "ticket_merge":
            merges = admin or cfg is None or cfg.get("ticket_merge") is True
            return _said(merges, f"{who} may merge tickets", f"{who}'s role lacks ticket_merge")
        if needs != "ticket_deletion":
            return Decision.unknown(f"zendesk cannot evaluate {action}", cause="resource")
        if admin:
            return Decision.allow(f"{who} may delete tickets")
        if cfg is not None:
            deletes = cfg.get("ticket_deletion") is True
            return _said(
                deletes, f"{who}'s role has ticket_deletion", f"{who}'s role lacks ticket_deletion"
            )
        deletes = self._agents_delete()
        return _said(
            deletes,
            "the account lets agents delete tickets",
            "the account does not let agents delete tickets",
        )

    def _on_user(
        self,
        uid: str,
        me: dict[str, Any],
        cfg: dict[str, Any] | None,
        terms: Action,
        rid: str,
        who: str,
    ) -> Decision:
        role, action, needs = me.get("role"), terms.name, terms.terms.get("needs")
        if role == "admin" or (rid == uid and terms.terms.get("themself")):
            return Decision.allow(f"{who} may {action} user {rid}")
        if role != "agent" and rid == uid:
            return Decision.deny(f"{who} may not {action} on their own account (admins may)")
        if role != "agent":
            return Decision.deny(f"{who} may {action} only themself")
        if needs == "agent":
            return Decision.allow(f"{who} may view users")
        target, _ = self._user(rid)
        if target.get("role") != "end-user":
            return Decision.deny(f"user {rid} is not an end user: only admins change them")
        access = None if cfg is None else cfg.get("end_user_profile_access")
        if needs == "profile_full":
            return _said(
                access == "full",
                f"{who}'s role has full end-user access",
                f"{who}'s role does not let them delete end users",
            )
        same_org = target.get("organization_id") is not None and target.get(
            "organization_id"
        ) == me.get("organization_id")
        if needs != "profile_edit":
            return Decision.unknown(f"zendesk cannot evaluate {action}", cause="resource")
        ok = cfg is None or access in _PROFILE_EDIT or (access == "edit-within-org" and same_org)
        return _said(
            ok,
            f"{who} may edit end user {rid}",
            f"{who}'s role does not let them edit end user {rid}",
        )

    def _sees(
        self,
        uid: str,
        me: dict[str, Any],
        cfg: dict[str, Any] | None,
        groups: frozenset[int],
        ticket: dict[str, Any],
    ) -> bool:
        """Whether an agent's ticket_restriction lets them see the ticket."""
        restriction = me.get("ticket_restriction")
        assigned = ticket.get("assignee_id") == int(uid)
        if restriction is None:
            return True
        if restriction == "assigned":
            return assigned
        if restriction == "requested":
            return False
        if restriction == "organization":
            org = ticket.get("organization_id")
            return org is not None and org == me.get("organization_id")
        if restriction != "groups":
            raise LookupFailed(f"zendesk gave the unknown ticket_restriction {restriction!r}")
        group = ticket.get("group_id")
        if assigned or group in groups:
            return True
        if (
            group is None
            or cfg is None
            or cfg.get("ticket_access") != "within-groups-and-public-groups"
        ):
            return False
        found = self.get_json(f"/api/v2/groups/{int(group)}", what=f"read group {group}")
        return (found.get("group") or {}).get("is_public") is True

    # --- reads ---------------------------------------------------------------------------
    def _user(self, uid: str) -> tuple[dict[str, Any], frozenset[int]]:
        """The user and the ids of their groups (agents only)."""
        return self._users.get(uid, lambda: self._read_user(uid))

    def _read_user(self, uid: str) -> tuple[dict[str, Any], frozenset[int]]:
        data = self.get_json(f"/api/v2/users/{uid}", what=f"read user {uid}")
        me = data.get("user")
        if not isinstance(me, dict) or "role" not in me:
            raise LookupFailed(f"zendesk's answer to read user {uid} has no user")
        groups: set[int] = set()
        if me.get("role") == "agent" and me.get("ticket_restriction") == "groups":
            what = f"read user {uid}'s group memberships"
            for m in self._list(
                f"/api/v2/users/{uid}/group_memberships", "group_memberships", what
            ):
                if not isinstance(m.get("group_id"), int):
                    raise LookupFailed(f"zendesk's answer to {what} has a malformed membership")
                groups.add(m["group_id"])
        return me, frozenset(groups)

    def _list(self, path: str, key: str, what: str) -> list[dict[str, Any]]:
        """Every item of an offset-paged list (``next_page`` URLs on the connection's host)."""
        return list(
            paged(
                self,
                path,
                what=what,
                items=key,
                style="next_url",
                each=dict,
                params={"per_page": "100"},
                pages=50,
                too_many=f"zendesk has too many {key} to {what}",
                next_at="next_page",
            )
        )

    def _custom_role(self, role_id: Any) -> dict[str, Any]:
        def read() -> dict[Any, Any]:
            roles = self._list("/api/v2/custom_roles", "custom_roles", "list custom roles")
            return {r.get("id"): r.get("configuration") for r in roles}

        cfg = self._roles.get("", read).get(role_id)
        if not isinstance(cfg, dict):
            raise LookupFailed(f"zendesk has no custom role {role_id} with a configuration")
        return cfg

    def _agents_delete(self) -> bool:
        def read() -> bool:
            what = "read the account settings"
            settings = self.get_json("/api/v2/account/settings", what=what).get("settings")
            tickets = settings.get("tickets") if isinstance(settings, dict) else None
            if not isinstance(tickets, dict):
                raise LookupFailed(f"zendesk's answer to {what} has no ticket settings")
            return tickets.get("agent_ticket_deletion") is True

        return self._agents_deleting.get("", read)

    def _ticket(self, rid: str) -> dict[str, Any]:
        return self._tickets.get(rid, lambda: self._read_ticket(rid))

    def _read_ticket(self, rid: str) -> dict[str, Any]:
        ticket = self.get_json(f"/api/v2/tickets/{rid}", what=f"read ticket {rid}").get("ticket")
        if not isinstance(ticket, dict) or ticket.get("id") != int(rid):
            raise LookupFailed(f"zendesk's answer to read ticket {rid} has no ticket")
        return ticket

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        me = self.get_json("/api/v2/users/me", what="read the engine's own user").get("user")
        if not isinstance(me, dict) or not isinstance(me.get("id"), int):
            return ProbeResult(False, "zendesk answered as an anonymous user: check the credential")
        if me.get("role") not in ("agent", "admin"):
            return ProbeResult(
                False, f"the engine's Zendesk user is a {me.get('role')}, not an agent"
            )
        limited = me.get("ticket_restriction")
        if limited is not None:
            return ProbeResult(False, f"the engine's Zendesk agent sees only {limited} tickets")
        return ProbeResult(
            True, f"the engine reads {self.config.url} as {me.get('role')} {me['id']}"
        )


def _closed(ticket: Mapping[str, Any]) -> bool:
    """Whether the ticket is closed (``LookupFailed`` when its status cannot be read)."""
    status = ticket.get("status")
    if not isinstance(status, str):
        raise LookupFailed(f"zendesk's ticket {ticket.get('id')} has no status")
    return status == "closed"


def _ids(ticket: Mapping[str, Any], *keys: str) -> set[int]:
    return {i for k in keys for i in (ticket.get(k) or ()) if isinstance(i, int)}


def _said(ok: bool, yes: str, no: str) -> Decision:
    return Decision.allow(yes) if ok else Decision.deny(no)


def _profile(found: Match, request: Request, data: Any) -> Match:
    """A profile update (``PUT /api/v2/users/{id}``) by the fields it sets: an admin's
    (role, restriction, ...), the user's own (name, locale, ...) or restricted."""
    if not isinstance(data, dict) or set(request.form) != {"user"} or request.query_string:
        return Match(found.route, found.params, None)  # Zendesk may read more than we do
    fields = set(data) - ({"id"} if str(data.get("id")) == found.params.get("user_id") else set())
    if not _PRIVILEGED.isdisjoint(fields):
        return Match(_ADMIN, found.params, "account")
    if not fields <= _OWN:
        return Match(_RESTRICTED, found.params, found.resource)
    return found


def _new_user(found: Match, request: Request) -> Match:
    """A user created (``POST /api/v2/users``): an admin's when it gives them a role other
    than end user or another field only an admin sets. ``create_or_update`` changes the
    existing user its email or external id names, whoever that is: an admin's."""
    form = request.form
    data = form.get("user") if form is not UNREADABLE else None
    if not isinstance(data, dict) or set(form) != {"user"} or request.query_string:
        return Match(found.route, found.params, None)  # Zendesk may read more than we do
    privileged = _PRIVILEGED & set(data) - ({"role"} if data.get("role") == "end-user" else set())
    if found.route.path == _CREATE_OR_UPDATE or privileged:
        return Match(
            Route("POST", found.route.path, "account.admin", "account", "write"), {}, "account"
        )
    return found


INTEGRATION = Zendesk
