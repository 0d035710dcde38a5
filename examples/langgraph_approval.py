"""A LangGraph approval step parked through parkgate: answered, cancelled, and cancelled
by an operator while a watcher runs.

    python examples/langgraph_approval.py [STORE_URL]

The graph's checkpoints go to a SQLite file (``SqliteSaver``); parkgate's store is
``STORE_URL`` (``PARKGATE_DB``, else a SQLite file beside the checkpoints; a PostgreSQL URL
uses the schema ``PARKGATE_PG_SCHEMA`` names). Everything is written to a new temporary
folder.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from parkgate import Gateway
from parkgate.adapters.langgraph import Closed, ParkgateInterrupts
from parkgate.store import open_deployed_store


class Deploy(TypedDict, total=False):
    service: str
    status: str


def approve(state: Deploy) -> dict[str, Any]:
    choice = interrupt(
        {
            "question": f"Deploy {state['service']} to production?",
            "options": ["Deploy", "Hold"],
            "ttl_seconds": 3600,  # this question's own TTL
            "details": {"version": "1.4.2"},  # kept with the ask, shown in the API and console
        }
    )
    if isinstance(choice, Closed):  # cancelled or expired: do nothing the answer would allow
        return {"status": f"not deployed ({choice.outcome})"}
    return {"status": "deployed" if choice == "Deploy" else "held"}


def build(checkpointer: Any) -> Any:
    builder = StateGraph(Deploy)
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=checkpointer, name="deploy")


def main(folder: Path, store_url: str) -> None:
    checkpoints = sqlite3.connect(folder / "checkpoints.db", check_same_thread=False)
    graph = build(SqliteSaver(checkpoints))
    gateway = Gateway(store=open_deployed_store(store_url))
    bridge = ParkgateInterrupts(gateway)
    # A deliverer (the due reads that close unanswered asks on time) and the watcher (which
    # resumes a thread whose ask closed elsewhere) run for the block, and stop on its exit.
    with bridge.running(graph):
        # 1. Asked, a miss, then an answer: the thread runs on.
        config = {"configurable": {"thread_id": "deploy-api"}}
        print(bridge.start(graph, {"service": "api"}, config, "chat-1").text)
        print(bridge.drive(graph, config, "chat-1", "maybe").text)
        step = bridge.drive(graph, config, "chat-1", "1")
        print(step.text)
        print("api:", graph.get_state(config).values["status"])

        # 2. The person cancels: the thread is resumed with Closed in the same call.
        config = {"configurable": {"thread_id": "deploy-web"}}
        bridge.start(graph, {"service": "web"}, config, "chat-1")
        print(bridge.drive(graph, config, "chat-1", "/cancel").text)
        print("web:", graph.get_state(config).values["status"])

        # 3. An operator cancels from the console (another call path): the watcher resumes the thread.
        config = {"configurable": {"thread_id": "deploy-db"}}
        asked = bridge.start(graph, {"service": "db"}, config, "chat-2")
        gateway.cancel(asked.reply.ask_id or "")
        while graph.get_state(config).next:  # the watcher resumes it at once
            time.sleep(0.01)
        print("db:", graph.get_state(config).values["status"])
    gateway.close()
    checkpoints.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as where:
        url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PARKGATE_DB") or f"sqlite:///{where}/parkgate.db"
        main(Path(where), url)
