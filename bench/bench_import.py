"""What ``import toolpass`` costs, in fresh interpreters, beside a bare interpreter and
beside importing what used to load eagerly (the engine, and with it ``http.client``).

    python bench/bench_import.py
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

ROUNDS = 15
VARIANTS = {
    "bare interpreter": "pass",
    "import toolpass": "import toolpass",
    "import toolpass + engine": "import toolpass, toolpass.engine",
    "import toolpass + asyncio": "import toolpass, asyncio",
}

# Bytecode is written (a first round compiles it), as it is for an installed package.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def seconds(code: str) -> float:
    """CPU seconds (user and system) of a fresh interpreter running ``code``: on a shared
    machine, time spent waiting for a core is not counted."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True, env=ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    best = dict.fromkeys(VARIANTS, float("inf"))
    for _ in range(ROUNDS):  # interleaved, so load that drifts hits every variant alike
        for name, code in VARIANTS.items():
            best[name] = min(best[name], seconds(code))
    bare = best["bare interpreter"]
    print(f"fresh interpreter, CPU time, best of {ROUNDS}")
    for name, took in best.items():
        print(f"  {name:<28}{took * 1e3:7.1f} ms  (+{(took - bare) * 1e3:5.1f} ms)")


if __name__ == "__main__":
    main()
