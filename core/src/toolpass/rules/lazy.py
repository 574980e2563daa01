"""Regular expressions compiled on first use, so that ``import toolpass`` compiles none.

``_WORD = lazy_pattern(r"\\w+")`` reads like ``re.compile(r"\\w+")`` and is used the same way
(``_WORD.finditer(text)``); the pattern is compiled the first time one of its attributes is
read, and each attribute is then kept, so later calls cost what the compiled pattern's do.
It is not a ``re.Pattern`` instance: a match's ``.re`` is the compiled pattern, so compare
patterns by ``.pattern``, never with ``is``.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Any, cast


class _LazyPattern:
    def __init__(self, source: str, flags: int) -> None:
        self._source = source
        self._flags = flags

    @cached_property
    def _compiled(self) -> re.Pattern[str]:
        return re.compile(self._source, self._flags)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # its own fields (not yet set in a copy): never the pattern's
            raise AttributeError(name)
        value = getattr(self._compiled, name)
        setattr(self, name, value)  # found directly from now on
        return value

    def __reduce__(self) -> tuple[Any, tuple[str, int]]:
        """Copied and pickled as what it is: the same source and flags, compiled on use."""
        return lazy_pattern, (self._source, self._flags)

    def __repr__(self) -> str:
        return f"lazy_pattern({self._source!r}, {self._flags!r})"


def lazy_pattern(source: str, flags: int | re.RegexFlag = 0) -> re.Pattern[str]:
    """``re.compile(source, flags)``, done on first use."""
    return cast("re.Pattern[str]", _LazyPattern(source, int(flags)))
