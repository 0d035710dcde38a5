"""An MCP client whose elicitations a person answers through parkgate, in this terminal.

It starts ``examples/mcp_deploy_server.py`` over stdio and calls its ``deploy`` tool. The
server's form is parked in a parkgate conversation field by field
(:class:`~parkgate.adapters.mcp.ParkgateElicitation`); the person's lines go to
:meth:`~parkgate.AsyncGateway.handle` as on any surface (misses bounce, ``/cancel``
drops the form), and the server gets one answer::

    PARKGATE_DB=sqlite:///parkgate.db python examples/mcp_chat_client.py
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import anyio
import anyio.to_thread
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from parkgate import AsyncGateway, Reply
from parkgate.adapters.mcp import ParkgateElicitation
from parkgate.store import open_deployed_store

SERVER = Path(__file__).with_name("mcp_deploy_server.py")
CONVERSATION = "terminal"


async def person(gateway: AsyncGateway, questions: anyio.abc.ObjectReceiveStream[Reply]) -> None:
    """Answer each question shown with the lines typed, until one closes it."""
    async for _question in questions:
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
            if not line:
                return  # end of input: the form stays open until its TTL, or until the tool ends
            reply = await gateway.handle(CONVERSATION, line.rstrip("\n"))
            if reply.text:
                print(reply.text, flush=True)
            if not reply.parked:
                break


async def main() -> None:
    url = os.environ.get("PARKGATE_DB", "sqlite:///parkgate.db")
    async with AsyncGateway(store=open_deployed_store(url), surface="mcp") as gateway:
        shown, questions = anyio.create_memory_object_stream[Reply](math.inf)

        def show(asked: Reply) -> None:
            print(asked.text, flush=True)
            shown.send_nowait(asked)

        callback = ParkgateElicitation(gateway, CONVERSATION, replace=True, on_asked=show)
        server = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
        async with anyio.create_task_group() as group:
            group.start_soon(person, gateway, questions)
            async with Client(stdio_client(server), elicitation_callback=callback) as client:
                result = await client.call_tool("deploy", {})
            print("server:", " ".join(getattr(part, "text", "") for part in result.content), flush=True)
            group.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
