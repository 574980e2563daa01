"""What every route-table generator shares: how a table is written."""

from __future__ import annotations

import json
from typing import Any


def dump(data: dict[str, Any]) -> str:
    """The table as JSON with one route a line, so a regeneration's diff reads row by row.

    ``data`` holds ``routes`` and the table's description (``source``, ``generator``, ...),
    written first, in its order.
    """
    head = {k: v for k, v in data.items() if k != "routes"}
    parts = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in head.items()]
    rows = ",\n    ".join(json.dumps(r, ensure_ascii=False) for r in data["routes"])
    return "{\n" + ",\n".join(parts) + ',\n  "routes": [\n    ' + rows + "\n  ]\n}\n"
