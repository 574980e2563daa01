"""Slack: may a person act in a channel? Reconstructed from Slack's own data, failing closed.

Slack has no API that answers "may user U do X" for another user, so this integration
reconstructs the answer from what the engine's read-only token can see:

- identity: ``users.lookupByEmail`` (exact; ``users_not_found`` is no one), then
  ``users.info`` for the flags the rules use (``deleted``, ``is_restricted``,
  ``is_ultra_restricted``, ``is_admin``, ``is_owner``, ``is_primary_owner``, ``is_bot``,
  ``is_invited_user``, ``enterprise_user``);
- the channel: ``conversations.info`` (``is_private``, ``is_im``, ``is_mpim``,
  ``is_archived``, ``is_general``, ``is_read_only``, ``is_frozen``, ``is_ext_shared``);
- membership: ``conversations.members``, followed through ``response_metadata.next_cursor``
  until the user is found or the list ends;
- optionally (Enterprise Grid, ``posting_prefs: true``) who may post, from
  ``admin.conversations.getConversationPrefs`` with an org admin's token;
- for editing and deleting a message, its author from ``conversations.history``.

Every request is ``GET https://slack.com/api/<method>`` with the token as
``Authorization: Bearer``. Slack answers errors with HTTP 200 and ``{"ok": false, "error":
...}``; every such error, a 429 (``ratelimited``, with ``Retry-After``), any other status, a
body that is not the documented JSON, an email that maps to no one or several, and a channel
the engine's token cannot see (``channel_not_found``: it does not exist, or it is private and
the engine's bot is not in it) is ``unknown``, never ``deny``. Workspace policies the token
cannot read (who may post in #general, who may archive or rename channels, who may create
channels) are connection settings whose default, ``unknown``, refuses to guess.

Resources:

- ``channel:C0123ABCD`` (also ``G…`` private groups and ``D…`` direct messages); or
  ``channel:#name``, resolved by an exact, unique name in ``conversations.list`` (only when
  ``channel_names`` is on; several channels of that name, e.g. across Grid workspaces, or
  none visible, is unknown);
- ``message:C0123ABCD/1712345678.000100`` for message actions (and accepted wherever a
  channel is, meaning the message's channel);
- ``workspace`` or ``team:T0123ABCD`` for workspace actions (``conversations.create``,
  ``admin.users.*``).

The rule each action uses is in its ``requires`` text (``toolpass catalog slack``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from toolpass.integrations import _fields
from toolpass.integrations._kit import Cache, Target, asked, kinds_of, paged, target
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Integration,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import Match, Request, Route
from toolpass.integrations.slack._keys import KEYS, validate
from toolpass.integrations.slack._people import (
    admin,
    flag,
    in_workspace,
    is_admin,
    other_workspace,
    workspace_member,
)
from toolpass.wire.errors import BadResource, ConfigError, LookupFailed
from toolpass.wire.http import Response
from toolpass.wire.identity import same_email

__all__ = ["INTEGRATION", "Slack", "SlackError"]

_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,30}")
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,30}")
_ARGUMENT = re.compile(r"[a-z][a-z0-9_]{0,63}")

# what every check reads (users.lookupByEmail, users.info, conversations.info / .members)
_NEEDED_SCOPES = ("users:read", "users:read.email", "channels:read", "groups:read")
# what message actions read (conversations.history)
_MESSAGE_SCOPES = ("channels:history", "groups:history")

_AUTH_ERRORS = {
    "not_authed",
    "invalid_auth",
    "token_revoked",
    "token_expired",
    "account_inactive",
    "no_permission",
    "not_allowed_token_type",
    "ekm_access_denied",
}

# The kinds of rule an action uses; the rules are in Slack.check and the Action texts.
_READ = "read"
_POST = "post"
_MEMBER = "member"
_INVITE = "invite"
_JOIN = "join"
_LEAVE = "leave"
_MANAGE = "manage"
_ARCHIVE = "archive"
_UNARCHIVE = "unarchive"
_EDIT = "edit"
_DELETE = "delete"
_CREATE = "create"
_ADMIN = "admin"
_SEARCH = "search"
_SEARCH_METHODS = frozenset({"/search.messages", "/search.files", "/search.all"})

ACTIONS: tuple[Action, ...] = load_actions(__name__)
_KIND = {a.name: a.terms["rule"] for a in ACTIONS}
_ANY = Action("any", "", "read", terms={"kinds": kinds_of(__name__)})
_WORKSPACE = "workspace"


# Methods that take their conversation under more than one name: every one present must agree.
_ALTERNATIVES = {
    ("files.completeUploadExternal", "channel_id"): ("channel_id", "channels"),
}


class SlackError(LookupFailed):
    """Slack answered ``{"ok": false, "error": code}``."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class _Resource:
    kind: str  # "channel", "message" or "workspace"
    channel: str = ""  # an id, or "#name" before resolution
    ts: str = ""
    team: str = ""


def _parse(resource: str) -> _Resource:
    """``resource`` as any of the kinds ``actions.json`` declares (else BadResource)."""
    on = target(_ANY, resource)
    if isinstance(on, Decision):
        raise BadResource(on.reason)
    return _resource(on)


def _resource(on: Target) -> _Resource:
    """A resource of one of the kinds ``actions.json`` declares."""
    if on.kind == "team":
        return _Resource("workspace", team=on.id)
    if on.kind == "message":
        channel, _, ts = on.id.partition("/")
        return _Resource("message", channel, ts)
    return _Resource(on.kind, on.id)


class Slack(Integration):
    """Slack Web API, rules reconstructed from users, channels and membership."""

    name: ClassVar[str] = "slack"
    description: ClassVar[str] = (
        "Slack workspaces and Enterprise Grid: channel membership, guests, admins and channel "
        "state, read with a bot token (users:read, users:read.email, channels:read, "
        "groups:read, im:read, mpim:read; channels:history and groups:history for message "
        "actions)."
    )
    default_url: ClassVar[str | None] = "https://slack.com/api"
    identity_modes: ClassVar[tuple[str, ...]] = ("lookup",)
    actions: ClassVar[tuple[Action, ...]] = ACTIONS
    keys: ClassVar[tuple[ConfigKey, ...]] = KEYS

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        """Cross-key checks: see the key descriptions."""
        validate(options)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._users: Cache[str, dict[str, Any]] = Cache.option(self, "user_cache_ttl", 10_000)
        self._names: Cache[str, str] = Cache.option(self, "name_cache_ttl", 10_000)

    # --- the request hook ----------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The method's route (``slack/routes.json``), its resource read from wherever Slack
        reads arguments: the query string, a urlencoded, multipart or JSON body. A channel
        named in two places differently, or a list of several channels, names no resource;
        nor does an argument name other than Slack's snake_case (`` channel``, ``channel[]``,
        ``channel.x``: a PHP-style reader may take it for ``channel``)."""
        found = self.route_table().match(request)
        if found is not None and found.route.path in _SEARCH_METHODS:
            return self._searched(found)
        if found is None or "{" not in found.route.resource:
            return found
        if not _plain_arguments(request):
            return Match(found.route, found.params, None)
        method = found.route.path.lstrip("/")

        def value_of(name: str) -> Any:
            arg = name.partition(".")[2]
            names = _ALTERNATIVES.get((method, arg), (arg,))
            values = [v for v in (_fields.either(request, n) for n in names) if v is not None]
            if not values or any(str(v) != str(values[0]) for v in values):
                return None
            value = values[0]
            if isinstance(value, list):
                value = value[0] if len(value) == 1 else None
            if arg in ("channels", "channel_ids") and isinstance(value, str):
                value = None if "," in value else value
            return value

        return Match(found.route, found.params, _fields.fill(found.route.resource, value_of))

    def _searched(self, found: Match) -> Match:
        """Slack's search methods are ``search.read`` on the workspace."""
        r = found.route
        row = Route(
            r.method, r.path, "search.read", _WORKSPACE, "read", r.untrusted, False, r.agent
        )
        return Match(row, found.params, _WORKSPACE)

    # --- the wire ----------------------------------------------------------------------
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token('token', self.options['auth'])}"}

    def _token(self, key: str, kind: str) -> str:
        token = self.secret(key)
        prefix = "xoxb-" if kind == "bot" else "xoxp-"
        if not token.startswith((prefix, "xoxe." + prefix)):
            raise ConfigError(
                f"connection {self.config.id!r}: {key} is not a Slack {kind} token "
                f"(expected {prefix}…)",
                key,
            )
        return token

    def call(
        self, method: str, params: Mapping[str, str | None] | None = None, *, admin: bool = False
    ) -> dict[str, Any]:
        """``GET <url>/<method>`` with the engine's (or the admin) token; the ``ok`` answer.

        Raises :class:`SlackError` for ``ok: false`` and :class:`LookupFailed` for anything
        else Slack's documentation does not promise.
        """
        return self._call(method, params, admin=admin)[0]

    def _call(
        self, method: str, params: Mapping[str, str | None] | None = None, *, admin: bool = False
    ) -> tuple[dict[str, Any], Response]:
        headers = None
        if admin:
            headers = {"Authorization": f"Bearer {self._token('admin_token', 'user')}"}
        answer = self.answer("GET", f"/{method}", what=method, params=params, headers=headers)
        if answer.status != 200:
            raise self.failure(answer, method)
        return self.parse(answer, method), answer

    def accept(self, data: Any, what: str) -> None:
        """Slack answers failures as ``{"ok": false, "error": code}`` with HTTP 200."""
        if not isinstance(data.get("ok"), bool):
            raise LookupFailed(f"slack answered {what} without the documented 'ok' field")
        if not data["ok"]:
            raise self._error(what, data)

    def _error(self, method: str, data: Mapping[str, Any]) -> SlackError:
        code = data.get("error")
        code = code if isinstance(code, str) and code else "unknown_error"
        if code in _AUTH_ERRORS:
            text = f"slack rejected the engine's token ({code}) at {method}"
        elif code == "missing_scope":
            needed = data.get("needed") or "?"
            provided = data.get("provided") or "?"
            text = (
                f"the engine's token lacks a scope {method} needs (missing_scope; needed: "
                f"{needed}; provided: {provided})"
            )
        elif code == "ratelimited":
            text = f"slack rate-limited the engine at {method} (ratelimited)"
        elif code == "channel_not_found":
            text = (
                f"slack did not show the channel to the engine at {method} (channel_not_found): "
                "it does not exist, or it is private and the engine's bot is not in it"
            )
        elif code == "not_in_channel":
            text = (
                f"the engine's bot is not in the channel, so {method} cannot read it "
                "(not_in_channel)"
            )
        else:
            text = f"slack answered {method} with the error {code}"
        return SlackError(self.redact(text), code)

    # --- identity ----------------------------------------------------------------------
    def lookup_lookup(self, email: str) -> Sequence[str]:
        """``users.lookupByEmail``: exact, one user or none (``users_not_found``)."""
        try:
            data = self.call("users.lookupByEmail", {"email": email})
        except SlackError as e:
            if e.code == "users_not_found":
                return []
            raise
        user = self._user_object(data, "users.lookupByEmail")
        profile = user.get("profile")
        found = profile.get("email") if isinstance(profile, dict) else None
        if isinstance(found, str) and not same_email(found, email):
            raise LookupFailed(
                f"slack's users.lookupByEmail answered a user with another email for {email}"
            )
        self._remember(user)
        return [user["id"]]

    def _user_object(self, data: Mapping[str, Any], method: str) -> dict[str, Any]:
        user = data.get("user")
        if not isinstance(user, dict) or not isinstance(user.get("id"), str):
            raise LookupFailed(f"slack's {method} answer has no user object with an id")
        if not _USER_ID.fullmatch(user["id"]):
            raise LookupFailed(f"slack's {method} answered a user id that is not one")
        return user

    def _remember(self, user: dict[str, Any]) -> None:
        self._users.put(user["id"], user)

    def _user(self, uid: str) -> dict[str, Any]:
        """The user's object: remembered from a recent look-up, or ``users.info``."""
        return self._users.get(uid, lambda: self._read_user(uid))

    def _read_user(self, uid: str) -> dict[str, Any]:
        try:
            data = self.call("users.info", {"user": uid})
        except SlackError as e:
            if e.code in ("user_not_found", "user_not_visible"):
                raise LookupFailed(
                    f"the identity mapping names {uid}, which slack does not show ({e.code})"
                ) from None
            raise
        user = self._user_object(data, "users.info")
        if user["id"] != uid:
            raise LookupFailed(f"slack's users.info answered another user for {uid}")
        return user

    # --- the check ---------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        ask = asked(self, action, resource)
        if isinstance(ask, Decision):
            return ask
        kind, where = ask.terms["rule"], _resource(ask.on)
        team = self.options.get("team_id")
        if where.team and team and where.team != team:
            raise LookupFailed(f"this connection checks workspace {team}, not {where.team}")
        uid = self.user_id(user)
        person = self._user(uid)
        who = f"{user} ({uid})"
        if flag(person, "deleted"):
            return Decision.deny(f"{who} is deactivated in Slack")
        if flag(person, "is_bot") or flag(person, "is_app_user"):
            return Decision.unknown(f"{who} is a Slack bot or app user, not a person")
        if flag(person, "is_invited_user"):
            return Decision.deny(f"{who} was invited to Slack but has not joined")
        if kind == _ADMIN:
            return admin(who, person)
        if kind == _SEARCH:
            return self._search(who)
        if kind == _CREATE:
            return self._create(who, person, where)
        if kind == _WORKSPACE:
            return workspace_member(who, person, where.team or self.options.get("team_id"))
        return self._in_channel(kind, who, uid, person, where)

    def _create(self, who: str, person: Mapping[str, Any], where: _Resource) -> Decision:
        outside = in_workspace(who, person, where.team or self.options.get("team_id"))
        if outside is not None:
            return outside
        if is_admin(person):
            return Decision.allow(f"{who} is a workspace admin or owner")
        if flag(person, "is_ultra_restricted"):
            return Decision.deny(f"{who} is a single-channel guest")
        policy = self.options["channel_creation"]
        if policy == "members" and not flag(person, "is_restricted"):
            return Decision.allow(f"{who} is a full member and members may create channels")
        if policy == "members":
            return Decision.deny(f"{who} is a guest; only full members may create channels")
        if policy == "admins":
            return Decision.deny(f"only admins and owners may create channels; {who} is neither")
        return Decision.unknown(
            "who may create channels is a workspace setting the engine cannot read "
            "(set channel_creation)"
        )

    def _in_channel(
        self, kind: str, who: str, uid: str, person: Mapping[str, Any], where: _Resource
    ) -> Decision:
        channel_id = self._channel_id(where.channel)
        info = self._channel(channel_id)
        label = f"#{info['name']}" if isinstance(info.get("name"), str) else channel_id
        if flag(info, "is_ext_shared") and self.options["external_channels"] == "unknown":
            return Decision.unknown(
                f"{label} is a Slack Connect channel and this connection does not check those"
            )
        private = flag(info, "is_private") or flag(info, "is_im") or flag(info, "is_mpim")
        direct = flag(info, "is_im") or flag(info, "is_mpim")
        guest = flag(person, "is_restricted") or flag(person, "is_ultra_restricted")
        archived = flag(info, "is_archived")
        general = flag(info, "is_general")

        def member() -> bool:
            return self._is_member(channel_id, uid)

        if kind == _READ:
            if not private and not guest and not flag(person, "is_stranger"):
                elsewhere = other_workspace(who, person, info, label)
                if elsewhere is None:
                    return Decision.allow(f"{label} is public and {who} is a full member")
                return Decision.allow(f"{who} is a member of {label}") if member() else elsewhere
            if member():
                return Decision.allow(f"{who} is a member of {label}")
            if private:
                return Decision.deny(f"{label} is private and {who} is not a member")
            return Decision.deny(f"{who} is a guest or external user and not a member of {label}")

        if kind in (_EDIT, _DELETE):
            readable = self._in_channel(_READ, who, uid, person, where)
            if not readable.allowed:
                return readable
            if archived:
                return Decision.deny(f"{label} is archived")
            if flag(info, "is_frozen"):
                return Decision.unknown(f"{label} is frozen; slack does not document who may write")
            author = self._author(channel_id, where.ts)
            if kind == _EDIT:
                if author != uid:
                    return Decision.deny(f"only the author may edit a message; {who} is not it")
                return self._setting("message_editing", "anytime", f"{who} wrote the message")
            if is_admin(person):
                return Decision.allow(f"{who} is a workspace admin or owner")
            if author != uid:
                return Decision.deny(f"{who} neither wrote the message nor is an admin or owner")
            return self._setting("message_deletion", "everyone", f"{who} wrote the message")

        if kind in (_MANAGE, _ARCHIVE, _UNARCHIVE):
            return self._manage(kind, who, person, label, info, member)

        if kind == _JOIN:
            if archived:
                return Decision.deny(f"{label} is archived")
            if member():
                return Decision.allow(f"{who} is already a member of {label}")
            if private:
                return Decision.deny(f"{label} is private: it is joined only by invitation")
            elsewhere = other_workspace(who, person, info, label)
            if elsewhere is not None:
                return elsewhere
            if guest:
                return Decision.deny(f"{who} is a guest: guests join channels only by invitation")
            return Decision.allow(f"{label} is public and {who} is a full member")

        if kind == _LEAVE:
            if general:
                return Decision.deny("nobody can leave #general")
            if flag(info, "is_im"):
                return Decision.deny("a direct message cannot be left")
            if member():
                return Decision.allow(f"{who} is a member of {label}")
            return Decision.deny(f"{who} is not a member of {label}")

        # post, member-only writes, invite: all need a member of a live conversation
        if archived:
            return Decision.deny(f"{label} is archived")
        if flag(info, "is_frozen"):
            return Decision.unknown(f"{label} is frozen; slack does not document who may write")
        if kind == _INVITE and direct:
            return Decision.deny("nobody can be invited to a direct message")
        if kind == _INVITE and guest:
            return Decision.deny(f"{who} is a guest: guests cannot invite others")
        if not member():
            return Decision.deny(f"{who} is not a member of {label}")
        if kind != _POST:
            return Decision.allow(f"{who} is a member of {label}")
        return self._may_post(who, uid, person, channel_id, label, info)

    def _setting(self, key: str, allowing: str, reason: str) -> Decision:
        """The workspace's message editing or deletion setting (a connection key: the token
        cannot read it) applied to the message's author."""
        value = self.options[key]
        if value == allowing:
            return Decision.allow(f"{reason}, and the workspace lets authors do this")
        if value == "unknown":
            return Decision.unknown(
                f"whether authors may do this is a workspace setting the engine cannot read "
                f"(set {key})"
            )
        return Decision.deny(f"{reason}, but the workspace's {key} is {value}")

    def _search(self, who: str) -> Decision:
        """Slack's search answers what the token's user can see, not what ``who`` can."""
        if self.options["search_tokens"] == "user":
            return Decision.allow(
                f"{who} is an active user and the agent searches with the user's own token"
            )
        return Decision.unknown(
            "Slack's search answers with what the token's user can see, not what this user "
            "can (set search_tokens: user when the agent searches with each user's own token)"
        )

    def _manage(
        self,
        kind: str,
        who: str,
        person: Mapping[str, Any],
        label: str,
        info: Mapping[str, Any],
        member: Any,
    ) -> Decision:
        if flag(info, "is_im") or flag(info, "is_mpim"):
            return Decision.deny("a direct message cannot be renamed, archived or managed")
        if kind == _ARCHIVE and flag(info, "is_general"):
            return Decision.deny("#general cannot be archived")
        if kind == _MANAGE and flag(info, "is_general"):
            # renaming #general is an owner's privilege; removing from it is impossible
            if flag(person, "is_owner") or flag(person, "is_primary_owner"):
                return Decision.allow(f"{who} is a workspace owner")
            return Decision.deny("only workspace owners manage #general")
        if kind == _ARCHIVE and flag(info, "is_archived"):
            return Decision.deny(f"{label} is already archived")
        if kind == _UNARCHIVE and not flag(info, "is_archived"):
            return Decision.deny(f"{label} is not archived")
        if kind == _MANAGE and flag(info, "is_archived"):
            return Decision.deny(f"{label} is archived")
        if flag(person, "is_restricted") or flag(person, "is_ultra_restricted"):
            return Decision.deny(f"{who} is a guest")
        private = flag(info, "is_private")
        if is_admin(person):
            if not private or member():
                return Decision.allow(f"{who} is a workspace admin or owner")
            return Decision.deny(f"{label} is private and {who} is not a member")
        policy = self.options["channel_management"]
        if policy == "admins":
            return Decision.deny(f"only admins and owners manage channels; {who} is neither")
        if policy == "unknown":
            return Decision.unknown(
                "who may manage channels is a workspace setting the engine cannot read "
                "(set channel_management)"
            )
        if member():
            return Decision.allow(f"{who} is a member of {label} and members manage channels")
        return Decision.deny(f"{who} is not a member of {label}")

    def _may_post(
        self,
        who: str,
        uid: str,
        person: Mapping[str, Any],
        channel_id: str,
        label: str,
        info: Mapping[str, Any],
    ) -> Decision:
        if flag(info, "is_general"):
            policy = self.options["general_posting"]
            guest = flag(person, "is_restricted") or flag(person, "is_ultra_restricted")
            owner = flag(person, "is_owner") or flag(person, "is_primary_owner")
            allowed = {
                "everyone": True,
                "members": not guest,
                "admins": is_admin(person),
                "owners": owner,
            }.get(policy)
            if allowed is None:
                return Decision.unknown(
                    "who may post in #general is a workspace setting the engine cannot read "
                    "(set general_posting)"
                )
            if allowed:
                return Decision.allow(f"{who} is a member of #general, where {policy} may post")
            return Decision.deny(f"in #general only {policy} may post; {who} is not one")
        channel = flag(info, "is_channel") or flag(info, "is_group") or flag(info, "is_private")
        direct = flag(info, "is_im") or flag(info, "is_mpim")
        if self.options["posting_prefs"] and channel and not direct:
            return self._who_can_post(who, uid, person, channel_id, label)
        if flag(info, "is_read_only"):
            return Decision.unknown(
                f"{label} is read-only and the engine cannot read who may post "
                "(turn on posting_prefs)"
            )
        return Decision.allow(f"{who} is a member of {label}")

    def _who_can_post(
        self, who: str, uid: str, person: Mapping[str, Any], channel_id: str, label: str
    ) -> Decision:
        data = self.call(
            "admin.conversations.getConversationPrefs", {"channel_id": channel_id}, admin=True
        )
        prefs = data.get("prefs")
        if not isinstance(prefs, dict):
            raise LookupFailed("slack's getConversationPrefs answer has no prefs")
        rule = prefs.get("who_can_post")
        if rule is None:
            return Decision.allow(f"{who} is a member of {label}, where anyone may post")
        if not isinstance(rule, dict):
            raise LookupFailed("slack's who_can_post is not an object")
        types = rule.get("type") or []
        users = rule.get("user") or []
        if not (isinstance(types, list) and isinstance(users, list)):
            raise LookupFailed("slack's who_can_post lists are not lists")
        if not types and not users:
            return Decision.allow(f"{who} is a member of {label}, where anyone may post")
        if uid in users:
            return Decision.allow(f"{who} is named in who may post in {label}")
        owner = flag(person, "is_owner") or flag(person, "is_primary_owner")
        known = {"admin": is_admin(person), "owner": owner}
        if any(known.get(t) for t in types):
            return Decision.allow(f"{who} is one of the roles that may post in {label}")
        strange = [t for t in types if t not in known]
        if strange:
            return Decision.unknown(
                f"who may post in {label} names roles the engine does not know: "
                + ", ".join(str(t) for t in strange)
            )
        return Decision.deny(f"in {label} only {', '.join(map(str, types)) or 'listed users'} "
                             f"may post; {who} is not one")  # fmt: skip

    # --- channels ----------------------------------------------------------------------
    def _channel(self, channel_id: str) -> dict[str, Any]:
        data = self.call("conversations.info", {"channel": channel_id})
        info = data.get("channel")
        if not isinstance(info, dict) or info.get("id") != channel_id:
            raise LookupFailed("slack's conversations.info answer has no matching channel")
        return info

    def _listing(
        self, method: str, params: Mapping[str, str | None], field: str, too_many: str
    ) -> Iterator[Any]:
        """The items of a cursor-paged list, up to ``max_pages`` pages."""
        return paged(
            self,
            f"/{method}",
            what=method,
            items=field,
            style="cursor",
            params={k: v for k, v in params.items() if v is not None},
            size=int(self.options["page_size"]),
            pages=int(self.options["max_pages"]),
            too_many=too_many,
            next_at="response_metadata.next_cursor",
        )

    def _is_member(self, channel_id: str, uid: str) -> bool:
        pages = self.options["max_pages"]
        too_many = f"{channel_id} has more members than {pages} pages (raise max_pages)"
        members = self._listing(
            "conversations.members", {"channel": channel_id}, "members", too_many
        )
        return any(member == uid for member in members)

    def _channel_id(self, channel: str) -> str:
        if not channel.startswith("#"):
            return channel
        if not self.options["channel_names"]:
            raise LookupFailed("this connection accepts channel ids only (channel_names is off)")
        return self._names.get(channel[1:], lambda: self._find_channel(channel[1:]))

    def _find_channel(self, name: str) -> str:
        """The one channel called ``name`` in ``conversations.list``."""
        params = {
            "types": "public_channel,private_channel",
            "exclude_archived": "false",
            "team_id": self.options.get("team_id"),
        }
        too_many = (
            f"the workspace has more channels than {self.options['max_pages']} pages; "
            "use channel ids"
        )
        channels = self._listing("conversations.list", params, "channels", too_many)
        found = [
            c["id"]
            for c in channels
            if isinstance(c, dict) and c.get("name") == name and isinstance(c.get("id"), str)
        ]
        unique: list[str] = list(dict.fromkeys(found))
        if not unique:
            raise LookupFailed(
                f"no channel named #{name} is visible to the engine (a private channel the "
                "bot is not in is invisible); use the channel id"
            )
        if len(unique) > 1:
            raise LookupFailed(f"{len(unique)} channels are named #{name}; use the channel id")
        if not _CHANNEL_ID.fullmatch(unique[0]):
            raise LookupFailed("slack's conversations.list answered a channel id that is not one")
        return unique[0]

    def _author(self, channel_id: str, ts: str) -> str:
        data = self.call(
            "conversations.history",
            {"channel": channel_id, "latest": ts, "oldest": ts, "inclusive": "true", "limit": "1"},
        )
        messages = data.get("messages")
        if not isinstance(messages, list):
            raise LookupFailed("slack's conversations.history answer has no messages list")
        for message in messages:
            if isinstance(message, dict) and message.get("ts") == ts:
                author = message.get("user")
                return author if isinstance(author, str) else ""
        raise LookupFailed(
            f"slack shows no message {ts} in {channel_id} (deleted, or a thread reply)"
        )

    # --- the probe ---------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        """``auth.test`` with the token (and the admin token), plus the token's scopes when
        Slack reports them in ``X-OAuth-Scopes``."""
        data, answer = self._call("auth.test")
        team = data.get("team_id")
        who = f"{data.get('user')} ({data.get('user_id')}) in {data.get('team')} ({team})"
        if self.options["auth"] == "bot" and not data.get("bot_id"):
            return ProbeResult(False, f"the token is not a bot's: {who}")
        wanted = self.options.get("team_id")
        if wanted and team != wanted and not data.get("is_enterprise_install"):
            return ProbeResult(False, f"the token belongs to {team}, not to team_id {wanted}")
        detail = f"authenticated as {who}"
        if data.get("is_enterprise_install"):
            detail += f", org-wide in {data.get('enterprise_id') or 'an Enterprise Grid org'}"
        reported = answer.header("x-oauth-scopes")
        if reported is not None:
            scopes = {s.strip() for s in reported.split(",") if s.strip()}
            missing = [s for s in _NEEDED_SCOPES if s not in scopes]
            if missing:
                return ProbeResult(
                    False, f"{detail}, but the token lacks the scopes {', '.join(missing)}"
                )
            extra = [s for s in _MESSAGE_SCOPES if s not in scopes]
            if extra:
                detail += f" (without {', '.join(extra)}: chat.update and chat.delete are unknown)"
        if self.options.get("admin_token") is not None:
            admin = self.call("auth.test", admin=True)
            detail += f"; admin token of {admin.get('user')} ({admin.get('user_id')})"
        return ProbeResult(True, detail)


def _plain_arguments(request: Request) -> bool:
    """Whether every argument the request names is named as Slack names its arguments."""
    body = _fields.form(request)
    names = [*request.query, *(body if isinstance(body, Mapping) else ())]
    return all(isinstance(n, str) and _ARGUMENT.fullmatch(n) for n in names)


INTEGRATION = Slack
