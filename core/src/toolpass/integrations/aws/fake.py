"""A fake of the AWS APIs the AWS integration uses, on one 127.0.0.1 port.

Speaks the documented wire shapes:

- IAM (Query protocol, ``POST /`` form, version 2010-05-08, XML answers):
  ``SimulatePrincipalPolicy`` (evaluating real IAM policy JSON: Allow/Deny, Action/NotAction,
  Resource/NotResource globs, the common condition operators, permissions boundaries and an
  Organizations SCP, ``MissingContextValues``, ``ResourceSpecificResults``, ``Marker``
  pagination) and ``ListRoles`` (``PathPrefix``, ``MaxItems``/``Marker``);
- STS (Query, 2011-06-15): ``GetCallerIdentity``, ``AssumeRole`` (trust and ExternalId),
  ``AssumeRoleWithWebIdentity`` (unsigned);
- Identity Store and SSO Admin (JSON 1.1, ``X-Amz-Target``): ``GetUserId``,
  ``ListGroupMembershipsForMember``, ``ListAccountAssignmentsForPrincipal``,
  ``DescribePermissionSet`` (``NextToken`` pagination);
- container credentials (``GET /container-credentials``) and IMDSv2 (token + role);
- S3 objects, path style (``PUT`` and ``GET /<bucket>/<key>``, signed for ``s3``), or
  virtual-hosted as S3 serves them: by the ``Host`` header (``<bucket>.s3.amazonaws.com``,
  ``<bucket>.s3.<region>.amazonaws.com``, ``<bucket>.localhost``), whatever the URL was,
  the whole path being the key; buckets a test creates with ``add_bucket``; ``PutObject``
  answers 200 with an ``ETag``, ``GetObject`` the bytes with ``Content-Type``, ``ETag`` and
  ``Last-Modified``, and errors are S3's ``<Error>`` XML (``NoSuchBucket``, ``NoSuchKey``: 404).

Resource policies, each read with its service's documented call and signed for that service:
S3 ``GetBucketPolicy`` (``GET /<bucket>?policy``, ``x-amz-expected-bucket-owner``:
``AccessDenied`` for another account's bucket, ``NoSuchBucketPolicy``), KMS ``GetKeyPolicy``,
SQS ``GetQueueAttributes`` (JSON 1.0), SNS ``GetTopicAttributes`` (Query), Lambda
``GetPolicy`` (REST), Secrets Manager ``GetResourcePolicy``, ECR ``GetRepositoryPolicy``,
DynamoDB ``GetResourcePolicy`` and IAM ``GetRole`` (the trust policy); tests set
``resource_policies`` (bucket name or resource ARN -> policy), ``bucket_owners`` and
``policy_read_denied`` (services whose reads answer AccessDenied). ``SimulatePrincipalPolicy``
evaluates a ``ResourcePolicy`` for ``CallerArn`` (the user; AWS refuses a resource policy for
a role or group source without one) in ``ResourceOwner``'s account: within one account an
allow of either side is enough, across accounts both must allow (``EvalDecisionDetails``
gives each side; the key names ``IAM Policy`` and ``Resource Policy`` are this fake's).

Every signed request is verified with botocore's own SigV4 signer (``SignatureDoesNotMatch``,
``InvalidClientTokenId``, ``ExpiredToken`` as AWS answers them), so a signature the fake
accepts is one AWS would compute. Errors are ``<ErrorResponse>`` XML (Query) or
``{"__type", "Message"}`` JSON with ``x-amzn-ErrorType`` (JSON 1.1).
"""

from __future__ import annotations

import copy
import datetime
import fnmatch
import hashlib
import ipaddress
import json
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials
from fakes.server import FakeServer, Reply, Request

IAM_NS = "https://iam.amazonaws.com/doc/2010-05-08/"
_JSON10 = "application/x-amz-json-1.0"
STS_NS = "https://sts.amazonaws.com/doc/2011-06-15/"
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<day>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, ?SignedHeaders=(?P<signed>[a-z0-9;-]+), ?"
    r"Signature=(?P<sig>[0-9a-f]{64})"
)
IAM_ACTIONS = {"SimulatePrincipalPolicy", "ListRoles", "GetRole"}
SNS_ACTIONS = {"GetTopicAttributes"}
JSON_SERVICES = {
    "AWSIdentityStore": "identitystore",
    "SWBExternalService": "sso",
    "TrentService": "kms",
    "AmazonSQS": "sqs",
    "secretsmanager": "secretsmanager",
    "AmazonEC2ContainerRegistry_V20150921": "ecr",
    "DynamoDB_20120810": "dynamodb",
}
STS_ACTIONS = {"GetCallerIdentity", "AssumeRole", "AssumeRoleWithWebIdentity"}


@dataclass
class Key:
    """An access key the fake knows; ``arn`` is who it signs as, ``principal`` whose policies
    apply (a role for assumed-role sessions)."""

    secret: str
    arn: str
    token: str | None = None
    expires: float | None = None


@dataclass
class Principal:
    """An IAM user, group or role: its policies (id, type, document) and a boundary."""

    policies: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    boundary: dict[str, Any] | None = None
    trust: set[str] | None = None  # who may assume it (None: anyone known)
    external_id: str | None = None


def iso(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def xml_reply(status: int, body: str) -> Reply:
    return Reply(status, body.encode(), {"Content-Type": "text/xml", "x-amzn-RequestId": _rid()})


def error_xml(code: str, message: str, status: int = 400, *, kind: str = "Sender") -> Reply:
    """An AWS Query API error, as IAM and STS send it."""
    return xml_reply(
        status,
        f'<ErrorResponse xmlns="{IAM_NS}"><Error><Type>{kind}</Type><Code>{code}</Code>'
        f"<Message>{escape(message)}</Message></Error><RequestId>{_rid()}</RequestId>"
        "</ErrorResponse>",
    )


def error_json(code: str, message: str, status: int = 400) -> Reply:
    """An AWS JSON 1.1 error."""
    return Reply(
        status,
        json.dumps({"__type": code, "Message": message}).encode(),
        {"Content-Type": "application/x-amz-json-1.1", "x-amzn-ErrorType": code},
    )


def _rid() -> str:
    return str(uuid.uuid4())


def _members(name: str, items: list[str]) -> str:
    inner = "".join(f"<member>{i}</member>" for i in items)
    return f"<{name}>{inner}</{name}>" if items else f"<{name}/>"


# --- policy evaluation ------------------------------------------------------------------


def _glob(pattern: str, value: str, *, case: bool = True) -> bool:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, 0 if case else re.IGNORECASE) is not None


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _condition(cond: dict[str, Any], context: dict[str, list[str]], missing: set[str]) -> bool:
    """True when every condition holds; keys absent from the context are noted in missing."""
    ok = True
    for operator, tests in cond.items():
        for key, wanted in tests.items():
            have = context.get(key.lower())
            if have is None:
                missing.add(key)
                ok = False
                continue
            wanted_list = [str(w) for w in _as_list(wanted)]
            if operator == "StringEquals":
                hit = any(h in wanted_list for h in have)
            elif operator == "StringNotEquals":
                hit = not any(h in wanted_list for h in have)
            elif operator == "StringLike":
                hit = any(fnmatch.fnmatchcase(h, w) for h in have for w in wanted_list)
            elif operator == "Bool":
                hit = any(h.lower() == w.lower() for h in have for w in wanted_list)
            elif operator in ("IpAddress", "NotIpAddress"):
                inside = any(
                    ipaddress.ip_address(h) in ipaddress.ip_network(w, strict=False)
                    for h in have
                    for w in wanted_list
                )
                hit = inside if operator == "IpAddress" else not inside
            elif operator.startswith("Numeric"):
                compare = {
                    "NumericLessThan": float.__lt__,
                    "NumericLessThanEquals": float.__le__,
                    "NumericGreaterThan": float.__gt__,
                    "NumericGreaterThanEquals": float.__ge__,
                    "NumericEquals": float.__eq__,
                }[operator]
                hit = any(compare(float(h), float(w)) for h in have for w in wanted_list)
            else:
                raise ValueError(f"the fake does not know the operator {operator}")
            ok = ok and hit
    return ok


def _applies(stmt: dict[str, Any], action: str, resource: str) -> bool:
    if "Action" in stmt:
        if not any(_glob(a, action, case=False) for a in _as_list(stmt["Action"])):
            return False
    elif any(_glob(a, action, case=False) for a in _as_list(stmt.get("NotAction", []))):
        return False
    if "Resource" in stmt:
        return any(_glob(r, resource) for r in _as_list(stmt["Resource"]))
    return not any(_glob(r, resource) for r in _as_list(stmt.get("NotResource", [])))


def evaluate(
    docs: list[tuple[str, str, dict[str, Any]]],
    action: str,
    resource: str,
    context: dict[str, list[str]],
) -> tuple[str, list[tuple[str, str]], set[str]]:
    """(decision, matched statements as (policy id, type), missing context keys)."""
    allows: list[tuple[str, str]] = []
    denies: list[tuple[str, str]] = []
    missing: set[str] = set()
    for policy_id, kind, doc in docs:
        for stmt in _as_list(doc.get("Statement", [])):
            if not _applies(stmt, action, resource):
                continue
            if not _condition(stmt.get("Condition", {}), context, missing):
                continue
            (denies if stmt.get("Effect") == "Deny" else allows).append((policy_id, kind))
    if denies:
        return "explicitDeny", denies, missing
    if allows:
        return "allowed", allows, missing
    return "implicitDeny", [], missing


# --- the fake ---------------------------------------------------------------------------


class FakeAWS(FakeServer):
    """IAM, STS, Identity Store, SSO Admin and credential endpoints. See the module docstring.

    State tests set: ``keys`` (access key -> :class:`Key`), ``principals`` (ARN ->
    :class:`Principal`), ``scp`` (an SCP document, None: not in an organization), ``users``
    (Identity Store user id -> {"UserName", "Emails"}), ``groups`` (user id -> group ids),
    ``assignments`` ((principal type, id, account, permission set ARN)),
    ``permission_sets`` (ARN -> name), ``roles`` (role ARNs with paths, for ListRoles),
    ``web_identity_tokens`` (token -> role ARN), ``session_seconds`` (lifetime of issued
    credentials; None: as asked), ``empty_pages`` (truncated empty simulation pages first),
    ``page_size`` (ListRoles and JSON lists).
    """

    def __init__(self, *, account: str = "123456789012", tls: tuple[str, str] | None = None):
        super().__init__(tls=tls)
        self.account = account
        self.keys: dict[str, Key] = {}
        self.principals: dict[str, Principal] = {}
        self.scp: dict[str, Any] | None = None
        self.identity_store_id = "d-1234567890"
        self.instance_arn = "arn:aws:sso:::instance/ssoins-1234567890abcdef"
        self.users: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, list[str]] = {}
        self.assignments: list[tuple[str, str, str, str]] = []
        self.permission_sets: dict[str, str] = {}
        self.roles: list[tuple[str, str]] = []  # (path, arn)
        self.web_identity_tokens: dict[str, str] = {}
        self.session_seconds: float | None = None
        self.empty_pages = 0
        self.page_size = 100
        self.container_token: str | None = None
        self.container_role = f"arn:aws:iam::{account}:role/task-role"
        self.imds_role = "instance-role"
        self._imds_tokens: set[str] = set()
        self._markers: dict[str, int] = {}
        self.add("POST", "/", self._dispatch)
        self.add("GET", "/container-credentials", self._container)
        self.add("PUT", "/latest/api/token", self._imds_token)
        self.add("GET", "/latest/meta-data/iam/security-credentials/", self._imds_list)
        self.add(
            "GET", "/latest/meta-data/iam/security-credentials/(?P<role>[^/]+)", self._imds_creds
        )
        self.resource_policies: dict[str, Any] = {}
        self.bucket_owners: dict[str, str] = {}
        self.policy_read_denied: set[str] = set()
        self.bucket_keys: dict[str, str] = {}  # bucket -> its default KMS key (SSE-KMS)
        self.add("GET", "/2015-03-31/functions/(?P<name>[^/]+)/policy", self._lambda_GetPolicy)
        self.buckets: dict[str, dict[str, tuple[bytes, str]]] = {}
        for method in ("PUT", "GET"):
            self.add(method, "/(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/(?P<key>.+)", self._s3)
            self.add(method, "/(?P<key>[^/]+)", self._s3)

    # --- test helpers -------------------------------------------------------------------
    def add_key(
        self,
        access_key: str,
        secret: str,
        arn: str,
        *,
        token: str | None = None,
        expires: float | None = None,
    ) -> None:
        self.keys[access_key] = Key(secret, arn, token, expires)

    def add_principal(
        self,
        arn: str,
        *policies: dict[str, Any],
        boundary: dict[str, Any] | None = None,
        trust: set[str] | None = None,
        external_id: str | None = None,
    ) -> Principal:
        kind = arn.split(":")[5].split("/")[0]
        principal = Principal(
            [
                (f"{arn.rpartition('/')[2]}-policy-{i}", kind, copy.deepcopy(p))
                for i, p in enumerate(policies)
            ],
            copy.deepcopy(boundary),
            trust,
            external_id,
        )
        self.principals[arn] = principal
        return principal

    def add_bucket(self, name: str) -> dict[str, tuple[bytes, str]]:
        """An empty S3 bucket; its objects are key -> (bytes, content type)."""
        return self.buckets.setdefault(name, {})

    def fail_aws(
        self,
        code: str,
        status: int = 400,
        message: str = "injected",
        *,
        times: int = 1,
        retry_after: int | None = None,
    ) -> None:
        """Answer the next ``times`` requests with an AWS XML error."""
        reply = error_xml(code, message, status, kind="Receiver" if status >= 500 else "Sender")
        self.fail(
            status, body=reply.body, headers=reply.headers, times=times, retry_after=retry_after
        )

    def actions(self) -> list[str]:
        """The Action (Query) or X-Amz-Target operation of each POST, in order."""
        found = []
        for r in self.seen("POST", "/"):
            target = r.headers.get("x-amz-target")
            found.append(target.rpartition(".")[2] if target else _form(r).get("Action", "?"))
        return found

    def issue(self, arn: str, seconds: float) -> tuple[str, Key]:
        """New temporary credentials signing as ``arn``."""
        access = "ASIA" + secrets.token_hex(8).upper()
        key = Key(
            secrets.token_urlsafe(30),
            arn,
            secrets.token_urlsafe(60),
            time.time() + (self.session_seconds if self.session_seconds is not None else seconds),
        )
        self.keys[access] = key
        return access, key

    # --- signature ----------------------------------------------------------------------
    def _authenticate(self, request: Request, services: set[str]) -> Key | tuple[str, str, int]:
        """The key that signed ``request``, or the (code, message, status) AWS would answer."""
        invalid = (
            "InvalidClientTokenId",
            "The security token included in the request is invalid.",
            403,
        )
        match = _AUTH.fullmatch(request.headers.get("authorization", ""))
        if not match:
            return ("MissingAuthenticationToken", "Request is missing Authentication Token", 403)
        key = self.keys.get(match["key"])
        if key is None:
            return invalid
        if key.token is not None and request.headers.get("x-amz-security-token") != key.token:
            return invalid
        if match["service"] not in services:
            return ("SignatureDoesNotMatch", "Credential should be scoped to a valid service", 403)
        stamp = request.headers.get("x-amz-date", "")
        signed = match["signed"].split(";")
        if "host" not in signed or "x-amz-date" not in signed or not stamp.startswith(match["day"]):
            return ("IncompleteSignature", "The request signature is incomplete", 403)
        query = urlencode([(k, v) for k, vs in request.query.items() for v in vs])
        url = f"http://{request.headers['host']}{request.path}" + (f"?{query}" if query else "")
        botoreq = AWSRequest(
            request.method,
            url,
            headers={h: request.headers.get(h, "") for h in signed},
            data=request.body,
        )
        botoreq.context["timestamp"] = stamp
        signer = S3SigV4Auth if match["service"] == "s3" else SigV4Auth  # S3 keeps paths as sent
        auth = signer(
            BotoCredentials(match["key"], key.secret, key.token), match["service"], match["region"]
        )
        canonical = auth.canonical_request(botoreq)
        expected = auth.signature(auth.string_to_sign(botoreq, canonical), botoreq)
        if expected != match["sig"]:
            return (
                "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided.",
                403,
            )
        moment = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(
            tzinfo=datetime.timezone.utc
        )
        if abs(moment.timestamp() - time.time()) > 900:
            return ("SignatureDoesNotMatch", "Signature expired", 403)
        if key.expires is not None and key.expires <= time.time():
            return ("ExpiredToken", "The security token included in the request is expired", 400)
        return key

    # --- dispatch -----------------------------------------------------------------------
    def _dispatch(self, request: Request) -> Reply:
        target = request.headers.get("x-amz-target")
        if target:
            return self._json_api(request, target)
        params = _form(request)
        action = params.get("Action", "")
        if action == "AssumeRoleWithWebIdentity":
            return self._web_identity(params)
        if action in IAM_ACTIONS:
            service, version = "iam", "2010-05-08"
        elif action in SNS_ACTIONS:
            service, version = "sns", "2010-03-31"
        elif action in STS_ACTIONS:
            service, version = "sts", "2011-06-15"
        else:
            return error_xml("InvalidAction", f"Could not find operation {action}", 400)
        caller = self._authenticate(request, {service})
        if isinstance(caller, tuple):
            return error_xml(*caller)
        if params.get("Version") != version:
            return error_xml("InvalidAction", f"Could not find operation {action} for version", 400)
        if service in self.policy_read_denied or (
            action == "GetRole" and "iam" in self.policy_read_denied
        ):
            return error_xml("AccessDenied", f"not authorized to perform {service}:{action}", 403)
        handler = getattr(self, f"_{action}")
        result: Reply = handler(params, caller)
        return result

    # --- resource policies ----------------------------------------------------------------
    def _policy_text(self, key: str) -> str | None:
        found = self.resource_policies.get(key)
        return found if found is None or isinstance(found, str) else json.dumps(found)

    def _GetRole(self, params: dict[str, str], caller: Key) -> Reply:
        name = params.get("RoleName", "")
        arn = next((a for a in self.principals if a.endswith(f":role/{name}")), None)
        if arn is None:
            return error_xml("NoSuchEntity", f"The role with name {name} cannot be found.", 404)
        trust = self._policy_text(arn) or "{}"
        return xml_reply(
            200,
            f'<GetRoleResponse xmlns="{IAM_NS}"><GetRoleResult><Role><Path>/</Path>'
            f"<RoleName>{escape(name)}</RoleName><Arn>{escape(arn)}</Arn>"
            f"<AssumeRolePolicyDocument>{escape(quote(trust))}</AssumeRolePolicyDocument>"
            f"</Role></GetRoleResult><ResponseMetadata><RequestId>{_rid()}</RequestId>"
            "</ResponseMetadata></GetRoleResponse>",
        )

    def _GetTopicAttributes(self, params: dict[str, str], caller: Key) -> Reply:
        arn = params.get("TopicArn", "")
        if arn not in self.resource_policies:
            return error_xml("NotFound", "Topic does not exist", 404)
        entries = f"<entry><key>TopicArn</key><value>{escape(arn)}</value></entry>"
        policy = self._policy_text(arn)
        if policy:
            entries += f"<entry><key>Policy</key><value>{escape(policy)}</value></entry>"
        return xml_reply(
            200,
            '<GetTopicAttributesResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">'
            f"<GetTopicAttributesResult><Attributes>{entries}</Attributes>"
            f"</GetTopicAttributesResult><ResponseMetadata><RequestId>{_rid()}</RequestId>"
            "</ResponseMetadata></GetTopicAttributesResponse>",
        )

    def _json_policy(self, key: str, field_name: str, absent: str) -> Reply:
        """A JSON answer carrying the policy kept for ``key`` in ``field_name``."""
        if key not in self.resource_policies:
            return error_json(absent, f"{key} not found", 400)
        policy = self._policy_text(key)
        return Reply(200, {field_name: policy} if policy else {}, {"Content-Type": _JSON10})

    def _TrentService_GetKeyPolicy(self, body: dict[str, Any]) -> Reply:
        return self._json_policy(body.get("KeyId", ""), "Policy", "NotFoundException")

    def _AmazonSQS_GetQueueAttributes(self, body: dict[str, Any]) -> Reply:
        account, name = str(body.get("QueueUrl", "")).split("/")[-2:]
        suffix = f":{account}:{name}"
        key = next((k for k in self.resource_policies if ":sqs:" in k and k.endswith(suffix)), "")
        if not key:
            return error_json("QueueDoesNotExist", "The specified queue does not exist.")
        policy = self._policy_text(key)
        answer = {"Attributes": {"Policy": policy}} if policy else {}
        return Reply(200, answer, {"Content-Type": _JSON10})

    def _secretsmanager_GetResourcePolicy(self, body: dict[str, Any]) -> Reply:
        arn = body.get("SecretId", "")
        if arn not in self.resource_policies:
            return error_json("ResourceNotFoundException", "Secrets Manager can't find it.")
        policy = self._policy_text(arn)
        answer = {"ARN": arn, "Name": arn.rpartition(":")[2]}
        return Reply(
            200,
            {**answer, "ResourcePolicy": policy} if policy else answer,
            {"Content-Type": _JSON10},
        )

    def _AmazonEC2ContainerRegistry_V20150921_GetRepositoryPolicy(
        self, body: dict[str, Any]
    ) -> Reply:
        key = next(
            (
                k
                for k in self.resource_policies
                if k.endswith(f":{body.get('registryId')}:repository/{body.get('repositoryName')}")
            ),
            None,
        )
        if key is None:
            return error_json("RepositoryNotFoundException", "The repository does not exist")
        policy = self._policy_text(key)
        if not policy:
            return error_json("RepositoryPolicyNotFoundException", "no policy")
        return Reply(
            200,
            {
                "registryId": body.get("registryId"),
                "repositoryName": body.get("repositoryName"),
                "policyText": policy,
            },
            {"Content-Type": _JSON10},
        )

    def _DynamoDB_20120810_GetResourcePolicy(self, body: dict[str, Any]) -> Reply:
        arn = body.get("ResourceArn", "")
        if not self._policy_text(arn):
            return error_json("PolicyNotFoundException", "no policy")
        return Reply(
            200, {"Policy": self._policy_text(arn), "RevisionId": "1"}, {"Content-Type": _JSON10}
        )

    def _lambda_GetPolicy(self, request: Request) -> Reply:
        caller = self._authenticate(request, {"lambda"})
        if isinstance(caller, tuple):
            code, message, status = caller
            return error_json(code, message, status)
        if "lambda" in self.policy_read_denied:
            return error_json("AccessDeniedException", "not authorized: lambda:GetPolicy", 403)
        name = unquote(request.params["name"])
        key = next((k for k in self.resource_policies if k.endswith(f":function:{name}")), None)
        policy = self._policy_text(key) if key else None
        if not policy:
            return error_json(
                "ResourceNotFoundException", "The resource you requested does not exist.", 404
            )
        return Reply(
            200, {"Policy": policy, "RevisionId": "1"}, {"Content-Type": "application/json"}
        )

    def _bucket_encryption(self, request: Request, bucket: str) -> Reply:
        """``GetBucketEncryption``: SSE-S3 unless ``bucket_keys`` names a KMS key (every
        bucket has default encryption since January 2023)."""
        if "s3" in self.policy_read_denied:
            return _s3_error("AccessDenied", "Access Denied", 403)
        if bucket not in self.buckets and bucket not in self.resource_policies:
            return _s3_error("NoSuchBucket", "The specified bucket does not exist", 404)
        key = self.bucket_keys.get(bucket)
        rule = (
            f"<SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID>{escape(key)}</KMSMasterKeyID>"
            if key
            else "<SSEAlgorithm>AES256</SSEAlgorithm>"
        )
        body = (
            '<ServerSideEncryptionConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            f"<Rule><ApplyServerSideEncryptionByDefault>{rule}</ApplyServerSideEncryptionByDefault>"
            "<BucketKeyEnabled>false</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>"
        )
        return Reply(200, body.encode(), {"Content-Type": "application/xml"})

    def _bucket_policy(self, request: Request, bucket: str) -> Reply:
        if "s3" in self.policy_read_denied:
            return _s3_error("AccessDenied", "Access Denied", 403)
        owner = self.bucket_owners.get(bucket, self.account)
        expected = request.headers.get("x-amz-expected-bucket-owner")
        if expected is not None and expected != owner:
            return _s3_error("AccessDenied", "Access Denied", 403)
        if bucket not in self.buckets and bucket not in self.resource_policies:
            return _s3_error("NoSuchBucket", "The specified bucket does not exist", 404)
        policy = self._policy_text(bucket)
        if not policy:
            return _s3_error("NoSuchBucketPolicy", "The bucket policy does not exist", 404)
        return Reply(200, policy.encode(), {"Content-Type": "application/json"})

    def _SimulatePrincipalPolicy(self, params: dict[str, str], caller: Key) -> Reply:
        source = params.get("PolicySourceArn", "")
        actions = _list(params, "ActionNames")
        resources = _list(params, "ResourceArns") or ["*"]
        if not source or not actions:
            return error_xml("InvalidInput", "PolicySourceArn and ActionNames are required")
        resource_policy = params.get("ResourcePolicy")
        caller_arn = params.get("CallerArn") or (source if ":user/" in source else "")
        if resource_policy and not caller_arn:
            return error_xml(
                "InvalidInput",
                "CallerArn is required if you include a ResourcePolicy and the PolicySourceArn "
                "is not the ARN for an IAM user.",
            )
        owner = params.get("ResourceOwner", "").split(":")[4:5] or [source.split(":")[4]]
        principal = self.principals.get(source)
        if principal is None:
            kind, _, name = source.split(":", 5)[-1].partition("/")
            return error_xml("NoSuchEntity", f"The {kind} with name {name} cannot be found.", 404)
        context: dict[str, list[str]] = {}
        i = 1
        while f"ContextEntries.member.{i}.ContextKeyName" in params:
            name = params[f"ContextEntries.member.{i}.ContextKeyName"]
            if params.get(f"ContextEntries.member.{i}.ContextKeyType") is None:
                return error_xml("InvalidInput", "ContextKeyType is required")
            context[name.lower()] = _list(params, f"ContextEntries.member.{i}.ContextKeyValues")
            i += 1
        marker = params.get("Marker")
        page = self._markers.pop(marker, None) if marker else 0
        if marker and page is None:
            return error_xml("InvalidInput", "Invalid Marker")
        if page is not None and page < self.empty_pages:
            token = secrets.token_urlsafe(12)
            self._markers[token] = page + 1
            body = f"<EvaluationResults/><IsTruncated>true</IsTruncated><Marker>{token}</Marker>"
            return self._simulation(body)
        members = []
        on_resource = (
            (json.loads(resource_policy), caller_arn, owner[0]) if resource_policy else None
        )
        for action in actions:
            members.append(self._simulate_one(principal, action, resources, context, on_resource))
        body = (
            f"<EvaluationResults>{''.join(members)}</EvaluationResults>"
            "<IsTruncated>false</IsTruncated>"
        )
        return self._simulation(body)

    def _simulation(self, inner: str) -> Reply:
        return xml_reply(
            200,
            f'<SimulatePrincipalPolicyResponse xmlns="{IAM_NS}"><SimulatePrincipalPolicyResult>'
            f"{inner}</SimulatePrincipalPolicyResult><ResponseMetadata><RequestId>{_rid()}"
            "</RequestId></ResponseMetadata></SimulatePrincipalPolicyResponse>",
        )

    def _simulate_one(
        self,
        principal: Principal,
        action: str,
        resources: list[str],
        context: dict[str, list[str]],
        on_resource: tuple[dict[str, Any], str, str] | None = None,
    ) -> str:
        specific = []
        sides: dict[str, str] = {}
        all_missing: set[str] = set()
        worst = "allowed"
        matched_all: list[tuple[str, str]] = []
        orgs_all = True
        for resource in resources:
            decision, matched, missing = evaluate(principal.policies, action, resource, context)
            if on_resource is not None:
                decision, matched, sides = _with_resource_policy(
                    decision, matched, missing, on_resource, action, resource, context
                )
            boundary_allowed: bool | None = None
            if principal.boundary is not None:
                b_decision, _, b_missing = evaluate(
                    [("boundary", "user-managed", principal.boundary)], action, resource, context
                )
                missing |= b_missing
                boundary_allowed = b_decision == "allowed"
                if decision == "allowed" and not boundary_allowed:
                    decision, matched = (
                        ("explicitDeny", [])
                        if b_decision == "explicitDeny"
                        else ("implicitDeny", [])
                    )
            if self.scp is not None:
                o_decision, _, _ = evaluate([("scp", "none", self.scp)], action, resource, context)
                orgs_allowed = o_decision == "allowed"
                orgs_all = orgs_all and orgs_allowed
                if not orgs_allowed:
                    decision = "explicitDeny" if o_decision == "explicitDeny" else "implicitDeny"
                    matched = [m for m in matched if decision != "explicitDeny"]
            all_missing |= missing
            matched_all += matched
            rank = {"allowed": 0, "implicitDeny": 1, "explicitDeny": 2}
            if rank[decision] > rank[worst]:
                worst = decision
            extra = ""
            if boundary_allowed is not None:
                extra = (
                    "<PermissionsBoundaryDecisionDetail><AllowedByPermissionsBoundary>"
                    f"{str(boundary_allowed).lower()}</AllowedByPermissionsBoundary>"
                    "</PermissionsBoundaryDecisionDetail>"
                )
            specific.append(
                f"<member><EvalResourceName>{escape(resource)}</EvalResourceName>"
                f"<EvalResourceDecision>{decision}</EvalResourceDecision>"
                f"{_statements(matched)}{_members('MissingContextValues', sorted(missing))}"
                f"{_details(sides)}{extra}</member>"
            )
        orgs = ""
        if self.scp is not None:
            orgs = (
                "<OrganizationsDecisionDetail><AllowedByOrganizations>"
                f"{str(orgs_all).lower()}</AllowedByOrganizations></OrganizationsDecisionDetail>"
            )
        boundary = ""
        if principal.boundary is not None:
            allowed = all(
                evaluate([("b", "user-managed", principal.boundary)], action, r, context)[0]
                == "allowed"
                for r in resources
            )
            boundary = (
                "<PermissionsBoundaryDecisionDetail><AllowedByPermissionsBoundary>"
                f"{str(allowed).lower()}</AllowedByPermissionsBoundary>"
                "</PermissionsBoundaryDecisionDetail>"
            )
        top_resource = resources[0] if len(resources) == 1 else "*"
        return (
            f"<member><EvalActionName>{escape(action)}</EvalActionName>"
            f"<EvalResourceName>{escape(top_resource)}</EvalResourceName>"
            f"<EvalDecision>{worst}</EvalDecision>{_details(sides)}{_statements(matched_all)}"
            f"{_members('MissingContextValues', sorted(all_missing))}{orgs}{boundary}"
            f"<ResourceSpecificResults>{''.join(specific)}</ResourceSpecificResults></member>"
        )

    def _ListRoles(self, params: dict[str, str], caller: Key) -> Reply:
        prefix = params.get("PathPrefix", "/")
        roles = [(p, a) for p, a in self.roles if p.startswith(prefix)]
        start = int(params.get("Marker") or 0)
        size = min(int(params.get("MaxItems") or 100), self.page_size)
        chunk = roles[start : start + size]
        more = start + size < len(roles)
        members = "".join(
            f"<member><Path>{escape(p)}</Path><RoleName>{escape(a.rpartition('/')[2])}</RoleName>"
            f"<RoleId>AROA{secrets.token_hex(8).upper()}</RoleId><Arn>{escape(a)}</Arn>"
            "<CreateDate>2024-01-01T00:00:00Z</CreateDate></member>"
            for p, a in chunk
        )
        marker = f"<Marker>{start + size}</Marker>" if more else ""
        return xml_reply(
            200,
            f'<ListRolesResponse xmlns="{IAM_NS}"><ListRolesResult><IsTruncated>'
            f"{str(more).lower()}</IsTruncated>{marker}<Roles>{members}</Roles></ListRolesResult>"
            f"<ResponseMetadata><RequestId>{_rid()}</RequestId></ResponseMetadata></ListRolesResponse>",
        )

    def _GetCallerIdentity(self, params: dict[str, str], caller: Key) -> Reply:
        return xml_reply(
            200,
            f'<GetCallerIdentityResponse xmlns="{STS_NS}"><GetCallerIdentityResult>'
            f"<Arn>{escape(caller.arn)}</Arn><UserId>AIDA{secrets.token_hex(6).upper()}</UserId>"
            f"<Account>{caller.arn.split(':')[4]}</Account></GetCallerIdentityResult>"
            f"<ResponseMetadata><RequestId>{_rid()}</RequestId></ResponseMetadata>"
            "</GetCallerIdentityResponse>",
        )

    def _AssumeRole(self, params: dict[str, str], caller: Key) -> Reply:
        role = params.get("RoleArn", "")
        session = params.get("RoleSessionName", "")
        if not role or not re.fullmatch(r"[\w+=,.@-]{2,64}", session):
            return error_xml("ValidationError", "RoleArn and a valid RoleSessionName are required")
        target = self.principals.get(role)
        allowed = (
            target is not None
            and (target.trust is None or caller.arn in target.trust)
            and (target.external_id is None or params.get("ExternalId") == target.external_id)
        )
        if not allowed:
            return error_xml(
                "AccessDenied",
                f"User: {caller.arn} is not authorized to perform: sts:AssumeRole "
                f"on resource: {role}",
                403,
            )
        return self._assumed(
            "AssumeRole", role, session, int(params.get("DurationSeconds") or 3600)
        )

    def _web_identity(self, params: dict[str, str]) -> Reply:
        token = params.get("WebIdentityToken", "")
        role = params.get("RoleArn", "")
        if self.web_identity_tokens.get(token) != role:
            return error_xml("InvalidIdentityToken", "Couldn't retrieve verification key", 400)
        return self._assumed(
            "AssumeRoleWithWebIdentity", role, params.get("RoleSessionName", "s"), 3600
        )

    def _assumed(self, operation: str, role: str, session: str, seconds: int) -> Reply:
        account = role.split(":")[4]
        name = role.rpartition("/")[2]
        session_arn = f"arn:aws:sts::{account}:assumed-role/{name}/{session}"
        access, key = self.issue(session_arn, seconds)
        assert key.expires is not None
        return xml_reply(
            200,
            f'<{operation}Response xmlns="{STS_NS}"><{operation}Result><Credentials>'
            f"<AccessKeyId>{access}</AccessKeyId><SecretAccessKey>{key.secret}</SecretAccessKey>"
            f"<SessionToken>{key.token}</SessionToken><Expiration>{iso(key.expires)}</Expiration>"
            f"</Credentials><AssumedRoleUser><AssumedRoleId>AROA{secrets.token_hex(6).upper()}:"
            f"{escape(session)}</AssumedRoleId><Arn>{escape(session_arn)}</Arn></AssumedRoleUser>"
            f"</{operation}Result><ResponseMetadata><RequestId>{_rid()}</RequestId>"
            f"</ResponseMetadata></{operation}Response>",
        )

    # --- JSON 1.1 -----------------------------------------------------------------------
    def _json_api(self, request: Request, target: str) -> Reply:
        prefix, _, operation = target.partition(".")
        service = JSON_SERVICES.get(prefix)
        if service is None:
            return error_json("UnknownOperationException", f"Unknown target {target}")
        caller = self._authenticate(request, {service})
        if isinstance(caller, tuple):
            code, message, status = caller
            code = {"InvalidClientTokenId": "UnrecognizedClientException"}.get(code, code)
            return error_json(code, message, status)
        if not request.headers.get("content-type", "").startswith("application/x-amz-json-1."):
            return error_json("SerializationException", "expected application/x-amz-json-1.x")
        if service in self.policy_read_denied:
            return error_json(
                "AccessDeniedException", f"not authorized: {service}:{operation}", 403
            )
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            return error_json("SerializationException", "not JSON")
        handler = getattr(self, f"_{prefix}_{operation}", None)
        if handler is None:
            return error_json("UnknownOperationException", f"Unknown operation {operation}")
        result: Reply = handler(body)
        return result

    def _page(self, items: list[Any], body: dict[str, Any], field_name: str) -> Reply:
        start = int(body.get("NextToken") or 0)
        size = min(int(body.get("MaxResults") or 100), self.page_size)
        answer: dict[str, Any] = {field_name: items[start : start + size]}
        if start + size < len(items):
            answer["NextToken"] = str(start + size)
        return Reply(200, answer, {"Content-Type": "application/x-amz-json-1.1"})

    def _AWSIdentityStore_GetUserId(self, body: dict[str, Any]) -> Reply:
        if body.get("IdentityStoreId") != self.identity_store_id:
            return error_json("ResourceNotFoundException", "IDENTITY_STORE not found.")
        unique = body.get("AlternateIdentifier", {}).get("UniqueAttribute", {})
        path, value = unique.get("AttributePath"), unique.get("AttributeValue")
        if path not in ("userName", "emails.value") or not value:
            return error_json("ValidationException", f"The attribute {path} is not unique")
        for user_id, user in self.users.items():
            if (path == "userName" and user["UserName"] == value) or (
                path == "emails.value" and any(e["Value"] == value for e in user["Emails"])
            ):
                return Reply(
                    200,
                    {
                        "IdentityStoreId": self.identity_store_id,
                        "UserId": user_id,
                        "UserArn": f"arn:aws:identitystore::{self.account}:identitystore/"
                        f"{self.identity_store_id}/user/{user_id}",
                    },
                    {"Content-Type": "application/x-amz-json-1.1"},
                )
        return error_json("ResourceNotFoundException", "USER not found.")

    def _AWSIdentityStore_ListGroupMembershipsForMember(self, body: dict[str, Any]) -> Reply:
        user_id = body.get("MemberId", {}).get("UserId")
        items = [
            {
                "IdentityStoreId": self.identity_store_id,
                "MembershipId": f"m-{group}-{user_id}",
                "GroupId": group,
                "MemberId": {"UserId": user_id},
            }
            for group in self.groups.get(user_id, [])
        ]
        return self._page(items, body, "GroupMemberships")

    def _SWBExternalService_ListAccountAssignmentsForPrincipal(self, body: dict[str, Any]) -> Reply:
        if body.get("InstanceArn") != self.instance_arn:
            return error_json("ResourceNotFoundException", "instance not found")
        account = (body.get("Filter") or {}).get("AccountId")
        items = [
            {
                "AccountId": acct,
                "PermissionSetArn": ps,
                "PrincipalId": pid,
                "PrincipalType": kind,
            }
            for kind, pid, acct, ps in self.assignments
            if kind == body.get("PrincipalType")
            and pid == body.get("PrincipalId")
            and (account is None or acct == account)
        ]
        return self._page(items, body, "AccountAssignments")

    def _SWBExternalService_DescribePermissionSet(self, body: dict[str, Any]) -> Reply:
        arn = body.get("PermissionSetArn")
        if arn not in self.permission_sets:
            return error_json("ResourceNotFoundException", "permission set not found")
        return Reply(
            200,
            {
                "PermissionSet": {
                    "Name": self.permission_sets[arn],
                    "PermissionSetArn": arn,
                    "CreatedDate": 1700000000.0,
                    "SessionDuration": "PT1H",
                }
            },
            {"Content-Type": "application/x-amz-json-1.1"},
        )

    # --- S3 (REST-XML, path style) ------------------------------------------------------
    def _s3(self, request: Request) -> Reply:
        caller = self._authenticate(request, {"s3"})
        if isinstance(caller, tuple):
            code, message, status = caller
            return _s3_error(code, message, status)
        if "policy" in request.query and "key" in request.params and "bucket" not in request.params:
            return self._bucket_policy(request, unquote(request.params["key"]))
        if "encryption" in request.query and "bucket" not in request.params:
            return self._bucket_encryption(request, unquote(request.params["key"]))
        virtual = _VIRTUAL_HOST.fullmatch(request.headers.get("host", "").lower())
        if virtual:  # S3 routes by the Host header, not by the URL the client used
            bucket, key = virtual["bucket"], unquote(request.path[1:])
        elif "bucket" in request.params:
            bucket, key = request.params["bucket"], unquote(request.params["key"])
        else:
            return _s3_error("NotImplemented", "This fake creates no buckets", 501)
        objects = self.buckets.get(bucket)
        if objects is None:
            return _s3_error("NoSuchBucket", "The specified bucket does not exist", 404)
        if request.method == "PUT":
            kind = request.headers.get("content-type") or "binary/octet-stream"
            objects[key] = (request.body, kind)
            return Reply(200, b"", {"ETag": _etag(request.body), "x-amz-request-id": _rid()})
        if key not in objects:
            return _s3_error("NoSuchKey", "The specified key does not exist.", 404)
        data, kind = objects[key]
        headers = {
            "Content-Type": kind,
            "ETag": _etag(data),
            "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT",
            "Accept-Ranges": "bytes",
            "x-amz-request-id": _rid(),
        }
        return Reply(200, data, headers)

    # --- credential endpoints ----------------------------------------------------------
    def _creds_json(self, arn: str) -> dict[str, Any]:
        access, key = self.issue(arn, 3600)
        assert key.expires is not None
        return {
            "Code": "Success",
            "Type": "AWS-HMAC",
            "AccessKeyId": access,
            "SecretAccessKey": key.secret,
            "Token": key.token,
            "Expiration": iso(key.expires),
            "RoleArn": arn,
        }

    def _container(self, request: Request) -> Reply | dict[str, Any]:
        if self.container_token is not None and (
            request.headers.get("authorization") != self.container_token
        ):
            return Reply(401, {"message": "Unauthorized"})
        return self._creds_json(self.container_role)

    def _imds_token(self, request: Request) -> Reply:
        if "x-aws-ec2-metadata-token-ttl-seconds" not in request.headers:
            return Reply(400, b"", {"Content-Type": "text/plain"})
        token = secrets.token_urlsafe(20)
        self._imds_tokens.add(token)
        return Reply(200, token.encode(), {"Content-Type": "text/plain"})

    def _imds_list(self, request: Request) -> Reply:
        if request.headers.get("x-aws-ec2-metadata-token") not in self._imds_tokens:
            return Reply(401, b"", {"Content-Type": "text/plain"})
        return Reply(200, self.imds_role.encode(), {"Content-Type": "text/plain"})

    def _imds_creds(self, request: Request) -> Reply | dict[str, Any]:
        if request.headers.get("x-aws-ec2-metadata-token") not in self._imds_tokens:
            return Reply(401, b"", {"Content-Type": "text/plain"})
        if request.params["role"] != self.imds_role:
            return Reply(404, b"", {"Content-Type": "text/plain"})
        return self._creds_json(f"arn:aws:iam::{self.account}:role/{self.imds_role}")


_VIRTUAL_HOST = re.compile(
    r"(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])"
    r"\.(?:s3(?:[.-][a-z0-9-]+)*\.amazonaws\.com|localhost)(?::\d+)?"
)


def _etag(data: bytes) -> str:
    return '"' + hashlib.md5(data, usedforsecurity=False).hexdigest() + '"'


def _s3_error(code: str, message: str, status: int) -> Reply:
    """S3's error document (S3 has no <ErrorResponse> wrapper)."""
    return xml_reply(
        status,
        f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
        f"<Message>{escape(message)}</Message><RequestId>{_rid()}</RequestId></Error>",
    )


def _form(request: Request) -> dict[str, str]:
    if request.method != "POST":
        return {}
    parsed = parse_qs(request.body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[0] for k, v in parsed.items()}


def _list(params: dict[str, str], name: str) -> list[str]:
    found = []
    i = 1
    while f"{name}.member.{i}" in params:
        found.append(params[f"{name}.member.{i}"])
        i += 1
    return found


def _statements(matched: list[tuple[str, str]]) -> str:
    if not matched:
        return "<MatchedStatements/>"
    items = "".join(
        f"<member><SourcePolicyId>{escape(pid)}</SourcePolicyId><SourcePolicyType>{kind}"
        "</SourcePolicyType><StartPosition><Line>1</Line><Column>1</Column></StartPosition>"
        "<EndPosition><Line>1</Line><Column>80</Column></EndPosition></member>"
        for pid, kind in dict.fromkeys(matched)
    )
    return f"<MatchedStatements>{items}</MatchedStatements>"


def _details(sides: dict[str, str]) -> str:
    entries = "".join(
        f"<entry><key>{escape(k)}</key><value>{v}</value></entry>" for k, v in sides.items()
    )
    return f"<EvalDecisionDetails>{entries}</EvalDecisionDetails>"


def _principals(stmt: dict[str, Any]) -> list[str]:
    found = stmt.get("Principal")
    if found == "*":
        return ["*"]
    aws = found.get("AWS", []) if isinstance(found, dict) else []
    return [str(p) for p in _as_list(aws)]


def _with_resource_policy(
    identity: str,
    matched: list[tuple[str, str]],
    missing: set[str],
    on_resource: tuple[dict[str, Any], str, str],
    action: str,
    resource: str,
    context: dict[str, list[str]],
) -> tuple[str, list[tuple[str, str]], dict[str, str]]:
    """IAM's evaluation with a resource policy, for the caller in the owner's account: a
    statement naming the caller (or ``*``) grants or denies it; one naming the caller's
    account (its root or id) lets the account's identity policies decide."""
    doc, caller, owner = on_resource
    account = caller.split(":")[4]
    direct, delegated, denied = False, False, False
    found: list[tuple[str, str]] = []
    for stmt in _as_list(doc.get("Statement", [])):
        names = _principals(stmt)
        mine = "*" in names or caller in names
        whole = any(n in (f"arn:aws:iam::{account}:root", account) for n in names)
        if not (mine or whole) or not _applies(stmt, action, resource):
            continue
        if not _condition(stmt.get("Condition", {}), context, missing):
            continue
        found.append(("ResourcePolicy", "resource"))
        if stmt.get("Effect") == "Deny":
            denied = True
        elif mine:
            direct = True
        else:
            delegated = True
    resource_side = (
        "explicitDeny" if denied else "allowed" if direct or delegated else "implicitDeny"
    )
    if identity == "explicitDeny" or denied:
        decision = "explicitDeny"
    elif owner == account:
        decision = "allowed" if identity == "allowed" or direct else "implicitDeny"
    else:
        decision = (
            "allowed" if identity == "allowed" and resource_side == "allowed" else "implicitDeny"
        )
    sides = {} if owner == account else {"IAM Policy": identity, "Resource Policy": resource_side}
    return decision, matched + found, sides
