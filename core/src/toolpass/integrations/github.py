"""GitHub and GitHub Enterprise Server: the user's effective role on a repository.

The check reads ``GET /repos/{owner}/{repo}/collaborators/{login}/permission``: the highest
role the user holds through the repository, its teams, the organization and the
enterprise. Each action needs a minimum role (``read`` < ``triage`` < ``write`` <
``maintain`` < ``admin``); custom roles count as the base role GitHub reports for them.
On a protected branch, writing the branch (``contents.write``, ``branch.delete`` on
``ref:owner/repo@branch``) needs ``protected_branch_role`` (admin by default), since branch
rules may still stop a writer. GitHub answers 404 for a repository the engine cannot see:
unknown by default, deny when ``not_found: deny``.

The engine authenticates with a token (classic with ``repo`` and ``read:org``, or
fine-grained / App with Metadata: read; the permission endpoint needs push access) or as a
GitHub App (``app_id`` + ``private_key``; needs the ``crypto`` extra): a signed JWT buys an
installation token, refreshed before it expires; the installation is found from the
repository's owner when ``installation_id`` is not given.

Users: the ``saml`` identity mode finds the login linked to the email's SAML identity in
``saml_org`` (GraphQL ``externalIdentities(userName:)``, exact ``nameId`` match); the shared
modes (users, template, file, http, callable) work as everywhere.

Resources: ``repo:owner/name``, ``issue:owner/name#12``, ``pr:owner/name#12``,
``ref:owner/name@branch``.
"""

from __future__ import annotations

import datetime
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from toolpass.engine.config import ConnectionConfig
from toolpass.engine.errors import ConfigError, LookupFailed
from toolpass.engine.http import HTTPClient, Response
from toolpass.engine.jwt import rs256
from toolpass.engine.secrets import Secret
from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Effect,
    Integration,
    ProbeResult,
)

ROLES = ("read", "triage", "write", "maintain", "admin")
_RANK = {role: i + 1 for i, role in enumerate(ROLES)}
_RESOURCE = re.compile(
    r"(?P<kind>repo|issue|pr|ref):(?P<owner>[A-Za-z0-9][A-Za-z0-9-]{0,38})/"
    r"(?P<repo>[A-Za-z0-9._-]{1,100})(?:#(?P<number>[1-9][0-9]{0,9})|@(?P<ref>[^\s?#@]{1,255}))?"
)
_LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
_REF_WRITES = ("contents.write", "contents.delete", "branch.delete")
_MARGIN = 300.0  # refresh an installation token this many seconds before it expires


# action, the minimum role, effect, description
_TABLE: tuple[tuple[str, str, Effect, str], ...] = (
    ("repo.read", "read", "read", "Read the repository: metadata, code, issues, pull requests."),
    ("contents.read", "read", "read", "Read files, commits and branches."),
    ("issue.read", "read", "read", "Read issues and their comments."),
    ("pr.read", "read", "read", "Read pull requests, diffs and reviews."),
    ("actions.read", "read", "read", "Read workflow runs and their logs."),
    ("issue.create", "read", "write", "Open an issue."),
    ("issue.comment", "read", "write", "Comment on an issue or a pull request."),
    ("pr.review", "read", "write", "Review a pull request."),
    ("issue.update", "triage", "write", "Label, assign, close or reopen issues and pull requests."),
    ("pr.create", "write", "write", "Open a pull request from a branch of the repository."),
    ("pr.update", "write", "write", "Edit a pull request's title, body or base."),
    ("pr.merge", "write", "write", "Merge a pull request (branch rules may still refuse)."),
    ("contents.write", "write", "write", "Create or update files and push commits."),
    ("contents.delete", "write", "destructive", "Delete files."),
    ("branch.create", "write", "write", "Create a branch or a tag."),
    ("branch.delete", "write", "destructive", "Delete a branch or a tag."),
    ("release.create", "write", "write", "Publish a release."),
    ("release.delete", "write", "destructive", "Delete a release."),
    ("workflow.dispatch", "write", "write", "Run a workflow or re-run jobs."),
    ("repo.manage", "maintain", "write", "Change settings, topics, webhooks and branch rules."),
    ("collaborator.add", "admin", "write", "Grant a person or a team access to the repository."),
    ("branch.protect", "admin", "write", "Change branch protection and rulesets."),
    ("secret.manage", "admin", "write", "Read secret names; set or delete Actions secrets."),
    ("issue.delete", "admin", "destructive", "Delete an issue."),
    ("repo.archive", "admin", "destructive", "Archive the repository."),
    ("repo.delete", "admin", "destructive", "Delete the repository."),
)
ACTIONS = tuple(Action(n, d, e, f"the {role} role") for n, role, e, d in _TABLE)
NEEDS = {n: role for n, role, _, _ in _TABLE}


class GitHub(Integration):
    """GitHub.com and GitHub Enterprise Server."""

    name = "github"
    description = "GitHub and GitHub Enterprise Server: a user's effective role on a repository."
    default_url = "https://api.github.com"
    identity_modes = ("saml",)
    actions = ACTIONS
    keys = (
        ConfigKey("token", "A token: classic (repo, read:org) or fine-grained.", secret=True),
        ConfigKey(
            "app_id", "A GitHub App's id (with private_key), instead of a token.", type="any"
        ),
        ConfigKey("private_key", "The GitHub App's private key (PEM).", secret=True),
        ConfigKey(
            "installation_id", "The App installation; found per owner if not given.", type="int"
        ),
        ConfigKey("saml_org", "The organization whose SAML identities map emails (mode saml)."),
        ConfigKey(
            "not_found",
            "What a 404 on the permission read means (the repository is hidden or absent).",
            default="unknown",
            choices=("unknown", "deny"),
        ),
        ConfigKey(
            "protected_branch_role",
            "The role needed to write or delete a protected branch.",
            default="admin",
            choices=ROLES,
        ),
        ConfigKey("api_version", "The X-GitHub-Api-Version header.", default="2022-11-28"),
    )

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        app = options["app_id"] is not None or options["private_key"] is not None
        if options["token"] is not None and app:
            raise ConfigError("give either token or app_id and private_key, not both", "token")
        if not app and options["token"] is None:
            raise ConfigError("missing: token, or app_id and private_key", "token")
        if app and (options["app_id"] is None or options["private_key"] is None):
            missing = "app_id" if options["app_id"] is None else "private_key"
            raise ConfigError("a GitHub App needs app_id and private_key", missing)
        app_id = options["app_id"]
        if app and not (isinstance(app_id, int) or (isinstance(app_id, str) and app_id.strip())):
            raise ConfigError("must be the App's id or client id", "app_id")
        if options["installation_id"] is not None and not app:
            raise ConfigError("only for a GitHub App (app_id)", "installation_id")

    def __init__(self, config: ConnectionConfig, http: HTTPClient | None = None) -> None:
        super().__init__(config, http)
        if config.identity.mode == "saml" and not self.options["saml_org"]:
            raise ConfigError(
                "identity mode saml (the default) needs saml_org; or set identity.mode to "
                "users, template, file, http or callable",
                "saml_org",
            )
        base = config.url
        self.graphql_url = (
            base[: -len("/v3")] + "/graphql" if base.endswith("/api/v3") else (base + "/graphql")
        )
        self._app = _App(self) if self.options["app_id"] is not None else None

    # --- requests ----------------------------------------------------------------------
    def headers(self, owner: str | None, repo: str | None = None) -> dict[str, str]:
        """Headers for a call about ``owner``'s resources (``repo`` finds an App's installation)."""
        token = self._app.token(owner, repo) if self._app else self.secret("token")
        return {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": self.options["api_version"],
        }

    def call(self, method: str, path: str, owner: str | None, repo: str | None = None) -> Response:
        """A REST call authenticated for ``owner``'s installation (or the token)."""
        return self.request(method, path, headers=self.headers(owner, repo))

    def failure(self, answer: Response, what: str) -> LookupFailed:
        if answer.status == 403 and answer.header("x-ratelimit-remaining") == "0":
            reset = answer.header("x-ratelimit-reset") or "?"
            return LookupFailed(
                f"github rate-limited the engine (HTTP 403, resets at {reset}) to {what}"
            )
        return super().failure(answer, what)

    # --- identity ----------------------------------------------------------------------
    def lookup_user(self, email: str, mode: str) -> Sequence[str]:
        org = self.options["saml_org"]
        query = (
            "query($org: String!, $nameId: String!) { organization(login: $org) {"
            " samlIdentityProvider { externalIdentities(userName: $nameId, first: 10) {"
            " edges { node { samlIdentity { nameId } user { login } } } } } } }"
        )
        answer = self.request(
            "POST",
            self.graphql_url,
            headers=self.headers(org),
            json={"query": query, "variables": {"org": org, "nameId": email}},
        )
        what = f"the SAML identity look-up in {org}"
        if answer.status != 200:
            raise self.failure(answer, what)
        data = answer.json()
        if not isinstance(data, dict) or data.get("errors"):
            errors = data.get("errors") if isinstance(data, dict) else None
            first = (
                errors[0].get("message")
                if isinstance(errors, list) and errors and isinstance(errors[0], dict)
                else None
            )
            raise LookupFailed(f"github refused {what}: {first or 'malformed answer'}")
        try:
            provider = data["data"]["organization"]["samlIdentityProvider"]
            if provider is None:
                raise LookupFailed(f"github organization {org} has no SAML identity provider")
            edges = provider["externalIdentities"]["edges"]
            found = []
            for edge in edges:
                node = edge["node"]
                name_id = (node.get("samlIdentity") or {}).get("nameId")
                user = node.get("user")
                if isinstance(name_id, str) and name_id.lower() == email and user:
                    found.append(str(user["login"]))
            return found
        except (KeyError, TypeError):
            raise LookupFailed(f"github's answer to {what} is malformed") from None

    # --- the check ---------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        match = _RESOURCE.fullmatch(resource)
        if match is None or match["repo"] in (".", "..") or not _shape_fits(match):
            raise LookupFailed(
                f"{resource!r} is not a github resource (repo:owner/name, issue:owner/name#1, "
                "pr:owner/name#1, ref:owner/name@branch)"
            )
        owner, repo = match["owner"], match["repo"]
        login = self.user_id(user)
        if not _LOGIN.fullmatch(login):
            raise LookupFailed(f"{login!r} is not a github login")
        role = self._role(owner, repo, login)
        if isinstance(role, Decision):
            return role
        need = NEEDS[action]
        where = f"{owner}/{repo}"
        if match["ref"] and action in _REF_WRITES and self._protected(owner, repo, match["ref"]):
            need = max(need, self.options["protected_branch_role"], key=_RANK.__getitem__)
            where = f"the protected branch {match['ref']} of {owner}/{repo}"
        held = f"the {role} role" if role else "no role"
        if role and _RANK[role] >= _RANK[need]:
            return Decision.allow(f"{login} has {held} on {owner}/{repo}; {action} needs {need}")
        return Decision.deny(
            f"{login} has {held} on {owner}/{repo}; {action} on {where} needs {need}"
        )

    def _role(self, owner: str, repo: str, login: str) -> str | Decision | None:
        path = f"/repos/{owner}/{repo}/collaborators/{quote(login, safe='')}/permission"
        answer = self.call("GET", path, owner, repo)
        if answer.status == 404:
            hidden = (
                f"github answered 404 for {login} on {owner}/{repo}: the repository is hidden "
                "from the engine's credential, or it or the user does not exist"
            )
            if self.options["not_found"] == "deny":
                return Decision.deny(hidden + " (not_found: deny)")
            raise LookupFailed(hidden)
        if answer.status != 200:
            raise self.failure(answer, f"the permission read of {owner}/{repo}")
        data = answer.json()
        if not isinstance(data, dict):
            raise LookupFailed("github's permission answer is not an object")
        role_name, base = data.get("role_name"), data.get("permission")
        if role_name in _RANK:
            return str(role_name)
        if base in ("admin", "write", "read"):
            return str(base)
        if base == "none":
            return None
        raise LookupFailed(f"github's permission answer has no known role ({base!r})")

    def _protected(self, owner: str, repo: str, branch: str) -> bool:
        path = f"/repos/{owner}/{repo}/branches/{quote(branch, safe='')}"
        answer = self.call("GET", path, owner, repo)
        if answer.status == 404:
            return False  # no such branch yet: creating it is a plain write
        if answer.status != 200:
            raise self.failure(answer, f"the branch read of {owner}/{repo}@{branch}")
        data = answer.json()
        if not isinstance(data, dict) or not isinstance(data.get("protected"), bool):
            raise LookupFailed("github's branch answer has no protected flag")
        return bool(data["protected"])

    # --- the probe ---------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        if self._app is not None:
            return self._app.probe()
        answer = self.call("GET", "/rate_limit", None)
        if answer.status != 200:
            raise self.failure(answer, "the probe (GET /rate_limit)")
        core = (answer.json().get("resources") or {}).get("core") or {}
        return ProbeResult(
            True,
            f"token accepted; {core.get('remaining', '?')}/{core.get('limit', '?')} requests left",
        )


def _shape_fits(match: re.Match[str]) -> bool:
    """issue: and pr: need ``#number``, ref: needs ``@branch``, repo: neither."""
    kind = match["kind"]
    return (match["number"] is not None) == (kind in ("issue", "pr")) and (
        match["ref"] is not None
    ) == (kind == "ref")


class _App:
    """GitHub App authentication: JWT -> installation token per owner, refreshed early."""

    def __init__(self, github: GitHub) -> None:
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

    def _app_call(self, method: str, path: str) -> Response:
        headers = {
            "Authorization": f"Bearer {self.jwt()}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": self._gh.options["api_version"],
        }
        return self._gh.request(method, path, headers=headers)

    def token(self, owner: str | None, repo: str | None = None) -> str:
        """An installation token for ``owner`` (minted, or cached until near expiry)."""
        with self._lock:
            installation = self._installation(owner, repo)
            cached = self._tokens.get(installation)
            if cached and cached[1] - _MARGIN > time.time():
                return cached[0]
            answer = self._app_call("POST", f"/app/installations/{installation}/access_tokens")
            if answer.status != 201:
                raise self._gh.failure(answer, f"minting a token for installation {installation}")
            data = answer.json()
            try:
                token = str(data["token"])
                expires = datetime.datetime.fromisoformat(data["expires_at"].replace("Z", "+00:00"))
            except (KeyError, TypeError, ValueError, AttributeError):
                raise LookupFailed("github's installation token answer is malformed") from None
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
        answer = self._app_call("GET", f"{where}/installation")
        if answer.status == 404:
            raise LookupFailed(f"the GitHub App is not installed on {owner}")
        if answer.status != 200:
            raise self._gh.failure(answer, f"finding the App's installation on {owner}")
        data = answer.json()
        if not isinstance(data, dict) or not isinstance(data.get("id"), int):
            raise LookupFailed("github's installation answer has no id")
        self._installations[owner.lower()] = data["id"]
        return int(data["id"])

    def probe(self) -> ProbeResult:
        answer = self._app_call("GET", "/app")
        if answer.status != 200:
            raise self._gh.failure(answer, "the probe (GET /app)")
        app = answer.json()
        detail = f"GitHub App {app.get('slug') or app.get('name') or app.get('id')!s}"
        if self._gh.options["installation_id"] is not None:
            self.token(None)
            detail += f"; installation {self._gh.options['installation_id']} token minted"
        return ProbeResult(True, detail)


INTEGRATION = GitHub
