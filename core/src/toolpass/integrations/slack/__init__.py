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
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Integration,
    ProbeResult,
    Remembered,
    load_actions,
)
from toolpass.integrations.routes import Match, Request, Route
from toolpass.wire.errors import BadResource, ConfigError, LookupFailed
from toolpass.wire.http import Response
from toolpass.wire.identity import same_email

__all__ = ["INTEGRATION", "Slack", "SlackError"]

_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,30}")
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,30}")
_TEAM_ID = re.compile(r"[TE][A-Z0-9]{2,30}")
_TS = re.compile(r"\d{1,12}\.\d{1,9}")
_CHANNEL_NAME = re.compile(r"[^\s#,/]{1,80}")
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
_WORKSPACE = "workspace"
_CHANNEL_KINDS = {
    _READ, _POST, _MEMBER, _INVITE, _JOIN, _LEAVE, _MANAGE, _ARCHIVE, _UNARCHIVE, _EDIT, _DELETE
}  # fmt: skip


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
    if resource == "workspace":
        return _Resource("workspace")
    kind, sep, rest = resource.partition(":")
    if sep and kind == "team" and _TEAM_ID.fullmatch(rest):
        return _Resource("workspace", team=rest)
    if sep and kind == "channel":
        if _CHANNEL_ID.fullmatch(rest):
            return _Resource("channel", rest)
        if rest.startswith("#") and _CHANNEL_NAME.fullmatch(rest[1:]):
            return _Resource("channel", rest)
    if sep and kind == "message":
        channel, slash, ts = rest.partition("/")
        if slash and _CHANNEL_ID.fullmatch(channel) and _TS.fullmatch(ts):
            return _Resource("message", channel, ts)
    raise BadResource(
        f"{resource!r} is not a Slack resource (expected channel:C…, channel:#name, "
        "message:C…/ts, workspace or team:T…)"
    )


def _flag(obj: Mapping[str, Any], name: str) -> bool:
    return obj.get(name) is True


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
    keys: ClassVar[tuple[ConfigKey, ...]] = (
        ConfigKey(
            "token",
            "The engine's Slack token, sent as Authorization: Bearer (a bot token xoxb-… "
            "with the read scopes listed in the description; a user token xoxp-… when auth "
            "is 'user').",
            secret=True,
            required=True,
        ),
        ConfigKey(
            "auth",
            "The kind of token in `token`: 'bot' (xoxb-, the default) or 'user' (xoxp-). "
            "Rotating tokens (xoxe.xoxb-/xoxe.xoxp-) are accepted.",
            default="bot",
            choices=("bot", "user"),
        ),
        ConfigKey(
            "team_id",
            "Enterprise Grid: the workspace (T…) this connection checks. Sent to "
            "conversations.list for an org-wide app, compared with auth.test by the probe, and "
            "workspace actions need the user to belong to it.",
        ),
        ConfigKey(
            "admin_token",
            "Enterprise Grid: an org admin's user token (xoxp-) with admin.conversations:read, "
            "used only for admin.conversations.getConversationPrefs when posting_prefs is on.",
            secret=True,
        ),
        ConfigKey(
            "posting_prefs",
            "Read who may post in each channel (who_can_post) with admin_token; when off, "
            "posting in a read-only channel is unknown.",
            default=False,
        ),
        ConfigKey(
            "general_posting",
            "Who may post in #general, as the workspace is set (the token cannot read it): "
            "everyone, members (everyone but guests), admins (admins and owners), owners, or "
            "unknown (every post there is unknown).",
            default="unknown",
            choices=("everyone", "members", "admins", "owners", "unknown"),
        ),
        ConfigKey(
            "channel_management",
            "Who besides workspace admins and owners may rename, archive, unarchive and "
            "remove members from channels: 'members' (the channel's full members), 'admins' "
            "(nobody else: denied), or 'unknown'.",
            default="unknown",
            choices=("members", "admins", "unknown"),
        ),
        ConfigKey(
            "channel_creation",
            "Who besides workspace admins and owners may create channels: 'members' (full "
            "members, not guests), 'admins' (nobody else: denied), or 'unknown'.",
            default="unknown",
            choices=("members", "admins", "unknown"),
        ),
        ConfigKey(
            "message_editing",
            "When authors may edit their messages, as the workspace (or the Grid org) is set "
            "(the token cannot read it): anytime, never, or unknown (a time window, or not "
            "known: every edit is unknown).",
            default="unknown",
            choices=("anytime", "never", "unknown"),
        ),
        ConfigKey(
            "message_deletion",
            "Who may delete messages, as the workspace is set (the token cannot read it): "
            "everyone (authors their own), admins (owners and admins only), or unknown "
            "(an author's delete is unknown; admins and owners may always).",
            default="unknown",
            choices=("everyone", "admins", "unknown"),
        ),
        ConfigKey(
            "search_tokens",
            "Whose token the agent searches and lists with (search.messages, search.files, "
            "search.all and rtm.start answer what the token's user can see): user (each "
            "user's own token) or unknown (every search and sender_lists is unknown).",
            default="unknown",
            choices=("user", "unknown"),
        ),
        ConfigKey(
            "external_channels",
            "Slack Connect channels (is_ext_shared): 'check' applies the same rules, "
            "'unknown' answers unknown for every check in them.",
            default="check",
            choices=("check", "unknown"),
        ),
        ConfigKey(
            "channel_names",
            "Accept channel:#name, resolved to exactly one channel by conversations.list "
            "(when off, only channel ids are accepted).",
            default=True,
        ),
        ConfigKey(
            "page_size",
            "The limit sent with conversations.members and conversations.list (1-1000).",
            default=200,
        ),
        ConfigKey(
            "max_pages",
            "The most pages one membership or name look-up may read before it is unknown.",
            default=50,
        ),
        ConfigKey(
            "user_cache_ttl",
            "Seconds a user's flags (deleted, guest, admin) are reused between checks (0: never).",
            default=30.0,
        ),
        ConfigKey(
            "name_cache_ttl",
            "Seconds a resolved channel:#name is reused (0: never).",
            default=300.0,
        ),
    )

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        """Cross-key checks: see the key descriptions."""
        if options.get("posting_prefs") and options.get("admin_token") is None:
            raise ConfigError(
                "posting_prefs needs admin_token (an org admin's token)", "admin_token"
            )
        team = options.get("team_id")
        if team is not None and not _TEAM_ID.fullmatch(team):
            raise ConfigError("must be a Slack workspace id such as T0123ABCD", "team_id")
        if not 1 <= options["page_size"] <= 1000:
            raise ConfigError("must be between 1 and 1000", "page_size")
        if options["max_pages"] < 1:
            raise ConfigError("must be 1 or more", "max_pages")
        for key in ("user_cache_ttl", "name_cache_ttl"):
            if options[key] < 0:
                raise ConfigError("must be 0 or more seconds", key)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._users: Remembered[str, dict[str, Any]] = Remembered()
        self._names: Remembered[str, str] = Remembered()

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
        self._users.put(user["id"], user, float(self.options["user_cache_ttl"]))

    def _user(self, uid: str) -> dict[str, Any]:
        """The user's object: remembered from a recent look-up, or ``users.info``."""
        hit = self._users.get(uid)
        if hit is not None:
            return hit
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
        self._remember(user)
        return user

    # --- the check ---------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        kind = _KIND.get(action)
        if kind is None:
            return Decision.unknown(f"slack has no action {action!r}")
        where = _parse(resource)
        if kind in _CHANNEL_KINDS and where.kind == "workspace":
            raise BadResource(f"{action} needs a channel:… or message:… resource")
        if kind in (_EDIT, _DELETE) and where.kind != "message":
            raise BadResource(f"{action} needs a message:C…/ts resource")
        if kind in (_CREATE, _SEARCH) and where.kind != "workspace":
            raise BadResource(f"{action} needs a workspace or team:T… resource")
        team = self.options.get("team_id")
        if where.team and team and where.team != team:
            raise LookupFailed(f"this connection checks workspace {team}, not {where.team}")
        uid = self.user_id(user)
        person = self._user(uid)
        who = f"{user} ({uid})"
        if _flag(person, "deleted"):
            return Decision.deny(f"{who} is deactivated in Slack")
        if _flag(person, "is_bot") or _flag(person, "is_app_user"):
            return Decision.unknown(f"{who} is a Slack bot or app user, not a person")
        if _flag(person, "is_invited_user"):
            return Decision.deny(f"{who} was invited to Slack but has not joined")
        if kind == _ADMIN:
            return self._admin(who, person)
        if kind == _SEARCH:
            return self._search(who)
        if kind == _CREATE:
            return self._create(who, person, where)
        if kind == _WORKSPACE:
            return self._workspace_member(who, person, where)
        return self._in_channel(kind, who, uid, person, where)

    def _workspace_member(self, who: str, person: Mapping[str, Any], where: _Resource) -> Decision:
        team = where.team or self.options.get("team_id")
        if team:
            teams = _teams(person)
            if teams is None:
                return Decision.unknown(f"slack does not say which workspaces {who} belongs to")
            if team not in teams:
                return Decision.deny(f"{who} is not a member of workspace {team}")
        if _flag(person, "is_restricted") or _flag(person, "is_ultra_restricted"):
            return Decision.deny(f"{who} is a guest: guests see only the channels they are in")
        if _flag(person, "is_stranger"):
            return Decision.deny(f"{who} is an external user")
        return Decision.allow(f"{who} is a full member of the workspace")

    def _admin(self, who: str, person: Mapping[str, Any]) -> Decision:
        grid = person.get("enterprise_user")
        if isinstance(grid, dict):
            if _flag(grid, "is_owner") or _flag(grid, "is_admin"):
                return Decision.allow(f"{who} is an Enterprise Grid org admin or owner")
            return Decision.deny(f"{who} is not an Enterprise Grid org admin or owner")
        if _is_admin(person):
            return Decision.allow(f"{who} is a workspace admin or owner")
        return Decision.deny(f"{who} is not a Slack admin or owner")

    def _create(self, who: str, person: Mapping[str, Any], where: _Resource) -> Decision:
        team = where.team or self.options.get("team_id")
        if team:
            teams = _teams(person)
            if teams is None:
                return Decision.unknown(f"slack does not say which workspaces {who} belongs to")
            if team not in teams:
                return Decision.deny(f"{who} is not a member of workspace {team}")
        if _is_admin(person):
            return Decision.allow(f"{who} is a workspace admin or owner")
        if _flag(person, "is_ultra_restricted"):
            return Decision.deny(f"{who} is a single-channel guest")
        policy = self.options["channel_creation"]
        if policy == "members" and not _flag(person, "is_restricted"):
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
        if _flag(info, "is_ext_shared") and self.options["external_channels"] == "unknown":
            return Decision.unknown(
                f"{label} is a Slack Connect channel and this connection does not check those"
            )
        private = _flag(info, "is_private") or _flag(info, "is_im") or _flag(info, "is_mpim")
        direct = _flag(info, "is_im") or _flag(info, "is_mpim")
        guest = _flag(person, "is_restricted") or _flag(person, "is_ultra_restricted")
        archived = _flag(info, "is_archived")
        general = _flag(info, "is_general")

        def member() -> bool:
            return self._is_member(channel_id, uid)

        if kind == _READ:
            if not private and not guest and not _flag(person, "is_stranger"):
                elsewhere = _other_workspace(who, person, info, label)
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
            if _flag(info, "is_frozen"):
                return Decision.unknown(f"{label} is frozen; slack does not document who may write")
            author = self._author(channel_id, where.ts)
            if kind == _EDIT:
                if author != uid:
                    return Decision.deny(f"only the author may edit a message; {who} is not it")
                return self._setting("message_editing", "anytime", f"{who} wrote the message")
            if _is_admin(person):
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
            elsewhere = _other_workspace(who, person, info, label)
            if elsewhere is not None:
                return elsewhere
            if guest:
                return Decision.deny(f"{who} is a guest: guests join channels only by invitation")
            return Decision.allow(f"{label} is public and {who} is a full member")

        if kind == _LEAVE:
            if general:
                return Decision.deny("nobody can leave #general")
            if _flag(info, "is_im"):
                return Decision.deny("a direct message cannot be left")
            if member():
                return Decision.allow(f"{who} is a member of {label}")
            return Decision.deny(f"{who} is not a member of {label}")

        # post, member-only writes, invite: all need a member of a live conversation
        if archived:
            return Decision.deny(f"{label} is archived")
        if _flag(info, "is_frozen"):
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
        if _flag(info, "is_im") or _flag(info, "is_mpim"):
            return Decision.deny("a direct message cannot be renamed, archived or managed")
        if kind == _ARCHIVE and _flag(info, "is_general"):
            return Decision.deny("#general cannot be archived")
        if kind == _MANAGE and _flag(info, "is_general"):
            # renaming #general is an owner's privilege; removing from it is impossible
            if _flag(person, "is_owner") or _flag(person, "is_primary_owner"):
                return Decision.allow(f"{who} is a workspace owner")
            return Decision.deny("only workspace owners manage #general")
        if kind == _ARCHIVE and _flag(info, "is_archived"):
            return Decision.deny(f"{label} is already archived")
        if kind == _UNARCHIVE and not _flag(info, "is_archived"):
            return Decision.deny(f"{label} is not archived")
        if kind == _MANAGE and _flag(info, "is_archived"):
            return Decision.deny(f"{label} is archived")
        if _flag(person, "is_restricted") or _flag(person, "is_ultra_restricted"):
            return Decision.deny(f"{who} is a guest")
        private = _flag(info, "is_private")
        if _is_admin(person):
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
        if _flag(info, "is_general"):
            policy = self.options["general_posting"]
            guest = _flag(person, "is_restricted") or _flag(person, "is_ultra_restricted")
            owner = _flag(person, "is_owner") or _flag(person, "is_primary_owner")
            allowed = {
                "everyone": True,
                "members": not guest,
                "admins": _is_admin(person),
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
        channel = _flag(info, "is_channel") or _flag(info, "is_group") or _flag(info, "is_private")
        direct = _flag(info, "is_im") or _flag(info, "is_mpim")
        if self.options["posting_prefs"] and channel and not direct:
            return self._who_can_post(who, uid, person, channel_id, label)
        if _flag(info, "is_read_only"):
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
        owner = _flag(person, "is_owner") or _flag(person, "is_primary_owner")
        known = {"admin": _is_admin(person), "owner": owner}
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

        def read_page(cursor: str | None) -> tuple[list[Any], str | None]:
            limit = str(self.options["page_size"])
            data = self.call(method, {**params, "limit": limit, "cursor": cursor})
            items = data.get(field)
            if not isinstance(items, list):
                raise LookupFailed(f"slack's {method} answer has no {field} list")
            return items, _next_cursor(data)

        return self.pages(read_page, limit=int(self.options["max_pages"]), too_many=too_many)

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
        name = channel[1:]
        hit = self._names.get(name)
        if hit is not None:
            return hit
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
        self._names.put(name, unique[0], float(self.options["name_cache_ttl"]))
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


def _is_admin(person: Mapping[str, Any]) -> bool:
    return any(_flag(person, f) for f in ("is_admin", "is_owner", "is_primary_owner"))


def _other_workspace(
    who: str, person: Mapping[str, Any], info: Mapping[str, Any], label: str
) -> Decision | None:
    """On Enterprise Grid a public channel is open to the members of its own workspace (and
    of the workspaces it is shared with), not to the whole organisation: a deny when ``who``
    belongs to none of them, unknown when Slack does not say; None when it is theirs (or
    outside Grid)."""
    grid = isinstance(person.get("enterprise_user"), dict) or any(
        info.get(k) for k in ("enterprise_id", "is_org_shared", "shared_team_ids")
    )
    if not grid:
        return None
    homes = {info.get("context_team_id"), info.get("conversation_host_id")}
    for key in ("shared_team_ids", "internal_team_ids"):
        listed = info.get(key)
        homes.update(listed if isinstance(listed, list) else [])
    channel_teams = {t for t in homes if isinstance(t, str) and _TEAM_ID.fullmatch(t)}
    teams = _teams(person)
    if not channel_teams or teams is None:
        return Decision.unknown(f"slack does not say which workspaces {label} or {who} are in")
    if teams & channel_teams:
        return None
    return Decision.deny(
        f"{label} is a public channel of workspace(s) {', '.join(sorted(channel_teams))}, "
        f"which {who} is not in"
    )


def _teams(person: Mapping[str, Any]) -> set[str] | None:
    teams: set[str] = set()
    if isinstance(person.get("team_id"), str):
        teams.add(person["team_id"])
    grid = person.get("enterprise_user")
    if isinstance(grid, dict) and isinstance(grid.get("teams"), list):
        teams.update(t for t in grid["teams"] if isinstance(t, str))
    return teams or None


def _next_cursor(data: Mapping[str, Any]) -> str | None:
    meta = data.get("response_metadata")
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise LookupFailed("slack's response_metadata is not an object")
    cursor = meta.get("next_cursor")
    if cursor is None or cursor == "":
        return None
    if not isinstance(cursor, str):
        raise LookupFailed("slack's next_cursor is not a string")
    return cursor


INTEGRATION = Slack
