"""The MCP project's conformance harness against the SDK's reference "everything" server:
directly, with toolpass's middleware in it, and behind ``toolpass mcp-proxy``. A scenario
that passes directly and fails with toolpass fails the run (exit 1).

    python conformance_run.py --everything DIR --harness BIN [--node NODE] [--spec V ...]

``DIR`` holds the ``mcp_everything_server`` package (the SDK's
``examples/servers/everything-server``); ``BIN`` is the harness's command
(``node_modules/.bin/conformance`` of ``@modelcontextprotocol/conformance``). Also run by
itself as ``python conformance_run.py serve-middleware PORT`` or ``serve-proxy PORT URL``:
the servers the harness is pointed at (127.0.0.1 only).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
SCENARIO = re.compile(r"^[✓✗]\s+(\S+):\s+(\d+) passed,\s+(\d+) failed", re.MULTILINE)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[Any], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode}) before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {port} after {seconds} s")


def serve_middleware(port: int) -> None:
    """The everything server with toolpass's middleware: every call in the pipeline."""
    from mcp_everything_server import server as everything
    from toolpass.mcp import guard

    guard(everything.mcp, None, None, user="conformance@example.com")
    everything.mcp.run(
        transport="streamable-http",
        host="127.0.0.1",
        port=port,
        event_store=everything.event_store,
        retry_interval=100,
    )


def serve_proxy(port: int, upstream: str) -> None:
    """``toolpass mcp-proxy --url upstream``, serving its clients on streamable HTTP."""
    import anyio
    import uvicorn
    from toolpass.mcp.proxy import Proxy, ProxyConfig, serve

    async def on_http(proxy: Proxy) -> None:
        app = proxy.server.streamable_http_app()
        web = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        async with anyio.create_task_group() as proxy.tasks:
            await web.serve()
            proxy.tasks.cancel_scope.cancel()

    config = ProxyConfig(user="conformance@example.com")
    anyio.run(lambda: serve(upstream, None, config, run=on_http))


def started(*args: str, port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        process = subprocess.Popen([sys.executable, *args], env=env, stdout=output, stderr=output)
    wait_listening(port, process)
    return process


def harness(command: list[str], url: str, spec: str | None, out: Path) -> dict[str, bool]:
    """Each scenario's outcome (passed) of one harness run."""
    versions = ["--spec-version", spec] if spec else []
    done = subprocess.run(
        [*command, "server", "--url", url, "--suite", "all", *versions, "--output-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    (out / "log.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
    return {m[1]: m[3] == "0" for m in SCENARIO.finditer(done.stdout)}


def run(everything: Path, command: list[str], specs: list[str | None], out: Path) -> int:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(everything), str(HERE.parent)])}
    env["OTEL_SDK_DISABLED"] = "true"
    broken = 0
    out.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        direct_port, middleware_port, proxy_port = free_port(), free_port(), free_port()
        direct_url = f"http://127.0.0.1:{direct_port}/mcp"
        servers = [
            started(
                "-m",
                "mcp_everything_server",
                "--port",
                str(direct_port),
                port=direct_port,
                env=env,
                log=out / f"{spec}-direct.log",
            ),
            started(
                str(HERE),
                "serve-middleware",
                str(middleware_port),
                port=middleware_port,
                env=env,
                log=out / f"{spec}-middleware.log",
            ),
        ]
        servers.append(
            started(
                str(HERE),
                "serve-proxy",
                str(proxy_port),
                direct_url,
                port=proxy_port,
                env=env,
                log=out / f"{spec}-proxy.log",
            )
        )
        try:
            results = {}
            for name, port in (
                ("direct", direct_port),
                ("middleware", middleware_port),
                ("proxy", proxy_port),
            ):
                where = out / f"{spec or 'default'}-{name}"
                where.mkdir(parents=True, exist_ok=True)
                results[name] = harness(command, f"http://127.0.0.1:{port}/mcp", spec, where)
        finally:
            for process in servers:
                process.terminate()
                process.wait(timeout=10)
        direct = results["direct"]
        print(
            f"spec {spec or '(default)'}: "
            f"{sum(direct.values())}/{len(direct)} scenarios pass directly"
        )
        for name in ("middleware", "proxy"):
            failing = sorted(s for s, ok in results[name].items() if not ok and direct.get(s))
            missing = sorted(set(direct) - set(results[name]))
            print(
                f"  {name}: {len(failing) + len(missing)} fail only with toolpass "
                f"{failing + missing}"
            )
            broken += len(failing) + len(missing)
    print(f"logs in {out}")
    return 1 if broken else 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve-middleware"]:
        serve_middleware(int(argv[1]))
        return 0
    if argv[:1] == ["serve-proxy"]:
        serve_proxy(int(argv[1]), argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--everything", type=Path, required=True)
    parser.add_argument("--harness", required=True)
    parser.add_argument("--node", default="node")
    parser.add_argument("--spec", action="append", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="mcp-conformance-"))
    specs: list[str | None] = args.spec or ["2025-11-25", "2026-07-28"]
    return run(args.everything, [args.node, args.harness], specs, out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
