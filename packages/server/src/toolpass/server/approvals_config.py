"""The ``server: approvals:`` section: the approvals page.

::

    store: sqlite:///var/lib/toolpass/state.db    # required: where the tools keep requests
    server:
      approvals:
        enabled: true                     # default true when the section is there
        api_keys:                         # sign in with a key; its name is the decider's name
          - name: lee@example.com
            key: env:TOOLPASS_APPROVER_LEE
        proxy:                            # or trust an OIDC proxy's identity header
          user_header: X-Forwarded-User   #   the decider's name
          email_header: X-Forwarded-Email #   shown beside it (optional)
        trusted_proxies: [10.0.0.0/8]     # the proxies in front: the only peers whose
                                          #   X-Forwarded-For and identity headers count
                                          #   (default: none, so no header is trusted)
        self_approval: false              # may a person approve a call made for them
        audit_file: /var/log/toolpass/audit.jsonl   # the live tail (optional)
        audit_lines: 50                   # events the tail shows
        session_minutes: 480              # a sign-in lasts this long
        ttl: 900                          # the tools' ApprovalQueue(ttl=...), in seconds
        history_days: 7                   # the decided history shows (and keeps) this long
        max_standing_minutes: 480         # the longest standing approval the page grants
        public_url: https://toolpass.example.com    # the page's origin, when a proxy rewrites it

A page with neither ``api_keys`` nor ``proxy`` is refused when the server starts: it is never
open to all. So is one without a shared ``store:`` (a memory store sees no other process), and
a ``proxy`` login without ``trusted_proxies``.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolpass.toolkit.approval import DEFAULT_TTL
from toolpass.wire.errors import ConfigError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
KEYS = (
    "enabled",
    "api_keys",
    "proxy",
    "audit_file",
    "audit_lines",
    "session_minutes",
    "ttl",
    "public_url",
    "trusted_proxies",
    "self_approval",
    "history_days",
    "max_standing_minutes",
)
PROXY_KEYS = ("user_header", "email_header")
_HEADER = re.compile(r"[A-Za-z0-9-]{1,100}")
_ORIGIN = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+")


@dataclass(frozen=True)
class ProxyLogin:
    """Sign in the person ``user_header`` names (with ``email_header`` beside it), when the
    request comes from one of the ``trusted_proxies``."""

    user_header: str
    email_header: str | None


@dataclass(frozen=True)
class ApprovalsConfig:
    """A validated ``approvals:`` section (``api_keys`` as the server's own APIKey list)."""

    store: str
    api_keys: tuple[Any, ...] = ()
    proxy: ProxyLogin | None = None
    audit_file: str | None = None
    audit_lines: int = 50
    session_minutes: int = 480
    ttl: float = DEFAULT_TTL
    public_url: str | None = None
    trusted_proxies: tuple[Network, ...] = ()
    self_approval: bool = False
    history_days: int = 7
    max_standing_minutes: int = 480

    def trusts(self, address: str | None) -> bool:
        """Whether ``address`` (a request's peer) is one of the ``trusted_proxies`` (an
        IPv4-mapped IPv6 address, as a dual-stack socket writes it, as its IPv4 address)."""
        try:
            ip = ipaddress.ip_address(address or "")
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in net for net in self.trusted_proxies)


def parse_approvals(
    raw: object,
    store: str | None,
    where: Callable[[str], str],
    parse_keys: Callable[[object, str], tuple[Any, ...]],
    base_dir: str | None,
) -> ApprovalsConfig | None:
    """The page's settings, or None when it is off. ``where(key)`` says where a key is;
    ``parse_keys(raw, label)`` reads a list of API keys as ``server: api_keys`` does."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where('approvals')}: must be a mapping")
    for key in raw:
        if key not in KEYS:
            raise ConfigError(
                f"{where(f'approvals.{key}')}: unknown key (expected one of {', '.join(KEYS)})"
            )
    for key in ("enabled", "self_approval"):
        if not isinstance(raw.get(key, False), bool):
            raise ConfigError(f"{where(f'approvals.{key}')}: must be true or false")
    if not raw.get("enabled", True):
        return None
    if not store or store.startswith("memory:"):
        raise ConfigError(
            f"{where('approvals')}: the approvals page needs a shared store: set the top-level "
            "'store:' to sqlite:///path/to/state.db or redis://host:6379/0, the same as the "
            "tools' ApprovalQueue(store=...)"
        )
    values: dict[str, Any] = {}
    if raw.get("api_keys") is not None:
        values["api_keys"] = parse_keys(raw["api_keys"], "approvals.api_keys")
    if raw.get("proxy") is not None:
        values["proxy"] = _proxy(raw["proxy"], where)
    if raw.get("trusted_proxies") is not None:
        values["trusted_proxies"] = _networks(raw["trusted_proxies"], where)
    if "proxy" in values and not values.get("trusted_proxies"):
        raise ConfigError(
            f"{where('approvals.trusted_proxies')}: the proxy login needs the proxy's addresses "
            "or networks (its identity header from any other address is ignored)"
        )
    if not values.keys() & {"api_keys", "proxy"}:
        raise ConfigError(
            f"{where('approvals')}: the approvals page needs a login: approvals.api_keys "
            "(people sign in with a key) or approvals.proxy (an OIDC proxy's header); it is "
            "never open to all"
        )
    if "audit_file" in raw:
        path = raw["audit_file"]
        if not isinstance(path, str) or not path.strip():
            raise ConfigError(f"{where('approvals.audit_file')}: must be a file path")
        values["audit_file"] = os.path.join(base_dir or "", path)
    limits = (
        ("audit_lines", 1, 1000),
        ("session_minutes", 1, 7 * 24 * 60),
        ("history_days", 1, 366),
        ("max_standing_minutes", 1, 7 * 24 * 60),
    )
    for key, low, high in limits:
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(
                    f"{where(f'approvals.{key}')}: must be a whole number from {low} to {high}"
                )
            values[key] = value
    if "ttl" in raw:
        ttl = raw["ttl"]
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
            raise ConfigError(f"{where('approvals.ttl')}: must be a number of seconds more than 0")
        values["ttl"] = float(ttl)
    if "public_url" in raw:
        url = raw["public_url"]
        if not isinstance(url, str) or not _ORIGIN.fullmatch(url.rstrip("/")):
            raise ConfigError(
                f"{where('approvals.public_url')}: must be an origin such as "
                "https://toolpass.example.com (no path)"
            )
        values["public_url"] = url.rstrip("/")
    return ApprovalsConfig(store, self_approval=raw.get("self_approval", False), **values)


def _proxy(raw: object, where: Callable[[str], str]) -> ProxyLogin:
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"{where('approvals.proxy')}: must be a mapping ({', '.join(PROXY_KEYS)})"
        )
    if "trusted" in raw:
        raise ConfigError(
            f"{where('approvals.proxy.trusted')}: moved to approvals.trusted_proxies (it also "
            "says whose X-Forwarded-For counts)"
        )
    for key in raw:
        if key not in PROXY_KEYS:
            raise ConfigError(
                f"{where(f'approvals.proxy.{key}')}: unknown key "
                f"(expected one of {', '.join(PROXY_KEYS)})"
            )
    headers: dict[str, str | None] = {"user_header": None, "email_header": None}
    for key in headers:
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not _HEADER.fullmatch(value):
            raise ConfigError(f"{where(f'approvals.proxy.{key}')}: must be a header name")
        headers[key] = value.lower()
    if headers["user_header"] is None:
        raise ConfigError(
            f"{where('approvals.proxy.user_header')}: missing (the header holding the "
            "signed-in user, e.g. X-Forwarded-User)"
        )
    user_header = headers["user_header"]
    assert user_header is not None
    return ProxyLogin(user_header, headers["email_header"])


def _networks(raw: object, where: Callable[[str], str]) -> tuple[Network, ...]:
    if isinstance(raw, str) or not isinstance(raw, list):
        raise ConfigError(
            f"{where('approvals.trusted_proxies')}: must list the proxies' addresses or networks"
        )
    networks: list[Network] = []
    for item in raw:
        try:
            networks.append(ipaddress.ip_network(str(item), strict=False))
        except ValueError:
            raise ConfigError(
                f"{where('approvals.trusted_proxies')}: {str(item)[:60]!r} is not an address or "
                "network"
            ) from None
    return tuple(networks)
