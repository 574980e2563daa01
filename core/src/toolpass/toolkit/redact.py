"""Redaction of secrets from tool output, errors and audit records."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"
#: Shorter secrets are not redacted: replacing them would mangle ordinary text.
MIN_SECRET = 8


def usable(secrets: Iterable[str]) -> tuple[str, ...]:
    """The secrets long enough to redact, longest first (so a secret containing another wins)."""
    return tuple(
        sorted(
            {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET},
            key=len,
            reverse=True,
        )
    )


def contains(text: str, secrets: tuple[str, ...]) -> bool:
    return any(s in text for s in secrets)


def redact(value: Any, secrets: tuple[str, ...], _depth: int = 0) -> Any:
    """``value`` with every secret's text replaced, in strings and inside containers."""
    if not secrets:
        return value
    if isinstance(value, str):
        for s in secrets:
            if s in value:
                value = value.replace(s, REDACTED)
        return value
    if _depth > 50:  # nested past reason: its text, redacted, rather than the secret
        return redact(repr(value), secrets)
    d = _depth + 1
    if isinstance(value, dict):
        return {redact(k, secrets, d): redact(v, secrets, d) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, secrets, d) for v in value]
    if isinstance(value, tuple):
        items = [redact(v, secrets, d) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, (set, frozenset)):
        return type(value)(redact(v, secrets, d) for v in value)
    if isinstance(value, (bytes, bytearray)):
        data = bytes(value)
        for s in secrets:
            data = data.replace(s.encode(), REDACTED.encode())
        return type(value)(data)
    return value
