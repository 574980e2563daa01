"""Run the project's checks from a fresh checkout with nothing but Python 3.10+.

    python3 dev.py demo          the scripted ops-agent demo
    python3 dev.py test          every test of every package (all default nox sessions)
    python3 dev.py test --quick  core's first tier: its tests that need no vendor library
    python3 dev.py lock          bring uv.lock and the adapters' locks (locks/) up to date
    python3 dev.py nox ...       any nox command line

It keeps nox and uv in .venv-dev/ (made on first use), then hands over to nox, which builds
one environment per session. `test` first makes sure of the programs its tests run beside
Python (SYSTEM_NEEDS): it installs a missing one with apt-get when run as root, and
otherwise stops, saying what to install. It runs the sessions in LANES parallel lanes, the
longest first (as timed by the last run here, else as .ci/times.json says), each session's
output in .nox/.logs/ (every line stamped with the seconds since the session started), and
prints the output of each one that failed at the end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import venv
from pathlib import Path
from typing import IO, Any

Output = int | IO[Any] | None
ROOT = Path(__file__).resolve().parent
TOOLS = ROOT / ".venv-dev"
BIN = TOOLS / ("Scripts" if os.name == "nt" else "bin")
REQUIREMENTS = ["nox>=2025.2.9", "uv>=0.8"]
#: Sessions run side by side. Four on two cores: each session spends part of its time
#: waiting (installs, subprocesses starting, servers and CLIs answering), which the others
#: fill (three kept the cores 87% busy); the CPU line at the end of `test` says how busy.
LANES = 4
LOGS = ROOT / ".nox" / ".logs"
#: How long each session took last time (seconds), to start the longest first.
TIMES = ROOT / ".nox" / ".times.json"
#: Before any run here (a fresh clone, CI): each session's time in a run of `test` on the
#: 2-core machine (.nox/.times.json, committed), so that the longest still start first.
FIRST_GUESS = ROOT / ".ci" / "times.json"
#: Programs the tests run beside Python: (Debian package, commands that provide it, who needs it).
SYSTEM_NEEDS = [
    ("redis-server", ("redis-server",), "the shared-state tests start a real redis-server"),
    ("chromium", ("chromium", "chromium-browser"), "the approvals page's browser test"),
    ("npm", ("npm",), "the MCP conformance harness and the route tables' sources come from npm"),
]


def ensure_tools() -> None:
    marker = TOOLS / ".ready"
    if marker.exists():
        return
    print("dev.py: preparing .venv-dev (nox, uv) ...", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(TOOLS)
    subprocess.run(
        [
            str(BIN / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            *REQUIREMENTS,
        ],
        check=True,
    )
    marker.write_text("ok\n")


def missing_system_needs() -> list[tuple[str, str]]:
    return [
        (package, why)
        for package, commands, why in SYSTEM_NEEDS
        if not any(shutil.which(command) for command in commands)
    ]


def apt_get_install(packages: list[str]) -> None:
    """Install Debian packages, refreshing the package lists once if the first try fails."""
    print(f"dev.py: installing {' '.join(packages)} with apt-get ...", flush=True)
    install = ["apt-get", "install", "-y", "-q", *packages]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(install, stdout=subprocess.DEVNULL, env=env).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], stdout=subprocess.DEVNULL, env=env)
        subprocess.run(install, stdout=subprocess.DEVNULL, env=env)


def ensure_system_needs() -> bool:
    """Whether every program of SYSTEM_NEEDS is there, after installing the missing ones
    when this process may (root, with apt-get); otherwise say what is missing."""
    missing = missing_system_needs()
    if missing and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        apt_get_install([package for package, _ in missing])
        missing = missing_system_needs()
    for package, why in missing:
        print(
            f"dev.py: {package} is missing ({why}); install it"
            f" (on Debian or Ubuntu: sudo apt-get install {package}) and run again",
            file=sys.stderr,
        )
    return not missing


def nox_command(*args: str) -> tuple[list[str], dict[str, str]]:
    """nox (from .venv-dev, with uv on its PATH) on the noxfile: its command and environment.
    Python writes bytecode caches (``PYTHONDONTWRITEBYTECODE`` is dropped): the tests start
    thousands of interpreters, and one that imports the vendor clients compiles them from
    source each time without (1.8 s of CPU against 0.7 s)."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return [str(BIN / "python"), "-m", "nox", "-f", str(ROOT / "noxfile.py"), *args], env


def nox(
    *args: str, stdout: Output = None, stderr: Output = None
) -> subprocess.CompletedProcess[str]:
    """Run nox on the noxfile."""
    command, env = nox_command(*args)
    return subprocess.run(command, cwd=ROOT, env=env, text=True, stdout=stdout, stderr=stderr)


def nox_process(*args: str) -> subprocess.Popen[str]:
    """Start nox on the noxfile, its output (stdout and stderr, unbuffered) in a pipe."""
    command, env = nox_command(*args)
    env["PYTHONUNBUFFERED"] = "1"  # each line stamped when it is written, not when flushed
    pipe, both = subprocess.PIPE, subprocess.STDOUT
    return subprocess.Popen(command, cwd=ROOT, env=env, text=True, stdout=pipe, stderr=both)


def default_sessions() -> list[str]:
    """The sessions `nox` alone runs, longest first as timed by the last run."""
    listed = nox("-l", "--json", stdout=subprocess.PIPE)
    if listed.returncode:
        raise SystemExit(listed.returncode)
    names = [entry["session"] for entry in json.loads(listed.stdout)]
    times = {**read_times(FIRST_GUESS), **read_times(TIMES)}
    return sorted(names, key=lambda name: -times.get(name, 0))


def read_times(path: Path) -> dict[str, float]:
    return json.loads(path.read_text()) if path.exists() else {}


def skip_reason(log: str) -> str | None:
    """Why nox skipped the session whose output is ``log``, if it did."""
    found = re.search(r"^ *[\d.]+ nox > Session .* skipped: (.*)$", log, re.MULTILINE)
    return found[1] if found else None


def run_stamped(name: str, log: Path) -> tuple[int, float | None]:
    """Run session ``name`` with its output in ``log``, each line led by the seconds since
    the session started (how long each of its steps took, read from the log): its exit code
    and the CPU seconds it and its processes used (None where the system does not say)."""
    start = time.monotonic()
    with log.open("w") as out:
        process = nox_process("-s", name)
        assert process.stdout is not None
        for line in process.stdout:
            out.write(f"{time.monotonic() - start:7.1f} {line}")
            out.flush()
        process.stdout.close()
    if not hasattr(os, "wait4"):
        return process.wait(), None
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_utime + usage.ru_stime


def run_in_lanes(names: list[str]) -> int:
    """Run each session once, LANES at a time; say which failed and show their output."""
    pending, failed, skipped, times, cpus = list(names), [], [], {}, []
    lock = threading.Lock()
    LOGS.mkdir(parents=True, exist_ok=True)

    def lane() -> None:
        while True:
            with lock:
                if not pending:
                    return
                name = pending.pop(0)
            log = LOGS / f"{name}.log"
            start = time.monotonic()
            returncode, cpu = run_stamped(name, log)
            why = skip_reason(log.read_text())
            with lock:
                times[name] = round(time.monotonic() - start, 1)
                cpus.append(cpu or 0.0)
                status = "failed" if returncode else f"skipped ({why})" if why else "passed"
                used = "" if cpu is None else f" (CPU {cpu:.0f} s)"
                print(f"dev.py: {name} {status} in {times[name]:.0f} s{used}", flush=True)
                if returncode:
                    failed.append((name, log))
                elif why:
                    skipped.append(name)

    start = time.monotonic()
    lanes = [threading.Thread(target=lane) for _ in range(LANES)]
    for thread in lanes:
        thread.start()
    for thread in lanes:
        thread.join()
    TIMES.write_text(json.dumps({**read_times(TIMES), **times}, indent=1, sort_keys=True) + "\n")
    for name, log in failed:
        print(f"\n===== {name} ({log.relative_to(ROOT)}) =====\n{log.read_text()}", flush=True)
    took = time.monotonic() - start
    passed = len(names) - len(failed) - len(skipped)
    cores = os.cpu_count() or 1
    print(
        f"dev.py: CPU {sum(cpus):.0f} s, {sum(cpus) / (took * cores):.0%} of {cores} cores"
        f" over the {took:.0f} s"
    )
    print(
        f"dev.py: {len(names)} sessions in {took:.0f} s: {passed} passed,"
        f" {len(skipped)} skipped (each with its reason above), {len(failed)} failed"
    )
    if failed:
        print("dev.py: failed: " + ", ".join(name for name, _ in failed), file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    commands = {"demo": ["-s", "demo"], "test": [], "lock": ["-s", "lock"], "nox": []}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    if argv[:2] == ["test", "--quick"]:
        argv = ["nox", "-s", "quick", "--", *argv[2:]]  # the rest is for pytest
    elif argv[0] == "test" and not ensure_system_needs():
        return 1
    ensure_tools()
    if argv == ["test"]:
        return run_in_lanes(default_sessions())
    return nox(*commands[argv[0]], *argv[1:]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
