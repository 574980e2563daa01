"""The pinned sources of the route tables no package registry ships
(integrations/_generate/sources.py): every such table is pinned at the commit it names, a
copy of another commit fails its regeneration, and a missing copy skips it saying why (the
routes session counts those skips apart from others)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from toolpass.integrations._generate.sources import (
    PINNED,
    UNSHIPPED,
    object_id,
    pinned_source,
)

INTEGRATIONS = Path(__file__).resolve().parents[2] / "src/toolpass/integrations"
#: How a table read from a registry package, or written by hand, names its source.
NOT_PINNED = ("PyPI ", "npm ", "curated")


def table_sources() -> dict[str, str]:
    """Each system's route table's "source"."""
    found = {}
    for table in INTEGRATIONS.glob("*/routes.json*"):
        opener = gzip.open if table.suffix == ".gz" else open
        with opener(table, "rt") as file:
            found[table.parent.name] = json.load(file)["source"]
    return found


def test_every_table_read_from_a_repository_is_pinned_at_the_commit_it_names() -> None:
    sources = table_sources()
    assert {name for name, source in sources.items() if not source.startswith(NOT_PINNED)} == (
        set(PINNED)
    )
    for name, pin in PINNED.items():
        assert pin.repository in sources[name], name
        assert pin.commit[:12] in sources[name], name


@pytest.fixture
def no_copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLPASS_ROUTE_SOURCES", str(tmp_path / "sources"))
    return tmp_path / "sources"


@pytest.mark.parametrize("ci", [None, "", "false", "true", "1"])
def test_a_missing_copy_skips_saying_it_is_a_source_no_registry_ships(
    no_copies: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    expected = f"^{UNSHIPPED}: argoproj/argo-cd assets/swagger.json in "
    with pytest.raises(pytest.skip.Exception, match=expected):
        pinned_source("argocd", tmp_path / "out")


def test_a_copy_of_another_commit_fails_anywhere(
    no_copies: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    copy = no_copies / "argocd/assets/swagger.json.gz"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(gzip.compress(b'{"paths": {}}'))
    with pytest.raises(AssertionError, match="not argoproj/argo-cd at 37ee0097cf85"):
        pinned_source("argocd", tmp_path / "out")


#: Names that sort differently once a folder's gets its "/" ("a." < "a/" < "a0").
names = st.text("aB.0-", min_size=1, max_size=3).filter(lambda n: n not in (".", ".."))
trees = st.recursive(
    st.binary(max_size=40),
    lambda children: st.dictionaries(names, children, min_size=1, max_size=4),
    max_leaves=8,
)


def write(path: Path, tree: object) -> None:
    """``tree`` as files (bytes) and folders (dicts) at ``path``."""
    if isinstance(tree, bytes):
        path.write_bytes(tree)
        return
    assert isinstance(tree, dict)
    path.mkdir()
    for name, child in tree.items():
        write(path / name, child)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tree=st.dictionaries(names, trees, min_size=1, max_size=4))
@example(tree={"a.": b"", "a": {"x": b"1"}, "a0": b"2"})
def test_the_object_id_is_the_one_git_computes(
    tmp_path_factory: pytest.TempPathFactory, tree: dict[str, object]
) -> None:
    root = tmp_path_factory.mktemp("tree")
    work = root / "work"
    write(work, tree)
    git = ["git", "-C", str(work), "-c", "core.autocrlf=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A", "."], check=True)
    written = subprocess.run([*git, "write-tree"], capture_output=True, text=True, check=True)
    shutil.rmtree(work / ".git")
    assert object_id(work) == written.stdout.strip()


def test_the_routes_session_counts_these_skips_by_the_same_words() -> None:
    noxfile = (INTEGRATIONS.parents[3] / "noxfile.py").read_text()
    assert f'UNSHIPPED = "{UNSHIPPED}"' in noxfile
