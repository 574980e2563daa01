"""The types a connection's configuration is made of: its keys, and one validated connection.

They sit under the integrations (which declare their keys and read their connection) and the
engine (which loads and checks a configuration against them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolpass.wire.decision import Decision
from toolpass.wire.http import NetOptions
from toolpass.wire.identity import IdentitySettings

KeyType = Literal["str", "int", "float", "bool", "list", "map", "any"]


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key: documented, optionally secret, required, defaulted or limited
    (to ``choices``, or to numbers from ``minimum`` to ``maximum``, counted in ``unit``);
    ``needs``: the other keys each choice needs set (``{"oauth": ("client_id", ...)}``).

    ``type`` is inferred from ``default`` when not given (``str`` without a default).
    """

    name: str
    description: str
    secret: bool = False
    required: bool = False
    default: Any = None
    choices: tuple[Any, ...] | None = None
    type: KeyType | None = None
    minimum: float | None = None
    unit: str = ""
    maximum: float | None = None
    needs: Mapping[str, tuple[str, ...]] | None = None

    @property
    def kind(self) -> KeyType:
        """The value's type."""
        if self.type is not None:
            return self.type
        return _infer(self.default)


def _infer(default: Any) -> KeyType:
    for t, kind in ((bool, "bool"), (int, "int"), (float, "float"), (list, "list"), (dict, "map")):
        if isinstance(default, t):
            return kind  # type: ignore[return-value]
    return "str"


COMMON_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("id", "A unique name for this connection.", required=True),
    ConfigKey("integration", "The system (see `toolpass catalog`).", required=True),
    ConfigKey("url", "The system's API base URL; https://, or http:// on localhost only."),
    ConfigKey(
        "timeout", "Seconds one whole check may take, all its requests together.", default=10.0
    ),
    ConfigKey("ca_file", "PEM file of CA certificates that replace the system's roots."),
    ConfigKey("tls_server_name", "The name the server certificate must carry, if not the host."),
    ConfigKey("proxy_url", "An http:// proxy; https is tunnelled through CONNECT."),
    ConfigKey("cache_ttl_allow", "Seconds an allow is cached (0: never).", default=60.0),
    ConfigKey("cache_ttl_deny", "Seconds a deny is cached (0: never).", default=15.0),
    ConfigKey("identity", "How a user's email becomes the system's user.", type="map"),
)


@dataclass(frozen=True)
class ConnectionConfig:
    """One validated connection. ``options`` holds the integration's own keys, defaulted."""

    id: str
    integration: type[Any]  # the Integration subclass; integrations sit above this layer
    url: str
    timeout: float = 10.0
    net: NetOptions = field(default_factory=NetOptions)
    cache_ttl_allow: float = 60.0
    cache_ttl_deny: float = 15.0
    identity: IdentitySettings = field(default_factory=IdentitySettings)
    options: Mapping[str, Any] = field(default_factory=dict)
    origin: str = ""

    def ttl(self, decision: Decision) -> float:
        """How long ``decision`` may be cached (the cache never keeps unknown)."""
        return self.cache_ttl_allow if decision.decision == "allow" else self.cache_ttl_deny
