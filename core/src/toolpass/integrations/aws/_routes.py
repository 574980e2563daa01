"""AWS requests to IAM actions: the router behind ``AWS.match_request``.

AWS cannot be placed by method and path alone. A request is placed in three steps:

1. The service: the SigV4 credential scope (``Authorization: AWS4-HMAC-SHA256
   Credential=AKID/<date>/<region>/<service>/aws4_request``, SigV4a's
   ``Credential=AKID/<date>/<service>/aws4_request``, or a presigned URL's
   ``X-Amz-Credential``) names the signing name; the host (``<endpointPrefix>.<region>.
   amazonaws.com``) narrows it to one botocore service when several sign alike (SES v1/v2,
   the Bedrock runtimes) and places unsigned requests. A request signed for one service but
   sent to another AWS service's host is not placed.
2. The operation, by protocol: ``query``/``ec2`` the ``Action`` parameter (query string or
   form body; two different values are not placed); ``json`` the ``X-Amz-Target`` header
   ``<targetPrefix>.<Operation>``; ``smithy-rpc-v2-cbor`` the path ``/service/<targetPrefix>/
   operation/<Operation>``; REST protocols the method and path templates, where the
   conditions of the row (query parameters, headers) pick among operations sharing a path,
   the most specific first. S3 virtual-hosted requests (``<bucket>.s3.<region>.
   amazonaws.com``, dualstack, FIPS, accelerate, legacy ``s3-<region>``, and
   ``<bucket>.<the connection's own host>``) are matched as ``/<bucket><path>``; S3 on a
   host that is neither AWS's nor the connection's, an IP address or ``localhost`` (where
   botocore uses path style) is not placed, since the bucket cannot be told from the key.
   S3 acts on the bucket its server reads from the ``Host`` header: when that header and
   the URL's host name different buckets (or one of them cannot be read), the request is
   placed with its resource unresolved, and so refused. Access points, Multi-Region Access
   Points, Object Lambda, Outposts and directory buckets (S3 Express) are not supported:
   their requests are placed with the resource unresolved, and so refused.
3. The resource template of the row (see ``aws/generate.py``), filled from the path,
   query, body, the request's signing region, the connection's partition and ``account_id``.

The table (``aws/routes.json.gz``) is read on the first AWS request, and each botocore
service's matcher is built on the first request to that service.
"""

from __future__ import annotations

import dataclasses
import gzip
import ipaddress
import json
import re
import threading
from collections.abc import Mapping
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from toolpass.integrations.routes import Match, Request, Route, RouteTable
from toolpass.rules.scope import escapes

__all__ = ["AwsRoutes", "header_text", "narrowed", "routes"]

_FUNCTION = re.compile(r"arn:[a-z-]+:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_.-]+(?::[^:]+)?")

_RANK = {"read": 0, "write": 1, "destructive": 2}
_REST = frozenset({"rest-json", "rest-xml"})
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d{1,2}")
_CREDENTIAL = re.compile(r"Credential=([^,\s]+)")
_SUFFIXES = (".amazonaws.com.cn", ".amazonaws.com", ".api.amazonwebservices.com.cn", ".api.aws")
_S3_LEGACY = re.compile(r"s3-(?:fips-)?((?:[a-z]{2}(?:-[a-z]+)+-\d{1,2})|external-1)")
_S3_BUCKET = re.compile(r"[a-z0-9](?:[a-z0-9.-]{0,61}[a-z0-9])?")
# Host labels of S3 endpoints that name an access point (or an outpost, a directory bucket),
# not a bucket: toolpass cannot name their resources.
_S3_ACCESS_POINT = re.compile(r"s3-accesspoint|s3-object-lambda|s3-global|s3-outposts|s3express-.+")
_UNNAMED = "\0"  # an S3 request whose bucket toolpass cannot name
_FIELD = re.compile(r"\{([^{}]+)\}")
_ACCOUNT = re.compile(r"\d{12}")
_QUEUE = re.compile(r"[A-Za-z0-9_-]{1,80}(\.fifo)?")
_KEY_ID = re.compile(r"(mrk-)?[0-9a-f]{8}(-?[0-9a-f]{4}){3}-?[0-9a-f]{12}|mrk-[0-9a-f]{32}")
_PARTIQL = {"SELECT": "Select", "INSERT": "Insert", "UPDATE": "Update", "DELETE": "Delete"}
# S3 object actions whose request with ?versionId= is authorized by the *Version action.
_S3_VERSIONED = {
    "s3:GetObject": "s3:GetObjectVersion",
    "s3:DeleteObject": "s3:DeleteObjectVersion",
    "s3:GetObjectAcl": "s3:GetObjectVersionAcl",
    "s3:PutObjectAcl": "s3:PutObjectVersionAcl",
    "s3:GetObjectTagging": "s3:GetObjectVersionTagging",
    "s3:PutObjectTagging": "s3:PutObjectVersionTagging",
    "s3:DeleteObjectTagging": "s3:DeleteObjectVersionTagging",
    "s3:GetObjectAttributes": "s3:GetObjectVersionAttributes",
    "s3:GetObjectTorrent": "s3:GetObjectVersionTorrent",
}
# EC2 resource kinds whose ARN carries no account (public images and snapshots).
_EC2_NO_ACCOUNT = frozenset({"image", "snapshot"})
_EC2_MEMBER = {
    "instance": "InstanceId",
    "volume": "VolumeId",
    "snapshot": "SnapshotId",
    "image": "ImageId",
    "security-group": "GroupId",
    "vpc": "VpcId",
    "subnet": "SubnetId",
    "network-interface": "NetworkInterfaceId",
    "key-pair": "KeyName",
}


@dataclasses.dataclass(frozen=True, slots=True)
class _Context:
    """What a resource template may name besides the request."""

    partition: str
    region: str
    account: str | None
    service: str


class _Service:
    """One botocore service's operations, compiled on first use."""

    def __init__(self, name: str, meta: Mapping[str, Any], rows: list[list[str]]) -> None:
        self.name = name
        self.signing: str = meta["signing"]
        self.host: str = meta["host"]
        self.protocols = frozenset(meta["protocols"])
        self.target: str = meta.get("target") or ""
        self.version: str = meta.get("version") or ""
        self.rest = bool(_REST & self.protocols)
        self._rows = rows
        self._lock = threading.Lock()
        self._table: RouteTable | None = None
        self._groups: dict[tuple[str, str], list[tuple[tuple[str, ...], Route, str]]] = {}
        self._ops: dict[str, Route] = {}
        self._greedy: list[tuple[str, re.Pattern[str], tuple[str, ...], Route, str]] = []

    def _build(self) -> None:
        with self._lock:
            if self._table is not None:
                return
            groups: dict[tuple[str, str], list[tuple[tuple[str, ...], Route, str]]] = {}
            ops: dict[str, Route] = {}
            greedy: list[tuple[str, re.Pattern[str], tuple[str, ...], Route, str]] = []
            for row in self._rows:
                route = Route.row(row[:6])
                ops[row[7]] = route
                conds = tuple(c for c in row[8].split("&") if c and c[0] != "+")
                spans = {c[1:] for c in row[8].split("&") if c.startswith("+")}
                if spans:
                    greedy.append((route.method, _regex(route.path, spans), conds, route, row[7]))
                    continue
                groups.setdefault((route.method, route.path), []).append((conds, route, row[7]))
            self._greedy = greedy
            for found in groups.values():
                found.sort(key=lambda c: -len(c[0]))
            self._groups, self._ops = groups, ops
            keys = (Route(m, p, "", "", "read") for m, p in groups) if self.rest else ()
            self._table = RouteTable(keys)

    def place(self, request: Request) -> tuple[Route, str, dict[str, str], bool] | None:
        """(route, operation, path parameters, hostile) for the request, or None."""
        if self._table is None:
            self._build()
        if self.rest:
            return self._place_rest(request)
        op = self._operation(request)
        if op is None or op not in self._ops:
            return None
        return self._ops[op], op, {}, False

    def _place_rest(self, request: Request) -> tuple[Route, str, dict[str, str], bool] | None:
        assert self._table is not None
        for method, regex, conds, route, op in self._greedy:
            m = regex.fullmatch(request.path.strip("/"))
            if method == request.method and m and all(_condition(c, request) for c in conds):
                raw = m.groupdict()
                params = {k: unquote(v) for k, v in raw.items()}
                hostile = any(
                    escapes(v) or ("/" in v and "/" not in raw[k]) for k, v in params.items()
                )
                return route, op, params, hostile
        found = self._table.match(request)
        if found is None:
            return None
        met = [
            (conds, route, op)
            for conds, route, op in self._groups[(found.route.method, found.route.path)]
            if all(_condition(c, request) for c in conds)
        ]
        if not met:
            return None
        best = [m for m in met if len(m[0]) == len(met[0][0])]
        route, op = _strongest([(r, o) for _, r, o in best])
        return route, op, dict(found.params), found.resource is None

    def _operation(self, request: Request) -> str | None:
        if "json" in self.protocols:
            target = _header(request, "x-amz-target")
            if target:
                prefix, _, op = target.rpartition(".")
                return op if prefix == self.target else None
        if "smithy-rpc-v2-cbor" in self.protocols:
            m = re.fullmatch(r"/service/([^/]+)/operation/([^/]+)", request.path)
            if m:
                return m.group(2) if m.group(1) == self.target else None
        if self.protocols & {"query", "ec2"}:
            values = set(request.query.get("Action", []))
            form = request.form.get("Action") if request.body else None
            if isinstance(form, list) or (form is not None and not isinstance(form, str)):
                return None
            if form is not None:
                values.add(form)
            if len(values) != 1:
                return None
            versions = set(request.query.get("Version", []))
            body_version = request.form.get("Version") if request.body else None
            if isinstance(body_version, str):
                versions.add(body_version)
            if self.version and versions and versions != {self.version}:
                return None
            return values.pop()
        return None


def _text(value: object) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    return value if isinstance(value, str) else str(value)


def _regex(path: str, spans: set[str]) -> re.Pattern[str]:
    """A path template whose ``spans`` parameters may hold slashes, as a regex."""
    out, last = "", 0
    stripped = path.strip("/")
    for m in _FIELD.finditer(stripped):
        name = m.group(1).rstrip("+")
        out += re.escape(stripped[last : m.start()])
        out += (
            f"(?P<{name}>.+)" if name in spans or m.group(1).endswith("+") else f"(?P<{name}>[^/]+)"
        )
        last = m.end()
    return re.compile(out + re.escape(stripped[last:]))


def _header(request: Request, name: str) -> str:
    value = request.headers.get(name)
    return "" if value is None else _text(value)


def _condition(cond: str, request: Request) -> bool:
    if cond.startswith("@"):
        return cond[1:] in request.headers
    name, eq, value = cond.partition("=")
    got = request.query.get(name)
    return got is not None and (not eq or value in got)


def _strongest(found: list[tuple[Route, str]]) -> tuple[Route, str]:
    """The strongest of several routes a request may take, carrying all of their flags."""
    route, op = max(found, key=lambda f: _RANK[f[0].effect])
    flags = {flag for r, _ in found for flag in r.flags}
    if flags != set(route.flags):
        route = dataclasses.replace(
            route, untrusted="u" in flags, sends_out="s" in flags, agent="a" in flags
        )
    return route, op


def _scope(request: Request) -> tuple[str | None, str] | None:
    """(region, signing name) of the request's SigV4 credential scope."""
    credential = None
    auth = _header(request, "authorization")
    if auth.startswith("AWS4-"):
        m = _CREDENTIAL.search(auth)
        credential = m.group(1) if m else None
    if credential is None:
        got = request.query.get("X-Amz-Credential")
        credential = got[0] if got and len(got) == 1 else None
    if not credential:
        return None
    parts = unquote(credential).split("/")
    if len(parts) == 5 and parts[4] == "aws4_request":
        return parts[2], parts[3]
    if len(parts) == 4 and parts[3] == "aws4_request":  # SigV4a: no region in the scope
        region_set = _header(request, "x-amz-region-set")
        return (region_set if _REGION.fullmatch(region_set) else None), parts[2]
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class _Host:
    prefix: str | None  # the endpoint prefix, None for an AWS host of no known service
    region: str | None
    rest: str  # labels before the prefix (an S3 bucket, an account id, an API id)


def _parse_host(host: str, known: frozenset[str]) -> _Host | None:
    """The endpoint prefix, region and leading labels of an AWS host; None for others."""
    for suffix in _SUFFIXES:
        if host.endswith(suffix):
            labels = host[: -len(suffix)].split(".")
            break
    else:
        return None
    region = labels.pop() if labels and _REGION.fullmatch(labels[-1]) else None
    while labels and labels[-1] in ("dualstack", "fips"):
        labels.pop()
    if labels and labels[-1] == "s3-accelerate":
        labels[-1] = "s3"
    if labels:
        legacy = _S3_LEGACY.fullmatch(labels[-1])
        if legacy:
            labels[-1] = "s3"
            region = region or ("us-east-1" if legacy.group(1) == "external-1" else legacy.group(1))
    for k in range(len(labels)):
        candidate = ".".join(labels[k:])
        first, _, tail = candidate.partition(".")
        for name in (candidate, ".".join(filter(None, (first.removesuffix("-fips"), tail)))):
            if name in known:
                return _Host(name, region, ".".join(labels[:k]))
    return _Host(None, region, "")


def _bare_host(host: str) -> str:
    """``host`` lower-cased, without a port or a trailing dot."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def _is_local(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


class AwsRoutes:
    """The AWS route table: services by signing name and endpoint prefix."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        rows: dict[str, list[list[str]]] = {}
        for row in data["routes"]:
            rows.setdefault(row[6], []).append(row)
        self.source: str = data.get("source", "")
        self.services = {
            name: _Service(name, meta, rows.get(name, []))
            for name, meta in sorted(data["services"].items())
        }
        self.by_signing: dict[str, list[_Service]] = {}
        self.by_host: dict[str, list[_Service]] = {}
        for service in self.services.values():
            self.by_signing.setdefault(service.signing, []).append(service)
            self.by_host.setdefault(service.host, []).append(service)
        self.hosts = frozenset(self.by_host) | {"s3"}

    def __len__(self) -> int:
        return sum(len(s._rows) for s in self.services.values())

    def match(
        self,
        request: Request,
        host: str,
        partition: str,
        default_region: str,
        account: str | None,
        endpoint: str = "",
    ) -> Match | None:
        """The route ``request`` (sent to ``host``) takes, or None when it cannot be placed.
        ``endpoint`` is the connection's own host, where ``<bucket>.<endpoint>`` is an S3
        virtual-hosted request."""
        host = _bare_host(host)
        named = _bare_host(_header(request, "host"))  # the host the server acts on
        body: Any = request.body
        if body is not None and not isinstance(body, bytes):
            body = (
                body.encode()
                if isinstance(body, str)
                else bytes(body)
                if isinstance(body, (bytearray, memoryview))
                else None
            )  # a stream: its fields cannot be read here
        if body is not request.body or any(
            not isinstance(v, str) for v in request.headers.values()
        ):
            # botocore hands urllib3 some header values as bytes
            headers = {k: _text(v) for k, v in request.headers.items()}
            request = Request(request.method, request.path, request.query_string, headers, body)
        parsed = _parse_host(host, self.hosts) if host else None
        scope = _scope(request)
        region: str | None
        if scope is not None:
            region, signing = scope
            candidates = self.by_signing.get(signing, [])
            if parsed is not None and parsed.prefix is not None:
                candidates = [s for s in candidates if s.host == parsed.prefix]
        elif parsed is not None and parsed.prefix is not None:
            region, candidates = None, self.by_host.get(parsed.prefix, [])
        else:
            return None
        if region is None or not _REGION.fullmatch(region):
            region = (parsed.region if parsed else None) or default_region
        found: list[tuple[Route, str, dict[str, str], bool, _Service, Request]] = []
        for service in candidates:
            sent = request
            if service.name == "s3":
                bucket = _s3_bucket(host, parsed, endpoint)
                if named and named != host:
                    other = _s3_bucket(named, _parse_host(named, self.hosts), endpoint)
                    if other != bucket:  # the server may act on either: name neither
                        bucket = _UNNAMED if (other or bucket) is not None else None
                if bucket is None:
                    continue
                if bucket:
                    path = "/" + bucket + (request.path if request.path.startswith("/") else "/")
                    sent = Request(
                        request.method, path, request.query_string, request.headers, request.body
                    )
            placed = service.place(sent)
            if placed is not None:
                found.append((*placed, service, sent))
        if not found:
            return None
        route, op = _strongest([(f[0], f[1]) for f in found])
        _, _, params, hostile, service, sent = next(f for f in found if f[1] == op)
        hostile = hostile or params.get("Bucket") == _UNNAMED
        route = _refine(service.name, route, sent)
        context = _Context(partition, region, account, service.name)
        resource = None if hostile else fill(route.resource, params, sent, context)
        info = {**params, "aws.service": service.name, "aws.operation": op, "aws.region": region}
        return Match(route, info, resource)


def _s3_bucket(host: str, parsed: _Host | None, endpoint: str) -> str | None:
    """The bucket a virtual-hosted S3 request names in its host; "" for path style;
    ``_UNNAMED`` for an access point or a bucket name S3 would not serve; None when the
    host does not say."""
    if parsed is not None:
        if parsed.prefix == "s3":
            bucket = parsed.rest
        elif parsed.prefix is None and any(
            _S3_ACCESS_POINT.fullmatch(label) for label in host.split(".")
        ):
            return _UNNAMED
        else:
            return None
    elif not host:
        return None
    elif host == endpoint or _is_local(host):
        return ""
    elif endpoint and host.endswith("." + endpoint):
        bucket = host[: -len(endpoint) - 1]
    else:
        return None
    if bucket and (not _S3_BUCKET.fullmatch(bucket) or ".." in bucket):
        return _UNNAMED
    return bucket


def _refine(service: str, route: Route, request: Request) -> Route:
    """Actions decided by more than the operation: S3 object versions, PartiQL verbs."""
    if service == "s3" and route.action in _S3_VERSIONED and "versionId" in request.query:
        return dataclasses.replace(route, action=_S3_VERSIONED[route.action])
    if route.action == "dynamodb:PartiQLDelete":
        statements: list[Any]
        form = request.form
        if "Statement" in form:
            statements = [form["Statement"]]
        else:
            items = form.get("Statements") or form.get("TransactStatements")
            if not isinstance(items, list) or not all(isinstance(s, dict) for s in items):
                return route
            statements = [s.get("Statement") for s in items]
        verbs = set()
        for statement in statements:
            word = (
                statement.lstrip().split(None, 1)[0].upper() if isinstance(statement, str) else ""
            )
            if word not in _PARTIQL:
                return route  # unknown or absent: the strongest stays
            verbs.add(_PARTIQL[word])
        if not verbs:
            return route
        verb = next(v for v in ("Delete", "Update", "Insert", "Select") if v in verbs)
        effect = {"Delete": "destructive", "Select": "read"}.get(verb, "write")
        return dataclasses.replace(route, action=f"dynamodb:PartiQL{verb}", effect=effect)
    return route


def fill(template: str, params: Mapping[str, str], request: Request, ctx: _Context) -> str | None:
    """The first alternative of ``template`` (``A|B``) whose every field the request gives."""
    for alternative in template.split("|"):
        value = _fill_one(alternative, params, request, ctx)
        if value is not None:
            return value
    return None


def _fill_one(
    template: str, params: Mapping[str, str], request: Request, ctx: _Context
) -> str | None:
    if "{" not in template:
        return template
    values: dict[str, str] = {}
    for field in _FIELD.findall(template):
        name, arn_only = (field[4:], True) if field.startswith("arn:") else (field, False)
        value = _value(name, params, request, ctx)
        if value is None or (arn_only and not value.startswith("arn:")):
            return None
        values[field] = value
    return _FIELD.sub(lambda m: values[m.group(1)], template)


def _value(name: str, params: Mapping[str, str], request: Request, ctx: _Context) -> str | None:
    raw: Any
    if name == "aws.partition":
        return ctx.partition
    if name == "aws.region":
        return ctx.region
    if name == "aws.account":
        return ctx.account or None
    if name.startswith("query."):
        got = request.query.get(name[6:])
        raw = got[0] if got and len(got) == 1 else None
    elif name.startswith("body."):
        raw = request.form.get(name[5:])
    elif name in _COMPUTED:
        raw = _COMPUTED[name](request, ctx)
    elif "." in name and name.split(".", 1)[0] == "ec2":
        raw = _ec2(name[4:], request, ctx)
    else:
        raw = params.get(name)
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        return None
    text = str(raw)
    if not text or any(ord(c) < 32 or ord(c) == 127 for c in text):
        return None
    return text


def _sqs_queue(request: Request, ctx: _Context) -> str | None:
    """The queue ARN from ``QueueUrl`` (or a Query API request posted to the queue's path)."""
    named: set[tuple[str, str, str]] = set()
    url = request.form.get("QueueUrl")
    if url is not None:
        if not isinstance(url, str):
            return None
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        m = re.fullmatch(r"(?:sqs\.)?([a-z]{2}(?:-[a-z]+)+-\d{1,2})\.(?:queue\.)?.*", host)
        region = m.group(1) if m else ctx.region
        segments = parts.path.strip("/").split("/")
        if len(segments) != 2:
            return None
        named.add((region, segments[0], segments[1]))
    segments = request.path.strip("/").split("/")
    if len(segments) == 2 and _ACCOUNT.fullmatch(segments[0]):
        named.add((ctx.region, segments[0], segments[1]))
    if len(named) != 1:
        return None
    region, account, queue = named.pop()
    if region != ctx.region and url is None:
        return None
    if not _ACCOUNT.fullmatch(account) or not _QUEUE.fullmatch(queue):
        return None
    return f"arn:{ctx.partition}:sqs:{region}:{account}:{queue}"


def _kms_key(request: Request, ctx: _Context) -> str | None:
    key = request.form.get("KeyId")
    if not isinstance(key, str) or not key or (not ctx.account and not key.startswith("arn:")):
        return None
    if key.startswith("arn:"):
        return key
    if key.startswith("alias/"):
        return f"arn:{ctx.partition}:kms:{ctx.region}:{ctx.account}:{key}"
    if _KEY_ID.fullmatch(key):
        return f"arn:{ctx.partition}:kms:{ctx.region}:{ctx.account}:key/{key}"
    return None


def _ssm_parameter(request: Request, ctx: _Context) -> str | None:
    name = request.form.get("Name")
    if not isinstance(name, str) or not name:
        return None
    if name.startswith("arn:"):
        return name
    if not ctx.account:
        return None
    path = name if name.startswith("/") else "/" + name
    return f"arn:{ctx.partition}:ssm:{ctx.region}:{ctx.account}:parameter{path}"


def _dynamodb_table(request: Request, ctx: _Context) -> str | None:
    """The one table a batch or transaction names (None when it names several)."""
    form = request.form
    tables: set[str] = set()
    items = form.get("RequestItems")
    if isinstance(items, dict):
        tables |= set(items)
    transact = form.get("TransactItems")
    if isinstance(transact, list):
        for item in transact:
            if not isinstance(item, dict) or len(item) != 1:
                return None
            inner = next(iter(item.values()))
            name = inner.get("TableName") if isinstance(inner, dict) else None
            if not isinstance(name, str):
                return None
            tables.add(name)
    if len(tables) != 1:
        return None
    table = tables.pop()
    if table.startswith("arn:"):
        return table
    if not ctx.account or not table:
        return None
    return f"arn:{ctx.partition}:dynamodb:{ctx.region}:{ctx.account}:table/{table}"


def _ec2(kind: str, request: Request, ctx: _Context) -> str | None:
    """The one EC2 resource of ``kind`` a Query request names (``InstanceId.1=i-...``)."""
    member = _EC2_MEMBER.get(kind)
    if member is None:
        return None
    pattern = re.compile(rf"{member}(\.\d+)?|{member}s(\.\d+)?")
    pairs = parse_qs(request.query_string, keep_blank_values=True)
    form = request.form
    for key, value in form.items():
        pairs.setdefault(key, []).extend(value if isinstance(value, list) else [value])
    values = {v for k, vs in pairs.items() if pattern.fullmatch(k) for v in vs}
    if len(values) != 1:
        return None
    value = values.pop()
    if not isinstance(value, str) or not re.fullmatch(r"[\w.-]{1,255}", value):
        return None
    if kind in _EC2_NO_ACCOUNT:
        return f"arn:{ctx.partition}:ec2:{ctx.region}::{kind}/{value}"
    if not ctx.account:
        return None
    return f"arn:{ctx.partition}:ec2:{ctx.region}:{ctx.account}:{kind}/{value}"


_COMPUTED = {
    "sqs.queue": _sqs_queue,
    "kms.key": _kms_key,
    "ssm.parameter": _ssm_parameter,
    "dynamodb.table": _dynamodb_table,
}

_loaded: AwsRoutes | None = None
_load_lock = threading.Lock()


def narrowed(found: Match, request: Request) -> Match:
    """A placed request narrowed by what the table cannot say: an S3 copy's source, a Lambda
    request's ``?Qualifier=``."""
    assert found.resource is not None
    copied = header_text(request.headers.get("x-amz-copy-source"))
    if copied:
        return _copy(found, copied)
    qualifiers = request.query.get("Qualifier")
    if qualifiers and _FUNCTION.fullmatch(found.resource):
        return _qualified(found, qualifiers)
    return found


def _qualified(found: Match, qualifiers: list[str]) -> Match:
    """A Lambda request with ``?Qualifier=`` acts on that version or alias, whose ARN
    (``function:name:qualifier``) IAM policies name apart from the function's; a qualifier
    given twice, or besides another in the function's name, is unresolved."""
    assert found.resource is not None
    name = found.resource.split(":function:", 1)[1]
    qualifier = qualifiers[0]
    if len(set(qualifiers)) != 1 or not re.fullmatch(r"[A-Za-z0-9$_-]{1,128}", qualifier):
        return Match(found.route, found.params, None)
    if ":" in name:
        same = name.split(":", 1)[1] == qualifier
        return found if same else Match(found.route, found.params, None)
    return Match(found.route, found.params, f"{found.resource}:{qualifier}")


def _copy(found: Match, source: str) -> Match:
    """An S3 copy (CopyObject, UploadPartCopy: ``x-amz-copy-source``) reads its source as it
    writes its destination, and one request is checked on one resource: only a copy of an
    object onto itself (a metadata change) is placed; any other is left unresolved (refused),
    so that a copy never carries out data the user may not read."""
    path, _, query = unquote(source).partition("?")
    if f"arn:aws:s3:::{path.lstrip('/')}" == found.resource and not query.strip():
        return found
    return Match(found.route, found.params, None)


def header_text(value: object) -> str:
    """A header's text (bytes as Latin-1; anything else empty)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    return value if isinstance(value, str) else ""


def routes() -> AwsRoutes:
    """The shipped AWS table, read on first use."""
    global _loaded
    if _loaded is None:
        with _load_lock:
            if _loaded is None:
                item = resources.files("toolpass.integrations.aws") / "routes.json.gz"
                _loaded = AwsRoutes(json.loads(gzip.decompress(item.read_bytes())))
    return _loaded
