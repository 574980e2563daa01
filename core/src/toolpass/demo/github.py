"""A small GitHub on 127.0.0.1 for the demo: one repository, two users, a request log.

It answers what the engine and the demo's tool ask, shaped as GitHub's REST API answers
them: the repository (not archived), a collaborator's permission, a file's contents, a new
pull request.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPO = "acme/widgets"
ROLES = {"dana": "write", "rory": "read"}
_PERMISSION = re.compile(rf"/repos/{REPO}/collaborators/(?P<login>[^/]+)/permission")


class DemoGitHub:
    """Use as a context manager; ``url`` is the API's base, ``requests`` what arrived."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.pulls = 0

    def __enter__(self) -> DemoGitHub:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, method: str, path: str) -> tuple[int, dict[str, Any]]:
        self.requests.append((method, path))
        if method == "GET" and path == f"/repos/{REPO}":
            owner, name = REPO.split("/")
            return 200, {
                "full_name": REPO,
                "name": name,
                "owner": {"login": owner},
                "private": True,
                "archived": False,
                "default_branch": "main",
            }
        found = _PERMISSION.fullmatch(path)
        if method == "GET" and found:
            role = ROLES.get(found["login"], "none")
            return 200, {"permission": role, "role_name": role, "user": {"login": found["login"]}}
        if method == "GET" and path == f"/repos/{REPO}/contents/README.md":
            text = base64.b64encode(b"# widgets\nTpyo\n").decode()
            return 200, {"type": "file", "path": "README.md", "encoding": "base64", "content": text}
        if method == "POST" and path == f"/repos/{REPO}/pulls":
            self.pulls += 1
            return 201, {"number": self.pulls, "state": "open"}
        return 404, {"message": "Not Found"}


def _handler(github: DemoGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_GET(self) -> None:
            self._reply()

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self._reply()

        def _reply(self) -> None:
            status, body = github.answer(self.command, self.path.split("?")[0])
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
