"""Private data leaving: the identifiers, numbers and secrets a session read from tools that
read private data, looked for in what a call sends out.

A value is private by its shape, read from a ``reads_private`` tool's output: an email
address, an IBAN, a number of six or more digits however it is grouped (a card, a phone, an
account), an id mixing letters and digits (a passport, a customer number), a token (an API
key). Dates and amounts with thousands separators are not identifiers.

A value is found however it is written: case, width, other scripts' digits, invisible
characters, any spaces or punctuation between its characters (``4111 1111 1111 1111``,
``4111-1111-1111-1111``), defanged (``alice (at) corp dot com``), an address's domain in
punycode or Unicode, percent-encoded, reversed, or in hex or base64 (of any of those
spellings, at any offset of a longer encoding, cut anywhere, with or without padding: the
runs of hex and base64 sent are decoded and looked in). What the user wrote themselves
(the session's request and trusted values) is theirs to send and is not looked for.

Texts are kept as they are read; values are drawn from them only when a call sends out.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from toolpass.rules.lazy import lazy_pattern
from toolpass.rules.urls import host_of_email
from toolpass.toolkit.provenance import _plain, _refanged

#: Fewest characters (letters and digits) a private value has: shorter ones are not looked for.
SHORTEST = 6
#: How many characters of private output a session keeps; past it, every send with any
#: argument text is taken to carry private data (fail closed).
MAX_TEXT = 8_000_000

# Each pattern starts only where a run of its characters starts: tried at every position of
# a long run, it would cost the square of the text's length.
_EMAIL = lazy_pattern(r"(?<![\w.+%-])[\w.+%-]+@[\w-]+(?:\.[\w-]+)+")
_IBAN = lazy_pattern(
    r"\b[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]{4}){2,7}(?:[ -]?(?=[A-Z]{0,2}\d)[A-Z0-9]{1,3})?\b", re.I
)
# Digits grouped any way a number is written: spaces, dots, dashes, slashes, brackets, a plus.
_NUMBER = lazy_pattern(r"(?<![\d+(])\+?\(?\d(?:[ ().,/-]{0,3}\d)+")
# A token of letters and digits (``_`` and ``-`` inside): an id or a key when it holds digits.
_TOKEN = lazy_pattern(r"(?<![\w-])[A-Za-z0-9][\w-]{4,}[A-Za-z0-9](?![\w-])")
_DATE = lazy_pattern(
    r"(?<![\d.,/-])(?:\d{4}([-./])\d{1,2}\1\d{1,2}|\d{1,2}([-./])\d{1,2}\2\d{2,4}"
    r"|\d{1,2}:\d{2}(?::\d{2})?)(?![\d.,/-]*\d)"
)
_AMOUNT = lazy_pattern(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:\.\d{3})+(?:,\d+)?|\d+[.,]\d{1,2}")
# Where one number written in groups may end and another begin.
_BETWEEN = lazy_pattern(r"\s*[,;/()]\s*|\s{2,}")
_NOT_ALNUM = lazy_pattern(r"[\W_]+")


def squeezed(text: str) -> str:
    """``text`` as its letters and digits alone (NFKC, case-folded, other scripts' digits as
    ASCII, invisible characters dropped, percent-decoded)."""
    text = unquote(text) if "%" in text else text
    if text.isascii():  # nothing to normalize: only the case
        return _NOT_ALNUM.sub("", text).lower()
    return _NOT_ALNUM.sub("", _plain(text))


@dataclass(frozen=True)
class Held:
    """One private value: what it is, where it was read, and how it is shown (masked)."""

    kind: str
    source: str
    shown: str


def _shapes(text: str) -> Iterator[tuple[str, str]]:
    """``(kind, value as written)`` of each private-shaped value in ``text``."""
    for match in _EMAIL.finditer(text) if "@" in text else ():
        yield "an email address", match.group(0)
    if not any(map(str.isdigit, text)):
        return
    for match in _IBAN.finditer(text):
        yield "an account number (IBAN)", match.group(0)
    for match in _NUMBER.finditer(_DATE.sub(" ; ", text)):
        written = match.group(0).strip("( ")
        for number in {written, *_BETWEEN.split(written)}:
            if _digits(number) >= SHORTEST and not _AMOUNT.fullmatch(number):
                yield "a number (a card, phone or account)", number
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if _digits(token) >= 2 and any(c.isalpha() for c in token):
            yield "an id or a key", token


def _digits(text: str) -> int:
    return sum(map(str.isdigit, text))


def _spellings(written: str) -> set[str]:
    """``written`` as its letters and digits (for an address, with its domain in each
    spelling), of ``SHORTEST`` characters or more."""
    forms = {squeezed(written)}
    if "@" in written:
        local = written.rpartition("@")[0]
        forms |= {squeezed(f"{local}@{host}") for host in host_of_email(written)}
    return {f for f in forms if len(f) >= SHORTEST}


def _values_in(texts: Iterable[str]) -> set[str]:
    """The spellings of each private-shaped value the user wrote in ``texts``: a value read
    is theirs only when they wrote that value, not when its characters appear inside a
    longer one they wrote (``123456789`` inside ``123-456-7890``)."""
    found: set[str] = set()
    for text in texts:
        readings = {text} if text.isascii() else {text, _plain(text)}
        for _, written in {shape for reading in readings for shape in _shapes(reading)}:
            found |= _spellings(written) | {squeezed(written)}
    return found


def _spans(text: str, values: Iterable[str]) -> list[tuple[int, int]]:
    """Where ``text`` holds each of ``values``."""
    spans = []
    for value in values:
        at = text.find(value) if value else -1
        while at >= 0:
            spans.append((at, at + len(value)))
            at = text.find(value, at + 1)
    return spans


def _cores(needles: Iterable[str]) -> set[str]:
    """What is left of each of ``needles`` without its first and last character, as long as
    a needle (a base64 run cut inside a value's first or last byte loses those two), or the
    needle itself when that is too short."""
    return {n[1:-1] if len(n) >= SHORTEST + 2 else n for n in needles}


def _hex_decoded(text: str) -> str:
    """The runs of hex digits in the squeezed ``text``, decoded at both alignments, each
    squeezed, one a line."""
    decoded = []
    for match in _HEX.finditer(text):
        run = match.group(0)
        for at in (0, 1):
            chunk = run[at : at + (len(run) - at) // 2 * 2]
            decoded.append(squeezed(bytes.fromhex(chunk).decode("utf-8", "replace")))
    return "\n".join(decoded)


def _base64_decoded(text: str) -> str:
    """The runs of base64 characters in ``text`` (standard alphabet), decoded at each of
    the four places a run may start inside an encoding's group (the group's missing
    characters filled in), with or without padding, each squeezed, one a line."""
    decoded = []
    for match in _BASE64.finditer(text):
        for missing in range(4):
            chunk = "A" * missing + match.group(0)
            chunk = chunk[: len(chunk) - (len(chunk) % 4 == 1)]
            data = base64.b64decode(chunk + "=" * (-len(chunk) % 4))
            decoded.append(squeezed(data.decode("utf-8", "replace")))
    return "\n".join(decoded)


_HEX = lazy_pattern(rf"[0-9a-f]{{{2 * SHORTEST},}}")
_BASE64 = lazy_pattern(rf"[A-Za-z0-9+/]{{{SHORTEST},}}")


class _Needles:
    """Values to look for in a text: each tried in turn while that is cheap, else found
    by their first ``SHORTEST`` characters at each position (linear in the text)."""

    __slots__ = ("_by_start", "found")

    def __init__(self) -> None:
        self.found: dict[str, Held] = {}
        self._by_start: dict[str, list[str]] | None = None

    def add(self, needle: str, held: Held) -> None:
        if needle not in self.found:
            self.found[needle] = held
            if self._by_start is not None:  # kept up to date: never built again
                self._by_start.setdefault(needle[:SHORTEST], []).append(needle)

    def first_in(self, text: str, mine: Sequence[tuple[int, int]] = ()) -> Held | None:
        """The first value in ``text`` not lying inside one of the spans ``mine`` (where
        ``text`` holds a value the user wrote)."""

        def where(needle: str) -> int:
            at = text.find(needle)
            while at >= 0 and any(s <= at and at + len(needle) <= e for s, e in mine):
                at = text.find(needle, at + 1)
            return at

        if len(self.found) <= DIRECT:
            hits = ((n, h) for n, h in self.found.items() if n in text)
            return next((h for n, h in hits if not mine or where(n) >= 0), None)
        if self._by_start is None:
            self._by_start = {}
            for needle in self.found:
                self._by_start.setdefault(needle[:SHORTEST], []).append(needle)
        by_start = self._by_start
        # The text's runs of SHORTEST characters that start a value, then where each is.
        starts = {text[at : at + SHORTEST] for at in range(len(text) - SHORTEST + 1)}
        found = (
            (at, needle)
            for start in starts.intersection(by_start)
            for needle in by_start[start]
            if (at := where(needle)) >= 0
        )
        first = min(found, default=None)
        return None if first is None else self.found[first[1]]


#: Up to this many values, each is looked for in turn (past it, the text's runs of
#: ``SHORTEST`` characters are indexed: one pass over the text, whatever its length).
DIRECT = 100


class PrivateValues:
    """The private values one session read, kept as texts until a send asks."""

    __slots__ = ("_chars", "_cores", "_lock", "_pending", "_plain", "_said", "_written", "full")

    def __init__(self, said: Iterable[str] = ()) -> None:
        self._pending: list[tuple[tuple[str, ...], str]] = []
        self._plain = _Needles()  # letters and digits: in the squeezed (or hex-decoded) text
        self._cores = _Needles()  # the same less their ends: in the base64-decoded text
        self._written: set[str] = set()  # each value's letters and digits, as written
        self._said = _values_in(said)  # the user's own values, as they wrote them
        self._chars = 0
        self._lock = threading.Lock()
        #: More was read than is kept: every send with text is taken to carry private data.
        self.full = False

    def __bool__(self) -> bool:
        """Whether any private output was read."""
        return self.full or bool(self._pending or self._plain.found)

    def add(self, texts: Iterable[str], source: str) -> None:
        """Remember ``texts`` read from the private tool ``source``."""
        texts = tuple(t for t in texts if t)
        self._chars += sum(map(len, texts))
        if self._chars > MAX_TEXT:
            self.full, self._pending = True, []
            self._plain, self._cores, self._written = _Needles(), _Needles(), set()
        elif texts and not self.full:
            self._pending.append((texts, source))

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
            for texts, source in pending:
                for text in texts:
                    readings = {text} if text.isascii() else {text, _plain(text)}
                    for kind, written in {s for t in readings for s in _shapes(t)}:
                        if squeezed(written) in self._said:
                            continue  # the user wrote it: theirs to send
                        held = Held(kind, source, _masked(written))
                        spellings = _spellings(written)
                        self._written |= spellings
                        for needle in spellings:
                            self._plain.add(needle, held)
                        for core in _cores(spellings):
                            self._cores.add(core, held)

    def found_in(self, texts: Iterable[str]) -> Held | None:
        """The first private value ``texts`` carry, however written (see the module)."""
        if self._pending:
            self._flush()
        texts = [t for t in texts if t]
        if self.full:
            return Held("private data", "", "(too much read to tell)") if texts else None
        if not self._plain.found or not texts:
            return None
        # One stream: a value split over two arguments (or list items) is found as well.
        plain = (
            "".join(squeezed(t) for t in texts)
            + "\n"
            + "".join(squeezed(_refanged(t)) for t in texts)
        )
        compact = "".join(re.sub(r"\s+", "", t).translate(_URLSAFE) for t in texts)
        backwards = plain[::-1]
        hexed = _hex_decoded(plain + "\n" + backwards)
        return (
            self._plain.first_in(plain, _spans(plain, self._said))
            or self._plain.first_in(backwards, _spans(backwards, {v[::-1] for v in self._said}))
            or self._plain.first_in(hexed, _spans(hexed, self._said))
            or self._cores.first_in(_base64_decoded(compact))
        )

    def found_in_destination(self, text: str) -> Held | None:
        """A private value carried by the destination ``text`` beyond being it: a whole
        piece of it (between commas, semicolons, lines) that is a private value as written
        (any spelling, not an encoding of it) is where the call goes (a contact's address),
        not data leaving; what a link's path or query, or an address's local part, holds
        is. A text that reads as a link (``/ ? # = & : \\``) is one piece: what follows a
        comma in it goes where the link goes."""
        one = _LINKISH.search(text) is not None
        pieces = [text] if one else [p for p in re.split(r"[,;\n]+", text) if p.strip()]
        if self._pending:
            self._flush()
        return self.found_in(p for p in pieces if squeezed(p) not in self._written)


_URLSAFE = str.maketrans("-_", "+/")
#: What a link has and a list of addresses or numbers has not.
_LINKISH = lazy_pattern(r"[/?#=&:\\]")


def _masked(written: str) -> str:
    """A value as the audit shows it: its kind's shape, with all but its last few
    characters hidden."""
    keep = 4 if len(written) > 8 else 2
    return "*" * min(len(written) - keep, 12) + written[-keep:]
