"""A LangGraph graph whose one node asks a person with an idempotency ``key`` and waits.

Run as a process by ``test_langgraph_keyed_restart.py``, which kills it and runs it
again: ``python keyed_node_agent.py CHECKPOINTS CONVERSATION THREAD`` with the store in
``PARKGATE_DB`` (and ``PARKGATE_PG_SCHEMA``). It prints ``asked <ask_id> parked=<bool>``
once the node's ask returns, and ``decision=<answer>`` when the graph ends.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from datetime import timedelta
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from parkgate import Gateway


class State(TypedDict, total=False):
    change: str
    decision: str | None


def main(checkpoints: str, conversation: str, thread: str) -> None:
    with Gateway(os.environ["PARKGATE_DB"]) as gateway:

        def approve(state: State) -> dict[str, Any]:
            # The key makes the node safe to run again: after a restart it finds its ask
            # (open, or closed with the answer) instead of asking twice or failing.
            reply = gateway.ask(conversation, f"Deploy {state['change']}?", ["Deploy", "Hold"], key=f"{thread}/approve")
            print(f"asked {reply.ask_id} parked={reply.parked}", flush=True)
            ask = gateway.wait(reply.ask_id or "", timedelta(minutes=5))
            return {"decision": ask.answer}

        saver = SqliteSaver(sqlite3.connect(checkpoints, check_same_thread=False))
        graph = StateGraph(State).add_node("approve", approve)
        graph = graph.add_edge(START, "approve").add_edge("approve", END)
        compiled = graph.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": thread}}
        pending = compiled.get_state(config).next
        result = compiled.invoke(None if pending else {"change": "v2"}, config)
        print(f"decision={result['decision']}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
