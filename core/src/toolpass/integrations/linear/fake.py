"""A fake Linear GraphQL API on 127.0.0.1 (``POST /graphql``, ``POST /oauth/token``).

The fake executes each request with graphql-core against a part of Linear's published schema
(``packages/sdk/src/schema.graphql``: the same type, field and argument names), so a query
naming a field Linear does not have fails as it would there: HTTP 400 with
``{"errors": [{"message", "extensions": {"code": "GRAPHQL_VALIDATION_FAILED"}}]}``. A missing
entity is ``{"data": null, "errors": [{"message": "Entity not found", ...}]}`` (HTTP 200).

Credentials: ``Authorization: <api key>`` or ``Authorization: Bearer <token>``; otherwise
HTTP 401 with ``AUTHENTICATION_ERROR``. Seeded users, teams (visibility), memberships (team
owners), issues (identifiers ``KEY-n``; the root list ``issues`` filtered by team key or
id), comments, labels; ``issueUpdate`` and
``commentCreate`` change them (for the request hook).
"""

from __future__ import annotations

import itertools
from typing import Any
from urllib.parse import parse_qs

from fakes.server import FakeServer, Reply, Request
from graphql import GraphQLError, build_schema, graphql_sync

SDL = """
enum TeamVisibility { private public restricted }
input StringComparator { eq: String eqIgnoreCase: String }
input UserFilter { email: StringComparator }
input IDComparator { eq: ID }
input TeamFilter { key: StringComparator id: IDComparator }
input IssueFilter { team: TeamFilter }
type PageInfo { hasNextPage: Boolean! endCursor: String }
type Organization { id: ID! urlKey: String! name: String! }
type User {
  id: ID! email: String! name: String! active: Boolean! admin: Boolean! owner: Boolean!
  guest: Boolean! app: Boolean!
  teamMemberships(first: Int, after: String): TeamMembershipConnection!
  assignedIssues(first: Int): IssueConnection!
}
type UserConnection { nodes: [User!]! pageInfo: PageInfo! }
type TeamMembership { id: ID! owner: Boolean! team: Team! user: User! }
type TeamMembershipConnection { nodes: [TeamMembership!]! pageInfo: PageInfo! }
type Team {
  id: ID! key: String! name: String! private: Boolean! visibility: TeamVisibility!
  issues(first: Int): IssueConnection!
}
type TeamConnection { nodes: [Team!]! pageInfo: PageInfo! }
type Issue {
  id: ID! identifier: String! title: String! description: String team: Team!
  assignee: User comments(first: Int): CommentConnection!
}
type IssueConnection { nodes: [Issue!]! pageInfo: PageInfo! }
type Comment { id: ID! body: String! user: User issue: Issue }
type CommentConnection { nodes: [Comment!]! pageInfo: PageInfo! }
type IssueLabel { id: ID! name: String! team: Team }
type IssuePayload { success: Boolean! issue: Issue }
type CommentPayload { success: Boolean! comment: Comment }
input IssueUpdateInput { title: String description: String }
input CommentCreateInput { issueId: String body: String }
type Query {
  viewer: User!
  organization: Organization!
  user(id: String!): User!
  users(filter: UserFilter, includeDisabled: Boolean, first: Int): UserConnection!
  team(id: String!): Team!
  teams(filter: TeamFilter, first: Int): TeamConnection!
  issue(id: String!): Issue!
  issues(filter: IssueFilter, first: Int): IssueConnection!
  comment(id: String!): Comment!
  issueLabel(id: String!): IssueLabel!
}
type Mutation {
  issueUpdate(id: String!, input: IssueUpdateInput!): IssuePayload!
  commentCreate(input: CommentCreateInput!): CommentPayload!
}
"""
SCHEMA = build_schema(SDL)
_PAGE = {"hasNextPage": False, "endCursor": None}


def _conn(nodes: list[Any]) -> dict[str, Any]:
    return {"nodes": nodes, "pageInfo": _PAGE}


class FakeLinear(FakeServer):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.keys: set[str] = set()
        self.tokens: set[str] = set()
        self.clients: dict[str, str] = {}  # client id -> secret (client credentials)
        self.viewer = ""
        self.users: dict[str, dict[str, Any]] = {}
        self.teams: dict[str, dict[str, Any]] = {}
        self.members: dict[tuple[str, str], bool] = {}  # (user, team) -> owner
        self.issues: dict[str, dict[str, Any]] = {}  # identifier -> issue
        self.comments: dict[str, dict[str, Any]] = {}
        self.labels: dict[str, dict[str, Any]] = {}
        self.page_size = 100
        self._ids = itertools.count(1)
        self.add("POST", r"/graphql", self._graphql)
        self.add("POST", r"/oauth/token", self._token)

    # --- seeding -----------------------------------------------------------------------
    def add_user(self, uid: str, email: str, **flags: bool) -> None:
        base = {"active": True, "admin": False, "owner": False, "guest": False, "app": False}
        self.users[uid] = {"id": uid, "email": email, "name": email, **base, **flags}

    def add_team(self, tid: str, key: str, visibility: str = "public") -> None:
        private = visibility == "private"
        self.teams[tid] = {"id": tid, "key": key, "name": key, "private": private}
        self.teams[tid]["visibility"] = visibility

    def add_issue(self, identifier: str, team: str, title: str = "An issue") -> dict[str, Any]:
        issue = {
            "id": f"issue-{next(self._ids)}",
            "identifier": identifier,
            "title": title,
            "description": "",
            "team": team,
        }
        self.issues[identifier] = issue
        return issue

    # --- resolving ---------------------------------------------------------------------
    def _user(self, uid: str) -> dict[str, Any]:
        u = self.users[uid]
        teams = [
            {"id": f"m-{t}-{uid}", "owner": owner, "team": self._team(t)}
            for (who, t), owner in self.members.items()
            if who == uid
        ]
        return {
            **u,
            "teamMemberships": lambda info, first=None, after=None: self._paged(teams, after),
            "assignedIssues": lambda info, first=None: _conn([]),
        }

    def _paged(self, items: list[Any], after: str | None) -> dict[str, Any]:
        start = int(after or 0)
        end = start + self.page_size
        more = end < len(items)
        info = {"hasNextPage": more, "endCursor": str(end) if more else None}
        return {"nodes": items[start:end], "pageInfo": info}

    def _team(self, tid: str) -> dict[str, Any]:
        t = self.teams[tid]
        issues = [i for i in self.issues.values() if i["team"] == tid]
        return {**t, "issues": lambda info, first=None: _conn([self._issue(i) for i in issues])}

    def _issue(self, issue: dict[str, Any]) -> dict[str, Any]:
        mine = [c for c in self.comments.values() if c["issue"] == issue["identifier"]]
        return {
            **issue,
            "team": lambda info: self._team(issue["team"]),
            "assignee": None,
            "comments": lambda info, first=None: _conn([self._comment(c) for c in mine]),
        }

    def _comment(self, c: dict[str, Any]) -> dict[str, Any]:
        return {
            **c,
            "user": self._user(c["user"]) if c.get("user") else None,
            "issue": lambda info: self._issue(self.issues[c["issue"]]),
        }

    def _find_issue(self, ref: str) -> dict[str, Any]:
        for issue in self.issues.values():
            if ref in (issue["id"], issue["identifier"]):
                return issue
        raise GraphQLError("Entity not found", extensions={"code": "INVALID_INPUT"})

    def _root(self) -> dict[str, Any]:
        def need(table: dict[str, Any], key: str) -> Any:
            if key not in table:
                raise GraphQLError("Entity not found", extensions={"code": "INVALID_INPUT"})
            return table[key]

        def users(info: Any, filter: Any = None, includeDisabled: Any = False, first: Any = 50):
            email = ((filter or {}).get("email") or {}).get("eq")
            found = [
                self._user(uid)
                for uid, u in self.users.items()
                if (email is None or u["email"] == email) and (u["active"] or includeDisabled)
            ]
            return _conn(found)

        def teams(info: Any, filter: Any = None, first: Any = 50) -> Any:
            key = ((filter or {}).get("key") or {}).get("eq")
            return _conn([self._team(t) for t, v in self.teams.items() if key in (None, v["key"])])

        def issues(info: Any, filter: Any = None, first: Any = 50) -> Any:
            team = (filter or {}).get("team") or {}
            key, tid = (team.get("key") or {}).get("eq"), (team.get("id") or {}).get("eq")
            found = [
                self._issue(i)
                for i in self.issues.values()
                if key in (None, self.teams[i["team"]]["key"]) and tid in (None, i["team"])
            ]
            return _conn(found)

        def label(info: Any, id: str) -> Any:
            lab = need(self.labels, id)
            return {**lab, "team": self._team(lab["team"]) if lab.get("team") else None}

        def issue_update(info: Any, id: str, input: Any) -> Any:
            issue = self._find_issue(id)
            issue.update({k: v for k, v in input.items() if v is not None})
            return {"success": True, "issue": self._issue(issue)}

        def comment_create(info: Any, input: Any) -> Any:
            issue = self._find_issue(input["issueId"])
            cid = f"comment-{next(self._ids)}"
            self.comments[cid] = {
                "id": cid,
                "body": input.get("body") or "",
                "user": self.viewer,
                "issue": issue["identifier"],
            }
            return {"success": True, "comment": self._comment(self.comments[cid])}

        return {
            "viewer": lambda info: self._user(self.viewer),
            "organization": {"id": "org-1", "urlKey": "acme", "name": "Acme"},
            "user": lambda info, id: self._user(need(self.users, id)["id"]),
            "users": users,
            "team": lambda info, id: self._team(need(self.teams, id)["id"]),
            "teams": teams,
            "issue": lambda info, id: self._issue(self._find_issue(id)),
            "issues": issues,
            "comment": lambda info, id: self._comment(need(self.comments, id)),
            "issueLabel": label,
            "issueUpdate": issue_update,
            "commentCreate": comment_create,
        }

    # --- HTTP --------------------------------------------------------------------------
    def _ok(self, request: Request) -> bool:
        given = request.headers.get("authorization", "")
        return given in self.keys or given.removeprefix("Bearer ") in self.tokens

    def _graphql(self, request: Request) -> Reply:
        if not self._ok(request):
            error = {"message": "Authentication required, not authenticated"}
            error["extensions"] = {"code": "AUTHENTICATION_ERROR"}  # type: ignore[assignment]
            return Reply(401, {"errors": [error]})
        body = request.json()
        result = graphql_sync(
            SCHEMA,
            body.get("query") or "",
            root_value=self._root(),
            variable_values=body.get("variables"),
            operation_name=body.get("operationName"),
            field_resolver=_resolve,
        )
        errors = [
            {"message": e.message, "extensions": e.extensions or {"code": "INVALID_INPUT"}}
            for e in result.errors or []
        ]
        if result.data is None and errors and not any("not found" in e["message"] for e in errors):
            errors[0]["extensions"] = {"code": "GRAPHQL_VALIDATION_FAILED"}
            return Reply(400, {"errors": errors})
        return Reply(200, {"data": result.data, **({"errors": errors} if errors else {})})

    def _token(self, request: Request) -> Reply:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if form.get("grant_type") != "client_credentials":
            return Reply(400, {"error": "unsupported_grant_type"})
        if self.clients.get(form.get("client_id", "")) != form.get("client_secret"):
            return Reply(401, {"error": "invalid_client"})
        token = f"lin_oauth_{next(self._ids)}"
        self.tokens.add(token)
        return Reply(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600})


def _resolve(source: Any, info: Any, **args: Any) -> Any:
    """Dict fields, calling those that are functions with the field's arguments."""
    value = source.get(info.field_name) if isinstance(source, dict) else None
    return value(info, **args) if callable(value) else value


def populate(fake: FakeLinear) -> FakeLinear:
    fake.keys.add("lin_api_engine")
    fake.add_user("00000000-0000-4000-8000-000000000001", "eve@example.com")  # the engine
    fake.viewer = "00000000-0000-4000-8000-000000000001"
    fake.add_user("00000000-0000-4000-8000-00000000000a", "ana@example.com")
    fake.add_user("00000000-0000-4000-8000-00000000000b", "bo@example.com")
    fake.add_user("00000000-0000-4000-8000-00000000000c", "cy@example.com", guest=True)
    fake.add_user("00000000-0000-4000-8000-00000000000d", "di@example.com", admin=True)
    fake.add_user("00000000-0000-4000-8000-00000000000e", "ex@example.com", active=False)
    fake.add_team("10000000-0000-4000-8000-000000000001", "ENG")
    fake.add_team("10000000-0000-4000-8000-000000000002", "SEC", visibility="private")
    eng, sec = "10000000-0000-4000-8000-000000000001", "10000000-0000-4000-8000-000000000002"
    for uid, team, owner in [
        ("00000000-0000-4000-8000-000000000001", eng, False),
        ("00000000-0000-4000-8000-000000000001", sec, False),
        ("00000000-0000-4000-8000-00000000000a", eng, True),
        ("00000000-0000-4000-8000-00000000000a", sec, False),
        ("00000000-0000-4000-8000-00000000000c", eng, False),
        ("00000000-0000-4000-8000-00000000000e", eng, False),
    ]:
        fake.members[(uid, team)] = owner
    fake.add_issue("ENG-1", eng, "Login fails")
    fake.add_issue("SEC-1", sec, "Embargoed vulnerability")
    fake.comments["comment-ana"] = {
        "id": "comment-ana",
        "body": "I can reproduce",
        "user": "00000000-0000-4000-8000-00000000000a",
        "issue": "ENG-1",
    }
    fake.labels["label-eng"] = {"id": "label-eng", "name": "bug", "team": eng}
    fake.labels["label-ws"] = {"id": "label-ws", "name": "customer", "team": None}
    return fake
