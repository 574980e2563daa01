"""Microsoft 365 through Microsoft Graph: file sharing permissions, team, channel and chat
membership, group membership and ownership and directory roles, read live.

Graph has no "may this user do X" call; the check reads the documented grants and evaluates
them (``microsoft365/actions.json`` says what each action needs):

- ``files.*`` on a drive item (``drives/{d}/items/{i}``, ``.../root``, a user's, group's or
  site's ``drive``, ``shares/{id}``, or path-addressed ``root:/folder/file``): ``GET
  {item}/permissions`` lists its effective sharing permissions; a permission counts when
  ``grantedToV2`` or one of ``grantedToIdentitiesV2`` is the user, one of their groups
  (``checkMemberGroups``, transitive) or their SharePoint login; its ``roles`` (read, write,
  owner) must include one the action needs. The drive's owner holds every role (a group
  owner: its members write). A SharePoint site group, or an organization-wide or anonymous
  link, may grant it too but cannot be told from Graph: unknown rather than deny. A new file
  written by path is asked on its folder.
- ``teams.*`` (``teams/{t}[/channels/{c}]``): a member of the team (``/teams/{t}/members``), or
  of a private or shared channel (``.../channels/{c}/members``); ``manage`` needs the owner
  role. ``chats.*``: a member of the chat (``/chats/{c}/members``).
- ``groups.*``: a (transitive) member; ``groups.manage`` an owner (``/groups/{g}/owners``).
- ``mailbox.*`` (``users/{id or UPN}``): the user's own mailbox. Delegation (Full Access, Send
  As, folder permissions) lives in Exchange and application access policies in Exchange
  Online PowerShell; neither is readable through Graph, so another user's mailbox is unknown.
- ``sites.*``: SharePoint site permissions are not in Graph: unknown.
- ``tenant.read``: an enabled member (a guest is denied); ``tenant.admin``: one of
  ``admin_roles`` (directory role template ids) through ``transitiveMemberOf``.
- ``me`` (``/me/...``: the sending account's mailbox or drive) and ``tenant.search``
  (``POST /search/query``) answer with what the sending token holds or sees: unknown unless
  ``own_tokens: user`` (the agent sends each user's own token), then an enabled user.

Every user is read first (``accountEnabled``, ``userType``, ``userPrincipalName``): a
disabled account is denied everything, and one whose state Graph does not tell is unknown.
Signing in, the account read and the email look-up are shared with Azure (``_microsoft``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import Any
from urllib.parse import quote

from toolpass.integrations._kit import Cache, UserIds, known_action, mapped_user, ttl_key
from toolpass.integrations._microsoft import GUID, MicrosoftCloud, entra_keys
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.wire.errors import ConfigError

__all__ = ["Microsoft365"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
_ID = r"(?!\.\.?(?:/|$|:))[^/\s?#%:]{1,400}"
_DRIVE = rf"(?:shares/{_ID}|(?:{_ID}/)*?(?:drive|drives/{_ID}))"  # a drive, by any Graph path
_FILE = re.compile(rf"(?P<drive>{_DRIVE})(?:/items/{_ID}|/root)?(?::/(?P<path>[^?#]*))?")
_SHARE = re.compile(rf"shares/{_ID}")
_SHAPES = {
    "files": _FILE,
    "mailbox": re.compile(rf"users/(?P<user>{_ID})"),
    "teams": re.compile(
        rf"teams/(?P<team>{_ID})(?:/channels/(?P<channel>[^/\s?#%]{{1,400}})|/primaryChannel)?"
    ),
    "chats": re.compile(r"chats/(?P<chat>[^/\s?#%]{1,400})"),
    "groups": re.compile(rf"groups/(?P<group>{GUID.pattern})"),
    "sites": re.compile(rf"sites/{_ID}"),
    "tenant": re.compile("tenant"),
}
GLOBAL_ADMIN = "62e90394-69f5-4237-9190-012177145e10"
CREDENTIAL = (
    "Least privilege: an Entra ID app registration (Entra ID > App registrations > New "
    "registration; a client secret, certificate or federated credential) with the Microsoft "
    "Graph application permissions User.Read.All, GroupMember.Read.All, Files.Read.All (or "
    "Sites.Read.All), TeamMember.Read.All, ChannelMember.Read.All and ChatMember.Read.All, "
    "admin-consented (API permissions > Grant admin consent). All are reads; keep the app's "
    "credential away from the agent."
)


USER_IDS = UserIds(GUID, "an Entra ID object id")


class Microsoft365(MicrosoftCloud):
    """Microsoft 365, through Graph's sharing permissions, memberships and roles."""

    name = "microsoft365"
    description = (
        "Microsoft 365 through Microsoft Graph: driveItem sharing permissions (grantedToV2, "
        "grantedToIdentitiesV2, groups through checkMemberGroups, link scopes), team, channel "
        "and chat members, group members and owners, directory roles, read live; another "
        "user's mailbox and SharePoint site permissions are unknown (not in Graph). " + CREDENTIAL
    )
    default_url = "https://graph.microsoft.com"
    api = "graph"
    keys = (
        *entra_keys("Give it the Graph application permissions below.", graph_url=False),
        ConfigKey(
            "admin_roles",
            "Directory role template ids that make a user a tenant admin (tenant.admin).",
            default=[GLOBAL_ADMIN],
        ),
        ConfigKey(
            "not_found",
            "What a 404 for the item, team, chat or group means (it does not exist, or the "
            "engine cannot see it): unknown (the default) or deny.",
            default="unknown",
            choices=("unknown", "deny"),
        ),
        ConfigKey(
            "own_tokens",
            "Whose token the agent sends (/me/... and POST /search/query answer what that "
            "token's account holds or sees): user (each user's own token) or unknown (they "
            "are unknown).",
            default="unknown",
            choices=("user", "unknown"),
        ),
        ttl_key("permission", "an item's permissions, a team's members and a user's account", 60.0),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kept = partial(Cache.option, self, "permission_cache_ttl", keep_none=False)
        self._lists: Cache[str, list[dict[str, Any]] | None] = kept()
        self._objects: Cache[str, dict[str, Any] | None] = kept()

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        super().validate(options)
        roles = options.get("admin_roles")
        if not isinstance(roles, list) or not all(
            isinstance(r, str) and GUID.fullmatch(r) for r in roles
        ):
            raise ConfigError("must be a list of role template ids (GUIDs)", "admin_roles")

    # --- reads, kept a while -----------------------------------------------------------
    def _read(
        self, what: str, path: str, *, listed: bool = False, params: Mapping[str, str] | None = None
    ) -> Any:
        """A Graph object, or list (``listed``), kept ``permission_cache_ttl``; None for a
        404 (not kept)."""

        query = dict(params or {}) or None
        if listed:
            return self._lists.get(path, lambda: self.graph_list(path, what=what, params=query))
        return self._objects.get(
            path, lambda: self.graph(path, what=what, params=query, absent=(404,))
        )

    def _absent(self, text: str) -> Decision:
        if self.options.get("not_found") == "deny":
            return Decision.deny(text)
        return Decision.unknown(text)

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        declared = known_action(self, action)
        if isinstance(declared, Decision):
            return declared
        area = action.partition(".")[0]
        own = resource == "me" or resource.startswith("me/")
        sender = own or declared.terms.get("answers_for") == "sender"
        shape = _SHAPES[area].fullmatch(resource)
        if shape is None and not sender:
            return Decision.unknown(
                f"{action} is not asked on {resource!r} (see toolpass catalog microsoft365)",
                cause="resource",
            )
        oid = mapped_user(self, user, USER_IDS)
        if isinstance(oid, Decision):
            return oid
        account = self.account(oid)
        refused = self.account_refusal(oid, account)
        if refused is not None:
            return refused
        assert account is not None
        if sender:
            return self._own_token(oid, resource)
        assert shape is not None
        if area == "files":
            return self._files(oid, account, declared, resource, shape)
        if area == "mailbox":
            return self._mailbox(oid, account, shape["user"], resource)
        if area in ("teams", "chats"):
            return self._members(oid, declared, resource, shape)
        if area == "groups":
            return self._group(oid, declared, shape["group"])
        if area == "sites":
            return Decision.unknown(
                f"SharePoint site permissions of {resource} are not readable through Graph"
            )
        if declared.terms.get("needs") == "member":
            if account.get("userType") == "Guest":
                return Decision.deny(f"{oid} is a guest of the tenant")
            return Decision.allow(f"{oid} is an enabled member of the tenant")
        return self._admin(oid)

    def _own_token(self, oid: str, resource: str) -> Decision:
        """What the sending token's account holds or sees is this user's only when the
        token is the user's own."""
        if self.options.get("own_tokens") != "user":
            return Decision.unknown(
                f"{resource} answers with what the sending token's account holds or sees, not "
                "what this user can (set own_tokens: user when the agent sends each user's own "
                "token)"
            )
        return Decision.allow(f"{oid} is enabled and the agent sends the user's own token")

    def _files(
        self, oid: str, account: Mapping[str, Any], action: Action, ref: str, shape: re.Match[str]
    ) -> Decision:
        wanted = set(action.terms.get("roles") or ())
        item = ref
        if shape["path"] is not None:
            item = ref.rsplit(":/", 1)[0] if shape["path"].count(":/") else ref
        if _SHARE.fullmatch(item):
            shared = self._shared(item)
            if shared is None:
                return self._absent(f"Graph has no shared item {ref}")
            item = shared
        perms = self._permissions(item)
        if perms is None and ":/" in item and action.effect != "read":
            item = item.rsplit("/", 1)[0].removesuffix(":")  # a new file: its folder
            perms = self._permissions(item)
        if perms is None:
            return self._absent(f"Graph has no drive item {item} the engine can see (404)")
        held, maybe, groups = self._grants(oid, account, perms)
        for gid in self.member_of(oid, sorted(groups)) if groups else ():
            held |= groups.get(gid, set())
        if not held & wanted:
            held |= self._drive_owner(oid, shape["drive"])
        if held & wanted:
            return Decision.allow(f"{oid} holds {'/'.join(sorted(held & wanted))} on {item}")
        for how, roles in maybe:
            if roles & wanted:
                return Decision.unknown(f"{how} may give {oid} {action.name} on {item}")
        has = f"only {', '.join(sorted(held))}" if held else "no permission"
        return Decision.deny(f"{oid} holds {has} on {item}, not {action.name}")

    def _permissions(self, item: str) -> list[dict[str, Any]] | None:
        suffix = ":/permissions" if ":/" in item else "/permissions"
        path = "/" + quote(item, safe="/!:@$'()*+,;=-._~") + suffix
        found = self._read(f"read the permissions of {item}", path, listed=True)
        return found if isinstance(found, list) else None

    def _shared(self, share: str) -> str | None:
        found = self._read(
            f"resolve {share}", f"/{share}/driveItem", params={"$select": "id,parentReference"}
        )
        drive = (found or {}).get("parentReference", {}).get("driveId")
        if not found or not isinstance(drive, str) or not isinstance(found.get("id"), str):
            return None
        return f"drives/{drive}/items/{found['id']}"

    def _grants(
        self, oid: str, account: Mapping[str, Any], perms: list[dict[str, Any]]
    ) -> tuple[set[str], list[tuple[str, set[str]]], dict[str, set[str]]]:
        """The roles granted to the user, what may grant more, and roles by group id."""
        held: set[str] = set()
        maybe: list[tuple[str, set[str]]] = []
        groups: dict[str, set[str]] = {}
        login = "|" + str(account.get("userPrincipalName") or "").lower()
        for p in perms:
            roles = {str(r).lower() for r in p.get("roles") or [] if isinstance(r, str)}
            grantees = [p.get("grantedToV2"), *(p.get("grantedToIdentitiesV2") or [])]
            for g in (g for g in grantees if isinstance(g, dict)):
                who = {k: v for k, v in g.items() if isinstance(v, dict)}
                if str(who.get("user", {}).get("id", "")).lower() == oid.lower():
                    held |= roles
                elif GUID.fullmatch(str(who.get("group", {}).get("id", ""))):
                    groups.setdefault(str(who["group"]["id"]).lower(), set()).update(roles)
                elif str(who.get("siteUser", {}).get("loginName", "")).lower().endswith(login):
                    held |= roles
                elif "siteGroup" in who:
                    name = who["siteGroup"].get("displayName", "?")
                    maybe.append((f"the SharePoint site group {name}", roles))
            scope = (p.get("link") or {}).get("scope")
            if scope == "anonymous" or (
                scope == "organization" and account.get("userType") != "Guest"
            ):
                maybe.append((f"an {scope} sharing link (if the user has it)", roles))
        return held, maybe, groups

    def _drive_owner(self, oid: str, drive: str) -> set[str]:
        if _SHARE.fullmatch(drive):
            return set()
        found = self._read(
            f"read the owner of {drive}", f"/{drive}", params={"$select": "id,owner"}
        )
        owner = (found or {}).get("owner") or {}
        if str((owner.get("user") or {}).get("id", "")).lower() == oid.lower():
            return {"owner"}
        group = str((owner.get("group") or {}).get("id", ""))
        if GUID.fullmatch(group) and self.member_of(oid, [group]):
            return {"write"}
        return set()

    def _mailbox(self, oid: str, account: Mapping[str, Any], who: str, ref: str) -> Decision:
        mine = {
            oid.lower(),
            str(account.get("userPrincipalName")).lower(),
            str(account.get("mail")).lower(),
        }
        if who.lower() in mine:
            return Decision.allow(f"{ref} is {oid}'s own mailbox")
        return Decision.unknown(
            f"{ref} is not {oid}'s own mailbox; delegated mailbox access (Full Access, Send As, "
            "folder permissions) and application access policies are Exchange's, not readable "
            "through Graph"
        )

    def _members(self, oid: str, declared: Action, ref: str, shape: re.Match[str]) -> Decision:
        if declared.terms.get("live_only"):  # an archived team is read-only
            team = f"/teams/{quote(shape['team'])}"
            info = self._read(f"read the team {ref}", team, params={"$select": "id,isArchived"})
            if info is None:
                return self._absent(f"Graph has no team {ref} the engine can see (404)")
            if info.get("isArchived") is not False:
                if info.get("isArchived") is True:
                    return Decision.deny(f"the team of {ref} is archived, so it is read-only")
                raise LookupFailed("Graph's team answer does not say whether it is archived")
        if "chat" in shape.groupdict():  # a chat's members, else a team's or channel's
            path = f"/chats/{quote(shape['chat'], safe=':@')}/members"
        else:
            path = f"/teams/{quote(shape['team'])}/members"
            channel = shape["channel"]
            if channel is not None:
                where = f"/teams/{quote(shape['team'])}/channels/{quote(channel, safe=':@')}"
                info = self._read(
                    f"read the channel {ref}",
                    where,
                    params={"$select": "id,membershipType"},
                )
                if info is None:
                    return self._absent(f"Graph has no channel {ref} the engine can see (404)")
                if info.get("membershipType") in ("private", "shared"):
                    path = f"{where}/members"
        members = self._read(f"list the members of {ref}", path, listed=True)
        if members is None:
            return self._absent(f"Graph has no {ref} the engine can see (404)")
        entry = next((m for m in members if str(m.get("userId", "")).lower() == oid.lower()), None)
        if entry is None:
            return Decision.deny(f"{oid} is not a member of {ref}")
        roles = {str(r).lower() for r in entry.get("roles") or []}
        if "owner" in declared.terms["roles"] and "owner" not in roles:
            return Decision.deny(f"{oid} is a member of {ref} but not an owner")
        return Decision.allow(f"{oid} is {'an owner' if 'owner' in roles else 'a member'} of {ref}")

    def _group(self, oid: str, declared: Action, group: str) -> Decision:
        if "owner" in declared.terms["roles"]:
            path = f"/groups/{group}/owners"
            what = f"list the owners of group {group}"
            owners = self._read(what, path, listed=True, params={"$select": "id"})
            if owners is None:
                return self._absent(f"Graph has no group {group} the engine can see (404)")
            if any(str(o.get("id", "")).lower() == oid.lower() for o in owners):
                return Decision.allow(f"{oid} owns the group {group}")
            return Decision.deny(f"{oid} is not an owner of the group {group}")
        if self.member_of(oid, [group]):
            return Decision.allow(f"{oid} is a member of the group {group}")
        return Decision.deny(f"{oid} is not a member of the group {group}")

    def _admin(self, oid: str) -> Decision:
        path = f"/users/{oid}/transitiveMemberOf/microsoft.graph.directoryRole"
        select = {"$select": "id,displayName,roleTemplateId"}
        roles = self._read("list the user's directory roles", path, listed=True, params=select)
        if roles is None:
            raise LookupFailed(f"Graph has no user {oid} to list directory roles of")
        admin = {r.lower() for r in self.options.get("admin_roles") or [GLOBAL_ADMIN]}
        held = [r for r in roles if str(r.get("roleTemplateId", "")).lower() in admin]
        if held:
            return Decision.allow(f"{oid} holds the directory role {held[0].get('displayName')}")
        return Decision.deny(f"{oid} holds none of the tenant's admin roles")

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        data = self.graph(
            "/users", what="list users (User.Read.All)", params={"$top": "1", "$select": "id"}
        )
        if not isinstance(data.get("value"), list):
            return ProbeResult(False, "Graph's /users answer has no value list")
        return ProbeResult(True, f"the engine reads the directory through {self.config.url}")


INTEGRATION = Microsoft365
