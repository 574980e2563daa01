"""The request hook: every HTTP request a tool's body sends, checked before it leaves.

``install()`` hooks every HTTP client library that is importable here, at the lowest
stable layer of each (``http.client`` and so ``urllib``; urllib3 and so requests, PyGithub,
boto3 and the kubernetes client; httpx and httpcore; aiohttp; the WebSocket clients
websocket-client and websockets), once, and makes threads a tool starts carry its call.
``toolpass.configure(permissions=tp)`` installs it. The engine's own requests are never
checked.

Each hook was tested on a range of versions of its library. ``install()`` refuses to patch
a version outside that range (``RuntimeError``) unless the developer accepts the risk for
that library (``install(untested=("httpx",))`` or ``TOOLPASS_UNTESTED_CLIENTS=httpx``), and
never patches a function whose parameters are not the ones the hook was written for.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from types import ModuleType

from toolpass.intercept.clients import Applied, Patch, apply, in_range, problem, undo
from toolpass.intercept.context import as_agent, as_user, carry_context
from toolpass.outcome.errors import ActionRefused

__all__ = ["ActionRefused", "as_agent", "as_user", "install", "installed", "uninstall"]

#: Client modules, by the name their library is imported as.
LIBRARIES = (
    "stdlib",
    "urllib3",
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
    "aiohttp",
    "websocket",
    "websockets",
)
UNTESTED_ENV = "TOOLPASS_UNTESTED_CLIENTS"
_lock = threading.Lock()
_hooked: dict[str, Applied] = {}
_untested: set[str] = set()


def install(untested: Iterable[str] = ()) -> list[str]:
    """Hook every client library that can be imported; returns the ones hooked. Idempotent.

    ``untested`` names libraries (import or distribution names) whose installed version
    was not tested with toolpass, to be hooked anyway; the ``TOOLPASS_UNTESTED_CLIENTS``
    environment variable (comma-separated) does the same. Raises ``RuntimeError``, and
    hooks nothing new, when a library cannot be hooked safely."""
    import importlib.util  # here: installing the hook is rare, importing toolpass is not

    with _lock:
        _untested.update(untested)
        modules = {
            name: importlib.import_module(f"toolpass.intercept.clients.{name}")
            for name in LIBRARIES
            if name not in _hooked and (name == "stdlib" or importlib.util.find_spec(name))
        }
        patches = {name: _vetted(name, module) for name, module in modules.items()}
        for name, found in patches.items():
            _hooked[name] = apply(found)
        carry_context(True)
        return list(_hooked)


def uninstall() -> None:
    """Remove every hook."""
    with _lock:
        for applied in reversed(_hooked.values()):
            undo(applied)
        _hooked.clear()
        _untested.clear()
        carry_context(False)


def installed() -> list[str]:
    """The libraries hooked now."""
    return list(_hooked)


def version_of(distribution: str) -> str | None:
    """The installed version of a distribution, or None when it has no metadata."""
    import importlib.metadata  # here: it loads email, zipfile and more (40 ms)

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _vetted(name: str, module: ModuleType) -> list[Patch]:
    distribution: str | None = module.DISTRIBUTION
    tested: str = module.TESTED
    version = version_of(distribution) if distribution else None
    label = f"{distribution} {version or '(version unknown)'}"
    if (
        distribution
        and not (version and in_range(version, tested))
        and not _accepted(name, distribution)
    ):
        raise RuntimeError(
            f"toolpass's request hook was not tested with {label} (tested: {tested}), so it "
            f"will not patch it: a tool could send requests through it unchecked. Install a "
            f"tested version, or accept the risk with "
            f"toolpass.intercept.install(untested=({name!r},)) or {UNTESTED_ENV}={name}."
        )
    patches: list[Patch] = module.patches()
    for patch in patches:
        found = problem(patch)
        if found is not None:
            raise RuntimeError(
                f"toolpass cannot hook {label if distribution else 'http.client'}: {found}. "
                f"Its internals changed; install a version in {tested or 'the tested range'}."
            )
    return patches


def _accepted(name: str, distribution: str) -> bool:
    names = {n.strip() for n in os.environ.get(UNTESTED_ENV, "").split(",")} | _untested
    return name in names or distribution in names
