"""Generate Slack's route table from slack_sdk's ``WebClient``.

Source: the PyPI package ``slack_sdk`` (``slack_sdk/web/client.py``): one ``WebClient``
method per Web API method, each calling ``self.api_call("<method>", ...)``. Fetch it and run::

    pip download --no-deps -d /tmp/slack slack_sdk
    unzip -q -o /tmp/slack/slack_sdk-*.whl -d /tmp/slack/src
    python -m toolpass.integrations.slack.generate --source /tmp/slack/src

Every Web API method is ``https://slack.com/api/<method>`` and Slack accepts each one by GET
and by POST (arguments in the query string, a form or a JSON body), so each method gets two
rows, ``GET /<method>`` and ``POST /<method>`` (paths are relative to the connection URL,
``https://slack.com/api``), with the same action and effect: the effect is the method's, never
the verb's. The resource names the conversation from the method's own argument
(``channel``, ``channel_id``, or a single ``channels`` entry; ``{query.x}`` on GET rows,
``{body.x}`` on POST rows; ``Slack.match_request`` also reads the other place, since Slack
takes arguments from either), ``message:<channel>/<ts>`` for edits and deletions, and
``workspace`` for everything not bound to one conversation.

The mapping is curated below as data (``DIRECT``, ``ALIASES``, ``SPECIAL``, the ``admin.*``
rule): a method the integration declares maps to itself; legacy ``channels.*``, ``groups.*``,
``im.*`` and ``mpim.*`` methods map to their ``conversations.*`` successors; everything else to
the strongest sensible declared action (content that no single conversation bounds, such as
search and ``files.info``, needs ``admin.read``: only an admin passes the user's check, and as
the agent it goes through). Flags follow permission-apis.md section 10.4: ``u`` for methods
returning messages, files and profiles, ``s`` for methods that post, share or invite, ``a``
for the agent's own identity, tokens and connections. People look-ups (``users.info``,
``users.lookupByEmail``, ``users.profile.get``, ...) are ``workspace.read``, checked as the
user; ``rtm.start`` answers the workspace as the token's user sees it (private channels and
DMs too), so it is ``sender_lists``: unknown unless ``search_tokens: user`` (#19).

The output is sorted and deterministic: ``routes.json`` beside this file.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/slack/routes.json"

# Actions the integration declares and the methods that map to themselves.
DIRECT = {
    "conversations.history",
    "conversations.replies",
    "conversations.info",
    "conversations.members",
    "pins.list",
    "bookmarks.list",
    "chat.postMessage",
    "chat.postEphemeral",
    "chat.scheduleMessage",
    "chat.meMessage",
    "files.upload",
    "files.completeUploadExternal",
    "reactions.add",
    "reactions.remove",
    "pins.add",
    "pins.remove",
    "bookmarks.add",
    "conversations.setTopic",
    "conversations.setPurpose",
    "conversations.invite",
    "conversations.join",
    "conversations.leave",
    "conversations.rename",
    "conversations.kick",
    "conversations.archive",
    "conversations.unarchive",
    "chat.update",
    "chat.delete",
    "conversations.create",
    "admin.conversations.archive",
    "admin.conversations.rename",
    "admin.conversations.invite",
    "admin.conversations.setConversationPrefs",
    "admin.users.invite",
    "admin.users.remove",
    "conversations.mark",
    "conversations.close",
    "conversations.open",
}

# Legacy families, retired in favour of conversations.*: the same rule.
LEGACY = ("channels", "groups", "im", "mpim")
LEGACY_VERBS = {
    "history": "conversations.history",
    "replies": "conversations.replies",
    "info": "conversations.info",
    "invite": "conversations.invite",
    "kick": "conversations.kick",
    "leave": "conversations.leave",
    "archive": "conversations.archive",
    "unarchive": "conversations.unarchive",
    "rename": "conversations.rename",
    "setPurpose": "conversations.setPurpose",
    "setTopic": "conversations.setTopic",
    "mark": "conversations.mark",
    "close": "conversations.close",
    "open": "conversations.open",
    "create": "conversations.create",
    "createChild": "conversations.create",
    "join": "conversations.join",
    "list": "workspace.read",
}

# method -> (action, resource kind). Kinds: "channel" (the method's channel argument),
# "message" (channel + ts), "workspace", "join" (channels.join by name).
SPECIAL: dict[str, tuple[str, str]] = {
    # the agent's own identity, tokens and connections (flag a)
    "api.test": ("workspace.read", "workspace"),
    "auth.test": ("workspace.read", "workspace"),
    "auth.teams.list": ("workspace.read", "workspace"),
    "auth.revoke": ("workspace.write", "workspace"),
    "users.identity": ("workspace.read", "workspace"),
    "openid.connect.userInfo": ("workspace.read", "workspace"),
    "openid.connect.token": ("workspace.write", "workspace"),
    "oauth.access": ("workspace.write", "workspace"),
    "oauth.v2.access": ("workspace.write", "workspace"),
    "oauth.v2.exchange": ("workspace.write", "workspace"),
    "tooling.tokens.rotate": ("workspace.write", "workspace"),
    "apps.connections.open": ("workspace.write", "workspace"),
    "rtm.connect": ("workspace.read", "workspace"),
    # the workspace as the token's user sees it: its private channels, DMs and users (#19)
    "rtm.start": ("sender_lists", "workspace"),
    # people look-ups: the workspace's directory, checked as the user (#19)
    "users.lookupByEmail": ("workspace.read", "workspace"),
    "users.discoverableContacts.lookup": ("workspace.read", "workspace"),
    "users.info": ("workspace.read", "workspace"),
    "users.getPresence": ("workspace.read", "workspace"),
    "users.profile.get": ("workspace.read", "workspace"),
    "bots.info": ("workspace.read", "workspace"),
    "migration.exchange": ("workspace.read", "workspace"),
    "assistant.search.info": ("workspace.read", "workspace"),
    "blocks.validate": ("workspace.read", "workspace"),
    # the workspace's directory, for its full members
    "users.list": ("workspace.read", "workspace"),
    "users.conversations": ("workspace.read", "workspace"),
    "conversations.list": ("workspace.read", "workspace"),
    "usergroups.list": ("workspace.read", "workspace"),
    "usergroups.users.list": ("workspace.read", "workspace"),
    "emoji.list": ("workspace.read", "workspace"),
    "team.info": ("workspace.read", "workspace"),
    "team.profile.get": ("workspace.read", "workspace"),
    "team.preferences.list": ("workspace.read", "workspace"),
    "dnd.info": ("workspace.read", "workspace"),
    "dnd.teamInfo": ("workspace.read", "workspace"),
    "reminders.list": ("workspace.read", "workspace"),
    "reminders.info": ("workspace.read", "workspace"),
    "calls.info": ("workspace.read", "workspace"),
    "slackbot.skills.info": ("workspace.read", "workspace"),
    "slackbot.skills.list": ("workspace.read", "workspace"),
    # content no single conversation bounds: search, files, saved items, canvases, lists
    "search.all": ("admin.read", "workspace"),
    "search.files": ("admin.read", "workspace"),
    "search.messages": ("admin.read", "workspace"),
    "assistant.search.context": ("admin.read", "workspace"),
    "files.info": ("admin.read", "workspace"),
    "files.remote.info": ("admin.read", "workspace"),
    "stars.list": ("admin.read", "workspace"),
    "reactions.list": ("admin.read", "workspace"),
    "canvases.getContent": ("admin.read", "workspace"),
    "canvases.sections.lookup": ("admin.read", "workspace"),
    "slackLists.items.info": ("admin.read", "workspace"),
    "slackLists.items.list": ("admin.read", "workspace"),
    "slackLists.download.get": ("admin.read", "workspace"),
    "slackLists.download.start": ("admin.read", "workspace"),
    "team.accessLogs": ("admin.read", "workspace"),
    "team.billableInfo": ("admin.read", "workspace"),
    "team.billing.info": ("admin.read", "workspace"),
    "team.integrationLogs": ("admin.read", "workspace"),
    "team.externalTeams.list": ("admin.read", "workspace"),
    "apps.event.authorizations.list": ("admin.read", "workspace"),
    "apps.manifest.export": ("admin.read", "workspace"),
    "apps.manifest.validate": ("admin.read", "workspace"),
    "conversations.listConnectInvites": ("admin.read", "workspace"),
    "conversations.requestSharedInvite.list": ("admin.read", "workspace"),
    # reads of one conversation
    "chat.getPermalink": ("conversations.info", "channel"),
    "reactions.get": ("conversations.history", "channel"),
    "files.list": ("conversations.history", "channel"),
    "files.remote.list": ("conversations.history", "channel"),
    "chat.scheduledMessages.list": ("conversations.history", "channel"),
    "agents.conversations.getCanvas": ("conversations.history", "channel"),
    "agents.conversations.listViews": ("conversations.info", "channel"),
    "workflows.featured.list": ("conversations.info", "channel"),
    # posting in one conversation
    "chat.startStream": ("chat.postMessage", "channel"),
    "chat.appendStream": ("chat.postMessage", "channel"),
    "chat.stopStream": ("chat.postMessage", "channel"),
    "chat.unfurl": ("chat.postMessage", "channel"),
    "chat.deleteScheduledMessage": ("chat.scheduleMessage", "channel"),
    "conversations.canvases.create": ("chat.postMessage", "channel"),
    "assistant.threads.setStatus": ("chat.postMessage", "channel"),
    "assistant.threads.setTitle": ("chat.postMessage", "channel"),
    "assistant.threads.setSuggestedPrompts": ("chat.postMessage", "channel"),
    "agents.sessions.rename": ("chat.postMessage", "channel"),
    "agents.sessions.setStatus": ("chat.postMessage", "channel"),
    "files.remote.share": ("files.upload", "channel"),
    "bookmarks.edit": ("bookmarks.add", "channel"),
    "bookmarks.remove": ("bookmarks.add", "channel"),
    "workflows.featured.add": ("bookmarks.add", "channel"),
    "workflows.featured.remove": ("bookmarks.add", "channel"),
    "workflows.featured.set": ("bookmarks.add", "channel"),
    "conversations.inviteShared": ("conversations.invite", "channel"),
    "agents.conversations.archive": ("conversations.archive", "channel"),
    "agents.conversations.create": ("conversations.create", "workspace"),
    "agents.conversations.setCanvasContent": ("conversations.rename", "channel"),
    "agents.conversations.setView": ("conversations.rename", "channel"),
    "agents.conversations.removeView": ("conversations.rename", "channel"),
    "agents.conversations.setCommands": ("conversations.rename", "channel"),
    "agents.conversations.setProperties": ("conversations.rename", "channel"),
    "channels.join": ("conversations.join", "join"),
    # a member's own state, outside any conversation
    "files.getUploadURLExternal": ("workspace.write", "workspace"),
    "reminders.add": ("workspace.write", "workspace"),
    "reminders.complete": ("workspace.write", "workspace"),
    "reminders.delete": ("workspace.write", "workspace"),
    "dnd.endDnd": ("workspace.write", "workspace"),
    "dnd.endSnooze": ("workspace.write", "workspace"),
    "dnd.setSnooze": ("workspace.write", "workspace"),
    "users.setPresence": ("workspace.write", "workspace"),
    "users.setPhoto": ("workspace.write", "workspace"),
    "users.deletePhoto": ("workspace.write", "workspace"),
    "stars.add": ("workspace.write", "workspace"),
    "stars.remove": ("workspace.write", "workspace"),
    "slackbot.skills.library.add": ("workspace.write", "workspace"),
    "slackbot.skills.library.remove": ("workspace.write", "workspace"),
    # Slack Connect: an admin's decision
    "conversations.acceptSharedInvite": ("admin.manage", "workspace"),
    "conversations.approveSharedInvite": ("admin.manage", "workspace"),
    "conversations.declineSharedInvite": ("admin.manage", "workspace"),
    "conversations.requestSharedInvite.approve": ("admin.manage", "workspace"),
    "conversations.requestSharedInvite.deny": ("admin.manage", "workspace"),
    "conversations.externalInvitePermissions.set": ("admin.manage", "channel"),
    "team.externalTeams.disconnect": ("admin.manage", "workspace"),
}
# Every other method (user groups, emoji, files of anyone, canvases, lists, calls, apps,
# views, workflows, functions, skills, someone's profile): workspace.manage on the workspace.
FALLBACK = ("workspace.manage", "workspace")

AGENT = {
    "api.test",
    "auth.test",
    "auth.teams.list",
    "auth.revoke",
    "users.identity",
    "openid.connect.userInfo",
    "openid.connect.token",
    "oauth.access",
    "oauth.v2.access",
    "oauth.v2.exchange",
    "tooling.tokens.rotate",
    "apps.connections.open",
    "rtm.connect",
    "migration.exchange",
    "assistant.search.info",
    "blocks.validate",
}
UNTRUSTED_ACTIONS = {
    "conversations.history",
    "conversations.replies",
    "pins.list",
    "bookmarks.list",
    "conversations.info",
}
UNTRUSTED = {
    "rtm.start",
    "users.info",
    "users.profile.get",
    "users.list",
    "users.conversations",
    "conversations.list",
    "usergroups.list",
    "team.profile.get",
    "reminders.list",
    "reminders.info",
    "search.all",
    "search.files",
    "search.messages",
    "assistant.search.context",
    "files.info",
    "files.remote.info",
    "stars.list",
    "reactions.list",
    "canvases.getContent",
    "canvases.sections.lookup",
    "slackLists.items.info",
    "slackLists.items.list",
    "slackLists.download.get",
    "apps.manifest.export",
    "slackbot.skills.info",
    "slackbot.skills.list",
    "admin.conversations.search",
    "admin.users.list",
    "admin.workflows.search",
    "admin.analytics.getFile",
    "calls.info",
    "users.discoverableContacts.lookup",
    "users.lookupByEmail",
    "bots.info",
    "conversations.requestSharedInvite.list",
    "conversations.listConnectInvites",
}
SENDS_ACTIONS = {
    "chat.postMessage",
    "chat.postEphemeral",
    "chat.scheduleMessage",
    "chat.meMessage",
    "chat.update",
    "files.upload",
    "files.completeUploadExternal",
    "reactions.add",
    "pins.add",
    "bookmarks.add",
    "conversations.setTopic",
    "conversations.setPurpose",
    "conversations.invite",
    "conversations.create",
    "conversations.archive",
    "admin.conversations.invite",
    "admin.users.invite",
}
SENDS = {
    "files.sharedPublicURL",
    "canvases.access.set",
    "canvases.create",
    "slackLists.access.set",
    "views.open",
    "views.push",
    "views.update",
    "views.publish",
    "dialog.open",
    "entity.presentDetails",
    "reminders.add",
    "calls.add",
    "calls.participants.add",
    "conversations.acceptSharedInvite",
    "conversations.approveSharedInvite",
    "conversations.requestSharedInvite.approve",
    "conversations.externalInvitePermissions.set",
    "admin.users.assign",
    "admin.conversations.setTeams",
    "admin.conversations.convertToPublic",
    "admin.conversations.create",
    "admin.teams.settings.setDefaultChannels",
    "admin.usergroups.addChannels",
    "usergroups.users.update",
    "chat.unfurl",
    "admin.inviteRequests.approve",
    "apps.user.connection.requestAuth",
}
READ_VERB = re.compile(
    r"^(list|get|lookup|info|search|export|listGroups|listChannels|"
    r"listAssignments|listOriginalConnectedChannelInfo)",
    re.I,
)
DESTRUCTIVE_VERB = re.compile(
    r"^(delete|remove|archive|kick|uninstall|revoke|disconnect|bulkDelete|bulkArchive|"
    r"invalidate|reset|unlink|unpublish|clear|deleteScheduledMessage|deletePhoto)"
)
CHANNEL_ARGS = ("channel", "channel_id")
LIST_ARGS = ("channels", "channel_ids")  # accepted when they name a single conversation
MESSAGE_TS = ("ts", "timestamp", "message_ts")
EFFECTS = {"read": 0, "write": 1, "destructive": 2}


def declared() -> dict[str, str]:
    """The integration's actions and their effects (read from the module itself)."""
    sys.path.insert(0, str(OUT.parents[3]))
    from toolpass.integrations.slack import Slack

    return {a.name: a.effect for a in Slack.actions}


def methods(source: Path) -> dict[str, list[str]]:
    """Web API method name -> the WebClient method's argument names."""
    client = source / "slack_sdk/web/client.py"
    tree = ast.parse(client.read_text())
    found: dict[str, list[str]] = {}
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "WebClient")
    for fn in cls.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for call in ast.walk(fn):
            if (
                isinstance(call, ast.Call)
                and getattr(call.func, "attr", None) == "api_call"
                and call.args
                and isinstance(call.args[0], ast.Constant)
            ):
                args = [a.arg for a in fn.args.args[1:]] + [a.arg for a in fn.args.kwonlyargs]
                found.setdefault(call.args[0].value, []).extend(args)
    return found


def classify(method: str, args: list[str]) -> tuple[str, str]:
    if method in SPECIAL:
        return SPECIAL[method]
    family, _, verb = method.partition(".")
    if family in LEGACY and verb in LEGACY_VERBS:
        action = LEGACY_VERBS[verb]
        workspace = ("workspace.read", "conversations.create", "conversations.open")
        return action, "workspace" if action in workspace else "channel"
    if method in DIRECT:
        if method in ("chat.update", "chat.delete"):
            return method, "message"
        if method in ("conversations.create", "conversations.open"):
            return method, "workspace"
        named = any(a in args for a in CHANNEL_ARGS) or method == "files.upload"
        return method, "channel" if named else "workspace"
    if family == "admin":
        last = method.rsplit(".", 1)[1]
        action = "admin.read" if READ_VERB.match(last) else "admin.manage"
        return action, "channel" if "channel_id" in args else "workspace"
    return FALLBACK


def resource(kind: str, args: list[str], place: str) -> str:
    if kind == "workspace":
        return "workspace"
    if kind == "join":
        return f"channel:#{{{place}.name}}"
    channel = next((a for a in CHANNEL_ARGS + LIST_ARGS if a in args), None)
    if channel is None:
        raise SystemExit(f"no channel argument among {args}")
    if kind == "message":
        ts = next(a for a in MESSAGE_TS if a in args)
        return f"message:{{{place}.{channel}}}/{{{place}.{ts}}}"
    return f"channel:{{{place}.{channel}}}"


def effect(method: str, action: str, actions: dict[str, str]) -> str:
    base = actions[action]
    if base == "read":
        return "read"
    last = method.rsplit(".", 1)[1]
    if DESTRUCTIVE_VERB.match(last) and not last.startswith("unarchive"):
        return "destructive"
    return base


def flags(method: str, action: str) -> str:
    out = ""
    if method in UNTRUSTED or action in UNTRUSTED_ACTIONS:
        out += "u"
    last = method.rsplit(".", 1)[1]
    if method in SENDS or (action in SENDS_ACTIONS and not DESTRUCTIVE_VERB.match(last)):
        out += "s"
    if method in AGENT:
        out += "a"
    return out


def build(source: Path) -> list[list[str]]:
    actions = declared()
    rows = []
    for method, args in sorted(methods(source).items()):
        action, kind = classify(method, args)
        if action not in actions:
            raise SystemExit(f"{method}: {action} is not a declared slack action")
        eff = effect(method, action, actions)
        for verb, place in (("GET", "query"), ("POST", "body")):
            rows.append(
                [
                    verb,
                    f"/{method}",
                    action,
                    resource(kind, args, place),
                    eff,
                    flags(method, action),
                ]
            )
    return sorted(rows, key=lambda r: (r[1], r[0]))


def version(source: Path) -> str:
    text = (source / "slack_sdk/version.py").read_text()
    found = re.search(r"__version__ = \"([^\"]+)\"", text)
    return found.group(1) if found else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="the unpacked slack_sdk wheel")
    parser.add_argument("--out", type=Path, default=OUT)
    ns = parser.parse_args()
    rows = build(ns.source)
    data = {
        "source": f"PyPI slack_sdk {version(ns.source)} (slack_sdk/web/client.py, WebClient)",
        "generator": "core/src/toolpass/integrations/slack/generate.py",
        "routes": rows,
    }
    ns.out.write_text(dump(data))
    print(f"{len(rows)} routes ({len(rows) // 2} methods) -> {ns.out}")  # noqa: T201


if __name__ == "__main__":
    main()
