"""GitHub App authentication for the github integration: a JWT signed with the App's
private key buys an installation token per owner (or the configured installation), kept
until shortly before it expires."""

from __future__ import annotations

import datetime
import threading
import time

from toolpass.integrations.base import Integration, ProbeResult
from toolpass.wire.errors import LookupFailed
from toolpass.wire.jwt import rs256
from toolpass.wire.secrets import Secret

__all__ = ["App"]

_MARGIN = 300.0  # refresh an installation token this many seconds before it expires


class App:
    """GitHub App authentication: JWT -> installation token per owner, refreshed early."""

    def __init__(self, github: Integration) -> None:
        self._gh = github
        self._lock = threading.Lock()
        self._installations: dict[str, int] = {}
        self._tokens: dict[int, tuple[str, float]] = {}

    def jwt(self) -> str:
        key = self._gh.options["private_key"]
        assert isinstance(key, Secret)
        now = int(time.time())
        app_id = self._gh.options["app_id"]
        return rs256({"iat": now - 60, "exp": now + 540, "iss": str(app_id)}, key.get())

    def _headers(self) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.jwt()}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": self._gh.options["api_version"],
        }

    def minted(self) -> list[str]:
        """The installation tokens held now (never to be read in a reason)."""
        return [token for token, _ in list(self._tokens.values())]

    def token(self, owner: str | None, repo: str | None = None) -> str:
        """An installation token for ``owner`` (minted, or cached until near expiry)."""
        with self._lock:
            installation = self._installation(owner, repo)
            cached = self._tokens.get(installation)
            if cached and cached[1] - _MARGIN > time.time():
                return cached[0]
            data = self._gh.fetch_json(
                "POST",
                f"/app/installations/{installation}/access_tokens",
                what=f"minting a token for installation {installation}",
                ok=(201,),
                headers=self._headers(),
            )
            token = data.get("token")
            try:
                expires = datetime.datetime.fromisoformat(data["expires_at"].replace("Z", "+00:00"))
            except (KeyError, TypeError, ValueError, AttributeError):
                expires = None
            if not isinstance(token, str) or not token or expires is None:
                raise LookupFailed("github's installation token answer is malformed")
            self._tokens[installation] = (token, expires.timestamp())
            return token

    def _installation(self, owner: str | None, repo: str | None) -> int:
        configured = self._gh.options["installation_id"]
        if configured is not None:
            return int(configured)
        if owner is None:
            raise LookupFailed(
                "set installation_id: there is no owner to find the installation from"
            )
        found = self._installations.get(owner.lower())
        if found is not None:
            return found
        where = f"/repos/{owner}/{repo}" if repo else f"/orgs/{owner}"
        what = f"finding the App's installation on {owner}"
        data = self._gh.get_json(
            f"{where}/installation", what=what, absent=(404,), headers=self._headers()
        )
        if data is None:
            raise LookupFailed(f"the GitHub App is not installed on {owner}")
        if not isinstance(data.get("id"), int):
            raise LookupFailed("github's installation answer has no id")
        self._installations[owner.lower()] = data["id"]
        return int(data["id"])

    def probe(self) -> ProbeResult:
        app = self._gh.get_json("/app", what="the probe (GET /app)", headers=self._headers())
        detail = f"GitHub App {app.get('slug') or app.get('name') or app.get('id')!s}"
        if self._gh.options["installation_id"] is not None:
            self.token(None)
            detail += f"; installation {self._gh.options['installation_id']} token minted"
        return ProbeResult(True, detail)
