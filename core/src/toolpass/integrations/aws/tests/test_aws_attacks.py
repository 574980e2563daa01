"""Wrong allows found by attacking AWS's checks (#19): an upload S3 refuses although IAM
allows ``s3:PutObject``, because the bucket encrypts new objects with a customer managed KMS
key the user may not use (``kms:GenerateDataKey``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes.aws import IAM_NS, FakeAWS

from toolpass.engine import Toolpass

from . import test_aws as base
from .test_aws import (
    ACCOUNT,
    AS_USER,
    DANA,
    DANA_POLICY,
    DANA_USER,
    REPORT,
    conn,
    policy,
    statement,
)

fake, no_ambient_aws = base.fake, base.no_ambient_aws  # the AWS fake's fixtures

KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ROOT = f"arn:aws:iam::{ACCOUNT}:root"
KEY_POLICY = policy(statement("Allow", {"AWS": ROOT}, "kms:*"))  # the default key policy
MAY_USE_KEY = statement("Allow", None, "kms:GenerateDataKey", KEY)
MAY_USE_KEY.pop("Principal")


@pytest.fixture
def tp(fake: FakeAWS) -> Iterator[Toolpass]:
    fake.add_bucket("reports")
    fake.resource_policies[KEY] = KEY_POLICY
    with Toolpass(connections=[conn(fake)]) as engine:
        yield engine


def put(tp: Toolpass) -> str:
    found = tp.check("dana@example.com", "aws-main", "s3:PutObject", REPORT, fresh=True)
    return f"{found.decision}: {found.reason}"


@pytest.mark.parametrize("named", [KEY, KEY.rpartition("/")[2]])
def test_an_upload_needs_the_buckets_default_kms_key(
    tp: Toolpass, fake: FakeAWS, named: str
) -> None:
    """AWS: uploading to a bucket whose default encryption is SSE-KMS needs
    kms:GenerateDataKey on its key; S3 refuses the PutObject otherwise."""
    assert put(tp).startswith("allow")  # SSE-S3: s3:PutObject alone decides
    fake.bucket_keys["reports"] = named
    said = put(tp)  # a role: IAM's simulation cannot weigh the key policy, so unknown
    assert said.startswith("unknown: reports encrypts new objects with the KMS key"), said
    fake.add_principal(DANA, {**DANA_POLICY, "Statement": [*DANA_POLICY["Statement"], MAY_USE_KEY]})
    assert put(tp).startswith("allow")


def test_a_default_key_toolpass_cannot_resolve_or_read_is_unknown(
    tp: Toolpass, fake: FakeAWS
) -> None:
    fake.add_principal(DANA, {**DANA_POLICY, "Statement": [*DANA_POLICY["Statement"], MAY_USE_KEY]})
    fake.bucket_keys["reports"] = "alias/reports"
    assert put(tp).startswith("unknown")
    fake.bucket_keys["reports"] = KEY
    fake.resource_policies[KEY] = policy()  # a key policy that grants nothing, delegates nothing
    assert put(tp).startswith("unknown")  # only the key policy can grant a role: unread grants


def test_an_iam_user_without_the_key_is_denied(fake: FakeAWS) -> None:
    """For an IAM user the key policy is simulated with the identity's: a plain deny."""
    fake.add_bucket("reports")
    fake.resource_policies[KEY] = KEY_POLICY
    fake.add_principal(DANA_USER, DANA_POLICY)
    fake.bucket_keys["reports"] = KEY
    with Toolpass(connections=[conn(fake, identity=AS_USER)]) as tp:
        said = put(tp)
        assert said.startswith("deny: reports encrypts new objects with the KMS key"), said
        user_policy = {**DANA_POLICY, "Statement": [*DANA_POLICY["Statement"], MAY_USE_KEY]}
        fake.add_principal(DANA_USER, user_policy)
        assert put(tp).startswith("allow")


@pytest.mark.parametrize(
    "decisions",
    [("allowed", "explicitDeny"), ("explicitDeny", "allowed"), ("allowed", "implicitDeny")],
)
def test_two_answers_for_one_resource_take_the_stricter(
    tp: Toolpass, fake: FakeAWS, decisions: tuple[str, str]
) -> None:
    """IAM's simulator may list one resource twice among its resource-specific results; the
    last one never overrides a deny before it: any deny wins."""
    instance = f"arn:aws:ec2:us-east-1:{ACCOUNT}:instance/i-0abc"
    fake.add_principal(DANA, policy(statement("Allow", None, "ec2:*")))
    specific = "".join(
        f"<member><EvalResourceName>{instance}</EvalResourceName>"
        f"<EvalResourceDecision>{d}</EvalResourceDecision></member>"
        for d in decisions
    )
    body = (
        f'<SimulatePrincipalPolicyResponse xmlns="{IAM_NS}"><SimulatePrincipalPolicyResult>'
        "<EvaluationResults><member><EvalActionName>ec2:StopInstances</EvalActionName>"
        f"<EvalResourceName>{instance}</EvalResourceName><EvalDecision>allowed</EvalDecision>"
        f"<ResourceSpecificResults>{specific}</ResourceSpecificResults></member>"
        "</EvaluationResults><IsTruncated>false</IsTruncated></SimulatePrincipalPolicyResult>"
        "<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>"
        "</SimulatePrincipalPolicyResponse>"
    )
    fake.fail(200, body=body.encode(), headers={"Content-Type": "text/xml"}, times=5)
    found = tp.check("dana@example.com", "aws-main", "ec2:StopInstances", instance, fresh=True)
    assert found.decision == "deny", found.reason
