"""Where a value came from: the destinations a call sends to are matched against the values
the session has read, so that an address, account, link or id found only in untrusted
content (an injected instruction's) is not acted on.

A destination is split into its values, and every one must be vouched for: each email
address, each IBAN, each URL and, separately, each host it goes to (read as the HTTP clients
read it: ``toolpass.rules.urls``; a link written without a scheme is a URL) and the values of
its query; each run of six or more digits; and what is left, piece by piece (between commas,
semicolons, lines, "and"), a name or an id of any length. A number argument is its digits.

Every value is known by keys that survive the ways it is written: the whole value (NFKC,
case-folded, spaces collapsed), an email address with its domain in punycode, a URL with its
host normalised, default port, trailing slash, fragment and percent-encoding dropped (http
and https alike), a host, an IBAN (spaces dropped, upper-cased), a number (separators
dropped). A value is *untrusted* when it was read in untrusted content (as a key, or as
words of a text) and never vouched for: never in the user's request, in what the user
vouched for, or in trusted or private output. A field of untrusted output declared trusted
vouches as whole lines (``lines``): a line that is a list of addresses vouches for each, a
line of prose only for itself.
"""

from __future__ import annotations

import numbers
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote

from toolpass.rules.lazy import lazy_pattern
from toolpass.rules.urls import Url, host_of_email, normalize_host, parse_url
from toolpass.rules.walk import plain, strings_in

Label = Literal["trusted", "private", "untrusted"]


class _Wanted:
    """Whether any tool in this process declares a destination: until one does, nothing
    consults the record, so trusted output is not kept (a call pays nothing for it). And
    (``private``) whether any sends out: until one does, private output is not kept."""

    now = False
    private = False


wanted = _Wanted()
#: How many distinct keys, and characters of text, a session remembers; past either, a
#: destination cannot be vouched for.
MAX_KEYS = 200_000
MAX_TEXT = 8_000_000
#: Longer texts are searched for addresses, links and numbers, but not kept whole.
WHOLE = 256
#: A line of a trusted field with more words than this beside its addresses is prose: it
#: vouches only for itself, not for the addresses in it.
PROSE_WORDS = 4
#: Marks a text that vouches as whole lines (see ``lines``).
_LINES = "\x00lines\x00"

# Each pattern starts a match only where a run of its characters starts (the look-behinds):
# tried at every position of a long run, it would cost the square of the text's length.
_EMAIL = lazy_pattern(r"(?:mailto:)?(?<![\w.+%-])([\w.+%-]+@[\w-]+(?:\.[\w-]+)+)", re.IGNORECASE)
_URL = lazy_pattern(
    r"(?:(?<![\w+.-])[a-z][a-z0-9+.-]*:)?//[^\s<>\"'`)\]/]+[^\s<>\"'`)\]]*", re.IGNORECASE
)
# An IP address written bare (``203.0.113.5``, ``2001:db8::1``): a host.
_IP = lazy_pattern(
    r"(?<![\w.:])(?:\d{1,3}(?:\.\d{1,3}){3}(?!\w|\.\d)|\[?[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}\]?(?![\w:]))",
    re.IGNORECASE,
)
# What is left of an address after its local part was disguised (``"eve"@``, ``eve(x)@``).
_AT_HOST = lazy_pattern(r"@(\[[^\]\s]*\]|[^\s@<>,;\"'()\[\]\\/?#]+)")
# A link without a scheme: a dotted name (letters of any script), maybe a port and a path.
_LINK = lazy_pattern(
    r"(?<![\w@.%+-])(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+(?:[^\W\d_]{2,24}|xn--[a-z0-9-]{1,59})"
    r"\.?(?::\d{1,5})?(?:[/?#\\][^\s<>\"'`)\]]*)?(?![\w@-])",
    re.IGNORECASE,
)
# Groups of four after the country and check digits, as IBANs are written; a last group of
# one to three holds a digit (a following word, ``to`` or ``for``, is never taken for one).
_IBAN = lazy_pattern(
    r"\b([A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]{4}){2,7}(?:[ -]?(?=[A-Z]{0,2}\d)[A-Z0-9]{1,3})?)\b",
    re.IGNORECASE,
)
_DIGITS = lazy_pattern(r"\+?\d(?:[ .,/-]?\d){5,}")
_SPACES = lazy_pattern(r"\s+")
_WORD = lazy_pattern(r"\w+")
# Unicode's default-ignorable code points: invisible, dropped by whoever reads the text.
_INVISIBLE = lazy_pattern(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
# A digit of another script, read as its ASCII digit (``int("١٣")`` is 13).
_OTHER_DIGIT = lazy_pattern(r"(?![0-9])\d")
# Ideographic full stops, read as dots in a host name (IDNA).
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
# A defanged address or link (``evil[.]example``, ``eve (at) evil dot example``, ``hxxps``).
_DEFANGED = lazy_pattern(
    r"\s*[\[({]\s*(dot|\.|at|@)\s*[\])}]\s*|\s+(dot|at)\s+|\bhxxp", re.IGNORECASE
)
_PIECES = lazy_pattern(r"[,;|\n]+|\s(?:and|or|&)\s")
_EDGES = "\"'`<>()[]{}.:!?#*~=/\\ \t"


def _plain(text: str) -> str:
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    if not text.isascii():
        text = _OTHER_DIGIT.sub(lambda m: str(unicodedata.decimal(m.group())), text)
        text = text.translate(_DOTS)
    return _SPACES.sub(" ", text).strip().casefold()


def _refanged(text: str) -> str:
    """``text`` with defanged dots, ats and schemes written plainly."""

    def plainly(match: re.Match[str]) -> str:
        word = (match.group(1) or match.group(2) or "http").lower()
        return {"dot": ".", "at": "@"}.get(word, word)

    return _DEFANGED.sub(plainly, text)


def _number(digits: str) -> str:
    """A number's key: its digits, without leading zeros (``0013`` is 13)."""
    return "number:" + (re.sub(r"\D", "", digits).lstrip("0") or "0")


@dataclass(frozen=True)
class _Value:
    """One value of a destination: its keys, and (for a name or an id) the words it is
    looked for as in what was read."""

    shown: str
    keys: frozenset[str]
    words: str | None = None
    #: Keys that judge a value never read itself, nearest first: the one read decides
    #: (the domain of an address, the parent domains of a host, the digits of an id).
    parents: tuple[str, ...] = ()


def _domains(host: str) -> tuple[str, ...]:
    """``host:`` keys of ``host`` and each parent domain of two labels or more."""
    if ":" in host or host.replace(".", "").isdigit():
        return (f"host:{host}",)  # an IP address
    labels = host.split(".")
    return tuple(f"host:{'.'.join(labels[i:])}" for i in range(max(len(labels) - 1, 1)))


def _host_value(host: str) -> _Value:
    return _Value(host, frozenset({f"host:{host}"}), parents=_domains(host)[1:])


def _url_values(url: Url, depth: int) -> list[_Value]:
    """A URL's values: the link itself, each host it goes to, and what its query holds."""
    scheme = "" if url.scheme in ("http", "https") else url.scheme + ":"
    port = f":{url.port}" if url.port else ""
    query = f"?{unquote(url.query)}" if url.query else ""
    tail = f"{port}{url.path.rstrip('/')}{query}"
    found = [
        _Value(f"{url.hosts[0]}{tail}", frozenset(f"url:{scheme}//{h}{tail}" for h in url.hosts))
    ]
    found += [_host_value(h) for h in url.hosts]
    if depth < 3:
        for name, value in parse_qsl(url.query, keep_blank_values=True):
            found += _values(name, depth + 1) + _values(value, depth + 1)
    return found


def _email_value(address: str) -> _Value | None:
    local = address.rpartition("@")[0].removeprefix("mailto:")
    hosts = host_of_email(address)
    if not hosts:
        return None
    keys = frozenset(f"email:{local}@{h}" for h in hosts)
    return _Value(address, keys, parents=tuple(k for h in hosts for k in _domains(h)))


def _ip_value(match: re.Match[str]) -> _Value | None:
    hosts = normalize_host(match.group(0).strip("[]"))
    return _host_value(hosts[0]) if hosts and (":" in hosts[0] or hosts[0][0].isdigit()) else None


def _structured(plain_text: str, depth: int) -> tuple[list[_Value], str]:
    """The addresses, links and IBANs in ``plain_text``, and the text left around them."""
    found: list[_Value] = []

    def take(match: re.Match[str]) -> str:
        raw = match.group(0).rstrip(".,;:!?")
        if match.re.pattern == _EMAIL.pattern:
            email = _email_value(match.group(1))
            found.extend([email] if email else [])
        elif match.re.pattern == _IBAN.pattern:
            found.append(_Value(raw, frozenset({"iban:" + re.sub(r"[ -]", "", raw).upper()})))
        elif match.re.pattern == _IP.pattern:
            ip = _ip_value(match)
            if ip is None:
                return match.group(0)
            found.append(ip)
        elif (url := parse_url(raw)) is not None:
            found.extend(_url_values(url, depth))
        else:
            return match.group(0)
        return " , " + match.group(0)[len(raw) :]

    rest = plain_text
    for pattern in (_URL, _EMAIL, _IBAN, _IP, _LINK):
        if _may_match(pattern, rest):
            rest = pattern.sub(take, rest)
    return found, rest


_ANY_DIGIT = lazy_pattern(r"\d")
# What each pattern cannot match without (checked at C speed: most text has no address).
_NEEDED: dict[re.Pattern[str], Callable[[str], bool]] = {
    _URL: lambda text: "//" in text,
    _EMAIL: lambda text: "@" in text,
    _LINK: lambda text: "." in text,
    _IP: lambda text: "." in text or ":" in text,
    _IBAN: lambda text: _ANY_DIGIT.search(text) is not None,
    _DIGITS: lambda text: _ANY_DIGIT.search(text) is not None,
}


def _may_match(pattern: re.Pattern[str], text: str) -> bool:
    """Whether ``pattern`` can match anywhere in ``text``: without the characters it needs,
    it cannot (a scan for them is much faster than trying the pattern at every position)."""
    return _NEEDED[pattern](text)


def _readings(text: str) -> set[str]:
    """The ways a destination may be read by the tool given it: as written, with its
    invisible characters dropped or taken as spaces, without tabs and line breaks (as
    ``urllib`` and ``yarl`` read a URL), percent-decoded."""
    found = {text, _INVISIBLE.sub(" ", text)}
    found |= {re.sub(r"[\t\r\n]", "", t) for t in found}
    return found | {unquote(t) for t in found if "%" in t}


def _values(text: str, depth: int = 0) -> list[_Value]:
    """The values of one destination text (see the module's docstring), however read."""
    readings = _readings(text) if depth == 0 else {text}
    return [value for reading in readings for value in _values_of(reading, depth)]


def _values_of(text: str, depth: int) -> list[_Value]:
    found, rest = _structured(_plain(text), depth)
    for at_host in _AT_HOST.finditer(rest):  # an address whose local part is disguised
        hosts = normalize_host(at_host.group(1).strip("[]"))
        found += [_Value(at_host.group(0), frozenset(), parents=_domains(h)) for h in hosts]
    for piece in _PIECES.split(rest):
        piece = piece.strip(_EDGES)
        if not any(c.isalnum() for c in piece):
            continue
        found.append(_id(piece))
        if not _DIGITS.fullmatch(piece) and " " in piece:  # each word with a digit (an id)
            found += [_id(word) for word in piece.split() if any(c.isdigit() for c in word)]
    return found


def _id(word: str) -> _Value:
    """A name, an id or a number: its words (a whole number as it is counted: ``0013`` and
    ``13.0`` are 13) and its digits."""
    word = word.strip(_EDGES)
    if re.fullmatch(r"\d+(?:\.0+)?", word):
        word = word.split(".")[0].lstrip("0") or "0"
    number = {_number(word)} if _DIGITS.fullmatch(word) else set()
    runs = tuple(_number(m.group(0)) for m in _DIGITS.finditer(word)) if not number else ()
    return _Value(word, frozenset({"value:" + word, *number}), words=word, parents=runs)


def keys(text: str) -> set[str]:
    """The keys ``text`` is known by when read (see the module's docstring)."""
    plain_text = _plain(text)
    found = {"value:" + plain_text} if plain_text and len(plain_text) <= WHOLE else set()
    values, rest = _structured(plain_text, 0)
    for value in values:
        found |= value.keys
        found |= {f"host:{k.rpartition('@')[2]}" for k in value.keys if k.startswith("email:")}
        found |= {_number(k) for k in value.keys if k.startswith("iban:")}
    found |= {_number(m.group(0)) for m in _DIGITS.finditer(rest)}
    return found


def untrusted_keys(text: str) -> set[str]:
    """The keys of untrusted ``text``: also those of what it spells defanged."""
    found = keys(text)
    refanged = _refanged(text)
    return found | keys(refanged) if refanged != text else found


def destination_keys(text: str) -> set[str]:
    """Every key of every value of the destination ``text`` (an address's domain is not
    one: an address is not made untrusted, nor vouched for, by its domain)."""
    return {key for value in _values(text) for key in value.keys}


def _line_keys(text: str) -> set[str]:
    """The keys of a trusted field that vouches as whole lines: the field and each line
    whole, and the values of each line that is not prose."""
    found: set[str] = set()
    for line in {text, *text.splitlines()}:
        plain_line = _plain(line)
        if not plain_line or len(plain_line) > WHOLE:
            continue
        found.add("value:" + plain_line)
        values = _values(plain_line)
        named = [v for v in values if v.words is None]
        if sum(len(v.shown.split()) for v in values if v.words) <= PROSE_WORDS or not named:
            found |= {key for value in values for key in value.keys}
    return found


def lines(text: str) -> str:
    """``text`` marked to vouch as whole lines when recorded as trusted or private (a field
    declared trusted in otherwise untrusted output)."""
    return _LINES + text


def destination_values(value: Any, depth: int = 0) -> Iterator[str]:
    """The texts of a destination argument: its strings, and its numbers as digits, at any
    depth (an ``int``, a ``Decimal``, a list of ids)."""
    if isinstance(value, str):
        yield str.__str__(value)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, numbers.Integral):
        yield str(int(value))
    elif isinstance(value, (Decimal, float)):
        yield _digits_of(value)
    elif depth > 24:
        yield from strings_in(value)
    elif isinstance(value, Mapping):
        for key, item in list(value.items()):
            yield from destination_values(key, depth + 1)
            yield from destination_values(item, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in list(value):
            yield from destination_values(item, depth + 1)
    elif isinstance(value, (bytes, bytearray, memoryview)) or (data := plain(value)) is value:
        yield from strings_in(value)
    else:
        yield from destination_values(data, depth + 1)


def _digits_of(number: Decimal | float) -> str:
    """A number as it is written: ``13`` for ``13.0``."""
    try:
        whole = int(number)
    except (ValueError, OverflowError):
        return str(number)  # a NaN or an infinity
    return str(whole) if whole == number else str(number)


def echoes(text: str, into: str | None = None) -> set[str]:
    """What a tool given ``text`` as an argument may echo back: the text, and each address,
    link, IBAN and number in it, as written. With ``into``, only what could be found in it: a
    pattern whose characters ``into`` lacks yields nothing there (so a large argument is not
    read for values its tool's small output cannot hold)."""
    found = {text.strip()}
    for pattern in (_URL, _EMAIL, _IBAN, _LINK, _DIGITS):
        if (into is None or _may_match(pattern, into)) and _may_match(pattern, text):
            found |= {m.group(0).rstrip(".,;:!?") for m in pattern.finditer(text)}
    found |= {unquote(t) for t in found}
    return {t for t in found if t}


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
        "_texts_with",
        "_untrusted",
        "full",
    )

    def __init__(self) -> None:
        self._pending: list[tuple[str | tuple[str, ...], str, str]] = []
        self._chars = 0
        self._keys: dict[str, int] = {}  # key -> bits of the labels it was read with
        self._sources: dict[str, str] = {}  # untrusted key -> where it was first read
        self._read: list[tuple[str, int, str]] = []  # each text normalised, its label, source
        self._texts_with: dict[str, list[int]] = {}  # word -> the texts of _read holding it
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
        self._texts_with = {}

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
            for texts, label, source in pending:
                bit = _BITS[label]
                for text in (texts,) if type(texts) is str else texts:
                    self._remember(text, bit, source)
            if len(self._keys) > MAX_KEYS:
                self._fill()

    def _remember(self, text: str, bit: int, source: str) -> None:
        if text.startswith(_LINES):
            text = text[len(_LINES) :]
            if bit != _UNTRUSTED:  # only what vouches is narrowed; untrusted text is all read
                self._note(_line_keys(text), bit, source)
                return
        plain_text = _plain(text)
        for word in set(_WORD.findall(plain_text)):
            self._texts_with.setdefault(word, []).append(len(self._read))
        self._read.append((plain_text, bit, source))
        self._note(untrusted_keys(text) if bit == _UNTRUSTED else keys(text), bit, source)

    def _note(self, found: set[str], bit: int, source: str) -> None:
        for key in found:
            self._keys[key] = self._keys.get(key, 0) | bit
            if bit == _UNTRUSTED:
                self._sources.setdefault(key, source)

    def untrusted_only(self, text: str) -> tuple[str, str] | None:
        """``(value, source)`` for the first value of the destination ``text`` that was read
        in untrusted content and never vouched for (see the module's docstring); else None."""
        if self._pending:
            self._flush()
        if self.full:
            return "(too much read to tell)", ""
        for value in _values(text):
            found = self._untrusted_value(value)
            if found is not None:
                return found
        return None

    def _untrusted_value(self, value: _Value) -> tuple[str, str] | None:
        seen, first = 0, None
        for key in sorted(value.keys):
            bits = self._keys.get(key, 0)
            seen |= bits
            if bits == _UNTRUSTED and first is None:
                first = key.split(":", 1)[1], self._sources.get(key, "")
        if value.words is not None and not seen & _VOUCHED:
            anywhere, whole = _as_words(value.words)
            for read, bit, source in self._texts_holding(value.words):
                within = anywhere if bit == _UNTRUSTED else whole
                if not seen & bit and within.search(read):
                    seen |= bit
                    if bit == _UNTRUSTED and first is None:
                        first = value.words, source
        if not seen:
            return self._judged_by_parents(value)
        return first if seen & _UNTRUSTED and not seen & _VOUCHED else None

    def _texts_holding(self, words: str) -> Iterator[tuple[str, int, str]]:
        """The texts read that hold every word of ``words`` (a few, found by the index,
        rather than every text read)."""
        postings = [self._texts_with.get(word, []) for word in set(_WORD.findall(words))]
        if not postings:
            yield from self._read
            return
        for index in min(postings, key=len):
            yield self._read[index]

    def unvouched(self, text: str, *others: Provenance) -> str | None:
        """The first value of the destination ``text`` that neither this record nor
        ``others`` vouch for (as a trusted or private read: a value never read is not
        vouched for), else None. Used on records of what the user named
        (``provenance="request"``); a full record vouches for nothing."""
        records = (self, *others)
        for record in records:
            if record._pending:
                record._flush()
        for value in _values(text):
            if not any(record._vouches(value) for record in records):
                return value.shown
        return None

    def _vouches(self, value: _Value) -> bool:
        if any(self._keys.get(key, 0) & _VOUCHED for key in value.keys):
            return True
        if value.words is None:
            return False
        whole = _as_words(value.words)[1]
        return any(
            bit & _VOUCHED and whole.search(read)
            for read, bit, _ in self._texts_holding(value.words)
        )

    def _judged_by_parents(self, value: _Value) -> tuple[str, str] | None:
        """A value never read: the nearest of its parents that was read decides."""
        for key in value.parents:
            bits = self._keys.get(key, 0)
            if bits & _VOUCHED:
                return None
            if bits:
                return value.shown, self._sources.get(key, "")
        return None


@lru_cache(maxsize=1024)
def _as_words(value: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """``value`` as words of a text: anywhere (what makes it untrusted), and not as part
    of a date, a time or a longer number (what vouches for it: ``2024-05-13`` or ``10:13``
    vouch for no ``13``)."""
    words = r"(?<!\w)" + re.escape(value) + r"(?!\w)"
    before = r"(?<!\d[-./:,])" if value[:1].isdigit() else ""
    after = r"(?![-./:,]\d)" if value[-1:].isdigit() else ""
    return re.compile(words), re.compile(before + words + after)


_UNTRUSTED = 4
_VOUCHED = 1 | 2  # trusted or private
_BITS: dict[str, int] = {"trusted": 1, "private": 2, "untrusted": _UNTRUSTED}


@lru_cache(maxsize=256)
def vouched_by(values: tuple[str, ...]) -> Provenance:
    """A record of ``values`` as the user named them (a task scope's destinations), made
    once per set of values."""
    record = Provenance()
    record.add(values, "trusted", "the user")
    return record
