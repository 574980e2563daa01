"""Where a value came from: the destinations a call sends to are matched against the values
the session has read, so that an address, account or link found only in untrusted content
(an injected instruction's) is not acted on.

Every value is reduced to keys that survive the ways one value is written: the whole value
(NFKC, case-folded, spaces collapsed), each email address in it, each URL (scheme and host
lower-cased, default port, trailing slash and fragment dropped) and its host, each IBAN
(spaces dropped, upper-cased) and each run of six or more digits (an account or phone number,
separators dropped). A destination is *untrusted* when one of its keys was read only in
untrusted content: never in the user's request, in what the user vouched for, or in trusted
or private output.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable
from typing import Literal
from urllib.parse import urlsplit

Label = Literal["trusted", "private", "untrusted"]


class _Wanted:
    """Whether any tool in this process declares a destination: until one does, nothing
    consults the record, so trusted output is not kept (a call pays nothing for it)."""

    now = False


wanted = _Wanted()
#: How many distinct keys, and characters of text, a session remembers; past either, a
#: destination cannot be vouched for.
MAX_KEYS = 200_000
MAX_TEXT = 8_000_000
#: Longer texts are searched for addresses, links and numbers, but not kept whole.
WHOLE = 256
#: A destination this long or longer is also looked for as words within what was read.
MIN_WORDS_VALUE = 3

_EMAIL = re.compile(r"(?:mailto:)?([\w.+%-]+@[\w-]+(?:\.[\w-]+)+)", re.IGNORECASE)
_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\"'`)\]]+", re.IGNORECASE)
_HOST = re.compile(r"\b((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24})\b", re.IGNORECASE)
# Groups of four after the country and check digits, as IBANs are written (a following word
# is never taken for a last group: that one is at most three characters).
_IBAN = re.compile(
    r"\b([A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]{4}){2,7}(?:[ -]?[A-Z0-9]{1,3})?)\b", re.IGNORECASE
)
_DIGITS = re.compile(r"\+?\d(?:[ .-]?\d){5,}")
_SPACES = re.compile(r"\s+")
_DEFAULT_PORTS = {"http": ":80", "https": ":443", "ftp": ":21"}


def _plain(text: str) -> str:
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


def _url(raw: str) -> tuple[str, str] | None:
    try:
        parts = urlsplit(raw.rstrip(".,;:!?"))
        host = (parts.hostname or "").rstrip(".")
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return None
    if not host:
        return None
    scheme = parts.scheme.lower()
    port = "" if port == _DEFAULT_PORTS.get(scheme) else port
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return f"url:{scheme}://{host}{port}{path}{query}", f"host:{host}"


def keys(text: str) -> set[str]:
    """The keys ``text`` is known by (see the module's docstring)."""
    plain = _plain(text)
    found = {"value:" + plain} if plain and len(plain) <= WHOLE else set()
    for match in _EMAIL.finditer(plain):
        email = match.group(1)
        found.add("email:" + email)
        found.add("host:" + email.rsplit("@", 1)[1])
    for match in _URL.finditer(plain):
        found.update(_url(match.group(0)) or ())
    if "." in plain:
        found.update("host:" + h.rstrip(".") for h in _HOST.findall(plain))
    for match in _IBAN.finditer(plain):
        found.add("iban:" + re.sub(r"[ -]", "", match.group(1)).upper())
    for match in _DIGITS.finditer(plain):
        found.add("number:" + re.sub(r"\D", "", match.group(0)))
    return found


def destination_keys(text: str) -> set[str]:
    """The keys a destination argument is checked by: its own, without the bare hosts of the
    emails and links in it (a link to a trusted site is not vouched for by the site's name
    alone, and an address is not made untrusted by its domain)."""
    found = keys(text)
    hosts = {k for k in found if k.startswith("host:")}
    if any(k.startswith(("email:", "url:")) for k in found):
        found -= hosts
    return found


class Provenance:
    """The values one session has read, each with the labels of its sources.

    Texts are kept as they are read and reduced to keys only when a destination is checked,
    so a call that reads pays for an append. Past ``MAX_TEXT`` characters or ``MAX_KEYS``
    keys the record is full: no destination can be vouched for any more.
    """

    __slots__ = (
        "_chars",
        "_keys",
        "_lock",
        "_pending",
        "_read",
        "_sources",
        "_untrusted",
        "full",
    )

    def __init__(self) -> None:
        self._pending: list[tuple[str | tuple[str, ...], str, str]] = []
        self._chars = 0
        self._keys: dict[str, int] = {}  # key -> bits of the labels it was read with
        self._sources: dict[str, str] = {}  # untrusted key -> where it was first read
        self._read: list[tuple[str, int, str]] = []  # each text normalised, its label, source
        self._untrusted = False
        self._lock = threading.Lock()
        #: More was read than is kept: no destination can be vouched for.
        self.full = False

    def __bool__(self) -> bool:
        """Whether anything untrusted was read (or too much to tell)."""
        return self.full or self._untrusted

    def add(self, texts: str | Iterable[str], label: Label, source: str = "") -> None:
        """Remember ``texts`` (one text, or several), read with ``label`` (from ``source``: a
        tool and field, for the refusal's detail)."""
        if self.full:
            return
        if type(texts) is str:
            self._chars += len(texts)
        else:
            texts = tuple(texts)
            self._chars += sum(map(len, texts))
        self._pending.append((texts, label, source))
        if label == "untrusted":
            self._untrusted = True
        if self._chars > MAX_TEXT:
            self._fill()

    def _fill(self) -> None:
        self.full = True
        self._pending, self._keys, self._sources, self._read = [], {}, {}, []

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
            for texts, label, source in pending:
                bit = _BITS[label]
                for text in (texts,) if type(texts) is str else texts:
                    self._read.append((_plain(text), bit, source))
                    for key in keys(text):
                        self._keys[key] = self._keys.get(key, 0) | bit
                        if bit == _UNTRUSTED:
                            self._sources.setdefault(key, source)
            if len(self._keys) > MAX_KEYS:
                self._fill()

    def untrusted_only(self, text: str) -> tuple[str, str] | None:
        """``(value, source)`` when ``text`` was read in untrusted content and never vouched
        for: none of its keys read in a trusted or private source, nor the value itself
        within such a text (a name, a title: as words of a longer text). Else None."""
        if self._pending:
            self._flush()
        if self.full:
            return "(too much read to tell)", ""
        seen, first = 0, None
        for key in sorted(destination_keys(text)):
            bits = self._keys.get(key, 0)
            seen |= bits
            if bits == _UNTRUSTED and first is None:
                first = key.split(":", 1)[1], self._sources.get(key, "")
        value = _plain(text)
        if len(value) >= MIN_WORDS_VALUE and not seen & _VOUCHED:
            within = re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")
            for read, bit, source in self._read:
                if not seen & bit and within.search(read):
                    seen |= bit
                    if bit == _UNTRUSTED and first is None:
                        first = value, source
        return first if seen & _UNTRUSTED and not seen & _VOUCHED else None


_UNTRUSTED = 4
_VOUCHED = 1 | 2  # trusted or private
_BITS: dict[str, int] = {"trusted": 1, "private": 2, "untrusted": _UNTRUSTED}
