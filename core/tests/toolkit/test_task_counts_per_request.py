"""A task's call counts belong to its request: a later request of a session kept under the
same id (a conversation's next turn) counts its own calls, and within one request the count
holds across processes sharing the store."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolpass import Session, TaskScope, Toolkit, ToolRefused
from toolpass.store import open_store

USER = "dana@example.com"


def test_each_request_of_a_kept_session_counts_its_own_calls(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/state.db")
    kit = Toolkit(audit=[lambda event: None], outside_task="refuse")
    deleted: list[str] = []

    @kit.secured_tool(effect="destructive")
    def delete_file(path: str) -> str:
        deleted.append(path)
        return "deleted"

    scope = TaskScope(tools={"delete_file"}, calls={"delete_file": 1})

    def turn(request: str) -> Session:
        return Session(USER, id="conversation-7", store=store, request=request, task=scope)

    with turn("delete the old draft").active():
        delete_file("draft.md")
        with pytest.raises(ToolRefused) as info:
            delete_file("notes.md")  # one call this request
        assert info.value.code == "outside_task"
    # The same request, another process: its count holds.
    with turn("delete the old draft").active(), pytest.raises(ToolRefused):
        delete_file("notes.md")
    with turn("now delete the copy").active():  # the next turn: its own count
        delete_file("copy.md")
    assert deleted == ["draft.md", "copy.md"]
