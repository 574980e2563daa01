"""The refusal of a check that could not be completed: written once, for the checks and the
task scope alike."""

from __future__ import annotations

from toolpass.outcome.errors import ToolRefused
from toolpass.store import StoreUnavailable


def check_error(what: str, exc: BaseException, *, ran: bool = False) -> ToolRefused:
    """The refusal of a check that failed (``ran``: after the tool's body ran)."""
    if isinstance(exc, StoreUnavailable) and ran:
        return ToolRefused(
            "store_unavailable",
            "The tool ran, but toolpass could not record what it read in the state it shares "
            "between processes, so its result is withheld. Do not run it again; tell the user "
            "it ran and its result could not be shown.",
            detail=f"{what} (after the body ran): {exc}",
        )
    if isinstance(exc, StoreUnavailable):
        return ToolRefused(
            "store_unavailable",
            "toolpass could not reach the state it shares between processes, so the call was "
            "not allowed. Try again later, or tell the user.",
            detail=f"{what}: {exc}",
        )
    return ToolRefused(
        "check_error",
        "A safety check could not be completed, so the call was not made. "
        "Try again later, or tell the user.",
        detail=f"{what} raised {type(exc).__name__}: {exc}",
    )
