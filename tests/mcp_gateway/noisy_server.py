"""A low-level MCP server on the gateway's stdio transport
(:func:`parkgate.mcp_gateway.stdio.stdio_streams`), for that transport's tests: its
``echo`` tool returns its text after writing noise to stdout, through ``print`` and
straight to file descriptor 1. Its stderr goes to the file ``argv[1]`` names.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp.server import Server
from mcp_types import CallToolResult, ListToolsResult, TextContent, Tool

from parkgate.mcp_gateway.stdio import stdio_streams

ECHO = Tool(name="echo", input_schema={"type": "object", "properties": {"text": {"type": "string"}}})


async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
    return ListToolsResult(tools=[ECHO])


async def call_tool(ctx: Any, params: Any) -> CallToolResult:
    print("noise from print", flush=True)
    os.write(1, b"noise from fd 1\n")
    return CallToolResult(content=[TextContent(type="text", text=params.arguments["text"])])


async def serve() -> None:
    server = Server("noisy", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_streams() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    errors = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(errors, 2)
    anyio.run(serve)
