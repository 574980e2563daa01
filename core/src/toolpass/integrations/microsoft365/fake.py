"""A fake Microsoft Graph (v1.0) for Microsoft 365 on 127.0.0.1, on the fake Entra ID of
``fakes.azure`` (its token endpoint, users and ``checkMemberGroups``), from the documented
request and response shapes:

- ``GET /drives/{d}/items/{i}/permissions`` (also ``/root``, path-addressed ``root:/p:``,
  ``/users/{u}/drive/...``): ``permission`` objects with ``roles``, ``grantedToV2``,
  ``grantedToIdentitiesV2`` and ``link``; ``@odata.nextLink`` pages of ``page_size``;
- ``GET /drives/{d}`` and ``/users/{u}/drive`` (``owner``), ``GET /shares/{id}/driveItem``;
- ``GET /teams/{t}`` (``isArchived``), ``/teams/{t}/members``, ``/teams/{t}/channels/{c}``
  (``membershipType``),
  ``/teams/{t}/channels/{c}/members``, ``/chats/{c}/members`` (``conversationMember``:
  ``userId``, ``roles``);
- ``GET /groups/{g}/owners``, ``/users/{id}/transitiveMemberOf/microsoft.graph.directoryRole``;
- for clients: ``GET /drives/{d}/items/{i}/content``, ``PUT .../items/{p}:/{name}:/content``,
  ``POST /users/{u}/sendMail`` (202).

Errors are Graph's ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from fakes.azure import GRAPH_API, FakeAzure, oid
from fakes.server import Reply, Request

DRIVE = "b!drive-team-docs"
DANA_DRIVE = "b!drive-dana"
TEAM = "bbbbbbbb-0000-4000-8000-000000000001"
GROUP = TEAM
STANDARD = "19:general@thread.tacv2"
PRIVATE = "19:secret@thread.tacv2"
CHAT = "19:chat-dana-erin@unq.gbl.spaces"
SALES = "cccccccc-0000-4000-8000-000000000001"
GLOBAL_ADMIN = "62e90394-69f5-4237-9190-012177145e10"


def _missing(what: str) -> Reply:
    return Reply(404, {"error": {"code": "itemNotFound", "message": f"{what} not found"}})


class FakeGraph(FakeAzure):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.permissions: dict[str, list[dict[str, Any]]] = {}  # item path -> permissions
        self.drives: dict[str, dict[str, Any]] = {}  # drive path -> {"owner": ...}
        self.shares: dict[str, str] = {}  # share id -> "drives/{d}/items/{i}"
        self.teams: dict[str, dict[str, list[str]]] = {}  # team -> user oid -> roles
        self.archived: set[str] = set()  # teams that are archived (read-only)
        self.channels: dict[tuple[str, str], dict[str, Any]] = {}
        self.chats: dict[str, list[str]] = {}
        self.owners: dict[str, list[str]] = {}
        self.directory_roles: dict[str, list[str]] = {}  # oid -> role template ids
        self.files: dict[str, bytes] = {}
        self.sent: list[dict[str, Any]] = []
        v = r"/v1\.0"
        self.add("GET", rf"{v}/(?P<item>.+?):?/permissions", self._permissions)
        self.add("GET", rf"{v}/(?P<drive>drives/[^/:]+|users/[^/]+/drive)", self._drive)
        self.add("GET", rf"{v}/shares/(?P<id>[^/]+)/driveItem", self._share)
        self.add("GET", rf"{v}/teams/(?P<team>[^/]+)", self._team)
        self.add("GET", rf"{v}/teams/(?P<team>[^/]+)/members", self._team_members)
        self.add("GET", rf"{v}/teams/(?P<team>[^/]+)/channels/(?P<c>[^/]+)", self._channel)
        self.add(
            "GET",
            rf"{v}/teams/(?P<team>[^/]+)/channels/(?P<c>[^/]+)/members",
            self._channel_members,
        )
        self.add("GET", rf"{v}/chats/(?P<chat>[^/]+)/members", self._chat_members)
        self.add("GET", rf"{v}/groups/(?P<group>[^/]+)/owners", self._owners)
        roles = rf"{v}/users/(?P<id>[^/]+)/transitiveMemberOf/microsoft\.graph\.directoryRole"
        self.add("GET", roles, self._roles)
        self.add("GET", rf"{v}/drives/(?P<d>[^/]+)/items/(?P<i>[^/:]+)/content", self._content)
        upload = rf"{v}/drives/(?P<d>[^/]+)/items/(?P<p>[^/:]+):/(?P<name>[^/:]+):/content"
        self.add("PUT", upload, self._upload)
        self.add("POST", rf"{v}/users/(?P<u>[^/]+)/sendMail", self._send)
        self.add("POST", rf"{v}/(?P<u>me)/sendMail", self._send)
        self.add("GET", rf"{v}/me", self._me)
        self.add("POST", rf"{v}/search/query", self._search)

    # --- seeding -------------------------------------------------------------------------
    def share(self, item: str, roles: list[str], **grantee: Any) -> None:
        """A permission on ``item``: ``user=oid``, ``group=id``, ``site_user=login``,
        ``site_group=name``, or ``link=scope`` (with ``identities=[oid, ...]``)."""
        perm: dict[str, Any] = {"id": f"perm-{len(self.permissions.get(item, []))}", "roles": roles}
        if "user" in grantee:
            perm["grantedToV2"] = {"user": {"id": grantee["user"], "displayName": "someone"}}
        if "group" in grantee:
            perm["grantedToV2"] = {"group": {"id": grantee["group"], "displayName": "a group"}}
        if "site_user" in grantee:
            login = f"i:0#.f|membership|{grantee['site_user']}"
            perm["grantedToV2"] = {"siteUser": {"id": "7", "loginName": login}}
        if "site_group" in grantee:
            perm["grantedToV2"] = {"siteGroup": {"id": "3", "displayName": grantee["site_group"]}}
        if "link" in grantee:
            perm["link"] = {
                "scope": grantee["link"],
                "type": "edit" if "write" in roles else "view",
            }
            perm["grantedToIdentitiesV2"] = [
                {"user": {"id": i}} for i in grantee.get("identities", [])
            ]
        self.permissions.setdefault(item, []).append(perm)

    # --- handlers ------------------------------------------------------------------------
    def _graph(self, request: Request) -> Reply | None:
        return self._authorized(request, GRAPH_API)

    def _paged(self, request: Request, items: list[dict[str, Any]]) -> Reply:
        start = int(request.arg("$skiptoken", "0") or 0)
        body: dict[str, Any] = {"value": items[start : start + self.page_size]}
        if start + self.page_size < len(items):
            body["@odata.nextLink"] = (
                f"{self.url}{request.path}?$skiptoken={start + self.page_size}"
            )
        return Reply(200, body)

    def _permissions(self, request: Request) -> Reply:
        if (bad := self._graph(request)) is not None:
            return bad
        item = request.params["item"]
        if item not in self.permissions:
            return _missing(item)
        return self._paged(request, self.permissions[item])

    def _drive(self, request: Request) -> Reply:
        if (bad := self._graph(request)) is not None:
            return bad
        drive = self.drives.get(request.params["drive"])
        if drive is None:
            return _missing("drive")
        return Reply(200, {"id": request.params["drive"], **drive})

    def _share(self, request: Request) -> Reply:
        if (bad := self._graph(request)) is not None:
            return bad
        target = self.shares.get(request.params["id"])
        if target is None:
            return _missing("share")
        _, drive, _, item = target.split("/")
        return Reply(200, {"id": item, "parentReference": {"driveId": drive}})

    def _members(self, request: Request, members: dict[str, list[str]] | None) -> Reply:
        if members is None:
            return _missing("team or channel")
        return self._paged(
            request,
            [
                {
                    "@odata.type": "#microsoft.graph.aadUserConversationMember",
                    "id": f"m-{uid}",
                    "userId": uid,
                    "roles": roles,
                }
                for uid, roles in members.items()
            ],
        )

    def _team(self, request: Request) -> Reply:
        if (bad := self._graph(request)) is not None:
            return bad
        team = request.params["team"]
        if team not in self.teams:
            return _missing("team")
        return Reply(200, {"id": team, "isArchived": team in self.archived})

    def _team_members(self, request: Request) -> Reply:
        return self._graph(request) or self._members(
            request, self.teams.get(request.params["team"])
        )

    def _channel(self, request: Request) -> Reply:
        if (bad := self._graph(request)) is not None:
            return bad
        channel = self.channels.get((request.params["team"], request.params["c"]))
        if channel is None:
            return _missing("channel")
        return Reply(200, {"id": request.params["c"], "membershipType": channel["type"]})

    def _channel_members(self, request: Request) -> Reply:
        channel = self.channels.get((request.params["team"], request.params["c"]))
        return self._graph(request) or self._members(request, channel and channel["members"])

    def _chat_members(self, request: Request) -> Reply:
        chat = self.chats.get(request.params["chat"])
        members = None if chat is None else {uid: ["owner"] for uid in chat}
        return self._graph(request) or self._members(request, members)

    def _owners(self, request: Request) -> Reply:
        if (bad := self._graph(request)) is not None:
            return bad
        owners = self.owners.get(request.params["group"])
        if owners is None:
            return _missing("group")
        return self._paged(
            request, [{"@odata.type": "#microsoft.graph.user", "id": o} for o in owners]
        )

    def _roles(self, request: Request) -> Reply:
        if (bad := self._graph(request)) is not None:
            return bad
        uid = request.params["id"]
        if uid not in self.users:
            return _missing("user")
        held = self.directory_roles.get(uid, [])
        roles = [
            {"id": f"role-{t}", "displayName": "Global Administrator", "roleTemplateId": t}
            for t in held
        ]
        return self._paged(request, roles)

    def _content(self, request: Request) -> Reply:
        if (bad := self._graph(request)) is not None:
            return bad
        key = unquote(f"drives/{request.params['d']}/items/{request.params['i']}")
        if key not in self.files:
            return _missing(key)
        return Reply(200, self.files[key], {"Content-Type": "application/octet-stream"})

    def _upload(self, request: Request) -> Reply:
        if (bad := self._graph(request)) is not None:
            return bad
        key = f"drives/{request.params['d']}/items/{request.params['p']}/{request.params['name']}"
        self.files[key] = request.body
        return Reply(
            201, {"id": "new-item", "name": request.params["name"], "size": len(request.body)}
        )

    def _send(self, request: Request) -> Reply:
        if (bad := self._graph(request)) is not None:
            return bad
        self.sent.append({"from": request.params["u"], **request.json()})
        return Reply(202, None)

    def _me(self, request: Request) -> Reply:
        """The sending token's account (a delegated token's signed-in agent account)."""
        if (bad := self._graph(request)) is not None:
            return bad
        return Reply(200, {"id": "agent", "displayName": "The agent"})

    def _search(self, request: Request) -> Reply:
        """Search answers every hit the sending account sees (here: every drive item)."""
        if (bad := self._graph(request)) is not None:
            return bad
        hits = [{"hitId": item} for item in sorted(self.permissions)]
        return Reply(200, {"value": [{"hitsContainers": [{"hits": hits}]}]})


def populate(g: FakeGraph) -> FakeGraph:
    """The users of ``fakes.azure`` (dana 1 in ENGINEERS, erin 2, frank 3, gail 4 disabled,
    hank 5 in SALES) and a guest (6). The drive DRIVE is owned by the group SALES: its item
    ``plan`` is shared write with dana, read with ENGINEERS and read with frank's SharePoint
    login; ``budget`` with a site group and an organization link; ``notes`` with a
    specific-people link for erin. dana owns DANA_DRIVE. TEAM: dana owner, erin member, the
    guest; its private channel has dana only. A chat of dana and erin; dana owns and is in the
    group GROUP; frank is a Global Administrator."""
    from fakes.azure import ENGINEERS
    from fakes.azure import populate as entra

    entra(g)
    dana, erin, frank, hank = oid(1), oid(2), oid(3), oid(5)
    g.add_user(6, "guest", guest=True)
    g.parents[SALES] = set()
    g.users[hank]["groups"].add(SALES)
    g.drives[f"drives/{DRIVE}"] = {"owner": {"group": {"id": SALES}}}
    g.drives[f"drives/{DANA_DRIVE}"] = {"owner": {"user": {"id": dana}}}
    g.drives[f"users/{dana}/drive"] = g.drives[f"drives/{DANA_DRIVE}"]
    plan = f"drives/{DRIVE}/items/plan"
    g.share(plan, ["write"], user=dana)
    g.share(plan, ["read"], group=ENGINEERS)
    g.share(plan, ["read"], site_user="frank@example.com")
    g.share(f"drives/{DRIVE}/items/budget", ["owner"], site_group="Team Docs Owners")
    g.share(f"drives/{DRIVE}/items/budget", ["write"], link="organization")
    g.share(f"drives/{DRIVE}/items/notes", ["read"], link="users", identities=[erin])
    g.permissions[f"drives/{DRIVE}/items/empty"] = []
    g.permissions[f"drives/{DANA_DRIVE}/items/diary"] = []
    g.permissions[f"drives/{DRIVE}/root:/docs/plan.docx"] = g.permissions[plan]
    g.permissions[f"drives/{DRIVE}/items/folder"] = [
        {"id": "p", "roles": ["write"], "grantedToV2": {"user": {"id": dana}}}
    ]
    g.shares["u!shared-plan"] = plan
    g.files[plan] = b"the plan"
    g.teams[TEAM] = {dana: ["owner"], erin: [], oid(6): ["guest"]}
    g.channels[(TEAM, STANDARD)] = {"type": "standard", "members": {}}
    g.channels[(TEAM, PRIVATE)] = {"type": "private", "members": {dana: ["owner"]}}
    g.chats[CHAT] = [dana, erin]
    g.owners[GROUP] = [dana]
    g.users[dana]["groups"].add(GROUP)
    g.owners[SALES] = []
    g.directory_roles[frank] = [GLOBAL_ADMIN]
    _ = hank
    return g
