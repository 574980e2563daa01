"""IAM's policy simulation read: what ``SimulatePrincipalPolicy`` answered for one action on
one resource, what the resource's own policy leaves it unable to answer (:class:`Coverage`),
and the condition context it is asked with."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass

from toolpass.integrations.aws import _resource_policies as policies
from toolpass.integrations.aws._answers import members, text
from toolpass.integrations.base import Decision
from toolpass.wire.errors import ConfigError

__all__ = ["Coverage", "context_entries", "coverage", "decide"]

_CONTEXT_KEY = re.compile(r"[A-Za-z0-9-]+:[A-Za-z0-9_./:-]+")
_CONTEXT_TYPES = (
    "string",
    "stringList",
    "numeric",
    "numericList",
    "boolean",
    "booleanList",
    "ip",
    "ipList",
    "binary",
    "binaryList",
    "date",
    "dateList",
)
_KNOWN_CONTEXT_TYPES = {
    "aws:sourceip": "ip",
    "aws:vpcsourceip": "ip",
    "aws:currenttime": "date",
    "aws:tokenissuetime": "date",
    "aws:multifactorauthage": "numeric",
    "aws:epochtime": "numeric",
}
_DECISIONS = ("allowed", "explicitDeny", "implicitDeny")
#: Which of two answers for one resource stands: the lower (an unknown one lowest of all).
_STRICTNESS = {"explicitDeny": 0, "implicitDeny": 1, "allowed": 2}


@dataclass(frozen=True)
class Coverage:
    """What a simulation answers for a resource with its own policy: why an ``allowed`` or
    an implicit deny cannot stand (``*_gap``), whether the policy was passed to it
    (``simulated``), whether it crosses accounts, and the policy that alone can grant
    (``needs_grant``: a key or trust policy that does not delegate to IAM)."""

    allow_gap: str | None = None
    implicit_gap: str | None = None
    simulated: bool = False
    cross_account: bool = False
    cross_account_without_policy: bool = False
    needs_grant: str | None = None


def coverage(
    policy: policies.ResourcePolicy | None, principal: str, action: str, partition: str
) -> Coverage:
    """What the simulation can and cannot answer, given the resource's own policy."""
    if policy is None:
        return Coverage()
    account = principal.split(":")[4]
    cross = policy.account != account
    if policy.document is None:
        return Coverage(cross_account_without_policy=cross)  # nothing to simulate
    policy.statements()  # a policy that is not JSON raises: unread
    if ":user/" in principal:
        delegated = policy.delegates(action, partition)
        return Coverage(  # IAM evaluates the policy for a user: it is passed
            simulated=True,
            cross_account=cross,
            needs_grant=policy.kind if policy.must_grant and not delegated else None,
        )
    why = "IAM's simulator evaluates resource policies only for IAM users, not roles or groups"
    if cross:
        gap = f"the {policy.kind} decides access from account {account}, and {why}"
        return Coverage(gap, gap)
    if policy.denies_anything():
        gap = f"the {policy.kind} has Deny statements, and {why}"
        return Coverage(gap, gap)
    if policy.must_grant and not policy.delegates(action, partition):
        gap = f"only the {policy.kind} can grant {action}, and {why}"
        return Coverage(gap, gap)
    if not any(s.get("Effect") == "Allow" for s in policy.statements()):
        return Coverage()  # no statement at all: the policy changes nothing
    return Coverage(None, f"the {policy.kind} may grant it on its own, and {why}")


def decide(
    result: ET.Element,
    principal: str,
    action: str,
    resource: str,
    cover: Coverage,
    implicit_deny: str,
) -> Decision:
    """IAM's answer for ``principal`` as a decision, given what the simulation covers."""
    verdict = text(result, "EvalDecision")
    missing = {m.text.strip() for m in members(result, "MissingContextValues") if m.text}
    boundary = text(result, "PermissionsBoundaryDecisionDetail/AllowedByPermissionsBoundary")
    orgs = text(result, "OrganizationsDecisionDetail/AllowedByOrganizations")
    matched = _statements(result)
    kinds = _statement_kinds(result)
    answers: list[str | None] = []
    for specific in members(result, "ResourceSpecificResults"):
        if text(specific, "EvalResourceName") == resource:
            answers.append(text(specific, "EvalResourceDecision") or verdict)
            missing |= {m.text.strip() for m in members(specific, "MissingContextValues") if m.text}
            boundary = (
                text(specific, "PermissionsBoundaryDecisionDetail/AllowedByPermissionsBoundary")
                or boundary
            )
            matched = _statements(specific) or matched
            kinds = _statement_kinds(specific) or kinds
    if answers:  # the resource listed more than once: the strictest answer stands
        verdict = min(answers, key=lambda a: _STRICTNESS.get(a or "", -1))
    if verdict not in _DECISIONS:
        return Decision.unknown(f"IAM's simulation answered an unknown decision {verdict!r}")
    details = result.find("EvalDecisionDetails")
    sides = {
        text(e, "key") or "?": text(e, "value") or "?"
        for e in (details.findall("entry") if details is not None else [])
    }
    cross = [f"{k}: {v}" for k, v in sides.items()]
    what = f"{principal} for {action} on {resource}"
    notes = []
    if orgs == "false":
        notes.append("an Organizations SCP does not allow it")
    if boundary == "false":
        notes.append("the permissions boundary does not allow it")
    if matched:
        notes.append(f"matched {', '.join(matched)}")
    if cross:
        notes.append(f"cross-account: {'; '.join(cross)}")
    tail = f" ({'; '.join(notes)})" if notes else ""
    if verdict == "explicitDeny":
        return Decision.deny(f"IAM explicitly denies {what}{tail}")
    if missing:
        keys = ", ".join(sorted(missing))
        return Decision.unknown(
            f"IAM's decision for {what} depends on context the connection does not give "
            f"({keys}); set them in the connection's context{tail}"
        )
    if verdict == "allowed":
        if orgs == "false" or boundary == "false":
            return Decision.deny(f"IAM does not allow {what}{tail}")
        if cover.allow_gap:
            return Decision.unknown(f"IAM's policies allow {what}, but {cover.allow_gap}{tail}")
        if cover.needs_grant and "resource" not in kinds:
            return Decision.unknown(
                f"IAM's policies allow {what}, but only the {cover.needs_grant} can grant it "
                f"and none of its statements does (toolpass does not read KMS grants){tail}"
            )
        if cover.cross_account and (not sides or set(sides.values()) != {"allowed"}):
            return Decision.unknown(
                f"{what} crosses accounts, and IAM's simulation does not show both the "
                f"identity's and the resource's account allowing it{tail}"
            )
        return Decision.allow(f"IAM allows {what}{tail}")
    if orgs == "false":
        return Decision.deny(f"IAM denies {what}{tail}")
    if cover.implicit_gap:
        return Decision.unknown(
            f"no IAM policy of {principal} allows {action} on {resource} (implicit deny), "
            f"but {cover.implicit_gap}{tail}"
        )
    if implicit_deny == "unknown":
        return Decision.unknown(
            f"no policy allows {what} (implicit deny; implicit_deny: unknown){tail}"
        )
    return Decision.deny(f"no IAM policy allows {what} (implicit deny){tail}")


def _statements(result: ET.Element) -> list[str]:
    found = []
    for statement in members(result, "MatchedStatements"):
        policy = text(statement, "SourcePolicyId") or "?"
        kind = text(statement, "SourcePolicyType")
        found.append(f"{policy} ({kind})" if kind else policy)
    return found


def _statement_kinds(result: ET.Element) -> set[str]:
    return {
        text(statement, "SourcePolicyType") or ""
        for statement in members(result, "MatchedStatements")
    }


def context_entries(raw: object) -> list[tuple[str, str, list[str]]]:
    """The ``context`` key as (name, type, values); :class:`ConfigError` when malformed."""
    if not isinstance(raw, Mapping):
        raise ConfigError("must map condition keys to values", "context")
    entries = []
    for key, spec in raw.items():
        if not isinstance(key, str) or not 5 <= len(key) <= 256 or not _CONTEXT_KEY.fullmatch(key):
            raise ConfigError(f"{key!r} is not a condition key (service:Name)", "context")
        kind: str | None = None
        values: object = spec
        if isinstance(spec, Mapping):
            kind, values = spec.get("type"), spec.get("values", spec.get("value"))
            if kind not in _CONTEXT_TYPES:
                raise ConfigError(
                    f"{key}: type must be one of {', '.join(_CONTEXT_TYPES)}", "context"
                )
        items = list(values) if isinstance(values, (list, tuple)) else [values]
        if not items or not all(isinstance(v, (str, bool, int, float)) and v != "" for v in items):
            raise ConfigError(f"{key}: values must be strings, numbers or booleans", "context")
        if kind is None:
            first = items[0]
            if isinstance(first, bool):
                kind = "boolean"
            elif isinstance(first, (int, float)):
                kind = "numeric"
            else:
                kind = _KNOWN_CONTEXT_TYPES.get(key.lower(), "string")
            if isinstance(values, (list, tuple)):
                kind += "List"
        texts = [str(v).lower() if isinstance(v, bool) else str(v) for v in items]
        entries.append((key, kind, texts))
    return entries
