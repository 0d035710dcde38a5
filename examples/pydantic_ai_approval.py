"""Pydantic AI deferred tool approvals parked through parkgate, from sync code: approved,
rejected with a reason, resumed by another process, and expired with nobody reading while a watcher runs
(the resumed run's final output handed to a result hook).

    python examples/pydantic_ai_approval.py [STORE_URL]

The agent's model is Pydantic AI's offline ``FunctionModel`` (no key, no network, and
``ALLOW_MODEL_REQUESTS`` off): give the ``Agent`` a real model instead and nothing else
changes. parkgate's store is ``STORE_URL`` (``PARKGATE_DB``, else a SQLite file in a new
temporary folder; a PostgreSQL URL uses the schema ``PARKGATE_PG_SCHEMA`` names).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading

from pydantic_ai import Agent, DeferredToolRequests, models
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from parkgate import Gateway
from parkgate.adapters.pydantic_ai import DeferredApprovals, Finished
from parkgate.store import open_deployed_store

models.ALLOW_MODEL_REQUESTS = False  # only the function model below may answer


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The function model: deploy the service the user named, then report the tool's return."""
    first = messages[0]
    prompt = str(first.parts[-1].content) if isinstance(first, ModelRequest) else ""
    service = prompt.split()[2]  # "Deploy the <service> ..."
    last = messages[-1]
    returns = (
        [part for part in last.parts if isinstance(part, ToolReturnPart)] if isinstance(last, ModelRequest) else []
    )
    if returns:
        return ModelResponse(parts=[TextPart(f"Deploy result: {returns[-1].content}")])
    return ModelResponse(parts=[ToolCallPart("deploy", {"service": service}, tool_call_id=f"call-{service}")])


def build_agent() -> Agent[None, str | DeferredToolRequests]:
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(respond), output_type=[str, DeferredToolRequests], name="ops"
    )

    @agent.tool_plain(requires_approval=True)
    def deploy(service: str) -> str:
        """Deploy ``service`` to production."""
        return f"{service} is live"

    return agent


def main(store_url: str) -> None:
    gateway = Gateway(store=open_deployed_store(store_url), deliver=True)  # the deliverer makes the due reads
    approvals = DeferredApprovals(gateway, build_agent())

    # 1. Asked, then Approve: the tool runs and the run finishes.
    print(approvals.run_sync("chat-1", "Deploy the api to production").text)
    turn = approvals.handle_sync("chat-1", "1", sender="alice")
    print(turn.text)
    print("agent:", turn.final_output)

    # 2. Reject, and the reason asked for after it: the tool does not run, and the model
    # reads why ("-" would give no reason).
    approvals.run_sync("chat-1", "Deploy the web to production")
    print(approvals.handle_sync("chat-1", "2").text)
    print("agent:", approvals.handle_sync("chat-1", "the freeze starts at noon").final_output)

    # 3. Another process (a new gateway and agent on the same database) takes the answer.
    approvals.run_sync("chat-2", "Deploy the db to production")
    gateway.close()
    gateway = Gateway(store=open_deployed_store(store_url), deliver=True)
    approvals = DeferredApprovals(gateway, build_agent())
    print("agent:", approvals.handle_sync("chat-2", "1").final_output)

    # 4. Nobody answers: the deliverer's due read expires the ask, the watcher resumes the run
    # and hands its final output to the result hook; the run keeps it too.
    finished: list[Finished] = []
    resumed = threading.Event()

    def heard(done: Finished) -> None:
        finished.append(done)
        resumed.set()

    watching = DeferredApprovals(gateway, build_agent(), on_result=heard)
    stop = threading.Event()
    watcher = threading.Thread(target=watching.watch_sync, args=(stop,), daemon=True)
    watcher.start()
    short = DeferredApprovals(gateway, build_agent(), ttl=1.0)  # a one-second TTL, for the example
    short.run_sync("chat-3", "Deploy the cache to production")
    resumed.wait(timeout=60)
    print("agent:", finished[0].final_output)
    run = gateway.run(finished[0].run_id)
    print("kept on the run:", run.output if run is not None else None)
    stop.set()
    watcher.join()
    gateway.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as where:
        url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PARKGATE_DB") or f"sqlite:///{where}/parkgate.db"
        main(url)
