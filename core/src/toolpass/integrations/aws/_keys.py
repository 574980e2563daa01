"""AWS's connection keys, its partitions and the checks of a connection's options."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolpass.integrations.aws._credentials import AMBIENT
from toolpass.integrations.aws._simulation import context_entries
from toolpass.integrations.base import ConfigKey
from toolpass.wire.errors import ConfigError
from toolpass.wire.http import check_url

__all__ = ["KEYS", "PARTITIONS", "PRINCIPAL", "validate"]

PRINCIPAL = re.compile(
    r"arn:(aws|aws-us-gov|aws-cn):iam::(\d{12}):(user|role|group)/([\w+=,.@/-]{1,512})"
)
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d{1,2}")
_ACCOUNT = re.compile(r"\d{12}")


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

KEYS: tuple[ConfigKey, ...] = (
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
        default=list(AMBIENT),
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
    ConfigKey(
        "role_duration_seconds",
        "Lifetime asked for assumed credentials.",
        default=3600,
        minimum=900,
        maximum=43200,
        unit="seconds",
    ),
    ConfigKey(
        "credential_refresh_seconds",
        "Temporary credentials are refreshed this many seconds before they expire.",
        default=300.0,
        minimum=0.0,
        unit="seconds",
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
    ConfigKey("max_pages", "Most result pages followed for one request.", default=20, minimum=1),
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


def validate(options: Mapping[str, Any]) -> None:
    """Cross-key checks of an AWS connection's options: see the key descriptions."""
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
    if role is not None and not PRINCIPAL.fullmatch(role):
        raise ConfigError("must be a role ARN (arn:aws:iam::<account>:role/<name>)", "role_arn")
    if role is not None and ":role/" not in role:
        raise ConfigError("must be a role ARN", "role_arn")
    if not re.fullmatch(r"[\w+=,.@-]{2,64}", options["role_session_name"]):
        raise ConfigError("2-64 letters, digits or +=,.@_-", "role_session_name")
    sources = options["ambient_sources"]
    if not sources or any(s not in AMBIENT for s in sources):
        raise ConfigError(f"a list of {', '.join(AMBIENT)}", "ambient_sources")
    account = options.get("account_id")
    if account is not None and not _ACCOUNT.fullmatch(account):
        raise ConfigError("must be a 12-digit account id", "account_id")
    caller = options.get("caller_arn")
    if caller is not None and (not PRINCIPAL.fullmatch(caller) or ":user/" not in caller):
        raise ConfigError("must be an IAM user ARN (IAM accepts only users)", "caller_arn")
    context_entries(options["context"])
    urls = options["endpoint_urls"]
    if not isinstance(urls, Mapping):
        raise ConfigError("must map service names to URLs", "endpoint_urls")
    for service, url in urls.items():
        check_url(url, f"endpoint_urls.{service}")
