"""Slack's connection keys (the workspace policies the engine's token cannot read are among
them), and their cross-key checks."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolpass.integrations._kit import ttl_key
from toolpass.integrations.base import ConfigKey
from toolpass.wire.errors import ConfigError

__all__ = ["KEYS", "TEAM_ID", "validate"]

TEAM_ID = re.compile(r"[TE][A-Z0-9]{2,30}")

KEYS: tuple[ConfigKey, ...] = (
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
        minimum=1,
        maximum=1000,
    ),
    ConfigKey(
        "max_pages",
        "The most pages one membership or name look-up may read before it is unknown.",
        default=50,
        minimum=1,
    ),
    ttl_key(
        "user", "a user's flags (deleted, guest, admin)", 30.0, kept="are reused between checks"
    ),
    ttl_key("name", "a resolved channel:#name", 300.0, kept="is reused"),
)


def validate(options: Mapping[str, Any]) -> None:
    """Cross-key checks of a Slack connection's options: see the key descriptions."""
    if options.get("posting_prefs") and options.get("admin_token") is None:
        raise ConfigError("posting_prefs needs admin_token (an org admin's token)", "admin_token")
    team = options.get("team_id")
    if team is not None and not TEAM_ID.fullmatch(team):
        raise ConfigError("must be a Slack workspace id such as T0123ABCD", "team_id")
