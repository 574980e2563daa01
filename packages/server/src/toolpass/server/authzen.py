"""The OpenID AuthZEN Authorization API 1.0 (Access Evaluation) on toolpass's engine.

``POST /access/v1/evaluation`` takes ``{"subject", "action", "resource", "context"?}`` and
answers ``{"decision": bool, "context": {...}}``; ``POST /access/v1/evaluations`` takes
top-level defaults for those four keys, an ``evaluations`` list whose entries override them,
and ``options.evaluations_semantic`` (``execute_all``, the default, ``deny_on_first_deny``,
``permit_on_first_permit``), and answers ``{"evaluations": [...]}`` in request order (only up
to the first deny or permit when a short-circuit semantic says so). Without entries it
answers as the single evaluation does. ``GET /.well-known/authzen-configuration`` is the
metadata document, built on ``server.public_url``.

The mapping onto toolpass's question (user, connection, action, resource):

- ``subject.id`` is the user; ``subject.type`` must be ``user`` (any other type answers
  false, unknown);
- ``action.name`` is the action;
- ``resource.type`` is ``<connection>:<kind>`` and ``resource.id`` the rest, so
  ``{"type": "github:repo", "id": "acme/widgets"}`` asks connection ``github`` about
  ``repo:acme/widgets``; a type without ``:`` is the connection alone and the id the whole
  resource;
- ``properties`` and ``context`` are accepted and not read.

``decision`` is true for allow only. ``context.toolpass_decision`` (allow, deny, unknown)
and ``context.reason`` tell a deny from an unknown; ``context.configured`` is false when
toolpass has no such connection or action. This module is pure: parsing and the order of
evaluation; the HTTP side (keys, body, status codes) is the app's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolpass.engine import Decision

#: toolpass's question: name -> the longest value accepted (characters).
FIELDS: dict[str, int] = {"user": 512, "connection": 100, "action": 200, "resource": 4096}
SEMANTICS = ("execute_all", "deny_on_first_deny", "permit_on_first_permit")
#: The most entries one ``evaluations`` request may hold.
MAX_EVALUATIONS = 200
EVALUATION_PATH = "/access/v1/evaluation"
EVALUATIONS_PATH = "/access/v1/evaluations"
METADATA_PATH = "/.well-known/authzen-configuration"
_ENTITIES = ("subject", "action", "resource", "context")


class Invalid(ValueError):
    """A request (or one entry of a batch) that is not AuthZEN: 400, or an error entry."""


class Unanswerable(ValueError):
    """A well-formed question toolpass does not evaluate (a subject that is not a user)."""


@dataclass(frozen=True)
class Question:
    """One evaluation, as toolpass asks it."""

    user: str
    connection: str
    action: str
    resource: str


def question(request: Mapping[str, Any]) -> Question:
    """The toolpass question in one evaluation request; raises :class:`Invalid` or
    :class:`Unanswerable`. Messages name fields, never echo values."""
    subject = _entity(request, "subject", ("type", "id"))
    action = _entity(request, "action", ("name",))
    resource = _entity(request, "resource", ("type", "id"))
    if "context" in request and not isinstance(request["context"], dict):
        raise Invalid("'context' must be an object")
    connection, sep, kind = resource["type"].partition(":")
    asked = Question(
        user=_field("subject.id", subject["id"], FIELDS["user"]),
        connection=_field("resource.type", connection, FIELDS["connection"]),
        action=_field("action.name", action["name"], FIELDS["action"]),
        resource=_field(
            "resource.id", f"{kind}:{resource['id']}" if sep else resource["id"], FIELDS["resource"]
        ),
    )
    if sep and not kind.strip():
        raise Invalid("'resource.type' must be <connection> or <connection>:<kind>")
    if subject["type"] != "user":
        raise Unanswerable("toolpass evaluates subjects of type 'user' only")
    return asked


def _entity(request: Mapping[str, Any], name: str, keys: tuple[str, ...]) -> dict[str, Any]:
    value = request.get(name)
    if value is None:
        raise Invalid(f"missing {name!r}")
    if not isinstance(value, dict):
        raise Invalid(f"{name!r} must be an object")
    for key in keys:
        if key not in value:
            raise Invalid(f"missing '{name}.{key}'")
        if not isinstance(value[key], str):
            raise Invalid(f"'{name}.{key}' must be a string")
    if "properties" in value and not isinstance(value["properties"], dict):
        raise Invalid(f"'{name}.properties' must be an object")
    return value


def _field(name: str, value: str, longest: int) -> str:
    if not value.strip():
        raise Invalid(f"{name!r} must not be empty")
    if len(value) > longest:
        raise Invalid(f"{name!r} is longer than {longest} characters")
    if not value.isprintable():
        raise Invalid(f"{name!r} must not contain control or invisible characters")
    return value


@dataclass(frozen=True)
class Batch:
    """An ``evaluations`` request: each entry merged with the defaults, and the semantic."""

    entries: tuple[dict[str, Any], ...]
    semantic: str


def batch(request: Any) -> Batch | None:
    """The entries of an evaluations request, or None when it has none (it is then a single
    evaluation). Raises :class:`Invalid` for what is wrong with the whole request; an entry
    that lacks a key is found when it is asked (:func:`question`)."""
    if not isinstance(request, dict):
        raise Invalid("the body must be a JSON object")
    for name in _ENTITIES:
        if name in request and not isinstance(request[name], dict):
            raise Invalid(f"{name!r} must be an object")
    options = request.get("options", {})
    if not isinstance(options, dict):
        raise Invalid("'options' must be an object")
    semantic = options.get("evaluations_semantic", "execute_all")
    if semantic not in SEMANTICS:
        raise Invalid(f"'options.evaluations_semantic' must be one of {', '.join(SEMANTICS)}")
    entries = request.get("evaluations", [])
    if not isinstance(entries, list):
        raise Invalid("'evaluations' must be an array")
    if len(entries) > MAX_EVALUATIONS:
        raise Invalid(f"'evaluations' holds more than {MAX_EVALUATIONS} entries")
    if not entries:
        return None
    defaults = {k: request[k] for k in _ENTITIES if k in request}
    merged = []
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise Invalid(f"'evaluations[{n}]' must be an object")
        merged.append({**defaults, **{k: entry[k] for k in _ENTITIES if k in entry}})
    return Batch(tuple(merged), semantic)


def answer(d: Decision, configured: bool | None = None) -> dict[str, Any]:
    """The AuthZEN decision for a toolpass decision: true for allow only."""
    context: dict[str, Any] = {"toolpass_decision": d.decision, "reason": d.reason}
    if d.cause:
        context["cause"] = d.cause
    if configured is not None:
        context["configured"] = configured
    return {"decision": d.decision == "allow", "context": context}


def invalid_entry(problem: Invalid) -> dict[str, Any]:
    """The answer for a batch entry that is not a valid evaluation (decisions default to
    closed; the error is the entry's)."""
    message = str(problem)
    return {
        "decision": False,
        "context": {
            "toolpass_decision": "unknown",
            "reason": message,
            "error": {"status": 400, "message": message},
        },
    }


def unanswerable(problem: Unanswerable) -> dict[str, Any]:
    return {"decision": False, "context": {"toolpass_decision": "unknown", "reason": str(problem)}}


Evaluate = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]


async def run(entries: tuple[dict[str, Any], ...], semantic: str, evaluate: Evaluate) -> list[Any]:
    """The answers to ``entries`` in order: all of them at once (``execute_all``), or one
    after another up to and including the first false (``deny_on_first_deny``) or true
    (``permit_on_first_permit``)."""
    if semantic == "execute_all":
        return list(await asyncio.gather(*(evaluate(e) for e in entries)))
    stop_on = semantic == "permit_on_first_permit"
    answers = []
    for entry in entries:
        answers.append(await evaluate(entry))
        if answers[-1]["decision"] is stop_on:
            break
    return answers


def metadata(base_url: str) -> dict[str, str]:
    """The PDP metadata document for a server reached at ``base_url`` (the configured public
    URL: one taken from the request's Host header names whatever origin the client sent)."""
    base = base_url.rstrip("/")
    return {
        "policy_decision_point": base,
        "access_evaluation_endpoint": base + EVALUATION_PATH,
        "access_evaluations_endpoint": base + EVALUATIONS_PATH,
    }
