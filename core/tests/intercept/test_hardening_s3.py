"""S3 acts on the bucket its server reads from the Host header, not the URL a client used.

boto3 against the fake AWS on 127.0.0.1 (which, like S3, routes a virtual-hosted request by
its ``Host`` header): a request whose Host header names another bucket than its URL is
refused before it leaves; virtual-hosted requests on the connection's own endpoint are
checked; and every S3 host spelling (dualstack, FIPS, accelerate, legacy ``s3-<region>``,
dotted bucket names, access points) is placed on its bucket or refused, never on another.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from fakes.aws import FakeAWS
from hypothesis import given
from hypothesis import strategies as st
from toolpass import Session, Toolkit, Toolpass, intercept
from toolpass.engine import literal
from toolpass.engine.config import parse_connections
from toolpass.integrations.aws import AWS
from toolpass.integrations.routes import Match, Request
from toolpass.intercept import ActionRefused
from toolpass.intercept.router import Router

ACCOUNT = "123456789012"
ENGINE_KEY, ENGINE_SECRET = "AKIAENGINEEXAMPLE001", "engine/secret+key"
AGENT_KEY, AGENT_SECRET = "AKIAAGENTEXAMPLE0001", "agent/secret+key"
DANA, RORY = "dana@example.com", "rory@example.com"
REPORT = "arn:aws:s3:::reports/q1.csv"
SIGNED = {
    "authorization": "AWS4-HMAC-SHA256 Credential=AKIAAGENTEXAMPLE0001/20240101/us-east-1/s3/"
    "aws4_request, SignedHeaders=host;x-amz-date, Signature=0"
}


@pytest.fixture
def aws() -> Iterator[FakeAWS]:
    with FakeAWS(account=ACCOUNT) as fake:
        fake.add_key(ENGINE_KEY, ENGINE_SECRET, f"arn:aws:iam::{ACCOUNT}:user/toolpass-engine")
        fake.add_key(AGENT_KEY, AGENT_SECRET, f"arn:aws:iam::{ACCOUNT}:user/agent")
        fake.add_principal(
            f"arn:aws:iam::{ACCOUNT}:user/toolpass-engine",
            _allow("iam:SimulatePrincipalPolicy", "*"),
        )
        fake.add_principal(
            f"arn:aws:iam::{ACCOUNT}:role/dana",
            _allow(["s3:GetObject", "s3:PutObject"], "arn:aws:s3:::reports/*"),
        )
        fake.add_principal(
            f"arn:aws:iam::{ACCOUNT}:role/rory", _allow("s3:GetObject", "arn:aws:s3:::reports/*")
        )
        fake.add_bucket("reports")
        fake.add_bucket("secret")
        yield fake


def _allow(actions: Any, resource: str) -> dict[str, Any]:
    statement = {"Effect": "Allow", "Action": actions, "Resource": resource}
    return {"Version": "2012-10-17", "Statement": [statement]}


@pytest.fixture
def kit(aws: FakeAWS, events: list[Any], no_ambient_aws: None) -> Iterator[Toolkit]:
    with _kit(aws.url, events) as made:
        yield made


@contextlib.contextmanager
def _kit(url: str, events: list[Any]) -> Iterator[Toolkit]:
    connection = {
        "id": "aws",
        "integration": "aws",
        "url": url,
        "sts_url": url,
        "endpoint_urls": {"default": url},  # the bucket's own policy is read there too
        "credentials": "static",
        "access_key_id": literal(ENGINE_KEY),
        "secret_access_key": literal(ENGINE_SECRET),
        "account_id": ACCOUNT,
        "identity": {
            "mode": "template",
            "template": f"arn:aws:iam::{ACCOUNT}:role/{{local}}",
            "domains": ["example.com"],
        },
    }
    with Toolpass([connection]) as engine:
        yield Toolkit(permissions=engine, audit=[events.append])
        intercept.uninstall()


def s3_client(aws: FakeAWS, url: str = "", **config: Any) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=url or aws.url,
        region_name="us-east-1",
        aws_access_key_id=AGENT_KEY,
        aws_secret_access_key=AGENT_SECRET,
        config=Config(retries={"max_attempts": 1}, **config),
    )


def with_host_header(client: Any, host: str) -> None:
    """Send every request with ``Host: host`` (signed, so the server accepts it)."""

    def set_host(request: Any, **_: Any) -> None:
        request.headers["Host"] = host

    client.meta.events.register("before-sign.s3", set_host)


def s3_puts(aws: FakeAWS) -> list[str]:
    return [f"{r.headers.get('host')} {r.path}" for r in aws.seen("PUT")]


# --- the Host header ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "host",
    [
        "secret.s3.amazonaws.com",
        "secret.s3.us-east-1.amazonaws.com",
        "secret.s3.dualstack.us-east-1.amazonaws.com",
        "secret.s3-accelerate.amazonaws.com",
        "SECRET.S3.AMAZONAWS.COM",
        "secret.s3.amazonaws.com.:443",
        "evil.example",
    ],
)
def test_a_host_header_naming_another_bucket_is_refused(
    kit: Toolkit, aws: FakeAWS, host: str, events: list[Any]
) -> None:
    client = s3_client(aws)
    with_host_header(client, host)

    @kit.tool()
    def save_report(text: str) -> str:
        client.put_object(Bucket="reports", Key="q1.csv", Body=text.encode())
        return "saved"

    with Session(DANA).active(), pytest.raises(ActionRefused) as info:
        save_report("a,b\n")  # dana may write reports/*, and the URL names reports
    assert info.value.code == "unresolved_resource"
    assert s3_puts(aws) == []  # never sent
    assert aws.buckets["secret"] == {}
    assert events[-1].actions[0]["action"] == "s3:PutObject"


def test_a_host_header_naming_the_urls_own_host_changes_nothing(
    kit: Toolkit, aws: FakeAWS, events: list[Any]
) -> None:
    client = s3_client(aws)
    with_host_header(client, f"LOCALHOST:{aws.port}")

    @kit.tool()
    def save_report(text: str) -> str:
        client.put_object(Bucket="reports", Key="q1.csv", Body=text.encode())
        return "saved"

    with Session(DANA).active():
        assert save_report("a,b\n") == "saved"
    assert aws.buckets["reports"]["q1.csv"][0] == b"a,b\n"
    put = events[-1].actions[0]
    assert (put["action"], put["resource"], put["verdict"]) == ("s3:PutObject", REPORT, "allowed")


# --- virtual-hosted requests on the connection's own endpoint ------------------------------
@pytest.fixture
def buckets_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    """``<bucket>.localhost`` resolves to 127.0.0.1 (this machine has no DNS for it)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kw: Any) -> Any:
        if isinstance(host, str) and host.endswith(".localhost"):
            host = "127.0.0.1"
        return real(host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_virtual_hosted_requests_on_the_endpoint_are_checked(
    aws: FakeAWS, buckets_resolve: None, events: list[Any], no_ambient_aws: None
) -> None:
    # botocore sends virtual-hosted requests to <bucket>.localhost (path style on an IP)
    url = f"http://localhost:{aws.port}"
    client = s3_client(aws, url, s3={"addressing_style": "virtual"})

    def save_report(text: str) -> str:
        client.put_object(Bucket="reports", Key="q1.csv", Body=text.encode())
        return str(client.get_object(Bucket="reports", Key="q1.csv")["Body"].read().decode())

    with _kit(url, events) as kit:
        save = kit.tool()(save_report)
        with Session(RORY).active(), pytest.raises(ActionRefused) as info:
            save("a,b\n")  # rory may only read
        assert info.value.code == "not_authorized"
        assert s3_puts(aws) == []
        with Session(DANA).active():
            assert "a,b\n" in save("a,b\n")
    assert s3_puts(aws) == [f"reports.localhost:{aws.port} /q1.csv"]
    put, get = events[-1].actions
    assert (put["action"], put["resource"], put["host"]) == (
        "s3:PutObject",
        REPORT,
        "reports.localhost",
    )
    assert (get["action"], get["resource"]) == ("s3:GetObject", REPORT)


def test_access_points_are_refused(kit: Toolkit, aws: FakeAWS, events: list[Any]) -> None:
    client = s3_client(aws)
    with_host_header(client, f"reports-{ACCOUNT}.s3-accesspoint.us-east-1.amazonaws.com")

    @kit.tool()
    def save_report(text: str) -> str:
        try:
            client.put_object(Bucket="reports", Key="q1.csv", Body=text.encode())
        except (ClientError, BotoCoreError):
            return "failed"
        return "saved"

    with Session(DANA).active(), pytest.raises(ActionRefused) as info:
        save_report("a,b\n")
    assert info.value.code == "unresolved_resource"
    assert s3_puts(aws) == []


# --- every host spelling --------------------------------------------------------------------
@pytest.fixture(scope="module")
def placer() -> AWS:
    (config,) = parse_connections(
        [
            {
                "id": "aws",
                "integration": "aws",
                "credentials": "static",
                "access_key_id": literal(ENGINE_KEY),
                "secret_access_key": literal(ENGINE_SECRET),
                "account_id": ACCOUNT,
                "identity": {"mode": "users", "users": {DANA: f"arn:aws:iam::{ACCOUNT}:role/d"}},
            }
        ]
    )
    return AWS(config)


def place(aws: AWS, method: str, host: str, path: str, header: str | None = None) -> Match | None:
    headers = dict(SIGNED, **({"host": header} if header is not None else {}))
    return aws.match_request(Request(method, path, "", headers, b"x", host))


@pytest.mark.parametrize(
    ("host", "path", "resource"),
    [
        ("reports.s3.amazonaws.com", "/q1.csv", REPORT),
        ("reports.s3.eu-west-1.amazonaws.com", "/q1.csv", REPORT),
        ("reports.s3-eu-west-1.amazonaws.com", "/q1.csv", REPORT),
        ("reports.s3-external-1.amazonaws.com", "/q1.csv", REPORT),
        ("reports.s3.dualstack.eu-west-1.amazonaws.com", "/q1.csv", REPORT),
        ("reports.s3-fips.us-east-1.amazonaws.com", "/q1.csv", REPORT),
        ("reports.s3-fips.dualstack.us-east-1.amazonaws.com", "/q1.csv", REPORT),
        ("reports.s3-accelerate.amazonaws.com", "/q1.csv", REPORT),
        ("reports.s3-accelerate.dualstack.amazonaws.com", "/q1.csv", REPORT),
        ("my.reports.s3.us-east-1.amazonaws.com", "/q1.csv", "arn:aws:s3:::my.reports/q1.csv"),
        ("s3.amazonaws.com", "/reports/q1.csv", REPORT),
        (
            "s3.dualstack.eu-west-1.amazonaws.com",
            "/my.reports/q1.csv",
            "arn:aws:s3:::my.reports/q1.csv",
        ),
        ("sqs.s3.amazonaws.com", "/q1.csv", "arn:aws:s3:::sqs/q1.csv"),
        ("s3-eu-west-1.s3.amazonaws.com", "/q1.csv", "arn:aws:s3:::s3-eu-west-1/q1.csv"),
        ("127.0.0.1", "/reports/q1.csv", REPORT),
    ],
)
def test_s3_hosts_name_their_bucket(placer: AWS, host: str, path: str, resource: str) -> None:
    found = place(placer, "PUT", host, path)
    assert found is not None
    assert (found.action, found.resource) == ("s3:PutObject", resource)
    # the same host in the Host header (any case, a port, a trailing dot) agrees
    found = place(placer, "PUT", host, path, host.upper() + ".:443")
    assert found is not None
    assert found.resource == resource


@pytest.mark.parametrize(
    "host",
    [
        f"reports-{ACCOUNT}.s3-accesspoint.us-east-1.amazonaws.com",
        f"reports-{ACCOUNT}.s3-accesspoint.dualstack.us-east-1.amazonaws.com",
        f"reports-{ACCOUNT}.s3-object-lambda.us-east-1.amazonaws.com",
        "mfzwi23gnjvgw.mrap.accesspoint.s3-global.amazonaws.com",
        "re_ports.s3.amazonaws.com",  # not a bucket name S3 serves
        "reports-.s3.amazonaws.com",
        "a..b.s3.amazonaws.com",
    ],
)
def test_s3_hosts_that_name_no_bucket_are_unresolved(placer: AWS, host: str) -> None:
    for method in ("PUT", "GET", "DELETE"):
        found = place(placer, method, host, "/q1.csv")
        assert found is not None, method
        assert found.resource is None, method


def test_s3_over_http_and_on_the_endpoints_subdomains_is_served(placer: AWS) -> None:
    assert placer.serves("http", "reports.s3.amazonaws.com", 80)
    assert placer.serves("https", "reports.s3.eu-west-1.amazonaws.com", 443)
    assert not placer.serves("https", "s3.amazonaws.com.evil.example", 443)
    router = Router([("aws", placer)])
    assert router.place("http", "reports.s3.amazonaws.com", 80, "/q1.csv") is not None


# Host spellings: the Host header names a bucket by any of S3's host forms.
_REGIONS = st.sampled_from(["", "us-east-1.", "eu-west-1.", "dualstack.us-east-1."])
_S3_LABEL = st.sampled_from(["s3.", "s3-fips.", "s3-accelerate.", "s3-eu-west-1."])
_BUCKETS = st.from_regex(r"[a-z0-9][a-z0-9.-]{1,20}[a-z0-9]", fullmatch=True).filter(
    lambda b: ".." not in b and b != "reports"
)


@given(
    bucket=_BUCKETS,
    label=_S3_LABEL,
    region=_REGIONS,
    upper=st.booleans(),
    dot=st.booleans(),
    port=st.sampled_from(["", ":443", ":80"]),
    method=st.sampled_from(["PUT", "GET", "DELETE", "POST"]),
)
def test_a_host_header_is_never_overruled_by_the_url(
    placer: AWS,
    bucket: str,
    label: str,
    region: str,
    upper: bool,
    dot: bool,
    port: str,
    method: str,
) -> None:
    header = f"{bucket}.{label}{region}amazonaws.com" + ("." if dot else "") + port
    header = header.upper() if upper else header
    for url_host, path in (
        ("127.0.0.1", "/reports/q1.csv"),
        ("reports.s3.amazonaws.com", "/q1.csv"),
    ):
        found = place(placer, method, url_host, path, header)
        # the server acts on ``bucket``, the URL names reports: neither is checked
        assert found is None or found.resource is None
