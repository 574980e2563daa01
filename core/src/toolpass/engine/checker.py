"""What every permission checker offers: the engine in process and the remote client."""

from __future__ import annotations

from abc import ABC, abstractmethod

from toolpass.wire.decision import Decision
from toolpass.wire.errors import PermissionDenied


class Checker(ABC):
    """``check`` plus the conveniences built on it, sync and async."""

    @abstractmethod
    def check(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        """May ``user`` do ``action`` on ``resource`` in ``connection``? Never raises for a
        failed look-up: that is an ``unknown`` decision with the reason."""

    def allowed(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> bool:
        """True only for an explicit allow."""
        return self.check(user, connection, action, resource, fresh=fresh).allowed

    def require(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        """The allow decision; raises :class:`PermissionDenied` for deny and unknown."""
        decision = self.check(user, connection, action, resource, fresh=fresh)
        if not decision.allowed:
            raise PermissionDenied(decision)
        return decision

    async def acheck(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        """``check`` without blocking the event loop (a look-up runs in a worker thread)."""
        import asyncio  # only ever called on a running loop: already imported

        if not fresh:
            hit = self._peek(user, connection, action, resource)
            if hit is not None:
                return hit
        return await asyncio.to_thread(self.check, user, connection, action, resource, fresh=fresh)

    async def arequire(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        """``require`` without blocking the event loop."""
        decision = await self.acheck(user, connection, action, resource, fresh=fresh)
        if not decision.allowed:
            raise PermissionDenied(decision)
        return decision

    def _peek(self, user: str, connection: str, action: str, resource: str) -> Decision | None:
        """A decision available without any I/O, if there is one."""
        return None
