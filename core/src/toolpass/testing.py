"""An offline permission engine for examples and tests: it answers from a table.

    from toolpass.testing import ScriptedEngine
    engine = ScriptedEngine({("dana@example.com", "DELETE_ISSUES", "issue:PAY-1"): "allow"})
    engine.check("dana@example.com", "jira", "DELETE_ISSUES", "issue:PAY-1").allowed   # True

It has the methods of ``toolpass.Toolpass`` (``check``, ``acheck``, ``allowed``,
``require``, ``arequire``), so it goes wherever an engine does: ``permission_check``,
``Toolkit(permissions=...)``'s rules, every adapter. It never touches the network.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from toolpass.engine.checker import Checker
from toolpass.wire.decision import Decision

__all__ = ["Answer", "ScriptedEngine"]

#: What the table holds for a question: a ``Decision``, ``"allow"``, ``"deny"`` or
#: ``"unknown"`` (True and False for allow and deny), or an exception the check raises (to
#: play an engine that breaks).
Answer = Decision | str | bool | BaseException

_WORDS = {"allow": Decision.allow, "deny": Decision.deny, "unknown": Decision.unknown}
_REASONS = {"allow": "granted", "deny": "not granted", "unknown": "no answer"}


class ScriptedEngine(Checker):
    """``answers`` maps ``(user, action, resource)``, or ``(user, connection, action,
    resource)`` when connections must differ, to an ``Answer``; a question not in the table
    gets ``default`` (deny: nothing is granted unless listed). ``asked`` lists every question
    as ``(user, connection, action, resource)``, in order."""

    def __init__(
        self,
        answers: Mapping[tuple[str, ...], Any] | None = None,
        *,
        default: Answer = "deny",
    ) -> None:
        self.answers: dict[tuple[str, ...], Any] = {}
        for key, answer in dict(answers or {}).items():
            if not (isinstance(key, tuple) and len(key) in (3, 4)):
                raise TypeError(
                    "a ScriptedEngine key is (user, action, resource) or "
                    f"(user, connection, action, resource), not {key!r}"
                )
            _decision(answer, key)  # a bad answer is found now, not at the first check
            self.answers[key] = answer
        _decision(default, ("default",))
        self.default = default
        self.asked: list[tuple[str, str, str, str]] = []
        self._lock = threading.Lock()

    def check(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        """The table's answer (raising it, if it is an exception)."""
        with self._lock:
            self.asked.append((user, connection, action, resource))
        key = (user, connection, action, resource)
        answer = self.answers.get(key, self.answers.get((user, action, resource), self.default))
        if isinstance(answer, BaseException):
            raise answer
        return _decision(answer, key)

    async def acheck(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision:
        """``check``: the table needs no worker thread."""
        return self.check(user, connection, action, resource, fresh=fresh)


def _decision(answer: Any, key: tuple[str, ...]) -> Decision:
    if isinstance(answer, Decision):
        return answer
    if isinstance(answer, BaseException):
        return Decision.unknown("the scripted engine raises")
    if isinstance(answer, bool):
        answer = "allow" if answer else "deny"
    if isinstance(answer, str) and answer in _WORDS:
        return _WORDS[answer](_REASONS[answer])
    raise TypeError(
        f"the answer for {key!r} is a Decision, 'allow', 'deny', 'unknown', True, False "
        f"or an exception, not {answer!r}"
    )
