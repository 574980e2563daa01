"""Generate GitLab's route table from python-gitlab's managers.

Source: the PyPI package ``python-gitlab`` (``gitlab/v4/objects/*.py``, ``gitlab/mixins.py``,
``gitlab/client.py``). Its managers declare their paths (``_path =
"/projects/{project_id}/merge_requests"``) and, through their mixins, the operations on them
(list, get, create, update with its HTTP method, set, delete); its objects and managers add
custom actions that call ``http_get``/``http_post``/... with paths built from those (``f"{
self.manager.path}/{self.encoded_id}/merge"``). This script reads both from the source, without
importing it. Fetch it and run::

    pip download --no-deps -d /tmp/gitlab python-gitlab
    unzip -q -o /tmp/gitlab/python_gitlab-*.whl -d /tmp/gitlab/src
    python -m toolpass.integrations.gitlab.generate --source /tmp/gitlab/src

Paths are written under ``/api/v4`` (the connection URL is the instance's, e.g.
``https://gitlab.com``; ``GitLab.match_request`` also accepts a connection URL that ends in
``/api/v4``), with parameters named the same wherever they mean the same thing
(``{project_id}``, ``{group_id}``, ``{mr_iid}``, ``{issue_iid}``, ``{branch}``, ``{file_path}``,
``{sha}``, ``{tag_name}``, ``{user_id}``; ``{artifact_path+}`` for the rest of a path).
``EXTRA`` adds operations python-gitlab lacks. HEAD requests are left out: reads that match
no route are allowed (and audited as unmapped) anyway.

Actions and resources are curated as data (``RULES``, first match wins): resources are
``project:{project_id}``, ``group:{group_id}``, ``mr:{project_id}!{mr_iid}``,
``issue:{project_id}#{issue_iid}``, ``branch:{project_id}@{branch}`` (or ``@{body.branch}``,
``@{body.ref}`` where the branch is an argument: GitLab reads arguments from the query string
too, and so does the override) and ``instance`` for what is in no project or group:
``instance.read`` (global lists and search over everything the agent's token can see: only an
administrator passes as the user) and ``instance.admin``. What no rule names falls back to
the strongest action of its place (``project.settings``, ``group.settings``,
``instance.admin`` for writes). Flags follow permission-apis.md section 6.4: ``u`` for issue,
merge request, note, file, commit, job log, wiki and snippet content; ``s`` for comments,
issue and merge request edits (they notify), invitations, shares, forks and transfers; ``a``
for the agent's own user, tokens and notification settings. What GitLab answers with what the
sending token sees (user look-ups, to-dos, the instance-wide CI lint) is ``sender_lists``:
unknown unless the connection says ``own_tokens: user`` (#19).

The output is sorted and deterministic: ``routes.json`` beside this file.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/gitlab/routes.json"
API = "/api/v4"

# --- reading python-gitlab ---------------------------------------------------------------

VERBS = {
    "http_get": "GET",
    "http_list": "GET",
    "http_post": "POST",
    "http_put": "PUT",
    "http_delete": "DELETE",
    "http_patch": "PATCH",
}
SUPER = {"create": "POST", "list": "GET"}
CRUD = {
    "HeadMixin",
    "GetMixin",
    "GetWithoutIdMixin",
    "ListMixin",
    "CreateMixin",
    "UpdateMixin",
    "SetMixin",
    "DeleteMixin",
    "RefreshMixin",
    "SaveMixin",
    "ObjectDeleteMixin",
    "RetrieveMixin",
    "CRUDMixin",
    "NoUpdateMixin",
}
UNKNOWN = []


def base_names(cls):
    out = []
    for b in cls.bases:
        while isinstance(b, ast.Subscript):
            b = b.value
        if isinstance(b, ast.Attribute):
            out.append(b.attr)
        elif isinstance(b, ast.Name):
            out.append(b.id)
    return out


def load(src):
    classes = {}
    for f in [
        src / "gitlab/mixins.py",
        src / "gitlab/client.py",
        *sorted((src / "gitlab/v4/objects").glob("*.py")),
    ]:
        for n in ast.parse(f.read_text()).body:
            if isinstance(n, ast.ClassDef):
                classes[n.name] = n
    return classes


def ancestors(classes, name, seen=None):
    seen = seen if seen is not None else []
    if name in seen or name not in classes:
        return seen
    seen.append(name)
    for b in base_names(classes[name]):
        ancestors(classes, b, seen)
    return seen


def attr_value(cls, attr):
    for s in cls.body:
        targets = (
            s.targets
            if isinstance(s, ast.Assign)
            else [s.target]
            if isinstance(s, ast.AnnAssign) and s.value is not None
            else []
        )
        for t in targets:
            if getattr(t, "id", None) == attr:
                return s.value
    return None


def chain(e):
    parts = []
    while isinstance(e, ast.Attribute):
        parts.append(e.attr)
        e = e.value
    if isinstance(e, ast.Name):
        parts.append(e.id)
    return ".".join(reversed(parts))


def render(e, fn):
    if isinstance(e, ast.Constant):
        return str(e.value)
    if isinstance(e, ast.JoinedStr):
        return "".join(
            render(v.value if isinstance(v, ast.FormattedValue) else v, fn) for v in e.values
        )
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        return render(e.left, fn) + render(e.right, fn)
    if isinstance(e, ast.Call):
        name = chain(e.func)
        if (
            name
            in (
                "utils.EncodedId",
                "EncodedId",
                "str",
                "quote",
                "urllib.parse.quote",
                "utils._url_encode",
            )
            and e.args
        ):
            return render(e.args[0], fn)
        if name in ("self.get_id", "self.manager.get_id"):
            return "{id}"
        if name.endswith(".pop") and len(e.args) == 2:
            return render(e.args[1], fn)
        if name.endswith(".pop") and len(e.args) == 1 and isinstance(e.args[0], ast.Constant):
            return "{" + str(e.args[0].value) + "}"
        if name == "self._get_upload_path":
            return "{UPLOAD}"
        if name == "self._compute_path":
            if e.args:
                return render(e.args[0], fn)
            return "{SELF_PATH}"
        if name.endswith(".format") and isinstance(e.func, ast.Attribute):
            return render(e.func.value, fn)
    if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Slice):
        inner = render(e.value, fn)
        if inner == "{SELF_PATH}" and ast.unparse(e.slice) == ":-1":
            return "{SELF_PATH_MINUS_S}"
    if isinstance(e, ast.Subscript):
        key = e.slice
        if isinstance(key, ast.Constant):
            return "{" + str(key.value) + "}"
    c = chain(e)
    if c in ("self.manager.path",):
        return "{MGR}"
    if c in ("self.path", "self._path", "self._computed_path"):
        return "{SELF_PATH}"
    if c == "self._parent.id":
        return "{user_id}"
    if isinstance(e, ast.Name) and e.id in LOCALS.get(fn.name, {}):
        return render(LOCALS[fn.name][e.id], fn)
    if c in ("self.encoded_id", "self.id", "self.iid", "self._id"):
        return "{id}"
    if c.startswith("self.") and c.count(".") == 1:
        return "{" + c[5:] + "}"
    if c and "." not in c:
        return "{" + c + "}"
    UNKNOWN.append((fn.name, ast.unparse(e)))
    return "{?" + ast.unparse(e) + "}"


LOCALS = {}


def calls(fn):
    """(verb, [path templates]) of each http call in a function."""
    assigns = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    assigns.setdefault(t.id, []).append(n.value)
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
            assigns.setdefault(n.target.id, []).append(n.value)
    LOCALS[fn.name] = {
        k: v[0] for k, v in assigns.items() if len(v) == 1 and isinstance(v[0], ast.Constant)
    }
    out = []
    for n in ast.walk(fn):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Call)
            and chain(n.func.value.func) == "super"
            and n.func.attr in SUPER
        ):
            for k in n.keywords:
                if k.arg == "path":
                    exprs = (
                        assigns.get(k.value.id, []) if isinstance(k.value, ast.Name) else [k.value]
                    )
                    out.append((SUPER[n.func.attr], [render(x, fn) for x in exprs]))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in VERBS:
            if not n.args:
                kw = [k.value for k in n.keywords if k.arg == "path"]
                if not kw:
                    continue
                arg = kw[0]
            else:
                arg = n.args[0]
            exprs = assigns.get(arg.id, []) if isinstance(arg, ast.Name) else [arg]
            out.append((VERBS[n.func.attr], [render(x, fn) for x in exprs]))
    return out


def extract(src):
    classes = load(src)
    managers = {}
    for name, cls in classes.items():
        p = attr_value(cls, "_path")
        if isinstance(p, ast.Constant):
            obj = attr_value(cls, "_obj_cls")
            managers[name] = (p.value, obj.id if isinstance(obj, ast.Name) else None)
    obj_managers = {}
    for p, obj in managers.values():
        obj_managers.setdefault(obj, []).append(p)
    ops = set()

    def add(verb, path, origin):
        ops.add((verb, path, origin))

    for m, (p, _obj) in managers.items():
        anc = ancestors(classes, m)
        um = attr_value(classes[m], "_update_method")
        upd = {"POST": "POST", "PATCH": "PATCH"}.get(getattr(um, "attr", ""), "PUT")
        without = "GetWithoutIdMixin" in anc
        if "ListMixin" in anc:
            add("GET", p, m + ".list")
        if "GetMixin" in anc:
            add("GET", p + "/{id}", m + ".get")
        if without:
            add("GET", p, m + ".get")
        if "CreateMixin" in anc:
            add("POST", p, m + ".create")
        if "UpdateMixin" in anc:
            add(upd, p if without else p + "/{id}", m + ".update")
        if "SetMixin" in anc:
            add("PUT", p + "/{id}", m + ".set")
        if "DeleteMixin" in anc:
            add("DELETE", p if without else p + "/{id}", m + ".delete")
    for name in classes:
        anc = ancestors(classes, name)
        is_mgr = name in managers
        mpaths = [managers[name][0]] if is_mgr else obj_managers.get(name, [])
        if name == "Gitlab":
            mpaths = [""]
        if not mpaths or (not is_mgr and name in CRUD):
            continue
        upload = attr_value(classes[name], "_upload_path")
        for a in anc:
            if a in CRUD or a not in classes:
                continue
            for fn in classes[a].body:
                if not isinstance(fn, ast.FunctionDef):
                    continue
                for verb, paths in calls(fn):
                    for tpl in paths:
                        for mp in mpaths:
                            t = (
                                tpl.replace("{MGR}", mp)
                                .replace("{SELF_PATH_MINUS_S}", mp[:-1])
                                .replace("{SELF_PATH}", mp)
                            )
                            if "{UPLOAD}" in t:
                                if not isinstance(upload, ast.Constant):
                                    continue
                                t = t.replace("{UPLOAD}", upload.value)
                            add(verb, t, f"{name}.{fn.name}")
    return ops


# --- normalising paths ------------------------------------------------------------------


def normalize(path: str) -> str:
    """One name per meaning for each parameter; no trailing or doubled slashes."""
    path = re.sub(r"/+", "/", path).rstrip("/") or "/"
    segs = path.split("/")
    out: list[str] = []
    for i, seg in enumerate(segs):
        prev = segs[i - 1] if i else ""
        if seg.startswith("{") and seg.endswith("}"):
            name = seg[1:-1]
            ctx = "/".join(out)
            in_project = ctx.startswith("/projects/{project_id}")
            if i == 2 and prev == "projects":
                name = "project_id"
            elif i == 2 and prev == "groups":
                name = "group_id"
            elif i == 2 and prev == "users":
                name = "user_id"
            elif in_project and i == 4 and prev == "merge_requests":
                name = "mr_iid"
            elif in_project and i == 4 and prev == "issues":
                name = "issue_iid"
            elif ctx.endswith("/repository/branches"):
                name = "branch"
            elif ctx.endswith("/repository/files"):
                name = "file_path"
            elif ctx.endswith("/repository/tags"):
                name = "tag_name"
            elif ctx.endswith(("/repository/commits", "/statuses")):
                name = "sha"
            elif name == "artifact_path" or (prev == "artifacts" and name == "path"):
                name = "artifact_path+"
            if "{" + name + "}" in out:
                name = f"{prev.rstrip('s')}_{name}"
            seg = "{" + name + "}"
        out.append(seg)
    return "/".join(out)


# Operations python-gitlab lacks (GitLab's REST docs), as (method, path).
EXTRA = [
    ("GET", "/metadata"),
    ("GET", "/personal_access_tokens/self"),
    ("DELETE", "/personal_access_tokens/self"),
    ("GET", "/projects/{project_id}/merge_requests/{mr_iid}/diffs"),
    ("GET", "/projects/{project_id}/merge_requests/{mr_iid}/raw_diffs"),
    ("GET", "/projects/{project_id}/merge_requests/{mr_iid}/related_issues"),
    ("POST", "/projects/{project_id}/issues/{issue_iid}/clone"),
    ("GET", "/projects/{project_id}/issues/{issue_iid}/links"),
    ("POST", "/projects/{project_id}/repository/branches"),
    ("PUT", "/projects/{project_id}/repository/branches/{branch}/protect"),
    ("PUT", "/projects/{project_id}/repository/branches/{branch}/unprotect"),
    ("POST", "/projects/{project_id}/statuses/{sha}"),
    ("GET", "/projects/{project_id}/repository/files/{file_path}/raw"),
    ("HEAD", "/projects/{project_id}/repository/files/{file_path}"),
    ("GET", "/projects/{project_id}/repository/commits/{sha}/comments"),
    ("POST", "/projects/{project_id}/repository/commits/{sha}/comments"),
    ("GET", "/projects/{project_id}/jobs/{id}/trace"),
    ("GET", "/projects/{project_id}/members/all/{user_id}"),
    ("GET", "/groups/{group_id}/members/all/{user_id}"),
    ("POST", "/projects/{project_id}/uploads"),
]

# --- actions and resources ---------------------------------------------------------------

RES = {
    "P": "project:{project_id}",
    "G": "group:{group_id}",
    "M": "mr:{project_id}!{mr_iid}",
    "I": "issue:{project_id}#{issue_iid}",
    "B": "branch:{project_id}@{branch}",
    "Bb": "branch:{project_id}@{body.branch}",
    "Br": "branch:{project_id}@{body.ref}",
    "X": "instance",
}
P = r"^/projects/\{project_id\}"
MR = P + r"/merge_requests/\{mr_iid\}"
IS = P + r"/issues/\{issue_iid\}"
G = r"^/groups/\{group_id\}"
NOTE = r"/(notes|discussions/\{discussion_id\}/notes)/\{(id|note_id)\}$"
W = "POST|PUT|PATCH|DELETE"

# (methods, path regex, action, resource key, flags): the first match wins.
RULES: list[tuple[str, str, str, str, str]] = [
    # the agent's own account, to-dos and settings; identity look-ups; static templates
    (
        "GET",
        r"^/(user|user/(?!activities$).*|personal_access_tokens/self|version|metadata)$",
        "instance.read",
        "X",
        "a",
    ),
    ("GET", r"^/(templates|topics)(/|$)", "instance.read", "X", "a"),
    ("GET", r"^/namespaces/\{namespace\}/exists$", "instance.read", "X", "a"),
    ("GET|PUT", r"(^|/)notification_settings$", "instance.read", "X", "a"),
    # what GitLab answers with what the sending token sees (#19): user look-ups (an
    # administrator's token adds private emails and sign-in IPs), the to-dos (their issues
    # and merge requests) and a lint whose includes read any project the token sees
    ("GET", r"^/users(/\{user_id\})?$", "sender_lists", "X", "u"),
    ("GET|POST|DELETE", r"^/todos(/|$)", "sender_lists", "X", "u"),
    ("POST", r"^/ci/lint$", "sender_lists", "X", "u"),
    # merge requests
    ("GET", MR + r"(/.*)?$", "mr.read", "M", "u"),
    ("PUT", MR + r"/merge$", "mr.merge", "M", ""),
    ("POST|DELETE", MR + r"/cancel_merge_when_pipeline_succeeds$", "mr.merge", "M", ""),
    ("POST", MR + r"/(approve|unapprove)$", "mr.approve", "M", ""),
    ("PUT", MR + r"/rebase$", "branch.force_push", "M", ""),
    ("POST", MR + r"/pipelines$", "pipeline.run", "M", ""),
    ("PUT|DELETE", MR + NOTE, "note.manage", "M", ""),
    ("POST", MR + r"/(notes|discussions|draft_notes)(/.*)?$", "mr.comment", "M", "s"),
    ("PUT|DELETE", MR + r"/draft_notes/", "mr.comment", "M", ""),
    ("POST|DELETE", MR + r"/.*award_emoji", "mr.comment", "M", ""),
    ("POST", MR + r"/(subscribe|unsubscribe|todo)$", "mr.read", "M", ""),
    ("PUT", MR + r"$", "mr.update", "M", "s"),
    ("DELETE", MR + r"$", "mr.delete", "M", ""),
    (W, MR + r"(/.*)?$", "mr.update", "M", ""),
    ("POST", P + r"/merge_requests$", "mr.create", "P", "s"),
    ("GET", P + r"/(merge_requests|merge_trains)(/.*)?$", "mr.read", "P", "u"),
    # issues
    ("GET", IS + r"(/.*)?$", "issue.read", "I", "u"),
    ("PUT", IS + r"$", "issue.update", "I", "s"),
    ("DELETE", IS + r"$", "issue.delete", "I", ""),
    ("PUT|DELETE", IS + NOTE, "note.manage", "I", ""),
    ("POST", IS + r"/(notes|discussions)(/.*)?$", "issue.comment", "I", "s"),
    ("POST|DELETE", IS + r"/.*award_emoji", "issue.comment", "I", ""),
    ("POST", IS + r"/(subscribe|unsubscribe|todo)$", "issue.read", "I", ""),
    ("POST", IS + r"/(move|clone)$", "issue.update", "I", "s"),
    (W, IS + r"(/.*)?$", "issue.update", "I", ""),
    ("POST", P + r"/issues$", "issue.create", "P", "s"),
    ("GET", P + r"/issues(_statistics)?$", "issue.read", "P", "u"),
    # the repository
    ("GET", P + r"/repository(/.*)?$", "repository.read", "P", "u"),
    ("POST|PUT|DELETE", P + r"/repository/files/\{file_path\}$", "branch.push", "Bb", ""),
    ("POST", P + r"/repository/commits$", "branch.push", "Bb", ""),
    ("POST", P + r"/repository/commits/\{sha\}/(cherry_pick|revert)$", "branch.push", "Bb", ""),
    ("PUT|DELETE", P + r"/repository/commits/\{sha\}" + NOTE[1:], "note.manage", "P", ""),
    ("POST", P + r"/repository/commits/\{sha\}/(comments|discussions)", "mr.comment", "P", "s"),
    (
        "POST",
        P + r"/(repository/commits/\{sha\}/statuses|statuses/\{sha\})$",
        "pipeline.cancel",
        "P",
        "",
    ),
    ("POST", P + r"/repository/branches$", "branch.create", "Bb", ""),
    ("DELETE", P + r"/repository/branches/\{branch\}$", "branch.delete", "B", ""),
    ("POST", P + r"/repository/tags$", "tag.create", "P", ""),
    ("DELETE", P + r"/repository/tags/\{tag_name\}$", "tag.delete", "P", ""),
    ("PUT", P + r"/repository/submodules/", "branch.push", "Bb", ""),
    ("POST", P + r"/ci/lint$", "repository.read", "P", ""),
    ("GET", P + r"/ci/lint$", "repository.read", "P", ""),
    # pipelines, jobs, environments, deployments
    ("POST", P + r"/(pipeline|trigger/pipeline)$", "pipeline.run", "Br", ""),
    ("POST", P + r"/pipeline_schedules$", "pipeline.run", "Br", ""),
    (
        W + "|GET",
        P + r"/pipeline_schedules/\{pipeline_schedule_id\}/variables",
        "variable.manage",
        "P",
        "",
    ),
    (
        "GET",
        P + r"/(pipelines|pipeline_schedules|jobs|environments|deployments|"
        r"resource_groups)(/.*)?$",
        "pipeline.read",
        "P",
        "u",
    ),
    ("POST", P + r"/(pipelines|jobs)/\{id\}/(cancel|retry|play)$", "pipeline.cancel", "P", ""),
    ("POST", P + r"/jobs/\{id\}/artifacts/keep$", "pipeline.cancel", "P", ""),
    ("DELETE", P + r"/pipelines/\{id\}$", "pipeline.delete", "P", ""),
    ("POST", P + r"/jobs/\{id\}/erase$", "pipeline.delete", "P", ""),
    ("DELETE", P + r"/jobs/.*artifacts", "pipeline.delete", "P", ""),
    ("POST|PUT", P + r"/environments(/\{id\}(/stop)?)?$", "pipeline.cancel", "P", ""),
    ("POST|PUT", P + r"/deployments(/\{id\})?$", "pipeline.cancel", "P", ""),
    # wiki, packages, releases, snippets
    ("GET", P + r"/wikis(/.*)?$", "wiki.read", "P", "u"),
    (W, P + r"/wikis(/.*)?$", "wiki.write", "P", ""),
    ("GET", P + r"/(packages|registry)(/.*)?$", "package.read", "P", ""),
    (W, P + r"/(packages|registry)/protection", "project.settings", "P", ""),
    ("PUT", P + r"/packages/generic/", "package.publish", "P", ""),
    ("DELETE", P + r"/(packages|registry)(/.*)?$", "package.delete", "P", ""),
    ("GET", P + r"/releases(/.*)?$", "project.read", "P", "u"),
    ("DELETE", P + r"/releases/\{id\}$", "project.settings", "P", ""),
    (W, P + r"/releases(/.*)?$", "release.create", "P", ""),
    ("GET", P + r"/snippets(/.*)?$", "repository.read", "P", "u"),
    ("PUT|DELETE", P + r"/snippets/\{snippet_id\}" + NOTE[1:], "note.manage", "P", ""),
    (W, P + r"/snippets(/.*)?$", "snippet.write", "P", ""),
    # members and sharing
    ("POST", P + r"/access_requests$", "project.read", "P", ""),
    (
        "GET",
        P + r"/(members|users|groups|forks|invitations|access_requests)(/.*)?$",
        "project.read",
        "P",
        "",
    ),
    ("POST|PUT", P + r"/(members|invitations|share)(/.*)?$", "member.manage", "P", "s"),
    (W, P + r"/(members|invitations|access_requests|share)(/.*)?$", "member.manage", "P", ""),
    # settings of the project
    (W + "|GET", P + r"/(variables|secure_files)(/.*)?$", "variable.manage", "P", ""),
    ("POST", P + r"/hooks/\{id\}/test/", "webhook.manage", "P", "s"),
    (W + "|GET", P + r"/hooks(/.*)?$", "webhook.manage", "P", ""),
    ("POST", P + r"/(archive|unarchive)$", "project.archive", "P", ""),
    ("DELETE", P + r"$", "project.delete", "P", ""),
    ("POST", P + r"/restore$", "project.delete", "P", ""),
    ("PUT", P + r"/transfer$", "project.transfer", "P", "s"),
    ("POST", P + r"/fork(/.*)?$", "repository.read", "P", "s"),
    ("POST", P + r"/(star|unstar)$", "project.read", "P", ""),
    ("POST", P + r"/uploads$", "issue.create", "P", ""),
    ("POST", P + r"/(labels|milestones)/\{id\}/(subscribe|unsubscribe)$", "project.read", "P", ""),
    (W, P + r"/(labels|milestones|boards|iterations)(/.*)?$", "issue.update", "P", ""),
    ("GET", P + r"/search$", "repository.read", "P", "u"),
    ("GET", P + r"/snapshot$", "instance.read", "X", ""),
    (
        "GET",
        P + r"/(export|export/download|integrations.*|runners.*|access_tokens.*|"
        r"deploy_tokens.*|deploy_keys.*|cluster_agents.*|clusters.*|audit_events.*|"
        r"service_accounts.*|job_token_scope.*|remote_mirrors.*|pages.*|protected_.*|"
        r"push_rule|external_status_checks.*|triggers.*|storage)$",
        "project.settings",
        "P",
        "",
    ),
    ("GET", P + r"/custom_attributes", "instance.read", "X", ""),
    (W, P + r"/custom_attributes", "instance.admin", "X", ""),
    ("POST", P + r"/remote_mirrors/\{id\}/sync$", "project.settings", "P", "s"),
    ("GET", P + r"(/.*)?$", "project.read", "P", ""),
    (W, P + r"(/.*)?$", "project.settings", "P", ""),
    # groups
    ("GET", G + r"/(issues|merge_requests|epics|wikis|search)(/.*)?$", "group.read", "G", "u"),
    ("GET", G + r"(/.*)?$", "group.read", "G", ""),
    ("POST", G + r"/access_requests$", "group.read", "G", ""),
    ("POST|PUT", G + r"/(members|invitations|share)(/.*)?$", "group.member.manage", "G", "s"),
    (
        W,
        G + r"/(members|invitations|access_requests|share|billable_members|ldap_group_links|"
        r"saml_group_links)(/.*)?$",
        "group.member.manage",
        "G",
        "",
    ),
    ("DELETE", G + r"$", "group.delete", "G", ""),
    ("POST", G + r"/(transfer|restore)$", "group.delete", "G", ""),
    ("POST", G + r"/projects/\{project_id\}$", "project.transfer", "P", "s"),
    ("POST", G + r"/hooks/\{id\}/test/", "group.settings", "G", "s"),
    (W, G + r"(/.*)?$", "group.settings", "G", ""),
    # everything else: the instance
    (
        "GET",
        r"^/(issues|merge_requests|snippets|events|search|projects|groups)(/|$)",
        "instance.read",
        "X",
        "u",
    ),
    ("POST", r"^/(projects|snippets)(/|$)", "instance.admin", "X", "s"),
    ("GET", r".*", "instance.read", "X", ""),
    (W, r".*", "instance.admin", "X", ""),
]


def declared() -> dict[str, str]:
    sys.path.insert(0, str(OUT.parents[3]))
    from toolpass.integrations.gitlab import GitLab

    return {a.name: a.effect for a in GitLab.actions}


def classify(method: str, path: str) -> tuple[str, str, str]:
    for methods, pattern, action, res, flags in RULES:
        if method in methods.split("|") and re.search(pattern, path):
            return action, RES[res], flags
    raise SystemExit(f"no rule for {method} {path}")


def operations(source: Path) -> set[tuple[str, str]]:
    """(method, normalised path) of every operation python-gitlab knows, plus ``EXTRA``."""
    found = {(m, normalize(p)) for m, p, _ in extract(source)}
    found |= {(m, normalize(p)) for m, p in EXTRA}
    return {(m, p) for m, p in found if m != "HEAD"}


def build(source: Path) -> list[list[str]]:
    actions = declared()
    rows = []
    for method, path in operations(source):
        action, resource, flags = classify(method, path)
        if action not in actions:
            raise SystemExit(f"{method} {path}: {action} is not a declared gitlab action")
        if method == "GET":
            effect = "read"
        elif method == "DELETE" or actions[action] == "destructive":
            effect = "destructive"
        else:
            effect = "write"
        rows.append([method, API + path, action, resource, effect, flags])
    return sorted(rows, key=lambda r: (r[1], r[0]))


def version_of(source: Path) -> str:
    text = (source / "gitlab/_version.py").read_text()
    found = re.search(r"__version__ = \"([^\"]+)\"", text)
    return found.group(1) if found else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="the unpacked python-gitlab")
    parser.add_argument("--out", type=Path, default=OUT)
    ns = parser.parse_args()
    rows = build(ns.source)
    data = {
        "source": f"PyPI python-gitlab {version_of(ns.source)} (gitlab/v4/objects, "
        "gitlab/mixins.py, gitlab/client.py) plus EXTRA",
        "generator": "core/src/toolpass/integrations/gitlab/generate.py",
        "routes": rows,
    }
    ns.out.write_text(dump(data))
    print(f"{len(rows)} routes -> {ns.out}")  # noqa: T201


if __name__ == "__main__":
    main()
