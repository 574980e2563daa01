"""What GitHub binds on a branch on top of the role: its classic protection (pull request
required, approving and code owner reviews, push restrictions, lock, ``enforce_admins``,
deletions, force pushes, required status checks) and its rulesets with their bypass actors."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from toolpass.integrations._kit import paged
from toolpass.integrations.base import Decision
from toolpass.integrations.github import _rules as rules
from toolpass.integrations.github._roles import RoleReads
from toolpass.wire.errors import LookupFailed

__all__ = ["BranchRules"]


class BranchRules(RoleReads):
    """A branch's protection and rulesets, read for one write (see :meth:`branch_rules`)."""

    def _branch_rules(
        self,
        owner: str,
        repo: str,
        branch: str,
        login: str,
        role: str,
        write: rules.Kind,
        pull: str | None,
    ) -> str | None:
        """Why the branch's protection or rulesets refuse this write by ``login``."""
        why = self._protection_refuses(owner, repo, branch, login, role, write, pull)
        if why:
            return f"{why} (branch protection)"
        return self._rulesets_refuse(owner, repo, branch, login, role, write, pull)

    def _protection_refuses(
        self,
        owner: str,
        repo: str,
        branch: str,
        login: str,
        role: str,
        write: rules.Kind,
        pull: str | None,
    ) -> str | None:
        protection = self._protection(owner, repo, branch)
        if protection is None:
            return None
        if write == "delete" and not rules.enabled(protection, "allow_deletions"):
            return "it may not be deleted"
        if write == "force" and not rules.enabled(protection, "allow_force_pushes"):
            return "force pushes to it are blocked"
        push = write in ("push", "force")
        if role == "admin" and not rules.enabled(protection, "enforce_admins"):
            return None  # admins are exempt unless the protection binds them
        if rules.enabled(protection, "lock_branch"):
            return "it is locked: read-only"
        restrictions = protection.get("restrictions")
        if restrictions is not None and not self._listed(owner, login, restrictions):
            return "only the people and teams it names may push to it"
        reviews = protection.get("required_pull_request_reviews")
        allowed = reviews.get("bypass_pull_request_allowances") if isinstance(reviews, dict) else {}
        if isinstance(reviews, dict) and not self._listed(owner, login, allowed or {}):
            if push:
                return "changes must go through a pull request"
            if write == "merge":
                why = self._reviews_missing(
                    owner, repo, branch, pull, reviews, "require_code_owner_reviews"
                )
                if why:
                    return why
        checks = protection.get("required_status_checks")
        if push and checks is not None:
            return "commits must pass its required status checks first"
        if write == "merge" and checks is not None:
            return self._checks_missing(owner, repo, pull, rules.required_checks(checks))
        return None

    def _protection(self, owner: str, repo: str, branch: str) -> dict[str, Any] | None:
        """The branch's classic protection; None when GitHub says it has none."""
        name = quote(branch, safe="")
        what = f"the branch read of {owner}/{repo}@{branch}"
        data = self.get(f"/repos/{owner}/{repo}/branches/{name}", what, owner, repo, 404)
        if data is None:
            return None  # no such branch yet: no protection names it
        if not isinstance(data.get("protected"), bool):
            raise LookupFailed("github's branch answer has no protected flag")
        if not data["protected"]:
            return None
        what = f"the branch protection read of {owner}/{repo}@{branch}"
        path = f"/repos/{owner}/{repo}/branches/{name}/protection"
        answer = self.answer("GET", path, what=what, headers=self.headers(owner, repo))
        if answer.status == 200:
            return dict(self.parse(answer, what))
        try:
            said = self.error_detail(answer.json())
        except LookupFailed:
            said = None
        if answer.status == 404 and said == "Branch not protected":
            return None  # protected by rulesets only
        if answer.status in (403, 404):
            raise LookupFailed(
                f"toolpass cannot read the protection of {owner}/{repo}@{branch} (HTTP "
                f"{answer.status}; the engine's credential needs to administer the repository)"
            )
        raise self.failure(answer, what)

    def _listed(self, owner: str, login: str, part: Any) -> bool:
        """Whether a protection's list of ``users`` and ``teams`` names ``login``."""
        users, teams = part.get("users", []), part.get("teams", [])
        if not isinstance(users, list) or not isinstance(teams, list):
            raise LookupFailed("github's branch protection answer lists no users or teams")
        if any(
            isinstance(u, dict) and str(u.get("login", "")).lower() == login.lower() for u in users
        ):
            return True
        return any(self._in_team(owner, team.get("slug"), login) for team in teams)

    def _reviews_missing(
        self,
        owner: str,
        repo: str,
        branch: str,
        pull: str | None,
        need: Mapping[str, Any],
        code_owners: str,
    ) -> str | None:
        """Why the pull request lacks the approving reviews the branch requires."""
        count = need.get("required_approving_review_count", 0)
        if not isinstance(count, int):
            raise LookupFailed("github's review requirement has no approving review count")
        if pull is None:
            raise LookupFailed(
                f"merging into {branch} needs approving reviews: name the pull request "
                f"(pr:{owner}/{repo}#number) to check them"
            )
        latest = rules.latest_reviews(self._reviews(owner, repo, pull))
        writers = {
            who: state
            for who, state in latest.items()
            if (held := self._role(owner, repo, who))
            and not isinstance(held, Decision)
            and rules.RANK[held] >= rules.RANK["write"]
        }
        approvals = sum(state == "APPROVED" for state in writers.values())
        if "CHANGES_REQUESTED" in writers.values():
            return f"a reviewer with write access requested changes on #{pull}"
        if approvals < count:
            return (
                f"#{pull} needs {count} approving reviews from users with write access, "
                f"has {approvals}"
            )
        if need.get(code_owners) or need.get("require_last_push_approval"):
            raise LookupFailed(
                f"merging into {branch} needs the code owners' or a post-push approval, which "
                "toolpass does not read"
            )
        return None

    def _every_page(self, path: str, what: str, owner: str, repo: str) -> list[Any]:
        """Every item of a list GitHub pages by number (100 a page, at most 10 pages)."""
        return list(
            paged(
                self,
                path,
                what=what,
                too_many=f"{what} has too many pages",
                style="page",
                items=None,
                pages=10,
                size_param="per_page",
                cursor="page",
                headers=self.headers(owner, repo),
            )
        )

    def _reviews(self, owner: str, repo: str, pull: str) -> list[Any]:
        path = f"/repos/{owner}/{repo}/pulls/{pull}/reviews"
        return self._every_page(path, f"the review list of {owner}/{repo}#{pull}", owner, repo)

    def _rulesets_refuse(
        self,
        owner: str,
        repo: str,
        branch: str,
        login: str,
        role: str,
        write: rules.Kind,
        pull: str | None,
    ) -> str | None:
        binding: dict[int, list[dict[str, Any]]] = {}
        for rule in self._rules(owner, repo, branch):
            kind, ruleset = rule.get("type"), rule.get("ruleset_id")
            if not isinstance(kind, str) or not isinstance(ruleset, int):
                raise LookupFailed("github's branch rules answer is malformed")
            if kind in rules.BINDING[write]:
                binding.setdefault(ruleset, []).append(rule)
            elif kind not in rules.KNOWN:
                raise LookupFailed(
                    f"a ruleset on {branch} has a {kind} rule toolpass does not know"
                )
        for ruleset, found in binding.items():
            if self._bypasses(owner, repo, ruleset, login, role, write):
                continue
            for rule in found:
                says = rules.BINDING[write][rule["type"]] or self._pull_rule_refuses(
                    owner, repo, branch, pull, rule
                )
                if says:
                    return f"{says} (ruleset {ruleset})"
        return None

    def _pull_rule_refuses(
        self, owner: str, repo: str, branch: str, pull: str | None, rule: Mapping[str, Any]
    ) -> str | None:
        """What a ruleset rule judged from the pull request says of its merge: its reviews
        (``pull_request``) or its head's checks (``required_status_checks``)."""
        params = rule.get("parameters")
        params = params if isinstance(params, dict) else {}
        if rule["type"] == "required_status_checks":
            return self._checks_missing(owner, repo, pull, rules.required_checks(params))
        return self._reviews_missing(owner, repo, branch, pull, params, "require_code_owner_review")

    def _checks_missing(
        self, owner: str, repo: str, pull: str | None, required: Mapping[str, int | None]
    ) -> str | None:
        """Why the pull request's head has not passed the checks its base requires: each
        needs a successful commit status or a check run that completed as success, neutral
        or skipped."""
        if pull is None:
            raise LookupFailed("a merge with required status checks needs its pull request")
        what = f"the pull request read of {owner}/{repo}#{pull}"
        data = self.get(f"/repos/{owner}/{repo}/pulls/{pull}", what, owner, repo)
        head = data.get("head")
        sha = head.get("sha") if isinstance(head, dict) else None
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
            raise LookupFailed("github's pull request answer has no head commit")
        missing = rules.missing_checks(required, *self._checks(owner, repo, sha))
        if missing:
            return f"#{pull} has not passed its required status checks ({', '.join(missing)})"
        return None

    def _checks(self, owner: str, repo: str, sha: str) -> tuple[list[Any], list[Any]]:
        """A commit's statuses (each context's latest) and its check runs (the latest)."""
        base = f"/repos/{owner}/{repo}/commits/{sha}"
        headers = self.headers(owner, repo)
        what = f"the combined status of {owner}/{repo}@{sha[:12]}"
        status = self.get_json(
            f"{base}/status", what=what, params={"per_page": "100"}, headers=headers
        )
        statuses = status.get("statuses")
        count = status.get("total_count")
        if not isinstance(statuses, list) or not isinstance(count, int) or count > len(statuses):
            raise LookupFailed(f"toolpass cannot read all of {what}")
        what = f"the check runs of {owner}/{repo}@{sha[:12]}"

        runs = paged(
            self,
            f"{base}/check-runs",
            what=what,
            too_many=f"{what} has too many pages",
            style="page",
            items="check_runs",
            pages=10,
            size_param="per_page",
            cursor="page",
            total_at="total_count",
            headers=headers,
        )
        return statuses, list(runs)

    def _rules(self, owner: str, repo: str, branch: str) -> list[Any]:
        path = f"/repos/{owner}/{repo}/rules/branches/{quote(branch, safe='')}"
        what = f"the rules read of {owner}/{repo}@{branch}"
        return [r if isinstance(r, dict) else {} for r in self._every_page(path, what, owner, repo)]

    def _bypasses(
        self, owner: str, repo: str, ruleset: int, login: str, role: str, write: rules.Kind
    ) -> bool:
        what = f"the ruleset read of {owner}/{repo} #{ruleset}"
        data = self.get(f"/repos/{owner}/{repo}/rulesets/{ruleset}", what, owner, repo)
        actors = data.get("bypass_actors")
        if not isinstance(actors, list):
            raise LookupFailed(
                f"toolpass cannot read who may bypass ruleset {ruleset} of {owner}/{repo} "
                "(the engine's credential needs to administer the repository)"
            )
        by_role, by_owner, unsure = rules.bypass(actors, role, write)
        if by_role or (by_owner and self._org_role(owner, login) == "owner"):
            return True
        if unsure:
            raise LookupFailed(
                f"ruleset {ruleset} of {owner}/{repo} may be bypassed by {unsure}, which "
                f"toolpass cannot check for {login}"
            )
        return False
