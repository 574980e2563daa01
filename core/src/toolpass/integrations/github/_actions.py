"""GitHub's action table (``actions.json``), read once: what each action needs (its
repository and organization role) and its effect; a leaf both the check and the request
hook import."""

from __future__ import annotations

from toolpass.integrations.base import Action, load_actions
from toolpass.integrations.github import _rules as rules

__all__ = ["ACTIONS", "BRANCH_WRITES", "EFFECTS", "NEEDS", "ORG_NEEDS", "ORG_RANK", "TERMS"]

ORG_RANK = {"member": 1, "owner": 2}

# github/actions.json: each action's minimum repository role (``role``) and organization role
# (``org_role``, member < owner) beside its name, effect, description and requirement.
ACTIONS: tuple[Action, ...] = load_actions(__name__.rpartition(".")[0])
NEEDS = {a.name: str(a.terms["role"]) for a in ACTIONS}
ORG_NEEDS = {a.name: str(a.terms["org_role"]) for a in ACTIONS}
EFFECTS = {a.name: a.effect for a in ACTIONS}
#: What binds on top of the role, as each row declares it: ``on_archived`` (an archived
#: repository still takes it), ``locked_by_discussion``, ``environment_reviewer``,
#: ``renames_branch``, ``published_readable``, ``managers_only`` (an advisory's collaborators
#: may not), ``answers_for: sender``, ``members_may_be_barred`` (by the organization's
#: members_can_create_repositories).
TERMS = {a.name: a.terms for a in ACTIONS}
#: The writes that land on a branch, and how (``branch_write``).
BRANCH_WRITES: dict[str, rules.Kind] = {
    a.name: a.terms["branch_write"] for a in ACTIONS if "branch_write" in a.terms
}
if not set(BRANCH_WRITES.values()) <= set(rules.BINDING):
    raise ValueError("github/actions.json names a branch_write GitHub rulesets do not bind")
if not (set(NEEDS.values()) <= set(rules.ROLES) and set(ORG_NEEDS.values()) <= set(ORG_RANK)):
    raise ValueError("github/actions.json names a role GitHub does not have")
