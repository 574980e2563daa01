"""A client process of a scaled-out deployment: a toolkit whose sessions and approvals live in
the shared store, asking the ``toolpass serve`` processes (several URLs, failing over) whether
the user may merge. Each run of the tool's body appends one line to the ``bodies`` file.

    python scale_worker.py '<json>'   # {"store", "urls", "key", "name", "bodies", "limit",
                                      #  "conversation", "approve", "calls" (a number, or "stdin")}

With a number of calls it waits for a line on stdin, makes the first call, prints
``progress``, waits for another line, makes the rest in a row, then prints the outcomes as
one JSON list; with ``"stdin"`` it makes one call per line read and prints
each outcome (``ok``, a refusal's code, or ``approval_pending <id>``). Each of these lines
starts with ``@@ ``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator

from toolpass import ApprovalPending, ApprovalQueue, Toolkit, ToolRefused, permission_check
from toolpass.engine import Toolpass

MARK = "@@ "


def say(line: str) -> None:
    """A line for the test, marked: anything else on stdout is not the protocol."""
    print(MARK + line, flush=True)


def calls(count: int | str) -> Iterator[int]:
    if count == "stdin":
        yield from (i for i, line in enumerate(sys.stdin) if line.strip())
        return
    sys.stdin.readline()  # go
    for i in range(int(count)):
        yield i
        if i == 0:
            say("progress")
            sys.stdin.readline()  # go on


def outcome(tool: Callable[[str], str]) -> str:
    try:
        tool("acme/widgets")
    except ApprovalPending as pending:
        return f"approval_pending {pending.request_id}"
    except ToolRefused as refused:
        return refused.code
    return "ok"


def main() -> None:
    given = json.loads(sys.argv[1])
    remote = Toolpass.remote(given["urls"], given["key"], timeout=5)
    kit = Toolkit(
        store=given["store"],
        limits={"write": given["limit"]},
        approver=ApprovalQueue(store=given["store"]),
        audit=[],
    )

    def merge(repo: str) -> str:
        with open(given["bodies"], "a") as bodies:  # one short append: one line, whole
            bodies.write(given["name"] + "\n")
        return "merged"

    tool = kit.secured_tool(
        merge,
        name="merge",
        effect="write",
        authorize=permission_check(remote, "gh", "pr.merge", "repo:{repo}"),
        approve=bool(given.get("approve")),
    )
    outcomes = []
    with kit.conversations.get(given["conversation"], "dana@example.com").active():
        for _ in calls(given["calls"]):
            outcomes.append(outcome(tool))
            if given["calls"] == "stdin":
                say(outcomes[-1])
    if given["calls"] != "stdin":
        say(json.dumps(outcomes))


if __name__ == "__main__":
    main()
