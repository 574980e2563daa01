"""What a tool's body gives back, made safe to return: its output redacted of the
credential, untrusted output recorded and fenced, and its exceptions cleared of both."""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from toolpass.outcome.errors import ToolError, ToolRefused
from toolpass.rules.redact import contains, leaks, redact
from toolpass.rules.walk import plain, strings_in
from toolpass.toolkit.drivers import PLAIN
from toolpass.toolkit.provenance import destination_values, echoes, lines, wanted
from toolpass.toolkit.session import Session
from toolpass.toolkit.spec import ToolSpec
from toolpass.toolkit.untrusted import fence


def collect(stream: Any) -> Any:
    raise ToolRefused(
        "check_error",
        "The tool returned a stream that toolpass cannot check here. Tell the user.",
        detail="a sync tool returned an async iterator; return a list instead",
    )


async def acollect(stream: AsyncIterator[Any]) -> list[Any]:
    """An async tool's stream, read to the end so it can be checked as a whole."""
    return [item async for item in stream]


def output(
    spec: ToolSpec,
    session: Session,
    result: Any,
    secrets: tuple[str, ...],
    untrusted: bool,
    arguments: Mapping[str, Any] | None = None,
) -> Any:
    """The body's result as the model gets it: redacted of ``secrets``; its values recorded
    with where they came from; untrusted text (all of it, or the tool's ``untrusted_fields``)
    recorded for the untrusted-input check and the whole result fenced. What the output
    echoes of the call's ``arguments`` vouches for nothing."""
    kind = type(result)
    if kind in PLAIN and not secrets and not untrusted:
        if spec.reads_private and wanted.private:
            session.record_private(destination_values(result), spec.name)
        if not wanted.now or kind is bool or result is None:
            return result
        session.record_values(
            _vouching(destination_values(result), arguments), spec.trust, spec.name
        )
        return result
    if isinstance(result, Iterator):
        result = list(result)  # a generator's chunks, checked (and joined) as a whole
    if secrets:
        result = redact(result, secrets)
    if spec.reads_private and wanted.private:
        session.record_private(destination_values(result), spec.name)
    if not untrusted:
        if wanted.now:
            values = _vouching(destination_values(result), arguments)
            session.record_values(values, spec.trust, spec.name)
        return result
    vouched: list[str] = []
    if spec.untrusted_fields is None:
        texts = strings_in(result)
        found = [text for text in texts if text]
        if not found and texts.complete:
            return result  # no text in it (a status code, a count): nothing to fence
    else:
        found, vouched = _split(plain(result), spec.untrusted_fields, [], [])
    for text in found:
        session.record_untrusted(text)
    session.record_values(found, "untrusted", spec.name)
    vouched = [lines(text) for text in _vouching(vouched, arguments)]
    session.record_values(vouched, spec.trust, spec.name)
    if not spec.fences:
        return result
    return fence(result if isinstance(result, str) else readable(result), spec.name)


#: The most characters of echoed values one pattern is built from (``re`` parses a pattern in
#: Python, some microseconds a character): past it, the output vouches for nothing.
MAX_ECHO = 20_000


def _vouching(texts: Iterable[str], arguments: Mapping[str, Any] | None) -> list[str]:
    """``texts`` of trusted or private output without what they echo of the call's
    ``arguments`` (a search tool answering ``{"query": x}`` does not vouch for ``x``). Output
    that may echo more than ``MAX_ECHO`` characters of them vouches for nothing: refusing
    more, never less."""
    texts = list(texts)
    if not any(texts):
        return texts
    joined = "\n".join(texts)
    said = {
        e
        for a in (arguments or {}).values()
        for t in destination_values(a)
        for e in echoes(t, into=joined)
    }
    if not said:
        return texts
    said = _may_echo(said, texts)
    if sum(map(len, said)) > MAX_ECHO:
        return []
    if not said:
        return [t for t in texts if t.strip()]
    echo = _echo(tuple(sorted(said, key=lambda t: (-len(t), t))))
    return [t for t in (echo.sub(" ", text) for text in texts) if t.strip()]


def _may_echo(said: set[str], texts: list[str]) -> set[str]:
    """The values of ``said`` that may be found in ``texts`` as ``_echo`` finds them (case
    ignored): none longer than the longest text, and in ASCII texts, only ASCII values found in
    them lowercased (which ASCII text always matches as ``re.IGNORECASE`` does)."""
    longest = max(map(len, texts))
    joined = "\n".join(texts)
    lowered = joined.lower() if joined.isascii() else None
    return {
        e
        for e in said
        if len(e) <= longest and (lowered is None or not e.isascii() or e.lower() in lowered)
    }


@lru_cache(maxsize=512)
def _echo(said: tuple[str, ...]) -> re.Pattern[str]:
    """Any of ``said`` (longest first), as a whole value or word of a text."""
    either = "|".join(map(re.escape, said))
    return re.compile(rf"(?<![\w@.+%-])(?:{either})(?![\w@-]|\.\w)", re.IGNORECASE)


def _split(
    value: Any, fields: frozenset[str], untrusted: list[str], trusted: list[str]
) -> tuple[list[str], list[str]]:
    """The texts of ``value`` (plain data) under the keys ``fields`` names, at any depth (in
    JSON text too), and the rest. When no such key is found at all, every text is untrusted:
    a result shaped otherwise than declared vouches for nothing."""
    found = _split_into(value, fields, untrusted, trusted)
    if not found:
        return [*untrusted, *trusted], []
    return untrusted, trusted


def _split_into(
    value: Any, fields: frozenset[str], untrusted: list[str], trusted: list[str]
) -> bool:
    if isinstance(value, str):
        parsed = _json(value)
        if parsed is not None:
            return _split_into(parsed, fields, untrusted, trusted)
        trusted.append(value)
        return False
    found = False
    if type(value) in (int, float):
        trusted.append(str(value))  # an id or an amount: a value as a string is
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in fields:
                untrusted.extend(t for t in strings_in(item) if t)
                found = True
            else:
                found = _split_into(item, fields, untrusted, trusted) or found
    elif isinstance(value, list):
        for item in value:
            found = _split_into(item, fields, untrusted, trusted) or found
    return found


def _json(text: str) -> Any:
    """``text`` as JSON data when it is a JSON object or array, else None."""
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, (dict, list)) else None


def readable(value: Any) -> str:
    """Any result as text the model reads: bytes decoded, data as JSON, the rest as repr."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return json.dumps(plain(value), ensure_ascii=False, default=repr)


def redacted_refusal(refused: ToolRefused, secrets: tuple[str, ...]) -> ToolRefused:
    """A refusal raised by the body, without the credential in what it says."""
    if not secrets or not leaks((refused.message, refused.detail), secrets):
        return refused
    return ToolRefused(
        refused.code, redact(refused.message, secrets), detail=redact(refused.detail, secrets)
    )


def body_error(
    session: Session, exc: Exception, secrets: tuple[str, ...], untrusted: bool
) -> ToolError | None:
    """The body's exception as a redacted (and fenced) ``ToolError``, or None to pass it on.

    With a credential in play the whole exception is searched: its chain (cause and
    context), notes, arguments, attributes and traceback text. An exception that carries it
    anywhere is not passed on at all (``ToolError.original`` is None; its type is kept), and
    the frames of one that is passed on are cleared of their local variables.
    """
    leaked = bool(secrets) and _chain_leaks(exc, secrets)
    if secrets and not leaked:
        clear_frames(exc)
    if not (leaked or untrusted):
        return None
    message = redact(f"{type(exc).__name__}: {exc}", secrets)
    if untrusted:
        session.record_untrusted(message)
        session.record_values(message, "untrusted", "an error it raised")
        message = fence(message)
    if leaked:
        clear_frames(exc)
    return ToolError(message, None if leaked else exc, original_type=type(exc))


def _chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    todo = [exc]
    while todo and len(found) < 100:
        current = todo.pop()
        if any(current is seen for seen in found):
            continue
        found.append(current)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        todo.extend(e for e in getattr(current, "exceptions", ()) if isinstance(e, BaseException))
    return found


def _chain_leaks(exc: BaseException, secrets: tuple[str, ...]) -> bool:
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:
        return True  # cannot be rendered, so cannot be vouched for
    return contains(text, secrets) or leaks(exc, secrets)


def clear_frames(exc: BaseException) -> None:
    """Drop the local variables of the finished frames an exception's tracebacks hold: the
    body's own frame holds the credential it was given."""
    for each in _chain(exc):
        traceback.clear_frames(each.__traceback__)
