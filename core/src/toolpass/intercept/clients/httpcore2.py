"""httpcore2, the fork of httpcore under httpx2: the hooks of ``_httpcore``."""

from __future__ import annotations

import httpcore2

from toolpass.intercept.clients import Patch
from toolpass.intercept.clients._httpcore import patches_for

DISTRIBUTION = "httpcore2"
TESTED = ">=2.16,<3"


def patches() -> list[Patch]:
    return patches_for(httpcore2)
