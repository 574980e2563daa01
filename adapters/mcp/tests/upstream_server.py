"""A small MCP server that knows nothing of toolpass, for the proxy's tests.

Run on stdio (``python upstream_server.py``) or streamable HTTP (``python upstream_server.py
http PORT``). Each call it runs is appended to the JSON-lines file ``$UPSTREAM_LOG``, so a
test proves a refused call never reached it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from mcp.server import MCPServer
from mcp.server.context import CallNext, ServerRequestContext

HIDDEN = "drop_database"


async def unlisted(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
    """Keeps ``drop_database`` out of the listing: a tool the server has but does not show."""
    result = await call_next(ctx)
    if ctx.method == "tools/list":
        tools = result["tools"] if isinstance(result, dict) else result.tools
        shown = [t for t in tools if (t["name"] if isinstance(t, dict) else t.name) != HIDDEN]
        if isinstance(result, dict):
            result["tools"] = shown
        else:
            result.tools = shown
    return result


server: MCPServer = MCPServer("upstream", middleware=[unlisted])


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


@server.tool()
def getenv(name: str) -> str:
    """A variable of this server's environment."""
    _record("getenv", name=name)
    return os.environ.get(name, "(unset)")


@server.tool()
def show(path: str) -> str:
    """A file's text."""
    _record("show", path=path)
    with open(path, encoding="utf-8") as f:
        return f.read()


@server.tool(name=HIDDEN)
def drop_database() -> str:
    """Not listed."""
    _record(HIDDEN)
    return "dropped"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
