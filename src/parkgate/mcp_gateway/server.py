"""The MCP server the agent's client talks to: the downstream servers' tools, listed under
one server; each call forwarded at once unless the policy holds it for approval. Served on
stdio, or as streamable HTTP at ``/mcp``."""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mcp.server import Server, ServerRequestContext
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
)

from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.mcp_gateway.downstream import Downstream, error_result
from parkgate.mcp_gateway.elicitation import ClientApprover
from parkgate.mcp_gateway.holding import Holds
from parkgate.mcp_gateway.policy import Policy
from parkgate.mcp_gateway.stdio import stdio_streams

log = logging.getLogger("parkgate.mcp_gateway")

#: The gateway's name, as its MCP clients see it.
SERVER_NAME = "parkgate-mcp-gateway"
#: Where the streamable HTTP transport is served.
HTTP_PATH = "/mcp"


def build_server(policy: Policy, downstream: Downstream, holds: Holds) -> Server[Any]:
    """The MCP server that fronts ``downstream``: ``tools/list`` lists their tools, and
    ``tools/call`` forwards a call the policy does not hold, or holds it (:class:`Holds`),
    its ask also put to the client's own user where the rule allows and the client can.

    Args:
        policy: Which calls need approval.
        downstream: The connected downstream servers.
        holds: Holds the calls that need approval.

    Returns:
        The low-level MCP server, not yet running.
    """

    async def list_tools(ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=await downstream.refresh())

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        route = await downstream.route(params.name)
        if route is None:
            return error_result(f"no downstream server has a tool named {params.name!r}")
        arguments = dict(params.arguments or {})
        rule = policy.rule_for(route.server, route.tool, route.annotations, arguments)
        if rule is None:
            return await downstream.call(route, arguments)

        async def forward() -> CallToolResult:
            return await downstream.call(route, arguments)

        client = ClientApprover.of(ctx, params, rule)
        return await holds.call(route, arguments, rule, forward, ctx.session.report_progress, client)

    return Server(
        SERVER_NAME,
        version=_version(),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=downstream.input_schema,
    )


async def start(policy: Policy, gateway: AsyncGateway, stack: AsyncExitStack) -> Server[Any]:
    """The gateway's MCP server, its downstream servers connected (and closed with ``stack``).

    Args:
        policy: The servers and the approval rules.
        gateway: Where held calls are parked (its clock is the one approvals are timed on).
        stack: Owns the downstream connections.

    Returns:
        The server, ready to run on a transport (or for an in-process client).
    """
    downstream = await Downstream.connect(policy, stack)
    return build_server(policy, downstream, Holds(gateway, policy))


async def serve(policy: Policy, gateway: AsyncGateway, http: tuple[str, int] | None = None) -> None:
    """Connect the downstream servers and serve MCP until the client leaves (stdio) or the
    process is stopped (HTTP).

    Args:
        policy: The servers and the approval rules.
        gateway: Where held calls are parked.
        http: ``(host, port)`` to serve streamable HTTP at ``/mcp``; stdio when ``None``.
    """
    async with AsyncExitStack() as stack:
        server = await start(policy, gateway, stack)
        if http is None:
            read, write = await stack.enter_async_context(stdio_streams())
            await server.run(read, write, server.create_initialization_options())
            return
        import uvicorn

        host, port = http
        app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
        await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).serve()


def _version() -> str:
    try:
        return version("parkgate")
    except PackageNotFoundError:  # a checkout on the path, not installed
        return "0"
