"""Long route-table generations say how far they have come, and only where someone reads."""

from __future__ import annotations

import io

from toolpass.integrations._generate.table import progress


def test_progress_counts_what_is_done_and_ends_its_line() -> None:
    out = io.StringIO()
    assert list(progress([("ec2", 1), ("s3", 2)], "services", out=out)) == [("ec2", 1), ("s3", 2)]
    text = out.getvalue()
    assert "[1/2] services: ec2" in text
    assert "[2/2] services: s3" in text
    assert text.endswith("\n")


def test_progress_is_silent_into_a_pipe(capsys, monkeypatch) -> None:
    monkeypatch.delenv("TOOLPASS_PROGRESS", raising=False)
    assert list(progress(["a", "b"], "documents")) == ["a", "b"]
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("TOOLPASS_PROGRESS", "1")
    list(progress(["a"], "documents"))
    assert "[1/1] documents: a" in capsys.readouterr().err
