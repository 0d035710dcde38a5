"""``parkgate mcp-gateway``: an MCP server in front of other MCP servers that holds the
tool calls its policy names for a person's approval (:mod:`parkgate.mcp_gateway`)."""

from __future__ import annotations

import os

import click

from parkgate.channels.serving import sending_channels
from parkgate.cli.serve import check_callback_settings, check_can_listen
from parkgate.cli.stores import db_option, gateway_session
from parkgate.errors import ConfigurationError, MissingExtra


def _host_port(_: click.Context, __: click.Parameter, value: str | None) -> tuple[str, int] | None:
    """``--http HOST:PORT`` as ``(host, port)`` (an IPv6 host in brackets)."""
    if value is None:
        return None
    host, colon, port = value.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"{value!r} is not HOST:PORT, such as 127.0.0.1:8765")
    return host.strip("[]"), int(port)


@click.command("mcp-gateway")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The TOML file: the downstream servers ([servers.NAME]) and the approval rules ([[approval]]).",
)
@db_option
@click.option(
    "--http",
    "http",
    default=None,
    metavar="HOST:PORT",
    callback=_host_port,
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
)
def mcp_gateway(config_path: str, db_url: str, http: tuple[str, int] | None) -> None:
    """Front MCP servers and hold the tool calls the policy names until a person approves.

    Serves MCP on stdio (for desktop and CLI clients) or, with --http, streamable HTTP at
    /mcp. Every tool of the servers in --config is listed; a call no [[approval]] rule
    matches is forwarded at once. A call a rule matches is parked as an Approve / Reject
    ask on --db (the database `parkgate serve` answers on: HTTP, the console, channels),
    held up to the rule's hold, and forwarded with exactly the approved arguments once
    approved. The channels the environment switches on (PARKGATE_SLACK_BOT_TOKEN, ...)
    post the asks a rule's post_to names. Nothing but MCP is written to stdout.
    """
    try:
        from parkgate.mcp_gateway import load_policy, serve
    except MissingExtra as missing:
        raise click.ClickException(str(missing)) from None
    try:
        policy = load_policy(config_path)
    except ConfigurationError as error:
        raise click.ClickException(str(error)) from None
    check_callback_settings()
    if http is not None:
        check_can_listen(*http)
    with gateway_session(db_url, surface="mcp") as gateway:
        sending_channels(gateway, os.environ)
        if http is not None:
            click.echo(f"parkgate mcp-gateway serving MCP at http://{http[0]}:{http[1]}/mcp", err=True)

        async def main() -> None:
            from parkgate.gateway.async_gateway import AsyncGateway

            waiting = AsyncGateway(gateway, deliver=True)  # due reads: an ask nobody reads still expires on time
            try:
                await serve(policy, waiting, http)
            finally:
                await waiting.close()

        import anyio

        anyio.run(main)
