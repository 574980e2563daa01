"""A fake Google Cloud on 127.0.0.1, from the documented request and response shapes.

- ``POST /token``: Google's OAuth token endpoint for a service account's signed JWT
  (``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=JWT``): the RS256
  signature checked against the account's public key, ``aud`` (always
  ``https://oauth2.googleapis.com/token``, as Google documents it), ``sub``
  (domain-wide delegation) and ``scope`` kept with the token; ``{"access_token", "expires_in",
  "token_type"}``, or 400 ``{"error": "invalid_grant", "error_description"}``;
- ``POST /v3/iam:troubleshoot``: Policy Troubleshooter v3: ``overallAccessState`` from the
  grants (a principal or ``group:`` holding a permission on a resource or an ancestor), deny
  rules, and principals whose groups the caller cannot see (``UNKNOWN_INFO``);
- ``GET`` / ``DELETE`` ``/storage/v1/b/{bucket}/o/{object}``: Cloud Storage objects (for the
  request hook);
- ``POST /bigquery/v2/projects/{p}/queries`` (``jobs.query``: a ``QueryResponse`` with one
  row) and ``POST /bigquery/v2/projects/{p}/jobs`` (``jobs.insert``: the ``Job``, done); the
  bodies are kept in ``jobs``.

Errors are Google's ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any
from urllib.parse import parse_qs, unquote

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from fakes.server import FakeServer, Reply, Request

EMAIL = "toolpass-engine@proj-1.iam.gserviceaccount.com"
KEY_ID = "0123456789abcdef0123456789abcdef01234567"
_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PEM = _KEY.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
).decode()


def key_file(token_uri: str) -> str:
    """A service account's JSON key, as the console downloads it."""
    return json.dumps(
        {
            "type": "service_account",
            "project_id": "proj-1",
            "private_key_id": KEY_ID,
            "private_key": PEM,
            "client_email": EMAIL,
            "client_id": "1234567890",
            "token_uri": token_uri,
        }
    )


def _error(code: int, message: str, status: str) -> Reply:
    return Reply(code, {"error": {"code": code, "message": message, "status": status}})


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class FakeGoogle(FakeServer):
    """Google's token endpoint, with whatever API a subclass adds."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.tokens: dict[str, dict[str, Any]] = {}  # token -> {sub, scope}
        self.add("POST", r"/token", self._token)

    def _token(self, request: Request) -> Reply:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return Reply(400, {"error": "unsupported_grant_type"})
        try:
            head, payload, signature = form["assertion"].split(".")
            _KEY.public_key().verify(
                _b64(signature), f"{head}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
            claims = json.loads(_b64(payload))
        except Exception:
            return Reply(400, {"error": "invalid_grant", "error_description": "Invalid JWT"})
        if claims.get("iss") != EMAIL or claims.get("aud") != "https://oauth2.googleapis.com/token":
            return Reply(400, {"error": "invalid_grant", "error_description": "Invalid aud/iss"})
        if not claims["iat"] - 300 < time.time() < claims["exp"]:
            return Reply(400, {"error": "invalid_grant", "error_description": "expired"})
        token = f"ya29.fake-{len(self.tokens) + 1}"
        self.tokens[token] = {"sub": claims.get("sub"), "scope": claims.get("scope", "")}
        return Reply(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    def caller(self, request: Request) -> dict[str, Any] | None:
        """What the bearer token was issued for, or None."""
        return self.tokens.get(request.headers.get("authorization", "").removeprefix("Bearer "))


class FakeGcp(FakeGoogle):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.grants: set[tuple[str, str, str]] = set()  # (principal, permission, resource)
        self.denies: set[tuple[str, str, str]] = set()
        self.groups: dict[str, set[str]] = {}
        self.hidden: set[str] = set()  # principals whose memberships the engine cannot see
        self.parents: dict[str, str] = {}
        self.objects: dict[tuple[str, str], bytes] = {}
        self.jobs: list[dict[str, Any]] = []
        self.add("POST", r"/v3/iam:troubleshoot", self._troubleshoot)
        self.add("POST", r"/bigquery/v2/projects/(?P<p>[^/]+)/queries", self._query)
        self.add("POST", r"/bigquery/v2/projects/(?P<p>[^/]+)/jobs", self._insert)
        self.add("GET", r"/storage/v1/b/(?P<b>[^/]+)/o/(?P<o>[^/]+)", self._object)
        self.add("DELETE", r"/storage/v1/b/(?P<b>[^/]+)/o/(?P<o>[^/]+)", self._delete)

    def _chain(self, resource: str) -> list[str]:
        found = [resource]
        while found[-1] in self.parents:
            found.append(self.parents[found[-1]])
        return found

    def _holds(
        self, who: set[str], permission: str, rules: set[tuple[str, str, str]], res: str
    ) -> bool:
        return any((p, permission, r) in rules for p in who for r in self._chain(res))

    def _troubleshoot(self, request: Request) -> Reply:
        if self.caller(request) is None:
            return _error(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED")
        tuple_ = request.json().get("accessTuple") or {}
        principal = tuple_.get("principal", "")
        permission, resource = tuple_.get("permission", ""), tuple_.get("fullResourceName", "")
        if not (principal and permission and resource) or ":" in principal:
            return _error(400, "Invalid access tuple.", "INVALID_ARGUMENT")
        who = {f"user:{principal}"} | {
            f"group:{g}" for g, members in self.groups.items() if principal in members
        }
        denied = self._holds(who, permission, self.denies, resource)
        granted = self._holds(who, permission, self.grants, resource)
        if denied:
            state = "CANNOT_ACCESS"
        elif granted:
            state = "CAN_ACCESS"
        elif principal in self.hidden:
            state = "UNKNOWN_INFO"
        else:
            state = "CANNOT_ACCESS"
        allow = "GRANTED" if granted else "NOT_GRANTED"
        return Reply(
            200,
            {
                "overallAccessState": state,
                "accessTuple": {**tuple_, "permissionFqdn": f"{permission}"},
                "allowPolicyExplanation": {"allowAccessState": f"ALLOW_ACCESS_STATE_{allow}"},
                "denyPolicyExplanation": {
                    "denyAccessState": "DENY_ACCESS_STATE_" + ("DENIED" if denied else "NOT_DENIED")
                },
            },
        )

    def _query(self, request: Request) -> Reply:
        self.jobs.append(request.json())
        return Reply(
            200,
            {
                "kind": "bigquery#queryResponse",
                "jobReference": {"projectId": request.params["p"], "jobId": "job-1"},
                "jobComplete": True,
                "schema": {"fields": [{"name": "n", "type": "INTEGER"}]},
                "rows": [{"f": [{"v": "42"}]}],
                "totalRows": "1",
            },
        )

    def _insert(self, request: Request) -> Reply:
        body = request.json()
        self.jobs.append(body)
        ref = {"projectId": request.params["p"], "jobId": "job-1"}
        return Reply(
            200,
            {
                "kind": "bigquery#job",
                "id": f"{request.params['p']}:job-1",
                "jobReference": ref,
                "configuration": body.get("configuration", {}),
                "status": {"state": "DONE"},
            },
        )

    def _object(self, request: Request) -> Reply:
        key = (request.params["b"], unquote(request.params["o"]))
        if key not in self.objects:
            return _error(404, "No such object.", "NOT_FOUND")
        if request.arg("alt") == "media":
            return Reply(200, self.objects[key], {"Content-Type": "application/octet-stream"})
        return Reply(200, {"kind": "storage#object", "bucket": key[0], "name": key[1]})

    def _delete(self, request: Request) -> Reply:
        key = (request.params["b"], unquote(request.params["o"]))
        if self.objects.pop(key, None) is None:
            return _error(404, "No such object.", "NOT_FOUND")
        return Reply(204, None)


def populate(fake: FakeGcp) -> FakeGcp:
    project = "//cloudresourcemanager.googleapis.com/projects/proj-1"
    bucket = "//storage.googleapis.com/projects/_/buckets/data-bkt"
    fake.parents[bucket] = project
    fake.parents[f"{bucket}/objects/report.csv"] = bucket
    fake.parents[f"{bucket}/objects/logs/a.txt"] = bucket
    fake.grants |= {
        ("user:alice@example.com", "storage.objects.delete", project),
        ("user:alice@example.com", "storage.objects.get", project),
        ("group:readers@example.com", "storage.objects.get", bucket),
        ("user:carol@example.com", "storage.objects.delete", bucket),
        (
            "user:toolpass-engine@proj-1.iam.gserviceaccount.com",
            "resourcemanager.projects.get",
            project,
        ),
    }
    sales = "//bigquery.googleapis.com/projects/proj-1/datasets/sales"
    fake.parents[sales] = project
    fake.parents[f"{sales}/tables/orders"] = sales
    fake.grants |= {
        ("user:alice@example.com", "bigquery.jobs.create", project),
        ("user:alice@example.com", "bigquery.tables.getData", sales),
    }
    fake.denies.add(("user:carol@example.com", "storage.objects.delete", bucket))
    fake.groups["readers@example.com"] = {"bob@example.com"}
    fake.hidden.add("dave@example.com")
    fake.objects[("data-bkt", "report.csv")] = b"a,b\n1,2\n"
    fake.objects[("data-bkt", "logs/a.txt")] = b"log"
    return fake
