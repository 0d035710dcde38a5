"""LangChain's HumanInTheLoopMiddleware reviewed through parkgate, one tool call at a time.

    python examples/langchain_hitl.py [STORE_URL]

``create_agent`` runs with a scripted chat model (``langchain_core``'s fake model, so no
provider is needed) that asks to send an email and to delete a file. The middleware
interrupts before either runs; the person (U_ALICE) approves the email and rejects the
deletion in the chat, saying why; the agent is resumed once with both decisions, the
rejection carrying her reason and her name. ``STORE_URL`` is as in
``langgraph_approval.py``.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from parkgate import Gateway
from parkgate.adapters.langgraph import ParkgateInterrupts
from parkgate.store import open_deployed_store


class ScriptedModel(GenericFakeChatModel):
    """A chat model that says what its script says, whatever tools it is given."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"sent to {to}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def build(checkpointer: Any) -> Any:
    calls = [
        {"name": "send_email", "args": {"to": "ops@example.com", "body": "Release 1.4 is out."}, "id": "call-1"},
        {"name": "delete_file", "args": {"path": "/srv/reports/q3.txt"}, "id": "call-2"},
    ]
    model = ScriptedModel(messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="All done.")]))
    review = HumanInTheLoopMiddleware(
        interrupt_on={
            "send_email": {"allowed_decisions": ["approve", "reject"]},
            "delete_file": {"allowed_decisions": ["approve", "reject"], "description": "Deleting cannot be undone."},
        }
    )
    return create_agent(
        model, tools=[send_email, delete_file], middleware=[review], checkpointer=checkpointer, name="ops-agent"
    )


def main(folder: Path, store_url: str) -> None:
    checkpoints = sqlite3.connect(folder / "checkpoints.db", check_same_thread=False)
    agent = build(SqliteSaver(checkpoints))
    gateway = Gateway(store=open_deployed_store(store_url))
    bridge = ParkgateInterrupts(gateway)
    config = {"configurable": {"thread_id": "ops-1"}}

    request = {"messages": [{"role": "user", "content": "Announce and tidy up."}]}
    print(bridge.start(agent, request, config, "chat-1").text)
    print(bridge.drive(agent, config, "chat-1", "1", sender="U_ALICE").text)  # approve the email
    print(bridge.drive(agent, config, "chat-1", "2", sender="U_ALICE").text)  # reject the deletion: asked why
    last = bridge.drive(agent, config, "chat-1", "The auditors still need it.", sender="U_ALICE")  # runs on
    print(last.text)
    for message in agent.get_state(config).values["messages"]:
        if isinstance(message, ToolMessage):
            print(f"{message.name}: {message.content}")
    print("agent:", last.output["messages"][-1].content)
    gateway.close()
    checkpoints.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as where:
        url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PARKGATE_DB") or f"sqlite:///{where}/parkgate.db"
        main(Path(where), url)
