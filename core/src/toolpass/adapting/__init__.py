"""What every framework adapter shares, written once: rules, the check around a tool call,
the user and session it runs for, the text the model reads when it is refused, and the
checks made when an adapter is built.

An adapter imports only this module (and its framework). It builds one ``Guard`` from its
options (which validates them all), puts ``Guard.run`` (or ``Guard.check``, for frameworks
whose hook only decides) into its framework's own hook, and translates; it holds no policy of
its own. Each call goes through the same pipeline as ``secured_tool``: session,
authorization against the permission engine (the rule's resource filled from the call's
arguments, with the same safety as ``permission_check``), the request hook around the body,
and one audit event.

The same options mean the same thing in every adapter:

- ``user``: where the user is, the name of an attribute (or key) of the framework's run
  context, or a callable given the framework's per-call context object. Never the model.
- ``session``: what one session (limits, untrusted-content record, data flow) lasts for:
  ``"run"`` (one agent run), ``"conversation"`` (the framework's thread or conversation id
  when the run has one, else the run; the default), or a callable given the same object as
  ``user`` that returns an id (None: the run) or the application's own ``Session`` (with
  the request's grants, trusted values and limits).
- ``on_refuse``: what the model reads for a refusal (``refusal_text``, or the framework's
  own failed-tool result); None lets the refusal end the run.

Its parts: ``approvals`` (a call that needs a person: ``Pending``, ``Answer``), ``rules``
(``Rule``, ``Traits``, the checks of the rules, ``Explanation``), ``sources`` (the user and
session a call runs for, the refusal text) and ``guard`` (``Guard``). Import from here.
"""

from __future__ import annotations

from toolpass.adapting.approvals import APPROVAL, Answer, Pending
from toolpass.adapting.guard import Guard
from toolpass.adapting.rules import Explanation, Rule, RuleLike, Rules, ToolArguments, Traits
from toolpass.adapting.sources import (
    OnRefuse,
    SessionSource,
    UserSource,
    refusal_text,
    source_failed,
    user_from,
)
from toolpass.outcome.errors import ApprovalPending, ToolRefused
from toolpass.rules.redact import REDACTED, redact, redact_text
from toolpass.rules.redact import usable as usable_secrets
from toolpass.toolkit.authorize import PermissionEngine
from toolpass.toolkit.checks import expired_refusal
from toolpass.toolkit.toolkit import Toolkit

__all__ = [
    "APPROVAL",
    "REDACTED",
    "Answer",
    "ApprovalPending",
    "Explanation",
    "Guard",
    "OnRefuse",
    "Pending",
    "PermissionEngine",
    "Rule",
    "RuleLike",
    "Rules",
    "SessionSource",
    "ToolArguments",
    "ToolRefused",
    "Toolkit",
    "Traits",
    "UserSource",
    "expired_refusal",
    "redact",
    "redact_text",
    "refusal_text",
    "source_failed",
    "usable_secrets",
    "user_from",
]
