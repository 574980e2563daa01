"""Observe mode and a request sent by a thread that outlives its call: it is sent, and its
own audit event says what would have been refused (the call's event is written already)."""

from __future__ import annotations

import threading
from typing import Any

import requests
from fakes.github import FakeGitHub
from toolpass import Session, Toolkit

from .conftest import TOKEN


def test_a_late_request_of_an_observed_call_is_sent_and_audited_apart(
    kit: Toolkit, github: FakeGitHub, events: list[Any]
) -> None:
    kit.configure(mode="observe")
    returned, done = threading.Event(), threading.Event()
    url = f"{github.api_url}/repos/acme/widgets"

    def later() -> None:
        assert returned.wait(5)  # the call has returned (its event is written)
        requests.delete(url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
        done.set()

    @kit.secured_tool(effect="read")
    def start() -> str:
        threading.Thread(target=later).start()
        return "started"

    with Session("rory@example.com").active():
        assert start() == "started"
    returned.set()
    assert done.wait(5)
    assert [r.method for r in github.requests if r.method == "DELETE"] == ["DELETE"]
    call, late = events
    assert call.would_refuse == ()
    assert (late.tool, late.outcome, late.code) == ("start", "ok", None)
    assert [w["code"] for w in late.would_refuse] == ["effect_mismatch"]
    assert late.to_dict()["mode"] == "observe"
