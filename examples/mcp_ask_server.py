"""parkgate's example MCP server, on stdio: its tool ``ask_person`` asks a person through parkgate.

The question is parked in the gateway (for the audit trail and the TTL), the MCP client
collects the answer (form elicitation), and parkgate checks it and closes the ask::

    PARKGATE_DB=sqlite:///parkgate.db python examples/mcp_ask_server.py

``PARKGATE_DB`` (and ``PARKGATE_PG_SCHEMA`` for PostgreSQL) choose the store, as for the CLI.
"""

from __future__ import annotations

import os

from parkgate import Gateway
from parkgate.adapters.mcp import build_example_server
from parkgate.store import open_deployed_store


def main() -> None:
    url = os.environ.get("PARKGATE_DB", "sqlite:///parkgate.db")
    with Gateway(store=open_deployed_store(url), surface="mcp") as gateway:
        build_example_server(gateway).run()  # stdio


if __name__ == "__main__":
    main()
