"""A permission engine that answers as a test tells it, and records every question."""

from __future__ import annotations

import threading
from typing import Any

from toolpass import Decision


class ScriptedEngine:
    """``answers[(user, action, resource)]`` is a ``Decision`` (or an exception to raise);
    anything not listed is denied. ``asked`` lists ``(user, connection, action, resource)``."""

    def __init__(self, answers: dict[tuple[str, str, str], Any] | None = None) -> None:
        self.answers: dict[tuple[str, str, str], Any] = dict(answers or {})
        self.asked: list[tuple[str, str, str, str]] = []
        self._lock = threading.Lock()

    def check(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        with self._lock:
            self.asked.append((user, connection, action, resource))
        answer = self.answers.get((user, action, resource), Decision.deny("not granted"))
        if isinstance(answer, BaseException):
            raise answer
        return answer  # type: ignore[no-any-return]

    async def acheck(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        return self.check(user, connection, action, resource, fresh=fresh)
