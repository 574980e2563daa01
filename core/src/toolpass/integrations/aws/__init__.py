"""AWS: IAM policy simulation (``iam:SimulatePrincipalPolicy``) for a user's principal.

The check asks IAM, with the engine's own read-only credential, to simulate one IAM action
(``s3:DeleteObject``) on one resource ARN (``arn:aws:s3:::bucket/key``) for the user's IAM
principal (a user, group or role ARN), with the connection's condition context
(``aws:MultiFactorAuthPresent``, ``aws:SourceIp``, ...):

- ``allowed`` with no missing context value -> allow;
- ``explicitDeny`` -> deny (an explicit deny stands whatever the missing context);
- ``implicitDeny`` (no statement allows it) -> deny by default; ``implicit_deny: unknown``
  makes it unknown; an Organizations SCP that does not allow the action is a deny in every
  setting;
- resource-based policies (``_aws_resource_policies``): the policy the resource carries
  (S3 bucket, KMS key, SQS queue, SNS topic, Lambda function, Secrets Manager secret, ECR
  repository, DynamoDB table, a role's trust policy) is read with the service's own API and
  passed to the simulation (``ResourcePolicy``, ``ResourceOwner``). IAM simulates a
  resource policy only for an IAM user, so for a role or group principal the identity
  simulation stands alone only where the policy cannot change it (same account, no Deny
  statement, and, for a key or trust policy, delegation to the account's IAM policies);
  otherwise, or when the policy cannot be read, nothing but an explicit deny is answered
  (unknown). Across accounts both sides must allow. A resource without a policy
  (``NoSuchBucketPolicy``) has none;
- ``s3:PutObject`` into a bucket whose default encryption is a customer managed KMS key
  (``GetBucketEncryption``) is checked as ``kms:GenerateDataKey`` on that key too;
- a decision that depends on context values the connection does not supply
  (``MissingContextValues``) -> unknown;
- ``NoSuchEntity`` (the principal does not exist), ``AccessDenied``, ``Throttling``, a 5xx,
  a malformed answer or an expired credential -> unknown.

The engine authenticates with SigV4 (``_sigv4.py``, on hashlib/hmac), from static keys, the
ambient chain (environment, web identity, container credentials, IMDSv2) and optionally an
assumed read-only role (STS ``AssumeRole`` with an ExternalId; credentials are cached and
refreshed before they expire). Partitions ``aws``, ``aws-us-gov`` and ``aws-cn`` choose the
IAM and STS endpoints; ``url``, ``sts_url``, ``identitystore_url`` and ``sso_admin_url``
override them.

Identity: an email becomes an IAM principal ARN by a template
(``arn:aws:iam::123456789012:role/{local}``), a mapping, a file, a service, a callable, or
``identity_center``: IAM Identity Center's ``GetUserId`` (exact email or user name), the
user's account assignments (directly and through groups) in ``account_id``, and the role
each permission set materialises as (``AWSReservedSSO_<name>_<hex>``). A user with several
permission sets in the account is ambiguous unless ``sso_permission_set`` names one.

The request hook: the connection serves every endpoint of its partition, and
``match_request`` places any request to any AWS service on its IAM action and resource ARN
with the table generated from botocore's service models (``aws/generate.py``,
``_aws_routes``). Resources that need the account id (DynamoDB tables, Lambda functions,
...) are built with ``account_id``; where the request names no resource the table says
``*``, which this check refuses unless ``allow_wildcard_resource`` is on, so a write whose
resource is unknown never passes silently. An S3 copy (``x-amz-copy-source``) is placed only
when it copies the destination onto itself (it reads a second object otherwise); a Lambda
request's ``?Qualifier=`` is part of the function ARN it acts on.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from toolpass.integrations.aws import _resource_policies as policies
from toolpass.integrations.aws import _routes as _aws_routes
from toolpass.integrations.aws._sigv4 import Credentials, form, sign_v4
from toolpass.integrations.base import (
    REDACTED,
    Action,
    ConfigKey,
    ConnectionConfig,
    Decision,
    Effect,
    Integration,
    MalformedResponse,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import Match, Request
from toolpass.wire import budget
from toolpass.wire.errors import ConfigError, LookupFailed
from toolpass.wire.http import NetOptions, Response, check_url, is_loopback

__all__ = ["AWS", "INTEGRATION", "Credentials", "sign_v4"]

IAM_VERSION = "2010-05-08"
STS_VERSION = "2011-06-15"
_FORM = "application/x-www-form-urlencoded; charset=utf-8"
_JSON11 = "application/x-amz-json-1.1"


@dataclass(frozen=True)
class _Partition:
    iam_host: str
    iam_region: str
    default_region: str
    suffix: str


PARTITIONS: dict[str, _Partition] = {
    "aws": _Partition("iam.amazonaws.com", "us-east-1", "us-east-1", "amazonaws.com"),
    "aws-us-gov": _Partition(
        "iam.us-gov.amazonaws.com", "us-gov-west-1", "us-gov-west-1", "amazonaws.com"
    ),
    "aws-cn": _Partition(
        "iam.cn-north-1.amazonaws.com.cn", "cn-north-1", "cn-north-1", "amazonaws.com.cn"
    ),
}

_ACTION = re.compile(r"[a-z0-9][a-z0-9-]{0,39}:[A-Za-z][A-Za-z0-9]{0,127}")
_ARN = re.compile(r"arn:(aws|aws-us-gov|aws-cn):([a-z0-9-]+):([a-z0-9-]*):(\d{12}|aws|):(.+)")
_PRINCIPAL = re.compile(
    r"arn:(aws|aws-us-gov|aws-cn):iam::(\d{12}):(user|role|group)/([\w+=,.@/-]{1,512})"
)
_FUNCTION = re.compile(r"arn:[a-z-]+:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_.-]+(?::[^:]+)?")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d{1,2}")
_ACCOUNT = re.compile(r"\d{12}")
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
_AMBIENT = ("env", "web_identity", "container", "imds")
_DECISIONS = ("allowed", "explicitDeny", "implicitDeny")
#: Which of two answers for one resource stands: the lower (an unknown one lowest of all).
_STRICTNESS = {"explicitDeny": 0, "implicitDeny": 1, "allowed": 2}
_READ_VERBS = (
    "Get",
    "List",
    "Describe",
    "Head",
    "Search",
    "Select",
    "Query",
    "Scan",
    "BatchGet",
    "Lookup",
    "View",
    "Read",
    "Check",
    "Validate",
    "Preview",
    "Filter",
    "Simulate",
)
_DESTRUCTIVE_VERBS = (
    "Delete",
    "Terminate",
    "Remove",
    "Purge",
    "Destroy",
    "Deregister",
    "Revoke",
    "Detach",
    "Disable",
    "Drop",
    "BatchDelete",
)
_CONTAINER_HOSTS = ("169.254.170.2", "169.254.170.23", "[fd00:ec2::23]", "fd00:ec2::23")
_IMDS = "http://169.254.169.254"


# --- XML --------------------------------------------------------------------------------


_SERVICES = {"iam": "IAM", "sts": "STS", "identitystore": "Identity Store", "sso": "SSO Admin"}
# What AWS's error codes say (NoSuchEntity names the principal); others by their status.
_ERRORS = {
    "AccessDenied": "refused the engine's credential",
    "AccessDeniedException": "refused the engine's credential",
    "Throttling": "rate-limited the engine",
    "ThrottlingException": "rate-limited the engine",
    "RequestLimitExceeded": "rate-limited the engine",
    "InvalidClientTokenId": "does not know the engine's access key",
    "UnrecognizedClientException": "does not know the engine's access key",
    "SignatureDoesNotMatch": "rejected the engine's signature",
    "ExpiredToken": "says the engine's credential has expired",
    "ExpiredTokenException": "says the engine's credential has expired",
    "InvalidInput": "rejected the request as invalid",
    "ServiceFailure": "failed",
}


def _xml(body: bytes, label: str) -> ET.Element:
    """The XML of an answer, namespaces dropped; :class:`MalformedResponse` when it is not
    XML, or declares a DTD."""
    if b"<!DOCTYPE" in body or b"<!ENTITY" in body:
        raise MalformedResponse(f"{label}'s answer is not an AWS XML document (it declares a DTD)")
    try:
        root = ET.fromstring(body)  # noqa: S314 - DTDs are refused above
    except ET.ParseError:
        raise MalformedResponse(f"{label} answered with a body that is not XML") from None
    for element in root.iter():
        if isinstance(element.tag, str) and "}" in element.tag:
            element.tag = element.tag.rpartition("}")[2]
    return root


def _text(element: ET.Element | None, path: str) -> str | None:
    found = element.find(path) if element is not None else None
    return None if found is None or found.text is None else found.text.strip()


def _members(element: ET.Element | None, path: str) -> list[ET.Element]:
    return [] if element is None else element.findall(f"{path}/member")


def _expiry(value: object) -> float:
    """Seconds since the epoch for an ISO 8601 time (``2030-01-01T00:00:00Z``)."""
    if not isinstance(value, str):
        raise LookupFailed("the credentials carry no expiration time")
    match = re.fullmatch(
        r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?(Z|[+-]\d\d:?\d\d)?", value.strip()
    )
    if not match:
        raise LookupFailed(f"the credentials' expiration {value[:40]!r} is not a time")
    y, mo, d, h, mi, s = (int(g) for g in match.groups()[:6])
    zone = match.group(7) or "Z"
    offset = 0 if zone == "Z" else int(zone[0] + "1") * (int(zone[1:3]) * 60 + int(zone[-2:]))
    moment = datetime.datetime(y, mo, d, h, mi, s, tzinfo=datetime.timezone.utc)
    return moment.timestamp() - offset * 60


# --- the integration --------------------------------------------------------------------


class AWS(Integration):
    """AWS IAM, through the policy simulator. See the module docstring."""

    name = "aws"
    description = (
        "AWS IAM: simulates the user's IAM principal (user, group or role) for an IAM action "
        "on a resource ARN with iam:SimulatePrincipalPolicy."
    )
    default_url = "https://iam.amazonaws.com"
    identity_modes = ("identity_center",)
    keys = (
        ConfigKey(
            "partition",
            "The AWS partition; chooses the IAM and STS endpoints (url and sts_url override).",
            default="aws",
            choices=tuple(PARTITIONS),
        ),
        ConfigKey(
            "region",
            "Region of STS and IAM Identity Center (default: us-east-1, us-gov-west-1 or "
            "cn-north-1 by partition).",
        ),
        ConfigKey("sts_url", "The STS endpoint (default: https://sts.<region>.<suffix>)."),
        ConfigKey(
            "credentials",
            "Where the engine's credential comes from: the ambient chain (environment, web "
            "identity, container, instance metadata) or static keys.",
            default="ambient",
            choices=("ambient", "static"),
        ),
        ConfigKey("access_key_id", "Static access key id (credentials: static).", secret=True),
        ConfigKey("secret_access_key", "Static secret access key.", secret=True),
        ConfigKey("session_token", "Session token of temporary static keys.", secret=True),
        ConfigKey(
            "ambient_sources",
            "The ambient sources tried in order: env, web_identity, container, imds.",
            default=list(_AMBIENT),
        ),
        ConfigKey(
            "role_arn",
            "A read-only role to assume (STS AssumeRole) with the base credential; needs "
            "iam:SimulatePrincipalPolicy (and, for identity_center, iam:ListRoles, "
            "identitystore:GetUserId, identitystore:ListGroupMembershipsForMember, "
            "sso:ListAccountAssignmentsForPrincipal, sso:DescribePermissionSet).",
        ),
        ConfigKey("external_id", "The ExternalId the role's trust policy requires."),
        ConfigKey("role_session_name", "The assumed role's session name.", default="toolpass"),
        ConfigKey("role_duration_seconds", "Lifetime asked for assumed credentials.", default=3600),
        ConfigKey(
            "credential_refresh_seconds",
            "Temporary credentials are refreshed this many seconds before they expire.",
            default=300.0,
        ),
        ConfigKey(
            "context",
            "Condition context for the simulation: {key: value} or {key: {type, values}}, "
            "e.g. aws:MultiFactorAuthPresent: true, aws:SourceIp: 203.0.113.7.",
            default={},
        ),
        ConfigKey(
            "implicit_deny",
            "What an implicit deny (no statement allows it) means: deny; unknown; or auto "
            "(the same as deny now that resource policies are read: a check whose resource "
            "policy cannot be read is unknown in every setting).",
            default="deny",
            choices=("deny", "unknown", "auto"),
        ),
        ConfigKey(
            "allow_wildcard_resource",
            "Allow '*' (and wildcards inside ARNs) as the resource; off: such checks are unknown.",
            default=False,
        ),
        ConfigKey(
            "caller_arn",
            "An IAM user ARN to simulate as the caller (CallerArn) of identity-only "
            "simulations; a simulation with a resource policy is always the user's own.",
        ),
        ConfigKey("max_pages", "Most result pages followed for one request.", default=20),
        ConfigKey("identity_store_id", "IAM Identity Center identity store id (d-...)."),
        ConfigKey(
            "identity_center_attribute",
            "The unique Identity Center attribute the email is matched against.",
            default="emails.value",
            choices=("emails.value", "userName"),
        ),
        ConfigKey("sso_instance_arn", "IAM Identity Center instance ARN (identity_center)."),
        ConfigKey("account_id", "The AWS account whose permission-set roles are simulated."),
        ConfigKey(
            "sso_permission_set",
            "The permission set (by name) users act through; without it a user with several "
            "permission sets in the account is ambiguous (unknown).",
        ),
        ConfigKey(
            "endpoint_urls",
            "Endpoints for reading resource policies, by service ({s3: https://..., kms: ...}; "
            "'default' for every service): VPC endpoints, or a local test stack. Default: "
            "https://<service>.<region>.<suffix>.",
            default={},
        ),
        ConfigKey("identitystore_url", "The Identity Store endpoint (default by region)."),
        ConfigKey("sso_admin_url", "The SSO Admin endpoint (default by region)."),
    )
    actions = load_actions(__name__)

    # --- declaration --------------------------------------------------------------------
    @classmethod
    def action(cls, name: str) -> Action | None:
        """A declared action, or any well-formed IAM action ``service:Operation`` (the set of
        IAM actions is open); its effect is read from the operation's verb."""
        declared = super().action(name)
        if declared is not None or not isinstance(name, str) or not _ACTION.fullmatch(name):
            return declared
        operation = name.partition(":")[2]
        effect: Effect = "write"
        if operation.startswith(_DESTRUCTIVE_VERBS):
            effect = "destructive"
        elif operation.startswith(_READ_VERBS):
            effect = "read"
        return Action(name, f"The IAM action {name}.", effect, f"{name} on the resource ARN")

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        if options["credentials"] == "static":
            for key in ("access_key_id", "secret_access_key"):
                if options.get(key) is None:
                    raise ConfigError("credentials: static needs this key", key)
        for key in ("sts_url", "identitystore_url", "sso_admin_url"):
            if options.get(key) is not None:
                check_url(options[key], key)
        region = options.get("region")
        if region is not None and not _REGION.fullmatch(region):
            raise ConfigError("must be a region name such as eu-west-1", "region")
        role = options.get("role_arn")
        if role is not None and not _PRINCIPAL.fullmatch(role):
            raise ConfigError("must be a role ARN (arn:aws:iam::<account>:role/<name>)", "role_arn")
        if role is not None and ":role/" not in role:
            raise ConfigError("must be a role ARN", "role_arn")
        if not 900 <= options["role_duration_seconds"] <= 43200:
            raise ConfigError("must be between 900 and 43200 seconds", "role_duration_seconds")
        if options["credential_refresh_seconds"] < 0:
            raise ConfigError("must be 0 or more seconds", "credential_refresh_seconds")
        if not re.fullmatch(r"[\w+=,.@-]{2,64}", options["role_session_name"]):
            raise ConfigError("2-64 letters, digits or +=,.@_-", "role_session_name")
        sources = options["ambient_sources"]
        if not sources or any(s not in _AMBIENT for s in sources):
            raise ConfigError(f"a list of {', '.join(_AMBIENT)}", "ambient_sources")
        if options["max_pages"] < 1:
            raise ConfigError("must be 1 or more", "max_pages")
        account = options.get("account_id")
        if account is not None and not _ACCOUNT.fullmatch(account):
            raise ConfigError("must be a 12-digit account id", "account_id")
        caller = options.get("caller_arn")
        if caller is not None and (not _PRINCIPAL.fullmatch(caller) or ":user/" not in caller):
            raise ConfigError("must be an IAM user ARN (IAM accepts only users)", "caller_arn")
        _context_entries(options["context"])
        urls = options["endpoint_urls"]
        if not isinstance(urls, Mapping):
            raise ConfigError("must map service names to URLs", "endpoint_urls")
        for service, url in urls.items():
            check_url(url, f"endpoint_urls.{service}")

    def __init__(self, config: ConnectionConfig, http: Any = None) -> None:
        super().__init__(config, http)
        o = self.options
        self.partition: str = o["partition"]
        part = PARTITIONS[self.partition]
        self.region: str = o.get("region") or part.default_region
        # The default URL is aws's IAM endpoint: another partition means its own.
        self.iam_url = f"https://{part.iam_host}" if config.url == self.default_url else config.url
        self.sts_url: str = o.get("sts_url") or f"https://sts.{self.region}.{part.suffix}"
        self.identitystore_url: str = (
            o.get("identitystore_url") or f"https://identitystore.{self.region}.{part.suffix}"
        )
        self.sso_admin_url: str = (
            o.get("sso_admin_url") or f"https://sso.{self.region}.{part.suffix}"
        )
        self.context = _context_entries(o["context"])
        self._lock = threading.Lock()
        self._refresh = threading.Lock()
        self._base: Credentials | None = None
        self._assumed: Credentials | None = None

    # --- the request hook ---------------------------------------------------------------
    def serves(self, scheme: str, host: str, port: int) -> bool:
        """Every endpoint of the connection's partition (``*.amazonaws.com``, and
        ``*.api.aws`` in ``aws``), over HTTPS or HTTP (S3 answers both), on any port; and
        S3 virtual-hosted buckets on the connection's own host (``<bucket>.<host>``)."""
        suffixes = {
            "aws": (".amazonaws.com", ".api.aws"),
            "aws-us-gov": (".amazonaws.com", ".api.aws"),
            "aws-cn": (".amazonaws.com.cn", ".api.amazonwebservices.com.cn"),
        }[self.partition]
        host = host.lower().rstrip(".")
        if scheme in ("http", "https") and host.endswith(suffixes):
            return True
        own_scheme, own_host, own_port = self._own
        return (scheme, port) == (own_scheme, own_port) and host.endswith("." + own_host)

    def match_request(self, request: Request) -> Match | None:
        """The IAM action and resource ARN of a request to any AWS service: the service from
        the SigV4 credential scope (or the host), the operation by the service's protocol,
        the resource from the request, the connection's partition and ``account_id``
        (resources that need it stay unresolved without it). See ``_aws_routes``.

        The host comes from ``request.host`` or the ``Host`` header; S3 requests need it,
        since a virtual-hosted request carries its bucket there."""
        host = getattr(request, "host", None) or _header_text(request.headers.get("host"))
        account = self.options.get("account_id")
        found = _aws_routes.routes().match(
            request, host or "", self.partition, self.region, account, self._own[1]
        )
        if found is None or found.resource is None:
            return found
        copied = _header_text(request.headers.get("x-amz-copy-source"))
        if copied:
            return _copy(found, copied)
        qualifiers = request.query.get("Qualifier")
        if qualifiers and _FUNCTION.fullmatch(found.resource):
            return _qualified(found, qualifiers)
        return found

    # --- the check ----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        if not _ACTION.fullmatch(action):
            return Decision.unknown(f"{action!r} is not an IAM action (service:Operation)")
        problem = self._resource_problem(resource)
        if problem:
            return Decision.unknown(problem, cause="resource")
        principal = self.user_id(user)
        if not _PRINCIPAL.fullmatch(principal):
            return Decision.unknown(
                f"{user} maps to {principal!r}, which is not an IAM user, group or role ARN",
                cause="identity",
            )
        if principal.split(":")[1] != self.partition:
            return Decision.unknown(f"{principal} is not in the {self.partition} partition")
        first = self._simulate(principal, action, resource, None)
        if isinstance(first, Decision):
            return first
        pending = _Coverage("its resource policy is not read yet", "its policy is not read yet")
        early = self._decide(first, principal, action, resource, pending)
        if early.decision == "deny":  # an explicit deny or an SCP: no resource policy helps
            return early
        try:
            policy = policies.read(self, action, resource, principal.split(":")[4])
            cover = self._coverage(policy, principal, action)
        except LookupFailed as e:  # the simulation lacks the policy: only a deny can stand
            gap = f"the resource's own policy could not be read ({e})"
            policy, cover = None, _Coverage(gap, gap)
        if cover.cross_account_without_policy:
            return Decision.deny(
                f"{resource} belongs to another account and has no resource policy that could "
                f"let {principal} (account {principal.split(':')[4]}) in"
            )
        if cover.simulated and policy is not None:
            first = self._simulate(principal, action, resource, policy)
            if isinstance(first, Decision):
                return first
        decided = self._decide(first, principal, action, resource, cover)
        if decided.decision == "allow" and action.lower() == "s3:putobject":
            return self._bucket_key_allows(user, resource, principal, decided)
        return decided

    def _bucket_key_allows(
        self, user: str, resource: str, principal: str, decided: Decision
    ) -> Decision:
        """S3 refuses an upload to a bucket whose default encryption is a customer managed
        KMS key unless the user may also ``kms:GenerateDataKey`` with that key."""
        bucket = resource.split(":", 5)[5].partition("/")[0]
        key = policies.bucket_key(self, principal.split(":")[4], bucket)
        if key is None:
            return decided
        needed = self.check(user, "kms:GenerateDataKey", key)
        if needed.decision == "allow":
            return decided
        said = f"{bucket} encrypts new objects with the KMS key {key} by default, and "
        if needed.decision == "deny":
            return Decision.deny(said + needed.reason)
        return Decision.unknown(said + needed.reason)

    def _simulate(
        self,
        principal: str,
        action: str,
        resource: str,
        policy: policies.ResourcePolicy | None,
    ) -> ET.Element | Decision:
        """IAM's evaluation result for the one action (with the resource's own policy when
        given), or an unknown decision when the answer holds no single one."""
        params = {
            "Action": "SimulatePrincipalPolicy",
            "Version": IAM_VERSION,
            "PolicySourceArn": principal,
            "ActionNames.member.1": action,
            "ResourceArns.member.1": resource,
        }
        if self.options.get("caller_arn"):
            params["CallerArn"] = self.options["caller_arn"]
        if policy is not None and policy.document is not None:  # for a user only
            params["CallerArn"] = principal  # the policy's Principal is matched against it
            params["ResourcePolicy"] = policy.document
            params["ResourceOwner"] = f"arn:{self.partition}:iam::{policy.account}:root"
        for i, (key, kind, values) in enumerate(self.context, 1):
            params[f"ContextEntries.member.{i}.ContextKeyName"] = key
            params[f"ContextEntries.member.{i}.ContextKeyType"] = kind
            for j, value in enumerate(values, 1):
                params[f"ContextEntries.member.{i}.ContextKeyValues.member.{j}"] = value
        results: list[ET.Element] = []
        for result in self._pages("SimulatePrincipalPolicy", params, principal):
            results.extend(_members(result, "EvaluationResults"))
        mine = [r for r in results if (_text(r, "EvalActionName") or "").lower() == action.lower()]
        if len(mine) != 1:
            return Decision.unknown(
                f"IAM's simulation returned {len(mine)} results for {action}, expected one"
            )
        return mine[0]

    def _coverage(
        self, policy: policies.ResourcePolicy | None, principal: str, action: str
    ) -> _Coverage:
        """What the simulation can and cannot answer, given the resource's own policy."""
        if policy is None:
            return _Coverage()
        account = principal.split(":")[4]
        cross = policy.account != account
        if policy.document is None:
            return _Coverage(cross_account_without_policy=cross)  # nothing to simulate
        policy.statements()  # a policy that is not JSON raises: unread
        if ":user/" in principal:
            delegated = policy.delegates(action, self.partition)
            return _Coverage(  # IAM evaluates the policy for a user: it is passed
                simulated=True,
                cross_account=cross,
                needs_grant=policy.kind if policy.must_grant and not delegated else None,
            )
        why = "IAM's simulator evaluates resource policies only for IAM users, not roles or groups"
        if cross:
            gap = f"the {policy.kind} decides access from account {account}, and {why}"
            return _Coverage(gap, gap)
        if policy.denies_anything():
            gap = f"the {policy.kind} has Deny statements, and {why}"
            return _Coverage(gap, gap)
        if policy.must_grant and not policy.delegates(action, self.partition):
            gap = f"only the {policy.kind} can grant {action}, and {why}"
            return _Coverage(gap, gap)
        if not any(s.get("Effect") == "Allow" for s in policy.statements()):
            return _Coverage()  # no statement at all: the policy changes nothing
        return _Coverage(None, f"the {policy.kind} may grant it on its own, and {why}")

    def _resource_problem(self, resource: str) -> str | None:
        wild = self.options["allow_wildcard_resource"]
        if resource == "*":
            return None if wild else "the resource '*' is refused (allow_wildcard_resource: off)"
        match = _ARN.fullmatch(resource)
        if not match or any(c.isspace() or ord(c) < 32 for c in resource):
            return f"{resource!r} is not an ARN (arn:<partition>:<service>:...)"
        if match.group(1) != self.partition:
            return f"{resource} is not in the {self.partition} partition of this connection"
        if not wild and ("*" in resource or "?" in resource):
            return f"{resource} holds a wildcard (allow_wildcard_resource: off)"
        return None

    def _decide(
        self, result: ET.Element, principal: str, action: str, resource: str, cover: _Coverage
    ) -> Decision:
        verdict = _text(result, "EvalDecision")
        missing = {m.text.strip() for m in _members(result, "MissingContextValues") if m.text}
        boundary = _text(result, "PermissionsBoundaryDecisionDetail/AllowedByPermissionsBoundary")
        orgs = _text(result, "OrganizationsDecisionDetail/AllowedByOrganizations")
        matched = _statements(result)
        kinds = _statement_kinds(result)
        answers: list[str | None] = []
        for specific in _members(result, "ResourceSpecificResults"):
            if _text(specific, "EvalResourceName") == resource:
                answers.append(_text(specific, "EvalResourceDecision") or verdict)
                missing |= {
                    m.text.strip() for m in _members(specific, "MissingContextValues") if m.text
                }
                boundary = (
                    _text(
                        specific, "PermissionsBoundaryDecisionDetail/AllowedByPermissionsBoundary"
                    )
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
            _text(e, "key") or "?": _text(e, "value") or "?"
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
        if self.options["implicit_deny"] == "unknown":
            return Decision.unknown(
                f"no policy allows {what} (implicit deny; implicit_deny: unknown){tail}"
            )
        return Decision.deny(f"no IAM policy allows {what} (implicit deny){tail}")

    def _pages(
        self, operation: str, params: Mapping[str, str], subject: str
    ) -> Iterator[ET.Element]:
        """Every ``<OperationResult>`` of a paginated IAM Query call (``Marker``)."""

        def page(marker: str | None) -> tuple[list[ET.Element], str | None]:
            asked = {**params, "Marker": marker} if marker else params
            root = self._query(self.iam_url, "iam", self._iam_region(), asked, subject)
            result = root.find(f"{operation}Result")
            if result is None:
                raise LookupFailed(f"IAM's {operation} answer has no {operation}Result")
            if _text(result, "IsTruncated") != "true":
                return [result], None
            marker = _text(result, "Marker")
            if not marker:
                raise LookupFailed(f"IAM's {operation} answer is truncated without a Marker")
            return [result], marker

        limit = self.options["max_pages"]
        too_many = f"IAM's {operation} answer has more than {limit} pages"
        return self.pages(page, limit=limit, too_many=too_many)

    def _iam_region(self) -> str:
        return PARTITIONS[self.partition].iam_region

    # --- reading resource policies (for ``_aws_resource_policies``) ------------------------
    def endpoint(self, service: str, region: str) -> str:
        """The URL of ``service`` in ``region`` (``endpoint_urls`` overrides it)."""
        urls = self.options["endpoint_urls"]
        found = urls.get(service) or urls.get("default")
        if found:
            return str(found).rstrip("/")
        return f"https://{service}.{region}.{PARTITIONS[self.partition].suffix}"

    def signed(
        self,
        method: str,
        url: str,
        service: str,
        region: str,
        headers: Mapping[str, str],
        body: bytes,
        what: str,
    ) -> Response:
        """One SigV4-signed request with the engine's credential, to ``what``."""
        creds = self.credentials()
        signed = sign_v4(method, url, headers, body, creds, region, service)
        try:
            return self.answer(method, url, what=what, headers=signed, body=body)
        except LookupFailed as e:
            raise LookupFailed(_without(str(e), creds)) from None

    def error_code(self, answer: Response) -> str:
        """AWS's error code in a failed answer (JSON, or Query and S3 XML), or ""."""
        code = answer.header("x-amzn-errortype") or answer.header("x-amzn-query-error") or ""
        if not code:
            with contextlib.suppress(LookupFailed):
                data = answer.json()
                if isinstance(data, dict):
                    code = str(data.get("__type") or data.get("code") or "")
        if not code:
            with contextlib.suppress(LookupFailed):
                root = _xml(answer.body, "AWS")
                code = _text(root, "Code") or _text(root, "Error/Code") or ""
        return code.partition(":")[0].partition(";")[0].rpartition("#")[2]

    def resource_failure(self, answer: Response, what: str, code: str) -> LookupFailed:
        """Why reading a resource policy failed (the engine's secrets never in it)."""
        if not code:
            return LookupFailed(self.redact(str(self.failure(answer, what))))
        text = _ERRORS.get(code) or ("failed" if answer.status >= 500 else "refused")
        return LookupFailed(self.redact(f"AWS {text} (HTTP {answer.status} {code}) to {what}"))

    def json_call(
        self,
        service: str,
        region: str,
        target: str,
        payload: Mapping[str, Any],
        *,
        version: str = "1.1",
    ) -> Any:
        """A JSON-protocol call's answer; None when AWS says there is no such policy or
        resource (``_aws_resource_policies.ABSENT``)."""
        operation = target.rpartition(".")[2]
        what = f"run {service} {operation} for the resource's policy"
        headers = {"Content-Type": f"application/x-amz-json-{version}", "X-Amz-Target": target}
        url = self.endpoint(service, region) + "/"
        answer = self.signed(
            "POST", url, service, region, headers, json.dumps(payload).encode(), what
        )
        if answer.status == 200:
            return self.parse(answer, what)
        code = self.error_code(answer)
        if code in policies.ABSENT:
            return None
        raise self.resource_failure(answer, what, code)

    def query_attribute(
        self, service: str, region: str, params: Mapping[str, str], name: str
    ) -> str | None:
        """The attribute ``name`` of a Query-protocol ``Get*Attributes`` answer (None when
        it or the resource is absent)."""
        url = self.endpoint(service, region) + "/"
        what = f"run {service} {params['Action']} for the resource's policy"
        root = self._policy_query(url, service, region, params, what)
        for entry in root.iter("entry") if root is not None else ():
            if _text(entry, "key") == name:
                return _text(entry, "value") or None
        return None

    def role_trust_policy(self, role: str) -> str | None:
        """The trust policy of the IAM role named ``role`` (IAM ``GetRole``)."""
        params = {"Action": "GetRole", "Version": IAM_VERSION, "RoleName": role}
        what = f"run IAM GetRole for the trust policy of {role}"
        root = self._policy_query(self.iam_url + "/", "iam", self._iam_region(), params, what)
        document = _text(root, "GetRoleResult/Role/AssumeRolePolicyDocument")
        return unquote(document) if document else None

    def _policy_query(
        self, url: str, service: str, region: str, params: Mapping[str, str], what: str
    ) -> ET.Element | None:
        headers = {"Content-Type": _FORM, "Accept": "text/xml"}
        answer = self.signed("POST", url, service, region, headers, form(params), what)
        if answer.status == 200:
            return _xml(answer.body, what)
        code = self.error_code(answer)
        if code in policies.ABSENT:
            return None
        raise self.resource_failure(answer, what, code)

    # --- signed requests: the kit's wire, AWS's own error codes -----------------------------
    def _query(
        self,
        url: str,
        service: str,
        region: str,
        params: Mapping[str, str],
        subject: str,
        *,
        credentials: Credentials | None = None,
        signed: bool = True,
    ) -> ET.Element:
        """A Query API call (IAM, STS): the ``<ActionResponse>`` element of the answer."""
        operation = params.get("Action", "")
        label = f"{_SERVICES[service]} {operation}"
        body = form(params)
        headers = {"Content-Type": _FORM, "Accept": "text/xml"}
        creds = credentials
        if signed:
            creds = creds or self.credentials()
            headers = sign_v4("POST", url + "/", headers, body, creds, region, service)
        answer = self._send(url, headers, body, label, subject)
        root: ET.Element | None = None
        if answer.status == 200:
            root = _xml(answer.body, label)
            if root.tag == f"{operation}Response":
                return root
            if root.tag != "ErrorResponse":
                raise MalformedResponse(
                    f"{label}'s answer is not XML from AWS (<{root.tag}>, not "
                    f"<{operation}Response>)"
                )
        else:
            with contextlib.suppress(LookupFailed):
                root = _xml(answer.body, label)
        code, message = _text(root, "Error/Code") or "", _text(root, "Error/Message") or ""
        raise self._failure(answer, label, subject, creds, code, message)

    def _json(
        self, url: str, service: str, target: str, payload: Mapping[str, Any], subject: str
    ) -> Any:
        """A JSON 1.1 call (Identity Store, SSO Admin): the JSON object of the answer."""
        label = f"{_SERVICES[service]} {target.rpartition('.')[2]}"
        body = json.dumps(payload).encode()
        creds = self.credentials()
        headers = {"Content-Type": _JSON11, "X-Amz-Target": target}
        headers = sign_v4("POST", url + "/", headers, body, creds, self.region, service)
        answer = self._send(url, headers, body, label, subject)
        if answer.status != 200:
            code, message = answer.header("x-amzn-errortype") or "", ""
            try:
                data = answer.json()
            except LookupFailed:
                data = None
            if isinstance(data, dict):
                code = code or str(data.get("__type") or data.get("code") or "")
                message = str(data.get("Message") or data.get("message") or "")
            code = code.partition(":")[0].rpartition("#")[2]
            if code == "ResourceNotFoundException":
                raise _NotFound(self.redact(message))
            raise self._failure(answer, label, subject, creds, code, message)
        return self.parse(answer, f"{label} for {subject}")

    def _send(
        self, url: str, headers: Mapping[str, str], body: bytes, label: str, subject: str
    ) -> Response:
        what = f"run {label} for {subject}"
        return self.answer("POST", url + "/", what=what, headers=headers, body=body)

    def _failure(
        self,
        answer: Response,
        label: str,
        subject: str,
        creds: Credentials | None,
        code: str,
        message: str,
    ) -> LookupFailed:
        """What AWS's error ``code`` says; the kit's reading of the status for an answer
        that carries none (a proxy's 502, a redirect)."""
        if not code:
            return LookupFailed(
                _without(str(self.failure(answer, f"run {label} for {subject}")), creds)
            )
        self._forget(code, creds)
        text = _ERRORS.get(code)
        if text is None:
            text = "failed" if answer.status >= 500 else "gave an unexpected answer"
        if code == "NoSuchEntity":
            text = f"{subject} does not exist in IAM"
        if answer.status == 429 or (answer.status == 400 and "Throttl" in code):
            after = answer.header("retry-after")
            text += f" (retry after {after}s)" if after else ""
        detail = f": {message[:200]}" if message else ""
        reason = f"{label} {text} (HTTP {answer.status} {code}) for {subject}{detail}"
        return LookupFailed(_without(self.redact(reason), creds))

    def secret_values(self) -> Iterator[str]:
        """The connection's secrets and the credentials in use (static, ambient or assumed):
        their secret keys and session tokens."""
        yield from super().secret_values()
        for creds in (self._base, self._assumed):
            if creds is not None:
                yield creds.secret_access_key
                if creds.session_token:
                    yield creds.session_token

    def _forget(self, code: str, creds: Credentials | None) -> None:
        """Drop cached temporary credentials AWS no longer accepts."""
        if code in ("ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId"):
            with self._lock:
                if creds is not None and creds in (self._assumed, self._base):
                    self._assumed = None
                    if self._base is not None and self._base.expires is not None:
                        self._base = None

    # --- credentials --------------------------------------------------------------------
    def credentials(self) -> Credentials:
        """The engine's credential for IAM: the base one, or the assumed role's."""
        margin = float(self.options["credential_refresh_seconds"])
        role = self.options.get("role_arn")
        if not role:
            return self._base_credentials(margin)
        with self._lock:
            assumed = self._assumed
        if assumed is not None and assumed.fresh(margin):
            return assumed
        with self._refresh:  # one refresh at a time; the others use its result
            with self._lock:
                assumed = self._assumed
            if assumed is not None and assumed.fresh(margin):
                return assumed
            assumed = self._assume_role(self._base_credentials(margin), role)
            with self._lock:
                self._assumed = assumed
            return assumed

    def _base_credentials(self, margin: float) -> Credentials:
        if self.options["credentials"] == "static":
            token = self.options.get("session_token")
            return Credentials(
                self.secret("access_key_id"),
                self.secret("secret_access_key"),
                self.secret("session_token") if token is not None else None,
                source="static",
            )
        with self._lock:
            base = self._base
        if base is not None and base.fresh(margin):
            return base
        base = self._ambient()
        if base.expires is not None:  # temporary: keep until shortly before expiry
            with self._lock:
                self._base = base
        return base

    def _ambient(self) -> Credentials:
        tried = []
        for source in self.options["ambient_sources"]:
            found: Credentials | None
            if source == "env":
                found = _from_env()
            elif source == "web_identity":
                found = self._web_identity()
            elif source == "container":
                found = self._container()
            else:
                found = self._imds()
            if found is not None:
                return found
            tried.append(source)
        raise LookupFailed(f"no AWS credentials found (tried {', '.join(tried)})")

    def _assume_role(self, base: Credentials, role: str) -> Credentials:
        params = {
            "Action": "AssumeRole",
            "Version": STS_VERSION,
            "RoleArn": role,
            "RoleSessionName": self.options["role_session_name"],
            "DurationSeconds": str(self.options["role_duration_seconds"]),
        }
        if self.options.get("external_id"):
            params["ExternalId"] = self.options["external_id"]
        root = self._query(self.sts_url, "sts", self.region, params, role, credentials=base)
        return _sts_credentials(root, "AssumeRole", f"assumed {role}")

    def _web_identity(self) -> Credentials | None:
        token_file = os.environ.get("AWS_WEB_IDENTITY_TOKEN_FILE")
        role = os.environ.get("AWS_ROLE_ARN")
        if not token_file or not role:
            return None
        try:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            raise LookupFailed(f"cannot read AWS_WEB_IDENTITY_TOKEN_FILE ({e.strerror})")
        params = {
            "Action": "AssumeRoleWithWebIdentity",
            "Version": STS_VERSION,
            "RoleArn": role,
            "RoleSessionName": os.environ.get("AWS_ROLE_SESSION_NAME")
            or self.options["role_session_name"],
            "WebIdentityToken": token,
        }
        root = self._query(self.sts_url, "sts", self.region, params, role, signed=False)
        return _sts_credentials(root, "AssumeRoleWithWebIdentity", f"web identity {role}")

    def _container(self) -> Credentials | None:
        full = os.environ.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        relative = os.environ.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        if relative:
            url = f"http://169.254.170.2{relative}"
        elif full:
            parts = urlsplit(full)
            host = parts.hostname or ""
            if parts.scheme != "https" and not (
                parts.scheme == "http" and (is_loopback(host) or host in _CONTAINER_HOSTS)
            ):
                raise LookupFailed(
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https or a loopback or "
                    "container-agent address"
                )
            url = full
        else:
            return None
        headers = {}
        token = os.environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN")
        token_file = os.environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
        if token_file:
            try:
                with open(token_file, encoding="utf-8") as f:
                    token = f.read().strip()
            except OSError as e:
                raise LookupFailed(f"cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE ({e})")
        if token:
            if any(c in token for c in "\r\n"):
                raise LookupFailed("the container authorization token holds a line break")
            headers["Authorization"] = token
        answer = self._plain("GET", url, headers)
        if answer.status != 200:
            raise LookupFailed(f"the container credentials endpoint answered HTTP {answer.status}")
        return _json_credentials(answer.json(), "container")

    def _imds(self) -> Credentials | None:
        if os.environ.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true":
            return None
        base = os.environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT", _IMDS).rstrip("/")
        answer = self._plain(
            "PUT", f"{base}/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "21600"}
        )
        if answer.status != 200 or not answer.body:
            raise LookupFailed(f"instance metadata refused a session token (HTTP {answer.status})")
        session = {"X-aws-ec2-metadata-token": answer.body.decode("ascii", "replace").strip()}
        path = f"{base}/latest/meta-data/iam/security-credentials/"
        answer = self._plain("GET", path, session)
        if answer.status == 404:
            return None
        if answer.status != 200:
            raise LookupFailed(f"instance metadata answered HTTP {answer.status}")
        roles = answer.body.decode("utf-8", "replace").split()
        if len(roles) != 1:
            raise LookupFailed(f"instance metadata lists {len(roles)} roles, expected one")
        answer = self._plain("GET", path + quote(roles[0], safe=""), session)
        if answer.status != 200:
            raise LookupFailed(f"instance metadata answered HTTP {answer.status} for the role")
        return _json_credentials(answer.json(), "instance metadata")

    def _plain(self, method: str, url: str, headers: Mapping[str, str]) -> Response:
        """A request to a local credential endpoint: never proxied, short timeout."""
        timeout = min(2.0, budget.remaining(self.config.timeout))
        return self.http.request(
            method, url, headers=headers, timeout=timeout, options=NetOptions()
        )

    # --- identity -----------------------------------------------------------------------
    def lookup_identity_center(self, email: str) -> Sequence[str]:
        """The role ARNs of ``email``'s permission sets in the account (IAM Identity Center)."""
        o = self.options
        for key in ("identity_store_id", "sso_instance_arn", "account_id"):
            if not o.get(key):
                raise LookupFailed(f"identity mode identity_center needs the key {key}")
        store, instance, account = o["identity_store_id"], o["sso_instance_arn"], o["account_id"]
        try:
            found = self._json(
                self.identitystore_url,
                "identitystore",
                "AWSIdentityStore.GetUserId",
                {
                    "IdentityStoreId": store,
                    "AlternateIdentifier": {
                        "UniqueAttribute": {
                            "AttributePath": o["identity_center_attribute"],
                            "AttributeValue": email,
                        }
                    },
                },
                email,
            )
        except _NotFound:
            return []
        user_id = found.get("UserId")
        if not isinstance(user_id, str) or not user_id:
            raise LookupFailed("GetUserId's answer has no UserId")
        principals = [("USER", user_id)]
        for membership in self._json_pages(
            self.identitystore_url,
            "identitystore",
            "AWSIdentityStore.ListGroupMembershipsForMember",
            {"IdentityStoreId": store, "MemberId": {"UserId": user_id}},
            "GroupMemberships",
            email,
        ):
            group = membership.get("GroupId") if isinstance(membership, dict) else None
            if isinstance(group, str) and group:
                principals.append(("GROUP", group))
        sets: set[str] = set()
        for kind, pid in principals:
            for item in self._json_pages(
                self.sso_admin_url,
                "sso",
                "SWBExternalService.ListAccountAssignmentsForPrincipal",
                {
                    "InstanceArn": instance,
                    "PrincipalId": pid,
                    "PrincipalType": kind,
                    "Filter": {"AccountId": account},
                },
                "AccountAssignments",
                email,
            ):
                if isinstance(item, dict) and item.get("AccountId") == account:
                    arn = item.get("PermissionSetArn")
                    if isinstance(arn, str) and arn:
                        sets.add(arn)
        names = []
        for arn in sorted(sets):
            described = self._json(
                self.sso_admin_url,
                "sso",
                "SWBExternalService.DescribePermissionSet",
                {"InstanceArn": instance, "PermissionSetArn": arn},
                email,
            )
            name = (described.get("PermissionSet") or {}).get("Name")
            if not isinstance(name, str) or not name:
                raise LookupFailed(f"DescribePermissionSet gave no name for {arn}")
            names.append(name)
        wanted = o.get("sso_permission_set")
        if wanted:
            names = [n for n in names if n == wanted]
        if not names:
            return []
        roles = self._sso_roles(account)
        found_roles: list[str] = []
        for name in names:
            pattern = re.compile(rf"AWSReservedSSO_{re.escape(name)}_[0-9a-f]{{16}}")
            found_roles += [arn for role, arn in roles if pattern.fullmatch(role)]
        return found_roles

    def _sso_roles(self, account: str) -> list[tuple[str, str]]:
        params = {
            "Action": "ListRoles",
            "Version": IAM_VERSION,
            "PathPrefix": "/aws-reserved/sso.amazonaws.com/",
        }
        roles = []
        for page in self._pages("ListRoles", params, f"account {account}"):
            for role in _members(page, "Roles"):
                name, arn = _text(role, "RoleName"), _text(role, "Arn")
                if name and arn and arn.split(":")[4:5] == [account]:
                    roles.append((name, arn))
        return roles

    def _json_pages(
        self,
        url: str,
        service: str,
        target: str,
        payload: Mapping[str, Any],
        field: str,
        subject: str,
    ) -> Iterator[Any]:
        """The items of a paginated JSON 1.1 list (``NextToken``)."""
        operation = target.rpartition(".")[2]

        def page(token: str | None) -> tuple[list[Any], str | None]:
            asked = {**payload, "NextToken": token} if token else payload
            data = self._json(url, service, target, asked, subject)
            found = data.get(field, [])
            if not isinstance(found, list):
                raise LookupFailed(f"{operation}'s {field} is not a list")
            token = data.get("NextToken")
            if token is not None and not isinstance(token, str):
                raise LookupFailed(f"{operation}'s NextToken is not a string")
            return found, token

        limit = self.options["max_pages"]
        too_many = f"{operation} has more than {limit} pages"
        return self.pages(page, limit=limit, too_many=too_many)

    # --- probe --------------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        params = {"Action": "GetCallerIdentity", "Version": STS_VERSION}
        root = self._query(self.sts_url, "sts", self.region, params, "the engine")
        result = root.find("GetCallerIdentityResult")
        arn = _text(result, "Arn")
        if not arn:
            raise LookupFailed("STS GetCallerIdentity's answer has no Arn")
        return ProbeResult(True, f"signed in as {arn} (account {_text(result, 'Account')})")


@dataclass(frozen=True)
class _Coverage:
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


class _NotFound(LookupFailed):
    """A JSON API's ResourceNotFoundException."""


def _qualified(found: Match, qualifiers: list[str]) -> Match:
    """A Lambda request with ``?Qualifier=`` acts on that version or alias, whose ARN
    (``function:name:qualifier``) IAM policies name apart from the function's; a qualifier
    given twice, or besides another in the function's name, is unresolved."""
    assert found.resource is not None
    name = found.resource.split(":function:", 1)[1]
    qualifier = qualifiers[0]
    if len(set(qualifiers)) != 1 or not re.fullmatch(r"[A-Za-z0-9$_-]{1,128}", qualifier):
        return Match(found.route, found.params, None)
    if ":" in name:
        same = name.split(":", 1)[1] == qualifier
        return found if same else Match(found.route, found.params, None)
    return Match(found.route, found.params, f"{found.resource}:{qualifier}")


def _copy(found: Match, source: str) -> Match:
    """An S3 copy (CopyObject, UploadPartCopy: ``x-amz-copy-source``) reads its source as it
    writes its destination, and one request is checked on one resource: only a copy of an
    object onto itself (a metadata change) is placed; any other is left unresolved (refused),
    so that a copy never carries out data the user may not read."""
    path, _, query = unquote(source).partition("?")
    if f"arn:aws:s3:::{path.lstrip('/')}" == found.resource and not query.strip():
        return found
    return Match(found.route, found.params, None)


def _without(text: str, creds: Credentials | None) -> str:
    """``text`` without the secret key and session token of ``creds``."""
    for secret in (creds.secret_access_key, creds.session_token) if creds else ():
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def _statements(result: ET.Element) -> list[str]:
    found = []
    for statement in _members(result, "MatchedStatements"):
        policy = _text(statement, "SourcePolicyId") or "?"
        kind = _text(statement, "SourcePolicyType")
        found.append(f"{policy} ({kind})" if kind else policy)
    return found


def _statement_kinds(result: ET.Element) -> set[str]:
    return {
        _text(statement, "SourcePolicyType") or ""
        for statement in _members(result, "MatchedStatements")
    }


def _context_entries(raw: object) -> list[tuple[str, str, list[str]]]:
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


def _header_text(value: object) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    return value if isinstance(value, str) else ""


def _from_env() -> Credentials | None:
    key = os.environ.get("AWS_ACCESS_KEY_ID")
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        return None
    return Credentials(key, secret, os.environ.get("AWS_SESSION_TOKEN") or None, source="env")


def _sts_credentials(root: ET.Element, operation: str, source: str) -> Credentials:
    creds = root.find(f"{operation}Result/Credentials")
    key, secret = _text(creds, "AccessKeyId"), _text(creds, "SecretAccessKey")
    token = _text(creds, "SessionToken")
    if not key or not secret or not token:
        raise LookupFailed(f"STS {operation}'s answer has no credentials")
    return Credentials(key, secret, token, _expiry(_text(creds, "Expiration")), source)


def _json_credentials(data: object, source: str) -> Credentials:
    if not isinstance(data, dict):
        raise LookupFailed(f"the {source} credentials are not a JSON object")
    key, secret = data.get("AccessKeyId"), data.get("SecretAccessKey")
    token = data.get("Token")
    if not isinstance(key, str) or not key or not isinstance(secret, str) or not secret:
        raise LookupFailed(f"the {source} credentials lack AccessKeyId or SecretAccessKey")
    expires = _expiry(data["Expiration"]) if data.get("Expiration") is not None else None
    return Credentials(
        key, secret, token if isinstance(token, str) and token else None, expires, source
    )


INTEGRATION = AWS
