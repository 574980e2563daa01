"""Where a request's body ends, read as a server reads it: one request checked is one request
sent. The headers declare the end (``Content-Length``, or ``Transfer-Encoding: chunked``, or
neither: no body); a body written as it is must end exactly there. Headers a server could
read two ways (both, two lengths, a length that is no number, a transfer coding that does not
end in ``chunked``) frame nothing, and bytes past the declared end would be read as a second
request: both raise ``Misframed``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

#: A chunk-size line (hex size, maybe extensions) or a trailer line is at most this long.
LINE_LIMIT = 4096
_SIZE_LINE = re.compile(rb"([0-9A-Fa-f]+)(?:;[\t\x20-\x7e]*)?")
_FIELD_LINE = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e\x80-\xff]*")


class Misframed(ValueError):
    """A request whose bytes a server could read as other than the one request checked."""


class Framing(NamedTuple):
    """What the headers declare: a length, chunks, or (neither) no body."""

    length: int | None
    chunked: bool

    @property
    def empty(self) -> bool:
        """Whether the request declares no body at all."""
        return not self.chunked and not self.length


NO_BODY = Framing(None, False)


def declared(headers: Mapping[str, str]) -> Framing:
    """The framing ``headers`` (lower-cased names, repeated ones joined by ``", "``) declare."""
    length_text = headers.get("content-length")
    coding = headers.get("transfer-encoding")
    if length_text is None and coding is None:
        return NO_BODY
    if length_text is not None and coding is not None:
        raise Misframed("both Content-Length and Transfer-Encoding")
    if coding is not None:
        codings = [c.strip().lower() for c in coding.split(",")]
        if codings[-1] != "chunked" or codings.count("chunked") > 1:
            raise Misframed(f"Transfer-Encoding {coding!r} does not end in one 'chunked'")
        return Framing(None, True)
    text = str(length_text).strip()
    if not (text.isascii() and text.isdigit()):
        raise Misframed(f"Content-Length {length_text!r} is not one number")
    return Framing(int(text), False)


def body_read(framing: Framing, body: bytes) -> bytes:
    """The body a server reads from ``body`` written as it is under ``framing``: its chunks'
    data when chunked. Raises ``Misframed`` when it ends before or after the declared end."""
    if not framing.chunked:
        if len(body) != (framing.length or 0):
            raise Misframed(
                f"a body of {len(body)} bytes under a declared length of {framing.length or 0}"
            )
        return body
    meter = Meter(framing)
    data = meter.take(body)
    if not meter.done:
        raise Misframed("a chunked body that ends before its last chunk")
    return data


class Meter:
    """Counts a body as it is written; ``take`` raises ``Misframed``, taking nothing, for
    bytes past the declared end. Chunks are parsed strictly (CRLF only, hex sizes)."""

    __slots__ = ("_buffer", "_left", "_state", "chunked")

    def __init__(self, framing: Framing) -> None:
        self.chunked = framing.chunked
        self._left = 0 if framing.chunked else framing.length or 0
        self._state = "size" if framing.chunked else "data"
        self._buffer = b""

    @property
    def done(self) -> bool:
        """Whether the body has ended: nothing more may be written."""
        return self._state == "done" or (not self.chunked and self._left == 0)

    def take(self, data: bytes) -> bytes:
        """Count ``data``; returns the body's content in it (the chunks' data)."""
        if not data:
            return b""
        if not self.chunked:
            if len(data) > self._left:
                raise Misframed(f"{len(data) - self._left} bytes past the declared length")
            self._left -= len(data)
            return data
        saved = (self._state, self._left, self._buffer)
        try:
            return self._chunks(data)
        except Misframed:
            self._state, self._left, self._buffer = saved
            raise

    def _chunks(self, data: bytes) -> bytes:
        out: list[bytes] = []
        at = 0
        while at < len(data):
            if self._state == "done":
                raise Misframed(f"{len(data) - at} bytes after the last chunk")
            if self._state == "data":
                step = min(self._left, len(data) - at)
                out.append(data[at : at + step])
                at += step
                self._left -= step
                if self._left == 0:
                    self._state = "crlf"
                continue
            line, at = self._line(data, at)
            if line is not None:
                self._end_of(line)
        return b"".join(out)

    def _line(self, data: bytes, at: int) -> tuple[bytes | None, int]:
        """The next whole line (without its CRLF), or None when it goes on past ``data``."""
        end = data.find(b"\n", at)
        if end < 0:
            self._buffer += data[at:]
            if len(self._buffer) > LINE_LIMIT:
                raise Misframed("a chunk line that does not end")
            return None, len(data)
        line, self._buffer = self._buffer + data[at:end], b""
        if not line.endswith(b"\r") or b"\r" in line[:-1]:
            raise Misframed("a chunk line not ended by CRLF")
        return line[:-1], end + 1

    def _end_of(self, line: bytes) -> None:
        if self._state == "crlf":
            if line:
                raise Misframed("chunk data longer than its size")
            self._state = "size"
        elif self._state == "size":
            size = _SIZE_LINE.fullmatch(line)
            if size is None:
                raise Misframed("a chunk size that is not a hex number")
            self._left = int(size.group(1), 16)
            self._state = "data" if self._left else "trailer"
        elif line:  # a trailer field
            if _FIELD_LINE.fullmatch(line) is None:
                raise Misframed("a trailer that is no header field")
        else:
            self._state = "done"
