"""httpx: the hooks of ``_httpx``."""

from __future__ import annotations

import httpx

from toolpass.intercept.clients import Patch
from toolpass.intercept.clients._httpx import patches_for

DISTRIBUTION = "httpx"
TESTED = ">=0.27,<1"


def patches() -> list[Patch]:
    return patches_for(httpx)
