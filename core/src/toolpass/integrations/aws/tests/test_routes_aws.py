"""The AWS route table (generated from botocore's service models) and ``AWS.match_request``.

Requests are built and signed by boto3 itself (a ``before-send`` handler keeps them from
leaving), or, for the Query protocol SQS no longer uses, by botocore's own Query serializer
and SigV4 signer; each is fed to ``match_request`` as the request hook would.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import boto3
import botocore
import botocore.session
import pytest
from botocore import serialize
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest, AWSResponse
from botocore.config import Config as BotoConfig
from botocore.credentials import Credentials as BotoCredentials
from botocore.model import ServiceModel

from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations._generate import generator as load_generator
from toolpass.integrations.aws import _ACTION, AWS
from toolpass.integrations.aws import _routes as _aws_routes
from toolpass.integrations.routes import Match, Request, fields, load

REPO = Path(__file__).resolve().parents[6]
GENERATOR = REPO / "core/src/toolpass/integrations/aws/generate.py"
TABLE = REPO / "core/src/toolpass/integrations/aws/routes.json.gz"
ACCOUNT = "123456789012"
REGION = "eu-west-1"
QUEUE_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/jobs"


def integration(**over: Any) -> AWS:
    item = {
        "id": "aws",
        "integration": "aws",
        "credentials": "static",
        "access_key_id": literal("AKIDEXAMPLE"),
        "secret_access_key": literal("secret"),
        "account_id": ACCOUNT,
        **over,
    }
    (config,) = parse_connections([{k: v for k, v in item.items() if v is not None}])
    made = config.integration(config)
    assert isinstance(made, AWS)
    return made


@pytest.fixture(scope="module")
def aws() -> AWS:
    return integration()


@pytest.fixture(scope="module")
def table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress(TABLE.read_bytes()))
    return data


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return load_generator("aws")


# --- requests as boto3 sends them -------------------------------------------------------
def _no_send(request: Any, **_: Any) -> AWSResponse:
    """Answer every request with an empty 200 before it leaves the process."""

    class Raw:
        def stream(self, **_: Any) -> Iterator[bytes]:
            return iter([b""])

    _SENT.append(request)
    return AWSResponse(request.url, 200, {}, Raw())


_SENT: list[Any] = []


def client(service: str, **kwargs: Any) -> Any:
    session = boto3.session.Session(
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name=REGION
    )
    made = session.client(service, **kwargs)
    made.meta.events.register("before-send", _no_send)
    return made


def sent(call: Callable[[], Any]) -> Request:
    """The request a boto3 call sends, as the hook sees it (with the host it goes to)."""
    _SENT.clear()
    with contextlib.suppress(Exception):
        call()
    assert _SENT, "boto3 sent nothing"
    return as_hooked(_SENT[-1])


def as_hooked(prepared: Any) -> Request:
    parts = urlsplit(prepared.url)
    body = prepared.body
    if isinstance(body, str):
        body = body.encode()
    elif body is not None and not isinstance(body, bytes):
        body = body.read()
    request = Request(prepared.method, parts.path, parts.query, dict(prepared.headers), body)
    request.host = parts.netloc  # type: ignore[attr-defined]
    return request


def query_protocol(service: str, operation: str, params: dict[str, Any]) -> Request:
    """A request of ``service`` in the Query protocol, serialized and signed by botocore."""
    loader = botocore.session.get_session().get_component("data_loader")
    raw = copy.deepcopy(loader.load_service_model(service, "service-2"))
    raw["metadata"]["protocol"] = "query"
    raw["metadata"]["protocols"] = ["query"]
    model = ServiceModel(raw, service)
    wire = serialize.create_serializer("query").serialize_to_request(
        params, model.operation_model(operation)
    )
    url = f"https://{service}.{REGION}.amazonaws.com{wire['url_path']}"
    request = AWSRequest(method=wire["method"], url=url, data=wire["body"], headers=wire["headers"])
    SigV4Auth(BotoCredentials("AKIDEXAMPLE", "secret"), service, REGION).add_auth(request)
    return as_hooked(request.prepare())


def raw(
    method: str,
    host: str,
    path: str,
    query: str = "",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    service: str | None = None,
) -> Request:
    all_headers = dict(headers or {})
    if body and not any(k.lower() == "content-type" for k in all_headers):
        all_headers["Content-Type"] = "application/x-www-form-urlencoded"  # as botocore sends
    if service:
        all_headers["Authorization"] = (
            f"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/{REGION}/{service}/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=00"
        )
    request = Request(method, path, query, all_headers, body)
    request.host = host  # type: ignore[attr-defined]
    return request


def placed(match: Match | None) -> tuple[str, str | None, str, str] | None:
    return (
        None if match is None else (match.action, match.resource, match.effect, match.route.flags)
    )


# --- the table --------------------------------------------------------------------------
def test_the_table_loads_with_its_source(table: dict[str, Any]) -> None:
    assert table["generator"] == "core/src/toolpass/integrations/aws/generate.py"
    assert re.match(r"PyPI botocore \d+\.\d+\.\d+ ", table["source"])
    assert len(table["routes"]) > 19000
    assert len(_aws_routes.routes()) == len(table["routes"])
    # the common format reads it too (extra columns are ignored)
    assert len(load("toolpass.integrations.aws")) == len(table["routes"])


def test_every_operation_of_every_service_is_a_row(
    table: dict[str, Any], generator: ModuleType
) -> None:
    """Coverage: botocore's models (the installed copy, when it is the version the table was
    generated from) have exactly the operations the table has, one row each."""
    version = re.match(r"PyPI botocore (\S+)", table["source"])
    assert version is not None
    if version.group(1) != botocore.__version__:
        pytest.skip(f"installed botocore {botocore.__version__} is not {version.group(1)}")
    _, models = generator.read_models(Path(botocore.__file__).parent / "data")
    expected = {(s, op) for s, (_, m) in models.items() for op in m["operations"]}
    rows = [(r[6], r[7]) for r in table["routes"]]
    assert len(rows) == len(set(rows)) == len(expected)
    assert set(rows) == expected
    assert set(table["services"]) == set(models)


def test_regenerating_gives_the_committed_table_byte_for_byte(
    table: dict[str, Any], tmp_path: Path
) -> None:
    import subprocess
    import sys

    version = re.match(r"PyPI botocore (\S+)", table["source"])
    assert version is not None
    if version.group(1) != botocore.__version__:
        pytest.skip("the installed botocore is another version")
    data = Path(botocore.__file__).parent / "data"
    outs = [tmp_path / "a.json.gz", tmp_path / "b.json.gz"]
    for out in outs:
        subprocess.run(
            [sys.executable, str(GENERATOR), "--source", str(data), "--out", str(out)],
            check=True,
            capture_output=True,
        )
    assert outs[0].read_bytes() == outs[1].read_bytes()
    mine = json.loads(gzip.decompress(outs[0].read_bytes()))
    assert mine["routes"] == table["routes"]
    assert mine["services"] == table["services"]


def test_every_action_is_one_the_integration_declares(table: dict[str, Any]) -> None:
    actions = {r[2] for r in table["routes"]}
    for action in actions:
        assert _ACTION.fullmatch(action), action
        declared = AWS.action(action)
        assert declared is not None, action
    rank = {"read": 0, "write": 1, "destructive": 2}
    for row in table["routes"]:
        declared = AWS.action(row[2])
        assert declared is not None
        explicit = any(a.name == row[2] for a in AWS.actions)
        if not explicit:  # never weaker than what the action's own verb says
            assert rank[row[4]] >= rank[declared.effect], row


def _sample(template: str) -> str:
    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        if name == "aws.partition":
            return "aws"
        if name == "aws.region":
            return REGION
        if name == "aws.account":
            return ACCOUNT
        computed = ("sqs.queue", "kms.key", "ssm.parameter")
        if name.startswith(("arn:", "ec2.", "dynamodb.")) or name in computed:
            return f"arn:aws:sample:{REGION}:{ACCOUNT}:thing/sample"
        return "sample"

    return re.sub(r"\{([^{}]+)\}", value, template)


def test_every_resource_template_fills_to_an_arn_the_integration_accepts(
    table: dict[str, Any],
) -> None:
    strict, wild = integration(), integration(allow_wildcard_resource=True)
    wildcards = set()
    for row in table["routes"]:
        for alternative in row[3].split("|"):
            resource = _sample(alternative)
            assert "{" not in resource, row
            if resource == "*":
                continue
            if strict._resource_problem(resource) is not None:
                wildcards.add(alternative)
                assert wild._resource_problem(resource) is None, (row, resource)
    # only these hold wildcards on purpose (and so need allow_wildcard_resource)
    assert wildcards == {
        "arn:{aws.partition}:s3:::{Bucket}/*",
        "arn:{aws.partition}:secretsmanager:{aws.region}:{aws.account}:secret:{body.SecretId}-??????",
        "arn:{aws.partition}:secretsmanager:{aws.region}:{aws.account}:secret:{body.Name}-??????",
    }


def test_rows_are_well_formed(table: dict[str, Any]) -> None:
    services = table["services"]
    for method, path, _, resource, effect, flags, service, op, conds in table["routes"]:
        assert method in ("GET", "PUT", "POST", "DELETE", "HEAD", "PATCH")
        assert effect in ("read", "write", "destructive")
        assert set(flags) <= set("usa")
        assert service in services
        assert re.fullmatch(r"[A-Za-z0-9]+", op)
        assert "?" not in path
        assert "x-id" not in conds
        names = {f.rstrip("+") for f in re.findall(r"\{([^}]+)\}", path)}
        for field in fields(resource):
            field = field.removeprefix("arn:")
            assert (
                field in names
                or field.startswith(("query.", "body.", "aws.", "ec2."))
                or field in ("sqs.queue", "kms.key", "ssm.parameter", "dynamodb.table")
            ), (service, op, field)
        if not set(services[service]["protocols"]) & {"rest-json", "rest-xml"}:
            assert (method, path, conds) == ("POST", "/", "")


# --- hand-checked against the AWS documentation ------------------------------------------
S3 = client("s3")
S3_PATH = client("s3", config=BotoConfig(s3={"addressing_style": "path"}))

CHECKED: list[tuple[str, Callable[[], Request], tuple[str, str | None, str, str]]] = [
    (
        "S3 GetObject, virtual-hosted (s3:GetObject on the object; its content is untrusted)",
        lambda: sent(lambda: S3.get_object(Bucket="reports", Key="2026/q1.csv")),
        ("s3:GetObject", "arn:aws:s3:::reports/2026/q1.csv", "read", "u"),
    ),
    (
        "S3 GetObject, path style",
        lambda: sent(lambda: S3_PATH.get_object(Bucket="reports", Key="2026/q1.csv")),
        ("s3:GetObject", "arn:aws:s3:::reports/2026/q1.csv", "read", "u"),
    ),
    (
        "S3 PutObject, virtual-hosted",
        lambda: sent(lambda: S3.put_object(Bucket="reports", Key="x.txt", Body=b"x")),
        ("s3:PutObject", "arn:aws:s3:::reports/x.txt", "write", ""),
    ),
    (
        "S3 DeleteObject with a version: s3:DeleteObjectVersion (S3 API reference)",
        lambda: sent(lambda: S3.delete_object(Bucket="reports", Key="x.txt", VersionId="v1")),
        ("s3:DeleteObjectVersion", "arn:aws:s3:::reports/x.txt", "destructive", ""),
    ),
    (
        "S3 ListObjectsV2 is authorized by s3:ListBucket on the bucket",
        lambda: sent(lambda: S3.list_objects_v2(Bucket="reports", Prefix="2026/")),
        ("s3:ListBucket", "arn:aws:s3:::reports", "read", ""),
    ),
    (
        "S3 ListBuckets: s3:ListAllMyBuckets, resource *",
        lambda: sent(lambda: S3_PATH.list_buckets()),
        ("s3:ListAllMyBuckets", "*", "read", ""),
    ),
    (
        "S3 UploadPart (PUT ?partNumber&uploadId) is s3:PutObject",
        lambda: sent(
            lambda: S3_PATH.upload_part(
                Bucket="reports", Key="big", PartNumber=1, UploadId="u1", Body=b"x"
            )
        ),
        ("s3:PutObject", "arn:aws:s3:::reports/big", "write", ""),
    ),
    (
        "S3 PutBucketPolicy can make a bucket public: sends out",
        lambda: sent(lambda: S3.put_bucket_policy(Bucket="reports", Policy="{}")),
        ("s3:PutBucketPolicy", "arn:aws:s3:::reports", "write", "s"),
    ),
    (
        "S3 DeleteBucketCors is authorized by s3:PutBucketCORS",
        lambda: sent(lambda: S3.delete_bucket_cors(Bucket="reports")),
        ("s3:PutBucketCORS", "arn:aws:s3:::reports", "destructive", ""),
    ),
    (
        "DynamoDB GetItem (JSON protocol, X-Amz-Target)",
        lambda: sent(lambda: client("dynamodb").get_item(TableName="orders", Key={})),
        ("dynamodb:GetItem", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orders", "read", "u"),
    ),
    (
        "DynamoDB DeleteItem",
        lambda: sent(lambda: client("dynamodb").delete_item(TableName="orders", Key={})),
        (
            "dynamodb:DeleteItem",
            f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orders",
            "destructive",
            "",
        ),
    ),
    (
        "DynamoDB BatchWriteItem on one table names that table",
        lambda: sent(
            lambda: client("dynamodb").batch_write_item(
                RequestItems={"orders": [{"DeleteRequest": {"Key": {"id": {"S": "1"}}}}]}
            )
        ),
        (
            "dynamodb:BatchWriteItem",
            f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orders",
            "write",
            "",
        ),
    ),
    (
        "DynamoDB PartiQL SELECT is dynamodb:PartiQLSelect",
        lambda: sent(lambda: client("dynamodb").execute_statement(Statement='SELECT * FROM "o"')),
        ("dynamodb:PartiQLSelect", "*", "read", "u"),
    ),
    (
        "SQS SendMessage, JSON protocol (what boto3 sends today): the queue ARN from QueueUrl",
        lambda: sent(lambda: client("sqs").send_message(QueueUrl=QUEUE_URL, MessageBody="hi")),
        ("sqs:SendMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:jobs", "write", "s"),
    ),
    (
        "SQS SendMessage, Query protocol (older SDKs)",
        lambda: query_protocol("sqs", "SendMessage", {"QueueUrl": QUEUE_URL, "MessageBody": "hi"}),
        ("sqs:SendMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:jobs", "write", "s"),
    ),
    (
        "SQS ReceiveMessage, Query protocol: the messages are untrusted",
        lambda: query_protocol("sqs", "ReceiveMessage", {"QueueUrl": QUEUE_URL}),
        ("sqs:ReceiveMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:jobs", "read", "u"),
    ),
    (
        "SQS SendMessageBatch is authorized by sqs:SendMessage",
        lambda: sent(
            lambda: client("sqs").send_message_batch(
                QueueUrl=QUEUE_URL, Entries=[{"Id": "1", "MessageBody": "x"}]
            )
        ),
        ("sqs:SendMessage", f"arn:aws:sqs:{REGION}:{ACCOUNT}:jobs", "write", "s"),
    ),
    (
        "IAM CreateAccessKey (Query protocol) mints a credential: sends out",
        lambda: sent(lambda: client("iam").create_access_key(UserName="bob")),
        ("iam:CreateAccessKey", f"arn:aws:iam::{ACCOUNT}:user/bob", "write", "s"),
    ),
    (
        "IAM AttachRolePolicy acts on the role",
        lambda: sent(
            lambda: client("iam").attach_role_policy(
                RoleName="deploy", PolicyArn="arn:aws:iam::aws:policy/AdministratorAccess"
            )
        ),
        ("iam:AttachRolePolicy", f"arn:aws:iam::{ACCOUNT}:role/deploy", "write", ""),
    ),
    (
        "IAM DeleteUser",
        lambda: sent(lambda: client("iam").delete_user(UserName="bob")),
        ("iam:DeleteUser", f"arn:aws:iam::{ACCOUNT}:user/bob", "destructive", ""),
    ),
    (
        "Lambda Invoke (rest-json) is lambda:InvokeFunction on the function",
        lambda: sent(lambda: client("lambda").invoke(FunctionName="resize", Payload=b"{}")),
        (
            "lambda:InvokeFunction",
            f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:resize",
            "write",
            "us",
        ),
    ),
    (
        "Lambda Invoke by ARN names that ARN",
        lambda: sent(
            lambda: client("lambda").invoke(
                FunctionName=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:resize", Payload=b"{}"
            )
        ),
        (
            "lambda:InvokeFunction",
            f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:resize",
            "write",
            "us",
        ),
    ),
    (
        "Lambda DeleteFunction",
        lambda: sent(lambda: client("lambda").delete_function(FunctionName="resize")),
        (
            "lambda:DeleteFunction",
            f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:resize",
            "destructive",
            "",
        ),
    ),
    (
        "Lambda ListFunctions: resource *",
        lambda: sent(lambda: client("lambda").list_functions()),
        ("lambda:ListFunctions", "*", "read", ""),
    ),
    (
        "EC2 TerminateInstances (ec2 protocol) of one instance",
        lambda: sent(lambda: client("ec2").terminate_instances(InstanceIds=["i-0abc"])),
        (
            "ec2:TerminateInstances",
            f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/i-0abc",
            "destructive",
            "",
        ),
    ),
    (
        "EC2 TerminateInstances of two instances names no single ARN: *",
        lambda: sent(lambda: client("ec2").terminate_instances(InstanceIds=["i-1", "i-2"])),
        ("ec2:TerminateInstances", "*", "destructive", ""),
    ),
    (
        "EC2 DescribeInstances",
        lambda: sent(lambda: client("ec2").describe_instances()),
        ("ec2:DescribeInstances", "*", "read", ""),
    ),
    (
        "STS GetCallerIdentity is about the agent",
        lambda: sent(lambda: client("sts").get_caller_identity()),
        ("sts:GetCallerIdentity", "*", "read", "a"),
    ),
    (
        "SNS Publish to a topic sends out",
        lambda: sent(
            lambda: client("sns").publish(
                TopicArn=f"arn:aws:sns:{REGION}:{ACCOUNT}:alerts", Message="m"
            )
        ),
        ("sns:Publish", f"arn:aws:sns:{REGION}:{ACCOUNT}:alerts", "write", "s"),
    ),
    (
        "SES SendEmail sends out",
        lambda: sent(
            lambda: client("ses").send_email(
                Source="a@example.com",
                Destination={"ToAddresses": ["b@example.com"]},
                Message={"Subject": {"Data": "s"}, "Body": {"Text": {"Data": "t"}}},
            )
        ),
        ("ses:SendEmail", "*", "write", "s"),
    ),
    (
        "CloudWatch Logs FilterLogEvents reads untrusted log lines",
        lambda: sent(lambda: client("logs").filter_log_events(logGroupName="/app/web")),
        (
            "logs:FilterLogEvents",
            f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/app/web",
            "read",
            "u",
        ),
    ),
    (
        "Secrets Manager GetSecretValue by ARN: private, not untrusted",
        lambda: sent(
            lambda: client("secretsmanager").get_secret_value(
                SecretId=f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:db-AbCdEf"
            )
        ),
        (
            "secretsmanager:GetSecretValue",
            f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:db-AbCdEf",
            "read",
            "",
        ),
    ),
    (
        "CloudWatch (IAM prefix cloudwatch, signing name monitoring; CBOR protocol)",
        lambda: sent(lambda: client("cloudwatch").delete_alarms(AlarmNames=["a"])),
        ("cloudwatch:DeleteAlarms", "*", "destructive", ""),
    ),
    (
        "KMS Decrypt by key id",
        lambda: sent(
            lambda: client("kms").decrypt(
                CiphertextBlob=b"x", KeyId="1234abcd-12ab-34cd-56ef-1234567890ab"
            )
        ),
        (
            "kms:Decrypt",
            f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab",
            "read",
            "",
        ),
    ),
]


@pytest.mark.parametrize(("what", "make", "expected"), CHECKED, ids=[c[0] for c in CHECKED])
def test_real_requests_take_the_documented_route(
    aws: AWS, what: str, make: Callable[[], Request], expected: tuple[str, str, str, str]
) -> None:
    assert placed(aws.match_request(make())) == expected


def test_the_match_says_which_operation_it_placed(aws: AWS) -> None:
    match = aws.match_request(sent(lambda: S3.get_object(Bucket="b", Key="k")))
    assert match is not None
    assert match.params["aws.service"] == "s3"
    assert match.params["aws.operation"] == "GetObject"
    assert match.params["Bucket"] == "b"
    assert match.params["Key"] == "k"


def test_without_account_id_account_scoped_resources_stay_unresolved() -> None:
    bare = integration(account_id=None)
    match = bare.match_request(sent(lambda: client("dynamodb").get_item(TableName="t", Key={})))
    assert match is not None
    assert match.action == "dynamodb:GetItem"
    assert match.resource is None
    # S3 ARNs name no account; an ARN the request names needs none either
    assert placed(bare.match_request(sent(lambda: S3.get_object(Bucket="b", Key="k")))) == (
        "s3:GetObject",
        "arn:aws:s3:::b/k",
        "read",
        "u",
    )


def test_the_partition_comes_from_the_connection() -> None:
    gov = integration(partition="aws-us-gov")
    match = gov.match_request(raw("GET", "b.s3.us-gov-west-1.amazonaws.com", "/k", service="s3"))
    assert match is not None
    assert match.resource == "arn:aws-us-gov:s3:::b/k"


def test_unsigned_requests_are_placed_by_host(aws: AWS) -> None:
    assert placed(aws.match_request(raw("GET", "public.s3.amazonaws.com", "/a.txt"))) == (
        "s3:GetObject",
        "arn:aws:s3:::public/a.txt",
        "read",
        "u",
    )
    legacy = aws.match_request(raw("DELETE", "b.s3-us-west-2.amazonaws.com", "/k"))
    assert legacy is not None
    assert legacy.action == "s3:DeleteObject"
    assert legacy.params["aws.region"] == "us-west-2"


def test_presigned_urls_are_placed_by_their_credential(aws: AWS) -> None:
    v4 = client("s3", config=BotoConfig(signature_version="s3v4", s3={"addressing_style": "path"}))
    url = v4.generate_presigned_url("put_object", Params={"Bucket": "b", "Key": "up.bin"})
    parts = urlsplit(url)
    assert "X-Amz-Credential=" in parts.query
    request = Request("PUT", parts.path, parts.query, {})
    request.host = "127.0.0.1:9000"  # type: ignore[attr-defined] # a local S3: path style
    expected = ("s3:PutObject", "arn:aws:s3:::b/up.bin", "write", "")
    assert placed(aws.match_request(request)) == expected
    # SigV2 presigned URLs (boto3's default for S3) carry no scope: the AWS host places them
    url = S3_PATH.generate_presigned_url("put_object", Params={"Bucket": "b", "Key": "up.bin"})
    parts = urlsplit(url)
    assert "AWSAccessKeyId=" in parts.query
    request = Request("PUT", parts.path, parts.query, {})
    request.host = parts.netloc  # type: ignore[attr-defined]
    assert placed(aws.match_request(request)) == expected


def test_local_endpoints_use_the_credential_scope(aws: AWS) -> None:
    local = client("s3", endpoint_url="http://127.0.0.1:5000")
    assert placed(aws.match_request(sent(lambda: local.delete_bucket(Bucket="b")))) == (
        "s3:DeleteBucket",
        "arn:aws:s3:::b",
        "destructive",
        "",
    )
    sqs = client("sqs", endpoint_url="http://localhost:4566")
    match = aws.match_request(sent(lambda: sqs.purge_queue(QueueUrl=QUEUE_URL)))
    assert placed(match) == (
        "sqs:PurgeQueue",
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:jobs",
        "destructive",
        "",
    )


def test_partiql_is_refined_by_the_statement(aws: AWS) -> None:
    ddb = client("dynamodb")
    cases = {
        "DELETE FROM \"o\" WHERE id='1'": ("dynamodb:PartiQLDelete", "destructive"),
        "UPDATE \"o\" SET a=1 WHERE id='1'": ("dynamodb:PartiQLUpdate", "write"),
        "INSERT INTO \"o\" VALUE {'id': '1'}": ("dynamodb:PartiQLInsert", "write"),
        "select * from o": ("dynamodb:PartiQLSelect", "read"),
        "EXPLAIN something": ("dynamodb:PartiQLDelete", "destructive"),  # unknown: strongest
    }
    for statement, (action, effect) in cases.items():
        match = aws.match_request(sent(lambda s=statement: ddb.execute_statement(Statement=s)))
        assert match is not None, statement
        assert (match.action, match.effect) == (action, effect), statement
    both = sent(
        lambda: ddb.batch_execute_statement(
            Statements=[{"Statement": "SELECT * FROM o"}, {"Statement": "DELETE FROM o"}]
        )
    )
    match = aws.match_request(both)
    assert match is not None
    assert match.action == "dynamodb:PartiQLDelete"


def test_sqs_query_requests_posted_to_the_queue_path(aws: AWS) -> None:
    body = b"Action=DeleteMessage&ReceiptHandle=r&Version=2012-11-05"
    request = raw(
        "POST",
        f"sqs.{REGION}.amazonaws.com",
        f"/{ACCOUNT}/jobs",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        body=body,
        service="sqs",
    )
    assert placed(aws.match_request(request)) == (
        "sqs:DeleteMessage",
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:jobs",
        "destructive",
        "",
    )
    # a QueueUrl naming another queue than the path: no single resource
    other = body + f"&QueueUrl=https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/other".encode()
    request = raw(
        "POST", f"sqs.{REGION}.amazonaws.com", f"/{ACCOUNT}/jobs", body=other, service="sqs"
    )
    match = aws.match_request(request)
    assert match is not None
    assert match.resource is None


# --- what is not placed -----------------------------------------------------------------
def test_requests_matching_no_operation_are_not_placed(aws: AWS) -> None:
    lam = f"lambda.{REGION}.amazonaws.com"
    assert aws.match_request(raw("GET", lam, "/2015-03-31/nothing/here", service="lambda")) is None
    assert aws.match_request(raw("PATCH", lam, "/2015-03-31/functions/f", service="lambda")) is None
    ddb = f"dynamodb.{REGION}.amazonaws.com"
    target = {"X-Amz-Target": "DynamoDB_20120810.DropEverything"}
    assert aws.match_request(raw("POST", ddb, "/", headers=target, service="dynamodb")) is None
    other = {"X-Amz-Target": "AmazonSQS.SendMessage"}  # another service's target
    assert aws.match_request(raw("POST", ddb, "/", headers=other, service="dynamodb")) is None
    assert aws.match_request(raw("POST", ddb, "/", service="dynamodb")) is None  # no target
    iam = "iam.amazonaws.com"
    assert aws.match_request(raw("POST", iam, "/", body=b"Action=Nope", service="iam")) is None
    assert (
        aws.match_request(raw("POST", iam, "/", body=b"Version=2010-05-08", service="iam")) is None
    )
    # S3 form upload (POST /bucket without ?delete) is no operation of the model
    assert aws.match_request(raw("POST", "b.s3.amazonaws.com", "/", service="s3")) is None


def test_unknown_services_and_hosts_are_not_placed(aws: AWS) -> None:
    assert aws.match_request(raw("GET", "example.com", "/")) is None
    assert aws.match_request(raw("GET", "nothing.us-east-1.amazonaws.com", "/x")) is None
    assert aws.match_request(raw("POST", "example.com", "/", service="no-such-service")) is None


def test_a_request_signed_for_one_service_sent_to_another_is_not_placed(aws: AWS) -> None:
    # signed for S3 but sent to IAM: AWS would refuse it, toolpass does not guess
    body = b"Action=DeleteUser&UserName=bob&Version=2010-05-08"
    assert aws.match_request(raw("POST", "iam.amazonaws.com", "/", body=body, service="s3")) is None
    # an IAM request sent to an SQS host
    assert (
        aws.match_request(raw("POST", "sqs.eu-west-1.amazonaws.com", "/", body=body, service="iam"))
        is None
    )


def test_s3_on_an_unknown_host_is_not_placed(aws: AWS) -> None:
    """A custom domain may be virtual-hosted: the bucket cannot be told from the key."""
    assert aws.match_request(raw("DELETE", "files.example.com", "/k", service="s3")) is None
    assert aws.match_request(raw("DELETE", "", "/b/k", service="s3")) is None  # no host at all
    # access points are not mapped: placed on S3, naming no resource (refused)
    ap = f"ap-{ACCOUNT}.s3-accesspoint.{REGION}.amazonaws.com"
    found = aws.match_request(raw("DELETE", ap, "/k", service="s3"))
    assert found is not None
    assert found.resource is None


def test_two_different_actions_in_one_query_request_are_not_placed(aws: AWS) -> None:
    body = b"Action=ListUsers&Version=2010-05-08"
    request = raw(
        "POST", "iam.amazonaws.com", "/", query="Action=DeleteUser", body=body, service="iam"
    )
    assert aws.match_request(request) is None
    twice = b"Action=ListUsers&Action=DeleteUser&Version=2010-05-08"
    assert (
        aws.match_request(raw("POST", "iam.amazonaws.com", "/", body=twice, service="iam")) is None
    )
    same = raw("POST", "iam.amazonaws.com", "/", query="Action=ListUsers", body=body, service="iam")
    assert placed(aws.match_request(same)) == ("iam:ListUsers", "*", "read", "")


def test_a_wrong_api_version_is_not_placed(aws: AWS) -> None:
    body = b"Action=DeleteLoadBalancer&LoadBalancerName=x&Version=1999-01-01"
    host = f"elasticloadbalancing.{REGION}.amazonaws.com"
    assert (
        aws.match_request(raw("POST", host, "/", body=body, service="elasticloadbalancing")) is None
    )
    body = body.replace(b"1999-01-01", b"2012-06-01")
    match = aws.match_request(raw("POST", host, "/", body=body, service="elasticloadbalancing"))
    assert placed(match) == ("elasticloadbalancing:DeleteLoadBalancer", "*", "destructive", "")


# --- hostile paths ----------------------------------------------------------------------
def test_hostile_paths_name_no_resource(aws: AWS) -> None:
    host = "b.s3.eu-west-1.amazonaws.com"
    for path in ("/a/../secret", "/../other-bucket/k", "/a/./k", "/a%2F..%2F..%2Fx"):
        match = aws.match_request(raw("DELETE", host, path, service="s3"))
        assert match is not None, path
        assert match.action == "s3:DeleteObject", path
        assert match.resource is None, path
    lam = f"lambda.{REGION}.amazonaws.com"
    for name in ("..", "a%2Fb", "%2E%2E"):
        match = aws.match_request(
            raw("DELETE", lam, f"/2015-03-31/functions/{name}", service="lambda")
        )
        assert match is not None
        assert match.action == "lambda:DeleteFunction"
        assert match.resource is None, name


def test_empty_segments_do_not_shift_parameters(aws: AWS) -> None:
    lam = f"lambda.{REGION}.amazonaws.com"
    # an empty function name is no function: not placed as one
    assert (
        aws.match_request(raw("DELETE", lam, "/2015-03-31/functions//", service="lambda")) is None
    )
    match = aws.match_request(raw("GET", "s3.amazonaws.com", "/b//k", service="s3"))
    assert match is not None
    assert match.resource == "arn:aws:s3:::b//k"


def test_control_characters_in_body_fields_name_no_resource(aws: AWS) -> None:
    body = json.dumps({"TableName": "t\nx", "Key": {}}).encode()
    headers = {
        "X-Amz-Target": "DynamoDB_20120810.DeleteItem",
        "Content-Type": "application/x-amz-json-1.0",
    }
    host = f"dynamodb.{REGION}.amazonaws.com"
    match = aws.match_request(
        raw("POST", host, "/", headers=headers, body=body, service="dynamodb")
    )
    assert match is not None
    assert match.action == "dynamodb:DeleteItem"
    assert match.resource is None


def test_a_bogus_x_id_does_not_change_the_operation(aws: AWS) -> None:
    request = raw("DELETE", "b.s3.amazonaws.com", "/k", query="x-id=GetObject", service="s3")
    assert placed(aws.match_request(request)) == (
        "s3:DeleteObject",
        "arn:aws:s3:::b/k",
        "destructive",
        "",
    )


def test_ambiguous_rest_requests_take_the_strongest_reading(aws: AWS) -> None:
    # PUT with ?acl and a copy source: PutObjectAcl or CopyObject; both writes, both flags
    request = raw(
        "PUT",
        "b.s3.amazonaws.com",
        "/k",
        query="acl",
        headers={"x-amz-copy-source": "other/x"},
        service="s3",
    )
    match = aws.match_request(request)
    assert match is not None
    assert match.effect == "write"
    assert "s" in match.route.flags


# --- loading and serving ----------------------------------------------------------------
def test_services_are_compiled_on_their_first_request(aws: AWS) -> None:
    table = _aws_routes.routes()
    fresh = _aws_routes.AwsRoutes(json.loads(gzip.decompress(TABLE.read_bytes())))
    assert all(s._table is None for s in fresh.services.values())
    start = time.perf_counter()
    match = fresh.match(
        raw("GET", "b.s3.amazonaws.com", "/k", service="s3"),
        "b.s3.amazonaws.com",
        "aws",
        REGION,
        None,
    )
    assert match is not None
    assert match.action == "s3:GetObject"
    built = [name for name, s in fresh.services.items() if s._table is not None]
    assert built == ["s3"]
    assert time.perf_counter() - start < 5  # a sanity bound, not a benchmark
    assert table is _aws_routes.routes()  # one shared table


def test_the_connection_serves_every_endpoint_of_its_partition(aws: AWS) -> None:
    assert aws.serves("https", "sqs.eu-west-1.amazonaws.com", 443)
    assert aws.serves("https", "b.s3.amazonaws.com", 443)
    assert aws.serves("https", "lambda.us-east-1.api.aws", 443)
    assert aws.serves("http", "sqs.eu-west-1.amazonaws.com", 80)  # checked, not let through
    assert not aws.serves("https", "amazonaws.com.evil.example", 443)
    assert not aws.serves("https", "sqs.cn-north-1.amazonaws.com.cn", 443)
    china = integration(partition="aws-cn")
    assert china.serves("https", "sqs.cn-north-1.amazonaws.com.cn", 443)
    assert not china.serves("https", "sqs.eu-west-1.amazonaws.com", 443)


def test_greedy_parameters_inside_a_path_keep_their_slashes(aws: AWS) -> None:
    """botocore's ``/portals/{portalArn+}/browserSettings``: the ARN's own slash stays."""
    web = client("workspaces-web")
    portal = f"arn:aws:workspaces-web:{REGION}:{ACCOUNT}:portal/p-1"
    settings = f"arn:aws:workspaces-web:{REGION}:{ACCOUNT}:browserSettings/b-1"
    request = sent(
        lambda: web.associate_browser_settings(portalArn=portal, browserSettingsArn=settings)
    )
    assert request.path.endswith("%3Aportal/p-1/browserSettings")
    match = aws.match_request(request)
    assert match is not None
    assert match.params["aws.operation"] == "AssociateBrowserSettings"
    assert match.params["portalArn"] == portal
    assert (match.resource, match.effect) == (portal, "write")  # the ARN the path names
    match = aws.match_request(sent(lambda: web.get_portal(portalArn=portal)))
    assert match is not None
    assert match.params["aws.operation"] == "GetPortal"
    hostile = raw(
        "PUT",
        f"workspaces-web.{REGION}.amazonaws.com",
        "/portals/a/../b/browserSettings",
        service="workspaces-web",
    )
    match = aws.match_request(hostile)
    assert match is not None
    assert match.params["aws.operation"] == "AssociateBrowserSettings"
    assert match.resource is None
