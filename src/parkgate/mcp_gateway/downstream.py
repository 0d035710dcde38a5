"""The downstream MCP servers, connected with the MCP SDK's own client: their tools listed
under the names the gateway's client sees (``server.tool`` where two servers share a
name), and each call forwarded to the server that has it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent, Tool

from parkgate.mcp_gateway.policy import Policy, ServerSpec

log = logging.getLogger("parkgate.mcp_gateway")

#: How many pages of a server's tool listing are read at most (a listing that never ends
#: cannot hang the gateway).
MAX_LIST_PAGES = 100


@dataclass(frozen=True)
class Route:
    """Where a tool the client sees lives: its ``server``, its name there, and how it is listed."""

    server: str
    tool: str
    listed: Tool

    @property
    def annotations(self) -> Any:
        """The tool's MCP annotations (``destructiveHint``, ...), or ``None``."""
        return self.listed.annotations


def error_result(text: str) -> CallToolResult:
    """A tool result that is an error whose text the agent reads."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class Downstream:
    """The connected downstream servers and the routing table of their tools.

    Args:
        clients: A connected MCP :class:`~mcp.Client` per server name.
    """

    def __init__(self, clients: Mapping[str, Client]) -> None:
        self.clients = dict(clients)
        self.routes: dict[str, Route] = {}

    @classmethod
    async def connect(cls, policy: Policy, stack: AsyncExitStack) -> Downstream:
        """Connect every server ``policy`` names (closed with ``stack``) and list their tools.

        Args:
            policy: The gateway's policy.
            stack: Owns the connections: each is closed, its process ended, when it exits.

        Returns:
            The connected servers, their tools listed.
        """
        clients: dict[str, Client] = {}
        for name, spec in policy.servers.items():
            clients[name] = await stack.enter_async_context(Client(_target(spec)))
        downstream = cls(clients)
        await downstream.refresh()
        return downstream

    async def refresh(self) -> list[Tool]:
        """List every server's tools again; the tools as the client sees them.

        A tool name that two servers share is listed as ``server.tool`` for each of them;
        a unique one keeps its name.
        """
        found: list[tuple[str, Tool]] = []
        for name, client in self.clients.items():
            cursor: str | None = None
            for _ in range(MAX_LIST_PAGES):
                page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                found.extend((name, tool) for tool in page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
        counts: dict[str, int] = {}
        for _, tool in found:
            counts[tool.name] = counts.get(tool.name, 0) + 1
        routes: dict[str, Route] = {}
        for server, tool in found:
            shown = tool.name if counts[tool.name] == 1 else f"{server}.{tool.name}"
            routes[shown] = Route(server, tool.name, tool.model_copy(update={"name": shown}))
        self.routes = routes
        return [route.listed for route in routes.values()]

    async def route(self, name: str) -> Route | None:
        """The route of the tool the client calls ``name`` (the listing is read again once
        when it is not known: a server may have added it)."""
        if name not in self.routes:
            await self.refresh()
        return self.routes.get(name)

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The input schema of the tool the client calls ``name``, as last listed."""
        route = self.routes.get(name)
        return route.listed.input_schema if route is not None else None

    async def call(self, route: Route, arguments: Mapping[str, Any]) -> CallToolResult:
        """Call the tool on its server with exactly ``arguments``; its result as the server gave it.

        A protocol error from the server (an unknown tool, bad arguments) is a tool error
        whose text says so.
        """
        try:
            return await self.clients[route.server].call_tool(route.tool, dict(arguments))
        except MCPError as error:
            return error_result(f"{route.server} refused {route.tool}: {error}")


def _target(spec: ServerSpec) -> StdioServerParameters | str:
    """What :class:`~mcp.Client` connects to for ``spec``."""
    if spec.url is not None:
        return spec.url
    assert spec.command is not None
    return StdioServerParameters(
        command=spec.command, args=list(spec.args), env=dict(spec.env) if spec.env else None, cwd=spec.cwd
    )
