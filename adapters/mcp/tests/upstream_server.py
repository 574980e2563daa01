"""A small MCP server that knows nothing of toolpass, for the proxy's tests.

Run on stdio (``python upstream_server.py``) or streamable HTTP (``python upstream_server.py
http PORT``). Each call it runs is appended to the JSON-lines file ``$UPSTREAM_LOG``, so a
test proves a refused call never reached it.
"""

from __future__ import annotations

import json
import os
import sys

from mcp.server import MCPServer

server: MCPServer = MCPServer("upstream")


def _record(tool: str, **arguments: object) -> None:
    with open(os.environ["UPSTREAM_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


@server.tool()
def merge_pr(repo: str, number: int) -> str:
    """Merge a pull request."""
    _record("merge_pr", repo=repo, number=number)
    return f"merged {repo}#{number}"


@server.tool()
def read_file(path: str) -> str:
    """Read a file of the project."""
    _record("read_file", path=path)
    return f"contents of {path}"


@server.tool()
def explode() -> str:
    """Fails."""
    _record("explode")
    raise ValueError("upstream detail")


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
