"""Wrong allows found by attacking AWS's checks (#19), through the request hook with boto3
against the AWS fake: a copy that reads an object the user may not read, and an upload to a
bucket whose default KMS key the user may not use, never reach S3."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from fakes.aws import FakeAWS
from hypothesis import given, settings
from hypothesis import strategies as st
from toolpass import Session, Toolkit
from toolpass.integrations.aws.tests.test_routes_aws import S3, integration, sent
from toolpass.intercept import ActionRefused

from . import test_hardening_s3 as base
from .test_hardening_s3 import ACCOUNT, AGENT_KEY, AGENT_SECRET, DANA, s3_client, s3_puts

aws = base.aws  # the AWS fake's fixture
KMS_KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.fixture
def kit(aws: FakeAWS, events: list[Any], no_ambient_aws: None) -> Iterator[Toolkit]:
    with base._kit(aws.url, events) as made:
        yield made


def refused(call: Any, *args: Any) -> ActionRefused:
    with Session(DANA).active(), pytest.raises(ActionRefused) as info:
        call(*args)
    return info.value


@pytest.mark.parametrize(
    "source",
    [
        {"Bucket": "secret", "Key": "payroll.csv"},  # dana may not read it
        {"Bucket": "reports", "Key": "q0.csv"},  # another object: a second resource
        {"Bucket": "reports", "Key": "q1.csv", "VersionId": "v1"},  # an older version
        "secret/payroll.csv",
    ],
)
def test_a_copy_reads_its_source_so_it_is_refused(
    kit: Toolkit,
    aws: FakeAWS,
    source: Any,
) -> None:
    """S3 CopyObject needs s3:GetObject on the source as well as s3:PutObject on the
    destination; toolpass checked only the destination, so the agent's credential could copy
    a secret into a bucket the user reads. One request, one resource: refused."""
    client = s3_client(aws)

    @kit.tool()
    def copy() -> str:
        client.copy_object(Bucket="reports", Key="q1.csv", CopySource=source)
        return "copied"

    refused(copy)
    assert s3_puts(aws) == []


def test_a_copy_onto_itself_is_its_own_write(kit: Toolkit, aws: FakeAWS) -> None:
    aws.buckets["reports"]["q1.csv"] = (b"a,b\n", "text/csv")
    client = s3_client(aws)

    @kit.tool()
    def retag() -> str:
        source = {"Bucket": "reports", "Key": "q1.csv"}
        client.copy_object(
            Bucket="reports", Key="q1.csv", CopySource=source, MetadataDirective="REPLACE"
        )
        return "copied"

    with Session(DANA).active():
        retag()
    assert len(s3_puts(aws)) == 1


def test_an_upload_needs_the_buckets_default_kms_key(kit: Toolkit, aws: FakeAWS) -> None:
    aws.bucket_keys["reports"] = KMS_KEY
    aws.resource_policies[KMS_KEY] = {"Version": "2012-10-17", "Statement": []}
    client = s3_client(aws)

    @kit.tool()
    def save(text: str) -> str:
        client.put_object(Bucket="reports", Key="q1.csv", Body=text.encode())
        return "saved"

    refusal = refused(save, "a,b\n")
    assert refusal.code in ("not_authorized", "authorization_error")
    assert s3_puts(aws) == []


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["reports", "secret"]),
    st.text(alphabet="ab/.%?=", min_size=1, max_size=8),
    st.sampled_from([None, "v1"]),
)
def test_only_a_copy_of_the_destination_itself_is_placed(
    bucket: str, key: str, version: str | None
) -> None:
    """Whatever the source's spelling, a copy is placed only when it names the destination."""
    source = {"Bucket": bucket, "Key": key, **({"VersionId": version} if version else {})}
    request = sent(lambda: S3.copy_object(Bucket="reports", Key="a", CopySource=source))
    found = integration().match_request(request)
    assert found is not None
    assert found.action == "s3:PutObject"
    same = (bucket, key, version) == ("reports", "a", None)
    assert (found.resource is not None) == same


def test_a_lambda_qualifier_is_the_version_it_invokes(
    kit: Toolkit, aws: FakeAWS, events: list[Any]
) -> None:
    """``Invoke`` with ``Qualifier=prod`` runs the alias, whose ARN a policy names apart from
    the function's: a user denied on ``function:resize:prod`` may not invoke it."""
    function = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:resize"
    allow = {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": f"{function}*"}
    deny = {"Effect": "Deny", "Action": "lambda:InvokeFunction", "Resource": f"{function}:prod"}
    aws.add_principal(
        f"arn:aws:iam::{ACCOUNT}:role/dana",
        {"Version": "2012-10-17", "Statement": [allow, deny]},
    )
    lam = boto3.client(
        "lambda",
        endpoint_url=aws.url,
        region_name="us-east-1",
        aws_access_key_id=AGENT_KEY,
        aws_secret_access_key=AGENT_SECRET,
    )

    @kit.tool()
    def invoke(qualifier: str) -> int:
        return int(lam.invoke(FunctionName="resize", Qualifier=qualifier)["StatusCode"])

    refusal = refused(invoke, "prod")
    assert refusal.code == "not_authorized"
    assert aws.seen("POST", ".*/invocations") == []
    assert events[-1].actions[0]["resource"] == f"{function}:prod"
