"""``toolpass serve``: run the server under uvicorn.

::

    toolpass serve [-config FILE] [--host HOST] [--port PORT] [--workers N]

Flags may be written ``-config`` or ``--config``; FILE defaults to ``$TOOLPASS_CONFIG`` or
``toolpass.yaml``. The flags override the file's ``server:`` section. A configuration error
is one line on stderr and exit status 3. SIGTERM (or SIGINT) stops accepting connections,
lets in-flight requests finish (``shutdown_timeout``), and exits 0.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import socket
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any, NoReturn

import uvicorn
from starlette.applications import Starlette
from toolpass.engine.toolpass import Toolpass
from toolpass.server.app import create_app
from toolpass.server.config import ServerConfig, parse_server_config
from toolpass.wire.errors import ToolpassError

ERROR = 3
_CONFIG_ENV = "TOOLPASS_SERVER_CONFIG"  # hands the file to worker processes
log = logging.getLogger("toolpass.server")


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Usage(f"{message} (see toolpass serve --help)")


def _number(low: int, high: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not from {low} to {high}")
        return value

    return parse


def _parser() -> argparse.ArgumentParser:
    default = os.environ.get("TOOLPASS_CONFIG", "toolpass.yaml")
    parser = _Parser(
        prog="toolpass serve",
        description="Run the toolpass permission engine as an HTTP service.",
    )
    parser.add_argument("-config", "--config", default=default, help=f"default: {default}")
    parser.add_argument("-host", "--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("-port", "--port", type=_number(0, 65535), help="default 8080")
    parser.add_argument("-workers", "--workers", type=_number(1, 64), help="processes (default 1)")
    return parser


def configure_logging() -> None:
    """Server messages on stderr; the access log, one JSON line per request, on stdout."""
    root = logging.getLogger()
    root.handlers[:] = []
    errors = logging.StreamHandler(sys.stderr)
    errors.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(errors)
    root.setLevel(logging.INFO)
    access = logging.getLogger("toolpass.server.access")
    access.handlers[:] = []
    lines = logging.StreamHandler(sys.stdout)
    lines.setFormatter(logging.Formatter("%(message)s"))
    access.addHandler(lines)
    access.propagate = False
    access.setLevel(logging.INFO)


def load(path: str) -> tuple[Toolpass, ServerConfig]:
    """The engine and the validated ``server:`` section of the file at ``path``."""
    tp = Toolpass.from_config(path)
    try:
        base = os.path.dirname(os.path.abspath(path))
        server = parse_server_config(
            tp.config.server, source=path, base_dir=base, store=tp.config.store
        )
        return tp, server
    except BaseException:
        tp.close()
        raise


def worker_app() -> Starlette:
    """The app of one worker process (``--workers`` > 1), from ``$TOOLPASS_SERVER_CONFIG``."""
    configure_logging()
    tp, config = load(os.environ[_CONFIG_ENV])
    return create_app(tp, config)


def main(argv: Sequence[str] | None = None) -> int:
    """``toolpass serve ARGS...``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(argv)
    except _Usage as e:
        sys.stderr.write(f"toolpass serve: {e}\n")
        return ERROR
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    try:
        tp, config = load(args.config)
    except ToolpassError as e:
        sys.stderr.write(f"toolpass serve: {e}\n")
        return ERROR
    with tp:
        config = config.replace(host=args.host, port=args.port, workers=args.workers)
        try:
            app = create_app(tp, config)
        except ToolpassError as e:
            sys.stderr.write(f"toolpass serve: {e}\n")
            return ERROR
        configure_logging()
        try:
            if config.workers > 1:
                return _run_workers(args.config, config)
            return _run(app, config)
        except KeyboardInterrupt:
            return 130


def _uvicorn_options(config: ServerConfig) -> dict[str, Any]:
    return {
        "log_config": None,
        "access_log": False,  # ours has the key's name and the decision
        "server_header": False,
        "lifespan": "on",
        # uvicorn would take X-Forwarded-For (and the scheme) from any local process: the
        # approvals page reads them itself, from its trusted_proxies only.
        "proxy_headers": False,
        "forwarded_allow_ips": "",
        "timeout_graceful_shutdown": math.ceil(config.shutdown_timeout),
        "timeout_keep_alive": math.ceil(config.keep_alive_timeout),
        "ssl_certfile": config.tls_cert_file,
        "ssl_keyfile": config.tls_key_file,
    }


def _run(app: Starlette, config: ServerConfig) -> int:
    try:
        sock = _bind(config.host, config.port)
    except OSError as e:
        reason = e.strerror or str(e)
        sys.stderr.write(
            f"toolpass serve: cannot listen on {config.host}:{config.port}: {reason}\n"
        )
        return ERROR
    options = _uvicorn_options(config)
    server = uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port, **options))
    try:
        server.config.load()  # TLS files, protocol classes: fail here with one line
    except Exception as e:
        sock.close()
        sys.stderr.write(f"toolpass serve: cannot start: {type(e).__name__}: {e}\n")
        return ERROR
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    log.info("listening on %s://%s:%d (pid %d)", config.scheme, shown, port, os.getpid())
    # uvicorn re-raises a caught SIGTERM once it has shut down, with the handler that was
    # there before: make that one a no-op so a graceful stop exits 0.
    previous = _quiet_sigterm()
    try:
        server.run(sockets=[sock])
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        sock.close()
    if not server.started:
        sys.stderr.write("toolpass serve: the server did not start (see the log above)\n")
        return ERROR
    log.info("stopped")
    return 0


def _run_workers(path: str, config: ServerConfig) -> int:
    os.environ[_CONFIG_ENV] = os.path.abspath(path)
    log.info("starting %d workers on %s:%d", config.workers, config.host, config.port)
    try:
        uvicorn.run(
            "toolpass.server.serve:worker_app",
            factory=True,
            host=config.host,
            port=config.port,
            workers=config.workers,
            **_uvicorn_options(config),
        )
    except SystemExit as e:
        return e.code if isinstance(e.code, int) and e.code else ERROR
    log.info("stopped")
    return 0


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def _ignore(signum: int, frame: FrameType | None) -> None:
    return None


def _quiet_sigterm() -> Any:
    try:
        return signal.signal(signal.SIGTERM, _ignore)
    except ValueError:  # not the main thread: uvicorn does not handle signals there either
        return None
