"""The policies AWS resources carry themselves, read with each service's documented API.

IAM's policy simulator evaluates a resource-based policy only when it is passed
(``ResourcePolicy``, ``ResourceOwner``); this module reads it: an S3 bucket policy
(``GetBucketPolicy``, with ``x-amz-expected-bucket-owner`` so that the bucket's account is
known), a KMS key policy (``GetKeyPolicy``), an SQS queue policy (``GetQueueAttributes``), an
SNS topic policy (``GetTopicAttributes``), a Lambda function policy (``GetPolicy``), a
Secrets Manager resource policy (``GetResourcePolicy``), an ECR repository policy
(``GetRepositoryPolicy``), a DynamoDB table or stream policy (``GetResourcePolicy``) and an
IAM role's trust policy for ``sts:AssumeRole*`` (``GetRole``).

:func:`read` answers the :class:`ResourcePolicy` (``document`` None: the resource has none,
or does not exist), None for a resource that cannot carry one, or raises
:class:`LookupFailed` (the reason) when the policy cannot be read: the engine lacks the
permission, the service failed, or the resource is of a kind that carries a policy toolpass
does not read.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from toolpass.wire.errors import LookupFailed
from toolpass.wire.http import Response


class AWS(Protocol):
    """What the readers use of the AWS integration (its signed requests)."""

    partition: str
    region: str

    def endpoint(self, service: str, region: str) -> str: ...

    def signed(
        self,
        method: str,
        url: str,
        service: str,
        region: str,
        headers: Mapping[str, str],
        body: bytes,
        what: str,
    ) -> Response: ...

    def error_code(self, answer: Response) -> str: ...

    def resource_failure(self, answer: Response, what: str, code: str) -> LookupFailed: ...

    def parse(self, answer: Response, what: str, kind: type | None = dict) -> Any: ...

    def json_call(
        self,
        service: str,
        region: str,
        target: str,
        payload: Mapping[str, Any],
        *,
        version: str = "1.1",
    ) -> Any: ...

    def query_attribute(
        self, service: str, region: str, params: Mapping[str, str], name: str
    ) -> str | None: ...

    def role_trust_policy(self, role: str) -> str | None: ...


_EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_ASSUME = ("sts:assumerole", "sts:assumerolewithsaml", "sts:assumerolewithwebidentity")
_ASSUME_MORE = ("sts:tagsession", "sts:setsourceidentity", "sts:setcontext")
#: Services whose resources carry policies toolpass does not read: such a check is unknown
#: unless IAM's own answer is an explicit deny.
UNREAD_SERVICES = frozenset(
    {
        "s3-object-lambda",
        "s3express",
        "glacier",
        "backup",
        "events",
        "logs",
        "es",
        "aoss",
        "execute-api",
        "elasticfilesystem",
        "codeartifact",
        "serverlessrepo",
        "iot",
        "mediastore",
        "ssm-incidents",
        "kinesis",
        "kafka",
        "redshift-serverless",
        "glue",
        "ram",
        "signer",
        "acm-pca",
        "cloudtrail",
        "bedrock",
    }
)


@dataclass(frozen=True)
class ResourcePolicy:
    """A resource's own policy as read: its JSON ``document`` (None: it has none), what it
    is called (``kind``), and the ``account`` that owns the resource."""

    kind: str
    account: str
    document: str | None
    #: Only this policy can grant (a KMS key policy, a role's trust policy), unless it
    #: delegates to the account's IAM policies.
    must_grant: bool = False

    def statements(self) -> list[Mapping[str, Any]]:
        """The policy's statements; :class:`LookupFailed` when it is not a JSON policy."""
        try:
            data = json.loads(self.document or '{"Statement": []}')
            found = data["Statement"]
        except (ValueError, TypeError, KeyError):
            raise LookupFailed(f"the {self.kind} is not a JSON policy") from None
        found = found if isinstance(found, list) else [found]
        if not all(isinstance(s, Mapping) for s in found):
            raise LookupFailed(f"the {self.kind} holds a statement that is not an object")
        return found

    def denies_anything(self) -> bool:
        """Whether any statement is a Deny."""
        return any(s.get("Effect") != "Allow" for s in self.statements())

    def delegates(self, action: str, partition: str) -> bool:
        """Whether it lets the owning account's IAM policies decide ``action``: an
        unconditional Allow of the action to the account itself (its root)."""
        root = (f"arn:{partition}:iam::{self.account}:root", self.account)
        for s in self.statements():
            principals = s.get("Principal")
            aws = principals.get("AWS") if isinstance(principals, Mapping) else None
            if s.get("Effect") != "Allow" or "Condition" in s or aws is None:
                continue
            if not any(p in root for p in _listed(aws)):
                continue
            if any(_glob(a, action) for a in _listed(s.get("Action"))):
                return True
        return False


def read(aws: AWS, action: str, resource: str, principal_account: str) -> ResourcePolicy | None:
    """The policy ``resource`` carries (see the module docstring)."""
    if resource == "*":
        return None
    parts = resource.split(":", 5)
    service, region, account, rest = parts[2], parts[3], parts[4], parts[5]
    if service in UNREAD_SERVICES:
        raise LookupFailed(f"toolpass does not read the resource policies of {service}")
    if service == "iam":
        if action.lower() not in _ASSUME + _ASSUME_MORE or not rest.startswith("role/"):
            return None
        return _role_trust(aws, rest, account)
    reader = _READERS.get(service)
    if reader is None:
        return None
    if "*" in resource or "?" in resource:
        raise LookupFailed(f"the policy of {resource} cannot be read: it names no one resource")
    return reader(aws, region or aws.region, account or principal_account, rest)


def _bucket_get(aws: AWS, region: str, account: str, bucket: str, what: str) -> Response:
    """A bucket subresource (``?policy``, ``?encryption``), asked of the bucket's region."""
    headers = {"x-amz-content-sha256": _EMPTY_SHA256, "x-amz-expected-bucket-owner": account}
    for _ in range(2):
        url = f"{aws.endpoint('s3', region)}/{quote(bucket, safe='')}?{what}="
        answer = aws.signed("GET", url, "s3", region, headers, b"", f"read the bucket {what}")
        moved = answer.header("x-amz-bucket-region")
        if answer.status in (301, 400) and moved and moved != region:
            region = moved  # the bucket lives in another region: ask there, once
            continue
        break
    return answer


def bucket_key(aws: AWS, account: str, bucket: str) -> str | None:
    """The ARN of the customer managed KMS key a bucket encrypts new objects with by default
    (``GetBucketEncryption``); None for SSE-S3 or AWS's own ``aws/s3`` key. A key named by
    alias cannot be told without reading the alias: :class:`LookupFailed`."""
    answer = _bucket_get(aws, aws.region, account, bucket, "encryption")
    what = f"the default encryption of {bucket}"
    if answer.status != 200:
        code = aws.error_code(answer)
        if code in ("ServerSideEncryptionConfigurationNotFoundError", "NoSuchBucket"):
            return None  # no default key (an absent bucket takes no upload either)
        if code == "AccessDenied":
            raise LookupFailed(
                f"S3 refused to read {what} (the engine lacks s3:GetEncryptionConfiguration)"
            )
        raise aws.resource_failure(answer, f"read {what}", code)
    if b"<!DOCTYPE" in answer.body or b"<!ENTITY" in answer.body:
        raise LookupFailed(f"S3's answer to {what} declares a DTD")
    try:
        root = ET.fromstring(answer.body)  # noqa: S314 - DTDs are refused above
    except ET.ParseError:
        raise LookupFailed(f"S3's answer to {what} is not XML") from None
    keys = []
    for rule in root.iter():
        if rule.tag.rpartition("}")[2] != "ApplyServerSideEncryptionByDefault":
            continue
        fields = {child.tag.rpartition("}")[2]: (child.text or "").strip() for child in rule}
        if fields.get("SSEAlgorithm", "").startswith("aws:kms") and fields.get("KMSMasterKeyID"):
            keys.append(fields["KMSMasterKeyID"])
    if len(keys) > 1:
        raise LookupFailed(f"S3's answer to {what} names several keys")
    return _key_arn(aws, account, keys[0]) if keys else None


def _key_arn(aws: AWS, account: str, key: str) -> str:
    if key.startswith("arn:") and ":key/" in key:
        return key
    if re.fullmatch(r"(?:mrk-)?[0-9a-f-]{32,36}", key):
        return f"arn:{aws.partition}:kms:{aws.region}:{account}:key/{key}"
    raise LookupFailed(
        f"the bucket's default encryption names its KMS key as {key!r}, which toolpass "
        "does not resolve (name the key by its ARN or id)"
    )


def _s3(aws: AWS, region: str, account: str, rest: str) -> ResourcePolicy | None:
    bucket = rest.partition("/")[0]
    if not _BUCKET.fullmatch(bucket):
        raise LookupFailed(f"toolpass does not read the policies of S3 resources like {rest!r}")
    answer = _bucket_get(aws, region, account, bucket, "policy")
    kind = f"bucket policy of {bucket}"
    if answer.status == 200:
        return ResourcePolicy(kind, account, answer.body.decode("utf-8", "replace"))
    code = aws.error_code(answer)
    if code in ("NoSuchBucketPolicy", "NoSuchBucket"):
        return ResourcePolicy(kind, account, None)
    if code == "AccessDenied":
        raise LookupFailed(
            f"S3 refused to read the {kind} (the engine lacks s3:GetBucketPolicy, or the bucket "
            f"belongs to an account other than {account})"
        )
    raise aws.resource_failure(answer, f"read the {kind}", code)


def _kms(aws: AWS, region: str, account: str, rest: str) -> ResourcePolicy | None:
    if not rest.startswith("key/"):
        raise LookupFailed("a KMS check names the key's ARN (key/<id>), not an alias")
    arn = f"arn:{aws.partition}:kms:{region}:{account}:{rest}"
    found = aws.json_call(
        "kms", region, "TrentService.GetKeyPolicy", {"KeyId": arn, "PolicyName": "default"}
    )
    document = found.get("Policy") if found is not None else None
    return ResourcePolicy(f"key policy of {rest}", account, _text(document), must_grant=True)


def _sqs(aws: AWS, region: str, account: str, rest: str) -> ResourcePolicy | None:
    queue_url = f"{aws.endpoint('sqs', region)}/{account}/{quote(rest, safe='')}"
    found = aws.json_call(
        "sqs",
        region,
        "AmazonSQS.GetQueueAttributes",
        {"QueueUrl": queue_url, "AttributeNames": ["Policy"]},
        version="1.0",
    )
    attributes = found.get("Attributes") if found is not None else None
    document = attributes.get("Policy") if isinstance(attributes, Mapping) else None
    return ResourcePolicy(f"queue policy of {rest}", account, _text(document))


def _sns(aws: AWS, region: str, account: str, rest: str) -> ResourcePolicy | None:
    arn = f"arn:{aws.partition}:sns:{region}:{account}:{rest}"
    params = {"Action": "GetTopicAttributes", "Version": "2010-03-31", "TopicArn": arn}
    document = aws.query_attribute("sns", region, params, "Policy")
    return ResourcePolicy(f"topic policy of {rest}", account, document)


def _lambda(aws: AWS, region: str, account: str, rest: str) -> ResourcePolicy | None:
    kind, _, name = rest.partition(":")
    if kind != "function" or not name:
        raise LookupFailed(f"toolpass does not read the policies of Lambda {kind or rest}s")
    name, _, qualifier = name.partition(":")
    url = f"{aws.endpoint('lambda', region)}/2015-03-31/functions/{quote(name, safe='')}/policy"
    if qualifier:
        url += f"?Qualifier={quote(qualifier, safe='')}"
    answer = aws.signed("GET", url, "lambda", region, {}, b"", "read the function policy")
    policy = ResourcePolicy(f"function policy of {name}", account, None)
    if answer.status == 200:
        data = aws.parse(answer, "the function policy")
        return ResourcePolicy(policy.kind, account, _text(data.get("Policy")))
    code = aws.error_code(answer)
    if code == "ResourceNotFoundException":
        return policy
    raise aws.resource_failure(answer, f"read the {policy.kind}", code)


def _secretsmanager(aws: AWS, region: str, account: str, rest: str) -> ResourcePolicy | None:
    arn = f"arn:{aws.partition}:secretsmanager:{region}:{account}:{rest}"
    found = aws.json_call(
        "secretsmanager", region, "secretsmanager.GetResourcePolicy", {"SecretId": arn}
    )
    document = found.get("ResourcePolicy") if found is not None else None
    return ResourcePolicy(f"resource policy of {rest}", account, _text(document))


def _ecr(aws: AWS, region: str, account: str, rest: str) -> ResourcePolicy | None:
    if not rest.startswith("repository/"):
        raise LookupFailed(f"toolpass does not read the policies of ECR resources like {rest!r}")
    name = rest.partition("/")[2]
    found = aws.json_call(
        "ecr",
        region,
        "AmazonEC2ContainerRegistry_V20150921.GetRepositoryPolicy",
        {"registryId": account, "repositoryName": name},
    )
    document = found.get("policyText") if found is not None else None
    return ResourcePolicy(f"repository policy of {name}", account, _text(document))


def _dynamodb(aws: AWS, region: str, account: str, rest: str) -> ResourcePolicy | None:
    pieces = rest.split("/")
    if pieces[0] != "table" or len(pieces) < 2:
        raise LookupFailed(f"toolpass does not read the policies of DynamoDB {rest!r}")
    owner = "/".join(pieces[:4] if pieces[2:3] == ["stream"] else pieces[:2])
    arn = f"arn:{aws.partition}:dynamodb:{region}:{account}:{owner}"
    found = aws.json_call(
        "dynamodb",
        region,
        "DynamoDB_20120810.GetResourcePolicy",
        {"ResourceArn": arn},
        version="1.0",
    )
    document = found.get("Policy") if found is not None else None
    return ResourcePolicy(f"resource policy of {owner}", account, _text(document))


def _role_trust(aws: AWS, rest: str, account: str) -> ResourcePolicy:
    name = rest.rpartition("/")[2]
    document = aws.role_trust_policy(name)
    return ResourcePolicy(f"trust policy of role {name}", account, document, must_grant=True)


_READERS = {
    "s3": _s3,
    "kms": _kms,
    "sqs": _sqs,
    "sns": _sns,
    "lambda": _lambda,
    "secretsmanager": _secretsmanager,
    "ecr": _ecr,
    "dynamodb": _dynamodb,
}
#: What a service answers when the resource has no policy, or does not exist (no policy).
ABSENT = frozenset(
    {
        "NotFoundException",
        "QueueDoesNotExist",
        "AWS.SimpleQueueService.NonExistentQueue",
        "NotFound",
        "ResourceNotFoundException",
        "RepositoryPolicyNotFoundException",
        "RepositoryNotFoundException",
        "PolicyNotFoundException",
        "NoSuchEntity",
    }
)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _listed(value: object) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [i for i in items if isinstance(i, str)]


def _glob(pattern: str, value: str) -> bool:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.IGNORECASE) is not None


__all__ = ["ABSENT", "UNREAD_SERVICES", "ResourcePolicy", "read"]
