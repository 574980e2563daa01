"""The request hook: every HTTP request a tool's body sends, checked before it leaves.

``install()`` hooks every HTTP client library that is importable here (``http.client`` and
so ``urllib``; urllib3 and so requests, PyGithub, boto3 and the kubernetes client; httpx;
aiohttp), once, and makes threads a tool starts carry its call. ``toolpass.configure(
permissions=tp)`` installs it. The engine's own requests are never checked.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading

from toolpass.intercept.context import as_agent, as_user, carry_context
from toolpass.toolkit.errors import ActionRefused

__all__ = ["ActionRefused", "as_agent", "as_user", "install", "installed", "uninstall"]

LIBRARIES = ("stdlib", "urllib3", "httpx", "aiohttp")
_lock = threading.Lock()
_hooked: dict[str, object] = {}


def install() -> list[str]:
    """Hook every client library that can be imported; returns the ones hooked. Idempotent."""
    with _lock:
        for name in LIBRARIES:
            if name in _hooked or (name != "stdlib" and importlib.util.find_spec(name) is None):
                continue
            module = importlib.import_module(f"toolpass.intercept.clients.{name}")
            module.install()
            _hooked[name] = module
        carry_context(True)
        return list(_hooked)


def uninstall() -> None:
    """Remove every hook."""
    with _lock:
        for module in _hooked.values():
            module.uninstall()  # type: ignore[attr-defined]
        _hooked.clear()
        carry_context(False)


def installed() -> list[str]:
    """The libraries hooked now."""
    return list(_hooked)
