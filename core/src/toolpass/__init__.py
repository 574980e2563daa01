"""toolpass: a pass for every tool call an AI agent makes.

Every name here is re-exported from the submodules that define it.
"""

from toolpass._version import __version__
from toolpass.engine import (
    Config,
    ConfigError,
    Decision,
    PermissionDenied,
    RemoteToolpass,
    Toolpass,
    env,
    file,
    literal,
    load_config,
)
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

#: Names whose modules are imported on first use (the notifiers load smtplib and ssl).
_LAZY = {
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
    "ToolCall",
    "ToolError",
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
    "secured_tool",
    "tool",
]
