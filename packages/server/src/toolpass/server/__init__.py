"""toolpass-server: the permission engine as an HTTP service (``toolpass serve``).

``main(argv)`` is the command; ``create_app(tp, config)`` the ASGI app, for tests and for
running under another ASGI server.
"""

from toolpass.server._version import __version__
from toolpass.server.app import create_app
from toolpass.server.config import APIKey, ServerConfig, parse_server_config
from toolpass.server.serve import main

__all__ = ["APIKey", "ServerConfig", "__version__", "create_app", "main", "parse_server_config"]
