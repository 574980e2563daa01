"""Secret scanning: text that carries a credential of a well-known kind.

Used where data is about to leave: the arguments of a ``sends_out`` tool and the body of a
request to a route that sends data out. Patterns are the documented shapes of each vendor's
tokens, so ordinary text does not match.
"""

from __future__ import annotations

import re

#: kind -> pattern of the credential's documented shape.
PATTERNS: dict[str, str] = {
    "a private key": r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    "a GitHub token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})\b",
    "a GitLab token": r"\bglpat-[A-Za-z0-9_-]{20,}\b",
    "a Slack token": r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}\b",
    "an AWS access key": r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",
    "a Google API key": r"\bAIza[0-9A-Za-z_-]{35}\b",
    "a Stripe secret key": r"\b[rs]k_live_[0-9A-Za-z]{20,}\b",
    "an OpenAI or Anthropic API key": r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{32,}\b",
    "a JSON Web Token": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
}
_SCAN = re.compile("|".join(f"(?P<k{i}>{p})" for i, p in enumerate(PATTERNS.values())))
_KINDS = list(PATTERNS)


def find_secret(text: str) -> str | None:
    """The kind of the first credential ``text`` carries (``"a GitHub token"``), or None."""
    found = _SCAN.search(text)
    if found is None:
        return None
    return _KINDS[int(str(found.lastgroup)[1:])]
