"""Generate Confluence Cloud's route table from confluence.js, the REST client generated from
Atlassian's Confluence Cloud REST API descriptions (v1 and v2).

Sources: the npm package ``confluence.js`` 3.2.0 (``dist/v1/api/*.js``, ``dist/v2/api/*.js``:
one function per operation, each with its ``url`` and ``method``) and 2.1.0 (``src/api/*.ts``,
REST v1 before Atlassian removed the content CRUD operations from its v1 description: the
``/wiki/rest/api/content/{id}`` family that atlassian-python-api and many tools still call).
Fetch them and run::

    cd /tmp && npm pack confluence.js@3.2.0 confluence.js@2.1.0
    mkdir -p cf3 cf2 && tar xzf confluence.js-3.2.0.tgz -C cf3
    tar xzf confluence.js-2.1.0.tgz -C cf2
    python -m toolpass.integrations.confluence.generate \
        --source /tmp/cf3/package --legacy /tmp/cf2/package

Paths are relative to the site (``https://<site>.atlassian.net``); ``Confluence.match_request``
also takes the API gateway form (``/ex/confluence/<cloudId>/wiki/...``).

Actions are the integration's (``confluence/actions.json``):

- content by id (v2 ``/pages/{id}``, ``/blogposts/{id}``, comments, attachments, ...; v1
  ``/content/{id}``): a read is ``read``, a change ``update``, a deletion ``delete``, on
  ``content:{id}``; adding an attachment is ``attach``, a comment ``comment``;
- creating content names its space (``create_page`` ... on ``space:{body.spaceId}``, v1
  ``space:{body.space.key}``) or its page (``comment`` on ``content:{body.pageId}``);
- a space by key or id: reads ``read_space``, changes ``administer_space``;
- look-ups of users and groups and site metadata are ``use``, checked as the user (the
  agent's own account and watches are ``a``); lists Confluence answers with what the sending
  account sees (``GET /spaces``, ``/space``, ``/label`` with its content) are
  ``sender_lists``: unknown unless the connection says ``own_tokens: user`` (#19); anything
  else (search, lists across spaces, site settings, groups, space creation, app-only
  operations) is ``administer`` on ``site``.

Flags follow permission-apis.md section 9.4: ``u`` content bodies, comments, attachments,
search; ``s`` creating and editing content, comments (watchers are notified), invitations.

The output is sorted and deterministic: ``routes.json`` beside this file.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/confluence/routes.json"
CONFIG = re.compile(
    r"const config(?:: RequestConfig)? = \{\s*url: (`[^`]*`|'[^']*'),\s*method: '(\w+)'"
)
PARAM = re.compile(r"\$\{(?:parameters\??\.)?(\w+)\}")
ADMIN, SITE, SENDER_LISTS = "administer", "site", "sender_lists"

KINDS = (
    "pages|blogposts|attachments|custom-content|whiteboards|databases|embeds|folders|"
    "footer-comments|inline-comments|comments|content"
)
CONTENT = re.compile(rf"^/({KINDS})/\{{(\w+)\}}(/.*)?$")
SPACE = re.compile(r"^/(spaces|space)/\{(\w+)\}(/.*)?$")
READ_POST = re.compile(
    r"(/convert-ids-to-types|/users-bulk|/check-access-by-email|/permission/check|"
    r"/contentbody/convert/|/transition/combinations)$"
)
CREATE = {
    "pages": "create_page",
    "blogposts": "create_blogpost",
    "whiteboards": "create_whiteboard",
    "databases": "create_database",
    "embeds": "create_embed",
    "folders": "create_folder",
}
UNTRUSTED = re.compile(
    r"(^$|/(child|children|direct-children|descendants?|footer-comments|inline-comments|"
    r"attachments?|versions?|history|download|data|macro|custom-content|pages|blogposts)"
    r"(/|$))"
)


def operations(source: Path, legacy: Path | None) -> list[tuple[str, str]]:
    """(method, path) of every operation: v1 and v2 of 3.2.0, then v1 of 2.1.0."""
    files = [f for v in ("v1", "v2") for f in sorted((source / "dist" / v / "api").glob("*.js"))]
    old = sorted((legacy / "src" / "api").glob("*.ts")) if legacy else []
    ops = []
    for f in [*files, *old]:
        for m in CONFIG.finditer(f.read_text()):
            path = PARAM.sub(r"{\1}", m.group(1).strip("`'"))
            if f in old:
                path = "/wiki/rest" + path
            ops.append((m.group(2).upper(), path))
    return ops


def content_rule(method: str, kind: str, param: str, rest: str) -> tuple[str, str, str]:
    res = f"content:{{{param}}}"
    if rest.startswith("/child/attachment") and method in ("POST", "PUT"):
        return "attach", res, ""
    if rest.startswith("/child/comment") and method == "POST":
        return "comment", res, "s"
    if rest.startswith(("/copy", "/pagehierarchy/copy", "/move/")) or rest == "/permission/check":
        return ADMIN, SITE, ""
    if method == "GET":
        return "read", res, "u" if UNTRUSTED.search(rest) else ""
    if (method == "DELETE" and rest in ("", "/pageTree")) or rest.startswith("/version/"):
        return "delete", res, ""
    if rest.startswith(("/notification", "/watch")):
        return "read", res, ""
    return "update", res, "s" if rest in ("", "/title") else ""


def classify(method: str, path: str) -> tuple[str, str, str]:
    """(action, resource, flags) of one operation."""
    rel = re.sub(r"^/wiki/(rest/api|api/v2)(?=/)", "", path)
    if method == "POST" and rel in (f"/{k}" for k in CREATE):
        return CREATE[rel[1:]], "space:{body.spaceId}", "s"
    if method == "POST" and rel == "/content":
        return "create_page", "space:{body.space.key}", "s"
    if method == "POST" and rel in ("/footer-comments", "/inline-comments"):
        return "comment", "content:{body.pageId}", "s"
    if rel.startswith("/content/blueprint/instance/"):
        return "update", "content:{draftId}", "s"
    if (m := re.match(r"^/(analytics/content|user/watch/content)/\{(\w+)\}", rel)) is not None:
        return "read", f"content:{{{m.group(2)}}}", ""
    if (m := CONTENT.match(rel)) is not None:
        return content_rule(method, m.group(1), m.group(2), m.group(3) or "")
    if (m := SPACE.match(rel)) is not None:
        res = f"space:{{{m.group(2)}}}"
        if method == "GET":
            return "read_space", res, "u" if UNTRUSTED.search(m.group(3) or "") else ""
        if (m.group(3) or "").startswith("/role-assignments") or method != "GET":
            return "administer_space", res, ""
    if rel.startswith("/user/watch/") or rel in ("/user/current", "/user/anonymous"):
        return "use", SITE, "a"
    if method == "GET" and re.match(r"^/(user|users|search/user|group)(/|$)", rel):
        return "use", SITE, ""
    if method == "POST" and rel in ("/users-bulk", "/user/access/check-access-by-email"):
        return "use", SITE, ""
    if method == "GET" and rel in ("/spaces", "/space", "/label"):
        return SENDER_LISTS, SITE, "u"
    if method == "GET" and re.match(
        r"^/(settings|space-role-mode|classification-levels|content-states|"
        r"longtask|space-roles|data-policies/metadata)",
        rel,
    ):
        return "use", SITE, ""
    if rel.startswith("/user/access/invite"):
        return ADMIN, SITE, "s"
    if method == "GET" or READ_POST.search(rel):
        return ADMIN, SITE, "u"
    return ADMIN, SITE, ""


def effect(method: str, path: str, action: str) -> str:
    if method == "GET" or (method == "POST" and READ_POST.search(path)):
        return "read"
    if method == "DELETE" or action == "delete" or path.endswith("/redact"):
        return "destructive"
    return "write"


def declared() -> set[str]:
    actions = OUT.with_name("actions.json")
    return {a["name"] for a in json.loads(actions.read_text())["actions"]}


def build(source: Path, legacy: Path | None) -> tuple[list[list[str]], int]:
    names = declared()
    rows: dict[tuple[str, str], list[str]] = {}
    ops = operations(source, legacy)
    for method, path in ops:
        if (path, method) in rows:
            continue  # the newer description wins
        action, res, flags = classify(method, path)
        if action not in names:
            raise SystemExit(f"{method} {path}: {action} is not a declared confluence action")
        rows[(path, method)] = [method, path, action, res, effect(method, path, action), flags]
    return [rows[k] for k in sorted(rows)], len(ops)


def version_of(source: Path) -> str:
    return str(json.loads((source / "package.json").read_text())["version"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="confluence.js 3.2.0")
    parser.add_argument("--legacy", type=Path, help="confluence.js 2.1.0 (REST v1 content)")
    parser.add_argument("--out", type=Path, default=OUT)
    ns = parser.parse_args()
    rows, count = build(ns.source, ns.legacy)
    source = f"npm confluence.js {version_of(ns.source)} (dist/v1, dist/v2)"
    if ns.legacy:
        source += f" and {version_of(ns.legacy)} (src/api, REST v1)"
    data = {
        "source": f"{source}: {count} operations, {count - len(rows)} listed twice",
        "generator": "core/src/toolpass/integrations/confluence/generate.py",
        "routes": rows,
    }
    ns.out.write_text(dump(data))
    print(f"{len(rows)} routes from {count} operations -> {ns.out}")  # noqa: T201


if __name__ == "__main__":
    main()
