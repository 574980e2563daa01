"""AWS: IAM policy simulation (``iam:SimulatePrincipalPolicy``) for a user's principal.

The check asks IAM, with the engine's own read-only credential, to simulate one IAM action
(``s3:DeleteObject``) on one resource ARN (``arn:aws:s3:::bucket/key``) for the user's IAM
principal (a user, group or role ARN), with the connection's condition context
(``aws:MultiFactorAuthPresent``, ``aws:SourceIp``, ...):

- ``allowed`` with no missing context value -> allow;
- ``explicitDeny`` -> deny (an explicit deny stands whatever the missing context);
- ``implicitDeny`` (no statement allows it) -> deny by default; ``implicit_deny: unknown``
  makes it unknown; an Organizations SCP that does not allow the action is a deny in every
  setting;
- resource-based policies (``_aws_resource_policies``): the policy the resource carries
  (S3 bucket, KMS key, SQS queue, SNS topic, Lambda function, Secrets Manager secret, ECR
  repository, DynamoDB table, a role's trust policy) is read with the service's own API and
  passed to the simulation (``ResourcePolicy``, ``ResourceOwner``). IAM simulates a
  resource policy only for an IAM user, so for a role or group principal the identity
  simulation stands alone only where the policy cannot change it (same account, no Deny
  statement, and, for a key or trust policy, delegation to the account's IAM policies);
  otherwise, or when the policy cannot be read, nothing but an explicit deny is answered
  (unknown). Across accounts both sides must allow. A resource without a policy
  (``NoSuchBucketPolicy``) has none;
- ``s3:PutObject`` into a bucket whose default encryption is a customer managed KMS key
  (``GetBucketEncryption``) is checked as ``kms:GenerateDataKey`` on that key too;
- a decision that depends on context values the connection does not supply
  (``MissingContextValues``) -> unknown;
- ``NoSuchEntity`` (the principal does not exist), ``AccessDenied``, ``Throttling``, a 5xx,
  a malformed answer or an expired credential -> unknown.

The engine authenticates with SigV4 (``_sigv4.py``, on hashlib/hmac), with its credential
(``_credentials.py``) from static keys, the ambient chain (environment, web identity,
container credentials, IMDSv2) and optionally an assumed read-only role (STS ``AssumeRole``
with an ExternalId; credentials are cached and refreshed before they expire). Partitions
``aws``, ``aws-us-gov`` and ``aws-cn`` choose the IAM and STS endpoints; ``url``,
``sts_url``, ``identitystore_url`` and ``sso_admin_url`` override them. IAM's answer is read
in ``_simulation.py``.

Identity: an email becomes an IAM principal ARN by a template
(``arn:aws:iam::123456789012:role/{local}``), a mapping, a file, a service, a callable, or
``identity_center`` (``_identity_center.py``): IAM Identity Center's ``GetUserId`` (exact
email or user name), the user's account assignments (directly and through groups) in
``account_id``, and the role each permission set materialises as
(``AWSReservedSSO_<name>_<hex>``). A user with several permission sets in the account is
ambiguous unless ``sso_permission_set`` names one.

The request hook: the connection serves every endpoint of its partition, and
``match_request`` places any request to any AWS service on its IAM action and resource ARN
with the table generated from botocore's service models (``aws/generate.py``,
``_aws_routes``). Resources that need the account id (DynamoDB tables, Lambda functions,
...) are built with ``account_id``; where the request names no resource the table says
``*``, which this check refuses unless ``allow_wildcard_resource`` is on, so a write whose
resource is unknown never passes silently. An S3 copy (``x-amz-copy-source``) is placed only
when it copies the destination onto itself (it reads a second object otherwise); a Lambda
request's ``?Qualifier=`` is part of the function ARN it acts on.
"""

from __future__ import annotations

import contextlib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from toolpass.integrations._kit import UserIds, mapped_user, paged
from toolpass.integrations.aws import _identity_center
from toolpass.integrations.aws import _resource_policies as policies
from toolpass.integrations.aws import _routes as _aws_routes
from toolpass.integrations.aws._answers import (
    ERRORS,
    IAM_VERSION,
    SERVICES,
    NotFound,
    members,
    parse_xml,
    text,
)
from toolpass.integrations.aws._credentials import STS_VERSION, CredentialChain
from toolpass.integrations.aws._keys import KEYS, PARTITIONS, PRINCIPAL, validate
from toolpass.integrations.aws._sigv4 import Credentials, form, sign_v4
from toolpass.integrations.aws._simulation import Coverage, context_entries, coverage, decide
from toolpass.integrations.base import (
    REDACTED,
    Action,
    ConnectionConfig,
    Decision,
    Effect,
    Integration,
    MalformedResponse,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import Match, Request
from toolpass.wire import budget
from toolpass.wire.errors import LookupFailed
from toolpass.wire.http import NetOptions, Response

__all__ = ["AWS", "INTEGRATION", "Credentials", "sign_v4"]

_FORM = "application/x-www-form-urlencoded; charset=utf-8"
_JSON11 = "application/x-amz-json-1.1"
_ACTION = re.compile(r"[a-z0-9][a-z0-9-]{0,39}:[A-Za-z][A-Za-z0-9]{0,127}")
_ARN = re.compile(r"arn:(aws|aws-us-gov|aws-cn):([a-z0-9-]+):([a-z0-9-]*):(\d{12}|aws|):(.+)")
_PRINCIPALS = UserIds(PRINCIPAL, "an IAM user, group or role ARN")
_READ_VERBS = (
    "Get", "List", "Describe", "Head", "Search", "Select", "Query", "Scan", "BatchGet",
    "Lookup", "View", "Read", "Check", "Validate", "Preview", "Filter", "Simulate",
)  # fmt: skip
_DESTRUCTIVE_VERBS = (
    "Delete", "Terminate", "Remove", "Purge", "Destroy", "Deregister", "Revoke", "Detach",
    "Disable", "Drop", "BatchDelete",
)  # fmt: skip

# --- the integration --------------------------------------------------------------------


class AWS(Integration):
    """AWS IAM, through the policy simulator. See the module docstring."""

    name = "aws"
    description = (
        "AWS IAM: simulates the user's IAM principal (user, group or role) for an IAM action "
        "on a resource ARN with iam:SimulatePrincipalPolicy."
    )
    default_url = "https://iam.amazonaws.com"
    identity_modes = ("identity_center",)
    keys = KEYS
    actions = load_actions(__name__)

    # --- declaration --------------------------------------------------------------------
    @classmethod
    def action(cls, name: str) -> Action | None:
        """A declared action, or any well-formed IAM action ``service:Operation`` (the set of
        IAM actions is open); its effect is read from the operation's verb."""
        declared = super().action(name)
        if declared is not None or not isinstance(name, str) or not _ACTION.fullmatch(name):
            return declared
        operation = name.partition(":")[2]
        effect: Effect = "write"
        if operation.startswith(_DESTRUCTIVE_VERBS):
            effect = "destructive"
        elif operation.startswith(_READ_VERBS):
            effect = "read"
        return Action(name, f"The IAM action {name}.", effect, f"{name} on the resource ARN")

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        """Cross-key checks: see the key descriptions."""
        validate(options)

    def __init__(self, config: ConnectionConfig, http: Any = None) -> None:
        super().__init__(config, http)
        o = self.options
        self.partition: str = o["partition"]
        part = PARTITIONS[self.partition]
        self.region: str = o.get("region") or part.default_region
        # The default URL is aws's IAM endpoint: another partition means its own.
        self.iam_url = f"https://{part.iam_host}" if config.url == self.default_url else config.url
        self.sts_url: str = o.get("sts_url") or f"https://sts.{self.region}.{part.suffix}"
        self.identitystore_url: str = (
            o.get("identitystore_url") or f"https://identitystore.{self.region}.{part.suffix}"
        )
        self.sso_admin_url: str = (
            o.get("sso_admin_url") or f"https://sso.{self.region}.{part.suffix}"
        )
        self.context = context_entries(o["context"])
        self.chain = CredentialChain(self.options, self.secret, self.sts, self._plain)

    # --- the request hook ---------------------------------------------------------------
    def serves(self, scheme: str, host: str, port: int) -> bool:
        """Every endpoint of the connection's partition (``*.amazonaws.com``, and
        ``*.api.aws`` in ``aws``), over HTTPS or HTTP (S3 answers both), on any port; and
        S3 virtual-hosted buckets on the connection's own host (``<bucket>.<host>``)."""
        suffixes = {
            "aws": (".amazonaws.com", ".api.aws"),
            "aws-us-gov": (".amazonaws.com", ".api.aws"),
            "aws-cn": (".amazonaws.com.cn", ".api.amazonwebservices.com.cn"),
        }[self.partition]
        host = host.lower().rstrip(".")
        if scheme in ("http", "https") and host.endswith(suffixes):
            return True
        own_scheme, own_host, own_port = self._own
        return (scheme, port) == (own_scheme, own_port) and host.endswith("." + own_host)

    def match_request(self, request: Request) -> Match | None:
        """The IAM action and resource ARN of a request to any AWS service: the service from
        the SigV4 credential scope (or the host), the operation by the service's protocol,
        the resource from the request, the connection's partition and ``account_id``
        (resources that need it stay unresolved without it). See ``_aws_routes``.

        The host comes from ``request.host`` or the ``Host`` header; S3 requests need it,
        since a virtual-hosted request carries its bucket there."""
        host = getattr(request, "host", None) or _aws_routes.header_text(
            request.headers.get("host")
        )
        account = self.options.get("account_id")
        found = _aws_routes.routes().match(
            request, host or "", self.partition, self.region, account, self._own[1]
        )
        if found is None or found.resource is None:
            return found
        return _aws_routes.narrowed(found, request)

    # --- the check ----------------------------------------------------------------------
    def check(self, user: str, action: str, resource: str) -> Decision:
        if not _ACTION.fullmatch(action):
            return Decision.unknown(f"{action!r} is not an IAM action (service:Operation)")
        problem = self._resource_problem(resource)
        if problem:
            return Decision.unknown(problem, cause="resource")
        principal = mapped_user(self, user, _PRINCIPALS)
        if isinstance(principal, Decision):
            return principal
        if principal.split(":")[1] != self.partition:
            return Decision.unknown(f"{principal} is not in the {self.partition} partition")
        first = self._simulate(principal, action, resource, None)
        if isinstance(first, Decision):
            return first
        pending = Coverage("its resource policy is not read yet", "its policy is not read yet")
        early = self._decide(first, principal, action, resource, pending)
        if early.decision == "deny":  # an explicit deny or an SCP: no resource policy helps
            return early
        try:
            policy = policies.read(self, action, resource, principal.split(":")[4])
            cover = coverage(policy, principal, action, self.partition)
        except LookupFailed as e:  # the simulation lacks the policy: only a deny can stand
            gap = f"the resource's own policy could not be read ({e})"
            policy, cover = None, Coverage(gap, gap)
        if cover.cross_account_without_policy:
            return Decision.deny(
                f"{resource} belongs to another account and has no resource policy that could "
                f"let {principal} (account {principal.split(':')[4]}) in"
            )
        if cover.simulated and policy is not None:
            first = self._simulate(principal, action, resource, policy)
            if isinstance(first, Decision):
                return first
        decided = self._decide(first, principal, action, resource, cover)
        if decided.decision == "allow" and action.lower() == "s3:putobject":
            return self._bucket_key_allows(user, resource, principal, decided)
        return decided

    def _bucket_key_allows(
        self, user: str, resource: str, principal: str, decided: Decision
    ) -> Decision:
        """S3 refuses an upload to a bucket whose default encryption is a customer managed
        KMS key unless the user may also ``kms:GenerateDataKey`` with that key."""
        bucket = resource.split(":", 5)[5].partition("/")[0]
        key = policies.bucket_key(self, principal.split(":")[4], bucket)
        if key is None:
            return decided
        needed = self.check(user, "kms:GenerateDataKey", key)
        if needed.decision == "allow":
            return decided
        said = f"{bucket} encrypts new objects with the KMS key {key} by default, and "
        if needed.decision == "deny":
            return Decision.deny(said + needed.reason)
        return Decision.unknown(said + needed.reason)

    def _simulate(
        self,
        principal: str,
        action: str,
        resource: str,
        policy: policies.ResourcePolicy | None,
    ) -> ET.Element | Decision:
        """IAM's evaluation result for the one action (with the resource's own policy when
        given), or an unknown decision when the answer holds no single one."""
        params = {
            "Action": "SimulatePrincipalPolicy",
            "Version": IAM_VERSION,
            "PolicySourceArn": principal,
            "ActionNames.member.1": action,
            "ResourceArns.member.1": resource,
        }
        if self.options.get("caller_arn"):
            params["CallerArn"] = self.options["caller_arn"]
        if policy is not None and policy.document is not None:  # for a user only
            params["CallerArn"] = principal  # the policy's Principal is matched against it
            params["ResourcePolicy"] = policy.document
            params["ResourceOwner"] = f"arn:{self.partition}:iam::{policy.account}:root"
        for i, (key, kind, values) in enumerate(self.context, 1):
            params[f"ContextEntries.member.{i}.ContextKeyName"] = key
            params[f"ContextEntries.member.{i}.ContextKeyType"] = kind
            for j, value in enumerate(values, 1):
                params[f"ContextEntries.member.{i}.ContextKeyValues.member.{j}"] = value
        results: list[ET.Element] = []
        for result in self.iam_pages("SimulatePrincipalPolicy", params, principal):
            results.extend(members(result, "EvaluationResults"))
        mine = [r for r in results if (text(r, "EvalActionName") or "").lower() == action.lower()]
        if len(mine) != 1:
            return Decision.unknown(
                f"IAM's simulation returned {len(mine)} results for {action}, expected one"
            )
        return mine[0]

    def _resource_problem(self, resource: str) -> str | None:
        wild = self.options["allow_wildcard_resource"]
        if resource == "*":
            return None if wild else "the resource '*' is refused (allow_wildcard_resource: off)"
        match = _ARN.fullmatch(resource)
        if not match or any(c.isspace() or ord(c) < 32 for c in resource):
            return f"{resource!r} is not an ARN (arn:<partition>:<service>:...)"
        if match.group(1) != self.partition:
            return f"{resource} is not in the {self.partition} partition of this connection"
        if not wild and ("*" in resource or "?" in resource):
            return f"{resource} holds a wildcard (allow_wildcard_resource: off)"
        return None

    def _decide(
        self, result: ET.Element, principal: str, action: str, resource: str, cover: Coverage
    ) -> Decision:
        implicit_deny = self.options["implicit_deny"]
        return decide(result, principal, action, resource, cover, implicit_deny)

    def iam_pages(
        self, operation: str, params: Mapping[str, str], subject: str
    ) -> Iterator[ET.Element]:
        """Every ``<OperationResult>`` of a paginated IAM Query call (``Marker``)."""

        def read(url: str, *, what: str, params: Mapping[str, str | None], absent: Any) -> Any:
            asked = {k: v for k, v in params.items() if v is not None}
            root = self._query(url, "iam", self._iam_region(), asked, subject)
            result = root.find(f"{operation}Result")
            if result is None:
                raise LookupFailed(f"IAM's {operation} answer has no {operation}Result")
            more = text(result, "IsTruncated") == "true"
            return {"results": [result], "more": more, "Marker": text(result, "Marker")}

        limit = self.options["max_pages"]
        return paged(
            self,
            self.iam_url,
            what=f"IAM's {operation}",
            too_many=f"IAM's {operation} answer has more than {limit} pages",
            style="cursor",
            items="results",
            params=params,
            pages=limit,
            size_param=None,
            cursor="Marker",
            next_at="Marker",
            more_at="more",
            get=read,
        )

    def json_pages(
        self,
        url: str,
        service: str,
        target: str,
        payload: Mapping[str, Any],
        field: str,
        subject: str,
    ) -> Iterator[Any]:
        """The items of a paginated JSON 1.1 list (``NextToken``)."""
        operation = target.rpartition(".")[2]

        def read(url: str, *, what: str, params: Mapping[str, str | None], absent: Any) -> Any:
            token = params.get("NextToken")
            asked = {**payload, "NextToken": token} if token else payload
            return self.json_api(url, service, target, asked, subject)

        limit = self.options["max_pages"]
        return paged(
            self,
            url,
            what=operation,
            too_many=f"{operation} has more than {limit} pages",
            style="cursor",
            items=field,
            optional=True,
            pages=limit,
            size_param=None,
            cursor="NextToken",
            next_at="NextToken",
            get=read,
        )

    def _iam_region(self) -> str:
        return PARTITIONS[self.partition].iam_region

    # --- reading resource policies (for ``_aws_resource_policies``) ------------------------
    def endpoint(self, service: str, region: str) -> str:
        """The URL of ``service`` in ``region`` (``endpoint_urls`` overrides it)."""
        urls = self.options["endpoint_urls"]
        found = urls.get(service) or urls.get("default")
        if found:
            return str(found).rstrip("/")
        return f"https://{service}.{region}.{PARTITIONS[self.partition].suffix}"

    def signed(
        self,
        method: str,
        url: str,
        service: str,
        region: str,
        headers: Mapping[str, str],
        body: bytes,
        what: str,
    ) -> Response:
        """One SigV4-signed request with the engine's credential, to ``what``."""
        creds = self.credentials()
        signed = sign_v4(method, url, headers, body, creds, region, service)
        try:
            return self.answer(method, url, what=what, headers=signed, body=body)
        except LookupFailed as e:
            raise LookupFailed(_without(str(e), creds)) from None

    def error_code(self, answer: Response) -> str:
        """AWS's error code in a failed answer (JSON, or Query and S3 XML), or ""."""
        code = answer.header("x-amzn-errortype") or answer.header("x-amzn-query-error") or ""
        if not code:
            with contextlib.suppress(LookupFailed):
                data = answer.json()
                if isinstance(data, dict):
                    code = str(data.get("__type") or data.get("code") or "")
        if not code:
            with contextlib.suppress(LookupFailed):
                root = parse_xml(answer.body, "AWS")
                code = text(root, "Code") or text(root, "Error/Code") or ""
        return code.partition(":")[0].partition(";")[0].rpartition("#")[2]

    def resource_failure(self, answer: Response, what: str, code: str) -> LookupFailed:
        """Why reading a resource policy failed (the engine's secrets never in it)."""
        if not code:
            return LookupFailed(self.redact(str(self.failure(answer, what))))
        text = ERRORS.get(code) or ("failed" if answer.status >= 500 else "refused")
        return LookupFailed(self.redact(f"AWS {text} (HTTP {answer.status} {code}) to {what}"))

    def json_call(
        self,
        service: str,
        region: str,
        target: str,
        payload: Mapping[str, Any],
        *,
        version: str = "1.1",
    ) -> Any:
        """A JSON-protocol call's answer; None when AWS says there is no such policy or
        resource (``_aws_resource_policies.ABSENT``)."""
        operation = target.rpartition(".")[2]
        what = f"run {service} {operation} for the resource's policy"
        headers = {"Content-Type": f"application/x-amz-json-{version}", "X-Amz-Target": target}
        url = self.endpoint(service, region) + "/"
        answer = self.signed(
            "POST", url, service, region, headers, json.dumps(payload).encode(), what
        )
        if answer.status == 200:
            return self.parse(answer, what)
        code = self.error_code(answer)
        if code in policies.ABSENT:
            return None
        raise self.resource_failure(answer, what, code)

    def query_attribute(
        self, service: str, region: str, params: Mapping[str, str], name: str
    ) -> str | None:
        """The attribute ``name`` of a Query-protocol ``Get*Attributes`` answer (None when
        it or the resource is absent)."""
        url = self.endpoint(service, region) + "/"
        what = f"run {service} {params['Action']} for the resource's policy"
        root = self._policy_query(url, service, region, params, what)
        for entry in root.iter("entry") if root is not None else ():
            if text(entry, "key") == name:
                return text(entry, "value") or None
        return None

    def role_trust_policy(self, role: str) -> str | None:
        """The trust policy of the IAM role named ``role`` (IAM ``GetRole``)."""
        params = {"Action": "GetRole", "Version": IAM_VERSION, "RoleName": role}
        what = f"run IAM GetRole for the trust policy of {role}"
        root = self._policy_query(self.iam_url + "/", "iam", self._iam_region(), params, what)
        document = text(root, "GetRoleResult/Role/AssumeRolePolicyDocument")
        return unquote(document) if document else None

    def _policy_query(
        self, url: str, service: str, region: str, params: Mapping[str, str], what: str
    ) -> ET.Element | None:
        headers = {"Content-Type": _FORM, "Accept": "text/xml"}
        answer = self.signed("POST", url, service, region, headers, form(params), what)
        if answer.status == 200:
            return parse_xml(answer.body, what)
        code = self.error_code(answer)
        if code in policies.ABSENT:
            return None
        raise self.resource_failure(answer, what, code)

    # --- signed requests: the kit's wire, AWS's own error codes -----------------------------
    def _query(
        self,
        url: str,
        service: str,
        region: str,
        params: Mapping[str, str],
        subject: str,
        *,
        credentials: Credentials | None = None,
        signed: bool = True,
    ) -> ET.Element:
        """A Query API call (IAM, STS): the ``<ActionResponse>`` element of the answer."""
        operation = params.get("Action", "")
        label = f"{SERVICES[service]} {operation}"
        body = form(params)
        headers = {"Content-Type": _FORM, "Accept": "text/xml"}
        creds = credentials
        if signed:
            creds = creds or self.credentials()
            headers = sign_v4("POST", url + "/", headers, body, creds, region, service)
        answer = self._send(url, headers, body, label, subject)
        root: ET.Element | None = None
        if answer.status == 200:
            root = parse_xml(answer.body, label)
            if root.tag == f"{operation}Response":
                return root
            if root.tag != "ErrorResponse":
                raise MalformedResponse(
                    f"{label}'s answer is not XML from AWS (<{root.tag}>, not "
                    f"<{operation}Response>)"
                )
        else:
            with contextlib.suppress(LookupFailed):
                root = parse_xml(answer.body, label)
        code, message = text(root, "Error/Code") or "", text(root, "Error/Message") or ""
        raise self._failure(answer, label, subject, creds, code, message)

    def json_api(
        self, url: str, service: str, target: str, payload: Mapping[str, Any], subject: str
    ) -> Any:
        """A JSON 1.1 call (Identity Store, SSO Admin): the JSON object of the answer."""
        label = f"{SERVICES[service]} {target.rpartition('.')[2]}"
        body = json.dumps(payload).encode()
        creds = self.credentials()
        headers = {"Content-Type": _JSON11, "X-Amz-Target": target}
        headers = sign_v4("POST", url + "/", headers, body, creds, self.region, service)
        answer = self._send(url, headers, body, label, subject)
        if answer.status != 200:
            code, message = answer.header("x-amzn-errortype") or "", ""
            try:
                data = answer.json()
            except LookupFailed:
                data = None
            if isinstance(data, dict):
                code = code or str(data.get("__type") or data.get("code") or "")
                message = str(data.get("Message") or data.get("message") or "")
            code = code.partition(":")[0].rpartition("#")[2]
            if code == "ResourceNotFoundException":
                raise NotFound(self.redact(message))
            raise self._failure(answer, label, subject, creds, code, message)
        return self.parse(answer, f"{label} for {subject}")

    def _send(
        self, url: str, headers: Mapping[str, str], body: bytes, label: str, subject: str
    ) -> Response:
        what = f"run {label} for {subject}"
        return self.answer("POST", url + "/", what=what, headers=headers, body=body)

    def _failure(
        self,
        answer: Response,
        label: str,
        subject: str,
        creds: Credentials | None,
        code: str,
        message: str,
    ) -> LookupFailed:
        """What AWS's error ``code`` says; the kit's reading of the status for an answer
        that carries none (a proxy's 502, a redirect)."""
        if not code:
            return LookupFailed(
                _without(str(self.failure(answer, f"run {label} for {subject}")), creds)
            )
        self.chain.forget(code, creds)
        text = ERRORS.get(code)
        if text is None:
            text = "failed" if answer.status >= 500 else "gave an unexpected answer"
        if code == "NoSuchEntity":
            text = f"{subject} does not exist in IAM"
        if answer.status == 429 or (answer.status == 400 and "Throttl" in code):
            after = answer.header("retry-after")
            text += f" (retry after {after}s)" if after else ""
        detail = f": {message[:200]}" if message else ""
        reason = f"{label} {text} (HTTP {answer.status} {code}) for {subject}{detail}"
        return LookupFailed(_without(self.redact(reason), creds))

    def sts(
        self,
        params: Mapping[str, str],
        subject: str,
        *,
        credentials: Credentials | None = None,
        signed: bool = True,
    ) -> ET.Element:
        """An STS Query call, in the connection's region."""
        url, region = self.sts_url, self.region
        return self._query(
            url, "sts", region, params, subject, credentials=credentials, signed=signed
        )

    # --- credentials (``_credentials``) ---------------------------------------------------
    def credentials(self) -> Credentials:
        """The engine's credential for IAM: the base one, or the assumed role's."""
        return self.chain.current()

    def secret_values(self) -> Iterator[str]:
        """The connection's secrets and the credentials in use (static, ambient or assumed):
        their secret keys and session tokens."""
        yield from super().secret_values()
        for creds in self.chain.held():
            yield creds.secret_access_key
            if creds.session_token:
                yield creds.session_token

    def _plain(self, method: str, url: str, headers: Mapping[str, str]) -> Response:
        """A request to a local credential endpoint: never proxied, short timeout."""
        timeout = min(2.0, budget.remaining(self.config.timeout))
        return self.http.request(
            method, url, headers=headers, timeout=timeout, options=NetOptions()
        )

    # --- identity (``_identity_center``) --------------------------------------------------
    def lookup_identity_center(self, email: str) -> Sequence[str]:
        """The role ARNs of ``email``'s permission sets in the account (IAM Identity Center)."""
        return _identity_center.role_arns(self, email)

    # --- probe --------------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        params = {"Action": "GetCallerIdentity", "Version": STS_VERSION}
        root = self.sts(params, "the engine")
        result = root.find("GetCallerIdentityResult")
        arn = text(result, "Arn")
        if not arn:
            raise LookupFailed("STS GetCallerIdentity's answer has no Arn")
        return ProbeResult(True, f"signed in as {arn} (account {text(result, 'Account')})")


def _without(text: str, creds: Credentials | None) -> str:
    """``text`` without the secret key and session token of ``creds``."""
    for secret in (creds.secret_access_key, creds.session_token) if creds else ():
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


INTEGRATION = AWS
