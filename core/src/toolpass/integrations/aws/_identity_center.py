"""IAM Identity Center: an email as the role ARNs of the user's permission sets in one
account: ``GetUserId`` (exact email or user name), the user's account assignments (directly
and through groups), and the role each permission set materialises as
(``AWSReservedSSO_<name>_<hex>``)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from toolpass.integrations.aws._answers import IAM_VERSION, NotFound, members, text
from toolpass.wire.errors import LookupFailed

__all__ = ["role_arns"]


class AWS(Protocol):
    """What the look-up uses of the AWS integration (its signed calls)."""

    options: Mapping[str, Any]
    identitystore_url: str
    sso_admin_url: str

    def json_api(
        self, url: str, service: str, target: str, payload: Mapping[str, Any], subject: str
    ) -> Any: ...

    def iam_pages(
        self, operation: str, params: Mapping[str, str], subject: str
    ) -> Iterator[ET.Element]: ...

    def json_pages(
        self,
        url: str,
        service: str,
        target: str,
        payload: Mapping[str, Any],
        field: str,
        subject: str,
    ) -> Iterator[Any]: ...


def role_arns(aws: AWS, email: str) -> list[str]:
    """The role ARNs of ``email``'s permission sets in the account (IAM Identity Center)."""
    o = aws.options
    for key in ("identity_store_id", "sso_instance_arn", "account_id"):
        if not o.get(key):
            raise LookupFailed(f"identity mode identity_center needs the key {key}")
    store, instance, account = o["identity_store_id"], o["sso_instance_arn"], o["account_id"]
    try:
        found = aws.json_api(
            aws.identitystore_url,
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
    except NotFound:
        return []
    user_id = found.get("UserId")
    if not isinstance(user_id, str) or not user_id:
        raise LookupFailed("GetUserId's answer has no UserId")
    principals = [("USER", user_id)]
    for membership in aws.json_pages(
        aws.identitystore_url,
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
        for item in aws.json_pages(
            aws.sso_admin_url,
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
        described = aws.json_api(
            aws.sso_admin_url,
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
    roles = _sso_roles(aws, account)
    found_roles: list[str] = []
    for name in names:
        pattern = re.compile(rf"AWSReservedSSO_{re.escape(name)}_[0-9a-f]{{16}}")
        found_roles += [arn for role, arn in roles if pattern.fullmatch(role)]
    return found_roles


def _sso_roles(aws: AWS, account: str) -> list[tuple[str, str]]:
    params = {
        "Action": "ListRoles",
        "Version": IAM_VERSION,
        "PathPrefix": "/aws-reserved/sso.amazonaws.com/",
    }
    roles = []
    for page in aws.iam_pages("ListRoles", params, f"account {account}"):
        for role in members(page, "Roles"):
            name, arn = text(role, "RoleName"), text(role, "Arn")
            if name and arn and arn.split(":")[4:5] == [account]:
                roles.append((name, arn))
    return roles
