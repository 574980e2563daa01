"""What a person deciding a call reads: its arguments previewed (a secret by its digest, a
long value cut with its length and digest, invisible characters escaped), and a person's words
quoted for the model."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from toolpass.rules.secrets import find_secret, secret_name

#: How much of one argument a preview shows before it says what it left out.
PREVIEW_LIMIT = 2000


def preview_of(arguments: Mapping[str, Any]) -> str:
    """What a person approving a call reads of its arguments, one line each: every value whole
    (as Python writes it; a dataclass with every field, ``repr=False`` ones too), except that
    a long value shows its first ``PREVIEW_LIMIT`` characters and then says how much it left
    out, with the whole value's digest; a value that is a secret (by its name, or a
    credential's shape) shows only its digest. A name that is not a plain identifier is
    quoted, and no character a terminal or browser would not show as itself (a line break,
    an ANSI escape, a bidi override) is written raw. Nothing is cut silently;
    ``request.arguments[name]`` holds each value."""
    return "\n".join(
        f"  {_name(name)} = {_shown(name, value)}" for name, value in arguments.items()
    )


def printable(text: str) -> str:
    """``text`` with each character that is not shown as itself (control and format
    characters, line and paragraph separators) written as its escape, e.g. ``\\x1b``."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _name(name: object) -> str:
    plain = isinstance(name, str) and name.isascii() and name.isidentifier()
    return str(name) if plain else printable(repr(name))


def _text(value: Any, depth: int = 0) -> str:
    """``repr(value)``, except that a value held under a secret's name in a dict (at any
    depth in dicts, lists and tuples) shows only its digest, and a dataclass shows every
    field (one kept out of its repr is still part of the call)."""
    if depth > 20:
        return printable(repr(value))
    kind = type(value)
    if kind is dict:
        items = (f"{_text(k, depth + 1)}: {_held(k, v, depth)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if kind is list or kind is tuple:
        inner = ", ".join(_text(v, depth + 1) for v in value)
        return f"[{inner}]" if kind is list else f"({inner}{',' if len(value) == 1 else ''})"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = (
            f"{f.name}={_held(f.name, getattr(value, f.name, None), depth)}"
            for f in dataclasses.fields(value)
        )
        return f"{kind.__name__}({', '.join(fields)})"
    return printable(repr(value))


def _held(name: Any, value: Any, depth: int) -> str:
    """A value held under ``name``: its digest alone when the name is a secret's."""
    text = _text(value, depth + 1)
    if isinstance(name, str) and secret_name(name):
        import hashlib

        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return f"[a secret, not shown: sha256 {digest}]"
    return text


def _shown(name: str, value: Any) -> str:
    return shown_text(name, _text(value))


def shown_text(name: str, text: str) -> str:
    """A value as Python wrote it (``text``), as the preview shows it."""
    import hashlib

    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    whole = f"{len(text)} characters, sha256 {digest}; see request.arguments[{name!r}]"
    kind = "a secret" if secret_name(str(name)) else find_secret(text)
    if kind is not None:
        return f"[{kind}, not shown: {whole}]"
    if len(text) <= PREVIEW_LIMIT:
        return text
    return f"{text[:PREVIEW_LIMIT]}\n    [... not shown: the rest of {whole}]"


def quoted(text: str, limit: int = 500) -> str:
    """A person's words for the model: one quoted line of at most ``limit`` characters, with
    quotes, line breaks and invisible characters escaped, so it cannot end early."""
    cut = text if len(text) <= limit else text[:limit] + "..."
    return printable(json.dumps(cut, ensure_ascii=False))
