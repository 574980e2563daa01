"""One package per system. ``get(name)`` imports ``toolpass.integrations.<name>`` and returns
its ``INTEGRATION`` class, so adding a system means adding one folder."""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import TYPE_CHECKING

from toolpass.wire.errors import ConfigError

if TYPE_CHECKING:
    from toolpass.integrations.base import Integration

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_NOT_SYSTEMS = {"base", "routes"}  # shared modules, not systems


def available() -> list[str]:
    """The names of the integrations shipped here, sorted."""
    return sorted(
        m.name
        for m in pkgutil.iter_modules(__path__)
        if m.ispkg and not m.name.startswith("_") and m.name not in _NOT_SYSTEMS
    )


def get(name: str) -> type[Integration]:
    """The integration called ``name``; :class:`ConfigError` when there is none."""
    from toolpass.integrations.base import Integration

    if not _NAME.fullmatch(name) or name in _NOT_SYSTEMS:
        raise ConfigError(f"no integration named {name!r}")
    module_name = f"{__name__}.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name != module_name:
            raise
        raise ConfigError(
            f"no integration named {name!r} (available: {', '.join(available()) or 'none'})"
        ) from None
    cls = getattr(module, "INTEGRATION", None)
    if not (isinstance(cls, type) and issubclass(cls, Integration)):
        raise ConfigError(f"{module_name} defines no INTEGRATION class")
    return cls
