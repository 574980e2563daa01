"""An MCP server on stdio with one tool, ``delete_issue``, for raw JSON-RPC tests:
``python refusing_server.py bare`` as it is, ``guarded`` behind toolpass with ``strict=True``
and no rule (every call refused), ``error`` the same with ``on_refuse=None``."""

from __future__ import annotations

import sys

from mcp.server import MCPServer
from toolpass.mcp import guard

server = MCPServer("ops", version="1.2")


@server.tool()
def delete_issue(key: str) -> str:
    """Delete an issue."""
    return f"deleted {key}"


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind != "bare":
        on_refuse = {} if kind == "guarded" else {"on_refuse": None}
        guard(server, None, None, strict=True, user="dana@example.com", **on_refuse)  # type: ignore[arg-type]
    server.run("stdio")
