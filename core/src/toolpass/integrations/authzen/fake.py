"""A fake AuthZEN Policy Decision Point on 127.0.0.1 (OpenID Authorization API 1.0).

It speaks the specification's shapes:

- ``POST /access/v1/evaluation`` ``{"subject": {"type", "id", "properties"?}, "action":
  {"name", "properties"?}, "resource": {"type", "id", "properties"?}, "context"?}`` answers
  200 ``{"decision": bool, "context": {"reason": "..."}}`` (unknown fields ignored);
- ``POST /access/v1/evaluations``: top-level defaults, ``evaluations`` entries overriding
  them, ``options.evaluations_semantic``; ``{"evaluations": [...]}``;
- ``GET /.well-known/authzen-configuration``: the metadata document;
- a missing required field, a field of the wrong type or a body that is not a JSON object is
  400, a missing or wrong bearer token 401, each with an error message string as JSON
  ``{"error": "..."}``; ``X-Request-ID`` is echoed.

The policy is a set of grants ``(subject id, action, resource type, resource id)``; a grant
with resource id ``*`` covers every resource of the type.
"""

from __future__ import annotations

from typing import Any

from fakes.server import FakeServer, Reply, Request

ENGINE_TOKEN = "pdp-engine-token-0000000000000000"
DANA = "dana@example.com"


class FakePDP(FakeServer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.token: str | None = ENGINE_TOKEN
        self.grants: set[tuple[str, str, str, str]] = set()
        self.add("POST", r"/access/v1/evaluation", self._evaluation)
        self.add("POST", r"/access/v1/evaluations", self._evaluations)
        self.add("GET", r"/\.well-known/authzen-configuration", self._metadata)

    def grant(self, subject: str, action: str, kind: str, ident: str = "*") -> None:
        self.grants.add((subject, action, kind, ident))

    def revoke(self, subject: str, action: str, kind: str, ident: str = "*") -> None:
        self.grants.discard((subject, action, kind, ident))

    # --- the API -------------------------------------------------------------------------
    def _evaluation(self, request: Request) -> Reply:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            body = _object(request)
            return self._reply(request, self.decide(body))
        except _Bad as e:
            return self._reply(request, {"error": str(e)}, 400)

    def _evaluations(self, request: Request) -> Reply:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            body = _object(request)
            entries = body.get("evaluations") or []
            if not entries:
                return self._reply(request, self.decide(body))
            defaults = {
                k: body[k] for k in ("subject", "action", "resource", "context") if k in body
            }
            semantic = (body.get("options") or {}).get("evaluations_semantic", "execute_all")
            answers = []
            for entry in entries:
                try:
                    answers.append(self.decide({**defaults, **entry}))
                except _Bad as e:
                    answers.append(
                        {
                            "decision": False,
                            "context": {"error": {"status": 400, "message": str(e)}},
                        }
                    )
                last = answers[-1]["decision"]
                if (semantic, last) in (
                    ("deny_on_first_deny", False),
                    ("permit_on_first_permit", True),
                ):
                    break
            return self._reply(request, {"evaluations": answers})
        except _Bad as e:
            return self._reply(request, {"error": str(e)}, 400)

    def _metadata(self, request: Request) -> dict[str, Any]:
        return {
            "policy_decision_point": self.url,
            "access_evaluation_endpoint": f"{self.url}/access/v1/evaluation",
            "access_evaluations_endpoint": f"{self.url}/access/v1/evaluations",
        }

    def decide(self, body: dict[str, Any]) -> dict[str, Any]:
        subject = _entity(body, "subject", ("type", "id"))
        action = _entity(body, "action", ("name",))
        resource = _entity(body, "resource", ("type", "id"))
        key = (subject["id"], action["name"], resource["type"])
        if subject["type"] == "user" and (
            (*key, resource["id"]) in self.grants or (*key, "*") in self.grants
        ):
            return {"decision": True}
        return {"decision": False, "context": {"reason": "no policy permits this"}}

    def _refused(self, request: Request) -> Reply | None:
        if self.token is None:
            return None
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return self._reply(request, {"error": "invalid or missing bearer token"}, 401)
        return None

    def _reply(self, request: Request, body: Any, status: int = 200) -> Reply:
        rid = request.headers.get("x-request-id")
        return Reply(status, body, {"X-Request-ID": rid} if rid else {})


class _Bad(ValueError):
    pass


def _object(request: Request) -> dict[str, Any]:
    if request.headers.get("content-type", "").split(";")[0] != "application/json":
        raise _Bad("Content-Type must be application/json")
    try:
        body = request.json()
    except ValueError:
        raise _Bad("the body is not JSON") from None
    if not isinstance(body, dict):
        raise _Bad("the body must be a JSON object")
    return body


def _entity(body: dict[str, Any], name: str, keys: tuple[str, ...]) -> dict[str, Any]:
    value = body.get(name)
    if not isinstance(value, dict):
        raise _Bad(f"{name} is required and must be an object")
    for key in keys:
        if not isinstance(value.get(key), str):
            raise _Bad(f"{name}.{key} is required and must be a string")
    return value


def populate(pdp: FakePDP) -> FakePDP:
    """Dana may read every document and update plan.md."""
    pdp.grant(DANA, "can_read", "document")
    pdp.grant(DANA, "can_update", "document", "plan.md")
    return pdp
