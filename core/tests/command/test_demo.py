"""``toolpass demo`` as a user runs it: a subprocess, with no network but 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys


def test_the_demo_shows_the_story_the_live_engine_the_hook_and_the_examples() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolpass.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    story, live = out.split("=== the live engine")
    assert "refused: exfiltration" in story
    # The engine asked the small GitHub: each user's role, and why.
    assert "-> allow: dana has the write role on acme/widgets" in live
    assert "-> deny: rory has the read role on acme/widgets" in live
    # The hook: rory's pull request never arrived, dana's did.
    rory, dana = live.split("▶ propose_fix for ")[1:3]
    assert "Refused by toolpass (not_authorized)" in rory
    assert "GitHub received: GET /repos/acme/widgets/contents/README.md\n" in rory
    assert "POST" not in rory
    assert "opened pull request #1" in dana
    assert "POST /repos/acme/widgets/pulls" in dana
    assert "request pr.create as the user: not_authorized" in live
    assert "python examples/langchain_agent.py" in live
