"""What a shared store costs per call: a write tool in a conversation session, its state in
memory, in SQLite and (when a redis-server can be started here) in Redis, in one run; for
Redis, the commands the server ran per call too (each a round trip but those in a script).

    TOOLPASS_AUDIT=off python bench/bench_store.py
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import tempfile
import time

from toolpass import Toolkit

CALLS, ROUNDS = 300, 5


def per_call(store: str | None) -> float:
    """Best seconds per call of a capped write tool in a conversation kept in ``store``."""
    kit = Toolkit(limits={"write": 10**12}, audit=[lambda event: None], store=store)
    tool = kit.secured_tool(lambda x: x, name="deploy", effect="write")
    best = float("inf")
    with kit.conversations.get("conversation-1", "dana@example.com").active():
        for _ in range(ROUNDS):
            start = time.perf_counter()
            for _ in range(CALLS):
                tool("v1")
            best = min(best, (time.perf_counter() - start) / CALLS)
    return best


def redis_url() -> tuple[str, subprocess.Popen[bytes]] | None:
    binary = shutil.which("redis-server")
    if binary is None or importlib.util.find_spec("redis") is None:
        return None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
        stdout=subprocess.DEVNULL,
    )
    time.sleep(0.3)
    return f"redis://127.0.0.1:{port}/0", server


def commands_per_call(url: str) -> str:
    """The commands a call sends to Redis (the server's own statistics, reset first)."""
    import redis

    client = redis.Redis.from_url(url)
    kit = Toolkit(limits={"write": 10**12}, audit=[lambda event: None], store=url)
    tool = kit.secured_tool(lambda x: x, name="deploy", effect="write")
    with kit.conversations.get("conversation-2", "dana@example.com").active():
        tool("v1")
        client.config_resetstat()
        for _ in range(CALLS):
            tool("v1")
    stats = client.info("commandstats")
    client.close()
    sent = {
        name.removeprefix("cmdstat_"): s["calls"] / CALLS
        for name, s in stats.items()
        if name not in ("cmdstat_config|resetstat", "cmdstat_set", "cmdstat_publish")
    }
    return ", ".join(f"{name} {n:g}" for name, n in sorted(sent.items()))


def main() -> None:
    memory = per_call(None)
    print(f"memory  {memory * 1e6:8.1f} us per call")
    sqlite = per_call(f"sqlite:///{tempfile.mkdtemp()}/state.db")
    print(f"sqlite  {sqlite * 1e6:8.1f} us per call ({sqlite / memory:.1f}x memory)")
    found = redis_url()
    if found is not None:
        url, server = found
        try:
            redis = per_call(url)
            print(
                f"redis   {redis * 1e6:8.1f} us per call ({redis / memory:.1f}x memory, "
                f"{redis / sqlite:.1f}x SQLite); per call: {commands_per_call(url)}"
            )
        finally:
            server.terminate()


if __name__ == "__main__":
    main()
