"""Generate Bitbucket Cloud's route table from the npm package ``bitbucket`` (bitbucket.js),
the REST client generated from Bitbucket's published OpenAPI (swagger) description.

Source: ``lib/index.js`` of the package holds one entry per REST operation, each with its
``method`` and ``url`` (relative to ``https://api.bitbucket.org/2.0``). Fetch it and run::

    cd /tmp && npm pack bitbucket@2.12.0 && mkdir -p bitbucket && \\
        tar xzf bitbucket-2.12.0.tgz -C bitbucket
    python -m toolpass.integrations.bitbucket.generate --source /tmp/bitbucket/package

Every operation becomes one row; paths are relative to the connection's URL
(``https://api.bitbucket.org``), so they start with ``/2.0``. A URL's query template
(``{?async}``) is dropped.

Actions are the integration's (``bitbucket/actions.json``): ``read``, ``write`` and ``admin``
on ``repo:{workspace}/{repo_slug}`` (Bitbucket's effective repository permission), ``member``
and ``owner`` on ``workspace:{workspace}``, and ``access`` on ``site`` for what belongs to no
workspace (the account's own data, public listings). Curated rules (``RULES``) follow the
scopes Atlassian documents (support.atlassian.com "API token permissions", "Repository Access
Token permissions"): repository settings (permissions, webhooks, branch restrictions, deploy
keys, pipeline variables and keys, deployment variables) need ``admin``; issues, comments,
approvals and forks need ``read`` (the ``repository`` scope covers "the issue tracker ...
created issues, comment, vote"); other writes need ``write``; the repository's deletion
``admin``. Workspace settings need ``owner``. Flags follow permission-apis.md section 7.4.

The output is sorted and deterministic: ``routes.json`` beside this file.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/bitbucket/routes.json"
METHOD = re.compile(r'method:"(\w+)"')
URL = re.compile(r'url:"([^"]*)"')
QUERY_TEMPLATE = re.compile(r"\{\?[^}]*\}")

REPO = "repo:{workspace}/{repo_slug}"
WS = "workspace:{workspace}"
TEAM = "workspace:{username}"
SITE = "site"
R = r"^/repositories/\{workspace\}/\{repo_slug\}"
W = r"^/workspaces/\{workspace\}"
ANY, READ, WRITES = "GET|POST|PUT|DELETE", "GET", "POST|PUT|DELETE"
SETTINGS = (
    r"/(permissions-config|hooks|branch-restrictions|deploy-keys|pipelines_config/variables|"
    r"pipelines_config/ssh|deployments_config|properties|issues/(import|export))"
)

# (methods, path regex after /2.0, action, resource, flags). First match wins.
RULES: list[tuple[str, str, str, str, str]] = [
    # the repository itself
    ("DELETE", R + r"$", "admin", REPO, ""),
    ("PUT", R + r"$", "admin", REPO, ""),
    ("POST", R + r"$", "member", WS, ""),
    ("POST", R + r"/forks$", "read", REPO, "s"),
    # settings: admin, whatever the method
    ("POST|PUT", R + r"/hooks", "admin", REPO, "s"),
    (ANY, R + SETTINGS, "admin", REPO, ""),
    (ANY, R + r"/pullrequests/\{pullrequest_id\}/properties/", "admin", REPO, ""),
    (ANY, R + r"/commit/\{commit\}/properties/", "admin", REPO, ""),
    (WRITES, R + r"/(default-reviewers|branching-model)", "admin", REPO, ""),
    (WRITES, R + r"/pipelines_config$", "admin", REPO, ""),
    (WRITES, R + r"/environments", "admin", REPO, ""),
    # settings readable by readers
    (
        READ,
        R + r"/(default-reviewers|effective-default-reviewers|branching-model|"
        r"effective-branching-model|environments|pipelines_config|pipelines-config|"
        r"components|milestones|versions|watchers)",
        "read",
        REPO,
        "",
    ),
    # what any reader may do: issues, comments, approvals, votes
    ("POST|PUT", R + r"/issues$|" + R + r"/issues/\{issue_id\}/comments", "read", REPO, "s"),
    ("DELETE", R + r"/issues/\{issue_id\}/comments/", "read", REPO, ""),
    (WRITES, R + r"/issues/\{issue_id\}/(vote|watch)$", "read", REPO, ""),
    (
        "POST|PUT",
        R + r"/(pullrequests/\{pull_request_id\}|commit/\{commit\})/comments",
        "read",
        REPO,
        "s",
    ),
    (
        "DELETE",
        R + r"/(pullrequests/\{pull_request_id\}|commit/\{commit\})/comments/",
        "read",
        REPO,
        "",
    ),
    (
        WRITES,
        R + r"/(pullrequests/\{pull_request_id\}|commit/\{commit\})/"
        r"(approve|request-changes)$",
        "read",
        REPO,
        "",
    ),
    (WRITES, R + r"/pullrequests/\{pull_request_id\}/tasks", "read", REPO, ""),
    # writes that tell people or start code
    ("POST", R + r"/pullrequests$", "write", REPO, "s"),
    ("PUT", R + r"/pullrequests/\{pull_request_id\}$", "write", REPO, "s"),
    ("PUT|POST", R + r"/issues/\{issue_id\}(/changes)?$", "write", REPO, "s"),
    ("POST", R + r"/pipelines$", "write", REPO, "s"),
    (WRITES, R, "write", REPO, ""),
    (READ, R + r"/refs", "read", REPO, "u"),
    (READ, R, "read", REPO, "u"),
    (READ, r"^/repositories/\{workspace\}$", "member", WS, ""),
    # workspaces
    (READ, W + r"$|" + W + r"/members", "member", WS, ""),
    (READ, W + r"/search/", "member", WS, "u"),
    (ANY, W + r"/hooks", "owner", WS, ""),
    (
        ANY,
        W + r"/(permissions|pipelines-config|projects/\{project_key\}/"
        r"(permissions-config|deploy-keys))",
        "owner",
        WS,
        "",
    ),
    (READ, W + r"/projects", "member", WS, ""),
    (WRITES, W + r"/projects", "owner", WS, ""),
    (ANY, r"^/teams/\{username\}/pipelines_config", "owner", TEAM, ""),
    (READ, r"^/teams/\{username\}/search/", "member", TEAM, "u"),
    # snippets in a workspace
    (READ, r"^/snippets/\{workspace\}", "member", WS, "u"),
    ("POST|PUT", r"^/snippets/\{workspace\}($|/\{encoded_id\}/comments)", "member", WS, "s"),
    (WRITES, r"^/snippets/\{workspace\}", "member", WS, ""),
    # no workspace: lists Bitbucket answers with what the sending account sees (#19)
    (
        READ,
        r"^/(repositories$|snippets$|pullrequests/|users/\{selected_user\}/search/|"
        r"workspaces$|user/permissions/)",
        "sender_lists",
        SITE,
        "u",
    ),
    # the account's own data, users, public listings
    (ANY, r"^/(user|users/|hook_events|snippets$)", "access", SITE, "a"),
]


def operations(source: Path) -> list[tuple[str, str]]:
    """(method, path) of every operation in the package's ``lib/index.js``."""
    text = (source / "lib" / "index.js").read_text()
    ops: set[tuple[str, str]] = set()
    for m in METHOD.finditer(text):
        end, depth, quoted = m.end(), 0, False
        while end < len(text):  # the end of the operation's object
            c = text[end]
            if quoted:
                if c == "\\":
                    end += 1
                elif c == '"':
                    quoted = False
            elif c == '"':
                quoted = True
            elif c == "{":
                depth += 1
            elif c == "}":
                if depth == 0:
                    break
                depth -= 1
            end += 1
        urls = URL.findall(text[m.end() : end])
        if urls:  # the client's own default request (no url) is not an operation
            ops.add((m.group(1).upper(), QUERY_TEMPLATE.sub("", urls[-1])))
    return sorted(ops)


def classify(method: str, path: str) -> list[str]:
    rule = next((r for r in RULES if method in r[0].split("|") and re.search(r[1], path)), None)
    if rule is None:
        raise SystemExit(f"{method} {path}: no rule")
    _, _, action, res, flags = rule
    effect = "read" if method == "GET" else "destructive" if method == "DELETE" else "write"
    return [method, "/2.0" + path, action, res, effect, flags]


def build(source: Path) -> tuple[list[list[str]], int]:
    """The table's rows, sorted by path and method, and the number of operations read."""
    ops = operations(source)
    return sorted((classify(m, p) for m, p in ops), key=lambda r: (r[1], r[0])), len(ops)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="the unpacked package")
    parser.add_argument("--out", type=Path, default=OUT)
    ns = parser.parse_args()
    rows, count = build(ns.source)
    version = json.loads((ns.source / "package.json").read_text())["version"]
    data = {
        "source": f"npm bitbucket {version} (lib/index.js, generated from Bitbucket Cloud's "
        f"OpenAPI description: {count} operations)",
        "generator": "core/src/toolpass/integrations/bitbucket/generate.py",
        "routes": rows,
    }
    ns.out.write_text(dump(data))
    print(f"{len(rows)} routes from {count} operations -> {ns.out}")  # noqa: T201


if __name__ == "__main__":
    main()
