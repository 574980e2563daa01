"""Secrets stay out of audit records and approval previews (issue #8); a preview shows the
whole value an approval binds, or says plainly what it left out."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from toolpass import ApprovalPending, ApprovalQueue, Session, Toolkit
from toolpass.toolkit.approval import PREVIEW_LIMIT

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5" * 4
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def _record(events: list[Any]) -> str:
    return json.dumps(events[-1].to_dict(), default=repr)


@pytest.mark.parametrize(
    "arguments",
    [
        {"password": "hunter2-hunter2"},
        {"config": {"db": {"Secret": "s-hunter2-hunter2"}}},
        {"api_key": "k-1234567890"},
        {"note": f"use {GITHUB_TOKEN} for the push"},
        {"headers": [("X-Amz", f"key_{AWS_KEY}")]},
    ],
    ids=["password", "nested secret name", "api_key", "token in text", "glued key"],
)
def test_secret_arguments_are_redacted_in_audit_events(
    drive: Any, kit: Toolkit, session: Session, events: list[Any], arguments: dict[str, Any]
) -> None:
    tool = drive.tool(kit, lambda **kw: "ok", effect="read")
    assert drive.call(tool, **arguments) == "ok"
    record = _record(events)
    for secret in ("hunter2-hunter2", "k-1234567890", GITHUB_TOKEN, AWS_KEY):
        assert secret not in record
    assert "[REDACTED]" in record


def test_a_preview_shows_a_long_value_whole_or_says_what_it_left_out(
    drive: Any, make_kit: Any, session: Session, events: list[Any]
) -> None:
    queue = ApprovalQueue()
    kit = make_kit(approver=queue)
    tool = drive.tool(kit, lambda body, short: "sent", approve=True)
    body = "line of a long diff\n" * 500
    with pytest.raises(ApprovalPending) as info:
        drive.call(tool, body, "short value")
    request = info.value.request
    preview = request.preview
    assert "short = 'short value'" in preview  # short values whole
    digest = hashlib.sha256(repr(body).encode()).hexdigest()[:16]
    assert digest in preview
    assert str(len(repr(body))) in preview
    assert "request.arguments['body']" in preview
    assert repr(body)[:PREVIEW_LIMIT] in preview
    assert request.arguments["body"] == body  # the whole value, for whoever decides
    assert events[-1].to_dict()["preview"] == preview


def test_a_preview_never_shows_a_secret(drive: Any, make_kit: Any, session: Session) -> None:
    queue = ApprovalQueue()
    kit = make_kit(approver=queue)
    tool = drive.tool(kit, lambda message, token: "sent", sends_out=True)
    with pytest.raises(ApprovalPending) as info:
        drive.call(tool, f"here: {GITHUB_TOKEN}", "tok-123456789")
    preview = info.value.request.preview
    assert GITHUB_TOKEN not in preview
    assert "tok-123456789" not in preview
    assert "a GitHub token, not shown" in preview
    assert "a secret, not shown" in preview
    assert "request.arguments['message']" in preview
