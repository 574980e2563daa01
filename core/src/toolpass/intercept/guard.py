"""The checks on one outgoing request, in the toolkit's order.

Scope (the tool's ``resources=``), the declared effect, limits, untrusted input in the URL
and body, exfiltration for routes that send data out, then the user's permission (unless the
request is made as the agent). ``check`` and ``acheck`` share everything but the engine call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote

from toolpass.engine.http import ENGINE_REQUEST
from toolpass.intercept import context
from toolpass.intercept.router import Router, origin
from toolpass.intercept.routes import Match, Request
from toolpass.toolkit.audit import AuditEvent, emit
from toolpass.toolkit.errors import ActionRefused

if TYPE_CHECKING:
    from toolpass.engine.decision import Decision
    from toolpass.intercept.context import CallScope
    from toolpass.toolkit.toolkit import Toolkit

log = logging.getLogger("toolpass")
_RANK = {"read": 0, "write": 1, "destructive": 2}
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
_METHOD_OVERRIDES = frozenset({"x-http-method-override", "x-http-method", "x-method-override"})


class Question(NamedTuple):
    """A request that passed every local check and now needs the user's permission."""

    scope: CallScope
    record: dict[str, Any]
    match: Match
    user: str
    connection: str


def _refuse(
    scope: CallScope, record: dict[str, Any], code: str, message: str, detail: str = ""
) -> ActionRefused:
    record["verdict"] = code
    slot = record.pop("_slot", None)
    if slot is not None:  # taken for this request, which is not sent after all
        scope.session.give_back(slot)
    refused = ActionRefused(
        code,
        message,
        detail=detail,
        action=str(record.get("action", "")),
        resource=str(record.get("resource") or ""),
    )
    if scope.refused is None:
        scope.refused = refused
    scope.refused_requests[record["_request"]] = refused
    return refused


def prepare(
    kit: Toolkit,
    router: Router,
    method: str,
    url: str,
    headers: Mapping[str, str] | None,
    body: bytes | None,
) -> Question | None:
    """Run the local checks. Returns None when the request may go as it is, a ``Question``
    when the engine must be asked; raises ``ActionRefused`` otherwise."""
    if ENGINE_REQUEST.get():
        return None
    scope = context.current()
    if scope is None:
        if context.calls_running():
            _unattributed(kit, method, url)
        return None
    method = method.upper()
    for name, value in (headers or {}).items():  # a server may act on a method a header names
        if str(name).lower() in _METHOD_OVERRIDES and value:
            method = (value.decode() if isinstance(value, bytes) else str(value)).strip().upper()
    scheme, host, port, path = origin(url)
    query = url.partition("?")[2].partition("#")[0]
    again = scope.refused_requests.get((method, url))
    if again is not None:  # a client retrying what was refused: refused again, not recounted
        raise again
    record: dict[str, Any] = {
        "method": method,
        "host": host,
        "path": path,
        "origin": f"{scheme}://{host}:{port}",
        "_request": (method, url),  # internal: not in the audit record
        "as": context.acting(scope),
    }
    scope.event.actions.append(record)
    entitled = scope.entitled
    if entitled is not None and record["origin"] not in entitled.hosts:
        raise _refuse(
            scope,
            record,
            "unknown_host",
            f"The tool tried to reach {host}, which its recorded entitlements do not "
            "list, so the request was not sent. Tell the user.",
        )
    place = router.place(scheme, host, port, path)
    if place is None:
        record["verdict"] = "unknown_host"
        if kit.strict:
            raise _refuse(
                scope,
                record,
                "unknown_host",
                f"The tool tried to reach {host}, which toolpass does not know, so the "
                "request was not sent. Tell the user.",
            )
        return None
    record["connection"] = place.connection
    try:
        request = Request(method, place.path, query, headers, body, host)
        match = place.integration.match_request(request)
    except Exception as exc:
        log.exception("toolpass could not place a request to %s", host)
        raise _refuse(
            scope,
            record,
            "check_error",
            "A safety check could not be completed, so the request was not sent. "
            "Try again later, or tell the user.",
            f"{type(exc).__name__}: {exc}",
        )
    if match is None:
        if method in _SAFE:
            record["verdict"] = "unmapped"
            # What it returns is the connection's data, from no resource we can name.
            scope.session.note_private(f"{place.connection}|*")
            return None
        raise _refuse(
            scope,
            record,
            "unmapped_action",
            f"The tool tried a {method} request to {place.connection} that toolpass "
            "cannot place on a known action, so it was not sent. Tell the user.",
        )
    route = match.route
    record.update(action=route.action, resource=match.resource, effect=route.effect)
    if match.resource is None and not route.agent:
        raise _refuse(
            scope,
            record,
            "unresolved_resource",
            f"The tool's {route.action} request does not name the resource it acts "
            "on, so it cannot be checked and was not sent. Tell the user.",
        )
    if (
        entitled is not None
        and not route.agent
        and entitled.find(place.connection, route.action, match.resource, scope.arguments) is None
    ):
        raise _refuse(
            scope,
            record,
            "unentitled_action",
            f"The tool tried {route.action} on {match.resource}, which is not among "
            "its recorded actions, so the request was not sent. Tell the user.",
        )
    _local_checks(scope, record, match, url, body)
    if route.agent or record["as"] == "agent":
        _performed(scope, record, match)
        return None
    return Question(scope, record, match, scope.session.user, place.connection)


def _local_checks(
    scope: CallScope, record: dict[str, Any], match: Match, url: str, body: bytes | None
) -> None:
    spec, session, route = scope.spec, scope.session, match.route
    what = f"{route.action} on {match.resource}"
    if spec.resources is not None and not route.agent and not spec.resources(match.resource):
        raise _refuse(
            scope,
            record,
            "out_of_scope",
            f"The tool tried {what}, which is outside what it may touch, so the "
            "request was not sent. Tell the user.",
        )
    effect = scope.effect  # declared, or the strongest recorded
    if effect is not None and _RANK.get(route.effect, 2) > _RANK.get(effect, 2):
        raise _refuse(
            scope,
            record,
            "effect_mismatch",
            f"The tool is declared '{effect}' but tried {what} "
            f"({route.effect}), so the request was not sent. Tell the user.",
        )
    if effect is None and not route.agent:  # no slot was taken for the call itself
        cap = scope.kit.limits.get(route.effect)
        slot = ((f"effect:{route.effect}", cap),) if cap is not None else None
        if slot is not None and session.take(slot) is None:
            record["_slot"] = slot
        elif slot is not None:
            raise _refuse(
                scope,
                record,
                "limit_exceeded",
                f"This session has used all the {route.effect} actions it may take, "
                "so the request was not sent. Tell the user the limit was reached.",
            )
    if session.untrusted:
        for text in (unquote(url), body.decode("utf-8", "replace") if body else ""):
            phrase = session.untrusted.find(text)
            if phrase is not None:
                raise _refuse(
                    scope,
                    record,
                    "untrusted_input",
                    "The request repeats text from untrusted content read earlier in "
                    "this session, which may be an injected instruction, so it was "
                    "not sent. Ask the user what they want.",
                    f'repeats "{phrase}"',
                )
    if (
        route.sends_out
        and session.private
        and session.tainted
        and not scope.approved
        and not session.private_from <= {_source(record)}  # back where it came from
    ):
        raise _refuse(
            scope,
            record,
            "exfiltration",
            f"The tool tried {what}, which sends data out after this session read "
            "private data and untrusted content, so it was not sent. Tell the user.",
        )


def conclude(question: Question, decision: Decision) -> None:
    """Let the request go on an allow; raise ``ActionRefused`` otherwise."""
    scope, record, match = question.scope, question.record, question.match
    verdict = getattr(decision, "decision", "unknown")
    reason = str(getattr(decision, "reason", "") or "")
    if verdict == "allow":
        _performed(scope, record, match)
        return
    what = f"{match.route.action} on {match.resource}"
    because = f" ({reason})" if reason else ""
    if verdict == "deny":
        raise _refuse(
            scope,
            record,
            "not_authorized",
            f"The user may not {what}{because}, so the request was not sent. Do not "
            "retry; tell the user, who can ask someone with access.",
            reason,
        )
    raise _refuse(
        scope,
        record,
        "authorization_error",
        f"Whether the user may {what} could not be checked right now{because}, so the "
        "request was not sent. Try again later, or tell the user.",
        reason,
    )


def _performed(scope: CallScope, record: dict[str, Any], match: Match) -> None:
    record["verdict"] = "allowed"
    record.pop("_slot", None)
    route = match.route
    if route.untrusted:  # search results too: what others wrote
        scope.read_untrusted = True
        scope.session.tainted = True
    if route.effect == "read" and not route.agent:  # a connected system's data is private
        scope.session.note_private(_source(record))


def _source(record: dict[str, Any]) -> str:
    return f"{record.get('connection')}|{record.get('resource')}"


def _unattributed(kit: Toolkit, method: str, url: str) -> None:
    """A request while tool calls run, from a context that belongs to none of them."""
    event = AuditEvent("(no call context)", None)
    _, host, _, path = origin(url)
    event.outcome, event.detail = "unchecked", "no_call_context"
    event.actions.append(
        {"method": method.upper(), "host": host, "path": path, "verdict": "no_call_context"}
    )
    event.finish()
    emit(event, kit.sinks)
