"""What the request hook reads of the tool call in progress, as protocols.

The toolkit's ``Toolkit``, ``ToolSpec``, ``Session`` and ``ToolCall`` satisfy them; the hook
never imports the toolkit, which sits above it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from toolpass.intercept.router import Router
    from toolpass.outcome.audit import AuditEvent


class DeclaredTool(Protocol):
    """The tool whose body runs, as declared."""

    @property
    def name(self) -> str: ...
    @property
    def effect(self) -> str | None: ...
    @property
    def untrusted_inputs(self) -> str | None: ...  # None: the toolkit's
    @property
    def resources(self) -> Callable[[Any], bool] | None: ...


class UntrustedText(Protocol):
    """The untrusted text a session has read: false while there is none."""

    def __bool__(self) -> bool: ...
    def find(self, text: str) -> str | None: ...


class SessionSeen(Protocol):
    """What a session had read when it was last synced from its store."""

    @property
    def untrusted(self) -> UntrustedText: ...
    @property
    def private(self) -> bool: ...
    @property
    def private_from(self) -> AbstractSet[str]: ...
    @property
    def tainted(self) -> bool: ...


class CallSession(Protocol):
    """The session the call belongs to: its user and what it has seen (``sync()`` brings
    ``seen`` up to date from a shared store in one round trip)."""

    tainted: bool

    @property
    def user(self) -> str: ...
    @property
    def untrusted(self) -> UntrustedText: ...
    @property
    def private(self) -> bool: ...
    @property
    def private_from(self) -> AbstractSet[str]: ...
    def take(self, keys: tuple[tuple[str, int], ...]) -> str | None: ...
    def give_back(self, keys: tuple[tuple[str, int], ...]) -> None: ...
    def note_private(self, source: str = "*") -> None: ...
    def sync(self) -> None: ...
    @property
    def seen(self) -> SessionSeen: ...


class CallSettings(Protocol):
    """The toolkit settings the hook reads (the toolkit's frozen ``Settings``)."""

    @property
    def act_as(self) -> str: ...
    @property
    def strict_threads(self) -> bool: ...
    @property
    def unknown_host(self) -> str: ...
    @property
    def untrusted_inputs(self) -> str: ...
    @property
    def limits(self) -> Mapping[str, int]: ...
    @property
    def permissions(self) -> Any: ...  # a permission engine: ``check``, ``acheck``


class CallKit(Protocol):
    """The toolkit running the call (or the one that installed the hook)."""

    @property
    def router(self) -> Router: ...
    @property
    def sinks(self) -> tuple[Callable[[AuditEvent], object], ...]: ...
    @property
    def settings(self) -> CallSettings: ...


class CallUser(Protocol):
    """A call, for a check that needs only whom it acts for."""

    @property
    def user(self) -> str: ...
