"""``toolkit.approval`` still offers every name its parts define (the split is a pure move)."""

from __future__ import annotations

import importlib

import pytest
import toolpass.toolkit.approval as approval

MOVED = {
    "approval_preview": ("PREVIEW_LIMIT", "preview_of", "printable", "quoted", "shown_text"),
    "approval_people": ("OUTSIDE_REASON", "PLAN_REASON", "confirms_a_plan_only", "same_person"),
    "approval_request": ("ApprovalRequest", "edited", "pending"),
}


@pytest.mark.parametrize("part", sorted(MOVED))
def test_each_moved_name_is_the_same_object_from_approval(part: str) -> None:
    module = importlib.import_module(f"toolpass.toolkit.{part}")
    for name in MOVED[part]:
        assert getattr(approval, name) is getattr(module, name), name


def test_the_queue_and_its_grant_stay_in_approval() -> None:
    assert approval.ApprovalQueue.__module__ == approval.Grant.__module__ == approval.__name__
    assert approval.DEFAULT_TTL == 15 * 60.0
