"""What every route-table generator shares: how a table is written, and how a long
generation shows its progress."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO, TypeVar

T = TypeVar("T")


def dump(data: dict[str, Any]) -> str:
    """The table as JSON with one route a line, so a regeneration's diff reads row by row.

    ``data`` holds ``routes`` and the table's description (``source``, ``generator``, ...),
    written first, in its order.
    """
    head = {k: v for k, v in data.items() if k != "routes"}
    parts = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in head.items()]
    rows = ",\n    ".join(json.dumps(r, ensure_ascii=False) for r in data["routes"])
    return "{\n" + ",\n".join(parts) + ',\n  "routes": [\n    ' + rows + "\n  ]\n}\n"


def progress(items: Sequence[T], what: str, *, out: TextIO | None = None) -> Iterator[T]:
    """``items``, saying on stderr how far a long generation has come (``[12/410]
    services: ec2``) when stderr is a terminal or ``TOOLPASS_PROGRESS=1``; silent otherwise."""
    stream = out or sys.stderr
    shown = out is not None or stream.isatty() or os.environ.get("TOOLPASS_PROGRESS") == "1"
    for index, item in enumerate(items, 1):
        if shown:
            name = item[0] if isinstance(item, tuple) else item
            stream.write(f"\r[{index}/{len(items)}] {what}: {name}\033[K")
            stream.flush()
        yield item
    if shown and items:
        stream.write("\n")
