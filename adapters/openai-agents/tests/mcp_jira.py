"""A real MCP server on stdio (the mcp SDK's own), logging every call its tool receives."""

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

log = Path(sys.argv[1])
app = MCPServer("jira")


@app.tool()
def delete_issue(key: str) -> str:
    """Delete an issue."""
    with log.open("a") as f:
        f.write(key + "\n")
    return f"deleted {key}"


if __name__ == "__main__":
    app.run()
