"""``toolpass probe`` over many connections says how far it got: a line per connection on
stderr as each finishes, on a terminal or with ``--progress``; never into a pipe unasked."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.github import FakeGitHub

TOKEN = "ghp_progress"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        gh.add_token(TOKEN)
        yield gh


@pytest.fixture
def config(tmp_path: Path, github: FakeGitHub) -> str:
    def connection(cid: str, token: str) -> str:
        return textwrap.dedent(f"""\
              - id: {cid}
                integration: github
                url: {github.api_url}
                token: env:{token}
                identity: {{mode: template, template: "{{local}}", domains: [example.com]}}
            """)

    path = tmp_path / "toolpass.yaml"
    path.write_text(
        "connections:\n"
        + connection("first", "PROGRESS_GOOD")
        + connection("second", "PROGRESS_GOOD")
        + connection("broken", "PROGRESS_BAD")
    )
    return str(path)


def probe(config: str, *options: str, stderr: int = subprocess.PIPE) -> subprocess.Popen[str]:
    env = {**os.environ, "PROGRESS_GOOD": TOKEN, "PROGRESS_BAD": "ghp_nobody_has_this"}
    return subprocess.Popen(
        [sys.executable, "-m", "toolpass.cli", "probe", "-config", config, *options],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=env,
    )


LINE = r"\[{n}/3\] {cid}: {verdict} \(\d+\.\d s\)"


def expected(text: str) -> None:
    lines = text.splitlines()
    assert len(lines) == 3, text
    for n, (cid, verdict) in enumerate((("first", "ok"), ("second", "ok"), ("broken", "FAILED"))):
        assert re.fullmatch(LINE.format(n=n + 1, cid=cid, verdict=verdict), lines[n]), lines[n]


def test_progress_on_request(config: str) -> None:
    proc = probe(config, "--progress")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1  # one connection failed
    expected(err)
    assert out.splitlines()[0] == "first: ok: token accepted; 4999/5000 requests left"
    assert out.splitlines()[2].startswith("broken: FAILED:")


def test_no_progress_into_a_pipe_unasked(config: str) -> None:
    proc = probe(config)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert err == ""
    assert len(out.splitlines()) == 3


def test_progress_on_a_terminal(config: str) -> None:
    main, tty = pty.openpty()
    try:
        proc = probe(config, stderr=tty)
        os.close(tty)
        out, _ = proc.communicate(timeout=60)
        seen = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal's other end is closed: all is read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(main)
    assert proc.returncode == 1
    assert len(out.splitlines()) == 3
    expected(seen.decode().replace("\r\n", "\n"))
