"""OpenAI Agents SDK tool approvals parked through parkgate: approved, cancelled, resumed
by another process, and cancelled by an operator, then followed up as a watcher does.

    python examples/openai_agents_approval.py [STORE_URL]

The agent's model is the SDK's offline ``ScriptedModel`` (no key, no network): give the
``Agent`` a real model instead and nothing else changes. parkgate's store is
``STORE_URL`` (``PARKGATE_DB``, else a SQLite file in a new temporary folder; a
PostgreSQL URL uses the schema ``PARKGATE_PG_SCHEMA`` names).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from typing import Any

from agents import Agent, RunConfig, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from parkgate import Gateway
from parkgate.adapters.openai_agents import AgentApprovals, Finished
from parkgate.store import open_deployed_store

OFFLINE = RunConfig(tracing_disabled=True)


@function_tool(needs_approval=True)
def deploy(service: str) -> str:
    """Deploy ``service`` to production."""
    return f"{service} is live"


def respond(call: ModelCall) -> Any:
    """The scripted model: deploy the service the user named, then report the tool's output."""
    items = call.input if isinstance(call.input, list) else [{"role": "user", "content": call.input}]
    outputs = [
        item["output"] for item in items if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    service = str(items[0]["content"]).split()[2]  # "Deploy the <service> ..."
    if outputs:
        return [assistant_message(f"Deploy result: {outputs[-1]}")]
    return [function_call("deploy", {"service": service}, call_id=f"call-{service}")]


def build_agent() -> Agent[Any]:
    return Agent(name="ops", model=ScriptedModel([ModelStep.respond(respond) for _ in range(20)]), tools=[deploy])


async def main(store_url: str) -> None:
    gateway = Gateway(store=open_deployed_store(store_url), deliver=True)  # the deliverer makes the due reads
    approvals = AgentApprovals(gateway, build_agent(), OFFLINE)

    # 1. Asked, a miss, then Approve: the tool runs and the run finishes.
    print((await approvals.run("chat-1", "Deploy the api to production")).text)
    print((await approvals.handle("chat-1", "maybe")).text.splitlines()[0])
    turn = await approvals.handle("chat-1", "1", sender="alice")
    print(turn.text)
    print("agent:", turn.final_output)

    # 2. The person cancels: the tool does not run, and the model is told why.
    await approvals.run("chat-1", "Deploy the web to production")
    turn = await approvals.handle("chat-1", "cancel")
    print(turn.text)
    print("agent:", turn.final_output)

    # 3. Another process (a new gateway and agent on the same database) takes the answer.
    await approvals.run("chat-2", "Deploy the db to production")
    gateway.close()
    gateway = Gateway(store=open_deployed_store(store_url), deliver=True)
    finished: list[Finished] = []  # every run this process resumes: the result hook hears each
    approvals = AgentApprovals(gateway, build_agent(), OFFLINE, on_result=finished.append)
    print("agent:", (await approvals.handle("chat-2", "1")).final_output)

    # 4. An operator cancels from the console (another call path): a watcher's pass resumes
    # the run (approvals.watch(), run as a task, makes one on every close).
    asked = await approvals.run("chat-3", "Deploy the cache to production")
    gateway.cancel(asked.reply.ask_id or "")
    print("followed up:", await approvals.follow_up())
    print("agent:", finished[-1].final_output)
    gateway.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as where:
        url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PARKGATE_DB") or f"sqlite:///{where}/parkgate.db"
        asyncio.run(main(url))
