"""Google Workspace: Drive, Gmail, Calendar and the Admin console, asked live.

There is no one "may this user" API; each area is asked its own way:

- Drive (Docs and Sheets are Drive files): ``files.get?fields=capabilities`` asked *as the
  user* (domain-wide delegation): the answer is the user's own effective access (``canEdit``,
  ``canShare``, ``canDelete``, ...); a file the user cannot see answers 404 (deny). A shared
  drive likewise (``drives.get?fields=capabilities``).
- Gmail: a mailbox is the user's (primary email or an alias), or the user is an accepted
  delegate of it (``users.settings.delegates.list`` asked as the mailbox's owner).
- Calendar: the user's own primary calendar, else the ``accessRole`` of the calendar in the
  user's calendar list (asked as the user); a calendar not in the list is unknown.
- Admin console: the user's role assignments for the customer (``roleassignments?userKey=
  &includeIndirectRoleAssignments=true``, through groups too) and their roles' privileges
  (``USERS_UPDATE``, ``GROUPS_ALL``, ...; a super admin role holds all); a privilege held only
  for an organizational unit, or through an assignment with a ``condition`` (security groups
  only, ...), is unknown for the customer. Users with ``isAdmin`` are super
  admins.
- Groups: ``members.hasMember`` (nested groups included).

Users are primary emails. The look-up ``directory`` reads ``users.get`` (an alias maps to its
user's primary email; exact match only). A suspended user is denied everything.

The engine signs in as a service account with domain-wide delegation
(``integrations/_google.py``): ``subject`` is the read-only admin the Directory calls act as;
Drive, Calendar and Gmail checks act as the user (or the mailbox owner) with read-only scopes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import Any
from urllib.parse import quote

from toolpass.integrations._google import GoogleIntegration, auth_keys
from toolpass.integrations._kit import Cache, known_action, paged, ttl_key
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.wire.errors import ConfigError
from toolpass.wire.http import check_url

__all__ = ["GoogleWorkspace"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
_SCOPE = "https://www.googleapis.com/auth/"
DIRECTORY_SCOPES = tuple(
    _SCOPE + s
    for s in (
        "admin.directory.user.readonly",
        "admin.directory.group.member.readonly",
        "admin.directory.rolemanagement.readonly",
    )
)
DRIVE_SCOPES = (_SCOPE + "drive.metadata.readonly",)
SHARED_DRIVE_SCOPES = (_SCOPE + "drive.readonly",)  # drives.get takes no metadata scope
CALENDAR_SCOPES = (_SCOPE + "calendar.calendarlist.readonly",)
GMAIL_SCOPES = (_SCOPE + "gmail.settings.basic",)
_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
_EMAIL = re.compile(r"[^@\s/:]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_CALENDAR = re.compile(r"[^\s/]{1,300}")
CREDENTIAL = (
    "Least privilege: a service account (Google Cloud console > IAM & Admin > Service "
    "Accounts; a JSON key) with domain-wide delegation (Admin console > Security > API "
    "controls > Domain-wide delegation: its client id) for only these read-only scopes: "
    + ", ".join((*DIRECTORY_SCOPES, *DRIVE_SCOPES, *CALENDAR_SCOPES, *GMAIL_SCOPES))
    + " (and drive.readonly only where shared drives' actions drive.drive.* are checked: "
    "drives.get accepts no narrower scope); and, as subject, an admin account with a custom "
    "admin role holding only the read privileges Users > Read, Groups > Read and Admin "
    "roles > Read (not a super admin)."
)


class GoogleWorkspace(GoogleIntegration):
    """Google Workspace, through Drive capabilities, Gmail delegates, calendar access roles
    and Admin SDK role assignments."""

    name = "google_workspace"
    description = (
        "Google Workspace: Drive files' capabilities asked as the user (domain-wide "
        "delegation: files.get?fields=capabilities), Gmail delegates, the user's calendar "
        "access roles, Admin SDK role assignments and privileges, group membership "
        "(members.hasMember), asked live. " + CREDENTIAL
    )
    default_url = "https://www.googleapis.com"
    identity_modes = ("directory",)
    keys = (
        *auth_keys(
            DIRECTORY_SCOPES,
            "The admin the engine's Directory calls act as (domain-wide delegation); "
            "required with auth service_account.",
        ),
        ConfigKey("admin_url", "The Admin SDK's URL.", default="https://admin.googleapis.com"),
        ConfigKey("gmail_url", "Gmail's API URL.", default="https://gmail.googleapis.com"),
        ConfigKey(
            "customer",
            "The customer id the Admin SDK calls name (my_customer: the subject's).",
            default="my_customer",
        ),
        ConfigKey(
            "drive_tokens",
            "Whose credential the agent lists and searches Drive with (files.list, "
            "changes.list, drives.list answer what that credential can see): user (each "
            "user's own, or delegated as the user) or unknown (drive.list is unknown).",
            default="unknown",
            choices=("user", "unknown"),
        ),
        ttl_key("user", "a user's directory record and admin privileges", 300.0),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kept = partial(Cache.option, self, "user_cache_ttl")
        self._people: Cache[str, dict[str, Any] | None] = kept(keep_none=False)
        self._privileges: Cache[str, tuple[bool, frozenset[str], frozenset[str]]] = kept()

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        super().validate(options)
        if options.get("auth", "service_account") == "service_account" and not options.get(
            "subject"
        ):
            raise ConfigError("auth service_account needs subject (an admin to act as)", "subject")
        for key in ("admin_url", "gmail_url"):
            check_url(options.get(key), key)
        if not _ID.fullmatch(str(options.get("customer", "my_customer"))):
            raise ConfigError("must be a customer id", "customer")

    def _admin(self, path: str) -> str:
        return f"{str(self.options['admin_url']).rstrip('/')}/admin/directory/v1{path}"

    # --- identity ------------------------------------------------------------------------
    def _person(self, key: str) -> dict[str, Any] | None:
        """The directory's user for ``key`` (an email, alias or id), or None."""
        return self._people.get(key.lower(), lambda: self._read_person(key))

    def _read_person(self, key: str) -> dict[str, Any] | None:
        what = f"read the user {key}"
        path = self._admin(f"/users/{quote(key, safe='@')}")
        data = self.google("GET", path, what=what, absent=(404,))
        if data is None:
            return None
        if not isinstance(data.get("primaryEmail"), str):
            raise LookupFailed(f"google_workspace's answer to {what} has no primaryEmail")
        return dict(data)

    def lookup_directory(self, email: str) -> list[str]:
        """The primary email of the user whose primary email or alias is exactly ``email``."""
        person = self._person(email)
        if person is None:
            return []
        names = [person["primaryEmail"], *(person.get("aliases") or [])]
        exact = any(isinstance(n, str) and n.lower() == email.lower() for n in names)
        return [str(person["primaryEmail"]).lower()] if exact else []

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        terms = known_action(self, action)
        if isinstance(terms, Decision):
            return terms
        kind = str(terms.terms.get("kind"))
        rid = _target(kind, resource)
        if rid is None:
            return Decision.unknown(
                f"{action} is asked on {kind}, not {resource!r}", cause="resource"
            )
        if kind == "site":
            return Decision.unknown("agent.token needs no user's permission", cause="resource")
        uid = self.user_id(user).lower()
        person = self._person(uid)
        if person is None:
            return Decision.unknown(f"{uid} is not a user of the domain", cause="identity")
        if person.get("suspended") or person.get("archived"):
            return Decision.deny(f"{uid} is suspended")
        sender = terms.terms.get("answers_for") == "sender"  # what the credential sees
        if sender and self.options["drive_tokens"] != "user":
            return Decision.unknown(
                "Drive lists and searches answer what the sending credential can see, not "
                "what this user can (set drive_tokens: user when the agent sends them with "
                "each user's own credential)"
            )
        if kind == "drive:root":
            return Decision.allow(f"{uid} is an active user")
        if kind in ("drive:file", "drive:drive"):
            return self._drive(uid, terms, kind, rid)
        if kind == "gmail:user":
            return self._gmail(uid, person, rid)
        if kind == "calendar":
            return self._calendar(uid, terms, rid)
        if kind == "group":
            return self._member(uid, rid)
        return self._admin_privilege(uid, person, terms)

    def _drive(self, uid: str, terms: Action, kind: str, rid: str) -> Decision:
        if not _ID.fullmatch(rid):
            return Decision.unknown(f"{rid!r} is not a Drive id", cause="resource")
        noun = "file" if kind == "drive:file" else "shared drive"
        path = f"/drive/v3/{'files' if kind == 'drive:file' else 'drives'}/{rid}"
        params = {"fields": "capabilities"}
        if kind == "drive:file":
            params["supportsAllDrives"] = "true"
        what = f"read the {noun} {rid}'s capabilities as {uid}"
        scopes = DRIVE_SCOPES if kind == "drive:file" else SHARED_DRIVE_SCOPES
        data = self.google(
            "GET", path, what=what, params=params, absent=(404,), subject=uid, scopes=scopes
        )
        if data is None:
            return Decision.deny(f"the {noun} {rid} is not visible to {uid}")
        needed = str(terms.terms.get("capability") or "").split()  # every one must hold
        if not needed:
            return Decision.allow(f"{uid} can see the {noun} {rid}")
        capabilities = data.get("capabilities")
        if not isinstance(capabilities, dict):
            raise LookupFailed(f"google_workspace's answer to {what} has no capabilities")
        lacking = [c for c in needed if capabilities.get(c) is not True]
        if not lacking:
            return Decision.allow(f"Drive: {uid} has {' and '.join(needed)} on the {noun} {rid}")
        return Decision.deny(f"Drive: {uid} lacks {' and '.join(lacking)} on the {noun} {rid}")

    def _gmail(self, uid: str, person: Mapping[str, Any], mailbox: str) -> Decision:
        mailbox = mailbox.lower()
        if mailbox == "me":
            return Decision.unknown("gmail:user/me names the caller's mailbox, not a user's")
        own = [str(n).lower() for n in (person["primaryEmail"], *(person.get("aliases") or []))]
        if mailbox in own:
            return Decision.allow(f"the mailbox {mailbox} is {uid}'s own")
        if not _EMAIL.fullmatch(mailbox):
            return Decision.unknown(f"{mailbox!r} is not a mailbox", cause="resource")
        owner = self._person(mailbox)
        if owner is None:
            return Decision.unknown(f"the mailbox {mailbox} is no user of the domain")
        primary = str(owner["primaryEmail"]).lower()
        what = f"list the delegates of {primary}'s mailbox"
        url = f"{str(self.options['gmail_url']).rstrip('/')}/gmail/v1/users/me/settings/delegates"
        data = self.google("GET", url, what=what, subject=primary, scopes=GMAIL_SCOPES)
        delegates = data.get("delegates", [])
        if not isinstance(delegates, list):
            raise LookupFailed(f"google_workspace's answer to {what} has no delegates list")
        for d in delegates:
            if (
                isinstance(d, dict)
                and str(d.get("delegateEmail", "")).lower() == uid
                and d.get("verificationStatus") == "accepted"
            ):
                return Decision.allow(f"{uid} is an accepted delegate of {primary}'s mailbox")
        return Decision.deny(f"{uid} is neither {primary} nor a delegate of that mailbox")

    def _calendar(self, uid: str, terms: Action, calendar: str) -> Decision:
        if calendar.lower() in ("me", "primary") or not _CALENDAR.fullmatch(calendar):
            return Decision.unknown(f"calendar:{calendar} names no one calendar", cause="resource")
        if calendar.lower() == uid:
            return Decision.allow(f"calendar:{calendar} is {uid}'s own calendar")
        what = f"read {uid}'s calendar list entry for {calendar}"
        path = f"/calendar/v3/users/me/calendarList/{quote(calendar, safe='@')}"
        data = self.google(
            "GET", path, what=what, absent=(404,), subject=uid, scopes=CALENDAR_SCOPES
        )
        if data is None:
            return Decision.unknown(f"calendar:{calendar} is not in {uid}'s calendar list")
        role = data.get("accessRole")
        if not isinstance(role, str):
            raise LookupFailed(f"google_workspace's answer to {what} has no accessRole")
        if role in terms.terms.get("roles", ()):
            return Decision.allow(f"{uid} is {role} of calendar:{calendar}")
        return Decision.deny(f"{uid} is only {role} of calendar:{calendar}")

    def _member(self, uid: str, group: str) -> Decision:
        if not _EMAIL.fullmatch(group):
            return Decision.unknown(f"group:{group} is not a group's email", cause="resource")
        what = f"ask whether {uid} is a member of {group}"
        path = self._admin(f"/groups/{quote(group, safe='@')}/hasMember/{quote(uid, safe='@')}")
        data = self.google("GET", path, what=what)
        if data.get("isMember") is True:
            return Decision.allow(f"{uid} is a member of {group}")
        if data.get("isMember") is False:
            return Decision.deny(f"{uid} is not a member of {group}")
        raise LookupFailed(f"google_workspace's answer to {what} has no isMember")

    def _admin_privilege(self, uid: str, person: Mapping[str, Any], terms: Action) -> Decision:
        if person.get("isAdmin") is True:
            return Decision.allow(f"{uid} is a super admin")
        superadmin, customer, unit = self._held(uid)
        if superadmin:
            return Decision.allow(f"{uid} holds a super admin role")
        needed = str(terms.terms.get("privilege") or "")
        if not needed:
            return Decision.deny(f"{terms.name} needs a super admin; {uid} is not one")
        covering = {needed, needed.split("_", 1)[0] + "_ALL"}
        if covering & customer:
            return Decision.allow(f"{uid} holds {needed} for the whole customer")
        if covering & unit:
            return Decision.unknown(f"{uid} holds {needed} for an organizational unit only")
        return Decision.deny(f"no role assigned to {uid} grants {needed}")

    def _held(self, uid: str) -> tuple[bool, frozenset[str], frozenset[str]]:
        """Whether a super admin role is assigned to ``uid``, and the privileges its roles
        grant for the whole customer and for organizational units only."""
        return self._privileges.get(uid, lambda: self._read_held(uid))

    def _read_held(self, uid: str) -> tuple[bool, frozenset[str], frozenset[str]]:
        customer = quote(str(self.options.get("customer", "my_customer")), safe="")
        assignments = paged(
            self,
            self._admin(f"/customer/{customer}/roleassignments"),
            what=f"list {uid}'s admin role assignments",
            too_many=f"{uid} has too many role assignments",
            style="cursor",
            items="items",
            optional=True,
            params={"userKey": uid, "includeIndirectRoleAssignments": "true"},
            size_param="maxResults",
            cursor="pageToken",
            next_at="nextPageToken",
            get=partial(self.google, "GET"),
        )
        scopes: dict[str, set[str]] = {}
        for a in assignments:
            if isinstance(a, dict) and a.get("roleId") is not None:
                # an assignment with a condition binds only the resources meeting it: partial
                scope = "CONDITION" if a.get("condition") else str(a.get("scopeType", ""))
                scopes.setdefault(str(a["roleId"]), set()).add(scope)
        superadmin, whole, unit = False, set(), set()
        for role_id, where in scopes.items():
            path = self._admin(f"/customer/{customer}/roles/{quote(role_id, safe='')}")
            role = self.google("GET", path, what=f"read the admin role {role_id}")
            granted = {
                str(p.get("privilegeName"))
                for p in role.get("rolePrivileges") or []
                if isinstance(p, dict)
            }
            if "CUSTOMER" in where:
                superadmin = superadmin or role.get("isSuperAdminRole") is True
                whole |= granted
            if where - {"CUSTOMER"}:
                unit |= granted
        return superadmin, frozenset(whole), frozenset(unit)

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        customer = str(self.options.get("customer", "my_customer"))
        path = self._admin("/users")
        data = self.google(
            "GET",
            path,
            what="list users (admin.directory.user.readonly)",
            params={"customer": customer, "maxResults": "1"},
        )
        if not isinstance(data.get("users", []), list):
            return ProbeResult(False, "google_workspace's users answer has no users list")
        return ProbeResult(True, f"the engine reads the directory of {customer}")


def _target(kind: str, resource: str) -> str | None:
    """The id in ``resource`` of ``kind`` ("" for the whole-domain kinds), or None."""
    if kind in ("drive:root", "customer", "site"):
        return "" if resource == kind else None
    head, sep, rid = resource.partition("/" if kind.startswith(("drive:", "gmail:")) else ":")
    return rid if sep and head == kind and rid else None


INTEGRATION = GoogleWorkspace
