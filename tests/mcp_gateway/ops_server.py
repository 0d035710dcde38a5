"""A small downstream MCP server for the gateway's tests and benchmark, run on stdio (or
streamable HTTP with ``--http PORT``): ``status`` is safe, ``deploy`` and ``drop`` (marked
destructive) are not. Every call of a tool appends one JSON line to the file
``OPS_CALLS`` names, so a test counts what reached the server.
"""

from __future__ import annotations

import json
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("ops")


def _record(tool: str, **arguments: object) -> None:
    path = os.environ.get("OPS_CALLS")
    if path:
        with open(path, "a", encoding="utf-8") as calls:
            calls.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


@server.tool(description="The service's status.")
def status(service: str = "web") -> str:
    _record("status", service=service)
    return f"{service}: ok"


@server.tool(description="Deploy a version of the service to an environment.")
def deploy(env: str, version: str, api_token: str = "") -> str:
    _record("deploy", env=env, version=version, api_token=api_token)
    return f"deployed {version} to {env}"


@server.tool(description="Drop a table.", annotations=ToolAnnotations(destructive_hint=True))
def drop(table: str) -> str:
    _record("drop", table=table)
    return f"dropped {table}"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
