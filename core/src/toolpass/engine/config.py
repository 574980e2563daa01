"""Connections, from a YAML file or from the same mappings in code.

A connection has ``id``, ``integration``, ``url``, the common keys below and the
integration's own keys. Unknown keys, missing required keys, bad secret references and
duplicate ids are errors that name the file, the line and the key. Secrets are only given
by reference (``env:NAME``, ``file:/path``); ``toolpass.literal()`` is for code.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from toolpass.store import Store, StoreUnavailable, open_store, store_kind
from toolpass.wire.errors import ConfigError, LookupFailed
from toolpass.wire.http import NetOptions, tls_context
from toolpass.wire.http import check_url as check_url  # re-exported
from toolpass.wire.http import is_loopback as is_loopback  # re-exported
from toolpass.wire.identity import parse_identity
from toolpass.wire.keys import COMMON_KEYS as COMMON_KEYS  # re-exported
from toolpass.wire.keys import ConfigKey as ConfigKey  # re-exported
from toolpass.wire.keys import ConnectionConfig as ConnectionConfig  # re-exported
from toolpass.wire.keys import KeyType
from toolpass.wire.secrets import Secret, parse_secret
from toolpass.wire.watched import yaml_module

if TYPE_CHECKING:
    from toolpass.integrations.base import Integration

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_COMMON = {k.name for k in COMMON_KEYS}
_SECTIONS = ("connections", "server", "mcp", "store", "mode")
_MODES = ("enforce", "observe")


@dataclass(frozen=True)
class Config:
    """A whole configuration. ``server`` is the ``server:`` section, for toolpass-server;
    ``mcp`` the ``mcp:`` section, for toolpass-mcp's proxy (each validated by its owner)."""

    connections: tuple[ConnectionConfig, ...]
    server: Mapping[str, Any] = field(default_factory=dict)
    path: str | None = None
    mcp: Mapping[str, Any] = field(default_factory=dict)
    #: The ``store:`` URL shared by the processes of a deployment (``toolpass.store``); in
    #: the file it may be a secret reference (``env:NAME``, ``file:/path``) to the URL.
    store: str | None = field(default=None, repr=False)
    #: Where ``store`` was given (``FILE, line N``), for errors about it.
    store_origin: str | None = None
    #: ``mode:``: ``enforce`` or ``observe`` for every tool checked against these
    #: connections, unless a toolkit, guard, rule or tool says otherwise (None: enforce).
    mode: str | None = None

    def open_store(self, store: Store | str) -> Store:
        """``store`` opened; when it is this file's ``store:`` and cannot be opened, a
        ``ConfigError`` names the file and line."""
        try:
            return open_store(store)
        except (StoreUnavailable, ImportError) as e:  # ImportError: the store's extra is missing
            if self.store_origin is None or store != self.store:
                raise
            raise ConfigError(f"{self.store_origin}: 'store': cannot be opened ({e})") from None

    def secret_references(self) -> frozenset[str]:
        """Where the connections read their secrets from, as written (``env:NAME``,
        ``file:/path``; never a literal's value)."""
        return frozenset(
            value.reference
            for connection in self.connections
            for value in connection.options.values()
            if isinstance(value, Secret)
        )


class Located(dict[str, Any]):
    """A mapping read from YAML, remembering the line of each key (1-based)."""

    line: int = 0
    lines: dict[str, int]


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a YAML configuration file (``ConfigError``: its first problem)."""
    config, problems = read_config(path)
    if problems:
        raise ConfigError(problems[0])
    return config


def read_config(path: str | os.PathLike[str]) -> tuple[Config, list[str]]:
    """Read a YAML configuration file: what of it is valid, and every problem found, each
    naming the file and line (``ConfigError`` when the file cannot be read as YAML)."""
    path = os.fspath(path)
    data = _read_yaml(path)
    problems: list[str] = []
    for key in data:
        if key not in _SECTIONS:
            problems.append(
                f"{path}, line {data.lines[key]}: unknown top-level key {key!r}"
                f"{did_you_mean(key, _SECTIONS)} (expected {', '.join(_SECTIONS)})"
            )
    raw = data.get("connections")
    if not isinstance(raw, list):
        at = data.lines.get("connections", 1)
        problems.append(f"{path}, line {at}: 'connections' must be a list of mappings")
        raw = []
    sections: dict[str, Mapping[str, Any]] = {}
    for name in ("server", "mcp"):
        sections[name] = data.get(name, {})
        if not isinstance(sections[name], dict):
            problems.append(f"{path}, line {data.lines[name]}: {name!r} must be a mapping")
            sections[name] = {}
    base = os.path.dirname(os.path.abspath(path))
    store = None
    if data.get("store") is not None:
        where = f"{path}, line {data.lines['store']}: 'store'"
        try:
            store = _store_url(data["store"], where, base)
        except ConfigError as e:
            problems.append(str(e))
    mode = data.get("mode")
    if mode is not None and mode not in _MODES:
        problems.append(
            f"{path}, line {data.lines['mode']}: 'mode' must be enforce or observe, not "
            f"{mode!r}{did_you_mean(mode, _MODES)}"
        )
        mode = None
    connections = _parse_all(raw, path, base, problems)
    origin = f"{path}, line {data.lines['store']}" if store else None
    config = Config(connections, sections["server"], path, sections["mcp"], store, origin, mode)
    return config, problems


def _read_yaml(path: str) -> Located:
    yaml = yaml_module()
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.load(f, Loader=_loader(yaml, path))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror})")
    except yaml.MarkedYAMLError as e:
        line = f", line {e.problem_mark.line + 1}" if e.problem_mark else ""
        raise ConfigError(f"{path}{line}: not valid YAML ({e.problem})")
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})")
    if not isinstance(data, Located):
        raise ConfigError(f"{path}: expected a mapping with a 'connections' list")
    return data


def did_you_mean(word: object, names: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when one of ``names`` is close to ``word``, else ``""``."""
    close = difflib.get_close_matches(str(word), list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _store_url(raw: object, where: str, base: str) -> str:
    """The store URL ``raw`` gives, reading it from the secret ``env:NAME`` or ``file:/path``
    refers to (a Redis URL may hold a password); never echoes a secret's value."""
    if isinstance(raw, str) and raw.startswith(("env:", "file:")):
        try:
            secret = parse_secret(raw, allow_literal=False)
            if secret.reference.startswith("file:"):
                secret = Secret("file", os.path.join(base, secret.reference[5:]))
            url = secret.get().strip()
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
        try:
            store_kind(url)
        except ValueError:
            raise ConfigError(
                f"{where}: the secret {raw} is not a store URL "
                "(memory:, sqlite:///absolute/path/to/state.db or redis://host:6379/0)"
            ) from None
        return url
    try:
        store_kind(raw if isinstance(raw, str) else "")
    except ValueError as e:
        raise ConfigError(f"{where}: {e}") from None
    assert isinstance(raw, str)
    return raw


def _loader(yaml: Any, path: str) -> Any:
    class Loader(yaml.SafeLoader):  # type: ignore[misc]
        pass

    def mapping(loader: Any, node: Any) -> Located:
        loader.flatten_mapping(node)
        result = Located()
        result.line = node.start_mark.line + 1
        result.lines = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise ConfigError(f"{path}, line {line}: keys must be strings, not {key!r}")
            if key in result:
                raise ConfigError(f"{path}, line {line}: duplicate key {key!r}")
            result[key] = loader.construct_object(value_node, deep=True)
            result.lines[key] = line
        return result

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return Loader


def parse_connections(
    raw: Iterable[object], *, source: str | None = None, base_dir: str | None = None
) -> tuple[ConnectionConfig, ...]:
    """Validate connection mappings; ``source`` is the file they came from (None: code)."""
    problems: list[str] = []
    result = _parse_all(raw, source, base_dir, problems)
    if problems:
        raise ConfigError(problems[0])
    return result


def _parse_all(
    raw: Iterable[object], source: str | None, base_dir: str | None, problems: list[str]
) -> tuple[ConnectionConfig, ...]:
    """The valid connections of ``raw``; the problem of each other one added to ``problems``."""
    seen: dict[str, str] = {}
    result = []
    for index, item in enumerate(raw):
        try:
            conn = _parse_one(item, index, source, base_dir)
        except ConfigError as e:
            problems.append(str(e))
            continue
        if conn.id in seen:
            problems.append(
                f"{conn.origin}: duplicate connection id {conn.id!r} (first at {seen[conn.id]})"
            )
            continue
        seen[conn.id] = conn.origin
        result.append(conn)
    return tuple(result)


def _parse_one(
    item: object, index: int, source: str | None, base_dir: str | None
) -> ConnectionConfig:
    in_code = source is None
    origin = f"connections[{index}]" if in_code else f"{source}, connections[{index}]"
    if not isinstance(item, Mapping):
        raise ConfigError(f"{origin}: a connection must be a mapping")
    lines = item.lines if isinstance(item, Located) else {}
    if isinstance(item, Located):
        origin = f"{source}, line {item.line}"

    def where(key: str) -> str:
        head, _, rest = key.partition(".")
        nested = item.get(head)
        line = lines.get(head)
        if rest and isinstance(nested, Located):
            line = nested.lines.get(rest, line)
        at = f"{source}, line {line}" if line else origin
        return f"{at}, connection {item.get('id')!r}, key {key!r}"

    for key in ("id", "integration"):
        if key not in item:
            raise ConfigError(f"{origin}: missing required key {key!r}")
    conn_id = item["id"]
    if not isinstance(conn_id, str) or not _ID.fullmatch(conn_id):
        raise ConfigError(f"{where('id')}: must be letters, digits, '.', '_' or '-'")
    cls = _integration(item["integration"], in_code, where("integration"))
    own = {k.name: k for k in cls.keys}
    for key in item:
        if key not in own and key not in _COMMON:
            known = sorted(_COMMON | set(own))
            raise ConfigError(
                f"{where(str(key))}: unknown key{did_you_mean(key, known)} "
                f"(expected one of {', '.join(known)})"
            )
    try:
        options = {k.name: _value(k, item.get(k.name), in_code, base_dir) for k in cls.keys}
        _needed(cls.keys, options)
        cls.validate(options)
        identity = parse_identity(
            item.get("identity"), cls.identity_modes, in_code=in_code, base_dir=base_dir
        )
        url = _url(item.get("url", cls.default_url))
        timeout = _seconds(item.get("timeout", 10.0), "timeout", positive=True)
        allow_ttl = _seconds(item.get("cache_ttl_allow", 60.0), "cache_ttl_allow")
        deny_ttl = _seconds(item.get("cache_ttl_deny", 15.0), "cache_ttl_deny")
        net = _net(item, base_dir)
    except ConfigError as e:
        raise ConfigError(f"{where(e.key or 'id')}: {e}") from None
    return ConnectionConfig(
        conn_id, cls, url, timeout, net, allow_ttl, deny_ttl, identity, options, origin
    )


def _integration(value: object, in_code: bool, where: str) -> type[Integration]:
    from toolpass import integrations
    from toolpass.integrations.base import Integration

    if in_code and isinstance(value, type) and issubclass(value, Integration):
        return value
    if not isinstance(value, str):
        raise ConfigError(f"{where}: must be an integration name")
    try:
        return integrations.get(value)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}{did_you_mean(value, integrations.available())}") from None


def _value(key: ConfigKey, value: Any, in_code: bool, base_dir: str | None) -> Any:
    if value is None:
        if key.required:
            raise ConfigError("missing required key", key.name)
        return key.default
    if key.secret:
        try:
            secret = parse_secret(value, allow_literal=in_code)
        except ConfigError as e:
            raise ConfigError(str(e), key.name) from None
        if secret.reference.startswith("file:") and base_dir:
            secret = Secret("file", os.path.join(base_dir, secret.reference[5:]))
        return secret
    kind = key.kind
    if not _is(kind, value):
        raise ConfigError(f"must be a {kind}", key.name)
    if key.choices is not None and value not in key.choices:
        close = did_you_mean(value, map(str, key.choices))
        raise ConfigError(f"must be one of {', '.join(map(str, key.choices))}{close}", key.name)
    if kind in ("int", "float"):
        _within(key, value)
    if kind == "float":
        return float(value)
    return tuple(value) if kind == "list" else value


def _needed(keys: Iterable[ConfigKey], options: Mapping[str, Any]) -> None:
    """Refuse a choice (``auth: oauth``) without a key it ``needs`` (``client_id``)."""
    for key in keys:
        chosen = options.get(key.name)
        if key.needs is None or not isinstance(chosen, str):
            continue
        for needed in key.needs.get(chosen, ()):
            if options.get(needed) is None:
                raise ConfigError(f"{key.name} {chosen} needs {needed}", needed)


def _within(key: ConfigKey, value: float) -> None:
    """Refuse a number outside the key's ``minimum``..``maximum`` (NaN is outside any)."""
    low, high = key.minimum, key.maximum
    if (low is None or value >= low) and (high is None or value <= high):
        return
    unit = f" {key.unit}" if key.unit else ""
    if low is not None and high is not None:
        raise ConfigError(f"must be between {low:g} and {high:g}{unit}", key.name)
    bound = f"{low:g} or more" if low is not None else f"{high:g} or less"
    raise ConfigError(f"must be {bound}{unit}", key.name)


def _is(kind: KeyType, value: object) -> bool:
    if kind in ("int", "float") and isinstance(value, bool):
        return False
    types: dict[str, Any] = {
        "str": str,
        "int": int,
        "float": (int, float),
        "bool": bool,
        "list": (list, tuple),
        "map": Mapping,
        "any": object,
    }
    return isinstance(value, types[kind])


def _seconds(value: object, key: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError("must be a number of seconds", key)
    if positive and value == 0:
        raise ConfigError("must be more than 0 seconds", key)
    return float(value)


def _url(url: object) -> str:
    if url is None:
        raise ConfigError("missing required key (this integration has no default URL)", "url")
    return check_url(url, "url")


def _net(item: Mapping[str, Any], base_dir: str | None) -> NetOptions:
    ca_file = item.get("ca_file")
    if ca_file is not None:
        if not isinstance(ca_file, str):
            raise ConfigError("must be a path", "ca_file")
        ca_file = os.path.join(base_dir or "", ca_file)
        try:
            tls_context(ca_file)
        except LookupFailed as e:
            raise ConfigError(str(e), "ca_file") from None
    name = item.get("tls_server_name")
    if name is not None and (not isinstance(name, str) or not name or "/" in name):
        raise ConfigError("must be a host name", "tls_server_name")
    proxy = item.get("proxy_url")
    if proxy is not None:
        parts = urlsplit(proxy) if isinstance(proxy, str) else None
        if parts is None or parts.scheme != "http" or not parts.hostname:
            raise ConfigError("must be an http://host:port proxy URL", "proxy_url")
        if parts.username or parts.password:
            raise ConfigError("proxy credentials are not supported", "proxy_url")
    return NetOptions(ca_file, name, proxy)
