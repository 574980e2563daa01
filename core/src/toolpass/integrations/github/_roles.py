"""The engine's reads of GitHub: its authenticated requests (a token, or a GitHub App's
installation token), and who holds which role: a user's permission on a repository, their
organization and team memberships, and whether they administer a GitHub Enterprise Server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from toolpass.integrations.base import Decision, Integration
from toolpass.integrations.github import _rules as rules
from toolpass.integrations.github._app import App
from toolpass.wire.errors import LookupFailed
from toolpass.wire.http import Response

__all__ = ["RoleReads"]


class RoleReads(Integration):
    """GitHub's requests and role reads, for :class:`~toolpass.integrations.github.GitHub`."""

    _app: App | None = None

    # --- requests ----------------------------------------------------------------------
    def headers(self, owner: str | None, repo: str | None = None) -> dict[str, str]:
        """Headers for a call about ``owner``'s resources (``repo`` finds an App's installation)."""
        token = self._app.token(owner, repo) if self._app else self.secret("token")
        return {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": self.options["api_version"],
        }

    def get(
        self, path: str, what: str, owner: str | None, repo: str | None = None, absent: int = 0
    ) -> Any:
        """The JSON object a GET answers, authenticated for ``owner``'s installation (or the
        token); None when the status is ``absent``."""
        headers = self.headers(owner, repo)
        return self.get_json(path, what=what, headers=headers, absent=(absent,))

    def failure(self, answer: Response, what: str) -> LookupFailed:
        if answer.status == 403 and answer.header("x-ratelimit-remaining") == "0":
            reset = answer.header("x-ratelimit-reset") or "?"
            return LookupFailed(
                f"github rate-limited the engine (HTTP 403, resets at {reset}) to {what}"
            )
        return super().failure(answer, what)

    def secret_values(self) -> Iterator[str]:
        yield from super().secret_values()
        if self._app is not None:
            yield from self._app.minted()

    # --- roles -----------------------------------------------------------------------------
    def _org_role(self, org: str, login: str) -> str | Decision | None:
        path = f"/orgs/{org}/memberships/{quote(login, safe='')}"
        data = self.get(path, f"the membership read of {login} in {org}", org, absent=404)
        if data is None:
            hidden = (
                f"github answered 404 for {login}'s membership of {org}: {login} is no member, "
                "or the organization is hidden from the engine's credential"
            )
            if self.options["not_found"] == "deny":
                return Decision.deny(hidden + " (not_found: deny)")
            raise LookupFailed(hidden)
        if data.get("state") not in ("active", "pending"):
            raise LookupFailed("github's membership answer has no known state")
        if data["state"] != "active":
            return None
        role = data.get("role")
        if role == "admin":
            return "owner"
        if role == "member":
            return "member"
        if role == "billing_manager":
            return None
        raise LookupFailed(f"github's membership answer has no known role ({role!r})")

    def _members_create(self, org: str) -> bool:
        """The organization's ``members_can_create_repositories`` (owners may read it)."""
        data = self.get(f"/orgs/{org}", f"the organization read of {org}", org)
        allowed = data.get("members_can_create_repositories")
        if not isinstance(allowed, bool):
            raise LookupFailed(
                f"toolpass cannot read whether {org} lets members create repositories (the "
                "engine's credential needs to be an organization owner)"
            )
        return allowed

    def _site_admin(self, login: str, action: str) -> Decision:
        data = self.get(f"/users/{quote(login, safe='')}", f"the user read of {login}", None)
        if not isinstance(data.get("site_admin"), bool):
            raise LookupFailed("github's user answer has no site_admin flag")
        if data["site_admin"]:
            return Decision.allow(f"{login} is a site administrator; {action} needs one")
        return Decision.deny(f"{login} is no site administrator; {action} needs one")

    def _role(self, owner: str, repo: str, login: str) -> str | Decision | None:
        path = f"/repos/{owner}/{repo}/collaborators/{quote(login, safe='')}/permission"
        data = self.get(path, f"the permission read of {owner}/{repo}", owner, repo, absent=404)
        if data is None:
            hidden = (
                f"github answered 404 for {login} on {owner}/{repo}: the repository is hidden "
                "from the engine's credential, or it or the user does not exist"
            )
            if self.options["not_found"] == "deny":
                return Decision.deny(hidden + " (not_found: deny)")
            raise LookupFailed(hidden)
        role_name, base = data.get("role_name"), data.get("permission")
        if role_name in rules.RANK:
            return str(role_name)
        if base in ("admin", "write", "read"):
            return str(base)
        if base == "none":
            return None
        raise LookupFailed(f"github's permission answer has no known role ({base!r})")

    def _in_team(self, org: str, slug: Any, login: str) -> bool:
        if not isinstance(slug, str) or not slug:
            raise LookupFailed("github named a team without its slug")
        path = f"/orgs/{org}/teams/{quote(slug, safe='')}/memberships/{quote(login, safe='')}"
        data = self.get(path, f"the membership read of {login} in {org}/{slug}", org, absent=404)
        return data is not None and data.get("state") == "active"
