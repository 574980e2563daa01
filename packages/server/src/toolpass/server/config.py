"""The ``server:`` section of the configuration file.

::

    server:
      api_keys:                       # required: one or more secret references
        - env:TOOLPASS_API_KEY        #   named by the reference in the access log
        - name: deploy-bot            #   or named explicitly
          key: file:/run/secrets/deploy-bot
      host: 127.0.0.1                 # --host overrides
      port: 8080                      # --port overrides
      workers: 1                      # --workers overrides; each worker has its own cache
      threads: 32                     # uncached look-ups under way at once, per worker
      max_body_bytes: 16384           # a larger POST /check body is refused with 413
      access_log: true                # one JSON line per request on stdout
      shutdown_timeout: 30            # seconds in-flight requests get after SIGTERM
      keep_alive_timeout: 30          # seconds an idle kept-alive connection stays open
      tls_cert_file: /etc/toolpass/tls/tls.crt   # serve https (both or neither)
      tls_key_file: /etc/toolpass/tls/tls.key
      public_url: https://toolpass.example.com   # the URL clients reach (AuthZEN metadata)
      approvals: {...}                # the approvals page (see approvals_config.py)

Unknown keys, wrong types and bad references are errors naming the file, the line and the
key. Keys are resolved (and checked) when the app is created, never printed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolpass.server.approvals_config import ApprovalsConfig, parse_approvals
from toolpass.wire.errors import ConfigError
from toolpass.wire.secrets import Secret, parse_secret

MIN_KEY_LENGTH = 16
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/-]{0,99}")
_KEY_CHARS = re.compile(r"[\x21-\x7e]+")  # printable ASCII, no spaces

#: key -> (description, default). The order is the order of the docs and of error hints.
KEYS: dict[str, tuple[str, Any]] = {
    "api_keys": ("API keys, as secret references (env:NAME, file:/path) or {name, key}.", None),
    "host": ("The address to listen on.", "127.0.0.1"),
    "port": ("The TCP port to listen on.", 8080),
    "workers": ("Worker processes; each has its own decision cache.", 1),
    "threads": ("Threads for uncached look-ups (each waits on a system's API), per worker.", 32),
    "max_body_bytes": ("The largest POST /check body accepted, in bytes.", 16384),
    "access_log": ("Write one JSON line per request to stdout.", True),
    "shutdown_timeout": ("Seconds in-flight requests get to finish after SIGTERM.", 30.0),
    "keep_alive_timeout": ("Seconds an idle kept-alive connection stays open.", 30.0),
    "tls_cert_file": ("PEM certificate chain; serve https (needs tls_key_file).", None),
    "tls_key_file": ("PEM private key of tls_cert_file.", None),
    "public_url": ("The URL clients reach the server at; AuthZEN metadata names it.", None),
    "approvals": ("The approvals page: its login, audit tail and session length.", None),
}


@dataclass(frozen=True)
class APIKey:
    """One accepted API key: the name the access log shows, and where its value is."""

    name: str
    secret: Secret
    origin: str = ""

    def __repr__(self) -> str:
        return f"APIKey({self.name!r}, {self.secret!r})"


@dataclass(frozen=True)
class ServerConfig:
    """A validated ``server:`` section (see the module docstring for the keys)."""

    api_keys: tuple[APIKey, ...]
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    threads: int = 32
    max_body_bytes: int = 16384
    access_log: bool = True
    shutdown_timeout: float = 30.0
    keep_alive_timeout: float = 30.0
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    public_url: str | None = None
    approvals: ApprovalsConfig | None = None
    origin: str = field(default="server", compare=False)

    @property
    def scheme(self) -> str:
        """``https`` when a certificate is configured, else ``http``."""
        return "https" if self.tls_cert_file else "http"

    def replace(self, **changes: Any) -> ServerConfig:
        """A copy with ``changes`` (the command line's overrides); ``None`` values are ignored."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def resolve_keys(self) -> tuple[tuple[str, bytes], ...]:
        """``(name, sha256 of the value)`` for each key; raises ConfigError naming the key.

        Every reference must resolve to printable ASCII without spaces, at least
        ``MIN_KEY_LENGTH`` characters long, and no two keys may share a value.
        """
        return resolve_keys(self.api_keys)


def resolve_keys(keys: Sequence[APIKey]) -> tuple[tuple[str, bytes], ...]:
    """``(name, sha256 of the value)`` for each of ``keys`` (see ServerConfig.resolve_keys)."""
    resolved: list[tuple[str, bytes]] = []
    seen: dict[bytes, str] = {}
    for key in keys:
        try:
            value = key.secret.get()
        except ConfigError as e:
            raise ConfigError(f"{key.origin}: {e}") from None
        if not _KEY_CHARS.fullmatch(value):
            raise ConfigError(
                f"{key.origin}: secret {key.secret.reference}: an API key must be "
                "printable ASCII without spaces"
            )
        if len(value) < MIN_KEY_LENGTH:
            raise ConfigError(
                f"{key.origin}: secret {key.secret.reference}: an API key must be at least "
                f"{MIN_KEY_LENGTH} characters long"
            )
        digest = hashlib.sha256(value.encode("ascii")).digest()
        if digest in seen:
            raise ConfigError(
                f"{key.origin}: API key {key.name!r} has the same value as {seen[digest]!r}"
            )
        seen[digest] = key.name
        resolved.append((key.name, digest))
    return tuple(resolved)


def parse_server_config(
    section: Mapping[str, Any] | None,
    *,
    source: str | None = None,
    base_dir: str | None = None,
    store: str | None = None,
) -> ServerConfig:
    """Validate a ``server:`` mapping. ``source`` is the file it came from (None: code).

    In code a key may also be a :class:`~toolpass.Secret` (``toolpass.engine.literal`` too);
    relative ``file:`` references and TLS paths are taken from ``base_dir``. ``store`` is
    the configuration's ``store:`` URL, which the approvals page needs.
    """
    in_code = source is None
    origin = "server" if in_code else f"{source}, server"
    section = {} if section is None else section
    if not isinstance(section, Mapping):
        raise ConfigError(f"{origin}: 'server' must be a mapping")
    lines: Mapping[str, int] = getattr(section, "lines", {})

    def where(key: str, line: int | None = None) -> str:
        head = key.split("[")[0].split(".")[0]
        line = line or lines.get(head) or getattr(section, "line", None)
        at = f"{source}, line {line}" if source and line else (source or "")
        return f"{at}, server key {key!r}" if at else f"server key {key!r}"

    for key in section:
        if key not in KEYS:
            raise ConfigError(f"{where(str(key))}: unknown key (expected one of {', '.join(KEYS)})")
    values: dict[str, Any] = {}
    for key in ("host", "tls_cert_file", "tls_key_file"):
        if key in section:
            value = section[key]
            if not isinstance(value, str) or not value or value != value.strip():
                raise ConfigError(f"{where(key)}: must be a non-empty string")
            values[key] = value
    for key, low, high in (
        ("port", 0, 65535),
        ("workers", 1, 64),
        ("threads", 1, 1024),
        ("max_body_bytes", 256, 16 * 1024 * 1024),
    ):
        if key in section:
            value = section[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(f"{where(key)}: must be a whole number from {low} to {high}")
            values[key] = value
    for key in ("shutdown_timeout", "keep_alive_timeout"):
        if key in section:
            value = section[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"{where(key)}: must be a number of seconds more than 0")
            values[key] = float(value)
    if "access_log" in section:
        if not isinstance(section["access_log"], bool):
            raise ConfigError(f"{where('access_log')}: must be true or false")
        values["access_log"] = section["access_log"]
    if ("tls_cert_file" in values) != ("tls_key_file" in values):
        missing = "tls_key_file" if "tls_cert_file" in values else "tls_cert_file"
        present = "tls_cert_file" if missing == "tls_key_file" else "tls_key_file"
        raise ConfigError(f"{where(present)}: needs {missing} as well")
    for key in ("tls_cert_file", "tls_key_file"):
        if key in values:
            path = os.path.join(base_dir or "", values[key])
            if not os.path.isfile(path):
                raise ConfigError(f"{where(key)}: no such file")
            values[key] = path
    if "public_url" in section:
        values["public_url"] = _public_url(section["public_url"], where)
    keys = _api_keys(section.get("api_keys"), where, in_code, base_dir)

    def approver_keys(raw: object, label: str) -> tuple[APIKey, ...]:
        def at(key: str, line: int | None = None) -> str:
            return str(where(f"approvals.{key}", line))

        return _api_keys(raw, at, in_code, base_dir)

    approvals = parse_approvals(section.get("approvals"), store, where, approver_keys, base_dir)
    return ServerConfig(keys, origin=origin, approvals=approvals, **values)


def _public_url(raw: object, where: Any) -> str:
    """An http(s) URL with an optional path, without user, query or fragment; kept without
    its trailing slash."""
    usage = "must be an http(s) URL such as https://toolpass.example.com"
    if not isinstance(raw, str) or raw != raw.strip():
        raise ConfigError(f"{where('public_url')}: {usage}")
    try:
        url = urllib.parse.urlsplit(raw)
        url.port  # noqa: B018 (raises for a port out of range)
    except ValueError:
        raise ConfigError(f"{where('public_url')}: {usage}") from None
    if url.scheme not in ("http", "https") or not url.hostname or not raw.isprintable():
        raise ConfigError(f"{where('public_url')}: {usage}")
    if url.username is not None or url.password is not None:
        raise ConfigError(f"{where('public_url')}: no user or password in the URL")
    if url.query or url.fragment or "?" in raw or "#" in raw:
        raise ConfigError(f"{where('public_url')}: no query or fragment in the URL")
    return raw.rstrip("/")


def _api_keys(raw: object, where: Any, in_code: bool, base_dir: str | None) -> tuple[APIKey, ...]:
    if raw is None:
        raise ConfigError(
            f"{where('api_keys')}: missing; the server needs at least one API key "
            "(api_keys: [env:TOOLPASS_API_KEY])"
        )
    if isinstance(raw, (str, Secret)) or not isinstance(raw, Sequence) or not raw:
        raise ConfigError(f"{where('api_keys')}: must be a non-empty list of secret references")
    keys: list[APIKey] = []
    names: set[str] = set()
    for index, item in enumerate(raw):
        label = f"api_keys[{index}]"
        name: object = None
        ref: object = item
        line: int | None = None
        if isinstance(item, Mapping):
            item_lines: Mapping[str, int] = getattr(item, "lines", {})
            line = getattr(item, "line", None)
            for k in item:
                if k not in ("name", "key"):
                    at = where(f"{label}.{k}", item_lines.get(str(k), line))
                    raise ConfigError(f"{at}: unknown key (expected name, key)")
            if "key" not in item:
                raise ConfigError(f"{where(label, line)}: missing 'key' (a secret reference)")
            name, ref = item.get("name"), item["key"]
            line = item_lines.get("key", line)
        try:
            secret = parse_secret(ref, allow_literal=in_code)
        except ConfigError as e:
            raise ConfigError(f"{where(label, line)}: {e}") from None
        if secret.reference.startswith("file:") and base_dir:
            secret = Secret("file", os.path.join(base_dir, secret.reference[5:]))
        if name is None:
            name = secret.reference if secret.reference != "literal(***)" else f"key{index}"
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"{where(label + '.name', line)}: a key name is letters, digits and ._:@/- "
                "(at most 100)"
            )
        if name in names:
            raise ConfigError(f"{where(label + '.name', line)}: duplicate key name {name!r}")
        names.add(name)
        keys.append(APIKey(name, secret, where(label, line)))
    return tuple(keys)
