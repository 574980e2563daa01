"""``toolpass validate`` checks the whole file at once, as ``serve``, ``check`` and
``mcp-proxy`` read it: every problem, each with its file and line and, where a name is
close to a known one, what was meant. The ``store:`` URL names an absolute path, and a store
that cannot be opened is a problem of the file, never an internal error."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from toolpass.cli import main
from toolpass.store import open_store, sqlite_path

GH = """\
  - id: gh
    integration: github
    url: http://127.0.0.1:9
    {token}: env:VALIDATE_GH_TOKEN
    identity: {{mode: template, template: "{{local}}", domains: [example.com]}}
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "toolpass.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def validate(capsys: pytest.CaptureFixture[str], path: str) -> tuple[int, str, list[str]]:
    status = main(["validate", "-config", path])
    out, err = capsys.readouterr()
    return status, out, err.splitlines()


def test_every_problem_at_once_with_its_line_and_what_was_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VALIDATE_GH_TOKEN", "ghp_validate")
    path = write(
        tmp_path,
        "connections:\n"
        + GH.format(token="tokn")
        + "  - id: lab\n    integration: githb\n"
        + "  - id: gh2\n    integration: github\n    url: http://127.0.0.1:9\n"
        + "    token: env:VALIDATE_GH_TOKEN\n    not_found: unknwn\n"
        + f"store: sqlite://{tmp_path}/no/such/folder/state.db\n"
        + "servr: {}\n",
    )
    status, out, problems = validate(capsys, path)
    assert (status, out) == (1, "")
    assert problems == [
        f"toolpass: {path}, line 15: unknown top-level key 'servr' (did you mean 'server'?) "
        "(expected connections, server, mcp, store, mode)",
        f"toolpass: {path}, line 5, connection 'gh', key 'tokn': unknown key "
        "(did you mean 'token'?) " + problems[1].split("(did you mean 'token'?) ")[1],
        f"toolpass: {path}, line 8, connection 'lab', key 'integration': no integration "
        "named 'githb' " + problems[2].split("named 'githb' ")[1],
        f"toolpass: {path}, line 13, connection 'gh2', key 'not_found': must be one of "
        "unknown, deny (did you mean 'unknown'?)",
        f"toolpass: {path}, line 14: 'store': cannot be opened " + problems[4].split("opened ")[1],
    ]
    assert problems[2].endswith("(did you mean 'github'?)")


def test_a_store_that_cannot_be_opened_is_named_with_its_line_by_every_command(
    tmp_path: Path,
) -> None:
    (tmp_path / "not-a-db").write_bytes(b"this is not a database" * 100)
    path = write(tmp_path, f"connections: []\nstore: sqlite:///{tmp_path}/not-a-db\n")
    for argv in (["check", "u", "c", "a", "r"], ["probe"], ["validate"]):
        done = subprocess.run(
            [sys.executable, "-m", "toolpass.cli", *argv, "-config", path],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode in (1, 3), argv
        assert done.stderr.startswith(f"toolpass: {path}, line 2: 'store': cannot be opened ("), (
            argv
        )
        assert "internal error" not in done.stderr


def test_the_readme_store_url_names_an_absolute_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``store: sqlite:///var/lib/toolpass/state.db`` is /var/lib/..., wherever it runs."""
    state = tmp_path / "var" / "state.db"
    state.parent.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = write(tmp_path, f"connections: []\nstore: sqlite://{state}\n")  # three slashes
    status, _, problems = validate(capsys, path)
    assert (status, problems) == (0, [])
    assert state.is_file()
    assert list(elsewhere.iterdir()) == []


def test_a_url_that_names_no_store_says_paths_are_absolute(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "connections: []\nstore: sqlite:/state.db\n")
    status, _, problems = validate(capsys, path)
    assert status == 1
    assert problems[0].startswith(f"toolpass: {path}, line 2: 'store': not a store URL")
    assert "a sqlite path is absolute" in problems[0]


segment = st.text(st.sampled_from("abcxyz_-.0123456789"), min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)


@given(parts=st.lists(segment, min_size=1, max_size=5), slashes=st.integers(3, 5))
def test_a_sqlite_url_always_names_the_same_absolute_file(parts: list[str], slashes: int) -> None:
    path = "/".join(parts)
    found = sqlite_path("sqlite:" + "/" * slashes + path)
    assert found == "/" + path
    assert os.path.isabs(found)


def test_open_store_opens_the_absolute_file(tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path}/state.db")  # sqlite:///tmp/...
    try:
        store.update("k", lambda v: (1, None))
    finally:
        store.close()
    assert (tmp_path / "state.db").is_file()


def test_a_redis_store_without_the_redis_package_is_a_problem_of_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An extra that is not installed is named with the line that needs it and what to
    install, never an internal error."""
    monkeypatch.setitem(sys.modules, "redis", None)  # what an install without the extra sees
    path = write(tmp_path, "connections: []\nstore: redis://127.0.0.1:9/0\n")
    status, out, problems = validate(capsys, path)
    assert (status, out) == (1, "")
    assert problems == [
        f"toolpass: {path}, line 2: 'store': cannot be opened (a Redis store needs the redis "
        "package: pip install 'toolpass-core[redis]')"
    ]
