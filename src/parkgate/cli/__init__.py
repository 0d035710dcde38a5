"""The ``parkgate`` command: serve, deliver, chat, asks, show, history, stats, events, cancel, doorcheck,
audit, migrate, prove, prune, mcp-gateway, and each registered channel's commands.

``--db`` (or ``PARKGATE_DB``) chooses the store everywhere: ``sqlite:///parkgate.db``
(the default), a file path, or ``postgresql://...``; with PostgreSQL,
``PARKGATE_PG_SCHEMA`` picks the schema for every command, as it does for the server.
Opening a store migrates it, creating a SQLite file or a PostgreSQL schema that does not
exist yet (``serve``, ``migrate``). ``asks`` only reads, so it creates nothing: a missing
file or schema is an error. ``chat`` and ``doorcheck`` create a new SQLite file but
refuse a PostgreSQL schema that does not exist, so a typo never sets up an empty schema
under the wrong name.

An expected error (bad input, a store that is missing or out of reach, a busy
conversation) ends the command with one ``Error:`` line and exit code 1, never a
traceback.

Every value from a store or a server is printed through :mod:`parkgate.core.display`: no
Rich markup is read from data, and control, direction and invisible characters show
as their escapes (``\\u202e``), so no value can restyle, rewrite or hide on the screen.

Every command that can close an ask (``serve``, ``deliver``, ``chat``, ``doorcheck``)
writes each expiry's structured line (``{"event": "ask_expired", ...}``) to stderr, one
JSON object a line; ``asks`` only reads, so it closes (and logs) nothing.

One module a command group: :mod:`~parkgate.cli.serve` (serve, deliver),
:mod:`~parkgate.cli.chat`, :mod:`~parkgate.cli.asks`, :mod:`~parkgate.cli.operate` (show,
cancel), :mod:`~parkgate.cli.history` (history, stats), :mod:`~parkgate.cli.events` (events),
:mod:`~parkgate.cli.doorcheck`, :mod:`~parkgate.cli.audit`, :mod:`~parkgate.cli.maintenance` (migrate,
prove, prune), :mod:`~parkgate.cli.mcp_gateway`;
:mod:`~parkgate.cli.stores` opens the store each of them works on. A channel's own
commands (``parkgate telegram``) live in its package and are mounted from the channel
registry (:mod:`parkgate.channels.registry`).
"""

from __future__ import annotations

import click

from parkgate.channels.registry import registered
from parkgate.cli.asks import asks, parse_duration
from parkgate.cli.audit import audit
from parkgate.cli.chat import CHAT_RESTART, chat
from parkgate.cli.doorcheck import DOORCHECK_EXIT, DOORCHECK_INPUTS, doorcheck, doorcheck_verdict
from parkgate.cli.events import events
from parkgate.cli.history import history, stats
from parkgate.cli.maintenance import migrate, prove, prune
from parkgate.cli.mcp_gateway import mcp_gateway
from parkgate.cli.operate import cancel, show
from parkgate.cli.serve import check_can_listen, deliver, serve
from parkgate.cli.stores import db_option, shown_url
from parkgate.client.wire import path_segment
from parkgate.core.display import format_hours


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="parkgate")
def main() -> None:
    """parkgate: parked human-in-the-loop asks that always close."""


main.add_command(serve)
main.add_command(deliver)
main.add_command(chat)
main.add_command(asks)
main.add_command(show)
main.add_command(history)
main.add_command(stats)
main.add_command(events)
main.add_command(cancel)
main.add_command(doorcheck)
main.add_command(migrate)
main.add_command(prove)
main.add_command(prune)
main.add_command(audit)
main.add_command(mcp_gateway)
for _spec in registered():
    for _command in _spec.commands:
        main.add_command(_spec.imported(_command))

__all__ = [
    "CHAT_RESTART",
    "DOORCHECK_EXIT",
    "DOORCHECK_INPUTS",
    "check_can_listen",
    "db_option",
    "doorcheck_verdict",
    "format_hours",
    "main",
    "parse_duration",
    "path_segment",
    "shown_url",
]
