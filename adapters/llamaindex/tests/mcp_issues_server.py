"""A small MCP server over stdio for the tests: tools whose calls reach it are logged to the
file named by the first argument, so a test proves a refused call never arrived."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

LOG = sys.argv[1]
server = MCPServer("issues")


def _log(line: str) -> None:
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(line + "\n")


@server.tool()
def delete_issue(key: str) -> str:
    """Delete an issue."""
    _log(f"delete_issue {key}")
    return f"deleted {key}"


@server.tool()
def list_issues(project: str) -> str:
    """List the issues of a project."""
    _log(f"list_issues {project}")
    return f"{project}-1, {project}-2"


if __name__ == "__main__":
    server.run("stdio")
