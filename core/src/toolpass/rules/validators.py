"""Ready-made validators for ``secured_tool(validators={...})``.

Each accepts a value by returning True and rejects it by raising ``ValueError`` with a
sentence the model can act on (the pipeline shows it as ``invalid_arguments``).
"""

from __future__ import annotations

import math
import numbers
import operator
import posixpath
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from toolpass.rules.lazy import lazy_pattern
from toolpass.rules.scope import escapes
from toolpass.rules.urls import host_of_email, normalize_host, parse_url

Validator = Callable[[Any], bool]


def _finite(value: Any) -> bool:
    if isinstance(value, numbers.Integral):
        return True
    if isinstance(value, Decimal):
        return value.is_finite()
    try:
        return math.isfinite(value)
    except (TypeError, ValueError, OverflowError):
        return False


def _number(value: Any) -> Any:
    """``value`` if it is a finite real number (an int, a float, a ``Decimal``, a
    ``numbers.Real``); ``ValueError`` otherwise. Compared as it is, never through a float,
    so a big int or a precise ``Decimal`` does not round to the limit."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, Decimal)):
        raise ValueError(f"must be a number, not {type(value).__name__}")
    if not _finite(value):
        raise ValueError(f"must be a finite number, not {value}")
    return value


def _limit(limit: Any) -> Any:
    try:
        return _number(limit)
    except ValueError as e:
        raise ValueError(f"a numeric limit {e}") from None


def _beyond(value: Any, limit: Any, past: Callable[[Any, Any], Any]) -> bool:
    """``past(value, limit)`` for a finite number ``value`` (``operator.gt``: above it)."""
    try:
        return bool(past(_number(value), limit))
    except TypeError:
        raise ValueError(f"must be a number comparable with {limit}") from None


def at_most(limit: float) -> Validator:
    """A finite number no greater than ``limit``."""
    limit = _limit(limit)

    def check(value: Any) -> bool:
        if _beyond(value, limit, operator.gt):
            raise ValueError(f"must be at most {limit}")
        return True

    return check


def at_least(limit: float) -> Validator:
    """A finite number no smaller than ``limit``."""
    limit = _limit(limit)

    def check(value: Any) -> bool:
        if _beyond(value, limit, operator.lt):
            raise ValueError(f"must be at least {limit}")
        return True

    return check


def one_of(*allowed: Any) -> Validator:
    """One of ``allowed``, compared by type and value (``1`` is not ``True``)."""
    choices = [(type(a), a) for a in allowed]
    shown = ", ".join(repr(a) for a in allowed)

    def check(value: Any) -> bool:
        if not any(type(value) is t and value == a for t, a in choices):
            raise ValueError(f"must be one of {shown}")
        return True

    return check


def max_length(limit: int) -> Validator:
    """A string (or list) of at most ``limit`` items."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"a length limit must be a whole number, 0 or more, not {limit!r}")

    def check(value: Any) -> bool:
        if not hasattr(value, "__len__") or len(value) > limit:
            raise ValueError(f"must be at most {limit} long")
        return True

    return check


def matches(pattern: str) -> Validator:
    """A string matching ``pattern`` as a whole."""
    compiled = re.compile(pattern)

    def check(value: Any) -> bool:
        if not isinstance(value, str) or compiled.fullmatch(value) is None:
            raise ValueError(f"must match {pattern}")
        return True

    return check


def path_under(root: str) -> Validator:
    """A relative path, or an absolute one, that stays inside ``root`` (no ``..``, no
    backslashes, no control characters, no look-alike separators)."""
    base = posixpath.normpath(root)

    def check(value: Any) -> bool:
        if not isinstance(value, str) or not value or escapes(value):
            raise ValueError(f"must be a plain path inside {base}")
        full = posixpath.normpath(posixpath.join(base, value))
        if full != base and not full.startswith(base.rstrip("/") + "/"):
            raise ValueError(f"must be a path inside {base}")
        return True

    return check


def email_domain(*domains: str) -> Validator:
    """An email address at one of ``domains`` (or any, when none is named), the domain read
    as a host (``toolpass.rules.urls``: IDNA, case, a trailing dot); the argument is a
    destination, checked against where its value came from."""
    allowed = {spelling for d in domains for spelling in normalize_host(d.lstrip("@"))}

    def check(value: Any) -> bool:
        text = value.strip() if isinstance(value, str) else ""
        hosts = host_of_email(text) if _ADDRESS.fullmatch(text) else []
        if not hosts:
            raise ValueError("must be an email address")
        if allowed and not allowed.intersection(hosts):
            raise ValueError(f"must be an address at {' or '.join(domains)}")
        return True

    check.destination = True  # type: ignore[attr-defined]
    return check


def url_host(*hosts: str) -> Validator:
    """An http(s) URL on one of ``hosts`` or their subdomains (or any, when none is named),
    read as the HTTP clients read it (``toolpass.rules.urls``): every host a client could
    connect to must be one of them. The argument is a destination, checked against where
    its value came from."""
    allowed = [spelling for h in hosts for spelling in normalize_host(h)]

    def check(value: Any) -> bool:
        url = parse_url(value) if isinstance(value, str) and _HTTP.match(value) else None
        if url is None:
            raise ValueError("must be an http or https URL")
        if allowed and not all(_under(host, allowed) for host in url.hosts):
            raise ValueError(f"must be a URL on {' or '.join(hosts)}")
        return True

    check.destination = True  # type: ignore[attr-defined]
    return check


def _under(host: str, allowed: list[str]) -> bool:
    return any(host == a or host.endswith("." + a) for a in allowed)


def is_destination(validator: Any) -> bool:
    """Whether ``validator`` marks its argument as a destination (``email_domain``,
    ``url_host``, or any callable with ``destination = True``)."""
    return getattr(validator, "destination", False) is True


_ADDRESS = lazy_pattern(r"[^@\s,;<>\\]+@[^@\s,;<>\\/?#%]+\.[^@\s,;<>\\/?#%]+")
_HTTP = lazy_pattern(r"\s*https?://", re.IGNORECASE)
