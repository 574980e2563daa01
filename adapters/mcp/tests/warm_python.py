"""The test MCP servers' processes, started warm: each is a real process of its own (its own
pid, argv, environment, working folder and stdio pipes) forked from a server that imported
mcp once, instead of a new interpreter importing mcp, pydantic and its models again (about
1.3 s of CPU per start, the proxy tests start about eighty).

``python(script, *args)`` is the command to give where ``[sys.executable, script, *args]``
was given (``-c CODE`` and ``-m MODULE`` too): it runs this file as a launcher, with ``-S``
(the standard library only), which hands its stdin, stdout and stderr to the fork server,
forwards the signals it is sent, and exits as the script's process did. What the preloaded
modules read of the environment as they were imported is the fork server's (no test's
secrets). Without the fork server (one that could not start) the launcher runs the script
itself.

    python -S warm_python.py SOCKET (SCRIPT | -c CODE | -m MODULE) [ARG ...]   (launcher)
    python warm_python.py --serve SOCKET                                     (fork server)
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import runpy
import signal
import socket
import struct
import subprocess
import sys
import threading

#: The fork server's address: an abstract Unix socket (Linux's: no file, no path to clean up).
SOCKET = f"@toolpass-mcp-warm-{os.getpid()}"
#: What the test servers import: loaded once, by the fork server.
PRELOAD = ("mcp", "mcp.server.mcpserver", "mcp_types", "uvicorn", "yaml", "toolpass.mcp.proxy")
STDIO = (0, 1, 2)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


_server: subprocess.Popen[bytes] | None = None


def python(*args: str) -> list[str]:
    """The command that runs ``python *args`` (a script, ``-c CODE`` or ``-m MODULE``)
    warm; the first call starts the fork server, stopped as this process exits."""
    global _server
    if _server is None:
        _server = start_server()
        atexit.register(stop_server, _server)
    return [sys.executable, "-S", __file__, SOCKET, *args]


def start_server() -> subprocess.Popen[bytes]:
    """The fork server, once it listens (its environment holds no test's secrets)."""
    kept = ("PATH", "HOME", "OTEL_SDK_DISABLED")
    env = {name: os.environ[name] for name in kept if name in os.environ}
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", SOCKET],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.readline()  # "listening", or nothing: it failed (the launchers run cold)
    process.stdout.close()
    return process


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """Stop the fork server once the processes it started ended (killed after 30 s): their
    CPU time is then counted in this process's children's, as a cold start's is."""
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# The launcher.


def launch(path: str, args: list[str]) -> None:
    """Run ``args`` in a process forked by the server at ``path``; exit as it did."""
    conn = socket.socket(socket.AF_UNIX)
    try:
        conn.connect(address(path))
    except OSError:  # no fork server: an ordinary start
        os.execv(sys.executable, [sys.executable, *args])
    request = json.dumps({"args": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    socket.send_fds(conn, [struct.pack("!I", len(request)) + request], list(STDIO))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in STDIO:  # the child's pipes close when the child exits, not later
        os.dup2(devnull, fd)
    (pid,) = struct.unpack("!i", receive(conn, 4))
    for number in FORWARDED:
        signal.signal(number, lambda number, _: forward(pid, number))
    (status,) = struct.unpack("!i", receive(conn, 4))
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # killed by a signal: so is the launcher
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


def address(name: str) -> str:
    """The socket address of ``SOCKET``'s spelling (``@``: the abstract namespace)."""
    return "\0" + name[1:] if name.startswith("@") else name


def forward(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, number)


def receive(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            sys.exit(1)
        data += chunk
    return data


# The fork server.


def serve(path: str) -> None:
    """Import what the servers import, then fork a process for each launcher until sent
    SIGTERM; then wait for them all (their CPU time counted in this process's children's)."""
    for module in PRELOAD:
        __import__(module)
    assert threading.active_count() == 1, "a fork server forks no threads"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(address(path))
    listener.listen(64)
    print("listening", flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    try:
        while True:
            conn, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                wait_for(conn)
            conn.close()
            while reap(os.WNOHANG):
                pass
    except SystemExit:
        if os.getpid() != server_pid:
            raise
        listener.close()
        while reap(0):
            pass


def reap(options: int) -> bool:
    """Whether a waiter was reaped (``os.WNOHANG``: one that had ended)."""
    try:
        return os.waitpid(-1, options)[0] > 0
    except ChildProcessError:
        return False


def wait_for(conn: socket.socket) -> None:
    """The waiter: fork the launcher's process, tell the launcher its pid and its end."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    message, fds, _, _ = socket.recv_fds(conn, 1 << 20, len(STDIO))
    size = struct.unpack("!I", message[:4])[0]
    while len(message) < 4 + size:
        message += conn.recv(4 + size - len(message))
    request = json.loads(message[4:])
    pid = os.fork()
    if pid == 0:
        become(conn, fds, request)
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):  # a launcher killed: its process goes on alone
        conn.sendall(struct.pack("!i", pid))
    _, status = os.waitpid(pid, 0)
    with contextlib.suppress(OSError):
        conn.sendall(struct.pack("!i", status))
    os._exit(0)


def become(conn: socket.socket, fds: list[int], request: dict[str, object]) -> None:
    """Turn this forked process into ``python *args`` as the launcher was started."""
    os.setpgrp()
    for fd, target in zip(fds, STDIO, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])  # type: ignore[arg-type]
    os.chdir(str(request["cwd"]))
    if "random" in sys.modules:  # a state of its own, as a new interpreter's
        sys.modules["random"].seed()
    threading.Thread(target=die_with_launcher, args=(conn,), daemon=True).start()
    args = list(request["args"])  # type: ignore[call-overload]
    if args[0] == "-c":
        sys.argv, sys.path[0] = ["-c", *args[2:]], ""
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
    elif args[0] == "-m":
        sys.argv, sys.path[0] = args[1:], os.getcwd()
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv, sys.path[0] = args, os.path.dirname(os.path.abspath(args[0]))
        runpy.run_path(args[0], run_name="__main__")
    sys.exit(0)


def die_with_launcher(conn: socket.socket) -> None:
    """Once the launcher is gone (killed), this process goes too, as its process group
    would."""
    with contextlib.suppress(OSError):
        conn.recv(1)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        server_pid = os.getpid()
        serve(sys.argv[2])
    else:
        launch(sys.argv[1], sys.argv[2:])
