"""Bitbucket Cloud: a user's effective repository permission and workspace role, asked live.

``GET /2.0/workspaces/{workspace}/permissions/repositories/{repo_slug}`` lists, for each user
who holds any, the *effective* permission on the repository (``read``, ``write`` or ``admin``:
the highest of direct, group and project grants). The list is read page by page (``next``
links on the connection's own origin only) and kept per repository for
``permission_cache_ttl`` seconds, so every user is answered from one read. A user it does not
list holds nothing: deny, except ``read`` on a public repository (``is_private`` false).
``GET /2.0/workspaces/{workspace}/permissions`` lists the workspace's members with their role
(``member``, ``collaborator``, ``owner``) in the same way.

Only a repository's administrators may read its permission list, and only a workspace's
administrators its member roles: the engine's account is a workspace administrator even
though it only reads. Keep its credential away from the agent.

Rules above the permission: an account whose ``account_status`` (``GET /2.0/users/{id}``) is
not ``active`` is denied. A write to a branch (``branch:WORKSPACE/REPO_SLUG/BRANCH``; BRANCH
empty: the main branch), a branch's deletion (``delete_branch``) and a pull request's merge
(``pullrequest:WORKSPACE/REPO_SLUG/ID``, by its destination branch) meet the repository's
branch restrictions (``GET /2.0/repositories/{ws}/{repo}/branch-restrictions``): ``push``,
``delete`` and ``restrict_merges`` matching the branch by glob ``pattern`` or branching-model
kind (``effective-branching-model``); the users a ``push`` or ``restrict_merges`` restriction
lists are exempt, one exempting groups leaves the others unknown (Bitbucket Cloud lists no
group members). A merge into a branch whose merge checks are enforced (``enforce_merge_checks``,
Premium) and bound by one (approvals, builds, tasks, ...) is unknown: they are not evaluated.

Resources: ``repo:WORKSPACE/REPO_SLUG`` (actions ``read``, ``write``, ``admin``),
``workspace:WORKSPACE`` (``member``, ``owner``) and ``site`` (``access``: the account exists).
Users are Atlassian ``account_id``s (or Bitbucket ``{uuid}``s). Bitbucket Cloud has no
look-up by email, so the application's users map through the shared identity modes
(``users``, ``template``, ``file``, ``http``, ``callable``); the Jira integration's look-up
finds the same Atlassian account ids.

Authentication of the engine (``auth``): ``basic`` (an Atlassian API token with the account's
email, or an app password with the Bitbucket username), ``bearer`` (a workspace access token,
or any OAuth access token), ``oauth`` (an OAuth consumer's client credentials, exchanged at
``token_url`` and refreshed before they expire).
"""

from __future__ import annotations

import base64
import dataclasses
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from toolpass.integrations._kit import (
    Absent,
    Cache,
    IssuedToken,
    UserIds,
    asked,
    paged,
    token_from,
    ttl_key,
)
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Integration,
    LookupFailed,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import UNREADABLE, Match, Request
from toolpass.wire.errors import ConfigError
from toolpass.wire.http import check_url

__all__ = ["Bitbucket"]

_API = "/2.0"
_PAGELEN = "100"
_SLUG = r"(?!\.+(?:/|$))[A-Za-z0-9_.-]{1,128}"  # never "." or ".."
_REPO = re.compile(rf"({_SLUG})/({_SLUG})")
_WORKSPACE = re.compile(_SLUG)
_ACCOUNT = re.compile(r"[A-Za-z0-9:_-]{1,128}|\{[0-9a-fA-F-]{36}\}")
SITE = "site"
#: The branch restriction that binds each action on a branch, and whether its users and
#: groups are exempt from it (``delete`` and ``force`` bind everyone).
_EXEMPTING = frozenset({"push", "restrict_merges"})
_MODEL_KINDS = frozenset({"feature", "bugfix", "release", "hotfix"})
#: ``enforce_merge_checks`` (Premium) turns the merge checks that match a branch from
#: warnings into refusals.
_MERGE_CHECKS = frozenset(
    {
        "enforce_merge_checks",
        "require_approvals_to_merge",
        "require_default_reviewer_approvals_to_merge",
        "require_passing_builds_to_merge",
        "require_tasks_to_be_completed",
        "require_no_changes_requested",
        "require_commits_behind",
    }
)

ACTIONS: tuple[Action, ...] = load_actions(__name__)
_RANK = {a.name: int(a.terms["rank"]) for a in ACTIONS if "rank" in a.terms}
_ROLES = {a.name: frozenset(a.terms["roles"]) for a in ACTIONS if "roles" in a.terms}
#: The branch restriction kind that binds an action on a branch or a pull request, by kind.
_BRANCHES = {a.name: dict(a.terms.get("branches") or {}) for a in ACTIONS}
_PUBLIC = frozenset(a.name for a in ACTIONS if a.terms.get("public"))  # anyone on a public repo
_SENDER = frozenset(a.name for a in ACTIONS if a.terms.get("answers_for") == "sender")
_LEVELS = {"read": 1, "write": 2, "admin": 3}
CREDENTIAL = (
    "Least privilege: a dedicated Atlassian account that administers the workspace "
    "(repository permission lists and member roles are readable by administrators only), "
    "with an API token (Atlassian account settings > Security > Create API token with "
    "scopes > Bitbucket) holding only admin:repository:bitbucket (view repository "
    "permissions; it grants no access to content), read:repository:bitbucket (whether a "
    "repository is public), read:workspace:bitbucket and read:user:bitbucket; or, on "
    "Premium, a workspace access token (Workspace settings > Access tokens) with the "
    "Repositories Read and Admin and Workspace membership Read scopes (auth bearer)."
)


USER_IDS = UserIds(_ACCOUNT, "an Atlassian account_id or Bitbucket uuid")


class Bitbucket(Integration):
    """Bitbucket Cloud, through its permission lists for repositories and workspaces."""

    name = "bitbucket"
    description = (
        "Bitbucket Cloud: a user's effective repository permission (read, write, admin) and "
        "workspace role, asked live (GET /2.0/workspaces/{ws}/permissions/repositories/{repo}). "
        + CREDENTIAL
    )
    default_url = "https://api.bitbucket.org"
    keys = (
        ConfigKey(
            "auth",
            "How the engine signs in: basic (username + api_token: an Atlassian API token with "
            "the account's email, or an app password with the Bitbucket username), bearer "
            "(access_token: a workspace access token or an OAuth token), or oauth (an OAuth "
            "consumer's client_id + client_secret, client credentials grant).",
            default="basic",
            choices=("basic", "bearer", "oauth"),
            needs={
                "basic": ("username", "api_token"),
                "bearer": ("access_token",),
                "oauth": ("client_id", "client_secret"),
            },
        ),
        ConfigKey("username", "The engine account's email (API token) or username (auth basic)."),
        ConfigKey("api_token", "The API token or app password (auth basic).", secret=True),
        ConfigKey("access_token", "The access token (auth bearer).", secret=True),
        ConfigKey("client_id", "The OAuth consumer's key (auth oauth)."),
        ConfigKey("client_secret", "The OAuth consumer's secret (auth oauth).", secret=True),
        ConfigKey(
            "token_url",
            "The OAuth 2.0 token endpoint (auth oauth).",
            default="https://bitbucket.org/site/oauth2/access_token",
        ),
        ConfigKey(
            "workspace",
            "A workspace the probe checks the engine administers (optional).",
        ),
        ConfigKey(
            "not_found",
            "What a 404 for the repository or workspace means: Bitbucket answers it both for "
            "one that does not exist and for one the engine's account cannot see. unknown (the "
            "default) or deny.",
            default="unknown",
            choices=("unknown", "deny"),
        ),
        ConfigKey(
            "own_tokens",
            "Whose credential the agent sends (snippet, workspace, pull request and "
            "permission lists answer what that account sees): user (each user's own) or "
            "unknown (sender_lists is unknown).",
            default="unknown",
            choices=("user", "unknown"),
        ),
        ttl_key(
            "permission", "a repository's or workspace's permission list", 60.0, kept="is kept"
        ),
        ConfigKey(
            "page_limit",
            "The most pages (of 100) of a permission list read; past it, unknown.",
            default=50,
            minimum=1,
        ),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tokens = IssuedToken(self, self._client_credentials)
        self._lists: Cache[str, tuple[dict[str, Any], ...] | None] = Cache.option(
            self, "permission_cache_ttl", 1000, keep_none=False
        )
        self._reads: Cache[str, dict[str, Any]] = Cache.option(self, "permission_cache_ttl")

    # --- the request hook --------------------------------------------------------------
    def match_request(self, request: Request) -> Match | None:
        """The table's route; a write that names its branch is asked on
        ``branch:WS/SLUG/BRANCH`` (``POST .../src`` by its ``branch`` field, the main branch
        without one; ``DELETE .../refs/branches/{name}`` as ``delete_branch``), a merge on
        ``pullrequest:WS/SLUG/ID``: the branch restrictions then bind."""
        found = self.route_table().match(request)
        if found is None:
            return None
        ws, slug = found.params.get("workspace"), found.params.get("repo_slug")
        path = found.route.path.removeprefix(f"{_API}/repositories/{{workspace}}/{{repo_slug}}")
        if path == "/pullrequests/{pull_request_id}/merge":
            target = f"pullrequest:{ws}/{slug}/{found.params.get('pull_request_id')}"
            return _narrowed(found, "write", target)
        if path == "/refs/branches/{name}" and found.route.method == "DELETE":
            return _narrowed(found, "delete_branch", f"branch:{ws}/{slug}/{found.params['name']}")
        if path == "/src" and found.route.method == "POST":
            form = request.form
            branch = form.get("branch", "") if form is not UNREADABLE else None
            if not isinstance(branch, str):  # unreadable, or named twice
                return Match(found.route, found.params, None)
            return _narrowed(found, "write", f"branch:{ws}/{slug}/{branch}")
        return found

    # --- configuration ---------------------------------------------------------------
    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        check_url(options.get("token_url", "https://bitbucket.org"), "token_url")
        workspace = options.get("workspace")
        if workspace is not None and not _WORKSPACE.fullmatch(workspace):
            raise ConfigError("must be a workspace slug", "workspace")

    # --- requests --------------------------------------------------------------------
    def auth_headers(self) -> Mapping[str, str]:
        auth = self.options.get("auth", "basic")
        if auth == "bearer":
            return {"Authorization": f"Bearer {self.secret('access_token')}"}
        if auth == "oauth":
            return {"Authorization": f"Bearer {self._tokens.get()}"}
        pair = f"{self.options['username']}:{self.secret('api_token')}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}

    def _client_credentials(self) -> tuple[str, float]:
        return token_from(
            self,
            str(self.options["token_url"]),
            {"grant_type": "client_credentials"},
            who="bitbucket's OAuth token endpoint",
            what="issue an OAuth access token",
            basic=(str(self.options["client_id"]), self.secret("client_secret")),
        )

    def error_detail(self, data: Any) -> str | None:
        """Bitbucket's ``{"type": "error", "error": {"message": ...}}``, else the common keys."""
        inner = data.get("error") if isinstance(data, dict) else None
        if isinstance(inner, dict):
            message = inner.get("message")
            return message if isinstance(message, str) and message else None
        return super().error_detail(data)

    def _list(self, path: str, what: str) -> tuple[dict[str, Any], ...] | None:
        """Every entry of a paged list (kept ``permission_cache_ttl``); None on 404."""
        return self._lists.get(path, lambda: self._read_list(path, what))

    def _read_list(self, path: str, what: str) -> tuple[dict[str, Any], ...] | None:
        listing = paged(
            self,
            _API + path,
            what=what,
            too_many=f"bitbucket's list to {what} is longer than page_limit pages",
            style="next_url",
            items="values",
            each=dict,
            params={"pagelen": _PAGELEN},
            pages=int(self.options.get("page_limit", 50)),
            absent=True,
        )
        try:
            return tuple(listing)
        except Absent:
            return None

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        ask = asked(self, action, resource, user, USER_IDS)
        if isinstance(ask, Decision):
            return ask
        kind, ref, account = ask.on.kind, ask.on.id, ask.uid
        if kind in ("branch", "pullrequest"):
            return self._on_branch(account, action, kind, ref)
        if kind == "repo":
            ws, slug = ref.split("/")
            decided = self._repository(account, action, ws, slug)
        elif kind == "workspace":
            decided = self._workspace(account, action, ref)
        elif action in _SENDER and self.options.get("own_tokens") != "user":
            return Decision.unknown(
                "Bitbucket answers this list with what the sending account can see, not what "
                "this user can (set own_tokens: user when the agent sends each user's own "
                "credential)"
            )
        else:
            return self._site(account)
        if not decided.allowed:
            return decided
        inactive = self._active(account)
        return decided if inactive is None else inactive

    def _on_branch(self, account: str, action: str, kind: str, ref: str) -> Decision:
        """A write to a branch, a branch's deletion or a pull request's merge: the repository
        permission, then the account, then the branch restrictions that bind it."""
        restricts = _BRANCHES[action][kind]
        ws, slug, name = ref.split("/", 2)
        decided = self._repository(account, action, ws, slug)
        if not decided.allowed:
            return decided
        inactive = self._active(account)
        if inactive is not None:
            return inactive
        branch = self._destination(ws, slug, name) if kind == "pullrequest" else name
        branch = branch or self._main_branch(ws, slug)
        refused = self._restricted(account, restricts, ws, slug, branch)
        if refused is None and kind == "pullrequest":
            refused = self._merge_checks(ws, slug, branch)
        return decided if refused is None else refused

    def _site(self, account: str) -> Decision:
        inactive = self._active(account)
        return (
            Decision.allow(f"Bitbucket has the account {account}") if inactive is None else inactive
        )

    def _account(self, account: str) -> dict[str, Any] | None:
        """The user's account (``GET /2.0/users/{id}``), kept; None when there is none."""
        path = f"{_API}/users/{quote(account, safe='')}"

        def read() -> dict[str, Any]:
            found = self.get_json(path, what="fetch the user's account", absent=(404,))
            return {"absent": True} if found is None else found

        hit = self._reads.get(path, read)
        return None if hit == {"absent": True} else hit

    def _active(self, account: str) -> Decision | None:
        """A denial when the account is not active (``account_status``), else None."""
        data = self._account(account)
        if data is None:
            return Decision.deny(f"Bitbucket has no account {account}")
        status = data.get("account_status")
        if not isinstance(status, str) or not status:
            raise LookupFailed(f"bitbucket's account {account} has no account_status")
        if status != "active":
            return Decision.deny(f"the Bitbucket account {account} is {status}")
        return None

    def _read(self, path: str, what: str) -> dict[str, Any]:
        """One object, kept ``permission_cache_ttl``."""
        return self._reads.get(path, lambda: self.get_json(f"{_API}{path}", what=what))

    def _destination(self, ws: str, slug: str, pull: str) -> str:
        what = f"read pull request {pull} of {ws}/{slug}"
        data = self._read(f"/repositories/{quote(ws)}/{quote(slug)}/pullrequests/{pull}", what)
        branch = ((data.get("destination") or {}).get("branch") or {}).get("name")
        if not isinstance(branch, str) or not branch:
            raise LookupFailed(f"bitbucket's answer to {what} has no destination branch")
        return branch

    def _main_branch(self, ws: str, slug: str) -> str:
        what = f"read the repository {ws}/{slug}"
        data = self._read(f"/repositories/{quote(ws)}/{quote(slug)}", what)
        branch = (data.get("mainbranch") or {}).get("name")
        if not isinstance(branch, str) or not branch:
            raise LookupFailed(f"bitbucket's answer to {what} has no main branch")
        return branch

    def _restrictions(self, ws: str, slug: str) -> tuple[dict[str, Any], ...]:
        path = f"/repositories/{quote(ws)}/{quote(slug)}/branch-restrictions"
        rules = self._list(path, f"list the branch restrictions of {ws}/{slug}")
        if rules is None:
            raise LookupFailed(
                f"bitbucket answered 404 to list the branch restrictions of {ws}/{slug}"
            )
        return rules

    def _merge_checks(self, ws: str, slug: str, branch: str) -> Decision | None:
        """Unknown when merges into ``branch`` must pass merge checks (``enforce_merge_checks``,
        Premium) and one binds it: Bitbucket refuses an unmet one to anyone, and the engine
        does not evaluate them (approvals, builds, tasks, ...). None otherwise."""
        rules = [r for r in self._restrictions(ws, slug) if r.get("kind") in _MERGE_CHECKS]
        bound = {str(r["kind"]) for r in rules if self._matches(r, ws, slug, branch)}
        if "enforce_merge_checks" not in bound or bound == {"enforce_merge_checks"}:
            return None
        checks = ", ".join(sorted(bound - {"enforce_merge_checks"}))
        return Decision.unknown(
            f"merges into {branch} of {ws}/{slug} must pass Bitbucket's merge checks ({checks}), "
            "which toolpass does not evaluate"
        )

    def _restricted(
        self, account: str, kind: str, ws: str, slug: str, branch: str
    ) -> Decision | None:
        """A denial when a branch restriction of ``kind`` matches ``branch`` and does not
        exempt the user; unknown when one exempts groups (whose members Bitbucket Cloud does
        not list) and not the user."""
        name = f"{ws}/{slug}"
        for rule in self._restrictions(ws, slug):
            if rule.get("kind") != kind or not self._matches(rule, ws, slug, branch):
                continue
            users, groups = rule.get("users") or [], rule.get("groups") or []
            if not isinstance(users, list) or not isinstance(groups, list):
                raise LookupFailed(f"bitbucket's branch restriction on {name} is malformed")
            if kind in _EXEMPTING and any(
                isinstance(u, dict) and _is({"user": u}, account) for u in users
            ):
                continue
            if kind in _EXEMPTING and groups:
                return Decision.unknown(
                    f"a {kind} restriction on branch {branch} of {name} exempts groups, whose "
                    f"members Bitbucket does not list: whether {account} is one is unknown"
                )
            return Decision.deny(
                f"a {kind} branch restriction on {branch} of Bitbucket repository {name} "
                f"does not let {account} do this"
            )
        return None

    def _matches(self, rule: Mapping[str, Any], ws: str, slug: str, branch: str) -> bool:
        """Whether a branch restriction names ``branch``: a glob ``pattern``, or a kind of the
        repository's branching model."""
        how = rule.get("branch_match_kind", "glob")
        if how == "glob":
            pattern = rule.get("pattern")
            if not isinstance(pattern, str):
                raise LookupFailed("bitbucket's glob branch restriction has no pattern")
            return _glob(pattern).fullmatch(branch) is not None
        if how != "branching_model":
            raise LookupFailed(f"bitbucket gave the unknown branch_match_kind {how!r}")
        what = f"read the branching model of {ws}/{slug}"
        model = self._read(
            f"/repositories/{quote(ws)}/{quote(slug)}/effective-branching-model", what
        )
        kind = rule.get("branch_type")
        if kind in ("development", "production"):
            named = model.get(kind) or {}
            if not named or named.get("enabled", True) is False:
                return False
            return self._model_branch(named, kind, ws, slug) == branch
        if kind not in _MODEL_KINDS:
            raise LookupFailed(f"bitbucket gave the unknown branch_type {kind!r}")
        types = model.get("branch_types") or []
        prefixes = [t.get("prefix") for t in types if isinstance(t, dict) and t.get("kind") == kind]
        return any(isinstance(p, str) and p and branch.startswith(p) for p in prefixes)

    def _model_branch(self, named: Mapping[str, Any], kind: str, ws: str, slug: str) -> str:
        """The branch the model's development or production names (the main branch with
        ``use_mainbranch``); :class:`LookupFailed` when it names none."""
        found = named.get("name") or (named.get("branch") or {}).get("name")
        if isinstance(found, str) and found:
            return found
        if named.get("use_mainbranch") is True:
            return self._main_branch(ws, slug)
        raise LookupFailed(f"bitbucket's branching model of {ws}/{slug} names no {kind} branch")

    def _not_found(self, text: str) -> Decision:
        if self.options.get("not_found") == "deny":
            return Decision.deny(text)
        return Decision.unknown(text)

    def _repository(self, account: str, action: str, workspace: str, slug: str) -> Decision:
        name = f"{workspace}/{slug}"
        path = f"/workspaces/{quote(workspace)}/permissions/repositories/{quote(slug)}"
        entries = self._list(path, f"list the permissions of {name}")
        if entries is None:
            return self._not_found(
                f"Bitbucket has no repository {name} that the engine's account administers "
                "(HTTP 404)"
            )
        held = [e.get("permission") for e in entries if _is(e, account)]
        if not all(p in _LEVELS for p in held):
            raise LookupFailed("bitbucket's repository permission answer has an unknown level")
        level = max((_LEVELS[str(p)] for p in held), default=0)
        if level >= _RANK[action]:
            best = next(k for k, v in _LEVELS.items() if v == level)
            return Decision.allow(f"Bitbucket grants {account} {best} on {name}")
        if action in _PUBLIC and level == 0 and self._public(workspace, slug):
            return Decision.allow(f"{name} is a public Bitbucket repository")
        has = next((k for k, v in _LEVELS.items() if v == level), None)
        text = f"holds only {has}" if has else "holds no permission"
        return Decision.deny(f"{account} {text} on Bitbucket repository {name}, not {action}")

    def _public(self, workspace: str, slug: str) -> bool:
        what = f"read the repository {workspace}/{slug}"
        data = self.get_json(f"{_API}/repositories/{quote(workspace)}/{quote(slug)}", what=what)
        private = data.get("is_private")
        if not isinstance(private, bool):
            raise LookupFailed(f"bitbucket's answer to {what} has no is_private flag")
        return not private

    def _workspace(self, account: str, action: str, workspace: str) -> Decision:
        entries = self._list(
            f"/workspaces/{quote(workspace)}/permissions", f"list the members of {workspace}"
        )
        if entries is None:
            return self._not_found(
                f"Bitbucket has no workspace {workspace} that the engine's account administers "
                "(HTTP 404)"
            )
        roles = {str(e.get("permission")) for e in entries if _is(e, account)}
        granted = roles & _ROLES[action]
        if granted:
            return Decision.allow(
                f"{account} is {'/'.join(sorted(granted))} of Bitbucket workspace {workspace}"
            )
        if roles:
            return Decision.deny(
                f"{account} is only {'/'.join(sorted(roles))} of Bitbucket workspace {workspace}"
            )
        return Decision.deny(f"{account} is not a member of Bitbucket workspace {workspace}")

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        me = self.get_json(f"{_API}/user", what="tell who the engine is")
        ident = me.get("account_id") or me.get("uuid")
        if not isinstance(ident, str):
            return ProbeResult(False, "bitbucket's /2.0/user answer has no account_id")
        who = f"{me.get('display_name') or ident} ({ident})"
        workspace = self.options.get("workspace")
        if workspace is None:
            return ProbeResult(True, f"signed in to {self.config.url} as {who}")
        what = f"list the members of {workspace}"
        path = f"{_API}/workspaces/{quote(workspace)}/permissions"
        answer = self.answer("GET", path, what=what, params={"pagelen": "1"})
        if answer.status != 200:
            return ProbeResult(False, f"signed in as {who}, but {self.failure(answer, what)}")
        return ProbeResult(True, f"signed in as {who}, administering workspace {workspace}")


def _narrowed(found: Match, action: str, resource: str) -> Match:
    route = dataclasses.replace(found.route, action=action)
    return Match(route, found.params, resource)


def _glob(pattern: str) -> re.Pattern[str]:
    """A branch restriction's glob as a pattern: ``*`` any text (``/`` too), ``?`` any one
    character (read widely: a pattern that matches more binds more, never less)."""
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.DOTALL)


def _is(entry: Mapping[str, Any], account: str) -> bool:
    """Whether a permission entry is the user ``account`` (by account_id or uuid)."""
    user = entry.get("user")
    if not isinstance(user, dict):
        return False
    return account in (user.get("account_id"), user.get("uuid"))


INTEGRATION = Bitbucket
