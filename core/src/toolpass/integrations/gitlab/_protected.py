"""GitLab's protected refs: who may push, merge, force-push, delete or create a branch
(``GET /projects/:id/protected_branches``, wildcards included, the most permissive matching
rule applying) and create or delete a tag or release (``protected_tags``); a merge request's
merge status (draft, conflicts, blocking discussions) before its branches."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolpass.integrations.gitlab._actions import DEVELOPER, MAINTAINER, BranchOp, TagOp
from toolpass.integrations.gitlab._api import GitLabApi
from toolpass.integrations.gitlab._resources import Target, branch_matches, integer
from toolpass.wire.decision import Decision
from toolpass.wire.http import MalformedResponse

__all__ = ["ProtectedRefs"]


class ProtectedRefs(GitLabApi):
    """Protected branches and tags, read for one action (:meth:`_branch`, :meth:`_tag`)."""

    # --- branches ------------------------------------------------------------
    def _branch(
        self,
        op: BranchOp,
        action: str,
        target: Target,
        uid: int,
        level: int,
        who: str,
        reason: str,
    ) -> Decision:
        branch = target.branch
        if target.kind == "mr":
            mr = self._get(
                f"/projects/{target.encoded}/merge_requests/{target.iid}",
                f"read merge request {target.path}!{target.iid}",
            )
            field = "target_branch" if op == "merge" else "source_branch"
            branch = mr.get(field)
            if not isinstance(branch, str) or not branch:
                raise MalformedResponse(f"gitlab's merge request has no {field}")
            if op != "merge" and mr.get("source_project_id") != mr.get("target_project_id"):
                return Decision.unknown(
                    f"the source branch of {target.path}!{target.iid} is in a fork"
                )
            if op == "merge":
                blocked = _unmergeable(mr, f"{target.path}!{target.iid}")
                if blocked is not None:
                    return blocked
        assert branch is not None
        what = f"the protected branches of {target.path}"
        rules = [
            r
            for r in self._pages(f"/projects/{target.encoded}/protected_branches", {}, what)
            if isinstance(r.get("name"), str) and branch_matches(r["name"], branch)
        ]
        if not rules:
            return Decision.allow(f"{reason}; {branch} is not protected")
        names = ", ".join(sorted({r["name"] for r in rules}))
        protected = f"{branch} is protected ({names})"
        if op == "delete":
            if level >= MAINTAINER:
                return Decision.allow(f"{reason}; {protected} and Maintainers may delete it")
            return Decision.deny(f"{who}: {protected}; deleting it needs Maintainer")
        kinds = {
            "push": ("push",),
            "merge": ("merge",),
            "force_push": ("push",),
            "create": ("push", "merge"),
            "pipeline": ("push", "merge"),
        }[op]
        allowed, groups = False, set()
        for rule in rules:
            for kind in kinds:
                entries = rule.get(f"{kind}_access_levels")
                if not isinstance(entries, list):
                    raise MalformedResponse(
                        f"gitlab's protected branch has no {kind}_access_levels"
                    )
                verdict = _entry_allows(entries, uid, level)
                allowed = allowed or verdict is True
                if isinstance(verdict, set):
                    groups |= verdict
        if (
            allowed
            and op == "force_push"
            and not any(r.get("allow_force_push") is True for r in rules)
        ):
            return Decision.deny(f"{who}: {protected} and no matching rule allows force push")
        if allowed:
            return Decision.allow(f"{reason}; {protected} and allows {who} to {'/'.join(kinds)}")
        if groups:
            ids = ", ".join(map(str, sorted(groups)))
            return Decision.unknown(
                f"{protected}: whether {who} may {'/'.join(kinds)} depends on membership of "
                f"group(s) {ids}, which this integration does not evaluate"
            )
        return Decision.deny(f"{who} is not allowed to {'/'.join(kinds)} to {branch}: {protected}")

    # --- protected tags ----------------------------------------------------------------
    def _tag(
        self, op: TagOp, target: Target, uid: int, level: int, who: str, reason: str
    ) -> Decision:
        """Protected tags (``GET /projects/:id/protected_tags``, wildcards included): creating
        a protected tag, or a release for one, needs a matching rule's ``create_access_levels``
        entry (the most permissive rule applies); deleting one needs Maintainer and that entry
        too (GitLab's push check refuses it to anyone not allowed to create the tag)."""
        tag = target.branch
        assert tag is not None
        what = f"the protected tags of {target.path}"
        rules = [
            r
            for r in self._pages(f"/projects/{target.encoded}/protected_tags", {}, what)
            if isinstance(r.get("name"), str) and branch_matches(r["name"], tag)
        ]
        if not rules:
            return Decision.allow(f"{reason}; tag {tag} is not protected")
        protected = f"tag {tag} is protected ({', '.join(sorted({r['name'] for r in rules}))})"
        if op == "delete" and level < MAINTAINER:
            return Decision.deny(f"{who}: {protected}; deleting it needs Maintainer")
        doing = {"create": "create it", "release": "create a release for it"}.get(op, "delete it")
        groups: set[int] = set()
        for rule in rules:
            entries = rule.get("create_access_levels")
            if not isinstance(entries, list):
                raise MalformedResponse("gitlab's protected tag has no create_access_levels")
            verdict = _entry_allows(entries, uid, level)
            if verdict is True:
                return Decision.allow(f"{reason}; {protected} and allows {who} to {doing}")
            if isinstance(verdict, set):
                groups |= verdict
        if groups:
            ids = ", ".join(map(str, sorted(groups)))
            return Decision.unknown(
                f"{protected}: whether {who} may {doing} depends on membership of group(s) "
                f"{ids}, which this integration does not evaluate"
            )
        return Decision.deny(f"{who} is not allowed to {doing}: {protected}")


def _unmergeable(mr: Mapping[str, Any], label: str) -> Decision | None:
    """What GitLab's own merge checks say (``detailed_merge_status``, GitLab 15.6+): None when
    ``mergeable``, unknown while still checking or when not reported, else a deny naming it
    (not approved, a pipeline that must pass, draft, unresolved threads, conflicts, ...)."""
    status = mr.get("detailed_merge_status")
    if status == "mergeable":
        return None
    if status is None:
        return Decision.unknown(f"gitlab does not say whether its merge checks let {label} merge")
    if status in ("checking", "unchecked", "preparing", "approvals_syncing"):
        return Decision.unknown(f"gitlab is still checking whether {label} can be merged")
    return Decision.deny(f"gitlab's merge checks refuse merging {label} ({status})")


def _entry_allows(entries: list[Any], uid: int, level: int) -> bool | set[int] | None:
    """True when an entry lets the user through; the ids of groups that might; else None."""
    groups: set[int] = set()
    for entry in entries:
        if not isinstance(entry, dict):
            raise MalformedResponse("gitlab's protected ref holds a non-object access level")
        user_id, group_id = integer(entry.get("user_id")), integer(entry.get("group_id"))
        if user_id is not None:
            if user_id == uid and level >= DEVELOPER:
                return True
        elif group_id is not None:
            groups.add(group_id)
        elif entry.get("deploy_key_id") is not None:
            continue
        else:
            needed = integer(entry.get("access_level"))
            if needed is None:
                raise MalformedResponse("gitlab's protected ref access level has no level")
            if needed > 0 and level >= needed:
                return True
    return groups or None
