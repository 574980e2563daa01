#!/usr/bin/env python3
"""Generate toolpass's GitHub route table from GitHub's OpenAPI descriptions.

    npm pack @octokit/openapi                      # octokit-openapi-<version>.tgz
    python -m toolpass.integrations.github.generate --source octokit-openapi-23.0.2.tgz

``--source`` is the npm tarball of ``@octokit/openapi`` or its unpacked ``package/`` folder.
The generator reads every non-dereferenced description in ``generated/``: api.github.com
(``api.github.com.json``), GitHub Enterprise Cloud (``ghec.json``) and every GitHub
Enterprise Server release shipped (``ghes-*.json``), and writes one table for all of them
(an operation GitHub.com lacks, such as the GHES site-admin API, is still a route of a GHES
connection). Route paths are relative to the connection's URL (``https://api.github.com``,
``https://HOST/api/v3``). The output, ``routes.json`` beside this file
(``--out`` to change it), is sorted and written byte-for-byte the same for the same input.

Every operation (method + path) is one row ``[method, path, action, resource, effect,
flags]``, with these exceptions, all listed in the output's ``"operations"``:

- parameters GitHub documents as paths or refs that may contain ``/`` become rest
  parameters when they end the path (``/contents/{path+}``, ``/git/ref/{ref+}``,
  ``/compare/{basehead+}``, ...). Where one sits mid-path (``/branches/{branch}/protection``,
  ``/commits/{ref}/status``) the row stays as it is and ``GitHub.match_request`` re-places a
  request whose branch has a ``/`` in it;
- ``/repos/{owner}/{repo}/git/refs/{ref}`` (update, delete) is two rows each: under
  ``refs/heads/{branch+}`` the resource is the branch (``ref:owner/name@branch``, so the
  integration's protected-branch rule applies); any other ref (tags, notes) is the repository;
- ``GET /repos/{owner}/{repo}/contents`` is added: the root folder, which clients request
  as ``contents/`` with an empty path.

``action`` comes from the operation's category and subcategory (``x-github``), its method
and, where that is not enough, its operation id (``OP_ACTIONS``); every action is one
``toolpass.integrations.github`` declares. Where the source offers no sensible action the
strongest one of its scope is used (``repo.admin``, ``org.manage``, ...), never a weaker one.

``resource`` follows the path: ``repo:{owner}/{repo}`` (``issue:...#{issue_number}``,
``pr:...#{pull_number}``, ``ref:...@{branch}`` where the path names one), ``org:{org}``,
``user:{username}``, ``user:@me`` (the account or App whose credential sends the request:
``/user``, ``/gists``, ``/notifications``, ``/app``, ...), ``enterprise:{enterprise}``,
``team:#{team_id}``, ``site:admin`` (GHES site administration), ``site:public`` (public data
of the instance). Contents writes name their branch from the body (``{body.branch}``);
``GitHub.match_request`` fills the default branch (``@HEAD``) when the body has none.

``effect``: GET is read, DELETE destructive, any other method write, made destructive when
the action is (``repo.transfer``, ``branch.delete`` on a rename); ``READ_POSTS`` are POSTs
that change nothing (rendering Markdown).

``flags``: ``u`` for every read except ``TRUSTED`` ones (rate limits, settings, secret
names, runners: data GitHub or administrators shape, not third parties), plus
``UNTRUSTED_WRITES``; ``s`` where GitHub marks the operation ``triggersNotification`` or
it is in ``SENDS`` (publishing, inviting, dispatching, webhooks, forks, visibility);
``a`` for reads of the agent's own account and of public data, searches included.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from toolpass.integrations._generate.table import dump

ROOT = Path(__file__).resolve().parents[5]
OUT = ROOT / "core/src/toolpass/integrations/github/routes.json"
METHODS = ("get", "put", "post", "patch", "delete", "head", "options")

# Parameters that may hold a "/" (files, refs, branch and tag names), as a rest parameter
# when they end the path.
REST_PARAMS = {"path", "dir", "ref", "branch", "tag", "basehead"}

# --- actions -------------------------------------------------------------------------------
# Repository routes: reads by category (or category/subcategory), then writes.
REPO_READS = {
    "actions": "actions.read",
    "agent-tasks": "actions.read",
    "checks": "actions.read",
    "issues": "issue.read",
    "reactions": "issue.read",
    "pulls": "pr.read",
    "pull-request-stacks": "pr.read",
    "git": "contents.read",
    "commits": "contents.read",
    "releases": "contents.read",
    "branches/branches": "contents.read",
    "repos/contents": "contents.read",
    "dependency-graph": "contents.read",
    "code-scanning": "security.read",
    "code-quality": "security.read",
    "dependabot": "security.read",
    "security-advisories": "security.read",
    "secret-scanning": "secret.manage",  # alerts carry the secrets themselves
    "actions/secrets": "secret.manage",
    "actions/variables": "secret.manage",
    "agents": "secret.manage",
    "codespaces/repository-secrets": "secret.manage",
    "dependabot/secrets": "secret.manage",
}
REPO_WRITES = {
    "actions": "workflow.dispatch",
    "actions/hosted-runners": "repo.admin",
    "actions/self-hosted-runners": "repo.admin",
    "actions/self-hosted-runner-groups": "repo.admin",
    "actions/oidc": "repo.admin",
    "actions/permissions": "repo.admin",
    "actions/secrets": "secret.manage",
    "actions/variables": "secret.manage",
    "activity": "account.manage",  # watching, starring, marking notifications read
    "agents": "secret.manage",
    "agent-tasks": "workflow.dispatch",
    "branches/branch-protection": "branch.protect",
    "branches/branches": "contents.write",
    "checks": "checks.write",
    "code-scanning": "security.manage",
    "code-quality": "security.manage",
    "code-security": "repo.admin",
    "codespaces": "repo.fork",
    "codespaces/repository-secrets": "secret.manage",
    "commits/comments": "issue.manage",
    "commits/statuses": "checks.write",
    "dependabot": "security.manage",
    "dependabot/secrets": "secret.manage",
    "dependency-graph": "security.manage",
    "deploy-keys": "repo.admin",
    "deployments": "repo.admin",
    "deployments/deployments": "deployment.create",
    "deployments/statuses": "deployment.create",
    "git": "contents.write",
    "interactions": "repo.admin",
    "issues": "issue.update",
    "issues/labels": "issue.manage",
    "issues/milestones": "issue.manage",
    "issues/comments": "issue.manage",
    "migrations": "repo.admin",
    "pages": "repo.admin",
    "pulls": "pr.update",
    "pull-request-stacks": "pr.update",
    "reactions": "issue.comment",
    "releases": "release.create",
    "repos": "repo.admin",
    "repos/attestations": "checks.write",
    "repos/bypass-requests": "branch.protect",
    "repos/rules": "branch.protect",
    "repos/tags": "branch.protect",
    "repos/webhooks": "hook.manage",
    "secret-scanning": "secret.manage",
    "security-advisories": "security.manage",
}
# Organization routes: reads are org.read unless listed, writes org.manage unless listed.
ORG_READS = {
    "billing": "org.audit",
    "orgs/api-insights": "org.audit",
    "orgs/personal-access-tokens": "org.audit",
    "orgs/security-managers": "org.audit",
    "copilot": "org.audit",
    "code-scanning": "security.read",
    "dependabot/alerts": "security.read",
    "secret-scanning": "secret.manage",
    "actions/secrets": "secret.manage",
    "actions/variables": "secret.manage",
    "agents": "secret.manage",
    "codespaces/organization-secrets": "secret.manage",
    "dependabot/secrets": "secret.manage",
    "private-registries": "secret.manage",
    "orgs/webhooks": "hook.manage",
}
ORG_WRITES = {
    "actions/secrets": "secret.manage",
    "actions/variables": "secret.manage",
    "agents": "secret.manage",
    "codespaces/organization-secrets": "secret.manage",
    "dependabot/secrets": "secret.manage",
    "private-registries": "secret.manage",
    "secret-scanning": "secret.manage",
    "orgs/webhooks": "hook.manage",
    "code-scanning": "security.manage",
    "dependabot/alerts": "security.manage",
}
# Operation ids whose action the category does not give.
OP_ACTIONS = {
    # repositories
    "repos/get": "repo.read",
    "repos/update": "repo.admin",  # visibility, name, default branch, archiving
    "repos/delete": "repo.delete",
    "repos/transfer": "repo.transfer",
    "repos/replace-all-topics": "repo.manage",
    "repos/create-dispatch-event": "workflow.dispatch",
    "repos/create-fork": "repo.fork",
    "repos/create-using-template": "repo.fork",
    "repos/create-in-org": "repo.create",
    "repos/create-for-authenticated-user": "repo.create",
    "repos/create-or-update-file-contents": "contents.write",
    "repos/delete-file": "contents.delete",
    "repos/merge": "contents.write",
    "repos/merge-upstream": "contents.write",
    "repos/rename-branch": "branch.delete",
    "repos/create-release": "release.create",
    "repos/update-release": "release.create",
    "repos/generate-release-notes": "release.create",
    "repos/upload-release-asset": "release.create",
    "repos/update-release-asset": "release.create",
    "repos/delete-release": "release.delete",
    "repos/delete-release-asset": "release.delete",
    "repos/create-commit-comment": "issue.comment",
    "repos/update-commit-comment": "issue.manage",
    "repos/delete-commit-comment": "issue.manage",
    "repos/create-commit-status": "checks.write",
    "repos/create-deployment": "deployment.create",
    "repos/delete-deployment": "deployment.create",
    "repos/create-deployment-status": "deployment.create",
    "repos/add-collaborator": "collaborator.add",
    "repos/update-invitation": "collaborator.add",
    "repos/remove-collaborator": "collaborator.remove",
    "repos/delete-invitation": "collaborator.remove",
    "repos/create-pages-deployment": "pages.publish",
    "repos/request-pages-build": "pages.publish",
    "repos/cancel-pages-deployment": "pages.publish",
    "repos/create-attestation": "checks.write",
    "repos/create-autolink": "repo.admin",
    "repos/add-status-check-contexts": "branch.protect",
    # git data
    "git/create-ref": "branch.create",
    "git/update-ref": "contents.write",
    "git/delete-ref": "branch.delete",
    # issues
    "issues/create": "issue.create",
    "issues/create-comment": "issue.comment",
    "issues/update": "issue.update",
    "issues/lock": "issue.manage",
    "issues/unlock": "issue.manage",
    "issues/add-labels": "issue.update",
    "issues/set-labels": "issue.update",
    "issues/remove-label": "issue.update",
    "issues/remove-all-labels": "issue.update",
    # pull requests
    "pulls/create": "pr.create",
    "pulls/update": "pr.update",
    "pulls/merge": "pr.merge",
    "pulls/merge-async": "pr.merge",
    "pulls/create-review": "pr.review",
    "pulls/update-review": "pr.review",
    "pulls/submit-review": "pr.review",
    "pulls/delete-pending-review": "pr.review",
    "pulls/create-review-comment": "pr.review",
    "pulls/create-reply-for-review-comment": "pr.review",
    "pull-request-stacks/create": "pr.create",
    # Actions
    "actions/create-workflow-dispatch": "workflow.dispatch",
    "actions/create-registration-token-for-repo": "repo.admin",
    "actions/create-remove-token-for-repo": "repo.admin",
    "actions/generate-runner-jitconfig-for-repo": "repo.admin",
    "actions/set-actions-cache-retention-limit-for-repository": "repo.admin",
    "actions/set-actions-cache-storage-limit-for-repository": "repo.admin",
    "security-advisories/create-private-vulnerability-report": "security.manage",
    "code-scanning/commit-autofix": "contents.write",  # commits to a branch
    # organizations
    "orgs/delete": "org.delete",
    "orgs/create-invitation": "collaborator.add",
    "orgs/set-membership-for-user": "collaborator.add",
    "orgs/cancel-invitation": "collaborator.remove",
    "orgs/remove-member": "collaborator.remove",
    "orgs/remove-membership-for-user": "collaborator.remove",
    "orgs/remove-outside-collaborator": "collaborator.remove",
    "orgs/get-audit-log": "org.audit",
    "teams/add-or-update-membership-for-user-in-org": "collaborator.add",
    "teams/add-or-update-repo-permissions-in-org": "collaborator.add",
    "teams/remove-membership-for-user-in-org": "collaborator.remove",
    "teams/remove-repo-in-org": "collaborator.remove",
    "teams/add-member-legacy": "collaborator.add",
    "teams/add-or-update-membership-for-user-legacy": "collaborator.add",
    "teams/add-or-update-repo-permissions-legacy": "collaborator.add",
    "teams/remove-member-legacy": "collaborator.remove",
    "teams/remove-membership-for-user-legacy": "collaborator.remove",
    "teams/remove-repo-legacy": "collaborator.remove",
    "scim/provision-and-invite-user": "collaborator.add",
    "scim/delete-user-from-org": "collaborator.remove",
    # the sender's own account
    "gists/create": "gist.create",
    "gists/update": "gist.create",
    "gists/fork": "gist.create",
    "gists/create-comment": "gist.create",
    "gists/update-comment": "gist.create",
}

# --- effects and flags ---------------------------------------------------------------------
READ_POSTS = {"markdown/render", "markdown/render-raw"}
# Reads whose answers GitHub or administrators shape (category or category/subcategory).
TRUSTED = {
    "rate-limit",
    "meta",
    "emojis",
    "gitignore",
    "licenses",
    "codes-of-conduct",
    "billing",
    "actions/cache",
    "actions/permissions",
    "actions/secrets",
    "actions/oidc",
    "actions/hosted-runners",
    "actions/self-hosted-runners",
    "actions/self-hosted-runner-groups",
    "agents/secrets",
    "codespaces/organization-secrets",
    "codespaces/repository-secrets",
    "codespaces/secrets",
    "codespaces/machines",
    "dependabot/secrets",
    "branches/branch-protection",
    "interactions",
    "orgs/custom-roles",
    "orgs/organization-roles",
}
UNTRUSTED_WRITES = {"repos/generate-release-notes", "markdown/render", "markdown/render-raw"}
SENDS = {
    "repos/update",  # can make a private repository public
    "repos/transfer",
    "repos/create-fork",
    "repos/create-using-template",
    "repos/create-dispatch-event",
    "repos/update-release",
    "repos/upload-release-asset",
    "repos/create-deployment",
    "repos/create-pages-deployment",
    "repos/request-pages-build",
    "repos/create-deploy-key",
    "repos/update-invitation",
    "issues/update",
    "pulls/update",
    "pulls/submit-review",
    "pull-request-stacks/create",
    "actions/create-workflow-dispatch",
    "actions/re-run-workflow",
    "actions/re-run-workflow-failed-jobs",
    "actions/re-run-job-for-workflow-run",
    "agent-tasks/create-task-in-repo",
    "security-advisories/create-repository-advisory-cve-request",
    "security-advisories/create-private-vulnerability-report",
    "gists/create",
    "gists/update",
    "gists/fork",
    "gists/create-comment",
    "gists/update-comment",
    "orgs/set-membership-for-user",
    "teams/add-or-update-membership-for-user-in-org",
    "teams/add-or-update-membership-for-user-legacy",
    "teams/add-member-legacy",
    "scim/provision-and-invite-user",
    "users/create-public-ssh-key-for-authenticated-user",
    "users/create-gpg-key-for-authenticated-user",
    "migrations/start-for-org",
    "migrations/start-for-authenticated-user",
    "codespaces/publish-for-authenticated-user",
}
# Actions whose every write sends data to people or systems outside the request.
SENDS_ACTIONS = {"hook.manage", "collaborator.add", "issue.create", "issue.comment"}
PUBLIC = {
    "/",
    "/advisories",
    "/apps",
    "/codes_of_conduct",
    "/emojis",
    "/events",
    "/feeds",
    "/gitignore",
    "/licenses",
    "/markdown",
    "/meta",
    "/octocat",
    "/organizations",
    "/repositories",
    "/search",
    "/users",
    "/versions",
    "/zen",
}
ME = {
    "/user",
    "/gists",
    "/notifications",
    "/issues",
    "/app",
    "/app-manifests",
    "/applications",
    "/installation",
    "/authorizations",
    "/credentials",
    "/marketplace_listing",
    "/rate_limit",
    "/agents",
    "/classrooms",
    "/assignments",
}
#: Reads of ``user:@me`` that answer with whatever the sending credential sees: other
#: accounts' repositories, issues, notifications, organizations, teams, installations,
#: migration archives, Classroom grades, webhook payloads (#19). They are ``account.list``,
#: checked (unknown unless the agent sends each user's own token), never agent requests.
#: Paths below a prefix are included; the agent's own profile, keys, settings, gists and
#: packages, and its App's own records, stay agent requests.
ACROSS = (
    "/issues",
    "/user/issues",
    "/user/repos",
    "/user/orgs",
    "/user/memberships/orgs",
    "/user/teams",
    "/user/starred",
    "/user/subscriptions",
    "/user/installations",
    "/user/repository_invitations",
    "/user/migrations",
    "/user/codespaces",
    "/notifications",
    "/installation/repositories",
    "/agents/tasks",
    "/assignments",
    "/classrooms",
    "/app/hook/deliveries",
)
#: Below ``ACROSS``: the agent's own codespace secrets (names only) and machine types.
OWN = re.compile(
    r"/user/codespaces/(secrets(/public-key|/\{secret_name\})?|\{codespace_name\}/machines)"
)
#: ``ACROSS`` reads bounded to one organization: checked on it.
BOUNDED = {"/user/memberships/orgs/{org}": ("org.read", "org:{org}")}
SITE_ADMIN = ("/admin/", "/manage/", "/enterprise/", "/setup/", "/scim/v2/Users", "/scim/v2/Groups")


# --- reading the source --------------------------------------------------------------------
def read_source(source: Path) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """(version, [(description file name, description)]) from the tarball or folder."""
    if source.is_file():
        tmp = Path(tempfile.mkdtemp())
        with tarfile.open(source) as tar:
            tar.extractall(tmp, filter="data")
        source = tmp / "package"
    if (source / "package").is_dir():
        source = source / "package"
    meta = json.loads((source / "package.json").read_text())
    if meta.get("name") != "@octokit/openapi":
        sys.exit(f"{source} is not @octokit/openapi ({meta.get('name')!r})")
    found = sorted(
        p for p in (source / "generated").glob("*.json") if not p.name.endswith(".deref.json")
    )
    return str(meta["version"]), [(p.name, json.loads(p.read_text())) for p in found]


def operations(descriptions: list[tuple[str, dict[str, Any]]]) -> dict[tuple[str, str], Any]:
    """(METHOD, path) -> operation, first seen in api.github.com, then ghec, then ghes."""
    order = {"api.github.com.json": 0, "ghec.json": 1}
    ops: dict[tuple[str, str], Any] = {}
    for _name, doc in sorted(descriptions, key=lambda d: (order.get(d[0], 2), d[0])):
        for path, item in doc["paths"].items():
            for method, op in item.items():
                if method in METHODS:
                    ops.setdefault((method.upper(), path), op)
    return ops


# --- mapping one operation -----------------------------------------------------------------
def scope_of(path: str) -> tuple[str, str]:
    """(scope, resource template) of a path."""
    m = re.match(
        r"/(?:repos|networks|agents/repos|user/starred|user/subscriptions)/\{(owner|template_owner)\}/\{(repo|template_repo)\}",
        path,
    )
    if m:
        base = f"{{{m.group(1)}}}/{{{m.group(2)}}}"
        if "{pull_number}" in path:
            return "repo", f"pr:{base}#{{pull_number}}"
        if "{issue_number}" in path:
            return "repo", f"issue:{base}#{{issue_number}}"
        if re.search(r"/branches/\{branch\}", path):
            return "repo", f"ref:{base}@{{branch}}"
        return "repo", f"repo:{base}"
    if re.match(r"/(orgs|organizations)/\{org\}|/scim/v2/organizations/\{org\}", path):
        return "org", "org:{org}"
    if path.startswith("/organizations/{organization_id}"):
        return "org", "org:#{organization_id}"
    if re.match(r"/(enterprises|scim/v2/enterprises)/\{enterprise\}", path):
        return "enterprise", "enterprise:{enterprise}"
    if path.startswith("/enterprise-installation/{enterprise_or_org}"):
        return "enterprise", "enterprise:{enterprise_or_org}"
    if path.startswith(SITE_ADMIN) or re.fullmatch(
        r"/users/\{username\}/(site_admin|suspended)", path
    ):
        return "site", "site:admin"
    if path.startswith("/teams/{team_id}"):
        return "team", "team:#{team_id}"
    if path.startswith("/users/{user_id}"):
        return "user", "user:#{user_id}"
    if path.startswith("/users/{username}"):
        return "user", "user:{username}"
    if path.startswith("/user/{account_id}") or path == "/gists/public":
        return "public", "site:public"
    if re.match(r"/gists/\{gist_id\}", path):
        # A gist by id: public or shareable by link to read; only its owner writes it.
        return "gist", "site:public"
    top = "/" + path.split("/")[1] if path != "/" else "/"
    if top in ME:
        return "me", "user:@me"
    if top in PUBLIC:
        return "public", "site:public"
    raise SystemExit(f"no scope for {path}: add it to PUBLIC, ME or scope_of()")


def lookup(table: dict[str, str], category: str, subcategory: str) -> str | None:
    return table.get(f"{category}/{subcategory}") or table.get(category)


def action_for(op: dict[str, Any], method: str, path: str, scope: str) -> str:
    op_id = op["operationId"]
    x = op.get("x-github", {})
    cat, sub = x.get("category", ""), x.get("subcategory") or ""
    read = method == "GET" or op_id in READ_POSTS
    if op_id in OP_ACTIONS:
        return OP_ACTIONS[op_id]
    if scope == "repo":
        if read:
            return lookup(REPO_READS, cat, sub) or "repo.read"
        if cat == "issues" and sub == "labels" and "{issue_number}" in path:
            return "issue.update"
        if cat == "collaborators":
            return "collaborator.remove" if method == "DELETE" else "collaborator.add"
        return lookup(REPO_WRITES, cat, sub) or "repo.admin"
    if scope == "org":
        if read:
            return lookup(ORG_READS, cat, sub) or "org.read"
        return lookup(ORG_WRITES, cat, sub) or "org.manage"
    if scope == "team":
        return "org.read" if read else "org.manage"
    if scope == "enterprise":
        return "enterprise.read" if read else "enterprise.manage"
    if scope == "site":
        return "site.admin"
    if scope == "user":
        return "user.read" if read else "account.manage"
    if scope == "me":
        return "user.read" if read else "account.manage"
    if scope == "gist":
        return "site.read" if read else "account.manage"
    if scope == "public":
        return (
            ("user.read" if path.startswith(("/users", "/user/")) else "site.read")
            if read
            else "account.manage"
        )
    raise SystemExit(f"no action for {method} {path}")


def effect_for(op_id: str, method: str, action: str, declared: dict[str, str]) -> str:
    if method == "GET" or op_id in READ_POSTS:
        return "read"
    if method == "DELETE" or declared[action] == "destructive":
        return "destructive"
    return "write"


def flags_for(op: dict[str, Any], method: str, action: str, scope: str, effect: str) -> str:
    op_id = op["operationId"]
    x = op.get("x-github", {})
    cat, sub = x.get("category", ""), x.get("subcategory") or ""
    flags = ""
    if effect == "read":
        if not (cat in TRUSTED or f"{cat}/{sub}" in TRUSTED) or op_id in UNTRUSTED_WRITES:
            flags += "u"
    elif op_id in UNTRUSTED_WRITES:
        flags += "u"
    if effect != "read" and (
        x.get("triggersNotification")
        or op_id in SENDS
        or (action in SENDS_ACTIONS and method != "DELETE")
    ):
        flags += "s"
    if effect == "read" and scope in ("me", "public"):
        flags += "a"
    return flags


def template(path: str) -> str:
    """The path in routes.py's syntax: a ref-like parameter ending the path takes the rest."""
    return re.sub(
        r"\{(" + "|".join(sorted(REST_PARAMS)) + r")\}$", lambda m: "{" + m.group(1) + "+}", path
    )


def across(path: str) -> bool:
    """Whether a read of the agent's account answers with what its credential sees."""
    listed = any(path == p or path.startswith(p + "/") for p in ACROSS)
    return listed and not OWN.fullmatch(path)


def rows_for(
    method: str, path: str, op: dict[str, Any], declared: dict[str, str]
) -> list[list[str]]:
    scope, resource = scope_of(path)
    action = action_for(op, method, path, scope)
    if method == "GET" and scope == "me" and across(path):
        scope = "across"
        action, resource = BOUNDED.get(path, ("account.list", "user:@me"))
    if action not in declared:
        raise SystemExit(f"{method} {path}: {action} is not declared by the github integration")
    effect = effect_for(op["operationId"], method, action, declared)
    flags = flags_for(op, method, action, scope, effect)
    if scope == "gist" and effect != "read":
        resource = "user:@me"  # only the gist's owner changes it: the sender's account
    if op["operationId"] in ("repos/create-or-update-file-contents", "repos/delete-file"):
        resource = "ref:{owner}/{repo}@{body.branch}"
    elif op["operationId"] == "repos/merge":
        resource = "ref:{owner}/{repo}@{body.base}"
    elif op["operationId"] == "repos/merge-upstream":
        resource = "ref:{owner}/{repo}@{body.branch}"
    if path == "/repos/{owner}/{repo}/git/refs/{ref}":
        heads = "/repos/{owner}/{repo}/git/refs/heads/{branch+}"
        return [
            [method, heads, action, "ref:{owner}/{repo}@{branch}", effect, flags],
            [method, template(path), action, resource, effect, flags],
        ]
    rows = [[method, template(path), action, resource, effect, flags]]
    if (method, path) == ("GET", "/repos/{owner}/{repo}/contents/{path}"):
        rows.append([method, "/repos/{owner}/{repo}/contents", action, resource, effect, flags])
    return rows


def declared_actions() -> dict[str, str]:
    """The github integration's actions and their effects (read from its source)."""
    sys.path.insert(0, str(ROOT / "core/src"))
    from toolpass.integrations.github import ACTIONS

    return {a.name: a.effect for a in ACTIONS}


def build(source: Path) -> dict[str, Any]:
    version, descriptions = read_source(source)
    ops = operations(descriptions)
    declared = declared_actions()
    rows: list[list[str]] = []
    for (method, path), op in ops.items():
        rows.extend(rows_for(method, path, op, declared))
    ids = {op["operationId"] for op in ops.values()}
    for name, table in (("OP_ACTIONS", OP_ACTIONS), ("SENDS", SENDS), ("READ_POSTS", READ_POSTS)):
        for op_id in sorted(set(table) - ids):
            print(f"warning: {name} names {op_id}, which the source lacks", file=sys.stderr)  # noqa: T201
    rows.sort(key=lambda r: (r[1], r[0]))
    seen = {(r[0], r[1]) for r in rows}
    if len(seen) != len(rows):
        sys.exit("two rows share a method and path")
    files = ", ".join(f"generated/{name}" for name, _ in descriptions)
    return {
        "source": f"npm @octokit/openapi {version} ({files})",
        "generator": "core/src/toolpass/integrations/github/generate.py",
        "operations": {
            "source": len(ops),
            "rows": len(rows),
            "excluded": 0,
            "split": {
                "/repos/{owner}/{repo}/git/refs/{ref}": (
                    "refs/heads/{branch+} (the branch) and {ref+} (any other ref)"
                )
            },
            "added": {"GET /repos/{owner}/{repo}/contents": "the root folder (empty path)"},
        },
        "routes": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--source", type=Path, required=True, help="the @octokit/openapi npm tarball or folder"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    ns = parser.parse_args()
    data = build(ns.source)
    ns.out.write_text(dump(data))
    counts = data["operations"]
    print(f"{counts['rows']} routes from {counts['source']} operations -> {ns.out}")  # noqa: T201


if __name__ == "__main__":
    main()
