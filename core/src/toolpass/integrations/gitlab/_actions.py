"""GitLab's access levels and its action table (``actions.json``): what each action needs
(:class:`Rule`); a leaf the check and the request hook both import."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from toolpass.integrations.base import Action, load_actions

__all__ = [
    "ACTIONS",
    "ACTION_EFFECT",
    "ADMIN",
    "DEVELOPER",
    "GUEST",
    "LEVELS",
    "MAINTAINER",
    "OWNER",
    "PLANNER",
    "REPORTER",
    "ROLE",
    "RULES",
    "SENDER_LISTS",
    "BranchOp",
    "Rule",
    "Scope",
    "TagOp",
]

GUEST, PLANNER, REPORTER, DEVELOPER, MAINTAINER, OWNER, ADMIN = 10, 15, 20, 30, 40, 50, 60
ROLE = {
    0: "No access",
    5: "Minimal Access",
    GUEST: "Guest",
    PLANNER: "Planner",
    REPORTER: "Reporter",
    DEVELOPER: "Developer",
    MAINTAINER: "Maintainer",
    OWNER: "Owner",
    ADMIN: "Admin",
}
LEVELS = (GUEST, PLANNER, REPORTER, DEVELOPER, MAINTAINER, OWNER, ADMIN)

BranchOp = Literal["push", "merge", "force_push", "delete", "create", "pipeline"]
TagOp = Literal["create", "delete", "release"]
Scope = Literal["project", "group", "instance"]


@dataclass(frozen=True, slots=True)
class Rule:
    """What GitLab requires for an action.

    ``level``: the minimum role of a member. ``open``: on public and internal projects the
    Guest role (or no membership at all) suffices, while the project's ``feature`` access
    level (e.g. ``merge_requests_access_level``) is ``enabled`` or ``public``. ``branch``:
    protected-branch semantics apply (the resource must name a branch or a merge request).
    ``scope``: project, group, or the instance (administrators only).
    ``issue`` (on ``issue:`` resources): ``confidential`` issues need Reporter, the author or
    an assignee; ``own``: the author or an assignee (at least Guest) may, whatever the role.
    ``tag``: protected-tag semantics apply (the resource must name a tag).
    ``locked_by_discussion``: an issue whose discussion is locked refuses it below Reporter.
    ``on_archived``: an archived (read-only) project still takes it (archive, delete).
    """

    level: int
    open: bool = False
    feature: str | None = None
    branch: BranchOp | None = None
    scope: Scope = "project"
    issue: Literal["confidential", "own"] | None = None
    tag: TagOp | None = None
    locked_by_discussion: bool = False
    on_archived: bool = False


ACTIONS: tuple[Action, ...] = load_actions(__name__.rpartition(".")[0])
RULES: dict[str, Rule] = {a.name: Rule(**a.terms) for a in ACTIONS}
ACTION_EFFECT = {a.name: a.effect for a in ACTIONS}
#: What GitLab answers with what the sending token sees: unknown unless own_tokens: user.
SENDER_LISTS = "sender_lists"
