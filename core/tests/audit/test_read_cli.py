"""``toolpass audit tail | filter | summary`` over audit files the pipeline itself wrote:
the command's ``main`` with its output and exit status, and ``tail --follow`` as a real
command in its own process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from toolpass import JsonlSink, Session, Toolkit, ToolRefused
from toolpass.cli import main

SECRET = "s3cr3t-password-value"


def write_audit(path: Path) -> None:
    """Seven calls by two users through real secured tools, audited to ``path``."""
    kit = Toolkit(audit=JsonlSink(path), limits={"destructive": 1})

    @kit.secured_tool(effect="read")
    def read_issue(repo: str, password: str = "") -> str:
        return "text"

    @kit.secured_tool(effect="write", authorize=lambda call: call.user == "dana@example.com")
    def merge_pr(repo: str) -> str:
        return "merged"

    @kit.secured_tool(effect="destructive")
    def delete_branch(name: str) -> str:
        return "gone"

    def attempt(fn: object, *args: object, **kwargs: object) -> None:
        with contextlib.suppress(ToolRefused):
            fn(*args, **kwargs)  # type: ignore[operator]

    with Session("dana@example.com").active():
        attempt(read_issue, "acme/app", password=SECRET)
        attempt(merge_pr, "acme/app")
        attempt(delete_branch, "old")
        attempt(delete_branch, "older")  # limit_exceeded
    with Session("rory@example.com").active():
        attempt(read_issue, "acme/app")
        attempt(merge_pr, "acme/app")  # not_authorized
        attempt(merge_pr, "acme/other")  # not_authorized


@pytest.fixture
def audit(tmp_path: Path) -> Path:
    path = tmp_path / "audit.jsonl"
    write_audit(path)
    assert len(path.read_text().splitlines()) == 7
    return path


def toolpass(*argv: str) -> subprocess.CompletedProcess[str]:
    """``toolpass audit ARGV``: what the command prints and its exit status (its ``main``,
    in this process: a new one would spend most of its time importing)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(["audit", *argv])
        except SystemExit as exit:  # argparse's own errors
            status = exit.code if isinstance(exit.code, int) else 1
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


def test_tail_prints_the_last_events_readably(audit: Path) -> None:
    done = toolpass("tail", "-n", "3", str(audit))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    assert " toolpass: rory@example.com read_issue ok " in lines[0]
    assert "rory@example.com merge_pr refused not_authorized" in lines[1]
    assert done.stderr == ""
    whole = toolpass("tail", "-n", "100", str(audit))
    assert len(whole.stdout.splitlines()) == 7
    assert SECRET not in whole.stdout


def test_filter_by_user_code_tool_and_since(audit: Path) -> None:
    def tools(*options: str) -> list[str]:
        done = toolpass("filter", "--json", *options, str(audit))
        assert done.returncode in (0, 1), done.stderr
        return [json.loads(line)["tool"] for line in done.stdout.splitlines()]

    assert tools("--user", "rory@example.com") == ["read_issue", "merge_pr", "merge_pr"]
    assert tools("--code", "not_authorized") == ["merge_pr", "merge_pr"]
    assert tools("--code", "limit_exceeded") == ["delete_branch"]
    assert tools("--code", "ok", "--user", "dana@*") == ["read_issue", "merge_pr", "delete_branch"]
    assert tools("--tool", "merge_*", "--outcome", "ok") == ["merge_pr"]
    assert len(tools("--since", "15m")) == 7
    assert tools("--since", "2999-01-01T00:00:00Z") == []
    assert len(tools("--since", "2000-01-01T00:00:00+02:00")) == 7


def test_filter_exit_status_and_a_bad_since(audit: Path) -> None:
    assert toolpass("filter", "--user", "nobody", str(audit)).returncode == 1
    bad = toolpass("filter", "--since", "yesterday", str(audit))
    assert bad.returncode == 3
    assert "'yesterday' is neither an ISO-8601 time" in bad.stderr
    assert bad.stderr.count("\n") == 1  # one line, no traceback
    missing = toolpass("summary", str(audit.parent / "nope.jsonl"))
    assert missing.returncode == 3
    assert "cannot read" in missing.stderr
    assert "nope.jsonl" in missing.stderr


def test_summary_counts_with_refusals_first(audit: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    write_audit(other)
    done = toolpass("summary", "--json", str(audit), str(other))
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)
    assert counts["events"] == 14
    assert counts["outcome"] == [
        {"name": "refused", "count": 6},
        {"name": "ok", "count": 8},
    ]
    assert counts["code"][:2] == [
        {"name": "not_authorized", "count": 4},
        {"name": "limit_exceeded", "count": 2},
    ]
    assert counts["code"][-1] == {"name": "ok", "count": 8}
    assert counts["tool"][0] == {"name": "merge_pr", "count": 6, "not_ok": 4}
    assert counts["user"][0] == {"name": "rory@example.com", "count": 6, "not_ok": 4}
    text = toolpass("summary", str(audit)).stdout
    assert text.startswith("7 events\n")
    assert "  merge_pr " in text
    assert "(2 not ok)" in text


def test_lines_that_are_not_events_and_a_torn_last_line_are_skipped_and_counted(
    audit: Path,
) -> None:
    with audit.open("a") as f:
        f.write("INFO something else logged here\n\n")
        f.write('{"not": "an event"}\n[1, 2]\n')
        f.write(audit.read_text().splitlines()[0][:40])  # a write in progress
    done = toolpass("summary", "--json", str(audit))
    assert done.returncode == 0
    assert json.loads(done.stdout)["events"] == 7
    assert done.stderr.splitlines() == [
        f"toolpass: skipped 3 lines that are not audit events ({audit}:8, {audit}:10, {audit}:11)",
        "toolpass: left out 1 torn last line(s) (a write in progress?)",
    ]
    assert toolpass("filter", "--user", "dana@example.com", str(audit)).returncode == 0


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.put(line)


def test_tail_follow_prints_events_as_the_pipeline_writes_them(audit: Path) -> None:
    with audit.open("a") as f:
        f.write('{"tool": "torn_tool", "outcome": "ok", "us')  # completed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolpass.cli", "audit", "tail", "-n", "1", "--follow", str(audit)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, seen), daemon=True).start()

    def next_line() -> str:
        return seen.get(timeout=30)

    try:
        assert "merge_pr refused not_authorized" in next_line()
        time.sleep(0.5)  # the follower is at the end of the file now
        with audit.open("a") as f:
            f.write('er": "lee"}\n')
        assert " toolpass: lee torn_tool ok" in next_line()
        write_audit(audit)  # seven more calls, appended by the pipeline
        got = [next_line() for _ in range(7)]
        assert "dana@example.com read_issue ok" in got[0]
        assert "rory@example.com merge_pr refused not_authorized" in got[6]
        os.replace(audit, audit.with_suffix(".1"))  # rotated: a new file takes its place
        write_audit(audit)
        assert "dana@example.com read_issue ok" in next_line()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
