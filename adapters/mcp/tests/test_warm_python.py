"""warm_python.py, which the proxy tests start their MCP servers with: a warm start is a
process as ``python`` would have started (its arguments, environment, folder, pipes and exit
status), signalled through its launcher and gone with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from upstream_processes import settled
from warm_python import python

SHOW = """
import json, os, sys
print(json.dumps([sys.argv, os.environ.get("ONLY"), len(os.environ), os.getcwd(), sys.path[0]]))
print(sys.stdin.read().upper(), file=sys.stderr)
sys.exit(7)
"""


@pytest.mark.parametrize("warm", [True, False])
def test_a_warm_start_is_the_process_python_starts(tmp_path: Path, warm: bool) -> None:
    command = (
        python("-c", SHOW, "one", "two") if warm else [sys.executable, "-c", SHOW, "one", "two"]
    )
    done = subprocess.run(
        command, input="in", capture_output=True, text=True, env={"ONLY": "x"}, cwd=tmp_path
    )
    assert (done.returncode, done.stderr) == (7, "IN\n")
    argv, only, count, cwd, path = json.loads(done.stdout)
    assert argv == ["-c", "one", "two"]
    assert (only, cwd, path) == ("x", str(tmp_path), "")
    assert count <= 2  # ONLY, and LC_CTYPE where Python sets it: nothing of the tests'


def test_a_script_runs_as_main_beside_its_folder(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("import sys\nprint(__name__, sys.argv[1:], sys.path[0])\n")
    done = subprocess.run(python(str(script), "a"), capture_output=True, text=True, check=True)
    assert done.stdout == f"__main__ ['a'] {tmp_path}\n"


def test_the_launchers_signal_reaches_the_process_and_its_kill_ends_it() -> None:
    wait = "import os, time; print(os.getpid(), flush=True); time.sleep(60)"
    for sent in (signal.SIGTERM, signal.SIGKILL):
        launcher = subprocess.Popen(python("-c", wait), stdout=subprocess.PIPE, text=True)
        assert launcher.stdout is not None
        pid = int(launcher.stdout.readline())
        assert pid != launcher.pid
        launcher.send_signal(sent)
        assert launcher.wait(10) == -sent
        assert settled([pid]) == []  # forwarded, or gone with its launcher
        launcher.stdout.close()


def test_without_the_fork_server_the_script_runs_cold(tmp_path: Path) -> None:
    command = python("-c", "import os; print(os.getppid())")
    command[3] = str(tmp_path / "no-server.sock")
    launcher = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    out, _ = launcher.communicate(timeout=30)
    assert launcher.returncode == 0
    assert int(out) == os.getpid()  # the launcher itself became python (exec)
