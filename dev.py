"""Run the project's checks from a fresh checkout with nothing but Python 3.10+.

    python3 dev.py demo     the scripted ops-agent demo
    python3 dev.py test     every test of every package (all default nox sessions)
    python3 dev.py nox ...  any nox command line

It keeps nox and uv in .venv-dev/ (made on first use), then hands over to nox, which builds
one environment per session.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
TOOLS = ROOT / ".venv-dev"
BIN = TOOLS / ("Scripts" if os.name == "nt" else "bin")
REQUIREMENTS = ["nox>=2025.2.9", "uv>=0.5"]


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


def main(argv: list[str]) -> int:
    commands = {"demo": ["-s", "demo"], "test": [], "nox": []}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    ensure_tools()
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    nox = [
        str(BIN / "python"),
        "-m",
        "nox",
        "-f",
        str(ROOT / "noxfile.py"),
        *commands[argv[0]],
        *argv[1:],
    ]
    return subprocess.run(nox, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
