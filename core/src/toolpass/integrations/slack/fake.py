"""A fake Slack Web API on 127.0.0.1, shaped after slackapi/slack-api-specs and docs.slack.dev.

Every method is ``GET`` or ``POST /<method.name>`` (slack_sdk's ``base_url`` is the fake's
URL plus ``/``); arguments come from the query string, a form body or a JSON body; the token
from ``Authorization: Bearer`` or a ``token`` argument. Errors are HTTP 200 with
``{"ok": false, "error": ...}`` (``missing_scope`` adds ``needed`` and ``provided``), rate
limits are HTTP 429 with ``Retry-After`` and ``{"ok": false, "error": "ratelimited"}``, and
lists paginate with ``cursor`` / ``limit`` / ``response_metadata.next_cursor``. Each answer
carries ``X-OAuth-Scopes`` with the token's scopes.

State is plain data a test sets: ``tokens`` (token -> :class:`Token`), ``users`` (id -> the
user object), ``channels`` (id -> the conversation object), ``members`` (id -> user ids),
``messages`` (id -> message objects, newest first), ``prefs`` (id -> conversation prefs).
``chat.postMessage`` (scope ``chat:write``) adds a message to ``messages``: the token's user
must be a member unless the token has ``chat:write.public`` and the channel is public, and
an archived channel answers ``is_archived``.
A private conversation is visible to a token only when the token's user is a member of it,
as with Slack's real bot tokens. The request log is the server's (``server.seen()``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from fakes.server import FakeServer, Reply, Request

BOT_SCOPES = (
    "users:read",
    "users:read.email",
    "channels:read",
    "groups:read",
    "im:read",
    "mpim:read",
    "channels:history",
    "groups:history",
)

# method -> the scopes of which the token needs one (per slack_web_openapi_v2.json)
SCOPES: dict[str, tuple[str, ...]] = {
    "users.lookupByEmail": ("users:read.email",),
    "users.info": ("users:read",),
    "conversations.info": ("channels:read", "groups:read", "im:read", "mpim:read"),
    "conversations.members": ("channels:read", "groups:read", "im:read", "mpim:read"),
    "conversations.list": ("channels:read", "groups:read", "im:read", "mpim:read"),
    "conversations.history": ("channels:history", "groups:history", "im:history", "mpim:history"),
    "admin.conversations.getConversationPrefs": ("admin.conversations:read",),
    "chat.postMessage": ("chat:write",),
}


@dataclass
class Token:
    """What a token is: whose, in which workspace, with which scopes."""

    user_id: str
    team_id: str = "T0FAKE001"
    team: str = "Fake Workspace"
    user: str = "toolpass"
    bot_id: str | None = "B0FAKE001"
    scopes: tuple[str, ...] = BOT_SCOPES
    enterprise_id: str | None = None
    is_enterprise_install: bool = False
    org_admin: bool = False


@dataclass
class FakeSlack:
    """Slack's state and its Web API, installed on a :class:`FakeServer`."""

    server: FakeServer
    tokens: dict[str, Token] = field(default_factory=dict)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    channels: dict[str, dict[str, Any]] = field(default_factory=dict)
    members: dict[str, list[str]] = field(default_factory=dict)
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    prefs: dict[str, dict[str, Any]] = field(default_factory=dict)
    default_limit: int = 100

    def __post_init__(self) -> None:
        methods: dict[str, Callable[[Token, dict[str, str]], dict[str, Any]]] = {
            "auth.test": self._auth_test,
            "users.lookupByEmail": self._lookup_by_email,
            "users.info": self._users_info,
            "conversations.info": self._conversations_info,
            "conversations.members": self._conversations_members,
            "conversations.list": self._conversations_list,
            "conversations.history": self._conversations_history,
            "admin.conversations.getConversationPrefs": self._get_prefs,
            "chat.postMessage": self._post_message,
        }
        for name, handler in methods.items():
            route = self._route(name, handler)
            pattern = "/" + name.replace(".", r"\.")
            self.server.add("GET", pattern, route)
            self.server.add("POST", pattern, route)

    # --- state helpers -----------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.server.url

    def add_token(self, token: str, **kwargs: Any) -> Token:
        info = Token(**kwargs)
        self.tokens[token] = info
        return info

    def add_user(self, uid: str, email: str | None, **flags: Any) -> dict[str, Any]:
        """A user object as users.info shows it; ``flags`` override the defaults."""
        user: dict[str, Any] = {
            "id": uid,
            "team_id": "T0FAKE001",
            "name": (email or uid).partition("@")[0],
            "deleted": False,
            "is_admin": False,
            "is_owner": False,
            "is_primary_owner": False,
            "is_restricted": False,
            "is_ultra_restricted": False,
            "is_bot": False,
            "is_app_user": False,
            "updated": 1700000000,
            "profile": {"email": email} if email else {},
        }
        user.update(flags)
        self.users[uid] = user
        return user

    def add_channel(
        self, cid: str, name: str, members: list[str] | None = None, **flags: Any
    ) -> dict[str, Any]:
        """A conversation object as conversations.info shows it."""
        channel: dict[str, Any] = {
            "id": cid,
            "name": name,
            "name_normalized": name,
            "created": 1449252889,
            "creator": "U0CREATOR",
            "is_channel": True,
            "is_group": False,
            "is_im": False,
            "is_mpim": False,
            "is_private": False,
            "is_archived": False,
            "is_general": False,
            "is_shared": False,
            "is_ext_shared": False,
            "is_org_shared": False,
            "is_read_only": False,
        }
        channel.update(flags)
        self.channels[cid] = channel
        self.members[cid] = list(members or [])
        return channel

    def rate_limit(self, seconds: int = 30, *, method: str | None = None, times: int = 1) -> None:
        """Answer the next requests (to ``method``) as Slack does when rate-limited."""
        path = None if method is None else "/" + method.replace(".", r"\.")
        self.server.fail(
            429,
            body={"ok": False, "error": "ratelimited"},
            retry_after=seconds,
            times=times,
            path=path,
        )

    def calls(self, method: str) -> list[Request]:
        """The logged requests to ``method``."""
        return self.server.seen(path="/" + method.replace(".", r"\."))

    # --- plumbing ----------------------------------------------------------------------
    def _route(
        self, name: str, handler: Callable[[Token, dict[str, str]], dict[str, Any]]
    ) -> Callable[[Request], Reply]:
        def answer(request: Request) -> Reply:
            args = _arguments(request)
            if args is None:
                return Reply(200, {"ok": False, "error": "invalid_form_data"})
            auth = request.headers.get("authorization", "")
            token = auth[7:] if auth.startswith("Bearer ") else args.get("token", "")
            if not token:
                return Reply(200, {"ok": False, "error": "not_authed"})
            info = self.tokens.get(token)
            if info is None:
                return Reply(200, {"ok": False, "error": "invalid_auth"})
            headers = {"X-OAuth-Scopes": ",".join(info.scopes)}
            needed = SCOPES.get(name, ())
            if needed and not set(needed) & set(info.scopes):
                body = {
                    "ok": False,
                    "error": "missing_scope",
                    "needed": needed[0],
                    "provided": ",".join(info.scopes),
                }
                return Reply(200, body, headers)
            try:
                body = handler(info, args)
            except _Error as e:
                return Reply(200, {"ok": False, "error": e.code}, headers)
            return Reply(200, {"ok": True, **body}, headers)

        return answer

    def _visible(self, info: Token, cid: str) -> dict[str, Any]:
        channel = self.channels.get(cid)
        if channel is None:
            raise _Error("channel_not_found")
        private = channel.get("is_private") or channel.get("is_im") or channel.get("is_mpim")
        if private and info.user_id not in self.members.get(cid, []):
            raise _Error("channel_not_found")
        return channel

    def _page(self, items: list[Any], args: dict[str, str]) -> tuple[list[Any], str]:
        try:
            limit = int(args.get("limit") or self.default_limit)
        except ValueError:
            raise _Error("invalid_limit") from None
        if not 1 <= limit <= 1000:
            raise _Error("invalid_limit")
        cursor = args.get("cursor") or ""
        start = 0
        if cursor:
            try:
                start = int(base64.b64decode(cursor).decode().partition(":")[2])
            except (ValueError, UnicodeDecodeError):
                raise _Error("invalid_cursor") from None
        end = start + limit
        after = base64.b64encode(f"offset:{end}".encode()).decode() if end < len(items) else ""
        return items[start:end], after

    # --- methods -----------------------------------------------------------------------
    def _auth_test(self, info: Token, args: dict[str, str]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "url": "https://fake.slack.com/",
            "team": info.team,
            "user": info.user,
            "team_id": info.team_id,
            "user_id": info.user_id,
            "is_enterprise_install": info.is_enterprise_install,
        }
        if info.bot_id:
            body["bot_id"] = info.bot_id
        if info.enterprise_id:
            body["enterprise_id"] = info.enterprise_id
        return body

    def _lookup_by_email(self, info: Token, args: dict[str, str]) -> dict[str, Any]:
        email = (args.get("email") or "").lower()
        for user in self.users.values():
            if str(user.get("profile", {}).get("email", "")).lower() == email and email:
                return {"user": user}
        raise _Error("users_not_found")

    def _users_info(self, info: Token, args: dict[str, str]) -> dict[str, Any]:
        user = self.users.get(args.get("user") or "")
        if user is None:
            raise _Error("user_not_found")
        return {"user": user}

    def _conversations_info(self, info: Token, args: dict[str, str]) -> dict[str, Any]:
        channel = dict(self._visible(info, args.get("channel") or ""))
        channel["is_member"] = info.user_id in self.members.get(channel["id"], [])
        return {"channel": channel}

    def _conversations_members(self, info: Token, args: dict[str, str]) -> dict[str, Any]:
        channel = self._visible(info, args.get("channel") or "")
        page, after = self._page(self.members.get(channel["id"], []), args)
        return {"members": page, "response_metadata": {"next_cursor": after}}

    def _conversations_list(self, info: Token, args: dict[str, str]) -> dict[str, Any]:
        types = (args.get("types") or "public_channel").split(",")
        exclude = args.get("exclude_archived") in ("true", "1")
        team = args.get("team_id")
        if info.is_enterprise_install and not team:
            raise _Error("missing_argument")
        found = []
        for cid, channel in self.channels.items():
            private = bool(channel.get("is_private"))
            kind = "private_channel" if private else "public_channel"
            if channel.get("is_im"):
                kind = "im"
            elif channel.get("is_mpim"):
                kind = "mpim"
            if kind not in types or (exclude and channel.get("is_archived")):
                continue
            if team and channel.get("context_team_id", info.team_id) != team:
                continue
            try:
                self._visible(info, cid)
            except _Error:
                continue
            found.append(channel)
        page, after = self._page(found, args)
        return {"channels": page, "response_metadata": {"next_cursor": after}}

    def _conversations_history(self, info: Token, args: dict[str, str]) -> dict[str, Any]:
        channel = self._visible(info, args.get("channel") or "")
        if info.bot_id and info.user_id not in self.members.get(channel["id"], []):
            raise _Error("not_in_channel")
        inclusive = args.get("inclusive") in ("true", "1")
        latest = args.get("latest")
        oldest = args.get("oldest")
        found = []
        for message in self.messages.get(channel["id"], []):
            ts = float(message["ts"])
            if latest and (ts > float(latest) or (ts == float(latest) and not inclusive)):
                continue
            if oldest and (ts < float(oldest) or (ts == float(oldest) and not inclusive)):
                continue
            found.append(message)
        page, after = self._page(found, args)
        return {
            "messages": page,
            "has_more": bool(after),
            "response_metadata": {"next_cursor": after},
        }

    def _get_prefs(self, info: Token, args: dict[str, str]) -> dict[str, Any]:
        if not info.org_admin:
            raise _Error("not_an_admin")
        cid = args.get("channel_id") or ""
        channel = self.channels.get(cid)
        if channel is None:
            raise _Error("channel_not_found")
        if channel.get("is_general") or channel.get("is_im") or channel.get("is_mpim"):
            raise _Error("channel_type_not_supported")
        return {"prefs": self.prefs.get(cid, {})}

    def _post_message(self, info: Token, args: dict[str, str]) -> dict[str, Any]:
        channel = self._visible(info, args.get("channel") or "")
        member = info.user_id in self.members.get(channel["id"], [])
        public = not channel.get("is_private") and channel.get("is_channel")
        if not member and not (public and "chat:write.public" in info.scopes):
            raise _Error("not_in_channel")
        if channel.get("is_archived"):
            raise _Error("is_archived")
        if not (args.get("text") or args.get("blocks") or args.get("attachments")):
            raise _Error("no_text")
        found = self.messages.setdefault(channel["id"], [])
        ts = f"{1712345678 + len(found)}.000100"
        message = {"type": "message", "user": info.user_id, "text": args.get("text", ""), "ts": ts}
        if info.bot_id:
            message["bot_id"] = info.bot_id
        found.insert(0, message)
        return {"channel": channel["id"], "ts": ts, "message": message}


class _Error(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def _arguments(request: Request) -> dict[str, str] | None:
    args = {k: v[0] for k, v in request.query.items() if v}
    if request.method == "POST" and request.body:
        kind = request.headers.get("content-type", "")
        try:
            if kind.startswith("application/json"):
                data = json.loads(request.body)
                if not isinstance(data, dict):
                    return None
                args.update({k: _text(v) for k, v in data.items()})
            else:
                form = parse_qs(request.body.decode(), keep_blank_values=True)
                args.update({k: v[0] for k, v in form.items() if v})
        except (ValueError, UnicodeDecodeError):
            return None
    return args


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
