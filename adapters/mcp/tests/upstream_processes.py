"""The proxy tests' upstream, counted: full_upstream.py run so that each start records its
process id, and what the tests read of those processes."""

from __future__ import annotations

import json
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
UPSTREAM = str(HERE / "full_upstream.py")

# The upstream: full_upstream.py, recording each start (its pid) first.
COUNTED_UPSTREAM = f"""
import json, os, runpy, sys
with open(os.environ["UPSTREAM_LOG"], "a") as log:
    log.write(json.dumps({{"event": "started", "pid": os.getpid()}}) + "\\n")
sys.argv = [{UPSTREAM!r}]
runpy.run_path({UPSTREAM!r}, run_name="__main__")
"""


def started(log: Path) -> list[int]:
    """The process ids of the upstream's starts, in order."""
    events = [json.loads(line) for line in log.read_text().splitlines()]
    return [e["pid"] for e in events if e["event"] == "started"]


def running(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (not exited, nor a zombie)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def settled(pids: list[int], seconds: float = 10.0) -> list[int]:
    """Those of ``pids`` still running once the closed ones had ``seconds`` to exit."""
    deadline = time.monotonic() + seconds
    while running(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return running(pids)
