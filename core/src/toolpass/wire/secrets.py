"""Secret references: resolved when used, never printed.

A secret is given as ``env("NAME")``, ``file("/path")``, ``literal("value")`` (code only), or
the strings ``"env:NAME"`` and ``"file:/path"``. ``repr`` and ``str`` name the reference,
never the value.
"""

from __future__ import annotations

import os
from typing import Literal

from toolpass.rules.lazy import lazy_pattern
from toolpass.wire.errors import SecretError

Kind = Literal["env", "file", "literal"]
_ENV_NAME = lazy_pattern(r"[A-Za-z_][A-Za-z0-9_]*")


class Secret:
    """A reference to a secret value; ``get()`` resolves it each time it is called."""

    __slots__ = ("_kind", "_ref")

    def __init__(self, kind: Kind, ref: str) -> None:
        if not ref:
            raise SecretError(f"an empty {kind} secret reference")
        self._kind = kind
        self._ref = ref

    @property
    def reference(self) -> str:
        """The reference as written (``env:NAME``, ``file:/path``); a literal is redacted."""
        return "literal(***)" if self._kind == "literal" else f"{self._kind}:{self._ref}"

    def get(self) -> str:
        """The secret value; raises :class:`SecretError` naming the reference if it is missing."""
        if self._kind == "literal":
            return self._ref
        if self._kind == "env":
            value = os.environ.get(self._ref)
            if value is None:
                raise SecretError(f"secret {self.reference}: environment variable is not set")
        else:
            try:
                with open(self._ref, encoding="utf-8") as f:
                    value = f.read()
            except (OSError, UnicodeDecodeError) as e:
                reason = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
                raise SecretError(f"secret {self.reference}: cannot read the file ({reason})")
            value = value.rstrip("\r\n")
        if not value.strip():
            raise SecretError(f"secret {self.reference}: the value is empty")
        return value

    def check(self) -> None:
        """Raise :class:`SecretError` if the reference cannot be resolved now."""
        self.get()

    def __repr__(self) -> str:
        return f"Secret({self.reference})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and (self._kind, self._ref) == (other._kind, other._ref)

    def __hash__(self) -> int:
        return hash((self._kind, self._ref))


def env(name: str) -> Secret:
    """A secret read from the environment variable ``name`` when used."""
    if not _ENV_NAME.fullmatch(name):
        raise SecretError("an env: reference needs a variable name (letters, digits, underscores)")
    return Secret("env", name)


def file(path: str | os.PathLike[str]) -> Secret:
    """A secret read from the file at ``path`` when used (a trailing newline is dropped)."""
    return Secret("file", os.fspath(path))


def literal(value: str) -> Secret:
    """A secret given in code. Never write one into a configuration file."""
    return Secret("literal", value)


def parse_secret(value: object, *, allow_literal: bool) -> Secret:
    """Turn a configured value into a :class:`Secret`.

    Accepts a :class:`Secret` (a literal only when ``allow_literal``) or the strings
    ``env:NAME`` and ``file:/path``. Anything else raises :class:`SecretError` without
    echoing the value.
    """
    if isinstance(value, Secret):
        if value._kind == "literal" and not allow_literal:
            raise SecretError("a literal secret is not allowed here; use env:NAME or file:/path")
        return value
    if isinstance(value, str):
        kind, sep, ref = value.partition(":")
        if sep and kind == "env" and ref:
            return env(ref)
        if sep and kind == "file" and ref:
            return file(ref)
    hint = " (or toolpass.literal(value) in code)" if allow_literal else ""
    raise SecretError(f"a secret must be a reference, env:NAME or file:/path{hint}, not a value")
