"""The AWS integration against the AWS fake on 127.0.0.1 (and moto's server where it can).

Every request the integration signs is verified by the fake with botocore's signer, so each
passing check also proves the SigV4 signature.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import boto3
import botocore.auth
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config as BotoConfig
from botocore.credentials import Credentials as BotoCredentials
from botocore.exceptions import ClientError
from botocore.parsers import ResponseParserError
from fakes.aws import FakeAWS, error_xml
from fakes.proxy import FakeProxy
from fakes.server import FakeServer, Reply, Request
from fakes.tls import make_certs
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest_toolpass import IntegrationConformance

from toolpass.engine import Toolpass
from toolpass.integrations.aws import AWS, Credentials, sign_v4
from toolpass.wire.errors import ConfigError
from toolpass.wire.secrets import literal

ACCOUNT = "123456789012"
ENGINE = f"arn:aws:iam::{ACCOUNT}:user/toolpass-engine"
KEY, SECRET = "AKIAENGINEEXAMPLE001", "engine/secret+key"
DANA = f"arn:aws:iam::{ACCOUNT}:role/dana"
ERIN = f"arn:aws:iam::{ACCOUNT}:role/erin"
READER = f"arn:aws:iam::{ACCOUNT}:role/toolpass-reader"
REPORT = "arn:aws:s3:::reports/q1.csv"
LOCKED = "arn:aws:s3:::reports/locked/payroll.csv"
INSTANCE = f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-0abc"
TEMPLATE = {
    "mode": "template",
    "template": f"arn:aws:iam::{ACCOUNT}:role/{{local}}",
    "domains": ["example.com"],
}
DANA_POLICY: dict[str, Any] = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:PutObject"],
            "Resource": "arn:aws:s3:::reports/*",
        },
        {"Effect": "Deny", "Action": "s3:*", "Resource": "arn:aws:s3:::reports/locked/*"},
        {
            "Effect": "Allow",
            "Action": "s3:DeleteObject",
            "Resource": "arn:aws:s3:::reports/*",
            "Condition": {"Bool": {"aws:MultiFactorAuthPresent": "true"}},
        },
        {
            "Effect": "Allow",
            "Action": "ec2:TerminateInstances",
            "Resource": "*",
            "Condition": {"IpAddress": {"aws:SourceIp": "203.0.113.0/24"}},
        },
        {"Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*"},
    ],
}
READ_ALL = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "iam:SimulatePrincipalPolicy", "Resource": "*"}],
}


_OPEN: list[Any] = []


@pytest.fixture(autouse=True)
def close_clients() -> Iterator[None]:
    """Close every engine and boto3 client a test opened (their kept-alive sockets)."""
    yield
    while _OPEN:
        _OPEN.pop().close()


def opened(thing: Any) -> Any:
    _OPEN.append(thing)
    return thing


@pytest.fixture(autouse=True)
def no_ambient_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees this machine's AWS environment, and none may reach 169.254.169.254."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_ROLE_SESSION_NAME",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
        "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def fake() -> Iterator[FakeAWS]:
    with FakeAWS(account=ACCOUNT) as server:
        server.add_key(KEY, SECRET, ENGINE)
        server.add_principal(ENGINE, READ_ALL)
        server.add_principal(DANA, DANA_POLICY)
        yield server


def conn(fake: FakeAWS, **over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "aws-main",
        "integration": "aws",
        "url": fake.url,
        "sts_url": fake.url,
        "endpoint_urls": {"default": fake.url},
        "credentials": "static",
        "access_key_id": literal(KEY),
        "secret_access_key": literal(SECRET),
        "identity": TEMPLATE,
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def engine(fake: FakeAWS, **over: Any) -> Toolpass:
    tp: Toolpass = opened(Toolpass(connections=[conn(fake, **over)]))
    return tp


def simulate_params(fake: FakeAWS) -> list[dict[str, str]]:
    return [
        {k: v[0] for k, v in parse_qs(r.body.decode()).items()}
        for r in fake.seen("POST", "/")
        if b"Action=SimulatePrincipalPolicy" in r.body
    ]


# --- allow, deny -------------------------------------------------------------------------


def test_allow_sends_a_signed_simulation(fake: FakeAWS) -> None:
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "allow", d.reason
    assert DANA in d.reason
    assert "dana-policy-0 (role)" in d.reason
    (params,) = simulate_params(fake)
    assert params == {
        "Action": "SimulatePrincipalPolicy",
        "Version": "2010-05-08",
        "PolicySourceArn": DANA,
        "ActionNames.member.1": "s3:GetObject",
        "ResourceArns.member.1": REPORT,
    }
    request = fake.seen("POST", "/")[0]
    assert f"Credential={KEY}/" in request.headers["authorization"]
    assert "/us-east-1/iam/aws4_request" in request.headers["authorization"]


def test_explicit_deny_is_deny(fake: FakeAWS) -> None:
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", LOCKED)
    assert d.decision == "deny"
    assert "explicitly denies" in d.reason
    assert "dana-policy-0" in d.reason


def test_implicit_deny_is_deny_by_default(fake: FakeAWS) -> None:
    bucket = "arn:aws:s3:::scratch"  # no bucket policy: IAM's implicit deny stands
    d = engine(fake).check("dana@example.com", "aws-main", "s3:DeleteBucket", bucket)
    assert d.decision == "deny", d.reason
    assert "implicit deny" in d.reason


def test_implicit_deny_can_mean_unknown(fake: FakeAWS) -> None:
    tp = engine(fake, implicit_deny="unknown")
    d = tp.check("dana@example.com", "aws-main", "ec2:StopInstances", INSTANCE)
    assert d.decision == "unknown"
    assert "implicit_deny: unknown" in d.reason


def test_implicit_deny_auto_is_deny_once_the_resource_policy_is_read(fake: FakeAWS) -> None:
    tp = engine(fake, implicit_deny="auto")
    s3 = tp.check("dana@example.com", "aws-main", "s3:DeleteBucket", "arn:aws:s3:::scratch")
    ec2 = tp.check("dana@example.com", "aws-main", "ec2:StopInstances", INSTANCE)
    assert (s3.decision, ec2.decision) == ("deny", "deny")


def test_explicit_deny_stands_whatever_the_implicit_setting(fake: FakeAWS) -> None:
    tp = engine(fake, implicit_deny="unknown")
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", LOCKED).decision == "deny"


# --- condition context -------------------------------------------------------------------


def test_missing_context_is_unknown(fake: FakeAWS) -> None:
    d = engine(fake).check("dana@example.com", "aws-main", "s3:DeleteObject", REPORT)
    assert d.decision == "unknown"
    assert "aws:MultiFactorAuthPresent" in d.reason


def test_context_entries_are_sent_typed(fake: FakeAWS) -> None:
    context = {"aws:MultiFactorAuthPresent": True, "aws:SourceIp": "203.0.113.7"}
    tp = engine(fake, context=context)
    assert tp.check("dana@example.com", "aws-main", "s3:DeleteObject", REPORT).allowed
    assert tp.check("dana@example.com", "aws-main", "ec2:TerminateInstances", INSTANCE).allowed
    params = simulate_params(fake)[0]
    assert params["ContextEntries.member.1.ContextKeyName"] == "aws:MultiFactorAuthPresent"
    assert params["ContextEntries.member.1.ContextKeyType"] == "boolean"
    assert params["ContextEntries.member.1.ContextKeyValues.member.1"] == "true"
    assert params["ContextEntries.member.2.ContextKeyType"] == "ip"
    assert params["ContextEntries.member.2.ContextKeyValues.member.1"] == "203.0.113.7"


def test_context_that_fails_a_condition_is_deny(fake: FakeAWS) -> None:
    tp = engine(fake, context={"aws:SourceIp": {"type": "ip", "values": ["198.51.100.1"]}})
    d = tp.check("dana@example.com", "aws-main", "ec2:TerminateInstances", INSTANCE)
    assert d.decision == "deny"


def test_bad_context_is_a_config_error(fake: FakeAWS) -> None:
    with pytest.raises(ConfigError, match="context"):
        engine(fake, context={"nocolon": "x"})
    with pytest.raises(ConfigError, match="type must be one of"):
        engine(fake, context={"aws:SourceIp": {"type": "cidr", "values": ["1.2.3.4"]}})


# --- Organizations and permissions boundaries ------------------------------------------------


def test_scp_that_does_not_allow_is_deny_in_every_setting(fake: FakeAWS) -> None:
    fake.scp = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
    }
    tp = engine(fake, implicit_deny="unknown", context={"aws:SourceIp": "203.0.113.7"})
    d = tp.check("dana@example.com", "aws-main", "ec2:TerminateInstances", INSTANCE)
    assert d.decision == "deny"
    assert "Organizations SCP does not allow it" in d.reason
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed


def test_permissions_boundary_is_in_the_reason(fake: FakeAWS) -> None:
    boundary = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}],
    }
    fake.add_principal(ERIN, DANA_POLICY, boundary=boundary)
    tp = engine(fake)
    d = tp.check("erin@example.com", "aws-main", "s3:PutObject", REPORT)
    assert d.decision == "deny"
    assert "permissions boundary does not allow it" in d.reason
    assert tp.check("erin@example.com", "aws-main", "s3:GetObject", REPORT).allowed


# --- pagination --------------------------------------------------------------------------


def test_follows_markers_past_empty_pages(fake: FakeAWS) -> None:
    fake.empty_pages = 2
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.allowed, d.reason
    markers = [p.get("Marker") for p in simulate_params(fake)]
    assert markers[0] is None
    assert all(markers[1:])
    assert len(markers) == 3


def test_too_many_pages_is_unknown(fake: FakeAWS) -> None:
    fake.empty_pages = 5
    d = engine(fake, max_pages=3).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "more than 3 pages" in d.reason


# --- unknowns ----------------------------------------------------------------------------


def test_principal_that_does_not_exist_is_unknown(fake: FakeAWS) -> None:
    d = engine(fake).check("zoe@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "does not exist in IAM" in d.reason
    assert "NoSuchEntity" in d.reason


@pytest.mark.parametrize(
    ("code", "status", "words"),
    [
        ("AccessDenied", 403, "refused the engine's credential"),
        ("Throttling", 400, "rate-limited"),
        ("ServiceFailure", 500, "failed"),
        ("ServiceUnavailable", 503, "failed"),
        ("InvalidInput", 400, "invalid"),
    ],
)
def test_aws_errors_are_unknown(fake: FakeAWS, code: str, status: int, words: str) -> None:
    fake.fail_aws(code, status, "told so")
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert words in d.reason
    assert code in d.reason
    assert "told so" in d.reason


def test_429_with_retry_after_is_unknown(fake: FakeAWS) -> None:
    fake.fail_aws("Throttling", 429, "slow down", retry_after=7)
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "retry after 7s" in d.reason


def test_unknown_access_key_is_unknown(fake: FakeAWS) -> None:
    tp = engine(fake, access_key_id=literal("AKIANOBODY0000000000"))
    d = tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "InvalidClientTokenId" in d.reason


def test_wrong_secret_fails_the_signature(fake: FakeAWS) -> None:
    tp = engine(fake, secret_access_key=literal("not-the-secret"))
    d = tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "SignatureDoesNotMatch" in d.reason


def test_not_xml_is_unknown(fake: FakeAWS) -> None:
    fake.fail(200, body=b"{not xml", headers={"Content-Type": "text/xml"})
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "not XML" in d.reason


@pytest.mark.parametrize(
    "body",
    [
        b'<SimulatePrincipalPolicyResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"/>',
        b"<?xml version='1.0'?><!DOCTYPE x [<!ENTITY a 'b'>]><x>&a;</x>",
    ],
)
def test_malformed_xml_is_unknown(fake: FakeAWS, body: bytes) -> None:
    fake.fail(200, body=body, headers={"Content-Type": "text/xml"})
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"


def test_unknown_decision_value_is_unknown(fake: FakeAWS) -> None:
    body = (
        b'<SimulatePrincipalPolicyResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/">'
        b"<SimulatePrincipalPolicyResult><EvaluationResults><member>"
        b"<EvalActionName>s3:GetObject</EvalActionName><EvalDecision>maybe</EvalDecision>"
        b"</member></EvaluationResults><IsTruncated>false</IsTruncated>"
        b"</SimulatePrincipalPolicyResult></SimulatePrincipalPolicyResponse>"
    )
    fake.fail(200, body=body, headers={"Content-Type": "text/xml"})
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "'maybe'" in d.reason


def test_result_for_another_action_is_unknown(fake: FakeAWS) -> None:
    body = (
        b'<SimulatePrincipalPolicyResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/">'
        b"<SimulatePrincipalPolicyResult><EvaluationResults><member>"
        b"<EvalActionName>s3:PutObject</EvalActionName><EvalDecision>allowed</EvalDecision>"
        b"</member></EvaluationResults><IsTruncated>false</IsTruncated>"
        b"</SimulatePrincipalPolicyResult></SimulatePrincipalPolicyResponse>"
    )
    fake.fail(200, body=body, headers={"Content-Type": "text/xml"})
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "0 results" in d.reason


def test_resource_specific_result_wins_over_the_top_level(fake: FakeAWS) -> None:
    body = (
        '<SimulatePrincipalPolicyResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/">'
        "<SimulatePrincipalPolicyResult><EvaluationResults><member>"
        "<EvalActionName>s3:GetObject</EvalActionName>"
        "<EvalResourceName>arn:${Partition}:s3:::${BucketName}/${KeyName}</EvalResourceName>"
        "<EvalDecision>allowed</EvalDecision><ResourceSpecificResults><member>"
        f"<EvalResourceName>{REPORT}</EvalResourceName>"
        "<EvalResourceDecision>allowed</EvalResourceDecision>"
        "<MissingContextValues><member>aws:SourceVpc</member></MissingContextValues>"
        "</member></ResourceSpecificResults></member></EvaluationResults>"
        "<IsTruncated>false</IsTruncated></SimulatePrincipalPolicyResult>"
        "</SimulatePrincipalPolicyResponse>"
    ).encode()
    fake.fail(200, body=body, headers={"Content-Type": "text/xml"})
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "aws:SourceVpc" in d.reason


# --- actions and resources -----------------------------------------------------------------


def test_any_well_formed_iam_action_is_accepted(fake: FakeAWS) -> None:
    tp = engine(fake)
    assert tp.configured("aws-main", "ec2:DescribeVolumes")
    assert AWS.action("ec2:DescribeVolumes").effect == "read"  # type: ignore[union-attr]
    assert AWS.action("rds:DeleteDBCluster").effect == "destructive"  # type: ignore[union-attr]
    assert AWS.action("sqs:CreateQueue").effect == "write"  # type: ignore[union-attr]
    assert tp.check("dana@example.com", "aws-main", "ec2:DescribeVolumes", "*").decision == (
        "unknown"  # '*' is refused unless the operator allows it
    )
    for bad in ("s3:*", "s3", "S3:GetObject", "s3:Get Object", "s3:GetObject\n"):
        assert not tp.configured("aws-main", bad)
        assert tp.check("dana@example.com", "aws-main", bad, REPORT).decision == "unknown"
    assert simulate_params(fake) == []


@pytest.mark.parametrize(
    "resource",
    [
        "*",
        "arn:aws:s3:::reports/*",
        "reports/q1.csv",
        "arn:aws-cn:s3:::reports/q1.csv",
        "arn:aws:s3:::reports/q1.csv\n",
    ],
)
def test_refused_resources_are_unknown_without_asking(fake: FakeAWS, resource: str) -> None:
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", resource)
    assert d.decision == "unknown"
    assert fake.requests == []


def test_wildcard_resources_when_the_operator_allows_them(fake: FakeAWS) -> None:
    tp = engine(fake, allow_wildcard_resource=True)
    assert tp.check("dana@example.com", "aws-main", "ec2:DescribeVolumes", "*").allowed
    assert simulate_params(fake)[0]["ResourceArns.member.1"] == "*"


# --- identity ----------------------------------------------------------------------------


def test_email_outside_the_template_domains_is_unknown(fake: FakeAWS) -> None:
    d = engine(fake).check("dana@evil.example", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "domain" in d.reason
    assert fake.requests == []


def test_identity_service(fake: FakeAWS) -> None:
    with FakeServer() as directory:

        @directory.route("GET", "/who")
        def who(request: Request) -> Reply | dict[str, Any]:
            email = request.arg("email")
            if email == "dana@example.com":
                return {"user": DANA}
            if email == "twins@example.com":
                return {"users": [DANA, ERIN]}
            return Reply(404, {"user": None})

        tp = engine(fake, identity={"mode": "http", "url": f"{directory.url}/who"})
        assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
        twins = tp.check("twins@example.com", "aws-main", "s3:GetObject", REPORT)
        nobody = tp.check("nobody@example.com", "aws-main", "s3:GetObject", REPORT)
    assert twins.decision == "unknown"
    assert "refusing to guess" in twins.reason
    assert nobody.decision == "unknown"


def test_callable_identity_and_ambiguity(fake: FakeAWS) -> None:
    def resolve(email: str) -> str | list[str] | None:
        return {"dana@example.com": DANA, "both@example.com": [DANA, ERIN]}.get(email)

    tp = engine(fake, identity=resolve)
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
    d = tp.check("both@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "refusing to guess" in d.reason


def test_identity_that_is_not_a_principal_arn_is_unknown(fake: FakeAWS) -> None:
    session = f"arn:aws:sts::{ACCOUNT}:assumed-role/dana/dana@example.com"
    tp = engine(fake, identity={"mode": "users", "users": {"dana@example.com": session}})
    d = tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "not an IAM user, group or role ARN" in d.reason
    assert simulate_params(fake) == []


SSO_PATH = "/aws-reserved/sso.amazonaws.com/eu-west-1/"
DEV_SET = "arn:aws:sso:::permissionSet/ssoins-1234567890abcdef/ps-dev0000000000001"
OPS_SET = "arn:aws:sso:::permissionSet/ssoins-1234567890abcdef/ps-ops0000000000002"
DEV_ROLE = f"arn:aws:iam::{ACCOUNT}:role{SSO_PATH}AWSReservedSSO_Developer_0123456789abcdef"
OPS_ROLE = f"arn:aws:iam::{ACCOUNT}:role{SSO_PATH}AWSReservedSSO_Operator_fedcba9876543210"


def identity_center(fake: FakeAWS) -> None:
    fake.users = {
        "u-dana": {"UserName": "dana", "Emails": [{"Value": "dana@example.com"}]},
        "u-erin": {"UserName": "erin", "Emails": [{"Value": "erin@example.com"}]},
    }
    fake.groups = {"u-erin": ["g-ops"]}
    fake.permission_sets = {DEV_SET: "Developer", OPS_SET: "Operator"}
    fake.assignments = [
        ("USER", "u-dana", ACCOUNT, DEV_SET),
        ("USER", "u-dana", "210987654321", OPS_SET),
        ("USER", "u-erin", ACCOUNT, DEV_SET),
        ("GROUP", "g-ops", ACCOUNT, OPS_SET),
    ]
    fake.roles = [
        (SSO_PATH, DEV_ROLE),
        (SSO_PATH, OPS_ROLE),
        ("/", f"arn:aws:iam::{ACCOUNT}:role/AWSReservedSSO_Developer_0000000000000000"),
    ]
    fake.add_principal(DEV_ROLE, DANA_POLICY)
    fake.add_principal(OPS_ROLE, {"Version": "2012-10-17", "Statement": []})


def ic_keys(fake: FakeAWS, **over: Any) -> dict[str, Any]:
    keys = {
        "identity": {"mode": "identity_center"},
        "identity_store_id": fake.identity_store_id,
        "sso_instance_arn": fake.instance_arn,
        "account_id": ACCOUNT,
        "identitystore_url": fake.url,
        "sso_admin_url": fake.url,
        "region": "eu-west-1",
    }
    keys.update(over)
    return keys


def test_identity_center_finds_the_permission_set_role(fake: FakeAWS) -> None:
    identity_center(fake)
    fake.page_size = 1  # every list is paginated
    tp = engine(fake, **ic_keys(fake))
    d = tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.allowed, d.reason
    assert DEV_ROLE in d.reason
    assert fake.actions() == [
        "GetUserId",
        "ListGroupMembershipsForMember",
        "ListAccountAssignmentsForPrincipal",
        "DescribePermissionSet",
        "ListRoles",
        "ListRoles",
        "SimulatePrincipalPolicy",
    ]
    ic = fake.seen("POST", "/")[0]
    assert "/eu-west-1/identitystore/aws4_request" in ic.headers["authorization"]
    assert json.loads(ic.body)["AlternateIdentifier"]["UniqueAttribute"] == {
        "AttributePath": "emails.value",
        "AttributeValue": "dana@example.com",
    }
    # the mapping is cached: a second check asks only IAM
    tp.check("dana@example.com", "aws-main", "s3:PutObject", REPORT)
    assert fake.actions()[7:] == ["SimulatePrincipalPolicy"]


def test_identity_center_several_permission_sets_are_ambiguous(fake: FakeAWS) -> None:
    identity_center(fake)
    d = engine(fake, **ic_keys(fake)).check("erin@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "refusing to guess" in d.reason
    tp = engine(fake, **ic_keys(fake, sso_permission_set="Developer"))
    assert tp.check("erin@example.com", "aws-main", "s3:GetObject", REPORT).allowed


def test_identity_center_unknown_user_is_unknown(fake: FakeAWS) -> None:
    identity_center(fake)
    d = engine(fake, **ic_keys(fake)).check("zoe@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "maps to no aws user" in d.reason


def test_identity_center_by_user_name(fake: FakeAWS) -> None:
    identity_center(fake)
    fake.users["u-dana"]["UserName"] = "dana@example.com"
    fake.users["u-dana"]["Emails"] = []
    tp = engine(fake, **ic_keys(fake, identity_center_attribute="userName"))
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed


def test_identity_center_needs_its_keys(fake: FakeAWS) -> None:
    tp = engine(fake, identity={"mode": "identity_center"})
    d = tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "identity_store_id" in d.reason


def test_identity_center_refusal_is_unknown(fake: FakeAWS) -> None:
    identity_center(fake)
    tp = engine(fake, **ic_keys(fake, identity_store_id="d-0000000000"))
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).decision == "unknown"
    fake.fail(400, body={"__type": "ThrottlingException", "Message": "slow"})
    d = engine(fake, **ic_keys(fake)).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "ThrottlingException" in d.reason


# --- authentication ------------------------------------------------------------------------


def test_static_session_token_is_signed(fake: FakeAWS) -> None:
    fake.add_key("ASIATEMPORARY0000001", "temp-secret", ENGINE, token="the-token")
    tp = engine(
        fake,
        access_key_id=literal("ASIATEMPORARY0000001"),
        secret_access_key=literal("temp-secret"),
        session_token=literal("the-token"),
    )
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
    assert fake.seen("POST", "/")[0].headers["x-amz-security-token"] == "the-token"


def test_static_keys_by_env_reference(fake: FakeAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TP_AWS_KEY", KEY)
    monkeypatch.setenv("TP_AWS_SECRET", SECRET)
    tp = engine(fake, access_key_id="env:TP_AWS_KEY", secret_access_key="env:TP_AWS_SECRET")
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed


def test_static_needs_both_keys(fake: FakeAWS) -> None:
    with pytest.raises(ConfigError, match="secret_access_key"):
        engine(fake, secret_access_key=None)


def test_ambient_environment(fake: FakeAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    tp = engine(fake, credentials="ambient", access_key_id=None, secret_access_key=None)
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed


def test_no_ambient_credentials_is_unknown(fake: FakeAWS) -> None:
    tp = engine(fake, credentials="ambient", access_key_id=None, secret_access_key=None)
    d = tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "no AWS credentials found" in d.reason
    assert fake.requests == []


def test_assume_role_with_external_id(fake: FakeAWS) -> None:
    fake.add_principal(READER, READ_ALL, trust={ENGINE}, external_id="ext-42")
    tp = engine(fake, role_arn=READER, external_id="ext-42", role_session_name="tp-check")
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
    assume, simulate = fake.seen("POST", "/")
    params = {k: v[0] for k, v in parse_qs(assume.body.decode()).items()}
    assert params["Action"] == "AssumeRole"
    assert params["ExternalId"] == "ext-42"
    assert params["RoleSessionName"] == "tp-check"
    assert params["DurationSeconds"] == "3600"
    assert f"Credential={KEY}/" in assume.headers["authorization"]
    assert "/sts/aws4_request" in assume.headers["authorization"]
    assert "Credential=ASIA" in simulate.headers["authorization"]
    assert simulate.headers["x-amz-security-token"]


def test_assumed_credentials_are_cached(fake: FakeAWS) -> None:
    fake.add_principal(READER, READ_ALL)
    tp = engine(fake, role_arn=READER)
    for resource in (REPORT, "arn:aws:s3:::reports/q2.csv", "arn:aws:s3:::reports/q3.csv"):
        assert tp.check("dana@example.com", "aws-main", "s3:GetObject", resource).allowed
    assert fake.actions().count("AssumeRole") == 1


def test_assumed_credentials_are_refreshed_before_expiry(fake: FakeAWS) -> None:
    fake.add_principal(READER, READ_ALL)
    fake.session_seconds = 200  # less than the 300 s refresh margin
    other = INSTANCE.replace("i-0abc", "i-0def")
    tp = engine(fake, role_arn=READER)
    tp.check("dana@example.com", "aws-main", "ec2:DescribeInstances", INSTANCE)
    tp.check("dana@example.com", "aws-main", "ec2:DescribeInstances", other)
    assert fake.actions().count("AssumeRole") == 2
    fake.session_seconds = None
    tp2 = engine(fake, role_arn=READER, credential_refresh_seconds=60.0)
    fake.session_seconds = 200
    tp2.check("dana@example.com", "aws-main", "ec2:DescribeInstances", INSTANCE)
    tp2.check("dana@example.com", "aws-main", "ec2:DescribeInstances", other)
    assert fake.actions().count("AssumeRole") == 3


def test_expired_token_drops_cached_credentials(fake: FakeAWS) -> None:
    fake.add_principal(READER, READ_ALL)
    tp = engine(fake, role_arn=READER)
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
    fake.fail_aws("ExpiredToken", 400, "The security token included in the request is expired")
    d = tp.check("dana@example.com", "aws-main", "s3:PutObject", REPORT)
    assert d.decision == "unknown"
    assert "expired" in d.reason
    assert tp.check("dana@example.com", "aws-main", "s3:PutObject", REPORT).allowed
    assert fake.actions().count("AssumeRole") == 2


@pytest.mark.parametrize("role", [READER, None])
def test_credentials_found_at_run_time_never_show_in_a_reason(
    fake: FakeAWS, monkeypatch: pytest.MonkeyPatch, role: str | None
) -> None:
    """An assumed role's session and keys from the environment are no connection key, yet
    AWS echoing them in an error puts neither in a reason."""
    fake.add_principal(READER, READ_ALL)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    tp = engine(fake, credentials="ambient", access_key_id=None, secret_access_key=None)
    if role is not None:
        tp = engine(fake, role_arn=role)
    live = tp.integration("aws-main")
    assert isinstance(live, AWS)
    creds = live.credentials()
    secrets = [s for s in (creds.secret_access_key, creds.session_token) if s]
    fake.fail_aws("AccessDenied", 403, f"denied: {' '.join(secrets)}")
    d = tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "[redacted]" in d.reason
    assert not any(secret in d.reason for secret in secrets)


def test_assume_role_refused_is_unknown(fake: FakeAWS) -> None:
    fake.add_principal(READER, READ_ALL, external_id="ext-42")
    tp = engine(fake, role_arn=READER, external_id="wrong")
    d = tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "STS AssumeRole refused the engine's credential" in d.reason
    assert simulate_params(fake) == []


def test_web_identity(fake: FakeAWS, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("eyJ.web.identity\n")
    fake.add_principal(READER, READ_ALL)
    fake.web_identity_tokens["eyJ.web.identity"] = READER
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(token))
    monkeypatch.setenv("AWS_ROLE_ARN", READER)
    tp = engine(fake, credentials="ambient", access_key_id=None, secret_access_key=None)
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
    web = fake.seen("POST", "/")[0]
    assert "authorization" not in web.headers
    assert b"Action=AssumeRoleWithWebIdentity" in web.body
    fake.web_identity_tokens.clear()
    fake.requests.clear()
    tp2 = engine(fake, credentials="ambient", access_key_id=None, secret_access_key=None)
    d = tp2.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "InvalidIdentityToken" in d.reason


def test_container_credentials(fake: FakeAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.add_principal(fake.container_role, READ_ALL)
    fake.container_token = "container-secret"
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"{fake.url}/container-credentials")
    monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "container-secret")
    tp = engine(fake, credentials="ambient", access_key_id=None, secret_access_key=None)
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
    assert fake.seen("GET", "/container-credentials")[0].headers["authorization"] == (
        "container-secret"
    )
    monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "wrong")
    tp2 = engine(fake, credentials="ambient", access_key_id=None, secret_access_key=None)
    d = tp2.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "HTTP 401" in d.reason


def test_container_uri_must_be_local_or_https(
    fake: FakeAWS, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://198.51.100.9/creds")
    tp = engine(fake, credentials="ambient", access_key_id=None, secret_access_key=None)
    d = tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "AWS_CONTAINER_CREDENTIALS_FULL_URI" in d.reason


def test_instance_metadata_v2(fake: FakeAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.add_principal(f"arn:aws:iam::{ACCOUNT}:role/instance-role", READ_ALL)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "false")
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", fake.url)
    tp = engine(
        fake,
        credentials="ambient",
        access_key_id=None,
        secret_access_key=None,
        ambient_sources=["env", "imds"],
    )
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
    put = fake.seen("PUT", "/latest/api/token")[0]
    assert put.headers["x-aws-ec2-metadata-token-ttl-seconds"] == "21600"
    listing = fake.seen("GET", "/latest/meta-data/iam/security-credentials/")[0]
    assert listing.headers["x-aws-ec2-metadata-token"]
    # the temporary credentials are kept: a second check fetches nothing more
    tp.check("dana@example.com", "aws-main", "s3:PutObject", REPORT)
    assert len(fake.seen("PUT", "/latest/api/token")) == 1


def test_ambient_chain_then_assume_role(fake: FakeAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.add_principal(READER, READ_ALL, trust={fake.container_role})
    fake.add_principal(fake.container_role, {"Version": "2012-10-17", "Statement": []})
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"{fake.url}/container-credentials")
    tp = engine(
        fake, credentials="ambient", access_key_id=None, secret_access_key=None, role_arn=READER
    )
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
    assert fake.actions() == ["AssumeRole", "SimulatePrincipalPolicy"]


# --- partitions, endpoints, network ---------------------------------------------------------


@pytest.mark.parametrize(
    ("partition", "iam", "sts"),
    [
        ("aws", "https://iam.amazonaws.com", "https://sts.us-east-1.amazonaws.com"),
        (
            "aws-us-gov",
            "https://iam.us-gov.amazonaws.com",
            "https://sts.us-gov-west-1.amazonaws.com",
        ),
        (
            "aws-cn",
            "https://iam.cn-north-1.amazonaws.com.cn",
            "https://sts.cn-north-1.amazonaws.com.cn",
        ),
    ],
)
def test_partition_endpoints(partition: str, iam: str, sts: str) -> None:
    tp = opened(
        Toolpass(
            connections=[
                {"id": "a", "integration": "aws", "partition": partition, "identity": TEMPLATE}
            ]
        )
    )
    live = tp.integration("a")
    assert isinstance(live, AWS)
    assert (live.iam_url, live.sts_url) == (iam, sts)


def test_govcloud_signs_for_its_region_and_checks_its_arns(fake: FakeAWS) -> None:
    gov = f"arn:aws-us-gov:iam::{ACCOUNT}:role/dana"
    fake.add_principal(gov, DANA_POLICY)
    identity = {**TEMPLATE, "template": f"arn:aws-us-gov:iam::{ACCOUNT}:role/{{local}}"}
    tp = engine(fake, partition="aws-us-gov", identity=identity)
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).decision == "unknown"
    gov_report = "arn:aws-us-gov:s3:::reports/q1.csv"
    fake.principals[gov].policies[0][2]["Statement"][0]["Resource"] = (
        "arn:aws-us-gov:s3:::reports/*"
    )
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", gov_report).allowed
    assert "/us-gov-west-1/iam/aws4_request" in fake.seen("POST", "/")[0].headers["authorization"]


def test_https_with_a_private_ca(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    with FakeAWS(account=ACCOUNT, tls=(certs.cert_file, certs.key_file)) as fake:
        fake.add_key(KEY, SECRET, ENGINE)
        fake.add_principal(DANA, DANA_POLICY)
        url = fake.url.replace("127.0.0.1", "localhost")
        tp = engine(fake, url=url, sts_url=url, ca_file=certs.ca_file)
        assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
        assert fake.seen("POST", "/")[0].headers["host"] == url.removeprefix("https://")


def test_https_through_a_proxy(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    with (
        FakeAWS(account=ACCOUNT, tls=(certs.cert_file, certs.key_file)) as fake,
        FakeProxy() as proxy,
    ):
        fake.add_key(KEY, SECRET, ENGINE)
        fake.add_principal(DANA, DANA_POLICY)
        url = fake.url.replace("127.0.0.1", "localhost")
        tp = engine(fake, url=url, sts_url=url, ca_file=certs.ca_file, proxy_url=proxy.url)
        assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
        assert (
            engine(fake, url=url, sts_url=url, ca_file=certs.ca_file, proxy_url=proxy.url)
            .probe()["aws-main"]
            .ok
        )
    assert proxy.seen[0] == f"CONNECT {url.removeprefix('https://')}"


def test_bad_configuration_is_refused(fake: FakeAWS) -> None:
    with pytest.raises(ConfigError, match="role_arn"):
        engine(fake, role_arn="arn:aws:iam::123:role/x")
    with pytest.raises(ConfigError, match="region"):
        engine(fake, region="Mars")
    with pytest.raises(ConfigError, match="implicit_deny"):
        engine(fake, implicit_deny="maybe")
    with pytest.raises(ConfigError, match="ambient_sources"):
        engine(fake, ambient_sources=["env", "profile"])
    with pytest.raises(ConfigError, match="sts_url"):
        engine(fake, sts_url="http://sts.example.com")
    with pytest.raises(ConfigError, match="caller_arn"):
        engine(fake, caller_arn=DANA)


def test_caller_arn_is_sent(fake: FakeAWS) -> None:
    caller = f"arn:aws:iam::{ACCOUNT}:user/dana"
    engine(fake, caller_arn=caller).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert simulate_params(fake)[0]["CallerArn"] == caller


def test_credentials_never_print_their_secret() -> None:
    creds = Credentials("AKIDEXAMPLE", "very-secret", "session-token", source="env")
    assert "very-secret" not in repr(creds)
    assert "session-token" not in repr(creds)
    assert "very-secret" not in str(creds)


# --- caching -------------------------------------------------------------------------------


def test_decisions_are_cached_but_not_unknowns(fake: FakeAWS) -> None:
    tp = engine(fake)
    for _ in range(3):
        assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
        assert tp.check("dana@example.com", "aws-main", "s3:GetObject", LOCKED).decision == "deny"
    assert len(simulate_params(fake)) == 2
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT, fresh=True).allowed
    assert len(simulate_params(fake)) == 3
    for _ in range(2):
        tp.check("dana@example.com", "aws-main", "s3:DeleteObject", REPORT)
    assert len(simulate_params(fake)) == 5


def test_fresh_asks_anew_for_the_role_assignments_too(fake: FakeAWS) -> None:
    """A revoked permission set takes effect on the next fresh check, not when the identity
    cache (an hour by default) expires."""
    identity_center(fake)
    tp = engine(fake, **ic_keys(fake))
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
    fake.assignments = [a for a in fake.assignments if a[1] != "u-dana"]  # revoked
    d = tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT, fresh=True)
    assert d.decision == "unknown", d.reason
    assert "maps to no aws user" in d.reason
    assert fake.actions().count("ListAccountAssignmentsForPrincipal") == 2


def test_a_fresh_check_refreshes_the_identity_cache_for_later_checks(fake: FakeAWS) -> None:
    identity_center(fake)
    tp = engine(fake, **ic_keys(fake))
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
    fake.assignments = [a for a in fake.assignments if a[1] != "u-dana"]
    tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT, fresh=True)
    fake.assignments.append(("USER", "u-dana", ACCOUNT, DEV_SET))  # granted again
    assert tp.check("dana@example.com", "aws-main", "s3:PutObject", REPORT, fresh=True).allowed
    asked = fake.actions().count("GetUserId")
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT + ".bak").allowed
    assert fake.actions().count("GetUserId") == asked  # the fresh answer was kept


def test_deployments_sharing_a_store_never_answer_from_each_others_cache(
    fake: FakeAWS, tmp_path: Path
) -> None:
    """Two deployments name their connection aws-main; only one lets dana read reports."""
    store = f"sqlite:///{tmp_path}/state.db"
    with FakeAWS(account=ACCOUNT) as other:
        other.add_key(KEY, SECRET, ENGINE)
        other.add_principal(ENGINE, READ_ALL)
        other.add_principal(DANA, {"Version": "2012-10-17", "Statement": []})
        with Toolpass([conn(fake)], store=store) as first:
            assert first.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
        with Toolpass([conn(other)], store=store) as second:
            d = second.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
        assert d.decision == "deny", d.reason
        assert not d.cached
        assert len(simulate_params(other)) == 1
        with Toolpass([conn(fake)], store=store) as third:  # the same deployment shares
            assert third.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).cached


#: A connection's settings; each test below changes one of them.
SETTINGS: dict[str, Any] = {
    "id": "aws-main",
    "integration": "aws",
    "url": "https://iam.amazonaws.com",
    "credentials": "static",
    "access_key_id": literal(KEY),
    "secret_access_key": literal(SECRET),
    "account_id": ACCOUNT,
    "identity": TEMPLATE,
}


def scope_of(connection: dict[str, Any]) -> str:
    """The cache scope of a deployment that has the one ``connection``."""
    with Toolpass([connection]) as engine:
        return engine.integration("aws-main").cache_scope()


@pytest.fixture(scope="module")
def base_scope() -> str:
    return scope_of(SETTINGS)


def test_the_same_settings_share_the_cache(base_scope: str) -> None:
    assert scope_of({**SETTINGS}) == base_scope


@settings(max_examples=40)
@given(
    key=st.sampled_from(["url", "account_id", "implicit_deny", "identity", "access_key_id"]),
    value=st.integers(min_value=0, max_value=10**11),
)
def test_any_setting_that_differs_separates_the_cache(
    base_scope: str, key: str, value: int
) -> None:
    changed = {
        "url": f"https://iam-{value}.example.com",
        "account_id": f"{value:012d}" if f"{value:012d}" != ACCOUNT else "000000000000",
        "implicit_deny": "unknown",
        "identity": {**TEMPLATE, "template": f"arn:aws:iam::{value:012d}x:role/{{local}}"},
        "access_key_id": f"env:KEY_{value}",
    }
    assert scope_of({**SETTINGS, key: changed[key]}) != base_scope


# --- probe ---------------------------------------------------------------------------------


def test_probe(fake: FakeAWS) -> None:
    result = engine(fake).probe()["aws-main"]
    assert result.ok
    assert ENGINE in result.detail
    assert ACCOUNT in result.detail
    assert fake.actions() == ["GetCallerIdentity"]
    assert "/us-east-1/sts/aws4_request" in fake.seen("POST", "/")[0].headers["authorization"]


def test_probe_with_a_rejected_key(fake: FakeAWS) -> None:
    result = engine(fake, secret_access_key=literal("nope")).probe()["aws-main"]
    assert not result.ok
    assert "SignatureDoesNotMatch" in result.detail


def test_probe_through_an_assumed_role(fake: FakeAWS) -> None:
    fake.add_principal(READER, READ_ALL)
    result = engine(fake, role_arn=READER).probe()["aws-main"]
    assert result.ok
    assert "assumed-role/toolpass-reader/toolpass" in result.detail


# --- SigV4 against botocore ------------------------------------------------------------------


FIXED = datetime.datetime(2024, 5, 17, 12, 34, 56, tzinfo=datetime.timezone.utc)


def botocore_headers(
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    creds: Credentials,
    region: str,
    service: str,
) -> dict[str, str]:
    monkeypatch.setattr(
        botocore.auth, "get_current_datetime", lambda remove_tzinfo=True: FIXED.replace(tzinfo=None)
    )
    request = AWSRequest(method, url, headers=dict(headers), data=body)
    botocreds = BotoCredentials(creds.access_key_id, creds.secret_access_key, creds.session_token)
    SigV4Auth(botocreds, service, region).add_auth(request)
    return dict(request.headers.items())


@pytest.mark.parametrize(
    ("method", "url", "headers", "body", "token", "region", "service"),
    [
        (
            "POST",
            "https://iam.amazonaws.com/",
            {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
            b"Action=SimulatePrincipalPolicy&Version=2010-05-08",
            None,
            "us-east-1",
            "iam",
        ),
        (
            "POST",
            "https://sts.eu-west-1.amazonaws.com/",
            {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
            b"Action=GetCallerIdentity&Version=2011-06-15",
            "FwoGZXIvYXdzE//token==",
            "eu-west-1",
            "sts",
        ),
        (
            "POST",
            "http://127.0.0.1:8123/",
            {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "AWSIdentityStore.X"},
            b'{"IdentityStoreId": "d-1"}',
            None,
            "eu-west-1",
            "identitystore",
        ),
        (
            "GET",
            "https://example.amazonaws.com/a%20b/c?z=1&a=%2F&a=0",
            {"X-Custom": "  spaced   value  "},
            b"",
            "tok",
            "us-gov-west-1",
            "execute-api",
        ),
    ],
)
def test_sigv4_matches_botocore_byte_for_byte(
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    token: str | None,
    region: str,
    service: str,
) -> None:
    creds = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    mine = sign_v4(method, url, headers, body, creds, region, service, now=FIXED)
    theirs = botocore_headers(monkeypatch, method, url, headers, body, creds, region, service)
    assert mine["Authorization"] == theirs["Authorization"]
    assert mine["X-Amz-Date"] == theirs["X-Amz-Date"] == "20240517T123456Z"
    assert mine.get("X-Amz-Security-Token") == theirs.get("X-Amz-Security-Token")


@settings(max_examples=60, deadline=None)
@given(
    body=st.binary(max_size=200),
    value=st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=30),
    secret=st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40),
)
def test_sigv4_matches_botocore_for_any_body(body: bytes, value: str, secret: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        creds = Credentials("AKIDEXAMPLE", secret)
        headers = {"Content-Type": "application/octet-stream", "X-Thing": value}
        url = "https://iam.amazonaws.com/"
        mine = sign_v4("POST", url, headers, body, creds, "us-east-1", "iam", now=FIXED)
        theirs = botocore_headers(mp, "POST", url, headers, body, creds, "us-east-1", "iam")
    assert mine["Authorization"] == theirs["Authorization"]


# --- the fake against the real client --------------------------------------------------------


def boto(fake: FakeAWS, service: str, **kw: Any) -> Any:
    return opened(
        boto3.client(
            service,
            endpoint_url=fake.url,
            region_name=kw.pop("region_name", "us-east-1"),
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
            config=BotoConfig(retries={"max_attempts": 1, "mode": "standard"}),
            **kw,
        )
    )


def test_boto3_simulate_principal_policy_against_the_fake(fake: FakeAWS) -> None:
    iam = boto(fake, "iam")
    fake.empty_pages = 1
    pages = iam.get_paginator("simulate_principal_policy").paginate(
        PolicySourceArn=DANA,
        ActionNames=["s3:GetObject", "s3:DeleteObject"],
        ResourceArns=[REPORT, LOCKED],
        ContextEntries=[
            {
                "ContextKeyName": "aws:MultiFactorAuthPresent",
                "ContextKeyValues": ["true"],
                "ContextKeyType": "boolean",
            }
        ],
    )
    results = [r for page in pages for r in page["EvaluationResults"]]
    assert len(results) == 2
    get, delete = results
    assert get["EvalActionName"] == "s3:GetObject"
    assert get["EvalDecision"] == "explicitDeny"
    by_resource = {r["EvalResourceName"]: r for r in get["ResourceSpecificResults"]}
    assert by_resource[REPORT]["EvalResourceDecision"] == "allowed"
    assert by_resource[LOCKED]["EvalResourceDecision"] == "explicitDeny"
    assert by_resource[LOCKED]["MatchedStatements"][0]["SourcePolicyType"] == "role"
    assert {
        r["EvalResourceName"]: r["EvalResourceDecision"] for r in delete["ResourceSpecificResults"]
    } == {REPORT: "allowed", LOCKED: "explicitDeny"}
    fake.empty_pages = 0
    answer = iam.simulate_principal_policy(
        PolicySourceArn=DANA, ActionNames=["s3:DeleteObject"], ResourceArns=[REPORT]
    )
    (only,) = answer["EvaluationResults"]
    assert only["EvalDecision"] == "implicitDeny"
    assert only["MissingContextValues"] == ["aws:MultiFactorAuthPresent"]
    assert answer["IsTruncated"] is False


def test_boto3_sees_aws_errors_from_the_fake(fake: FakeAWS) -> None:
    iam = boto(fake, "iam")
    with pytest.raises(ClientError) as info:
        iam.simulate_principal_policy(PolicySourceArn=ERIN, ActionNames=["s3:GetObject"])
    assert info.value.response["Error"]["Code"] == "NoSuchEntity"
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    bad = opened(
        boto3.client(
            "iam",
            endpoint_url=fake.url,
            region_name="us-east-1",
            aws_access_key_id=KEY,
            aws_secret_access_key="wrong",
            config=BotoConfig(retries={"max_attempts": 1, "mode": "standard"}),
        )
    )
    with pytest.raises(ClientError) as info:
        bad.simulate_principal_policy(PolicySourceArn=DANA, ActionNames=["s3:GetObject"])
    assert info.value.response["Error"]["Code"] == "SignatureDoesNotMatch"


def test_boto3_sts_against_the_fake(fake: FakeAWS) -> None:
    sts = boto(fake, "sts")
    assert sts.get_caller_identity()["Arn"] == ENGINE
    fake.add_principal(READER, READ_ALL, external_id="ext-42")
    creds = sts.assume_role(RoleArn=READER, RoleSessionName="boto", ExternalId="ext-42")
    assert creds["Credentials"]["Expiration"].timestamp() > time.time() + 3000
    assumed = opened(
        boto3.client(
            "sts",
            endpoint_url=fake.url,
            region_name="us-east-1",
            aws_access_key_id=creds["Credentials"]["AccessKeyId"],
            aws_secret_access_key=creds["Credentials"]["SecretAccessKey"],
            aws_session_token=creds["Credentials"]["SessionToken"],
        )
    )
    assert assumed.get_caller_identity()["Arn"].endswith(":assumed-role/toolpass-reader/boto")
    with pytest.raises(ClientError) as info:
        sts.assume_role(RoleArn=READER, RoleSessionName="boto", ExternalId="nope")
    assert info.value.response["Error"]["Code"] == "AccessDenied"


def test_boto3_identity_center_against_the_fake(fake: FakeAWS) -> None:
    identity_center(fake)
    ids = boto(fake, "identitystore", region_name="eu-west-1")
    found = ids.get_user_id(
        IdentityStoreId=fake.identity_store_id,
        AlternateIdentifier={
            "UniqueAttribute": {
                "AttributePath": "emails.value",
                "AttributeValue": "erin@example.com",
            }
        },
    )
    assert found["UserId"] == "u-erin"
    with pytest.raises(ClientError) as info:
        ids.get_user_id(
            IdentityStoreId=fake.identity_store_id,
            AlternateIdentifier={
                "UniqueAttribute": {"AttributePath": "userName", "AttributeValue": "nobody"}
            },
        )
    assert info.value.response["Error"]["Code"] == "ResourceNotFoundException"
    memberships = ids.list_group_memberships_for_member(
        IdentityStoreId=fake.identity_store_id, MemberId={"UserId": "u-erin"}
    )
    assert [m["GroupId"] for m in memberships["GroupMemberships"]] == ["g-ops"]
    sso = boto(fake, "sso-admin", region_name="eu-west-1")
    assigned = sso.list_account_assignments_for_principal(
        InstanceArn=fake.instance_arn,
        PrincipalId="u-dana",
        PrincipalType="USER",
        Filter={"AccountId": ACCOUNT},
    )
    assert [a["PermissionSetArn"] for a in assigned["AccountAssignments"]] == [DEV_SET]
    described = sso.describe_permission_set(InstanceArn=fake.instance_arn, PermissionSetArn=DEV_SET)
    assert described["PermissionSet"]["Name"] == "Developer"
    roles = boto(fake, "iam").list_roles(PathPrefix="/aws-reserved/sso.amazonaws.com/")["Roles"]
    assert [r["Arn"] for r in roles] == [DEV_ROLE, OPS_ROLE]


# --- moto's server ---------------------------------------------------------------------------


@pytest.fixture
def moto_url() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def moto_client(url: str, service: str) -> Any:
    return opened(
        boto3.client(
            service,
            endpoint_url=url,
            region_name="eu-west-1",
            aws_access_key_id="AKIDMOTO",
            aws_secret_access_key="moto-secret",
            config=BotoConfig(retries={"max_attempts": 1, "mode": "standard"}),
        )
    )


def test_moto_does_not_implement_simulate_principal_policy(moto_url: str) -> None:
    """moto (5.x) has no SimulatePrincipalPolicy, so simulation is tested on the fake above;
    when this starts failing, moto can run the simulation end to end too."""
    iam = moto_client(moto_url, "iam")
    iam.create_role(RoleName="dana", AssumeRolePolicyDocument="{}")
    with pytest.raises(ResponseParserError, match="500 Internal Server Error"):
        iam.simulate_principal_policy(PolicySourceArn=DANA, ActionNames=["s3:GetObject"])


def test_identity_center_sts_and_probe_against_moto(moto_url: str, fake: FakeAWS) -> None:
    """Identity Center look-up, AssumeRole and GetCallerIdentity on moto's server; only the
    simulation (which moto lacks) goes to the fake, under the credentials moto issued."""
    ids = moto_client(moto_url, "identitystore")
    sso = moto_client(moto_url, "sso-admin")
    iam = moto_client(moto_url, "iam")
    store = "d-9067230f2e"
    instance = "arn:aws:sso:::instance/ssoins-1234567890abcdef"
    user = ids.create_user(
        IdentityStoreId=store,
        UserName="dana",
        DisplayName="Dana",
        Name={"GivenName": "Dana", "FamilyName": "Smith"},
        Emails=[{"Value": "dana@example.com", "Primary": True}],
    )["UserId"]
    group = ids.create_group(IdentityStoreId=store, DisplayName="ops")["GroupId"]
    ids.create_group_membership(IdentityStoreId=store, GroupId=group, MemberId={"UserId": user})
    dev = sso.create_permission_set(InstanceArn=instance, Name="Developer")["PermissionSet"]
    ops = sso.create_permission_set(InstanceArn=instance, Name="Operator")["PermissionSet"]
    for kind, pid, ps in (("USER", user, dev), ("GROUP", group, ops)):
        sso.create_account_assignment(
            InstanceArn=instance,
            TargetId=ACCOUNT,
            TargetType="AWS_ACCOUNT",
            PermissionSetArn=ps["PermissionSetArn"],
            PrincipalType=kind,
            PrincipalId=pid,
        )
    arns = {}
    for name in (
        "AWSReservedSSO_Developer_0123456789abcdef",
        "AWSReservedSSO_Operator_0a1b2c3d4e5f6a7b",
    ):
        arns[name] = iam.create_role(RoleName=name, Path=SSO_PATH, AssumeRolePolicyDocument="{}")[
            "Role"
        ]["Arn"]
    iam.create_role(RoleName="toolpass-reader", AssumeRolePolicyDocument="{}")
    dev_role = arns["AWSReservedSSO_Developer_0123456789abcdef"]

    # moto issues the assumed credentials; the fake must accept them for the simulation
    fake.add_principal(dev_role, DANA_POLICY)

    keys: dict[str, Any] = {
        "id": "aws-moto",
        "integration": "aws",
        "url": moto_url,
        "sts_url": moto_url,
        "identitystore_url": moto_url,
        "sso_admin_url": moto_url,
        "endpoint_urls": {"s3": moto_url},  # moto's S3 answers GetBucketPolicy
        "region": "eu-west-1",
        "credentials": "static",
        "access_key_id": literal("AKIDMOTO"),
        "secret_access_key": literal("moto-secret"),
        "role_arn": f"arn:aws:iam::{ACCOUNT}:role/toolpass-reader",
        "external_id": "ext-42",
        "identity": {"mode": "identity_center"},
        "identity_store_id": store,
        "sso_instance_arn": instance,
        "account_id": ACCOUNT,
    }
    tp = opened(Toolpass(connections=[keys]))
    probe = tp.probe()["aws-moto"]
    assert probe.ok
    assert "assumed-role/toolpass-reader/toolpass" in probe.detail
    live = tp.integration("aws-moto")
    assert isinstance(live, AWS)
    # two permission sets (one through the group): ambiguous without sso_permission_set
    assert sorted(live.lookup_user("dana@example.com", "identity_center")) == sorted(arns.values())
    assert list(live.lookup_user("nobody@example.com", "identity_center")) == []
    d = tp.check("dana@example.com", "aws-moto", "s3:GetObject", REPORT)
    assert d.decision == "unknown"
    assert "refusing to guess" in d.reason

    # with a permission set chosen, the simulation of moto's role runs on the fake under
    # the session moto issued (the fake learns moto's keys: it verifies their signature)
    chosen = opened(Toolpass(connections=[{**keys, "sso_permission_set": "Developer"}]))
    live = chosen.integration("aws-moto")
    assert isinstance(live, AWS)
    assert live.user_id("dana@example.com") == dev_role  # resolved on moto, now cached
    creds = live.credentials()
    assert creds.access_key_id.startswith("ASIA")
    assert creds.session_token
    fake.add_key(creds.access_key_id, creds.secret_access_key, ENGINE, token=creds.session_token)
    live.iam_url = fake.url
    assert chosen.check("dana@example.com", "aws-moto", "s3:GetObject", REPORT).allowed
    assert chosen.check("dana@example.com", "aws-moto", "s3:GetObject", LOCKED).decision == "deny"


# --- the shared conformance suite ----------------------------------------------------------
class TestAWSConformance(IntegrationConformance):
    """Temporary static keys: the secret key signs, the session token travels; an echo of
    either in an AWS error (XML, as IAM and STS send it) never reaches a reason."""

    integration = "aws"
    user, action, resource = "dana@example.com", "s3:GetObject", REPORT
    system_user, template = DANA, f"arn:aws:iam::{ACCOUNT}:role/{{local}}"
    credential, other_secrets = "temporary/secret+key", ("temporary-session-token",)
    malformed = "not XML"

    @pytest.fixture
    def api(self, fake: FakeAWS) -> FakeAWS:
        fake.add_key("ASIATEMPORARY0000002", self.credential, ENGINE, token=self.other_secrets[0])
        return fake

    def connection(self, api: FakeAWS, **extra: Any) -> dict[str, Any]:
        keys = {
            "access_key_id": literal("ASIATEMPORARY0000002"),
            "secret_access_key": literal(self.credential),
            "session_token": literal(self.other_secrets[0]),
        }
        return conn(api, **{**keys, **extra})

    def error_body(self, text: str) -> bytes:
        return error_xml("InvalidClientTokenId", text, 403).body  # type: ignore[no-any-return]

    def disable_account(self, api: FakeAWS) -> None:
        """IAM has no disabled state: a removed role is AWS's nearest (NoSuchEntity)."""
        del api.principals[DANA]

    def make_read_only(self, api: FakeAWS) -> str:
        """A bucket policy that denies every write to everyone."""
        deny = statement("Deny", "*", ["s3:Put*", "s3:Delete*"], "arn:aws:s3:::reports/*")
        api.resource_policies["reports"] = policy(deny)
        return "s3:PutObject"

    def bind_admins(self, api: FakeAWS) -> None:
        """dana holds AdministratorAccess; an Organizations SCP denies the bucket to all."""
        api.add_principal(DANA, policy(statement("Allow", None)))
        api.scp = policy(
            statement("Allow", None), statement("Deny", None, "s3:*", "arn:aws:s3:::reports/*")
        )

    def revoke(self, api: FakeAWS) -> None:
        api.add_principal(DANA, policy())


# --- resource-based policies ---------------------------------------------------------------

DANA_USER = f"arn:aws:iam::{ACCOUNT}:user/dana"
OTHER = "210987654321"
AS_USER = {"mode": "users", "users": {"dana@example.com": DANA_USER}}


def statement(
    effect: str, principal: Any, action: Any = "*", resource: Any = "*"
) -> dict[str, Any]:
    return {"Effect": effect, "Principal": principal, "Action": action, "Resource": resource}


def policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def test_a_bucket_policy_that_denies_the_user_is_deny(fake: FakeAWS) -> None:
    fake.add_principal(DANA_USER, DANA_POLICY)
    fake.resource_policies["reports"] = policy(statement("Deny", {"AWS": DANA_USER}, "s3:*"))
    d = engine(fake, identity=AS_USER).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "deny", d.reason
    (_, params) = simulate_params(fake)
    assert json.loads(params["ResourcePolicy"]) == fake.resource_policies["reports"]
    assert params["ResourceOwner"] == f"arn:aws:iam::{ACCOUNT}:root"
    assert params["CallerArn"] == DANA_USER


def test_a_resource_policy_is_simulated_for_the_user_never_a_stand_in(fake: FakeAWS) -> None:
    bob = f"arn:aws:iam::{ACCOUNT}:user/bob"
    fake.add_principal(DANA_USER, policy())
    fake.resource_policies["reports"] = policy(statement("Allow", {"AWS": bob}, "s3:GetObject"))
    tp = engine(fake, identity=AS_USER, caller_arn=bob)
    d = tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "deny", d.reason
    read = fake.seen("GET", "/reports")[0]
    assert read.headers["x-amz-expected-bucket-owner"] == ACCOUNT
    assert "/s3/aws4_request" in read.headers["authorization"]


def test_a_bucket_policy_alone_can_grant_a_user(fake: FakeAWS) -> None:
    fake.add_principal(DANA_USER, {"Version": "2012-10-17", "Statement": []})
    grant = statement("Allow", {"AWS": DANA_USER}, "s3:GetObject", "arn:aws:s3:::reports/*")
    fake.resource_policies["reports"] = policy(grant)
    d = engine(fake, identity=AS_USER).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "allow", d.reason
    assert "ResourcePolicy (resource)" in d.reason


def test_a_role_never_passes_on_a_simulation_that_lacked_a_denying_policy(fake: FakeAWS) -> None:
    """IAM simulates resource policies only for users: a role's allow stands only where the
    resource's policy cannot take it away."""
    fake.resource_policies["reports"] = policy(statement("Deny", {"AWS": DANA}, "s3:*"))
    d = engine(fake).check("dana@example.com", "aws-main", "s3:GetObject", REPORT)
    assert d.decision == "unknown", d.reason
    assert "Deny statements" in d.reason
    assert all("ResourcePolicy" not in p for p in simulate_params(fake))


def test_a_role_is_allowed_where_the_policy_only_grants(fake: FakeAWS) -> None:
    fake.resource_policies["reports"] = policy(statement("Allow", {"AWS": ERIN}, "s3:GetObject"))
    tp = engine(fake)
    assert tp.check("dana@example.com", "aws-main", "s3:GetObject", REPORT).allowed
    d = tp.check("dana@example.com", "aws-main", "s3:DeleteBucket", "arn:aws:s3:::reports")
    assert d.decision == "unknown", d.reason  # the policy might grant dana: not a deny
    assert "may grant it on its own" in d.reason


def test_no_bucket_policy_is_no_policy(fake: FakeAWS) -> None:
    fake.add_bucket("reports")  # exists, without a policy: NoSuchBucketPolicy
    d = engine(fake, implicit_deny="auto").check(
        "dana@example.com", "aws-main", "s3:DeleteBucket", "arn:aws:s3:::reports"
    )
    assert d.decision == "deny", d.reason


@pytest.mark.parametrize("service", ["s3", "kms", "sqs", "sns", "lambda", "secretsmanager"])
def test_a_policy_the_engine_may_not_read_is_unknown_but_a_deny_stands(
    fake: FakeAWS, service: str
) -> None:
    resource = RESOURCES[service]
    fake.resource_policies[POLICY_KEYS.get(service, resource)] = policy()
    fake.policy_read_denied.add(service)
    fake.add_principal(DANA, {**DANA_POLICY, "Statement": [statement("Allow", None)]})
    tp = engine(fake)
    d = tp.check("dana@example.com", "aws-main", f"{service}:Anything", resource)
    assert d.decision == "unknown", d.reason
    assert "could not be read" in d.reason
    fake.add_principal(DANA, policy(statement("Deny", None)))
    assert tp.check("dana@example.com", "aws-main", f"{service}:Other", resource).decision == "deny"


RESOURCES = {
    "s3": "arn:aws:s3:::reports/q1.csv",
    "kms": f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "sqs": f"arn:aws:sqs:eu-west-1:{ACCOUNT}:jobs",
    "sns": f"arn:aws:sns:eu-west-1:{ACCOUNT}:alerts",
    "lambda": f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:resize",
    "secretsmanager": f"arn:aws:secretsmanager:eu-west-1:{ACCOUNT}:secret:db-AbCdEf",
    "ecr": f"arn:aws:ecr:eu-west-1:{ACCOUNT}:repository/app",
    "dynamodb": f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/orders",
    "iam": f"arn:aws:iam::{ACCOUNT}:role/deployer",
}
POLICY_KEYS = {"s3": "reports"}
ACTIONS = {"iam": "sts:AssumeRole"}


@pytest.mark.parametrize("service", sorted(RESOURCES))
def test_each_policy_bearing_resource_has_its_policy_read(fake: FakeAWS, service: str) -> None:
    """A role whose IAM policies allow the action, on a resource whose own policy denies it:
    never an allow (IAM cannot simulate it for a role), and the policy was read."""
    resource, action = RESOURCES[service], ACTIONS.get(service, f"{service}:Anything")
    if service == "iam":
        fake.add_principal(resource, READ_ALL)
    fake.add_principal(DANA, policy(statement("Allow", None)))
    fake.resource_policies[POLICY_KEYS.get(service, resource)] = policy(
        statement("Deny", {"AWS": DANA}), statement("Allow", {"AWS": DANA})
    )
    d = engine(fake).check("dana@example.com", "aws-main", action, resource)
    assert d.decision == "unknown", d.reason
    assert "Deny statements" in d.reason
    assert len(fake.requests) >= 2  # the simulation and the policy read


def test_a_key_policy_that_does_not_delegate_to_iam_decides(fake: FakeAWS) -> None:
    key = RESOURCES["kms"]
    fake.add_principal(DANA, policy(statement("Allow", None, "kms:*")))
    fake.add_principal(DANA_USER, policy(statement("Allow", None, "kms:*")))
    fake.resource_policies[key] = policy(statement("Allow", {"AWS": ERIN}, "kms:*"))
    role, user = engine(fake), engine(fake, identity=AS_USER)
    d = role.check("dana@example.com", "aws-main", "kms:Decrypt", key)
    assert d.decision == "unknown", d.reason
    assert "only the key policy" in d.reason
    d = user.check("dana@example.com", "aws-main", "kms:Decrypt", key)
    assert d.decision == "unknown", d.reason
    assert "none of its statements" in d.reason
    root = {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}
    fake.resource_policies[key] = policy(statement("Allow", root, "kms:*"))
    assert role.check("dana@example.com", "aws-main", "kms:Encrypt", key).allowed
    fake.resource_policies[key] = policy(statement("Allow", {"AWS": DANA_USER}, "kms:Sign"))
    assert user.check("dana@example.com", "aws-main", "kms:Sign", key).allowed


def test_across_accounts_both_must_allow(fake: FakeAWS) -> None:
    queue = f"arn:aws:sqs:eu-west-1:{OTHER}:jobs"
    fake.add_principal(DANA_USER, policy(statement("Allow", None, "sqs:*")))
    fake.resource_policies[queue] = policy(statement("Allow", {"AWS": ERIN}, "sqs:*"))
    tp = engine(fake, identity=AS_USER)
    d = tp.check("dana@example.com", "aws-main", "sqs:SendMessage", queue)
    assert d.decision == "deny", d.reason
    assert simulate_params(fake)[-1]["ResourceOwner"] == f"arn:aws:iam::{OTHER}:root"
    fake.resource_policies[queue] = policy(statement("Allow", {"AWS": DANA_USER}, "sqs:*"))
    assert tp.check("dana@example.com", "aws-main", "sqs:ReceiveMessage", queue).allowed
    fake.add_principal(DANA_USER, policy())  # the identity's own account no longer allows
    d = tp.check("dana@example.com", "aws-main", "sqs:DeleteMessage", queue)
    assert d.decision == "deny", d.reason
    fake.add_principal(DANA, policy(statement("Allow", None, "sqs:*")))  # a role: unknown
    d = engine(fake).check("dana@example.com", "aws-main", "sqs:SendMessage", queue)
    assert d.decision == "unknown", d.reason
    assert f"account {ACCOUNT}" in d.reason


def test_a_resource_of_a_service_whose_policies_are_not_read_is_unknown(fake: FakeAWS) -> None:
    group = f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:app"
    fake.add_principal(DANA, policy(statement("Allow", None, "logs:*")))
    d = engine(fake).check("dana@example.com", "aws-main", "logs:FilterLogEvents", group)
    assert d.decision == "unknown", d.reason
    assert "does not read the resource policies of logs" in d.reason


_EFFECTS = st.sampled_from(["Allow", "Deny"])
_WHO = st.sampled_from([{"AWS": DANA}, {"AWS": ERIN}, "*", {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}])


@settings(max_examples=25)
@given(
    identity=st.booleans(),
    statements=st.lists(st.tuples(_EFFECTS, _WHO), max_size=3),
)
def test_a_role_is_allowed_only_when_no_resource_statement_can_deny(
    identity: bool, statements: list[tuple[str, Any]]
) -> None:
    with FakeAWS(account=ACCOUNT) as fake:
        fake.add_key(KEY, SECRET, ENGINE)
        fake.add_principal(ENGINE, READ_ALL)
        fake.add_principal(DANA, policy(*([statement("Allow", None)] if identity else [])))
        queue = RESOURCES["sqs"]
        fake.resource_policies[queue] = policy(*(statement(e, w) for e, w in statements))
        with Toolpass([conn(fake)]) as tp:
            d = tp.check("dana@example.com", "aws-main", "sqs:SendMessage", queue)
    no_deny = all(effect == "Allow" for effect, _ in statements)
    assert d.allowed == (identity and no_deny), d.reason
    if not d.allowed and not identity:
        assert d.decision == ("unknown" if statements else "deny"), d.reason


def test_boto3_reads_the_fakes_resource_policies(fake: FakeAWS) -> None:
    """The fake's policy reads have the shapes boto3 parses (and signs for)."""
    doc = policy(statement("Allow", {"AWS": DANA}, "*"))
    for service in ("kms", "sqs", "sns", "lambda", "secretsmanager", "ecr", "dynamodb"):
        fake.resource_policies[RESOURCES[service]] = doc
    fake.resource_policies["reports"] = doc
    s3 = boto(fake, "s3")  # path style: the endpoint is an address
    assert json.loads(s3.get_bucket_policy(Bucket="reports")["Policy"]) == doc
    kms = boto(fake, "kms")
    assert json.loads(kms.get_key_policy(KeyId=RESOURCES["kms"])["Policy"]) == doc
    sqs = boto(fake, "sqs", region_name="eu-west-1")
    url = f"{fake.url}/{ACCOUNT}/jobs"
    found = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])
    assert json.loads(found["Attributes"]["Policy"]) == doc
    sns = boto(fake, "sns", region_name="eu-west-1")
    topic = sns.get_topic_attributes(TopicArn=RESOURCES["sns"])["Attributes"]
    assert json.loads(topic["Policy"]) == doc
    lam = boto(fake, "lambda", region_name="eu-west-1")
    assert json.loads(lam.get_policy(FunctionName="resize")["Policy"]) == doc
    sm = boto(fake, "secretsmanager", region_name="eu-west-1")
    secret = sm.get_resource_policy(SecretId=RESOURCES["secretsmanager"])
    assert json.loads(secret["ResourcePolicy"]) == doc
    ecr = boto(fake, "ecr", region_name="eu-west-1")
    repo = ecr.get_repository_policy(registryId=ACCOUNT, repositoryName="app")
    assert json.loads(repo["policyText"]) == doc
    ddb = boto(fake, "dynamodb", region_name="eu-west-1")
    assert json.loads(ddb.get_resource_policy(ResourceArn=RESOURCES["dynamodb"])["Policy"]) == doc
    with pytest.raises(ClientError) as missing:
        s3.get_bucket_policy(Bucket="nothing-here")
    assert missing.value.response["Error"]["Code"] == "NoSuchBucket"
