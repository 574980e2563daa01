"""A fake of the Anthropic Messages API on 127.0.0.1, so the Claude Agent SDK's real loop (the
Claude Code CLI its wheel bundles) runs offline with a scripted model.

Each run's prompt names a script (``script:<id>``, from ``FakeClaude.script``): the list of
tool calls the model makes, one per response, in order, then the text ``"done"``. A request
is answered from its own history (how many assistant turns it already has), so concurrent
runs never mix. ``outputs(id)`` is what the model read back after each call: the
``tool_result`` contents of the run's last request. Answers are streamed as the CLI asks
(``stream: true``: server-sent events), or whole otherwise.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)
_SCRIPT = re.compile(r"script:(\w+)")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeClaude


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_HEAD(self) -> None:
        self._send(200, b"", "text/plain")

    def do_GET(self) -> None:
        self._send(404, b'{"type":"error","error":{"type":"not_found_error"}}', "application/json")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        fake = self.server.fake
        fake.requests.append((self.path, body))
        if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
            self._send(200, b'{"input_tokens": 10}', "application/json")
            return
        blocks = fake.answer(body)
        if body.get("stream"):
            self._stream(blocks)
        else:
            message = _message(blocks)
            self._send(200, json.dumps(message).encode(), "application/json")

    def _send(self, status: int, data: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, blocks: list[dict[str, Any]]) -> None:
        events: list[tuple[str, dict[str, Any]]] = []
        message = _message([])
        message["stop_reason"] = None
        events.append(("message_start", {"type": "message_start", "message": message}))
        for index, block in enumerate(blocks):
            if block["type"] == "tool_use":
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            events += [
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                ),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": index}),
            ]
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        data = b"".join(
            f"event: {name}\ndata: {json.dumps(event)}\n\n".encode() for name, event in events
        )
        self._send(200, data, "text/event-stream")


def _message(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    tool = any(b["type"] == "tool_use" for b in blocks)
    return {
        "id": f"msg_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": blocks,
        "stop_reason": "tool_use" if tool else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            _text(c.get("text", c.get("content", ""))) for c in content if isinstance(c, dict)
        )
    return ""


class FakeClaude:
    """Use as a context manager: serves on 127.0.0.1 (a free port) until it exits."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._scripts: dict[str, list[list[tuple[str, dict[str, Any]]]]] = {}
        self._last: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def __enter__(self) -> FakeClaude:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.home = tempfile.TemporaryDirectory(prefix="fake-claude-home-")
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.home.cleanup()

    # Scripts.

    def script(self, calls: list[Any]) -> str:
        """A prompt that makes the model call ``calls`` (``(tool, arguments)`` pairs, or lists of
        them for parallel calls in one response), one response each, then say ``"done"``."""
        with self._lock:
            sid = f"s{next(self._ids)}"
            self._scripts[sid] = [c if isinstance(c, list) else [c] for c in calls]
        return f"Do the task. script:{sid}"

    def answer(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The next step of the script named by the request's latest prompt (a resumed
        session's or a later turn's history holds earlier prompts too)."""
        messages = list(body.get("messages") or [])
        sid, start = None, 0
        for index, message in enumerate(messages):
            if message.get("role") == "user":
                found = _SCRIPT.search(_text(message.get("content")))
                if found:
                    sid, start = found.group(1), index
        steps = self._scripts.get(sid or "")
        if sid is None or steps is None:
            return [{"type": "text", "text": "done"}]
        with self._lock:
            self._last[sid] = {**body, "messages": messages[start:]}
        made = sum(1 for m in messages[start:] if m.get("role") == "assistant")
        if made >= len(steps):
            return [{"type": "text", "text": "done"}]
        return [
            {"type": "tool_use", "id": f"toolu_{sid}_{made}_{n}", "name": tool, "input": arguments}
            for n, (tool, arguments) in enumerate(steps[made])
        ]

    def outputs(self, prompt: str) -> list[str]:
        """What the model read back after each tool call of the run of ``prompt``."""
        found = _SCRIPT.search(prompt)
        assert found is not None
        last = self._last.get(found.group(1), {})
        out = []
        # The first message is the prompt's (it may carry results from before it).
        for message in (last.get("messages") or [])[1:]:
            content = message.get("content")
            if message.get("role") != "user" or not isinstance(content, list):
                continue
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    text = _text(block.get("content"))
                    out.append(("[error] " if block.get("is_error") else "") + text)
        return out

    def env(self) -> dict[str, str]:
        """The CLI's environment: this fake as the API, no other traffic, a private home."""
        home = self.home.name
        return {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "HOME": home,
            "CLAUDE_CONFIG_DIR": home,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }


@contextmanager
def fake_claude() -> Iterator[FakeClaude]:
    with FakeClaude() as fake:
        yield fake


os.environ.setdefault("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
