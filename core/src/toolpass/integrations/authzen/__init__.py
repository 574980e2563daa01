"""An external AuthZEN decision point: an organisation's Cerbos, Topaz, OPA, OpenFGA, ...

For resources no other integration covers, a connection may ask a Policy Decision Point
that speaks the OpenID AuthZEN Authorization API 1.0: ``POST <url>/access/v1/evaluation``
with ``{"subject": {"type", "id"}, "action": {"name"}, "resource": {"type", "id"}}``, whose
answer ``{"decision": true}`` is allow and ``{"decision": false}`` deny (with the decision
point's ``context.reason`` when it gives one). Anything else (an error status, a timeout, a
body without a boolean ``decision``) is unknown, as for every connection.

Users: the application's user maps, through the shared identity modes, to the subject id
(``identity: {mode: template, template: "{email}"}`` sends the email itself); the subject
type is ``subject_type`` (``user``). Resources are ``KIND:ID`` (``document:plan.md`` is type
``document``, id ``plan.md``). Actions are free-form: any name is sent as ``action.name``
(the five common values of the AuthZEN drafts are declared: ``can_access``, ``can_read``,
``can_create``, ``can_update``, ``can_delete``); ``actions`` lists the only names this
connection asks, so that a misspelled one is unknown rather than a policy's deny.

The request hook has no route table here unless ``routes`` gives one: rows of ``[method,
path template, action, resource template, effect, flags]`` as the shipped tables have.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

from toolpass.integrations.base import (
    Action,
    ConfigKey,
    Decision,
    Effect,
    Integration,
    MalformedResponse,
    ProbeResult,
    load_actions,
)
from toolpass.integrations.routes import Match, Request, Route, RouteTable
from toolpass.wire.errors import ConfigError
from toolpass.wire.http import Response

__all__ = ["AuthZEN"]

ACTIONS: tuple[Action, ...] = load_actions(__name__)
EVALUATION_PATH = "/access/v1/evaluation"
_ACTION = re.compile(r"[A-Za-z][A-Za-z0-9_.:/-]{0,199}")
_READ = re.compile(r"(?:can_)?(?:read|get|list|view|describe|search|query)\b", re.IGNORECASE)
_DESTRUCTIVE = re.compile(r"(?:can_)?(?:delete|destroy|remove|purge|drop)\b", re.IGNORECASE)
_PROBE = {
    "subject": {"type": "user", "id": "toolpass-probe"},
    "action": {"name": "can_read"},
    "resource": {"type": "toolpass", "id": "probe"},
}


def _effect(name: str) -> Effect:
    """A free-form action's effect, from its verb (write when the verb says nothing)."""
    verb = re.split(r"[.:/]", name)[-1]
    if _DESTRUCTIVE.match(verb):
        return "destructive"
    return "read" if _READ.match(verb) else "write"


class AuthZEN(Integration):
    """Any decision point speaking the AuthZEN Access Evaluation API."""

    name = "authzen"
    description = (
        "An external decision point speaking the OpenID AuthZEN Authorization API 1.0 "
        "(Cerbos, Topaz, OPA, OpenFGA, Keycloak, ...): POST /access/v1/evaluation with the "
        "user's subject id, the action's name and the resource KIND:ID as type and id; "
        "decision true is allow, false is deny, anything else unknown. Actions are free-form "
        "(or the connection's actions list). Credential: a bearer token the decision point "
        "accepts for evaluations only (token); no token for one that asks none."
    )
    keys = (
        ConfigKey(
            "token",
            "The bearer token sent to the decision point (Authorization: Bearer); none when "
            "it asks for none.",
            secret=True,
        ),
        ConfigKey("subject_type", "The subject type sent with every evaluation.", default="user"),
        ConfigKey(
            "actions",
            "The only action names this connection asks (another is unknown). Empty: any.",
            default=(),
            type="list",
        ),
        ConfigKey(
            "routes",
            "The request hook's route table: rows [method, path template, action, resource "
            "template, effect, flags] (see toolpass routes github). Empty: none.",
            default=(),
            type="list",
        ),
    )
    actions = ACTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._routes = _table(self.options.get("routes", ()))

    @classmethod
    def action(cls, name: str) -> Action | None:
        """A declared action, or any well-formed name (the decision point's policy names
        its own actions); its effect is read from the name's verb."""
        declared = super().action(name)
        if declared is not None or not isinstance(name, str) or not _ACTION.fullmatch(name):
            return declared
        return Action(
            name,
            f"The action {name}, as the decision point's policy names it.",
            _effect(name),
            f"the decision point's decision true for action {name}",
        )

    @classmethod
    def validate(cls, options: Mapping[str, Any]) -> None:
        subject_type = options.get("subject_type")
        if not isinstance(subject_type, str) or not subject_type.strip():
            raise ConfigError("must be a subject type such as user", "subject_type")
        for name in options.get("actions", ()):
            if not isinstance(name, str) or cls.action(name) is None:
                raise ConfigError(f"{name!r} is not an action name", "actions")
        table = _table(options.get("routes", ()))
        declared = set(options.get("actions", ()))
        for route in table.routes:
            if cls.action(route.action) is None or (declared and route.action not in declared):
                raise ConfigError(f"a route names the undeclared action {route.action!r}", "routes")

    def auth_headers(self) -> Mapping[str, str]:
        if self.options.get("token") is None:
            return {}
        return {"Authorization": f"Bearer {self.secret('token')}"}

    def match_request(self, request: Request) -> Match | None:
        return self._routes.match(request)

    def check(self, user: str, action: str, resource: str) -> Decision:
        declared = self.options.get("actions", ())
        if declared and action not in declared:
            return Decision.unknown(
                f"{self.config.id} asks only {', '.join(declared)}, not {action!r}",
                cause="action",
            )
        kind, sep, ident = resource.partition(":")
        if not (sep and kind and ident):
            return Decision.unknown(
                f"{action} is asked on KIND:ID (e.g. document:plan.md), not {resource!r}",
                cause="resource",
            )
        subject = self.user_id(user)
        asked = {
            "subject": {"type": self.options.get("subject_type", "user"), "id": subject},
            "action": {"name": action},
            "resource": {"type": kind, "id": ident},
        }
        allowed, reason = self._evaluate(asked, f"evaluate {action} on {resource}")
        said = f": {reason}" if reason else ""
        text = f"the decision point {'permits' if allowed else 'denies'} {subject} {action}"
        if allowed:
            return Decision.allow(f"{text} on {resource}{said}")
        return Decision.deny(f"{text} on {resource}{said}")

    def _evaluate(self, asked: Mapping[str, Any], what: str) -> tuple[bool, str]:
        """The decision point's decision and its reason, if it gave one as a string."""
        headers = {**self.auth_headers(), "X-Request-ID": str(uuid.uuid4())}
        data = self.fetch_json("POST", EVALUATION_PATH, what=what, json=asked, headers=headers)
        decision = data.get("decision")
        if not isinstance(decision, bool):
            raise MalformedResponse(f"{self.name}'s answer to {what} has no boolean decision")
        context = data.get("context")
        reason = context.get("reason") if isinstance(context, dict) else None
        text = " ".join(reason.split())[:200] if isinstance(reason, str) else ""
        return decision, self.redact(text)

    def parse(self, answer: Response, what: str, kind: type | None = dict) -> Any:
        """The answer's JSON, which must not repeat a key: ``{"decision": false,
        "decision": true}`` reads as allow here and as deny to a reader keeping the first."""
        data = super().parse(answer, what, kind)
        try:
            json.loads(answer.body, object_pairs_hook=_unique)
        except _Repeated:
            raise MalformedResponse(f"{self.name}'s answer to {what} repeats a key") from None
        return data

    def probe(self) -> ProbeResult:
        """One evaluation of a made-up question: any boolean decision means the decision point
        answers and takes the engine's credential."""
        self._evaluate(_PROBE, "answer a probe evaluation")
        return ProbeResult(True, f"{self.config.url}{EVALUATION_PATH} answers evaluations")


class _Repeated(ValueError):
    """A JSON object that names a key twice."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _Repeated
    return found


def _table(rows: Any) -> RouteTable:
    """The ``routes`` key's table (``ConfigError`` for a row that is not one)."""
    shape = "a route is [method, path template, action, resource template, effect, flags?]"
    routes = []
    for row in rows:
        if not (
            isinstance(row, (list, tuple))
            and len(row) in (5, 6)
            and all(isinstance(cell, str) for cell in row)
        ):
            raise ConfigError(f"{shape}, not {row!r}", "routes")
        try:
            routes.append(Route.row(tuple(row)))
        except ValueError as e:
            raise ConfigError(str(e), "routes") from None
    return RouteTable(routes)


INTEGRATION = AuthZEN
