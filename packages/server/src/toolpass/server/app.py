"""The ASGI app: ``POST /check``, the AuthZEN Access Evaluation API and ``GET /healthz``
(Starlette).

``POST /check`` takes ``Authorization: Bearer <api key>`` and the JSON object
``{"user", "connection", "action", "resource", "fresh"?}`` and answers 200 with
``{"decision", "reason", "cached", "user", "connection", "action", "resource",
"configured"}`` for every
decision: allow, deny and unknown alike (an unknown decision is an answer, not a server
error). Everything else is a JSON error ``{"error": "..."}``:

=====  ======================================================================
400    the body is not UTF-8 JSON (or repeats a key)
401    no API key, or not one of the configured keys
404    no such path
405    a method the path does not take (``Allow`` says which)
413    the body is larger than ``max_body_bytes``
415    the body is not ``application/json``
422    JSON of the wrong shape: not an object, a missing, unknown, mistyped, empty or
       overlong field, or control characters
500    an unexpected failure (logged on the server; never a traceback in the answer)
=====  ======================================================================

The OpenID AuthZEN Authorization API 1.0 is served beside it with the same keys
(:mod:`toolpass.server.authzen` has the mapping): ``POST /access/v1/evaluation``, ``POST
/access/v1/evaluations`` and ``GET /.well-known/authzen-configuration``, whose endpoint
URLs start with ``server.public_url`` (else ``approvals.public_url``; only with neither, the
URL the request was sent to, Host header included). As that specification says, every
malformed request there is 400 (a body that is not ``application/json`` too), unknown
fields are ignored, and ``X-Request-ID`` is echoed.

The access log (logger ``toolpass.server.access``) has one JSON line per request: time,
client, method, path, status, duration, the API key's *name*, and the question and answer
once known. Never the key, the Authorization header or a query string.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from toolpass.engine.checker import Checker
from toolpass.server import authzen
from toolpass.server.approvals import ApprovalsPage
from toolpass.server.config import ServerConfig, parse_server_config
from toolpass.wire.errors import ConfigError

log = logging.getLogger("toolpass.server")
access_log = logging.getLogger("toolpass.server.access")

#: The request fields: name -> the longest value accepted (characters).
FIELDS = authzen.FIELDS
_ALL_FIELDS = (*FIELDS, "fresh")
_LOG_KEY = "toolpass.log"  # the scope entry where a request's access-log details gather
_EXTRA_HEADERS = [(b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff")]


class Problem(Exception):
    """An error answer: ``status`` and a message for the client."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


def error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """The JSON error answer."""
    return JSONResponse({"error": message}, status, headers=dict(headers or {}))


@dataclass(frozen=True)
class Query:
    """A validated ``POST /check`` body."""

    user: str
    connection: str
    action: str
    resource: str
    fresh: bool = False


def parse_query(body: bytes) -> Query:
    """Validate a ``POST /check`` body strictly; raises :class:`Problem` (400 or 422).

    Messages name fields, never echo values.
    """
    data = load_json(body)
    if not isinstance(data, dict):
        raise Problem(422, f"the body must be a JSON object with {', '.join(FIELDS)} and fresh")
    for name in data:
        if name not in _ALL_FIELDS:
            shown = name if len(name) <= 40 else name[:40] + "..."
            raise Problem(422, f"unknown field {shown!r} (expected {', '.join(_ALL_FIELDS)})")
    values: dict[str, str] = {}
    for name, longest in FIELDS.items():
        if name not in data:
            raise Problem(422, f"missing field {name!r}")
        value = data[name]
        if not isinstance(value, str):
            raise Problem(422, f"{name!r} must be a string")
        if not value.strip():
            raise Problem(422, f"{name!r} must not be empty")
        if len(value) > longest:
            raise Problem(422, f"{name!r} is longer than {longest} characters")
        if not value.isprintable():
            raise Problem(422, f"{name!r} must not contain control or invisible characters")
        values[name] = value
    fresh = data.get("fresh", False)
    if not isinstance(fresh, bool):
        raise Problem(422, "'fresh' must be true or false")
    return Query(fresh=fresh, **values)


def load_json(body: bytes) -> Any:
    """The body as strict JSON (UTF-8, no repeated key, no NaN); raises :class:`Problem` 400."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Problem(400, "the body is not UTF-8")
    try:
        return json.loads(text, object_pairs_hook=_unique, parse_constant=_no_constant)
    except _Duplicate as e:
        raise Problem(400, f"the body repeats the key {e.key!r}")
    except RecursionError:
        raise Problem(400, "the body is nested too deeply")
    except json.JSONDecodeError as e:
        raise Problem(
            400, f"the body is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}"
        )
    except ValueError:  # NaN, Infinity
        raise Problem(400, "the body is not valid JSON")


class _Duplicate(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key if len(key) <= 40 else key[:40] + "..."


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Duplicate(key)
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Keys:
    """The accepted API keys, compared in constant time."""

    def __init__(self, keys: tuple[tuple[str, bytes], ...]) -> None:
        self._keys = keys

    def name_of(self, authorization: str | None) -> str | None:
        """The name of the key in an ``Authorization: Bearer`` header, or None.

        The presented key is hashed and compared with every configured key's hash by
        ``hmac.compare_digest``, all of them each time, so neither the time taken nor the
        order of the keys tells anything about a key.
        """
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        presented = hashlib.sha256(token.encode("latin-1")).digest()
        found = None
        for name, digest in self._keys:
            if hmac.compare_digest(presented, digest) and found is None:
                found = name
        return found


class _Service:
    def __init__(self, tp: Checker, config: ServerConfig) -> None:
        self.tp = tp
        self.config = config
        self.keys = _Keys(config.resolve_keys())
        pages = config.approvals
        #: Where clients reach the server; None: the request's own URL (its Host header).
        self._public_url = config.public_url or (pages.public_url if pages else None)

    async def check(self, request: Request) -> Response:
        details: dict[str, Any] = request.scope.setdefault(_LOG_KEY, {})
        try:
            self._authenticate(request, details)
            if not _is_json(request):
                raise Problem(415, "the body must be application/json")
            query = parse_query(await self._body(request))
            details.update(
                user=query.user,
                connection=query.connection,
                action=query.action,
                resource=query.resource,
                fresh=query.fresh,
            )
            d = await self.tp.acheck(
                query.user, query.connection, query.action, query.resource, fresh=query.fresh
            )
        except Problem as p:
            details["error"] = p.message
            return error(p.status, p.message, p.headers)
        details.update(decision=d.decision, cached=d.cached)
        answer = {
            "decision": d.decision,
            "reason": d.reason,
            "cause": d.cause,
            "cached": d.cached,
            "user": query.user,
            "connection": query.connection,
            "action": query.action,
            "resource": query.resource,
        }
        configured = getattr(self.tp, "configured", None)
        if callable(configured):
            # False: the engine has no such connection or action (an operator must fix it).
            answer["configured"] = bool(configured(query.connection, query.action))
        return JSONResponse(answer)

    def _authenticate(self, request: Request, details: dict[str, Any]) -> None:
        name = self.keys.name_of(request.headers.get("authorization"))
        if name is None:
            raise Problem(
                401,
                "a valid API key is required (Authorization: Bearer <key>)",
                {"WWW-Authenticate": 'Bearer realm="toolpass"'},
            )
        details["key"] = name

    # --- AuthZEN (toolpass.server.authzen has the mapping) ---------------------------------
    async def evaluation(self, request: Request) -> Response:
        """``POST /access/v1/evaluation``."""
        return await self._authzen(request, self._single)

    async def evaluations(self, request: Request) -> Response:
        """``POST /access/v1/evaluations``: entries merged with the defaults; none: single."""

        async def many(data: Any, details: dict[str, Any]) -> dict[str, Any]:
            found = authzen.batch(data)
            if found is None:
                return await self._single(data, details)
            details.update(evaluations=len(found.entries), semantic=found.semantic)
            answers = await authzen.run(found.entries, found.semantic, self._evaluate)
            details["decisions"] = [a["context"]["toolpass_decision"] for a in answers]
            return {"evaluations": answers}

        return await self._authzen(request, many)

    async def authzen_metadata(self, request: Request) -> Response:
        """``GET /.well-known/authzen-configuration`` (no key: it names endpoints only)."""
        return JSONResponse(authzen.metadata(self._public_url or str(request.base_url)))

    async def _authzen(
        self,
        request: Request,
        handle: Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any]]],
    ) -> Response:
        """Authenticate, read strict JSON, answer; every malformed request is 400 as the
        specification says, and ``X-Request-ID`` is echoed on every answer."""
        details: dict[str, Any] = request.scope.setdefault(_LOG_KEY, {})
        request_id = request.headers.get("x-request-id")
        echo = {"X-Request-ID": request_id} if request_id is not None else {}
        try:
            self._authenticate(request, details)
            if not _is_json(request):
                raise Problem(400, "the body must be application/json")
            data = load_json(await self._body(request))
            answer = await handle(data, details)
        except Problem as p:
            details["error"] = p.message
            return error(p.status, p.message, {**p.headers, **echo})
        except authzen.Invalid as e:
            details["error"] = str(e)
            return error(400, str(e), echo)
        return JSONResponse(answer, headers=echo)

    async def _single(self, data: Any, details: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise authzen.Invalid("the body must be a JSON object")
        try:
            asked = authzen.question(data)
        except authzen.Unanswerable as e:
            details["decision"] = "unknown"
            return authzen.unanswerable(e)
        details.update(
            user=asked.user,
            connection=asked.connection,
            action=asked.action,
            resource=asked.resource,
        )
        answer = await self._ask(asked)
        details["decision"] = answer["context"]["toolpass_decision"]
        return answer

    async def _evaluate(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """One entry of a batch: an invalid one is its own closed answer, not a 400."""
        try:
            return await self._ask(authzen.question(entry))
        except authzen.Invalid as e:
            return authzen.invalid_entry(e)
        except authzen.Unanswerable as e:
            return authzen.unanswerable(e)

    async def _ask(self, asked: authzen.Question) -> dict[str, Any]:
        d = await self.tp.acheck(asked.user, asked.connection, asked.action, asked.resource)
        configured = getattr(self.tp, "configured", None)
        known = bool(configured(asked.connection, asked.action)) if callable(configured) else None
        return authzen.answer(d, known)

    async def _body(self, request: Request) -> bytes:
        limit = self.config.max_body_bytes
        too_large = Problem(413, f"the body is larger than {limit} bytes")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise too_large
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise too_large
        return bytes(body)

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})


def _is_json(request: Request) -> bool:
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return media_type == "application/json"


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    messages = {404: "no such path", 405: f"{request.method} is not allowed here"}
    message = messages.get(exc.status_code, exc.detail)
    request.scope.setdefault(_LOG_KEY, {})["error"] = message
    return error(exc.status_code, message, exc.headers)


async def _crash(request: Request, exc: Exception) -> Response:
    log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
    return error(500, "internal error")


class _Envelope:
    """Outermost middleware: the access log, security headers, and a JSON 500 of last resort."""

    def __init__(self, app: ASGIApp, *, log_requests: bool) -> None:
        self.app = app
        self.log_requests = log_requests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        details: dict[str, Any] = {}
        scope[_LOG_KEY] = details
        status = 0

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), *_EXTRA_HEADERS]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except Exception:
            log.exception("internal error on %s %s", scope.get("method"), scope.get("path"))
            if status == 0:  # nothing sent yet: answer in JSON
                await error(500, "internal error")(scope, receive, send_wrapper)
            status = status or 500
        finally:
            if self.log_requests:
                self._log(scope, status, started, details)

    def _log(self, scope: Scope, status: int, started: float, details: dict[str, Any]) -> None:
        client = scope.get("client")
        path = str(scope.get("path", ""))
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "client": client[0] if client else None,
            "method": scope.get("method"),
            "path": path if len(path) <= 200 else path[:200] + "...",
            "status": status,
            "ms": round((time.perf_counter() - started) * 1000, 3),
            "key": None,
            **details,
        }
        access_log.info(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))


def create_app(tp: Checker, config: ServerConfig | Mapping[str, Any] | None = None) -> Starlette:
    """The toolpass server's ASGI app for the engine ``tp``.

    ``config`` is a :class:`ServerConfig`, a ``server:`` mapping (validated as code), or None
    for ``tp.config.server`` (the ``server:`` section of the file ``tp`` was loaded from).
    With ``approvals:`` in it, the app also serves the approvals page (``/approvals``).
    API keys are resolved now: a missing or unusable key raises ``ConfigError``. The caller
    keeps ``tp`` and closes it.
    """
    if not isinstance(config, ServerConfig):
        if config is None:
            loaded = getattr(tp, "config", None)
            path = getattr(loaded, "path", None)
            section = getattr(loaded, "server", None)
            if not isinstance(path, str):
                raise ConfigError("no server configuration: pass config= to create_app")
            config = parse_server_config(
                section,
                source=path,
                base_dir=os.path.dirname(os.path.abspath(path)),
                store=getattr(loaded, "store", None),
            )
        else:
            store = getattr(getattr(tp, "config", None), "store", None)
            config = parse_server_config(config, store=store)
    service = _Service(tp, config)
    threads = config.threads
    page = None
    if config.approvals is not None:
        page = ApprovalsPage(config.approvals, tls=config.tls_cert_file is not None)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # tp.acheck runs each uncached look-up in the loop's default executor.
        executor = ThreadPoolExecutor(threads, thread_name_prefix="toolpass-check")
        asyncio.get_running_loop().set_default_executor(executor)
        try:
            yield
        finally:
            if page is not None:
                page.close()

    app = Starlette(
        lifespan=lifespan,
        routes=[
            Route("/check", service.check, methods=["POST"]),
            Route("/healthz", service.healthz, methods=["GET"]),
            Route(authzen.EVALUATION_PATH, service.evaluation, methods=["POST"]),
            Route(authzen.EVALUATIONS_PATH, service.evaluations, methods=["POST"]),
            Route(authzen.METADATA_PATH, service.authzen_metadata, methods=["GET"]),
            *(page.routes() if page is not None else ()),
        ],
        exception_handlers={HTTPException: _http_error, Exception: _crash},
    )
    app.router.redirect_slashes = False
    app.add_middleware(_Envelope, log_requests=config.access_log)
    app.state.server_config = config
    return app
