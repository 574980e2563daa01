"""What GitHub's branch rules say about one user's write, read from GitHub's own answers.

Two systems bind a branch: classic branch protection (``GET .../branches/{branch}/protection``)
and rulesets (``GET .../rules/branches/{branch}``: every active rule, repository or
organization level; ``GET .../rulesets/{id}``: who may bypass it). These functions judge the
answers; the integration reads them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from toolpass.wire.errors import LookupFailed

ROLES = ("read", "triage", "write", "maintain", "admin")
RANK = {role: i + 1 for i, role in enumerate(ROLES)}
Kind = Literal["push", "force", "delete", "merge", "create"]

#: What a ruleset's rules say of a push.
_PUSH: Mapping[str, str] = {
    "update": "only those who may bypass its ruleset may update it",
    "pull_request": "changes must go through a pull request",
    "required_status_checks": "commits must pass its required status checks first",
    "required_deployments": "commits must be deployed to its required environments first",
    "merge_queue": "changes must go through its merge queue",
}

#: Ruleset rules that refuse a kind of write to everyone who may not bypass the ruleset,
#: with what they say.
BINDING: Mapping[Kind, Mapping[str, str]] = {
    "push": _PUSH,
    "force": {**_PUSH, "non_fast_forward": "force pushes to it are blocked"},
    "delete": {"deletion": "it may not be deleted"},
    "create": {"creation": "only those who may bypass its ruleset may create it"},
    "merge": {
        "update": "only those who may bypass its ruleset may update it",
        "merge_queue": "pull requests must go through its merge queue",
        "pull_request": "",  # judged from the pull request's reviews
        "required_status_checks": "",  # judged from its head commit's checks
    },
}

#: Every rule type toolpass knows. Those that do not bind a kind of write judge the change
#: itself (content, signatures, history, a new branch's name) or the commit's checks, not
#: who sends it; GitHub applies them to the change whoever sends it. Any other type: unknown.
KNOWN = frozenset(
    {
        "creation",
        "update",
        "deletion",
        "required_linear_history",
        "required_signatures",
        "pull_request",
        "required_status_checks",
        "required_deployments",
        "merge_queue",
        "non_fast_forward",
        "commit_message_pattern",
        "commit_author_email_pattern",
        "committer_email_pattern",
        "branch_name_pattern",
        "tag_name_pattern",
        "file_path_restriction",
        "max_file_path_length",
        "file_extension_restriction",
        "max_file_size",
        "workflows",
        "code_scanning",
        "copilot_code_review",
    }
)

#: The built-in repository roles a ruleset's ``RepositoryRole`` bypass actor names by id.
ROLE_IDS: Mapping[int, str] = {2: "maintain", 4: "write", 5: "admin"}
_MODES: Mapping[Kind, tuple[str, ...]] = {
    "push": ("always", "exempt"),
    "force": ("always", "exempt"),
    "delete": ("always", "exempt"),
    "create": ("always", "exempt"),
    "merge": ("always", "pull_request", "exempt"),
}


def enabled(protection: Mapping[str, Any], key: str) -> bool:
    """Whether a classic protection setting (``{"enabled": bool}``) is on."""
    part = protection.get(key)
    return isinstance(part, dict) and part.get("enabled") is True


def bypass(actors: Sequence[Any], role: str | None, kind: Kind) -> tuple[bool, bool, str | None]:
    """A ruleset's bypass actors for a user holding ``role``: (the role bypasses it, an
    organization owner bypasses it, what toolpass cannot check for the user)."""
    owner, unsure = False, None
    for actor in actors:
        if not isinstance(actor, dict):
            unsure = "an actor it cannot read"
            continue
        if actor.get("bypass_mode", "always") not in _MODES[kind]:
            continue
        kind_of = actor.get("actor_type")
        if kind_of == "RepositoryRole":
            listed = ROLE_IDS.get(actor.get("actor_id", 0))
            if listed is None:
                unsure = "a custom repository role"
            elif role == listed:
                return True, False, None
            elif role is not None and RANK[role] > RANK[listed]:
                unsure = f"the {listed} role (the user holds {role})"
        elif kind_of == "OrganizationAdmin":
            owner = True
        elif kind_of not in ("Integration", "DeployKey"):
            unsure = f"a {kind_of}" if isinstance(kind_of, str) else "an actor it cannot read"
    return False, owner, unsure


def latest_reviews(reviews: Sequence[Any]) -> dict[str, str]:
    """Each reviewer's latest deciding review (approved, changes requested, dismissed), by
    lower-case login; comments and pending reviews decide nothing."""
    latest: dict[str, str] = {}
    for review in reviews:
        if not isinstance(review, dict):
            continue
        user = review.get("user")
        login = user.get("login") if isinstance(user, dict) else None
        state = review.get("state")
        if isinstance(login, str) and state in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
            latest[login.lower()] = state
    return latest


def required_checks(part: Mapping[str, Any]) -> dict[str, int | None]:
    """Each context a classic protection's ``required_status_checks`` (``checks``, else
    ``contexts``) or a ruleset rule's parameters (``required_status_checks``) require, with
    the app that must report it (None: any source)."""
    listed = part.get("checks") or part.get("required_status_checks")
    if not listed:
        listed = [{"context": c} for c in part.get("contexts") or []]
    if not isinstance(listed, list):
        raise LookupFailed("github's required status checks are malformed")
    required: dict[str, int | None] = {}
    for check in listed:
        name = check.get("context") if isinstance(check, dict) else None
        app = check.get("app_id", check.get("integration_id")) if isinstance(check, dict) else 0
        if not isinstance(name, str) or not (app is None or isinstance(app, int)):
            raise LookupFailed("github's required status checks are malformed")
        required[name] = app
    return required


def missing_checks(
    required: Mapping[str, int | None], statuses: Sequence[Any], runs: Sequence[Any]
) -> list[str]:
    """The required contexts that have not passed: a commit status whose latest state is
    ``success`` (any source), or a check run (the latest of its name) completed as success,
    neutral or skipped, from the required app when one is named."""
    missing = []
    for name, app in required.items():
        by_status = app is None and any(
            isinstance(s, dict) and s.get("context") == name and s.get("state") == "success"
            for s in statuses
        )
        by_run = any(
            isinstance(r, dict)
            and r.get("name") == name
            and r.get("status") == "completed"
            and r.get("conclusion") in ("success", "neutral", "skipped")
            and (app is None or (isinstance(r.get("app"), dict) and r["app"].get("id") == app))
            for r in runs
        )
        if not (by_status or by_run):
            missing.append(name)
    return sorted(missing)
