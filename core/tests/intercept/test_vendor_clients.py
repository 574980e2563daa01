"""The request hook under the vendors' own client libraries: slack_sdk, boto3 and the
kubernetes client, each against its fake on 127.0.0.1 with the integration's full route table.

For each: a user who may act is let through and the fake answers; a user who may not is
refused inside the client library, and the fake's request log proves the request never
arrived; the audit event lists the request as an action (action, resource, as user,
verdict) and never the engine's own look-ups; and a body that catches the client's exception
does not turn the refusal into a result.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import BotoCoreError, ClientError
from fakes.aws import FakeAWS
from fakes.kubernetes import ENGINE_TOKEN, FakeKubernetes, Rule
from fakes.server import FakeServer
from fakes.slack import BOT_SCOPES, FakeSlack
from kubernetes.client import ApiClient, AppsV1Api, Configuration
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from toolpass import Session, Toolkit, Toolpass, ToolRefused, intercept
from toolpass.engine import literal
from toolpass.intercept import ActionRefused

DANA = "dana@example.com"  # may act in every system below
RORY = "rory@example.com"  # may not


@pytest.fixture
def make_kit(events: list[Any]) -> Iterator[Any]:
    """A toolkit checking tools' requests with ``Toolpass(connections)``, hooks removed after."""
    engines: list[Toolpass] = []

    def make(connection: dict[str, Any]) -> Toolkit:
        engine = Toolpass([connection])
        engines.append(engine)
        return Toolkit(permissions=engine, audit=[events.append])

    yield make
    intercept.uninstall()
    for engine in engines:
        engine.close()


# --- Slack: slack_sdk's WebClient (urllib) -------------------------------------------------

ENGINE_BOT = "xoxb-1111-2222-engine"
TOOL_BOT = "xoxb-1111-5555-tool"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeServer() as server:
        fake = FakeSlack(server)
        fake.add_token(ENGINE_BOT, user_id="U0ENGINE")
        fake.add_token(
            TOOL_BOT, user_id="U0TOOL", bot_id="B0TOOL", scopes=(*BOT_SCOPES, "chat:write")
        )
        fake.add_user("U0DANA", DANA)
        fake.add_user("U0RORY", RORY)
        fake.add_channel("C0ENG", "eng", ["U0ENGINE", "U0TOOL", "U0DANA"])
        yield fake


@pytest.fixture
def slack_kit(slack: FakeSlack, make_kit: Any) -> Toolkit:
    kit: Toolkit = make_kit(
        {"id": "slack", "integration": "slack", "url": slack.url, "token": literal(ENGINE_BOT)}
    )
    return kit


def post_to_eng(slack: FakeSlack) -> str:
    client = WebClient(token=TOOL_BOT, base_url=slack.url + "/")
    answer = client.chat_postMessage(channel="C0ENG", text="deploy finished")
    return str(answer["ts"])


def test_slack_member_posts(slack_kit: Toolkit, slack: FakeSlack, events: list[Any]) -> None:
    @slack_kit.tool()
    def announce() -> str:
        return f"posted {post_to_eng(slack)}"

    with Session(DANA).active():
        assert announce() == "posted 1712345678.000100"
    assert len(slack.calls("chat.postMessage")) == 1
    assert slack.messages["C0ENG"][0]["text"] == "deploy finished"
    [action] = events[-1].actions
    assert action["action"] == "chat.postMessage"
    assert action["resource"] == "channel:C0ENG"
    assert action["connection"] == "slack"
    assert (action["as"], action["verdict"]) == ("user", "allowed")
    # the engine asked Slack (identity, channel, membership); none of that is an action
    assert slack.calls("users.lookupByEmail")
    assert slack.calls("conversations.members")
    assert [a["path"] for a in events[-1].actions] == ["/chat.postMessage"]


def test_slack_non_member_is_refused_before_sending(
    slack_kit: Toolkit, slack: FakeSlack, events: list[Any]
) -> None:
    @slack_kit.tool()
    def announce() -> str:
        return f"posted {post_to_eng(slack)}"

    with Session(RORY).active(), pytest.raises(ActionRefused) as info:
        announce()
    assert info.value.code == "not_authorized"
    assert "chat.postMessage on channel:C0ENG" in info.value.message
    assert "not a member of #eng" in info.value.detail
    assert slack.calls("chat.postMessage") == []  # never reached Slack
    assert "C0ENG" not in slack.messages
    assert slack.calls("conversations.members")  # the engine's look-up did
    assert events[-1].code == "not_authorized"
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("chat.postMessage", "channel:C0ENG")
    assert (action["as"], action["verdict"]) == ("user", "not_authorized")


def test_slack_body_that_catches_the_refusal_is_still_refused(
    slack_kit: Toolkit, slack: FakeSlack, events: list[Any]
) -> None:
    caught: list[BaseException] = []

    @slack_kit.tool()
    def announce() -> str:
        try:
            post_to_eng(slack)
        except Exception as e:  # slack_sdk re-raises what urllib raised, as it is
            caught.append(e)
            return "posted, trust me"
        return "posted"

    with Session(RORY).active(), pytest.raises(ToolRefused) as info:
        announce()
    assert info.value.code == "not_authorized"
    [error] = caught  # the body did see (and swallow) the exception
    assert isinstance(error, ActionRefused)
    assert not isinstance(error, SlackApiError)
    assert slack.calls("chat.postMessage") == []
    assert events[-1].outcome == "refused"


# --- AWS: boto3 S3 (urllib3), placed by the SigV4 credential scope -------------------------

ACCOUNT = "123456789012"
ENGINE_KEY, ENGINE_SECRET = "AKIAENGINEEXAMPLE001", "engine/secret+key"
AGENT_KEY, AGENT_SECRET = "AKIAAGENTEXAMPLE0001", "agent/secret+key"
REPORT = "arn:aws:s3:::reports/q1.csv"


def _policy(*actions: str) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": list(actions), "Resource": "arn:aws:s3:::reports/*"}
        ],
    }


@pytest.fixture
def aws() -> Iterator[FakeAWS]:
    with FakeAWS(account=ACCOUNT) as fake:
        fake.add_key(ENGINE_KEY, ENGINE_SECRET, f"arn:aws:iam::{ACCOUNT}:user/toolpass-engine")
        fake.add_key(AGENT_KEY, AGENT_SECRET, f"arn:aws:iam::{ACCOUNT}:user/agent")
        fake.add_principal(f"arn:aws:iam::{ACCOUNT}:user/toolpass-engine", _simulate_only())
        fake.add_principal(
            f"arn:aws:iam::{ACCOUNT}:role/dana", _policy("s3:GetObject", "s3:PutObject")
        )
        fake.add_principal(f"arn:aws:iam::{ACCOUNT}:role/rory", _policy("s3:GetObject"))
        fake.add_bucket("reports")
        yield fake


def _simulate_only() -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "iam:SimulatePrincipalPolicy", "Resource": "*"}
        ],
    }


@pytest.fixture
def aws_kit(aws: FakeAWS, make_kit: Any) -> Toolkit:
    kit: Toolkit = make_kit(
        {
            "id": "aws",
            "integration": "aws",
            "url": aws.url,  # the connection's own host is the fake: boto3 is pointed there
            "sts_url": aws.url,
            "endpoint_urls": {"default": aws.url},  # the bucket's own policy is read there too
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
    )
    return kit


@pytest.fixture
def s3(aws: FakeAWS, no_ambient_aws: None) -> Iterator[Any]:
    """The agent's S3 client, pointed at the fake: requests on 127.0.0.1 go path style and
    are placed on S3 by their SigV4 credential scope (``.../us-east-1/s3/aws4_request``)."""
    client = boto3.client(
        "s3",
        endpoint_url=aws.url,
        region_name="us-east-1",
        aws_access_key_id=AGENT_KEY,
        aws_secret_access_key=AGENT_SECRET,
    )
    yield client
    client.close()


def s3_puts(aws: FakeAWS) -> list[str]:
    return [r.path for r in aws.seen("PUT", "/reports/.*")]


def simulated(aws: FakeAWS) -> list[str]:
    return [a for a in aws.actions() if a == "SimulatePrincipalPolicy"]


def test_boto3_allowed_put_and_get_reach_s3(
    aws_kit: Toolkit, aws: FakeAWS, s3: Any, events: list[Any]
) -> None:
    @aws_kit.tool()
    def save_report(text: str) -> str:
        s3.put_object(Bucket="reports", Key="q1.csv", Body=text.encode(), ContentType="text/csv")
        return str(s3.get_object(Bucket="reports", Key="q1.csv")["Body"].read().decode())

    with Session(DANA).active():
        answer = save_report("a,b\n1,2\n")
    # the object's bytes came back from the fake, fenced: GetObject reads untrusted content
    assert "\na,b\n1,2\n" in answer
    assert answer.startswith("<untrusted-content id=")
    assert s3_puts(aws) == ["/reports/q1.csv"]
    assert aws.buckets["reports"]["q1.csv"] == (b"a,b\n1,2\n", "text/csv")
    put, get = events[-1].actions
    assert (put["action"], put["resource"], put["verdict"]) == ("s3:PutObject", REPORT, "allowed")
    assert (get["action"], get["resource"], get["verdict"]) == ("s3:GetObject", REPORT, "allowed")
    assert (put["as"], get["as"]) == ("user", "user")
    assert put["connection"] == get["connection"] == "aws"
    # two simulations were run, at the same host, and neither is an action
    assert len(simulated(aws)) == 2
    assert [a["method"] for a in events[-1].actions] == ["PUT", "GET"]


def test_boto3_refused_put_never_reaches_s3(
    aws_kit: Toolkit, aws: FakeAWS, s3: Any, events: list[Any]
) -> None:
    @aws_kit.tool()
    def save_report(text: str) -> str:
        s3.put_object(Bucket="reports", Key="q1.csv", Body=text.encode())
        return "saved"

    with Session(RORY).active(), pytest.raises(ActionRefused) as info:
        save_report("a,b\n")
    assert info.value.code == "not_authorized"
    assert f"s3:PutObject on {REPORT}" in info.value.message
    assert s3_puts(aws) == []  # the request never left the process
    assert aws.buckets["reports"] == {}
    assert len(simulated(aws)) == 1  # the engine's simulation did reach the fake
    # botocore's standard retry mode takes the wrapped refusal (HTTPClientError) for a
    # transient failure and tries twice more: the retries get the same refusal, are not sent,
    # and are not listed again
    attempts = events[-1].actions
    assert len(attempts) == 1
    assert {(a["action"], a["resource"], a["as"], a["verdict"]) for a in attempts} == {
        ("s3:PutObject", REPORT, "user", "not_authorized")
    }
    assert events[-1].code == "not_authorized"


def test_boto3_body_that_catches_the_refusal_is_still_refused(
    aws_kit: Toolkit, aws: FakeAWS, s3: Any, events: list[Any]
) -> None:
    caught: list[BaseException] = []

    @aws_kit.tool()
    def save_report(text: str) -> str:
        try:
            s3.put_object(Bucket="reports", Key="q1.csv", Body=text.encode())
        except (ClientError, BotoCoreError) as e:  # what botocore raises for a failed send
            caught.append(e)
            return "saved, trust me"
        return "saved"

    with Session(RORY).active(), pytest.raises(ToolRefused) as info:
        save_report("a,b\n")
    assert info.value.code == "not_authorized"
    [error] = caught
    assert isinstance(error, BotoCoreError)  # botocore wrapped the refusal (HTTPClientError)
    assert isinstance(error.kwargs["error"], ActionRefused)
    assert s3_puts(aws) == []
    assert events[-1].outcome == "refused"


# --- Kubernetes: the kubernetes client's AppsV1Api (urllib3), SubjectAccessReview ----------

AGENT_TOKEN = "agent-token"
AGENT_SA = "system:serviceaccount:agents:tool"
SCALE = "/apis/apps/v1/namespaces/payments/deployments/api/scale"
SCALE_RESOURCE = "namespaces/payments/deployments.apps/api/scale"


@pytest.fixture
def k8s() -> Iterator[FakeKubernetes]:
    with FakeKubernetes() as fake:
        fake.engine()
        fake.add_token(AGENT_TOKEN, AGENT_SA)
        scaler = [Rule(["get", "update", "patch"], ["apps"], ["deployments/scale"])]
        fake.bind("agent-scaler", scaler, users=[AGENT_SA], namespace="payments")
        fake.bind("payments-devs", scaler, groups=["payments-devs"], namespace="payments")
        fake.deployments["payments", "api"] = 2
        yield fake


@pytest.fixture
def k8s_kit(k8s: FakeKubernetes, make_kit: Any) -> Toolkit:
    kit: Toolkit = make_kit(
        {
            "id": "k8s",
            "integration": "kubernetes",
            "url": k8s.url,
            "token": literal(ENGINE_TOKEN),
            "groups": {DANA: ["payments-devs"], RORY: []},
        }
    )
    return kit


@pytest.fixture
def apps(k8s: FakeKubernetes) -> Iterator[AppsV1Api]:
    config = Configuration(host=k8s.url)
    config.api_key = {"authorization": AGENT_TOKEN}
    config.api_key_prefix = {"authorization": "Bearer"}
    with ApiClient(config) as client:
        yield AppsV1Api(client)


def patches(k8s: FakeKubernetes) -> list[str]:
    return [r.path for r in k8s.seen("PATCH")]


def test_kubernetes_allowed_scale_reaches_the_api_server(
    k8s_kit: Toolkit, k8s: FakeKubernetes, apps: AppsV1Api, events: list[Any]
) -> None:
    @k8s_kit.tool()
    def scale(replicas: int) -> str:
        done = apps.patch_namespaced_deployment_scale(
            "api", "payments", {"spec": {"replicas": replicas}}
        )
        return f"api has {done.spec.replicas} replicas"

    with Session(DANA).active():
        assert scale(3) == "api has 3 replicas"
    assert patches(k8s) == [SCALE]
    assert k8s.deployments["payments", "api"] == 3
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("scale", SCALE_RESOURCE)
    assert (action["as"], action["verdict"], action["connection"]) == ("user", "allowed", "k8s")
    # the SubjectAccessReview asked for dana reached the fake and is not an action
    [review] = k8s.reviews()
    assert review["spec"]["user"] == DANA
    assert review["spec"]["resourceAttributes"]["subresource"] == "scale"
    assert [a["path"] for a in events[-1].actions] == [SCALE]


def test_kubernetes_refused_scale_never_reaches_the_api_server(
    k8s_kit: Toolkit, k8s: FakeKubernetes, apps: AppsV1Api, events: list[Any]
) -> None:
    @k8s_kit.tool()
    def scale(replicas: int) -> str:
        apps.patch_namespaced_deployment_scale("api", "payments", {"spec": {"replicas": replicas}})
        return "scaled"

    with Session(RORY).active(), pytest.raises(ActionRefused) as info:
        scale(0)
    assert info.value.code == "not_authorized"
    assert f"scale on {SCALE_RESOURCE}" in info.value.message
    assert patches(k8s) == []  # the agent's token would have been allowed: never sent
    assert k8s.deployments["payments", "api"] == 2
    assert [r["spec"]["user"] for r in k8s.reviews()] == [RORY]  # the engine's SAR did arrive
    [action] = events[-1].actions
    assert (action["action"], action["resource"]) == ("scale", SCALE_RESOURCE)
    assert (action["as"], action["verdict"]) == ("user", "not_authorized")
    assert events[-1].code == "not_authorized"


def test_kubernetes_body_that_catches_the_refusal_is_still_refused(
    k8s_kit: Toolkit, k8s: FakeKubernetes, apps: AppsV1Api, events: list[Any]
) -> None:
    caught: list[BaseException] = []

    @k8s_kit.tool()
    def scale(replicas: int) -> str:
        try:
            apps.patch_namespaced_deployment_scale(
                "api", "payments", {"spec": {"replicas": replicas}}
            )
        except Exception as e:  # the kubernetes client lets it through unwrapped
            caught.append(e)
            return "scaled, trust me"
        return "scaled"

    with Session(RORY).active(), pytest.raises(ToolRefused) as info:
        scale(0)
    assert info.value.code == "not_authorized"
    [error] = caught
    assert isinstance(error, ActionRefused)
    assert patches(k8s) == []
    assert k8s.deployments["payments", "api"] == 2
    assert events[-1].outcome == "refused"
