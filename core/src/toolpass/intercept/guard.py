"""The checks on one outgoing request, in the toolkit's order.

Scope (the tool's ``resources=``), the declared effect, limits, untrusted input in the URL
and body, credentials and exfiltration for routes that send data out, then the user's
permission (unless the request is made as the agent). ``check`` and ``acheck`` share
everything but the engine call.

A request is read as a server could read it, and where servers could read it two ways both
are checked, or it is refused: a method override (the ``X-HTTP-Method-Override`` headers, a
``_method`` field) is checked with the method it overrides and the stronger effect wins;
hosts and paths are compared normalised (``router.origin``, ``routes.normal_path``); a body
is read by its Content-Type (``routes.Request.form``).

A body the client hook could not read arrives as ``None`` (``b""`` is an empty body). A
request that changes or sends something (not GET, HEAD or OPTIONS) is then refused when a
check needs the body: a ``{body.*}`` resource, the credential scan of a route that sends
data out, or untrusted text the session recorded; otherwise it goes.

Limit: a request belongs to the tool call whose context it carries (threads and executor
tasks the call starts carry it). One sent while a call runs from a thread that existed
before the call and was never handed its context (a pool's long-running worker, an SDK's
background sender) belongs to no call and cannot be checked as one: it is audited
(``no_call_context``) and goes, or, with ``Toolkit(strict_threads=True)``, is refused.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote

from toolpass.integrations.routes import (
    AMBIGUOUS,
    UNREAD,
    UNREADABLE,
    Match,
    Request,
    Route,
    normal_path,
)
from toolpass.intercept import context
from toolpass.intercept.framing import Misframed, body_read, declared
from toolpass.intercept.router import Place, Router, origin
from toolpass.outcome.audit import AuditEvent, emit
from toolpass.outcome.errors import ActionRefused, unanswerable
from toolpass.rules.secrets import find_secret
from toolpass.wire.http import ENGINE_REQUEST

if TYPE_CHECKING:
    from toolpass.integrations.base import Integration
    from toolpass.intercept.call import CallKit
    from toolpass.intercept.context import CallScope
    from toolpass.wire.decision import Decision

log = logging.getLogger("toolpass")
_RANK = {"read": 0, "write": 1, "destructive": 2}
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
_METHOD_OVERRIDES = frozenset({"x-http-method-override", "x-http-method", "x-method-override"})
# "_method" in a body, each character maybe percent- or JSON-escaped.
_NAMES_METHOD = re.compile(
    b"".join(
        b"(?:%s|%%%02x|\\\\u00%02x)" % (re.escape(c.encode()), ord(c), ord(c)) for c in "_method"
    ),
    re.IGNORECASE,
)
# A header name is a token (RFC 9110); a value holds no line break (no obs-fold) and no NUL.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_NOT_TOKENS = re.compile(r"[^!#$%&'*+.^_`|~0-9A-Za-z\x01-]|^\x01|\x01\x01|\x01$|^$")
_BREAK = re.compile(r"[\r\n\x00]")
# A control character, percent-encoded, in a path: a server may end the path at a NUL.
_ENCODED_CONTROL = re.compile(r"%(?:[01][0-9a-fA-F]|7[fF])")
_NO_CALL = (
    "The request came from a thread that belongs to no tool call, so it could not be "
    "checked and was not sent. Tell the user."
)


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
    kit: CallKit,
    router: Router,
    method: str,
    url: str,
    headers: Mapping[str, str] | None,
    body: bytes | None,
    raw: bool = False,
    peer: str | None = None,
) -> Question | None:
    """Run the local checks. Returns None when the request may go as it is, a ``Question``
    when the engine must be asked; raises ``ActionRefused`` otherwise. ``body`` is None when
    the client could not hand it over; ``raw`` when the client writes it as it is (it must
    then end where the headers say), not framed by the client itself. ``peer``: the origin
    the bytes are written to, when the target is in absolute form (a proxy, or not)."""
    if ENGINE_REQUEST.get():
        return None
    scope = context.current()
    if scope is None:
        if context.calls_running():
            _unattributed(kit, method, url)
        return None
    method = method.upper()
    again = scope.refused_requests.get((method, url))
    if again is not None:  # a client retrying what was refused: refused again, not recounted
        raise again
    try:
        scheme, host, port, path = origin(url)
    except ValueError as exc:
        raise _unreadable(scope, method, url, str(exc)) from None
    query = url.partition("?")[2].partition("#")[0]
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
    normal = None if _ENCODED_CONTROL.search(path) else normal_path(path)
    full = path if normal is None else normal
    place = router.place(scheme, host, port, full)
    where = place.path if place else path
    request = Request(method, where, query, headers, UNREAD if body is None else body, host)
    elsewhere = _odd_headers(headers) or _another_server(
        router, scheme, host, port, full, place, request.headers.get("host"), peer
    )
    if elsewhere:
        raise misframed(scope, record, elsewhere)
    framing_named = "content-length" in request.headers or "transfer-encoding" in request.headers
    if raw or framing_named:
        _framed(scope, record, request, body, raw)
    methods = _methods(request)
    if len(methods) > 1:
        record["override"] = ", ".join(methods[1:])
    changes = not _SAFE.issuperset(methods)
    if place is None:
        _unknown_host(kit, router, scope, record, changes)
        return None
    record["connection"] = place.connection
    if normal is None:
        raise _refuse(
            scope,
            record,
            "unresolved_resource",
            f"The tool's {method} request to {place.connection} has a path that servers "
            "may read in more than one way, so it cannot be checked and was not sent. "
            "Tell the user.",
            "ambiguous path",
        )
    match = _match(scope, record, place, request, methods)
    if match is None:
        record["verdict"] = "unmapped"
        # What it returns is the connection's data, from no resource we can name.
        scope.session.note_private(f"{place.connection}|*")
        return None
    route = match.route
    record.update(action=route.action, resource=match.resource, effect=route.effect)
    if request.body is UNREAD and changes:
        needs = _needs_body(scope, match)
        if needs:
            raise _refuse(
                scope,
                record,
                "check_error",
                f"The tool's {route.action} request has a body toolpass could not read, so "
                "it could not be checked and was not sent. Tell the user.",
                f"unreadable body, needed {needs}",
            )
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
    _local_checks(scope, record, match, request, url)
    if route.agent or record["as"] == "agent":
        _performed(scope, record, match)
        return None
    return Question(scope, record, match, scope.session.user, place.connection)


def _framed(
    scope: CallScope, record: dict[str, Any], request: Request, body: bytes | None, raw: bool
) -> None:
    """Refuse a request a server could read as more than one; a chunked body written as it
    is is checked as the data it carries."""
    try:
        framing = declared(request.headers)
        if raw and body is None and framing.chunked:
            raise Misframed("a chunked body written as it is, which toolpass could not read")
        if raw and body is not None:
            data = body_read(framing, body)
            if request.body is not UNREAD:
                request.body = data
    except Misframed as exc:
        raise misframed(scope, record, str(exc)) from None


def _odd_headers(headers: Mapping[Any, Any] | None) -> str:
    """Why a server could read these headers another way (a name that is no token, a value
    that breaks its line), or ''. Text headers are looked at all at once."""
    if not headers:
        return ""
    try:
        names, values = "\x01".join(headers), "\x01".join(headers.values())
    except TypeError:  # bytes or numbers among them
        pass
    else:
        if not (_NOT_TOKENS.search(names) or _BREAK.search(values)):
            return ""
    for name, value in headers.items():
        name, value = _text(name), _text(value)
        if not _TOKEN.fullmatch(name):
            return f"a header name that is no token: {name[:60]!r}"
        if _BREAK.search(value):
            return f"a line break or NUL in the value of {name[:60]}"
    return ""


def _text(value: Any) -> str:
    return value.decode("latin-1") if isinstance(value, (bytes, bytearray)) else str(value)


def _another_server(
    router: Router,
    scheme: str,
    host: str,
    port: int,
    path: str,
    place: Place | None,
    named: str | None,
    peer: str | None,
) -> str:
    """Why a server could act on the request as another connection's than the one its URL
    names (or than none), or '': a Host header naming another connection's host (a server
    behind a reverse proxy is reached by it), or an absolute-form target written to a
    connection's own server (which is no proxy; a proxy ignores the Host header)."""
    owner = place.connection if place else None
    if named is not None and peer is None:
        try:
            _, other, other_port, _ = origin(f"{scheme}://{named.strip()}/")
        except ValueError:
            return f"a Host header that cannot be read one way only: {named[:60]!r}"
        if (other, other_port) != (host, port):
            server = _owner(router, scheme, other, other_port, path)
            if server is not None and server != owner:
                return f"a Host header naming {server}'s host, not {host}:{port}"
    if peer is not None:
        peer_scheme, peer_host, peer_port, _ = origin(peer)
        if (peer_host, peer_port) != (host, port):
            server = _owner(router, peer_scheme, peer_host, peer_port, path)
            if server is not None and server != owner:
                return f"an absolute-form target for {host}:{port} written to {server}'s server"
    return ""


def _owner(router: Router, scheme: str, host: str, port: int, path: str) -> str | None:
    place = router.place(scheme, host, port, path)
    return place.connection if place else None


def fragment(method: str, target: str, where: str) -> None:
    """Refuse a target that carries a fragment into the request line, as a client that
    writes it as given would: servers differ on whether ``#`` ends the path."""
    if "#" in target:
        misframed_send(method, where, "a fragment in a request target written as it is")


def proxied(method: str, url: str, peer: str) -> None:
    """Refuse a request checked above (for ``url``) that a proxy layer writes in absolute
    form to ``peer``, when ``peer`` is a connection's own server (raises ``ActionRefused``)."""
    scope = context.current()
    if scope is None or ENGINE_REQUEST.get():
        return
    try:
        scheme, host, port, path = origin(url)
    except ValueError:
        return  # refused above already
    router = scope.kit.router
    full = normal_path(path) or path
    place = router.place(scheme, host, port, full)
    why = _another_server(router, scheme, host, port, full, place, None, peer)
    if why:
        misframed_send(method, url, why)


def misframed(scope: CallScope, record: dict[str, Any], why: str) -> ActionRefused:
    """The refusal of a request whose bytes a server could read as another request too."""
    return _refuse(
        scope,
        record,
        "check_error",
        f"The tool's {record['method']} request is framed so that a server could read more "
        "than the request toolpass checked, so it was not sent. Tell the user.",
        why,
    )


def misframed_send(method: str, url: str, why: str) -> None:
    """Refuse bytes a hooked connection was about to write outside the request it checked
    (raises ``ActionRefused``), when a tool call is running here; else do nothing."""
    scope = context.current()
    if scope is None or ENGINE_REQUEST.get():
        return
    record: dict[str, Any] = {"method": method.upper(), "_request": (method.upper(), url)}
    try:
        _, record["host"], _, record["path"] = origin(url)
    except ValueError:
        record["host"], record["path"] = "", ""
    scope.event.actions.append(record)
    raise misframed(scope, record, why)


def _unreadable(scope: CallScope, method: str, url: str, why: str) -> ActionRefused:
    """A request whose address cannot be read one way only: refused, never an unknown host."""
    record: dict[str, Any] = {"method": method, "host": "", "path": "", "_request": (method, url)}
    scope.event.actions.append(record)
    return _refuse(
        scope,
        record,
        "check_error",
        f"The tool's {method} request has an address toolpass cannot read unambiguously, "
        "so it was not sent. Tell the user.",
        f"{why}: {url[:200]!r}",
    )


def _methods(request: Request) -> tuple[str, ...]:
    """The request's method, then every other method a server could act on instead, named by
    a method-override header or a ``_method`` field (in the query or the body). A name that
    is no method is kept as it is: no route has it, so the request is refused."""
    headers, qs, body = request.headers, request.query_string, request.body
    named = []
    if not _METHOD_OVERRIDES.isdisjoint(headers):
        named = [headers[name] for name in _METHOD_OVERRIDES if name in headers]
    if "method" in qs or "%" in qs:
        named.extend(request.query.get("_method", ()))
    if body and _NAMES_METHOD.search(body):
        form = request.form
        value = form.get("_method")
        if form is UNREADABLE or value is AMBIGUOUS:
            named.append("?")  # a body that may name a method, in a way we cannot read
        elif value is not None:
            named.extend(value if isinstance(value, list) else [value])
    if not named:
        return (request.method,)
    others = (str(name).strip().upper() for name in named)
    return (request.method, *dict.fromkeys(m for m in others if m and m != request.method))


def _match(
    scope: CallScope,
    record: dict[str, Any],
    place: Place,
    request: Request,
    methods: tuple[str, ...],
) -> Match | None:
    """The route the request takes: for each method it may be read as, the same action on
    the same resource (the strongest effect of them), or refused. None for a read that
    takes no route."""
    if len(methods) == 1:  # the usual case
        match = _route(scope, record, place.integration, request, request.method)
        if match is None and request.method not in _SAFE:
            raise _unmapped(scope, record, request.method, place.connection)
        return match
    found: list[Match] = []
    for method in methods:
        match = _route(scope, record, place.integration, request, method)
        if match is not None:
            found.append(match)
        elif method not in _SAFE:
            raise _unmapped(scope, record, method, place.connection)
    if not found:
        return None
    match = max(found, key=lambda m: _RANK.get(m.route.effect, 2))
    if any((m.route.action, m.resource) != (match.route.action, match.resource) for m in found):
        raise _refuse(
            scope,
            record,
            "unmapped_action",
            f"The tool's {request.method} request asks the server to act as another method, "
            "so toolpass cannot tell which action it performs; it was not sent. Tell the user.",
            "; ".join(f"{m.route.method}: {m.route.action} on {m.resource}" for m in found),
        )
    return match


def _unmapped(
    scope: CallScope, record: dict[str, Any], method: str, connection: str
) -> ActionRefused:
    return _refuse(
        scope,
        record,
        "unmapped_action",
        f"The tool tried a {method} request to {connection} that toolpass cannot place on "
        "a known action, so it was not sent. Tell the user.",
    )


def _route(
    scope: CallScope,
    record: dict[str, Any],
    integration: Integration,
    request: Request,
    method: str,
) -> Match | None:
    if method != request.method:
        request = Request(
            method, request.path, request.query_string, request.headers, request.body, request.host
        )
    try:
        return integration.match_request(request)
    except Exception as exc:
        log.exception("toolpass could not place a request to %s", request.host)
        raise _refuse(
            scope,
            record,
            "check_error",
            "A safety check could not be completed, so the request was not sent. "
            "Try again later, or tell the user.",
            f"{type(exc).__name__}: {exc}",
        ) from None


def _unknown_host(
    kit: CallKit, router: Router, scope: CallScope, record: dict[str, Any], changes: bool
) -> None:
    """A request to a host no connection owns: refused, or let go (audited; a write is
    warned about when there are connections it could have been meant for). What it brings
    back is anyone's: the call's output is untrusted (recorded, fenced, vouching for nothing)."""
    record["verdict"] = "unknown_host"
    mode = kit.settings.unknown_host
    host = record["host"]
    if mode == "refuse" or (mode == "refuse_writes" and changes):
        raise _refuse(
            scope,
            record,
            "unknown_host",
            f"The tool tried to reach {host}, which toolpass does not know, so the "
            "request was not sent. Tell the user.",
        )
    scope.read_untrusted = scope.read_elsewhere = True
    scope.session.tainted = True
    if changes and len(router):
        log.warning(
            "toolpass: tool %r sent a %s request to %s, which no connection checks",
            scope.spec.name,
            record["method"],
            host,
        )


def _needs_body(scope: CallScope, match: Match) -> str:
    """What needs a request's body, if anything: why it must be readable."""
    route = match.route
    if "{body." in route.resource or (match.resource is None and not route.agent):
        return "to name the resource"
    if route.sends_out:
        return "to look for credentials"
    if scope.session.untrusted and _checks_untrusted(scope, route):
        return "to look for untrusted text"
    return ""


def _checks_untrusted(scope: CallScope, route: Route) -> bool:
    """Whether a request on ``route`` is held to the untrusted-input check: one that changes
    or sends something, from a tool whose mode is not "ignore"."""
    if route.effect == "read" and not route.sends_out:
        return False
    return (scope.spec.untrusted_inputs or scope.kit.settings.untrusted_inputs) != "ignore"


def _local_checks(
    scope: CallScope, record: dict[str, Any], match: Match, request: Request, url: str
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
        cap = scope.kit.settings.limits.get(route.effect)
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
    session.sync()  # one round trip to a shared store for all that the checks below read
    seen = session.seen
    untrusted = seen.untrusted
    if untrusted and _checks_untrusted(scope, route):
        for text in (unquote(url), request.text):
            phrase = untrusted.find(text)
            if phrase is not None:
                raise _refuse(
                    scope,
                    record,
                    "untrusted_input",
                    "The request repeats text from untrusted content read earlier in "
                    "this session, which may be an injected instruction, so it was "
                    "not sent. Ask the user what they want.",
                    f'repeats "{phrase}"; a person cannot be asked to approve a request '
                    "from inside a tool's body",
                )
    if route.sends_out and not scope.approved:
        kind = find_secret(unquote(url)) or find_secret(request.text)
        if kind is not None:
            raise _refuse(
                scope,
                record,
                "exfiltration",
                f"The tool tried {what}, which would send {kind} out, so the request "
                "was not sent. Tell the user.",
                f"{kind} in the request",
            )
    if (
        route.sends_out
        and seen.private
        and seen.tainted
        and not scope.approved
        and not seen.private_from <= {_source(record)}  # back where it came from
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
    settled = unanswerable(str(getattr(decision, "cause", "") or ""), what, because)
    if settled is not None:
        raise _refuse(scope, record, settled[0], settled[1], reason)
    raise _refuse(
        scope,
        record,
        "authorization_error",
        f"Whether the user may {what} could not be checked right now, so the request was "
        "not sent. Try again later, or tell the user.",  # the reason (a URL, a socket
        # error) is the audit's, never the model's
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


def _unattributed(kit: CallKit, method: str, url: str) -> None:
    """A request while tool calls run, from a context that belongs to none of them: audited,
    and refused with ``strict_threads``."""
    refused = kit.settings.strict_threads
    event = AuditEvent("(no call context)", None)
    try:
        _, host, _, path = origin(url)
    except ValueError:
        host, path = "", url[:200]
    event.outcome, event.detail = ("refused" if refused else "unchecked"), "no_call_context"
    if refused:
        event.code, event.message = "check_error", _NO_CALL
    verdict = "check_error" if refused else "no_call_context"
    event.actions.append({"method": method.upper(), "host": host, "path": path, "verdict": verdict})
    event.finish()
    emit(event, kit.sinks)
    if refused:
        raise ActionRefused("check_error", _NO_CALL, detail="no_call_context")
