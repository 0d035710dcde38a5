"""A plain MCP server (no parkgate) for the adapter's tests, run as a subprocess on stdio.

``elicit(message, schema, timeout=None)`` sends a form-mode elicitation over the
back-channel and returns the result as JSON (``{"action", "content"}``), or
``{"action": "timed out"}`` when ``timeout`` seconds pass first: the server then
abandons its request, and the SDK tells the client so. ``pid()`` is the server's
process id, for the test that kills it.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("forms")


@server.tool()
async def elicit(message: str, schema: dict[str, Any], ctx: Context, timeout: float | None = None) -> str:
    with anyio.move_on_after(timeout if timeout is not None else float("inf")):
        result = await ctx.session.elicit_form(
            message=message, requested_schema=schema, related_request_id=ctx.request_id
        )
        return json.dumps({"action": result.action, "content": result.content})
    return json.dumps({"action": "timed out"})


@server.tool()
def pid() -> int:
    return os.getpid()


if __name__ == "__main__":
    server.run()
