"""A new user's approval across two processes (#20): process A runs a LangChain agent (the
real loop, a scripted model) whose deploy needs a person, with a shared SQLite store and a
webhook notifier to a receiver on 127.0.0.1; the run pauses and A waits on the queue.
Process B, the person, reads the pending requests from the same store and approves; A resumes.
One pending request, exactly one notification (signed), the body run once, and every audit
event of the request carries its id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("toolpass.langchain")

from toolpass.toolkit.notify import SIGNATURE_HEADER, verify_signature

AGENT = Path(__file__).with_name("approval_agent.py")
SECRET = "whsec-two-processes"  # as approval_agent.py signs with
PERSON = """
import json, sys
from toolpass import ApprovalQueue
queue = ApprovalQueue(store=f"sqlite:///{sys.argv[1]}")
waiting = queue.pending()
print(json.dumps([(r.id, r.tool, r.shown_arguments()) for r in waiting]))
queue.approve(waiting[0].id, by="lee@example.com")
"""
HISTORY = """
import json, sys
from toolpass import ApprovalQueue
queue = ApprovalQueue(store=f"sqlite:///{sys.argv[1]}")
print(json.dumps([[e.id, e.state, e.decided_by] for e in queue.history()]))
print(json.dumps(queue.state(sys.argv[2])))
"""


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    """A webhook receiver on 127.0.0.1: its URL and what it was sent (headers, body)."""
    got: list[tuple[dict[str, str], bytes]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            got.append((dict(self.headers), body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks/toolpass", got
    finally:
        server.shutdown()
        server.server_close()


def python(*args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, **options
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def test_an_approval_across_two_processes(
    tmp_path: Path, receiver: tuple[str, list[tuple[dict[str, str], bytes]]]
) -> None:
    url, got = receiver
    store, audit, ran = tmp_path / "state.db", tmp_path / "audit.jsonl", tmp_path / "ran.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false", LANGCHAIN_TRACING="false")
    agent = subprocess.Popen(
        [sys.executable, str(AGENT), str(store), url, str(audit), str(ran)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert agent.stdout is not None
        request_id = json.loads(agent.stdout.readline())["paused"]
        deadline = time.monotonic() + 30  # the notice is sent from A's own thread
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)

        waiting = json.loads(python("-c", PERSON, str(store), env=env).stdout)
        assert waiting == [
            [request_id, "deploy", {"service": "'payments-api'", "version": "'2.4.1'"}]
        ]
        out, err = agent.communicate(timeout=120)
    finally:
        agent.kill()
        agent.wait()
    assert agent.returncode == 0, err[-4000:]
    result = json.loads(out)
    assert result["status"] == "approved"
    assert result["read"] == ["deployed payments-api 2.4.1"]
    assert result["final"] == "done"
    assert ran.read_text() == "payments-api 2.4.1\n"  # the body ran once

    [(headers, body)] = got  # exactly one notification
    assert verify_signature(SECRET, headers.get(SIGNATURE_HEADER), body)
    notice = json.loads(body)["request"]
    assert (notice["id"], notice["tool"]) == (request_id, "deploy")
    assert notice["url"].endswith(f"/approvals?id={request_id}")

    events = [json.loads(line) for line in audit.read_text().splitlines()]
    ours = [e for e in events if e["tool"] == "deploy"]
    assert [(e["outcome"], e["code"]) for e in ours] == [
        ("refused", "approval_pending"),
        ("ok", None),
    ], events
    assert {e["approval_id"] for e in ours} == {request_id}
    assert ours[-1]["approved_by"] == "lee@example.com"

    history, state = python("-c", HISTORY, str(store), request_id, env=env).stdout.splitlines()
    assert json.loads(history) == [[request_id, "ran", "lee@example.com"]]
    assert json.loads(state) == "spent"
