"""GitLab (gitlab.com, self-managed, Dedicated): effective access levels, asked live.

The check reads the user's effective role with ``GET /projects/:id/members/all/:user_id``
(direct, inherited through ancestor groups, and through invited groups) or
``GET /groups/:id/members/all/:user_id``, and compares its ``access_level`` with what the
action needs (Guest 10, Planner 15, Reporter 20, Developer 30, Maintainer 40, Owner 50).
On top of the role:

- a member whose ``state`` is not ``active`` (blocked, deactivated, banned, ...) or whose
  membership is ``awaiting`` is denied;
- on public and internal projects the Guest role is not enforced: anyone signed in (not an
  external user, for internal projects) may read, open issues and comment
  (``GET /projects/:id`` for ``visibility``, ``GET /users/:id`` for ``state``/``external``);
- branch actions on ``branch:group/project@name`` (and ``mr:group/project!iid``, whose
  branches come from ``GET /projects/:id/merge_requests/:iid``) follow protected branches
  (``GET /projects/:id/protected_branches``, wildcards included; the most permissive
  matching rule applies, as GitLab documents);
- ``issue:group/project#iid`` honours confidential issues and lets authors and assignees
  update and close their issues (``GET /projects/:id/issues/:iid``).

A 404 from the membership read means "not a member" only when the engine can see the
project (``GET /projects/:id`` answers 200): that is a deny. GitLab answers 404 for a
private project the engine cannot see, too; that is ``unknown`` unless ``not_found: deny``.

Identity (``identity.mode``): ``lookup`` (``GET /users?search=<email>``, kept only on an exact
match of the administrator-visible ``email``, or of ``public_email`` read back user by user
for other tokens), ``saml`` (``GET /groups/:id/saml_users?search=``, GitLab 18.1+, exact match
of the user's email or group SAML ``extern_uid``), ``saml_identity``
(``GET /groups/:id/saml/:extern_uid``, GitLab 16.1+, the SAML NameID is the email),
``extern_uid`` (``GET /users?extern_uid=&provider=``, administrators), plus the shared
``template``, ``users``, ``file``, ``http`` and ``callable`` modes, whose values are GitLab
user ids or usernames (usernames are resolved with ``GET /users?username=``).

Beside this module: ``_actions`` (access levels and the action table), ``_resources`` (the
resource syntax), ``_hook`` (the request hook), ``_api`` (the engine's requests) and
``_protected`` (protected branches and tags, a merge request's merge status).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from toolpass.integrations._kit import Cache
from toolpass.integrations.base import (
    ConfigKey,
    ConnectionConfig,
    ProbeResult,
)
from toolpass.integrations.gitlab import _hook
from toolpass.integrations.gitlab._actions import (
    ACTIONS,
    GUEST,
    LEVELS,
    REPORTER,
    ROLE,
    RULES,
)
from toolpass.integrations.gitlab._protected import ProtectedRefs
from toolpass.integrations.gitlab._resources import (
    Target,
    branch_matches,
    integer,
    parse_resource,
)
from toolpass.integrations.routes import Match, Request
from toolpass.wire.decision import Decision
from toolpass.wire.errors import ConfigError, LookupFailed
from toolpass.wire.http import HTTPClient, MalformedResponse
from toolpass.wire.identity import same_email

__all__ = ["ACTIONS", "INTEGRATION", "GitLab", "branch_matches", "parse_resource"]

_ACTIVE = "active"


class GitLab(ProtectedRefs):
    """GitLab's effective membership, protected branches and visibility. See the module."""

    name = "gitlab"
    description = (
        "GitLab (gitlab.com or self-managed): a user's effective role in a project or group, "
        "with visibility, protected branches and confidential issues."
    )
    default_url = "https://gitlab.com"
    identity_modes = ("lookup", "saml", "saml_identity", "extern_uid")
    actions = ACTIONS
    keys = (
        ConfigKey(
            "token",
            "The engine's token with read_api: an administrator's on self-managed (to see "
            "every project and private emails), a group Owner's on gitlab.com.",
            secret=True,
            required=True,
        ),
        ConfigKey(
            "auth",
            "How the token is sent: `token` (PRIVATE-TOKEN: personal, group or project access "
            "token) or `oauth` (Authorization: Bearer; keep it fresh in a file: reference).",
            default="token",
            choices=("token", "oauth"),
        ),
        ConfigKey(
            "not_found",
            "What a 404 for a project or group means: `unknown` (GitLab hides what the token "
            "cannot see) or `deny` (the token sees everything, e.g. an administrator's).",
            default="unknown",
            choices=("unknown", "deny"),
        ),
        ConfigKey(
            "saml_group",
            "The top-level group (path or id) whose SAML identities the saml and "
            "saml_identity identity modes read.",
        ),
        ConfigKey(
            "identity_provider",
            "The provider name for the extern_uid identity mode (e.g. saml, openid_connect, "
            "ldapmain); the user's extern_uid must be the email.",
        ),
        ConfigKey(
            "levels",
            "Minimum access level per action, replacing the built-in one "
            "(e.g. {issue.update: 15} to let Planners edit issues).",
            default={},
            type="map",
        ),
        ConfigKey(
            "own_tokens",
            "Whose token the agent sends (user look-ups, to-dos and the instance CI lint "
            "answer what that account sees): user (each user's own) or unknown "
            "(sender_lists is unknown).",
            default="unknown",
            choices=("user", "unknown"),
        ),
        ConfigKey(
            "max_pages",
            "Most pages (100 items each) one list read may follow before giving up (unknown).",
            default=10,
            minimum=1,
        ),
    )

    def __init__(self, config: ConnectionConfig, http: HTTPClient | None = None) -> None:
        super().__init__(config, http)
        mode = config.identity.mode
        if mode in ("saml", "saml_identity") and not self.options.get("saml_group"):
            raise ConfigError(f"identity mode {mode} needs saml_group", "saml_group")
        if mode == "extern_uid" and not self.options.get("identity_provider"):
            raise ConfigError(
                "identity mode extern_uid needs identity_provider", "identity_provider"
            )
        self._api = "" if config.url.endswith("/api/v4") else "/api/v4"
        self._usernames: Cache[str, int] = Cache(
            lambda: float(self.config.identity.cache_ttl), size=10_000
        )

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        levels = options.get("levels") or {}
        for action, level in levels.items():
            if action not in RULES:
                raise ConfigError(f"{action!r} is not a gitlab action", "levels")
            if integer(level) is None or level not in LEVELS:
                raise ConfigError(
                    f"{action}: must be an access level ({', '.join(map(str, LEVELS))})", "levels"
                )

    # --- the request hook ----------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The operation's route (``gitlab/routes.json``, under ``/api/v4``, also when the
        connection URL ends in ``/api/v4``) and its resource, filled here rather than by the
        table: GitLab names projects and groups by URL-encoded full paths
        (``group%2Fsub%2Fproject``) and branches may hold ``/``, each validated as GitLab's
        own names; arguments come from the body or the query string (naming two different
        values there is no resource). ``sudo`` (acting as another user) is
        ``instance.admin``; a commit with ``force`` is ``branch.force_push``; a project
        edit that changes ``visibility`` is ``project.visibility``."""
        under_api = getattr(self, "_api", "/api/v4") == ""
        return _hook.match(request, self.route_table(), under_api)

    # --- identity ----------------------------------------------------------------------
    def lookup_lookup(self, email: str) -> list[str]:
        """The user search, kept only on an exact email match."""
        what = "the user search"
        found = list(self._pages("/users", {"search": email}, what))
        if not found:
            return []
        if all("email" in u for u in found):  # an administrator's view: primary emails
            exact = [u.get("id") for u in found if same_email(u.get("email"), email)]
            if any(integer(uid) is None for uid in exact):
                raise MalformedResponse("gitlab's user search answered a user without an id")
            return [str(uid) for uid in exact]
        # Other tokens see no private email: read each hit's public_email back.
        if len(found) > 20:
            raise LookupFailed(
                f"the user search for {email} found {len(found)} users and the token cannot "
                "see their emails; refusing to guess"
            )
        matched = []
        for user in found:
            uid = integer(user.get("id"))
            if uid is None:
                raise MalformedResponse("gitlab's user search answered a user without an id")
            full = self._get(f"/users/{uid}", f"read user {uid}")
            if same_email(full.get("public_email"), email):
                matched.append(str(uid))
        return matched

    def lookup_saml(self, email: str) -> list[str]:
        """The group's SAML users, kept on an exact email or extern_uid match."""
        group = quote(str(self.options["saml_group"]), safe="")
        what = f"the SAML users of group {self.options['saml_group']}"
        matched = []
        for user in self._pages(f"/groups/{group}/saml_users", {"search": email}, what):
            identities = user.get("identities") or []
            saml = [
                i.get("extern_uid")
                for i in identities
                if isinstance(i, dict) and i.get("provider") == "group_saml"
            ]
            if same_email(user.get("email"), email) or any(same_email(u, email) for u in saml):
                if integer(user.get("id")) is None:
                    raise MalformedResponse("gitlab's SAML users hold a user without an id")
                matched.append(str(user["id"]))
        return matched

    def lookup_saml_identity(self, email: str) -> list[str]:
        """The group SAML identity whose NameID is the email."""
        group = quote(str(self.options["saml_group"]), safe="")
        path = f"/groups/{group}/saml/{quote(email, safe='')}"
        data = self._get(path, f"read the SAML identity {email}", absent=(404,))
        if data is None:
            return []
        uid = data.get("user_id")
        if isinstance(uid, str) and uid.isdigit():
            uid = int(uid)
        if integer(uid) is None:
            raise MalformedResponse("gitlab's SAML identity has no user_id")
        return [str(uid)]

    def lookup_extern_uid(self, email: str) -> list[str]:
        """Users whose identity at ``identity_provider`` is the email (administrators)."""
        provider = str(self.options["identity_provider"])
        what = f"the {provider} identity look-up"
        params = {"extern_uid": email, "provider": provider}
        matched = []
        for user in self._pages("/users", params, what):
            identities = user.get("identities")
            if not isinstance(identities, list):
                raise LookupFailed(
                    f"{what} answered without identities: it needs an administrator's token"
                )
            if any(
                isinstance(i, dict)
                and i.get("provider") == provider
                and same_email(i.get("extern_uid"), email)
                for i in identities
            ):
                if integer(user.get("id")) is None:
                    raise MalformedResponse(f"{what} answered a user without an id")
                matched.append(str(user["id"]))
        return matched

    def _uid(self, email: str) -> int:
        """The GitLab user id ``email`` maps to (a mapped username is looked up)."""
        mapped = self.user_id(email)
        if mapped.isascii() and mapped.isdigit():
            return int(mapped)
        username = mapped.removeprefix("@")
        return self._usernames.get(username.lower(), lambda: self._username_id(email, username))

    def _username_id(self, email: str, username: str) -> int:
        what = "look the username up"
        users = self._get("/users", what, params={"username": username}, kind=list)
        ids = {
            u.get("id") for u in users if isinstance(u, dict) and _same(u.get("username"), username)
        }
        if len(ids) != 1:
            what = "no" if not ids else f"{len(ids)}"
            raise LookupFailed(f"{email} maps to {username!r}, which is {what} gitlab user(s)")
        uid = integer(ids.pop())
        if uid is None:
            raise MalformedResponse("gitlab's username look-up answered a user without an id")
        return uid

    # --- the check ---------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        rule = RULES[action]
        level_needed = int((self.options.get("levels") or {}).get(action, rule.level))
        try:
            target = parse_resource(resource)
        except LookupFailed as e:
            return Decision.unknown(str(e))
        if rule.scope == "instance" or target.kind == "instance":
            if rule.scope != "instance" or target.kind != "instance":
                needs = (
                    "the resource instance" if rule.scope == "instance" else "a project or group"
                )
                return Decision.unknown(f"{action} needs {needs}, not {resource!r}")
            if rule.answers_for == "sender":
                return self._sender_lists(user)
            return self._administrator(user, action)
        if rule.scope == "group" and target.kind != "group":
            return Decision.unknown(f"{action} needs a group: resource, not {resource!r}")
        if rule.scope == "project" and target.kind == "group":
            return Decision.unknown(f"{action} needs a project resource, not {resource!r}")
        if rule.branch and target.kind not in ("branch", "mr"):
            return Decision.unknown(
                f"{action} depends on the branch's protection: name it "
                "(branch:group/project@name or mr:group/project!iid)"
            )
        if rule.tag and target.kind != "tag":
            return Decision.unknown(
                f"{action} depends on the tag's protection: name it (tag:group/project@name)"
            )
        uid = self._uid(user)
        source = "groups" if target.kind == "group" else "projects"
        noun = "group" if target.kind == "group" else "project"
        member, place = self._membership(source, target, uid)
        if member is None and place is None:
            reason = f"gitlab {noun} {target.path} was not found or the engine cannot see it"
            if self.options.get("not_found") == "deny":
                return Decision.deny(reason + " (not_found: deny)")
            return Decision.unknown(reason)
        who = f"{user} (gitlab user {uid})"
        level = 0
        if member is not None:
            state = member.get("state")
            if not isinstance(state, str):
                raise MalformedResponse("gitlab's member answer has no state")
            if state != _ACTIVE:
                return Decision.deny(f"{who} is {state} in gitlab")
            if member.get("membership_state") == "awaiting":
                return Decision.deny(f"{who}'s membership of {target.path} awaits approval")
            found = integer(member.get("access_level"))
            if found is None:
                raise MalformedResponse("gitlab's member answer has no access_level")
            level = found
        role = f"{ROLE.get(level, level)} ({level})" if member is not None else "not a member"
        where = f"{noun} {target.path}"

        if level < level_needed:
            opened = None
            if rule.open and target.kind != "group":
                opened = self._open_access(target, uid, who, place, rule.feature)
            if opened is not None and opened.decision != "allow":
                return opened
            if opened is None:
                own = self._own_issue(target, uid, level) if rule.issue == "own" else None
                if own is not None:
                    return own
                need = f"{ROLE.get(level_needed, level_needed)} ({level_needed})"
                return Decision.deny(f"{who} is {role} in {where}; {action} needs {need}")
            reason = opened.reason
        else:
            reason = f"{who} is {role} in {where}"
        archived = self._archived(action, target, place)
        if archived is not None:
            return archived
        if rule.issue == "confidential" and target.kind == "issue":
            confidential = self._confidential(target, uid, level)
            if confidential is not None:
                return confidential
        locked = rule.locked_by_discussion and target.kind == "issue" and level < REPORTER
        if locked and self._issue(target).get("discussion_locked") is True:
            return Decision.deny(
                f"the discussion of issue {target.path}#{target.iid} is locked: only "
                "members with at least Reporter may comment"
            )
        if rule.branch:
            return self._branch(rule.branch, action, target, uid, level, who, reason)
        if rule.tag:
            return self._tag(rule.tag, target, uid, level, who, reason)
        return Decision.allow(reason)

    def _archived(
        self, action: str, target: Target, place: dict[str, Any] | None
    ) -> Decision | None:
        """An archived project is read-only: every write but archiving and deleting is
        denied (None when the project is not archived or the action only reads)."""
        declared = self.action(action)
        if target.kind == "group" or declared is None or declared.effect == "read":
            return None
        if RULES[action].on_archived:
            return None
        archived = self._project(target, place).get("archived")
        if archived is True:
            return Decision.deny(f"project {target.path} is archived, so it is read-only")
        if archived is not False:
            raise MalformedResponse(f"gitlab's project {target.path} does not say if archived")
        return None

    def _sender_lists(self, user: str) -> Decision:
        """What the sending token sees is the user's only when it is the user's own token."""
        if self.options.get("own_tokens") != "user":
            return Decision.unknown(
                "GitLab answers this with what the sending account can see, not what this "
                "user can (set own_tokens: user when the agent sends each user's own token)"
            )
        uid = self._uid(user)
        state = self._get(f"/users/{uid}", f"read user {uid}").get("state")
        if state != _ACTIVE:
            return Decision.deny(f"{user} (gitlab user {uid}) is {state or 'not active'}")
        return Decision.allow(f"{user} (gitlab user {uid}) is active and sends their own token")

    def _administrator(self, user: str, action: str) -> Decision:
        uid = self._uid(user)
        who = f"{user} (gitlab user {uid})"
        data = self._get(f"/users/{uid}", f"read user {uid}")
        state = data.get("state")
        if state != _ACTIVE:
            return Decision.deny(f"{who} is {state or 'not active'} in gitlab")
        admin = data.get("is_admin")
        if admin is True:
            return Decision.allow(f"{who} is an administrator")
        if admin is False:
            return Decision.deny(f"{who} is not an administrator; {action} needs one")
        return Decision.unknown(
            f"gitlab does not tell this token whether {who} is an administrator "
            "(that needs an administrator's token)"
        )

    def _membership(
        self, source: str, target: Target, uid: int
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """(the member, None) or (None, the project or group) when not a member, or
        (None, None) when the project or group itself answers 404."""
        what = f"read the membership of user {uid} in {target.path}"
        path = f"/{source}/{target.encoded}"
        member = self._get(f"{path}/members/all/{uid}", what, absent=(404,))
        if member is not None:
            return member, None
        return None, self._get(path, f"read {source[:-1]} {target.path}", absent=(404,))

    def _project(self, target: Target, place: dict[str, Any] | None) -> dict[str, Any]:
        if place is not None:
            return place
        return self._get(f"/projects/{target.encoded}", f"read project {target.path}")  # type: ignore[no-any-return]

    def _open_access(
        self,
        target: Target,
        uid: int,
        who: str,
        place: dict[str, Any] | None,
        feature: str | None,
    ) -> Decision | None:
        """Public and internal projects don't enforce Guest: None when private (or when
        ``feature`` is open to project members only)."""
        project = self._project(target, place)
        visibility = project.get("visibility")
        if visibility not in ("public", "internal", "private"):
            raise MalformedResponse(f"gitlab's project {target.path} has no visibility")
        if visibility == "private":
            return None
        if feature is not None:
            access = project.get(feature)
            if access in ("private", "disabled"):
                return None  # only members, by role
            if access not in ("enabled", "public"):
                return Decision.unknown(
                    f"gitlab does not say who may use {feature.removesuffix('_access_level')} "
                    f"in {target.path} ({feature} is {access!r})"
                )
        user = self._get(f"/users/{uid}", f"read user {uid}")
        state = user.get("state")
        if state != _ACTIVE:
            return Decision.deny(f"{who} is {state or 'not active'} in gitlab")
        if visibility == "public":
            return Decision.allow(f"{target.path} is public and {who} is an active user")
        external = user.get("external")
        if not isinstance(external, bool):
            return Decision.unknown(
                f"{target.path} is internal and gitlab does not tell this token whether {who} "
                "is an external user (that needs an administrator's token)"
            )
        if external:
            return Decision.deny(f"{target.path} is internal and {who} is an external user")
        return Decision.allow(f"{target.path} is internal and {who} is an active internal user")

    def _issue(self, target: Target) -> dict[str, Any]:
        what = f"read issue {target.path}#{target.iid}"
        issue = self._get(f"/projects/{target.encoded}/issues/{target.iid}", what, absent=(404,))
        if issue is None:
            raise LookupFailed(f"issue {target.path}#{target.iid} was not found or is hidden")
        return issue  # type: ignore[no-any-return]

    def _own_issue(self, target: Target, uid: int, level: int) -> Decision | None:
        """Authors and assignees (at least Guest) may update and close their issues."""
        if target.kind != "issue" or level < GUEST:
            return None
        issue = self._issue(target)
        if _involved(issue, uid):
            return Decision.allow(f"gitlab user {uid} is the author or an assignee of the issue")
        return None

    def _confidential(self, target: Target, uid: int, level: int) -> Decision | None:
        if level >= REPORTER:
            return None
        issue = self._issue(target)
        if issue.get("confidential") is not True:
            return None
        if _involved(issue, uid) and level >= GUEST:
            return None
        return Decision.deny(
            f"issue {target.path}#{target.iid} is confidential: it needs Reporter, its author "
            "or an assignee"
        )

    # --- the probe ---------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        me = self._get("/user", "read the engine's own user")
        name = me.get("username", "?")
        admin = me.get("is_admin") is True
        detail = f"authenticated to {self.config.url} as {name}" + (
            " (administrator)" if admin else ""
        )
        if self.options.get("auth") == "token":
            answer = self.answer(
                "GET", self._api + "/personal_access_tokens/self", what="read the token's scopes"
            )
            if answer.status == 200:
                data = answer.json()
                scopes = data.get("scopes") if isinstance(data, dict) else None
                if isinstance(scopes, list):
                    if not {"read_api", "api"} & set(scopes):
                        return ProbeResult(False, f"{detail}; the token lacks read_api ({scopes})")
                    detail += f"; scopes {', '.join(map(str, scopes))}"
        if self.config.identity.mode in ("lookup", "extern_uid") and not admin:
            detail += (
                "; note: not an administrator, so identity look-ups match public emails only"
                if self.config.identity.mode == "lookup"
                else "; warning: the extern_uid identity mode needs an administrator"
            )
        return ProbeResult(True, detail)


def _same(a: object, b: str) -> bool:
    """Usernames, which GitLab compares without case (emails: ``same_email``)."""
    return isinstance(a, str) and a.casefold() == b.casefold()


def _involved(issue: Mapping[str, Any], uid: int) -> bool:
    author = issue.get("author")
    if isinstance(author, dict) and author.get("id") == uid:
        return True
    assignees = issue.get("assignees")
    return isinstance(assignees, list) and any(
        isinstance(a, dict) and a.get("id") == uid for a in assignees
    )


INTEGRATION = GitLab
