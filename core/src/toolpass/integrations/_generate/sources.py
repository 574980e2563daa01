"""The route tables' sources that no package registry ships, pinned by git object id.

A table generated from files of a public repository (not of a PyPI or npm package) names
that repository and commit in its "source". Its regeneration test reads a copy of exactly
those files from the pinned sources folder: ``<folder>/<system>/<path in the repository>``,
each file gzip-compressed (``.gz`` added). The folder is ``TOOLPASS_ROUTE_SOURCES``, else
``route-sources`` in the ``shared/`` folder beside the checkout. The copy must hash to the
git object id pinned here (what ``git rev-parse <commit>:<path>`` prints), so a copy of
another commit fails the test. The copies are not in this repository (files fetched from
another repository are not committed here), so a missing copy skips its test with a reason
starting :data:`UNSHIPPED`: the routes session counts those skips, and fails on any other
skip in CI, and on these too when ``TOOLPASS_ROUTE_SOURCES`` names a folder.

To move a table to a newer commit: copy the files of that commit into the folder, pin the
commit and the object id here, run the system's generator and its tests.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

REPO = Path(__file__).resolve().parents[5]


@dataclass(frozen=True)
class Pin:
    """A file or folder of a public GitHub repository at one commit."""

    repository: str
    commit: str
    path: str
    object_id: str


PINNED = {
    "argocd": Pin(
        "argoproj/argo-cd",
        "37ee0097cf851bc2dd7665fc081bbce61a7e836e",
        "assets/swagger.json",
        "7c73a9e3e10c0270f672251d70e00a11366fa4ca",
    ),
    "linear": Pin(
        "linear/linear",
        "8335e09a17dd8aa351dace3d05a94a55e78dad2a",
        "packages/sdk/src/schema.graphql",
        "3934265499c95f1d6b8e4d5c695ad0b6f1d52fec",
    ),
    "pagerduty": Pin(
        "PagerDuty/api-schema",
        "91a06fb3c64b0ab2b2bd6c485d12b327dfb55c18",
        "reference/REST/openapiv3.json",
        "c2169428cd2f83bd42e547098e8afdf512f05fc4",
    ),
    "snowflake": Pin(
        "snowflakedb/snowflake-rest-api-specs",
        "42671a90c8d81760351a956f68e41ad228b1c93c",
        "specifications",
        "1f0d64380617a440ba4ce528e6c631103621ad7e",
    ),
    "zendesk": Pin(
        "api-evangelist/zendesk",
        "aaa548006c2a565214393c59f5efd043897d839b",
        "openapi/_original",
        "b97b3e15bafdfb9404bf22f602184a157b670c2c",
    ),
}


#: How the skip of a regeneration whose pinned copy is not on this machine begins.
UNSHIPPED = "no copy of a source no registry ships"


def folder() -> Path:
    """Where the pinned copies are."""
    given = os.environ.get("TOOLPASS_ROUTE_SOURCES")
    return Path(given) if given else REPO.parent / "shared" / "route-sources"


def pinned_source(system: str, into: Path) -> Path:
    """``system``'s pinned file or folder, unpacked under ``into`` and checked against its
    pin; a test that needs it is skipped (:data:`UNSHIPPED`) when there is no copy."""
    pin = PINNED[system]
    copies = folder() / system
    found = sorted(copies.glob("**/*.gz"))
    if not found:
        unavailable(f"{pin.repository} {pin.path} in {copies}")
    for copy in found:
        target = into / copy.relative_to(copies).with_suffix("")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress(copy.read_bytes()))
    unpacked = into / pin.path
    got = object_id(unpacked) if unpacked.exists() else "nothing"
    assert got == pin.object_id, (
        f"{copies} holds {pin.path} as {got}, not {pin.repository} at {pin.commit[:12]} "
        f"({pin.object_id}): copy that commit's files, or pin the new commit and regenerate"
    )
    return unpacked


def unavailable(reason: str) -> NoReturn:
    """Skip a regeneration whose pinned copy is not on this machine, saying so
    (:data:`UNSHIPPED`): the routes session counts these skips apart from any other."""
    import pytest

    pytest.skip(f"{UNSHIPPED}: {reason}")


def object_id(path: Path) -> str:
    """The git object id of a file (a blob) or a folder (a tree), as ``git hash-object`` /
    ``git write-tree`` compute it."""
    if path.is_file():
        return _hashed(b"blob", path.read_bytes())
    entries = sorted(path.iterdir(), key=_tree_order)
    body = b"".join(
        (b"40000 " if entry.is_dir() else b"100644 ")
        + entry.name.encode()
        + b"\0"
        + bytes.fromhex(object_id(entry))
        for entry in entries
    )
    return _hashed(b"tree", body)


def _tree_order(entry: Path) -> bytes:
    """Git sorts a tree's entries by name, a folder's name as if it ended in "/"."""
    return entry.name.encode() + (b"/" if entry.is_dir() else b"")


def _hashed(kind: bytes, content: bytes) -> str:
    header = kind + b" " + str(len(content)).encode() + b"\0"
    return hashlib.sha1(header + content, usedforsecurity=False).hexdigest()
