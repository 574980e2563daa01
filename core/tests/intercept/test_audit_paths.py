"""A credential in a request's path stays out of the audit record (issue #8)."""

from __future__ import annotations

import json
from typing import Any

import requests
from fakes.github import FakeGitHub
from toolpass import Session, Toolkit, as_agent

LEAKED = "ghp_" + "a1B2c3D4e5" * 4


def test_a_credential_in_a_request_path_is_redacted_in_the_audit_actions(
    github: FakeGitHub, kit: Toolkit, events: list[Any]
) -> None:
    @kit.tool()
    def fetch() -> int:
        with as_agent():
            return requests.get(f"{github.api_url}/repos/acme/{LEAKED}").status_code

    with Session("dana@example.com").active():
        fetch()
    record = json.dumps(events[-1].to_dict(), default=repr)
    assert events[-1].actions, "the request was seen"
    assert LEAKED not in record
    assert "[REDACTED]" in record
