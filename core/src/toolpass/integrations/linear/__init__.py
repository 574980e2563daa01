"""Linear: a user's workspace role and team memberships, read live and evaluated.

Linear's GraphQL API (``POST /graphql``) has no "may this user do this" question for another
user, so the check reads the documented model from live data and evaluates it:

- the user (``user(id:)``): ``active`` (false: suspended, denied), ``admin``, ``owner``,
  ``guest``, and their team memberships with the team owner flag;
- the resource's team: ``team(id:)`` or ``teams(filter: {key: {eq:}})`` for ``team:KEY``;
  ``issue(id:)`` (a UUID or an identifier ``KEY-123``) for ``issue:``; the issue of a
  comment, attachment or issue relation; the team of a cycle, label, membership, template,
  triage responsibility or workflow state. Its ``visibility``: a public team is open to every
  member who is not a guest, a private or restricted team only to its members; guests only
  to the teams they belong to.

On top of team access: ``team.manage`` needs a team owner or a workspace admin or owner,
``comment.edit`` the comment's author, ``comment.delete`` the author or an admin,
``workspace.admin`` an admin or owner, ``workspace.read``/``workspace.write`` any active
member who is not a guest. Team and workspace ``securitySettings`` are not evaluated.

Users are Linear user ids (UUIDs). The look-up ``email`` is ``users(filter: {email: {eq:}},
includeDisabled: true)`` compared exactly; an active account is preferred.

Authentication of the engine (``auth``): ``api_key`` (a personal API key, sent as
``Authorization: <key>``), ``bearer`` (an OAuth access token) or ``client_credentials`` (an
OAuth application's client id and secret exchanged at ``/oauth/token``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolpass.integrations._kit import (
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
from toolpass.integrations.linear._graphql import match_graphql
from toolpass.integrations.routes import Match, Request, normal_path

__all__ = ["Linear"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
ISSUE_KINDS = ("comment", "attachment", "issueRelation")
TEAM_KINDS = (
    "cycle",
    "issueLabel",
    "teamMembership",
    "template",
    "triageResponsibility",
    "workflowState",
)
#: The resource kinds each action scope names (each action declares its own in actions.json).
KINDS = {
    "team": ("team", *TEAM_KINDS),
    "issue": ("issue", *ISSUE_KINDS),
}
_FIELDS = "id key private visibility"
_TEAM = f"team {{ {_FIELDS} }}"
#: Kinds whose team may be none (a workspace-wide label or template).
_NULLABLE = ("issueLabel", "template")
CREDENTIAL = (
    "Least privilege: a personal API key (Settings > Account > Security & access > Personal "
    "API keys) with the Read permission only, of a workspace member (not a guest) who belongs "
    "to the private teams whose issues are checked; or an OAuth application (Settings > API "
    "> OAuth applications) with client credentials enabled and the read scope (auth "
    "client_credentials)."
)


USER_IDS = UserIds(_UUID, "a Linear user id")


class Linear(Integration):
    """Linear, through its workspace roles, teams and memberships."""

    name = "linear"
    description = (
        "Linear: the user's workspace role (admin, owner, guest, active) and team "
        "memberships (team owner), and the resource's team and its visibility, read live "
        "with GraphQL and evaluated (Linear has no check for another user). " + CREDENTIAL
    )
    default_url = "https://api.linear.app"
    identity_modes = ("email",)
    keys = (
        ConfigKey(
            "auth",
            "How the engine signs in: api_key (Authorization: <key>), bearer (an OAuth access "
            "token) or client_credentials (client_id + client_secret at /oauth/token).",
            default="api_key",
            choices=("api_key", "bearer", "client_credentials"),
            needs={
                "api_key": ("api_key",),
                "bearer": ("access_token",),
                "client_credentials": ("client_id", "client_secret"),
            },
        ),
        ConfigKey(
            "api_key", "A personal API key with the Read permission (auth api_key).", secret=True
        ),
        ConfigKey("access_token", "An OAuth access token (auth bearer).", secret=True),
        ConfigKey("client_id", "The OAuth application's client id (auth client_credentials)."),
        ConfigKey(
            "client_secret",
            "The OAuth application's client secret (auth client_credentials).",
            secret=True,
        ),
        ConfigKey("scope", "The scopes asked with client credentials.", default="read"),
        ttl_key("user", "a user's role and team memberships", 300.0),
        ttl_key("resource", "the team of an issue, comment, ... and its visibility", 60.0),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._users: Cache[str, tuple[dict[str, Any], dict[str, bool]]] = Cache.option(
            self, "user_cache_ttl"
        )
        self._targets: Cache[str, tuple[dict[str, Any] | None, str | None]] = Cache.option(
            self, "resource_cache_ttl"
        )
        self._tokens = IssuedToken(self, self._client_credentials)

    # --- requests ------------------------------------------------------------------------
    def auth_headers(self) -> Mapping[str, str]:
        auth = self.options.get("auth", "api_key")
        if auth == "api_key":
            return {"Authorization": self.secret("api_key")}
        if auth == "bearer":
            return {"Authorization": f"Bearer {self.secret('access_token')}"}
        return {"Authorization": f"Bearer {self._tokens.get()}"}

    def _client_credentials(self) -> tuple[str, float]:
        form = {
            "grant_type": "client_credentials",
            "client_id": str(self.options["client_id"]),
            "client_secret": self.secret("client_secret"),
            "scope": str(self.options.get("scope", "read")),
        }
        return token_from(self, "/oauth/token", form, who="linear's token endpoint")

    def error_detail(self, data: Any) -> str | None:
        """GraphQL's ``{"errors": [{"message", "extensions": {"code"}}]}``."""
        errors = data.get("errors") if isinstance(data, dict) else None
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            first = errors[0]
            code = (first.get("extensions") or {}).get("code")
            message = str(first.get("message") or "")
            return f"{message} ({code})" if isinstance(code, str) else message or None
        return super().error_detail(data)

    def accept(self, data: Any, what: str) -> None:
        if isinstance(data, dict) and data.get("errors"):
            said = self.error_detail(data) or "an error"
            raise LookupFailed(self.redact(f"linear answered {what} with {said[:200]}"))

    def graphql(self, query: str, variables: Mapping[str, Any], what: str) -> dict[str, Any]:
        """The ``data`` of a GraphQL query; a client-credentials token refused once is
        replaced once."""
        for attempt in (1, 2):
            headers = dict(self.auth_headers())
            answer = self.answer(
                "POST",
                "/graphql",
                what=what,
                json={"query": query, "variables": variables},
                headers=headers,
            )
            if answer.status == 401 and attempt == 1 and self.issued is not None:
                self._tokens.drop(headers["Authorization"].removeprefix("Bearer "))
                continue
            if answer.status != 200:
                raise self.failure(answer, what)
            data = self.parse(answer, what).get("data")
            if not isinstance(data, dict):
                raise LookupFailed(f"linear's answer to {what} has no data")
            return data
        raise AssertionError("unreachable")  # pragma: no cover

    def match_request(self, request: Request) -> Match | None:
        """GraphQL requests (``/graphql``), placed by the fields they ask for."""
        path = normal_path(request.path)
        if (
            path is not None
            and path.rstrip("/") == "/graphql"
            and request.method in ("GET", "POST")
        ):
            return match_graphql(request)
        return self.route_table().match(request)

    # --- identity ------------------------------------------------------------------------
    def lookup_email(self, email: str) -> list[str]:
        query = (
            "query($email: String!) { users(filter: {email: {eq: $email}}, "
            "includeDisabled: true, first: 50) { nodes { id email active } } }"
        )
        what = "find the user by email"
        users = (self.graphql(query, {"email": email}, what).get("users") or {}).get("nodes")
        if not isinstance(users, list):
            raise LookupFailed(f"linear's answer to {what} has no users")
        found = [
            (str(u["id"]), u.get("active") is True)
            for u in users
            if isinstance(u, dict)
            and isinstance(u.get("id"), str)
            and str(u.get("email", "")).lower() == email.lower()
        ]
        return [uid for uid, active in found if active] or [uid for uid, _ in found]

    # --- the check -----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        ask = asked(self, action, resource, user, USER_IDS)
        if isinstance(ask, Decision):
            return ask
        scope, needs = str(ask.terms.get("scope")), ask.terms.get("needs")
        kind, rid, uid = ask.on.kind, ask.on.id, ask.uid
        me, teams = self._user(uid)
        who = f"Linear user {uid}"
        admin = me.get("admin") is True or me.get("owner") is True
        if me.get("active") is not True:
            return Decision.deny(f"{who} is suspended")
        team, author = (None, None) if scope == "workspace" else self._target(kind, rid)
        # needs: admin, team_owner, author, author_or_admin, or None
        if team is None:  # the workspace, or a workspace-wide label or template
            if needs in ("admin", "team_owner"):
                if admin:
                    return Decision.allow(f"{who} is a workspace admin or owner")
                return Decision.deny(f"{who} is not a workspace admin or owner")
            if me.get("guest") is True:
                return Decision.deny(f"{who} is a guest, limited to the teams they belong to")
            return Decision.allow(f"{who} is an active member of the workspace")
        key = team.get("key")
        if team["id"] not in teams:
            if me.get("guest") is True:
                return Decision.deny(f"{who} is a guest and not a member of team {key}")
            if team.get("visibility", "private" if team.get("private") else "public") != "public":
                return Decision.deny(f"{who} is not a member of the private team {key}")
        if needs == "team_owner" and not (teams.get(team["id"]) or admin):
            return Decision.deny(f"{who} is neither an owner of team {key} nor a workspace admin")
        if needs == "author" and author != uid:
            return Decision.deny(f"{who} did not write {resource}")
        if needs == "author_or_admin" and author != uid and not admin:
            return Decision.deny(f"{who} did not write {resource} and is not a workspace admin")
        return Decision.allow(f"{who} may {action} in team {key}")

    def _user(self, uid: str) -> tuple[dict[str, Any], dict[str, bool]]:
        """The user's flags and their teams (team id -> whether they own it)."""
        return self._users.get(uid, lambda: self._read_user(uid))

    def _read_user(self, uid: str) -> tuple[dict[str, Any], dict[str, bool]]:
        query = (
            "query($id: String!, $after: String) { user(id: $id) { id active admin owner "
            "guest teamMemberships(first: 100, after: $after) { nodes { owner team { id } } "
            "pageInfo { hasNextPage endCursor } } } }"
        )
        what = "read the user and their team memberships"
        me: dict[str, Any] = {}
        teams: dict[str, bool] = {}

        def read(url: str, *, what: str, params: Mapping[str, str | None], absent: Any) -> Any:
            data = self.graphql(query, {"id": uid, "after": params.get("after")}, what)
            user = data.get("user")
            if isinstance(user, dict):
                me.update({k: user.get(k) for k in ("active", "admin", "owner", "guest")})
            return data

        memberships = paged(
            self,
            "/graphql",
            what=what,
            too_many=f"{uid} is in too many teams",
            style="cursor",
            items="user.teamMemberships.nodes",
            size_param=None,
            cursor="after",
            next_at="user.teamMemberships.pageInfo.endCursor",
            more_at="user.teamMemberships.pageInfo.hasNextPage",
            get=read,
        )
        for node in memberships:
            team = node.get("team") if isinstance(node, dict) else None
            if not (isinstance(team, dict) and isinstance(team.get("id"), str)):
                raise LookupFailed(f"linear's answer to {what} has a malformed membership")
            teams[team["id"]] = teams.get(team["id"], False) or node.get("owner") is True
        return me, teams

    def _target(self, kind: str, rid: str) -> tuple[dict[str, Any] | None, str | None]:
        """The team a resource belongs to (None: the workspace's own), and a comment's
        author."""
        return self._targets.get(f"{kind}:{rid}", lambda: self._read_target(kind, rid))

    def _read_target(self, kind: str, rid: str) -> tuple[dict[str, Any] | None, str | None]:
        resource = f"{kind}:{rid}"
        what = f"read {resource}"
        variables: dict[str, Any] = {"id": rid}
        found: tuple[Any, str | None]
        if kind == "team" and not _UUID.fullmatch(rid):
            query = (
                "query($id: String!) { teams(filter: {key: {eq: $id}}, first: 2) "
                f"{{ nodes {{ {_FIELDS} }} }} }}"
            )
            nodes = (self.graphql(query, variables, what).get("teams") or {}).get("nodes")
            if not isinstance(nodes, list) or len(nodes) != 1:
                raise LookupFailed(f"linear has no one team with the key {rid}")
            found = (nodes[0], None)
        elif kind == "team":
            query = f"query($id: String!) {{ team(id: $id) {{ {_FIELDS} }} }}"
            found = (self.graphql(query, variables, what).get("team"), None)
        elif kind in ("issue", *TEAM_KINDS):
            query = f"query($id: String!) {{ {kind}(id: $id) {{ id {_TEAM} }} }}"
            data = self.graphql(query, variables, what).get(kind)
            if not isinstance(data, dict):
                raise LookupFailed(f"linear's answer to {what} has no {kind}")
            found = (data.get("team"), None)
        else:
            author = " user { id }" if kind == "comment" else ""
            query = (
                f"query($id: String!) {{ {kind}(id: $id) {{ id{author} issue {{ id {_TEAM} }} }} }}"
            )
            data = self.graphql(query, variables, what).get(kind)
            if not isinstance(data, dict) or not isinstance(data.get("issue"), dict):
                raise LookupFailed(f"linear's answer to {what} names no issue")
            by = data.get("user")
            found = (data["issue"].get("team"), by.get("id") if isinstance(by, dict) else None)
        team = found[0]
        if team is None and kind in _NULLABLE:
            pass
        elif not (isinstance(team, dict) and isinstance(team.get("id"), str)):
            raise LookupFailed(f"linear's answer to {what} has no team")
        return found

    # --- the probe -----------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        query = "query { viewer { id admin guest } organization { urlKey } }"
        data = self.graphql(query, {}, "read the engine's own user and workspace")
        viewer, org = data.get("viewer"), data.get("organization")
        if not (isinstance(viewer, dict) and isinstance(org, dict)):
            return ProbeResult(False, "linear's answer has no viewer or organization")
        if viewer.get("guest") is True:
            return ProbeResult(False, "the engine's Linear user is a guest: it sees too little")
        return ProbeResult(
            True,
            f"the engine reads workspace {org.get('urlKey')} as Linear user {viewer.get('id')}",
        )


INTEGRATION = Linear
