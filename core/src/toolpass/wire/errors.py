"""The engine's exceptions."""

from __future__ import annotations

from toolpass.wire.decision import Decision


class ToolpassError(Exception):
    """Base of every exception toolpass raises on purpose."""


class ConfigError(ToolpassError, ValueError):
    """A configuration that cannot be used; the message names the file, line and key.

    ``key`` names the offending key when the raiser knows it but not where it was written.
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class SecretError(ConfigError):
    """A secret reference that cannot be resolved; the message names the reference."""


class LookupFailed(ToolpassError):
    """A live look-up could not answer; the engine turns it into an ``unknown`` decision."""

    #: Why, when it is not a failed look-up that may work later: ``"identity"`` (the user
    #: maps to no one, or to several, in the system) or ``"resource"`` (the resource is not
    #: one the action takes). Carried as ``Decision.cause``.
    cause = ""


class UnknownUser(LookupFailed):
    """The application's user maps to no one (or to several) in the system: an operator must
    map them; asking again will not help."""

    cause = "identity"


class BadResource(LookupFailed):
    """The resource is not one the action takes (a kind or a shape it does not know)."""

    cause = "resource"


class PermissionDenied(ToolpassError):
    """Raised by ``require`` and ``guarded`` for anything but an allow."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        where = f" ({decision.action} on {decision.resource})" if decision.action else ""
        super().__init__(f"{decision.decision}{where}: {decision.reason}")
