"""Secret scanning: text that carries a credential of a well-known kind.

Used where data is about to leave: the arguments of a ``sends_out`` tool and the body of a
request to a route that sends data out. Patterns are the documented shapes of each vendor's
tokens, found wherever they stand (glued to other text too: ``token=ghp_...``,
``key_AKIA...``), and random enough that ordinary text does not match.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any

from toolpass.rules.lazy import lazy_pattern


def _random(chars: str, least: int, *holding: str) -> str:
    """``least`` or more of ``chars`` holding a character of each class in ``holding``
    (``"a-z"``): what a random token has and a word, a hex digest or a UUID has not."""
    return "".join(f"(?=[{chars}]*[{h}])" for h in holding) + f"[{chars}]{{{least},}}"


_MIXED = ("a-z", "A-Z")

#: (kind, prefix, rest) of each credential's documented shape. The prefix ends with a
#: character that is rare in ordinary text: the scan looks for it, then checks the prefix
#: behind it and the rest after it. Where a prefix could end an ordinary word (``highs_``,
#: ``risk-``, ``desk_live_``, ``xoxo-``), the rest must look random.
SHAPES: tuple[tuple[str, str, str], ...] = (
    ("a private key", "-----", r"BEGIN[A-Z0-9 ]{0,40}PRIVATE ?KEY-----"),
    ("a GitHub token", "gh[pousr]_", _random("A-Za-z0-9", 36, *_MIXED)),
    ("a GitHub token", "github_", "pat_" + _random("A-Za-z0-9_", 50, *_MIXED)),
    ("a GitLab token", "glpat-", r"[A-Za-z0-9_-]{20,}"),
    ("a Slack token", "xox[abeoprs]-", _random("A-Za-z0-9-", 10, "0-9")),
    ("an AWS access key", "AK", r"IA[A-Z0-9]{16}"),
    ("an AWS access key", "AS", r"IA[A-Z0-9]{16}"),
    ("a Google API key", "AIz", r"a[0-9A-Za-z_-]{35}"),
    ("a Stripe secret key", "[rs]k_", "live_" + _random("0-9A-Za-z", 20, *_MIXED)),
    (
        "an OpenAI or Anthropic API key",
        "sk-",
        "(?:ant-|proj-)?" + _random("A-Za-z0-9_-", 32, "0-9", *_MIXED),
    ),
    ("a JSON Web Token", "eyJ", r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
)
#: kind -> pattern of the credential's documented shape.
PATTERNS: dict[str, str] = {
    kind: "|".join(p + r for k, p, r in SHAPES if k == kind) for kind, _, _ in SHAPES
}

# One alternative per shape, each starting with its rare character (so the scan skips from
# one to the next at C speed) and capturing the rest (so ``lastindex`` names the shape).
_SCAN = lazy_pattern("|".join(f"{re.escape(p[-1])}(?<={p})({r})" for _, p, r in SHAPES))
_KINDS = [kind for kind, _, _ in SHAPES]
_WHOLE = lazy_pattern("|".join(f"(?:{p}{r})" for _, p, r in SHAPES))

#: Argument and field names whose values are secrets, whatever they look like.
SECRET_NAMES = (
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "credential",
    "private_key",
    "authorization",
)
REDACTED = "[REDACTED]"

# Controls, format characters (zero-width, bidi, tags) and the other default ignorable code
# points (variation selectors, fillers): nothing a reader sees. Whitespace goes separately.
_INVISIBLE = lazy_pattern(
    r"[\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    r"\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb"
    r"\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\U000110bd\U000110cd\U00013430-\U0001343f"
    r"\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_ASCII_INVISIBLE = dict.fromkeys([*range(0x21), 0x7F])  # controls and the space
#: Up to this many texts, every ordered pair is joined; beyond it, neighbours only.
ALL_PAIRS_UP_TO = 8
#: How much of each end a pair joins: more than any credential's shape but a long JWT's.
PAIR_REACH = 512


def find_secret(text: str) -> str | None:
    """The kind of the first credential ``text`` carries (``"a GitHub token"``), or None."""
    found = _SCAN.search(text)
    if found is None:
        return None
    return _KINDS[int(found.lastindex or 1) - 1]


def find_secret_in(texts: Iterable[str]) -> str | None:
    """The kind of the first credential any of ``texts`` carries: in one text, in two joined
    (a token split across two arguments, in either order), or in all joined; also once the
    whitespace and invisible characters put inside a token are removed and look-alike
    characters folded (NFKC). With many texts, only neighbours are joined in pairs."""
    pieces = [t for t in texts if t]
    found = _in_pieces(pieces)
    if found is None:
        squeezed = [squeeze(t) for t in pieces]
        if squeezed != pieces:
            found = _in_pieces(squeezed)
    return found


def squeeze(text: str) -> str:
    """``text`` compatibility-folded (NFKC: fullwidth letters become ASCII ones) without
    whitespace and invisible characters: what a token split by them reads as."""
    if text.isascii():
        return text.translate(_ASCII_INVISIBLE)
    text = "".join(unicodedata.normalize("NFKC", text).split())
    return _INVISIBLE.sub("", text) if _INVISIBLE.search(text) else text


def _in_pieces(pieces: list[str]) -> str | None:
    for text in itertools.chain(pieces, _joined(pieces)):
        kind = find_secret(text)
        if kind is not None:
            return kind
    return None


def _joined(pieces: list[str]) -> Iterator[str]:
    """The ends of every ordered pair of a few pieces (of neighbours, either way, of many),
    then all the pieces in one."""
    if len(pieces) < 2:
        return
    if len(pieces) <= ALL_PAIRS_UP_TO:
        pairs: Iterable[tuple[str, str]] = itertools.permutations(pieces, 2)
    else:
        neighbours = list(itertools.pairwise(pieces))
        pairs = itertools.chain(neighbours, ((b, a) for a, b in neighbours))
    for first, second in pairs:
        yield first[-PAIR_REACH:] + second[:PAIR_REACH]
    yield "".join(pieces)


def secret_name(name: str) -> bool:
    """Whether a value called ``name`` is a secret by its name (``api_token``,
    ``Authorization``)."""
    lowered = name.lower()
    return any(s in lowered for s in SECRET_NAMES)


def scrub(value: Any) -> Any:
    """``value`` (a JSON-friendly one: strings, lists, dicts) with every credential found by
    its shape replaced by ``[REDACTED]``."""
    if isinstance(value, str):
        return _WHOLE.sub(REDACTED, value) if _SCAN.search(value) else value
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value
