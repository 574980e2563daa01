"""Authorization: reading an authorizer's answer, and ``permission_check`` for the engine."""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from toolpass.outcome.errors import ToolRefused, unanswerable
from toolpass.rules.scope import escapes

if TYPE_CHECKING:
    from toolpass.toolkit.spec import ToolCall, ToolSpec
    from toolpass.wire.decision import Decision


class PermissionEngine(Protocol):
    """What ``permission_check`` needs of an engine (``toolpass.Toolpass`` or a double)."""

    def check(
        self, user: str, connection: str, action: str, resource: str, *, fresh: bool = False
    ) -> Decision: ...


def verdict(result: Any) -> tuple[str, str]:
    """``(decision, reason)`` from whatever an authorizer returned.

    True is allow; False and None are deny; an object with ``decision`` (``"allow"``,
    ``"deny"``, ``"unknown"``) or ``allowed`` is read as such. Anything else cannot be
    understood and is unknown.
    """
    if result is True:
        return "allow", ""
    if result is False or result is None:
        return "deny", "" if result is False else "the authorizer gave no decision"
    decision = getattr(result, "decision", None)
    reason = str(getattr(result, "reason", "") or "")
    if decision in ("allow", "deny", "unknown"):
        return decision, reason
    allowed = getattr(result, "allowed", None)
    if isinstance(allowed, bool):
        return ("allow" if allowed else "deny"), reason
    return "unknown", f"the authorizer returned {type(result).__name__}, not a decision"


def refusal(decision: str, reason: str, what: str, cause: str = "") -> ToolRefused:
    """The refusal for a decision other than allow (``cause``: see ``Decision.cause``)."""
    because = f" ({reason})" if reason else ""
    settled = unanswerable(cause, what, because) if decision == "unknown" else None
    if settled is not None:
        return ToolRefused(settled[0], settled[1], detail=reason)
    if decision == "deny":
        return ToolRefused(
            "not_authorized",
            f"The user may not {what}{because}. Do not retry; tell the user, who can ask "
            "someone with access.",
            detail=reason,
        )
    return ToolRefused(  # a failed look-up's reason names a URL or a socket error: the
        "authorization_error",  # audit's (detail), never the model's
        f"Whether the user may {what} could not be checked right now. "
        "Try again later, or tell the user.",
        detail=reason,
    )


_FORBIDDEN = frozenset("?#@%")


class PermissionCheck:
    """An authorizer that asks a permission engine, with the resource filled from arguments.

    Argument values may not change which resource the template names: ``?``, ``#``, ``@`` and
    whitespace are refused unless the argument has its own scope rule or validator, and
    ``..``, backslashes and control characters are always refused.
    """

    def __init__(
        self,
        engine: PermissionEngine,
        connection: str,
        action: str,
        resource: str,
        *,
        fresh: bool = False,
    ) -> None:
        self.engine = engine
        self.connection = connection
        self.action = action
        self.template = resource
        self.fresh = fresh
        fields = []
        try:
            parsed = list(string.Formatter().parse(resource))
        except ValueError as exc:
            raise ValueError(f"resource template {resource!r}: {exc}") from None
        for _, name, spec, conv in parsed:
            if name is None:
                continue
            if not name.isidentifier() or spec or conv:
                raise ValueError(f"resource template {resource!r}: use plain {{argument}} fields")
            fields.append(name)
        self.fields = tuple(fields)

    def __repr__(self) -> str:
        return f"permission_check({self.connection!r}, {self.action!r}, {self.template!r})"

    def bind(self, spec: ToolSpec) -> None:
        """Checked when the tool is declared: every field must name one of its arguments."""
        missing = [f for f in self.fields if f not in spec.binder.names]
        if missing:
            raise TypeError(
                f"{spec.name}: resource template {self.template!r} names "
                f"{', '.join(missing)}, which the tool does not take"
            )

    def resource(self, arguments: Mapping[str, Any], vouched: frozenset[str]) -> str:
        values = {}
        for name in self.fields:
            value = arguments.get(name)
            if value is None:
                raise ToolRefused(
                    "invalid_arguments",
                    f"Argument {name!r} is needed: it names the resource this call acts on. "
                    "Call the tool again with it.",
                    detail=f"resource template {self.template!r} needs {name!r}",
                )
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise _unsafe(name, "is not a string or a number")
            text = str(value)
            if not text or escapes(text):
                raise _unsafe(name, "is empty or not a plain name")
            if name not in vouched and (
                any(c in _FORBIDDEN for c in text) or any(c.isspace() for c in text)
            ):
                raise _unsafe(name, "contains characters that are not allowed in a resource name")
            values[name] = text
        return self.template.format_map(values)

    def _ask(self, call: ToolCall) -> tuple[str, str]:
        return self.connection, self.resource(call.arguments, call.tool.vouched)

    def __call__(self, call: ToolCall) -> Decision:
        connection, resource = self._ask(call)
        decision = self.engine.check(call.user, connection, self.action, resource, fresh=self.fresh)
        self._configured(decision)
        return decision

    async def acall(self, call: ToolCall) -> Any:
        import asyncio  # only ever called on a running loop: already imported

        connection, resource = self._ask(call)
        acheck = getattr(self.engine, "acheck", None)
        if acheck is not None:
            decision = await acheck(call.user, connection, self.action, resource, fresh=self.fresh)
        else:
            decision = await asyncio.to_thread(
                self.engine.check, call.user, connection, self.action, resource, fresh=self.fresh
            )
        return self._configured(decision)

    def _configured(self, decision: Any) -> Any:
        """An unknown answer because the engine has no such connection or action is an
        operator's to fix (``not_configured``), not a failed look-up."""
        if getattr(decision, "decision", None) != "unknown":
            return decision
        configured = getattr(self.engine, "configured", None)
        if configured is not None and not configured(self.connection, self.action):
            raise ToolRefused(
                "not_configured",
                "toolpass is not set up to check this call, so it was not made. Tell the "
                "user; an operator must configure it.",
                detail=f"no connection {self.connection!r} with action {self.action!r}",
            )
        return decision


def _unsafe(name: str, why: str) -> ToolRefused:
    return ToolRefused(
        "out_of_scope",
        f"Argument {name!r} {why}, so the resource it names cannot be checked. "
        "Use the resource's plain name.",
    )


def permission_check(
    engine: PermissionEngine, connection: str, action: str, resource: str, *, fresh: bool = False
) -> PermissionCheck:
    """An ``authorize=`` that asks ``engine`` whether the session's user may do ``action`` on
    the ``resource`` template filled from the call's arguments (``"repo:{repo}"``)."""
    return PermissionCheck(engine, connection, action, resource, fresh=fresh)
