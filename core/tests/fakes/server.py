"""The base of every vendor fake: a threaded HTTP/1.1 server on 127.0.0.1, port 0.

- keep-alive, and TCP_NODELAY on accepted sockets (no 40 ms Nagle stalls);
- routing by method + path regex to ``handler(request) -> Reply | dict | list``;
- a request log, so a test proves what did and did not arrive;
- failures on demand: ``fail(503)``, ``fail(429, retry_after=30)``, ``slow(2.0)``,
  ``not_json()``, each for the next ``times`` requests (optionally only matching ``path``);
- TLS when given a certificate (see ``fakes.tls``).

Use it as a context manager or through a fixture::

    @pytest.fixture
    def fake() -> Iterator[FakeServer]:
        with FakeServer() as server:
            yield server

    def test_x(fake):
        @fake.route("GET", r"/things/(?P<id>\\d+)")
        def thing(request):
            return {"id": int(request.params["id"])}
        ... # point the client at fake.url
        assert [r.path for r in fake.requests] == ["/things/1"]
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    """One request as it arrived. ``headers`` has lower-case names."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    params: dict[str, str] = field(default_factory=dict)
    client: tuple[str, int] = ("", 0)

    def json(self) -> Any:
        return json.loads(self.body)

    def arg(self, name: str, default: str | None = None) -> str | None:
        """The first value of query parameter ``name``."""
        return self.query.get(name, [default])[0]


@dataclass
class Reply:
    """An answer: ``body`` is JSON-encoded unless it is bytes or None."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], "Reply | dict[str, Any] | list[Any]"]


@dataclass
class _Fault:
    path: re.Pattern[str] | None
    times: int
    reply: Reply | None
    delay: float = 0.0


class FakeServer:
    """A fake HTTP API on 127.0.0.1. See the module docstring."""

    def __init__(self, *, tls: tuple[str, str] | None = None) -> None:
        self.requests: list[Request] = []
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._tls: ssl.SSLContext | None = None
        if tls:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(*tls)
        self._httpd = _Server(self)
        self.port: int = self._httpd.server_address[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    # --- routing -----------------------------------------------------------------------
    def route(self, method: str, pattern: str) -> Callable[[Handler], Handler]:
        """Decorator: answer ``method`` requests whose path fully matches ``pattern``."""

        def add(handler: Handler) -> Handler:
            self.add(method, pattern, handler)
            return handler

        return add

    def add(self, method: str, pattern: str, handler: Handler) -> None:
        self._routes.append((method.upper(), re.compile(pattern), handler))

    # --- failures on demand ------------------------------------------------------------
    def fail(
        self,
        status: int = 503,
        *,
        body: Any = None,
        retry_after: int | None = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
        path: str | None = None,
    ) -> None:
        """Answer the next ``times`` requests (matching ``path``) with ``status``."""
        all_headers = dict(headers or {})
        if retry_after is not None:
            all_headers["Retry-After"] = str(retry_after)
        body = {"message": f"injected failure {status}"} if body is None else body
        self._inject(_Fault(_re(path), times, Reply(status, body, all_headers)))

    def slow(self, seconds: float, *, times: int = 1, path: str | None = None) -> None:
        """Answer the next ``times`` requests normally, after ``seconds``."""
        self._inject(_Fault(_re(path), times, None, seconds))

    def not_json(self, *, status: int = 200, times: int = 1, path: str | None = None) -> None:
        """Answer the next ``times`` requests with an HTML body."""
        reply = Reply(status, b"<html>oops</html>", {"Content-Type": "text/html"})
        self._inject(_Fault(_re(path), times, reply))

    def _inject(self, fault: _Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    # --- the log -----------------------------------------------------------------------
    def seen(self, method: str | None = None, path: str | None = None) -> list[Request]:
        """Logged requests, filtered by method and a path regex."""
        pattern = _re(path)
        with self._lock:
            return [
                r
                for r in self.requests
                if (method is None or r.method == method.upper())
                and (pattern is None or pattern.fullmatch(r.path))
            ]

    # --- serving -----------------------------------------------------------------------
    def answer(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            fault = next(
                (
                    f
                    for f in self._faults
                    if f.times > 0 and (f.path is None or f.path.fullmatch(request.path))
                ),
                None,
            )
            if fault is not None:
                fault.times -= 1
        if fault is not None:
            time.sleep(fault.delay)
            if fault.reply is not None:
                return fault.reply
        for method, pattern, handler in self._routes:
            match = pattern.fullmatch(request.path)
            if match and method == request.method:
                request.params = {k: v for k, v in match.groupdict().items() if v is not None}
                result = handler(request)
                return result if isinstance(result, Reply) else Reply(200, result)
        return Reply(404, {"message": "Not Found"})

    def drop_connections(self) -> None:
        """Close every open client connection, as a server does with idle keep-alives."""
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self.drop_connections()
        self._thread.join()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _re(path: str | None) -> re.Pattern[str] | None:
    return re.compile(path) if path is not None else None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeServer) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer (a timeout test) is not an error."""

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.fake._tls is not None:
            try:
                request = self.fake._tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
        with self.fake._lock:
            self.fake._sockets.add(request)
        try:
            super().finish_request(request, client_address)
        finally:
            with self.fake._lock:
                self.fake._sockets.discard(request)
            if isinstance(request, ssl.SSLSocket):
                request.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 30

    def _body(self) -> bytes:
        """The request body, sent with a Content-Length or chunked."""
        if "chunked" not in (self.headers.get("Transfer-Encoding") or "").lower():
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline().strip():  # trailers, up to the blank line
            pass
        return b"".join(chunks)

    def _serve(self) -> None:
        body = self._body()
        parts = urlsplit(self.path)
        request = Request(
            self.command,
            parts.path,
            parse_qs(parts.query, keep_blank_values=True),
            {k.lower(): v for k, v in self.headers.items()},
            body,
            client=self.client_address[:2],
        )
        try:
            reply = self.server.fake.answer(request)
        except Exception as e:
            reply = Reply(500, {"message": f"fake crashed: {type(e).__name__}: {e}"})
        payload = reply.body
        if payload is None:
            data = b""
        elif isinstance(payload, bytes):
            data = payload
        else:
            data = json.dumps(payload).encode()
        self.send_response(reply.status)
        headers = {"Content-Type": "application/json; charset=utf-8", **reply.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass
