"""Where events go when no sink is named: a readable line on stderr in development, JSON
through logging once the application configures it, never both; ``TOOLPASS_AUDIT`` switches.

Each case runs a real program in a fresh interpreter, so nothing of pytest's own logging
set-up is in the way."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

SECRET = "hunter2-very-secret"

PROGRAM = textwrap.dedent(f"""\
    import logging, sys
    from toolpass import Session, Toolkit, ToolRefused

    if "logging" in sys.argv:
        logging.basicConfig(level=logging.INFO, format="LOG %(name)s %(message)s")
    kit = Toolkit()

    @kit.secured_tool(effect="read")
    def read_issue(repo: str, password: str) -> str:
        return "fine"

    @kit.secured_tool(effect="write", authorize=lambda call: False)
    def close_issue(repo: str) -> str:
        return "closed"

    with Session("dana@example.com").active():
        read_issue("acme/app", password="{SECRET}")
        try:
            close_issue("acme/app\\nFAKE LINE")
        except ToolRefused:
            pass
    print("done")
""")

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


def run(*args: str, mode: str | None = None) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TOOLPASS_AUDIT"}
    if mode is not None:
        env["TOOLPASS_AUDIT"] = mode
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert done.stdout == "done\n"  # the audit never writes to stdout
    assert SECRET not in done.stderr
    return done.stdout, done.stderr


def test_without_logging_one_readable_line_per_call_on_stderr() -> None:
    _, err = run()
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert re.fullmatch(ISO + r" toolpass: dana@example\.com read_issue ok \([\d.]+ ms\)", lines[0])
    assert re.fullmatch(
        ISO + r" toolpass: dana@example\.com close_issue refused not_authorized \([\d.]+ ms\)"
        r": authorization: deny",
        lines[1],
    ), lines[1]


@pytest.mark.parametrize("mode", [None, "auto", "json"])
def test_with_logging_configured_events_go_through_logging_once(mode: str | None) -> None:
    _, err = run("logging", mode=mode)
    lines = err.splitlines()
    assert len(lines) == 2, err  # not also on stderr directly
    assert all(line.startswith("LOG toolpass.audit {") for line in lines)
    records = [json.loads(line.removeprefix("LOG toolpass.audit ")) for line in lines]
    assert [(r["tool"], r["outcome"], r["code"]) for r in records] == [
        ("read_issue", "ok", None),
        ("close_issue", "refused", "not_authorized"),
    ]
    assert records[0]["arguments"]["password"] == "[REDACTED]"
    assert re.fullmatch(ISO, records[0]["time"])


def test_text_mode_through_logging_is_the_readable_line() -> None:
    _, err = run("logging", mode="text")
    lines = err.splitlines()
    assert len(lines) == 2, err
    expected = "LOG toolpass.audit " + ISO + " toolpass: dana@example.com read_issue ok"
    assert re.match(expected, lines[0])


def test_json_mode_without_logging_writes_json_lines_to_stderr() -> None:
    _, err = run(mode="json")
    records = [json.loads(line) for line in err.splitlines()]
    assert [r["outcome"] for r in records] == ["ok", "refused"]
    assert records[1]["arguments"] == {"repo": "acme/app\nFAKE LINE"}


def test_off_prints_nothing() -> None:
    assert run(mode="off")[1] == ""
    assert run("logging", mode="off")[1] == ""


def test_an_unknown_mode_warns_once_and_keeps_auditing() -> None:
    _, err = run(mode="loud")
    lines = err.splitlines()
    assert len(lines) == 3, err
    assert "TOOLPASS_AUDIT='loud'" in lines[0]
    assert "read_issue ok" in lines[1]
    assert "close_issue refused" in lines[2]


def test_a_line_cannot_be_split_or_forged_by_what_the_call_carries() -> None:
    from toolpass.outcome.audit_text import line

    record = {
        "time": "2026-01-01T00:00:00.000Z",
        "user": "eve\nforged",
        "tool": "t\x1b[31m",
        "outcome": "refused",
        "code": "check_error",
        "detail": "boom\r\n" + "x" * 400,
    }
    text = line(record)
    assert "\n" not in text
    assert "\r" not in text
    assert "\x1b" not in text
    assert "eve\\nforged" in text
    assert "t\\x1b[31m" in text
    assert text.endswith("...")
    assert len(text) < 300
