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
from collections.abc import Callable
from typing import NamedTuple

from toolpass import Toolkit

CALLS, ROUNDS = 300, 5


def per_call(store: str | None, server_cpu: Callable[[], float] = lambda: 0.0) -> Cost:
    """Best seconds per call (wall, CPU) of a capped write tool in a conversation kept in
    ``store``; ``server_cpu`` reads the CPU seconds a store's server has used so far."""
    kit = Toolkit(limits={"write": 10**12}, audit=[lambda event: None], store=store)
    tool = kit.secured_tool(lambda x: x, name="deploy", effect="write")
    wall = cpu = float("inf")
    with kit.conversations.get("conversation-1", "dana@example.com").active():
        for _ in range(ROUNDS):
            server, mine, start = server_cpu(), time.process_time(), time.perf_counter()
            for _ in range(CALLS):
                tool("v1")
            wall = min(wall, (time.perf_counter() - start) / CALLS)
            used = time.process_time() - mine + server_cpu() - server
            cpu = min(cpu, used / CALLS)
    return Cost(wall, cpu)


class Cost(NamedTuple):
    wall: float
    cpu: float

    def __str__(self) -> str:
        return f"{self.wall * 1e6:7.1f} us wall, {self.cpu * 1e6:6.1f} us CPU per call"

    def times(self, other: Cost) -> str:
        return f"{self.wall / other.wall:.1f}x wall, {self.cpu / other.cpu:.1f}x CPU"


def redis_cpu(url: str) -> Callable[[], float]:
    """What redis-server at ``url`` has used of the CPU so far, in seconds."""
    import redis

    client = redis.Redis.from_url(url)

    def used() -> float:
        info = client.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    return used


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
    """What a call sends to Redis: its round trips (the commands this process sent, seen by
    MONITOR) and the commands a script ran inside the server, per call."""
    import redis

    kit = Toolkit(limits={"write": 10**12}, audit=[lambda event: None], store=url)
    tool = kit.secured_tool(lambda x: x, name="deploy", effect="write")
    client = redis.Redis.from_url(url, decode_responses=True)
    client.ping()
    sent: dict[str, int] = {}
    with kit.conversations.get("conversation-2", "dana@example.com").active():
        tool("v1")
        with redis.Redis.from_url(url, decode_responses=True).monitor() as monitor:
            for _ in range(CALLS):
                tool("v1")
            client.echo("done")
            while (line := monitor.next_command())["command"] != "ECHO done":
                where = "in a script" if line["client_type"] == "lua" else "round trips"
                name = f"{where}: {line['command'].split()[0].upper()}"
                sent[name] = sent.get(name, 0) + 1
    client.close()
    return ", ".join(f"{name} {n / CALLS:g}" for name, n in sorted(sent.items(), reverse=True))


def main() -> None:
    memory = per_call(None)
    print(f"memory  {memory}")
    sqlite = per_call(f"sqlite:///{tempfile.mkdtemp()}/state.db")
    print(f"sqlite  {sqlite} ({sqlite.times(memory)} memory)")
    found = redis_url()
    if found is not None:
        url, server = found
        try:
            redis = per_call(url, redis_cpu(url))
            print(f"redis   {redis} ({redis.times(sqlite)} SQLite)")
            print(f"        per call: {commands_per_call(url)}")
        finally:
            server.terminate()


if __name__ == "__main__":
    main()
