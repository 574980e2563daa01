"""Files the engine reads again whenever they change: identity mappings, group tables,
rotating tokens."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from toolpass.wire.errors import ConfigError, LookupFailed


class WatchedFile:
    """A file's parsed content, re-read whenever its size, inode or mtime changes.

    ``parse(text)`` turns the text into the value (raising ``LookupFailed`` when it cannot);
    ``what`` names the file in errors (``"identity file"``).
    """

    def __init__(self, path: str, parse: Callable[[str], Any], what: str) -> None:
        self.path = path
        self._parse = parse
        self._what = what
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._value: Any = None

    def get(self) -> Any:
        try:
            st = os.stat(self.path)
        except OSError as e:
            raise LookupFailed(f"{self._what} {self.path} cannot be read ({e.strerror})")
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        with self._lock:
            if stamp != self._stamp:
                try:
                    with open(self.path, encoding="utf-8") as f:
                        text = f.read()
                except (OSError, UnicodeDecodeError) as e:
                    raise LookupFailed(f"{self._what} {self.path} cannot be read ({e})")
                self._value = self._parse(text)
                self._stamp = stamp
            return self._value


def yaml_module() -> ModuleType:
    """PyYAML, or a :class:`ConfigError` saying how to install it."""
    try:
        import yaml
    except ImportError:
        raise ConfigError("reading YAML needs PyYAML: pip install 'toolpass-core[yaml]'") from None
    return yaml


def json_or_yaml(path: str, text: str, what: str) -> Any:
    """The data of a ``.yaml``/``.yml`` file (with PyYAML) or of a JSON file."""
    try:
        if path.endswith((".yaml", ".yml")):
            return yaml_module().safe_load(text)
        return json.loads(text)
    except ConfigError:
        raise LookupFailed(f"{what} {path} needs PyYAML: pip install 'toolpass-core[yaml]'")
    except Exception as e:  # JSON or YAML syntax
        raise LookupFailed(f"{what} {path} cannot be parsed ({type(e).__name__}: {e})")
