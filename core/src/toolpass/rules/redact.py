"""Redaction of secrets from tool output, errors and audit records.

A value that holds no secret is returned as it is (same object). One that does is rebuilt
with every occurrence replaced, wherever the walk of ``rules.walk`` finds text: strings,
bytes, mappings, sequences, dataclasses, pydantic models, plain objects, exceptions. A secret
split across the chunks of a sequence of strings (a streamed reply) is found in their joined
text. What cannot be rebuilt becomes its redacted text.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import deque
from collections.abc import Iterable, Mapping, Set
from typing import Any

from toolpass.rules.walk import MAX_DEPTH, strings_in

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


def leaks(value: Any, secrets: tuple[str, ...]) -> bool:
    """Whether any text inside ``value`` carries a secret (or the walk could not see it all,
    or a sequence of strings carries one split across its items)."""
    if not secrets:
        return False
    if type(value) is str:
        return contains(value, secrets)
    texts = strings_in(value)
    found = any(contains(text, secrets) for text in texts)
    return found or not texts.complete or _split(value, secrets)


def _split(value: Any, secrets: tuple[str, ...]) -> bool:
    """A secret spread over the string chunks of a list (a streamed reply), at any depth."""
    joined = _joined(value)
    if joined is not None and contains(joined, secrets):
        return True
    if isinstance(value, Mapping):
        return any(_split(v, secrets) for v in value.values())
    if isinstance(value, (list, tuple, deque)):
        return any(_split(v, secrets) for v in value if not isinstance(v, str))
    return False


def _joined(value: Any) -> str | None:
    if isinstance(value, (list, tuple, deque)) and len(value) > 1:
        if all(isinstance(v, str) for v in value):
            return "".join(value)
        if all(isinstance(v, (bytes, bytearray)) for v in value):
            return b"".join(value).decode("utf-8", "replace")
    return None


def redact_text(text: str, secrets: tuple[str, ...]) -> str:
    for s in secrets:
        if s in text:
            text = text.replace(s, REDACTED)
    return text


def redact(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` with every secret's text replaced (the same object when it holds none)."""
    if not secrets:
        return value
    if type(value) is str:
        return redact_text(value, secrets)
    if not leaks(value, secrets):
        return value
    return _rebuild(value, secrets, 0)


def _rebuild(value: Any, secrets: tuple[str, ...], depth: int) -> Any:
    if isinstance(value, str):
        return redact_text(str(value), secrets)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        for s in secrets:
            data = data.replace(s.encode(), REDACTED.encode())
        return bytearray(data) if isinstance(value, bytearray) else data
    if depth > MAX_DEPTH:
        return _as_text(value, secrets)
    d = depth + 1

    def again(item: Any) -> Any:
        return _rebuild(item, secrets, d) if leaks(item, secrets) else item

    joined = _joined(value)
    if joined is not None and contains(joined, secrets):
        chunks = [_rebuild(v, secrets, d) for v in value]
        rejoined = _joined(chunks)
        if rejoined is not None and contains(rejoined, secrets):
            # A secret split across chunks: the chunks joined, as one redacted chunk.
            whole = redact_text(rejoined, secrets)
            chunks = [whole.encode() if isinstance(value[0], (bytes, bytearray)) else whole]
        return tuple(chunks) if isinstance(value, tuple) else chunks
    if isinstance(value, Mapping):
        return {again(k): again(v) for k, v in list(value.items())}
    if isinstance(value, tuple):
        items = [again(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [again(v) for v in value]
    if isinstance(value, deque):
        return deque((again(v) for v in value), maxlen=value.maxlen)
    if isinstance(value, Set):
        members = {again(v) for v in value}
        return frozenset(members) if isinstance(value, frozenset) else members
    if isinstance(value, BaseException):
        return _as_text(value, secrets)
    return _object(value, secrets, again)


def _object(value: Any, secrets: tuple[str, ...], again: Any) -> Any:
    """A copy of a dataclass, a pydantic model or a plain object with its fields redacted;
    its redacted text when it cannot be copied that way."""
    try:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            clone = copy.copy(value)
            for f in dataclasses.fields(value):
                object.__setattr__(clone, f.name, again(getattr(value, f.name)))
            if not leaks(clone, secrets):
                return clone
        elif hasattr(type(value), "model_fields") and hasattr(value, "model_copy"):
            fields = {k: again(v) for k, v in vars(value).items()}
            clone = value.model_copy(update=fields)
            extra = getattr(clone, "__pydantic_extra__", None)
            if extra:
                object.__setattr__(clone, "__pydantic_extra__", again(extra))
            if not leaks(clone, secrets):
                return clone
        elif isinstance(getattr(value, "__dict__", None), dict) and not hasattr(
            type(value), "__slots__"
        ):
            clone = copy.copy(value)
            if clone is not value:
                vars(clone).update({k: again(v) for k, v in vars(value).items()})
                if not leaks(clone, secrets):
                    return clone
    except Exception:  # noqa: S110 - an object that resists copying is shown as text
        pass
    return _as_text(value, secrets)


def _as_text(value: Any, secrets: tuple[str, ...]) -> str:
    if isinstance(value, BaseException):
        text = f"{type(value).__name__}: {value}"
    else:
        try:
            text = repr(value)
        except Exception:
            text = f"<{type(value).__name__}>"
    return redact_text(text, secrets)
