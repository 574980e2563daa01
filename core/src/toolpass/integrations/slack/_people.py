"""Slack's rules that read only a person's user object (``users.info``) and a channel's
(``conversations.info``): flags, admins, workspaces of Enterprise Grid."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolpass.integrations.base import Decision
from toolpass.integrations.slack._keys import TEAM_ID

__all__ = ["admin", "flag", "in_workspace", "is_admin", "other_workspace", "teams_of"]


def flag(obj: Mapping[str, Any], name: str) -> bool:
    """Whether the object says ``name: true`` (anything else is false)."""
    return obj.get(name) is True


def in_workspace(who: str, person: Mapping[str, Any], team: str | None) -> Decision | None:
    """A refusal when ``who`` is not (or is not known to be) a member of ``team``; None
    when they are, or no workspace is asked."""
    if not team:
        return None
    teams = teams_of(person)
    if teams is None:
        return Decision.unknown(f"slack does not say which workspaces {who} belongs to")
    if team not in teams:
        return Decision.deny(f"{who} is not a member of workspace {team}")
    return None


def workspace_member(who: str, person: Mapping[str, Any], team: str | None) -> Decision:
    """Whether ``who`` is a full member of the workspace ``team`` (or of theirs)."""
    outside = in_workspace(who, person, team)
    if outside is not None:
        return outside
    if flag(person, "is_restricted") or flag(person, "is_ultra_restricted"):
        return Decision.deny(f"{who} is a guest: guests see only the channels they are in")
    if flag(person, "is_stranger"):
        return Decision.deny(f"{who} is an external user")
    return Decision.allow(f"{who} is a full member of the workspace")


def admin(who: str, person: Mapping[str, Any]) -> Decision:
    """Whether ``who`` is a Slack admin or owner (an Enterprise Grid org's, on Grid)."""
    grid = person.get("enterprise_user")
    if isinstance(grid, dict):
        if flag(grid, "is_owner") or flag(grid, "is_admin"):
            return Decision.allow(f"{who} is an Enterprise Grid org admin or owner")
        return Decision.deny(f"{who} is not an Enterprise Grid org admin or owner")
    if is_admin(person):
        return Decision.allow(f"{who} is a workspace admin or owner")
    return Decision.deny(f"{who} is not a Slack admin or owner")


def is_admin(person: Mapping[str, Any]) -> bool:
    """Whether the person is a workspace admin or owner."""
    return any(flag(person, f) for f in ("is_admin", "is_owner", "is_primary_owner"))


def other_workspace(
    who: str, person: Mapping[str, Any], info: Mapping[str, Any], label: str
) -> Decision | None:
    """On Enterprise Grid a public channel is open to the members of its own workspace (and
    of the workspaces it is shared with), not to the whole organisation: a deny when ``who``
    belongs to none of them, unknown when Slack does not say; None when it is theirs (or
    outside Grid)."""
    grid = isinstance(person.get("enterprise_user"), dict) or any(
        info.get(k) for k in ("enterprise_id", "is_org_shared", "shared_team_ids")
    )
    if not grid:
        return None
    homes = {info.get("context_team_id"), info.get("conversation_host_id")}
    for key in ("shared_team_ids", "internal_team_ids"):
        listed = info.get(key)
        homes.update(listed if isinstance(listed, list) else [])
    channel_teams = {t for t in homes if isinstance(t, str) and TEAM_ID.fullmatch(t)}
    teams = teams_of(person)
    if not channel_teams or teams is None:
        return Decision.unknown(f"slack does not say which workspaces {label} or {who} are in")
    if teams & channel_teams:
        return None
    return Decision.deny(
        f"{label} is a public channel of workspace(s) {', '.join(sorted(channel_teams))}, "
        f"which {who} is not in"
    )


def teams_of(person: Mapping[str, Any]) -> set[str] | None:
    """The workspaces the person belongs to, when Slack says."""
    teams: set[str] = set()
    if isinstance(person.get("team_id"), str):
        teams.add(person["team_id"])
    grid = person.get("enterprise_user")
    if isinstance(grid, dict) and isinstance(grid.get("teams"), list):
        teams.update(t for t in grid["teams"] if isinstance(t, str))
    return teams or None
