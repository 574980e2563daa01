"""httpx2, a fork of httpx with the same internals (the PagerDuty client sends with it):
the hooks of ``_httpx``."""

from __future__ import annotations

import httpx2

from toolpass.intercept.clients import Patch
from toolpass.intercept.clients._httpx import patches_for

DISTRIBUTION = "httpx2"
TESTED = ">=2.16,<3"


def patches() -> list[Patch]:
    return patches_for(httpx2)
