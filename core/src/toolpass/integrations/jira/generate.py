"""Generate Jira Cloud's route table from jira.js, the REST client generated from Atlassian's
Jira Cloud platform REST API description.

Source: the npm package ``jira.js`` (``src/version3/*.ts`` and ``src/version2/*.ts``): one
method per REST operation, each with its ``url`` and ``method`` and Atlassian's own
"Permissions required" text in its doc comment. Fetch it and run::

    cd /tmp && npm pack jira.js@5.4.0 && mkdir -p jira.js && tar xzf jira.js-5.4.0.tgz -C jira.js
    python -m toolpass.integrations.jira.generate --source /tmp/jira.js/package

Version 5.4.0 is used: its ``src/version3`` and ``src/version2`` list every operation of both
versions, while 6.2.0 (``src/cloud/api``) keeps about 480 of its 614 v3 operations.

Every operation of REST v3 and of REST v2 (the same API with wiki-markup text instead of
Atlassian Document Format) becomes one row; paths are relative to the site
(``https://<site>.atlassian.net``). ``Jira.match_request`` also takes the API gateway form
(``/ex/jira/<cloudId>/rest/...``) and ``/rest/api/latest`` (an alias of v2).

Actions are Jira's permission keys, as the integration declares them, plus ``JIRA_ACCESS``
(any active account: what Atlassian's text calls "Permission to access Jira" or "None"):

- curated rules (``RULES`` below) for issues and their comments, worklogs, attachments,
  links, watchers, votes, transitions and properties (resource ``issue:{issueIdOrKey}``),
  for projects (``project:{projectIdOrKey}``), search, users and bulk operations;
- every other operation from its permission text: *Administer Jira* is ``ADMINISTER`` on
  ``site``, *Administer projects* on a project in the path is ``ADMINISTER_PROJECTS``,
  *Browse users and groups* is ``USER_PICKER``, app-only operations (Connect, Forge) are
  ``ADMINISTER``, and a read needing only access is ``JIRA_ACCESS``; a write that names no
  project Jira would check it on is ``ADMINISTER`` (only an administrator passes as the user).

Content no single issue or project bounds (an attachment, comment or link by id, worklog
lists, expressions, a JQL search that does not name one project) needs ``ADMINISTER``:
reading it as the user needs an administrator, reading it as the agent goes through. The
override narrows a JQL search to ``BROWSE_PROJECTS`` on its project when every result must be
in that one project. Flags follow permission-apis.md section 8.4 (``u`` issue content,
comments, worklogs, attachments, search, users' names; ``s`` edits, comments, transitions,
assignments and notifications that notify people; ``a`` the agent's own account and
permissions). User look-ups are ``USER_PICKER``, checked: the user needs *Browse users and
groups* too. Lists Jira answers with what the sending account sees (projects, shared filters,
dashboards) are ``SENDER_LISTS``: unknown unless the connection says ``own_tokens: user``.

Some operations appear twice in jira.js (the Connect and Forge app paths, which are not
versioned, in both versions; ``/instance/license`` in two classes): each is one row.

The output is sorted and deterministic: ``routes.json`` beside this file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/jira/routes.json"
CONFIG = re.compile(r"const config: RequestConfig = \{\s*url: (`[^`]*`|'[^']*'),\s*method: '(\w+)'")
PARAM = re.compile(r"\$\{(?:parameters\??\.)?(\w+)\}")
API = re.compile(r"^/rest/api/[23](?=/)")

ISSUE = "issue:{issueIdOrKey}"
SITE = "site"
B, ADMIN = "BROWSE_PROJECTS", "ADMINISTER"

# (methods, path regex after /rest/api/N, action, resource, flags). First match wins; the
# resource may name path parameters, {body.x}, {query.x}, or the override's nested fields.
ISSUE_PATH = r"^/issue/\{issueIdOrKey\}"
RULES: list[tuple[str, str, str, str, str]] = [
    ("GET", ISSUE_PATH + r"$", B, ISSUE, "u"),
    ("PUT", ISSUE_PATH + r"$", "EDIT_ISSUES", ISSUE, "s"),
    ("DELETE", ISSUE_PATH + r"$", "DELETE_ISSUES", ISSUE, ""),
    ("PUT", ISSUE_PATH + r"/assignee$", "ASSIGN_ISSUES", ISSUE, "s"),
    ("POST", ISSUE_PATH + r"/attachments$", "CREATE_ATTACHMENTS", ISSUE, ""),
    ("GET|POST", ISSUE_PATH + r"/changelog(/list)?$", B, ISSUE, "u"),
    ("GET", ISSUE_PATH + r"/comment(/\{id\})?$", B, ISSUE, "u"),
    ("POST", ISSUE_PATH + r"/comment$", "ADD_COMMENTS", ISSUE, "s"),
    ("PUT", ISSUE_PATH + r"/comment/\{id\}$", "EDIT_ALL_COMMENTS", ISSUE, "s"),
    ("DELETE", ISSUE_PATH + r"/comment/\{id\}$", "DELETE_ALL_COMMENTS", ISSUE, ""),
    ("GET", ISSUE_PATH + r"/editmeta$", B, ISSUE, ""),
    ("POST", ISSUE_PATH + r"/notify$", B, ISSUE, "s"),
    ("GET", ISSUE_PATH + r"/properties(/\{propertyKey\})?$", B, ISSUE, ""),
    ("PUT|DELETE", ISSUE_PATH + r"/properties/\{propertyKey\}$", "EDIT_ISSUES", ISSUE, ""),
    ("GET", ISSUE_PATH + r"/remotelink(/\{linkId\})?$", B, ISSUE, "u"),
    ("POST|PUT|DELETE", ISSUE_PATH + r"/remotelink(/\{linkId\})?$", "LINK_ISSUES", ISSUE, ""),
    ("GET", ISSUE_PATH + r"/transitions$", B, ISSUE, ""),
    ("POST", ISSUE_PATH + r"/transitions$", "TRANSITION_ISSUES", ISSUE, "s"),
    ("GET", ISSUE_PATH + r"/(votes|watchers)$", "VIEW_VOTERS_AND_WATCHERS", ISSUE, ""),
    ("POST|DELETE", ISSUE_PATH + r"/votes$", B, ISSUE, ""),
    ("POST|DELETE", ISSUE_PATH + r"/watchers$", "MANAGE_WATCHERS", ISSUE, ""),
    ("GET", ISSUE_PATH + r"/worklog(/\{id\})?$", B, ISSUE, "u"),
    ("POST", ISSUE_PATH + r"/worklog$", "WORK_ON_ISSUES", ISSUE, ""),
    ("PUT", ISSUE_PATH + r"/worklog/\{id\}$", "EDIT_ALL_WORKLOGS", ISSUE, ""),
    ("DELETE|POST", ISSUE_PATH + r"/worklog(/\{id\}|/move)?$", "DELETE_ALL_WORKLOGS", ISSUE, ""),
    ("GET", ISSUE_PATH + r"/worklog/\{worklogId\}/properties(/\{propertyKey\})?$", B, ISSUE, ""),
    (
        "PUT|DELETE",
        ISSUE_PATH + r"/worklog/\{worklogId\}/properties/",
        "EDIT_ALL_WORKLOGS",
        ISSUE,
        "",
    ),
    # issues named in the body
    ("POST", r"^/issue$", "CREATE_ISSUES", "project:{body.fields.project}", "s"),
    ("POST", r"^/issue/bulk$", "CREATE_ISSUES", "project:{body.issueUpdates.fields.project}", "s"),
    ("POST", r"^/issue/bulkfetch$", B, "issue:{body.issueIdsOrKeys}", "u"),
    ("POST", r"^/changelog/bulkfetch$", B, "issue:{body.issueIdsOrKeys}", "u"),
    ("POST", r"^/issueLink$", "LINK_ISSUES", "issue:{body.outwardIssue}", ""),
    ("POST", r"^/bulk/issues/delete$", "DELETE_ISSUES", "issue:{body.selectedIssueIdsOrKeys}", ""),
    ("POST", r"^/bulk/issues/fields$", "EDIT_ISSUES", "issue:{body.selectedIssueIdsOrKeys}", "s"),
    (
        "POST",
        r"^/bulk/issues/(un)?watch$",
        "MANAGE_WATCHERS",
        "issue:{body.selectedIssueIdsOrKeys}",
        "",
    ),
    ("POST", r"^/bulk/issues/(move|transition)$", ADMIN, SITE, "s"),
    ("POST", r"^/issue/watching$", "JIRA_ACCESS", SITE, "a"),
    ("GET", r"^/issue/createmeta/\{projectIdOrKey\}/", B, "project:{projectIdOrKey}", ""),
    ("POST", r"^/version$", "ADMINISTER_PROJECTS", "project:{body.projectId}", ""),
    ("POST", r"^/component$", "ADMINISTER_PROJECTS", "project:{body.project}", ""),
    # search: ADMINISTER unless the override finds one project bounding the JQL
    ("GET|POST", r"^/search(/jql|/id|/approximate-count)?$", ADMIN, SITE, "u"),
    ("GET", r"^/issue/picker$", ADMIN, SITE, "u"),
    ("POST", r"^/jql/match$", ADMIN, SITE, ""),
    ("POST", r"^/expression/(eval|evaluate)$", ADMIN, SITE, "u"),
    # content by id, bound to no issue the request names
    ("GET", r"^/attachment/(content/|thumbnail/)?\{id\}", ADMIN, SITE, "u"),
    ("DELETE", r"^/attachment/\{id\}$", ADMIN, SITE, ""),
    ("GET", r"^/attachment/meta$", "JIRA_ACCESS", SITE, ""),
    ("POST", r"^/comment/list$", ADMIN, SITE, "u"),
    ("GET|PUT|DELETE", r"^/comment/\{commentId\}/properties", ADMIN, SITE, ""),
    ("GET|DELETE", r"^/issueLink/\{linkId\}$", ADMIN, SITE, "u"),
    ("POST", r"^/worklog/list$", ADMIN, SITE, "u"),
    ("POST", r"^/internal/api/latest/worklog/bulk$", ADMIN, SITE, "u"),
    # the agent's own account, and identity look-ups
    ("GET|PUT|DELETE", r"^/(myself|mypermissions|mypreferences)(/|$)", "JIRA_ACCESS", SITE, "a"),
    ("GET", r"^/serverInfo$", "JIRA_ACCESS", SITE, "a"),
    ("GET", r"^/permissions$", "JIRA_ACCESS", SITE, "a"),
    (
        "GET",
        r"^/(user|users)(/search.*|/picker|/assignable/.*|/viewissue/search|/bulk.*|"
        r"/email.*|/groups|/permission/search)?$",
        "USER_PICKER",
        SITE,
        "u",
    ),
    ("GET", r"^/(groupuserpicker|groups/picker)$", "USER_PICKER", SITE, "u"),
    ("POST|PUT|DELETE", r"^/user/(properties|columns)", ADMIN, SITE, ""),
    # lists Jira answers with what the sending account sees (#19): checked on own_tokens
    (
        "GET",
        r"^/(project|project/search|project/recent|filter/search|filter/favourite|dashboard|"
        r"dashboard/search)$",
        "SENDER_LISTS",
        SITE,
        "u",
    ),
    # filters and dashboards: anyone may keep their own; sharing needs the global permission
    ("GET", r"^/(filter|dashboard)(/|$)", "JIRA_ACCESS", SITE, "u"),
    ("POST|PUT", r"^/(filter|dashboard)(/|$)", "CREATE_SHARED_OBJECTS", SITE, "s"),
    # projects
    ("GET", r"^/project/\{projectIdOrKey\}$", B, "project:{projectIdOrKey}", "u"),
    (
        "PUT",
        r"^/project/\{projectIdOrKey\}$",
        "ADMINISTER_PROJECTS",
        "project:{projectIdOrKey}",
        "",
    ),
    (
        "GET",
        r"^/(project|projectCategory|projects|issuetype|priority|resolution|status|"
        r"statuses|statuscategory|field|component|version|label|issueLinkType|"
        r"project-template)(/|$)",
        "JIRA_ACCESS",
        SITE,
        "",
    ),
]
PROJECT_PARAM = re.compile(r"\{(projectIdOrKey|projectKeyOrId|projectId)\}")
READ_FN = re.compile(
    r"^(get|search|count|match|parse|sanitise|analyse|evaluate|read|list|validate|bulkFetch|"
    r"workflowRuleSearch|suggested)"
)
DESTRUCTIVE_FN = re.compile(r"^(delete|remove|archive|trash|redact|bulkDelete)")


def declared() -> dict[str, str]:
    sys.path.insert(0, str(OUT.parents[3]))
    from toolpass.integrations.jira import Jira

    return {a.name: a.effect for a in Jira.actions}


def operations(source: Path, version: str) -> list[tuple[str, str, str, str]]:
    """(method, path, function name, permission text) of every operation of one version."""
    ops = []
    for f in sorted((source / "src" / version).glob("*.ts")):
        text = f.read_text()
        for m in CONFIG.finditer(text):
            before = text[: m.start()]
            fn = re.findall(r"async (\w+)[<(]", before)[-1]
            docs = re.findall(r"/\*\*(.*?)\*/", before, re.S)
            doc = re.sub(r"\n\s*\*\s?", " ", docs[-1]) if docs else ""
            perm = doc.split("required:**", 1)[1] if "required:**" in doc else ""
            perm = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", perm).strip()
            path = PARAM.sub(r"{\1}", m.group(1).strip("`'"))
            ops.append((m.group(2).upper(), path, fn, perm))
    return ops


def by_text(method: str, rel: str, perm: str, read: bool) -> tuple[str, str, str]:
    """(action, resource, flags) from Atlassian's permission text."""
    text = perm.lower()
    project = PROJECT_PARAM.search(rel)
    project_res = f"project:{{{project.group(1)}}}" if project else None
    if (
        "only connect" in text
        or "only forge" in text
        or "only the app" in text
        or ("apps can" in text and "only" in text)
    ):
        return ADMIN, SITE, ""
    if "site administration" in text or "site-admin" in text:
        return "SYSTEM_ADMIN", SITE, ""
    if project_res and "administer projects" in text:
        return "ADMINISTER_PROJECTS", project_res, ""
    if "administer jira" in text or "jira admin" in text:
        return ADMIN, SITE, ""
    if "browse users and groups" in text:
        return "USER_PICKER", SITE, ""
    if project_res and ("browse projects" in text or "browse project" in text) and read:
        return B, project_res, ""
    if read:
        return "JIRA_ACCESS", SITE, ""
    return ADMIN, SITE, ""


def classify(method: str, path: str, fn: str, perm: str) -> tuple[str, str, str, str]:
    rel = API.sub("", path) if API.match(path) else path.removeprefix("/rest")
    read = method == "GET" or (method == "POST" and bool(READ_FN.match(fn)))
    curated = next(
        (
            (action, res, flags)
            for methods, pattern, action, res, flags in RULES
            if method in methods.split("|") and re.search(pattern, rel)
        ),
        None,
    )
    action, res, flags = curated or by_text(method, rel, perm, read)
    if action == "JIRA_ACCESS" and not flags and PROJECT_PARAM.search(rel):
        action, res, flags = by_text(method, rel, perm, read)  # one project's metadata
    if action == "CREATE_SHARED_OBJECTS" and "administer jira" in perm.lower():
        action = ADMIN  # changing another's filter or dashboard (its owner, say)
    if read:
        effect = "read"
    elif method == "DELETE" or DESTRUCTIVE_FN.match(fn) or action.startswith("DELETE_"):
        effect = "destructive"
    else:
        effect = "write"
    return action, res, effect, flags


def build(source: Path) -> tuple[list[list[str]], int]:
    actions = declared()
    rows: dict[tuple[str, str], list[str]] = {}
    count = 0
    for version in ("version3", "version2"):
        for method, path, fn, perm in operations(source, version):
            count += 1
            action, res, effect, flags = classify(method, path, fn, perm)
            if action not in actions:
                raise SystemExit(f"{method} {path}: {action} is not a declared jira action")
            rows[(path, method)] = [method, path, action, res, effect, flags]
    return [rows[k] for k in sorted(rows)], count


def version_of(source: Path) -> str:
    return str(json.loads((source / "package.json").read_text())["version"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="the unpacked jira.js package")
    parser.add_argument("--out", type=Path, default=OUT)
    ns = parser.parse_args()
    rows, count = build(ns.source)
    data = {
        "source": f"npm jira.js {version_of(ns.source)} (src/version3, src/version2: "
        f"{count} operations, {count - len(rows)} of them listed twice)",
        "generator": "core/src/toolpass/integrations/jira/generate.py",
        "routes": rows,
    }
    ns.out.write_text(dump(data))
    print(f"{len(rows)} routes from {count} operations -> {ns.out}")  # noqa: T201


if __name__ == "__main__":
    main()
