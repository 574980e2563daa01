"""toolpass: a pass for every tool call an AI agent makes.

Every name here is re-exported from the submodules that define it. The engine (``Toolpass``,
``Config``, its HTTP client) and the notifiers are imported on first use: a program that only
secures tools never loads them.
"""

from typing import TYPE_CHECKING

from toolpass._version import __version__
from toolpass.intercept import ActionRefused, as_agent, as_user
from toolpass.toolkit import (
    CODES,
    ApprovalPending,
    ApprovalQueue,
    ApprovalRequest,
    AuditEvent,
    CustomEffect,
    DefaultSink,
    Effect,
    JsonlSink,
    LogSink,
    OtelSink,
    PermissionCheck,
    PermissionEngine,
    Session,
    StderrSink,
    ToolCall,
    ToolError,
    Toolkit,
    ToolRefused,
    configure,
    current_session,
    default_toolkit,
    fence,
    permission_check,
    secured_tool,
    tool,
)
from toolpass.toolkit.guarded import guarded
from toolpass.toolkit.standing import Standing
from toolpass.toolkit.task import TaskScope, ToolInfo, planner_from_rules
from toolpass.wire.decision import Decision
from toolpass.wire.errors import ConfigError, PermissionDenied
from toolpass.wire.secrets import env, file, literal

if TYPE_CHECKING:
    from toolpass.engine import Config, RemoteToolpass, Toolpass, load_config
    from toolpass.toolkit.notify import EmailNotifier, SlackNotifier, WebhookNotifier

#: Names whose modules are imported on first use (the engine loads http.client, ssl and its
#: config parser; the notifiers smtplib and ssl).
_LAZY = {
    "Config": "toolpass.engine",
    "RemoteToolpass": "toolpass.engine",
    "Toolpass": "toolpass.engine",
    "load_config": "toolpass.engine",
    "EmailNotifier": "toolpass.toolkit.notify",
    "SlackNotifier": "toolpass.toolkit.notify",
    "WebhookNotifier": "toolpass.toolkit.notify",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(__import__("importlib").import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'toolpass' has no attribute {name!r}")


# Adapter distributions (toolpass-langchain, ...) add subpackages such as ``toolpass.langchain``
# from their own install location; this lets them be found in editable installs too.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

__all__ = [
    "CODES",
    "ActionRefused",
    "ApprovalPending",
    "ApprovalQueue",
    "ApprovalRequest",
    "AuditEvent",
    "Config",
    "ConfigError",
    "CustomEffect",
    "Decision",
    "DefaultSink",
    "Effect",
    "EmailNotifier",
    "JsonlSink",
    "LogSink",
    "OtelSink",
    "PermissionCheck",
    "PermissionDenied",
    "PermissionEngine",
    "RemoteToolpass",
    "Session",
    "SlackNotifier",
    "Standing",
    "StderrSink",
    "TaskScope",
    "ToolCall",
    "ToolError",
    "ToolInfo",
    "ToolRefused",
    "Toolkit",
    "Toolpass",
    "WebhookNotifier",
    "__version__",
    "as_agent",
    "as_user",
    "configure",
    "current_session",
    "default_toolkit",
    "env",
    "fence",
    "file",
    "guarded",
    "literal",
    "load_config",
    "permission_check",
    "planner_from_rules",
    "secured_tool",
    "tool",
]
