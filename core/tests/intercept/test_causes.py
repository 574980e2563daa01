"""A request refused because the user maps to no one in the system is an operator's to fix
(not_configured), not "try again later" (issue #9)."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from fakes.github import FakeGitHub
from toolpass import Session, Toolkit
from toolpass.intercept import ActionRefused

from .conftest import TOKEN, posted


def test_a_request_for_a_user_who_maps_to_no_one_is_not_configured(
    kit: Toolkit, github: FakeGitHub, events: list[Any]
) -> None:
    @kit.tool()
    def open_pr() -> int:
        return requests.post(
            f"{github.api_url}/repos/acme/widgets/pulls",
            json={"title": "fix", "head": "fix", "base": "main"},
            headers={"Authorization": f"token {TOKEN}"},
            timeout=5,
        ).status_code

    with Session("zed@example.com").active(), pytest.raises(ActionRefused) as info:
        open_pr()
    assert info.value.code == "not_configured"
    assert "map their account" in info.value.message
    assert posted(github) == []
    assert events[-1].code == "not_configured"
