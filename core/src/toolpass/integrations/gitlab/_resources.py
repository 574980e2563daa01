"""GitLab's resources: ``project:``, ``group:``, ``branch:``, ``tag:``, ``mr:``, ``issue:``
and ``instance``, each path and ref validated as GitLab names them; protected-ref patterns."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

from toolpass.wire.errors import BadResource

__all__ = ["Target", "branch_matches", "integer", "parse_resource", "valid_branch", "valid_path"]

_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_CONSECUTIVE_SPECIAL = re.compile(r"[._+-]{2}")
_BAD_BRANCH = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed resource."""

    kind: Literal["project", "group", "branch", "tag", "mr", "issue", "instance"]
    path: str
    branch: str | None = None  # the branch, or the tag of a tag: resource
    iid: int | None = None

    @property
    def encoded(self) -> str:
        """The ``:id`` of the API: a number, or the URL-encoded full path."""
        return quote(self.path, safe="")


def parse_resource(resource: str) -> Target:
    """``project:group/sub/name``, ``group:group/sub``, ``branch:group/name@main``,
    ``tag:group/name@v1.0``, ``mr:group/name!12``, ``issue:group/name#34`` (a numeric id may
    replace a path), or ``instance``."""
    if resource == "instance":
        return Target("instance", "")
    kind, sep, rest = resource.partition(":")
    if not sep:
        raise BadResource(f"resource {resource!r} is not kind:path (e.g. project:group/name)")
    branch: str | None = None
    iid: int | None = None
    if kind in ("project", "group"):
        path = rest
    elif kind in ("branch", "tag"):
        path, at, branch = rest.partition("@")
        if not at or not valid_branch(branch):
            raise BadResource(f"resource {resource!r}: expected {kind}:group/project@name")
    elif kind in ("mr", "issue"):
        path, mark, number = rest.rpartition("!" if kind == "mr" else "#")
        if not mark or not number.isascii() or not number.isdigit() or len(number) > 12:
            sign = "!" if kind == "mr" else "#"
            raise BadResource(f"resource {resource!r}: expected {kind}:group/project{sign}iid")
        iid = int(number)
    else:
        raise BadResource(
            f"resource {resource!r}: the kind must be project, group, branch, tag, mr or issue "
            "(or the resource instance)"
        )
    if not valid_path(path):
        raise BadResource(f"resource {resource!r}: {path!r} is not a GitLab path or id")
    return Target(kind, path, branch, iid)  # type: ignore[arg-type]


def valid_path(path: str) -> bool:
    if path.isascii() and path.isdigit():
        return len(path) <= 18
    parts = path.split("/")
    return 0 < len(path) <= 1024 and all(
        _SEGMENT.fullmatch(p)
        and not p.endswith((".git", ".atom"))
        and not _CONSECUTIVE_SPECIAL.search(p)  # GitLab refuses them; ".." never names a path
        for p in parts
    )


def valid_branch(name: str) -> bool:
    return (
        0 < len(name) <= 255
        and not _BAD_BRANCH.search(name)
        and not name.startswith(("-", "/"))
        and not name.endswith(("/", ".", ".lock"))
    )


def branch_matches(pattern: str, branch: str) -> bool:
    """GitLab's protected-ref matching: exact, or ``*`` as any run of characters."""
    if "*" not in pattern:
        return pattern == branch
    regex = ".*?".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, branch, re.DOTALL) is not None


def integer(value: object) -> int | None:
    """An id as GitLab gives it (an int, never a bool); None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
