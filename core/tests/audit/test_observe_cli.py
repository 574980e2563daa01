"""``toolpass audit summary`` and ``audit filter --would-refuse`` over an audit file written
by observed calls (and enforced ones), through the command's ``main`` (test_read_cli)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolpass import JsonlSink, Session, Toolkit, ToolRefused

from .test_read_cli import toolpass


@pytest.fixture
def audit(tmp_path: Path) -> Path:
    """Six calls: four observed (three of which enforcement would refuse), two enforced."""
    path = tmp_path / "audit.jsonl"
    kit = Toolkit(audit=JsonlSink(path), mode="observe", limits={"destructive": 1})

    @kit.secured_tool(effect="write", authorize=lambda call: call.user == "dana@example.com")
    def merge_pr(repo: str) -> str:
        return "merged"

    @kit.secured_tool(effect="destructive", scope={"name": "tmp-*"})
    def delete_branch(name: str) -> str:
        return "gone"

    @kit.secured_tool(effect="write", mode="enforce", scope={"repo": "acme/*"})
    def tag(repo: str) -> str:
        return "tagged"

    with Session("dana@example.com").active():
        merge_pr("acme/app")  # nothing to refuse
        delete_branch("tmp-1")  # nothing to refuse
        delete_branch("main")  # out_of_scope, limit_exceeded
        tag("acme/app")
    with Session("rory@example.com").active():
        merge_pr("acme/app")  # not_authorized
        with pytest.raises(ToolRefused):
            tag("other/app")  # enforced: refused
    return path


def test_summary_shows_what_enforcement_would_have_refused(audit: Path) -> None:
    done = toolpass("summary", "--json", str(audit))
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)
    assert counts["events"] == 6
    assert counts["outcome"] == [
        {"name": "refused", "count": 1},
        {"name": "ok", "count": 5},
    ]
    assert counts["would_refuse"] == {
        "events": 2,
        "code": [
            {"name": "limit_exceeded", "count": 1},
            {"name": "not_authorized", "count": 1},
            {"name": "out_of_scope", "count": 1},
        ],
        "tool": [{"name": "delete_branch", "count": 1}, {"name": "merge_pr", "count": 1}],
        "user": [
            {"name": "dana@example.com", "count": 1},
            {"name": "rory@example.com", "count": 1},
        ],
    }
    text = toolpass("summary", str(audit)).stdout
    assert "would refuse (observe mode): 2 events" in text
    block = text.split("would refuse (observe mode)")[1]
    assert "not_authorized" in block
    assert "rory@example.com" in block


def test_filter_selects_the_calls_that_would_have_been_refused(audit: Path) -> None:
    def found(*options: str) -> list[tuple[str, str]]:
        done = toolpass("filter", "--json", "--would-refuse", *options, str(audit))
        assert done.returncode in (0, 1), done.stderr
        return [(r["tool"], r["user"]) for r in map(json.loads, done.stdout.splitlines())]

    assert found() == [("delete_branch", "dana@example.com"), ("merge_pr", "rory@example.com")]
    assert found("--code", "not_authorized") == [("merge_pr", "rory@example.com")]
    assert found("--code", "limit_exceeded", "--user", "dana@*") == [
        ("delete_branch", "dana@example.com")
    ]
    assert found("--code", "approval_denied") == []
    lines = toolpass("filter", "--would-refuse", str(audit)).stdout.splitlines()
    assert "delete_branch ok (would refuse out_of_scope, limit_exceeded)" in lines[0]
