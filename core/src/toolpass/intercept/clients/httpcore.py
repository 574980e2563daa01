"""httpcore: the hooks of ``_httpcore``."""

from __future__ import annotations

import httpcore

from toolpass.intercept.clients import Patch
from toolpass.intercept.clients._httpcore import patches_for

DISTRIBUTION = "httpcore"
TESTED = ">=1.0,<2"


def patches() -> list[Patch]:
    return patches_for(httpcore)
