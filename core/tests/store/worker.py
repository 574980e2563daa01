"""One process of a deployment sharing a store: ``python worker.py COMMAND STORE-URL ...``.

Each command prints one JSON line saying what happened, for the test that started it.
"""

from __future__ import annotations

import json
import sys
import time

from toolpass import ApprovalQueue, Toolkit, ToolRefused
from toolpass.store import open_store

USER = "dana@example.com"


def main(command: str, url: str, *args: str) -> object:
    if command == "increment":
        store, times = open_store(url), int(args[0])
        for _ in range(times):
            store.update("counter", lambda n: ((n or 0) + 1, None))
        return "done"
    if command == "approve":
        queue = ApprovalQueue(store=url)
        deadline = time.monotonic() + 10
        while not (waiting := queue.pending()) and time.monotonic() < deadline:
            time.sleep(0.02)
        return [queue.approve(r.id, by="lead@example.com").id for r in waiting]
    if command == "decide-later":  # decide every pending request after a pause
        queue, pause, answer = ApprovalQueue(store=url), float(args[0]), args[1]
        deadline = time.monotonic() + 10
        while not (waiting := queue.pending()) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(pause)
        decide = queue.approve if answer == "approve" else queue.deny
        decided = [decide(r.id, by="lead@example.com").id for r in waiting]
        return [decided, time.time()]
    kit = Toolkit(store=url, approver=ApprovalQueue(store=url), audit=[])
    session = kit.conversations.get(args[0], USER)
    tools = {
        "deploy": kit.secured_tool(lambda: "deployed", name="deploy", effect="write", limit=5),
        "merge": kit.secured_tool(lambda: "merged", name="merge", effect="write", approve=True),
        "read_page": kit.secured_tool(
            lambda text: text, name="read_page", effect="read", untrusted_output=True
        ),
        "read_crm": kit.secured_tool(
            lambda: "customer list", name="read_crm", effect="read", reads_private=True
        ),
        "post": kit.secured_tool(
            lambda text: f"posted {text}", name="post", effect="write", sends_out=True
        ),
    }
    rest = args[1:]
    calls, rest = (int(rest[0]), ()) if command == "deploy" else (1, rest)
    outcomes = []
    with session.active():
        for _ in range(calls):
            try:
                outcomes.append(["ok", tools[command](*rest)])
            except ToolRefused as refused:
                outcomes.append([refused.code, refused.message])
    return outcomes


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:])))
