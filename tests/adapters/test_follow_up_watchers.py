"""Follow-up watchers read only their own closed asks, on SQLite and PostgreSQL.

An agent's watcher (the OpenAI Agents approvals, the LangGraph bridge) lists the closed
asks parked naming it, every page of them: another tenant's closed follow-ups, another
agent's whose watcher is down, or a graph of the same name in another process never keep
its own answered approval from resuming. The agents and graphs are real (the SDK's
``ScriptedModel``, a ``StateGraph`` with ``interrupt()``); each approval is answered where
the agent is not (``Gateway.handle``, as a channel or the console answers), so only the
watcher's pass resumes it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from agents import Agent, RunConfig, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from parkgate import Gateway, ManualClock
from parkgate.adapters.approvals.bridge import FOLLOW_UP_BATCH
from parkgate.adapters.langgraph import Closed, Graph, ParkgateInterrupts
from parkgate.adapters.openai_agents import AgentApprovals
from schema_v12 import BEFORE_V17

if TYPE_CHECKING:
    from conftest import StoreLocation

OFFLINE = RunConfig(tracing_disabled=True)
#: More closed asks than one page of a watcher holds.
CROWD = FOLLOW_UP_BATCH + 1


class Deployer:
    """A scripted agent named ``name``: asked anything, it calls ``deploy`` (which needs
    approval) once, then reports the tool's output; ``runs`` is how many runs it can make."""

    def __init__(self, name: str, runs: int = 1) -> None:
        self.ran: list[str] = []
        self.model = ScriptedModel([ModelStep.respond(self.respond) for _ in range(2 * runs)])
        self.calls = 0

        @function_tool(needs_approval=True)
        def deploy(env: str) -> str:
            """Deploy the service to ``env``."""
            self.ran.append(env)
            return f"deployed {env}"

        self.agent = Agent(name=name, model=self.model, tools=[deploy])

    def respond(self, call: ModelCall) -> Any:
        items = call.input if isinstance(call.input, list) else []
        outputs = [
            str(item["output"])
            for item in items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        if outputs:
            return [assistant_message(" | ".join(outputs))]
        self.calls += 1
        return [function_call("deploy", {"env": "prod"}, call_id=f"call-{self.calls}")]


class State(TypedDict, total=False):
    decision: str


def _approve(state: State) -> State:
    choice = interrupt({"prompt": "Deploy to production?", "options": ["Deploy", "Hold"]})
    return {"decision": f"not deployed ({choice.outcome})" if isinstance(choice, Closed) else choice}


def deploys_graph(name: str) -> Graph:
    """A graph that asks once, on a checkpointer of its own (one agent process's)."""
    builder = StateGraph(State)
    builder.add_node("approve", _approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=InMemorySaver(), name=name)


def thread(name: str) -> RunnableConfig:
    return {"configurable": {"thread_id": name}}


def pending_follow_ups(location: StoreLocation) -> int:
    return int(location.raw_query("SELECT count(*) FROM follow_ups WHERE done_at IS NULL")[0][0])


async def test_another_tenants_closed_follow_ups_never_keep_an_agents_approval_from_resuming(
    gateway: Gateway, clock: ManualClock
) -> None:
    ops = Deployer("ops")
    approvals = AgentApprovals(gateway, ops.agent, OFFLINE)
    # Tenant B's closed follow-ups, closed first (so first in the order of closes): plain
    # ones, and ones naming this agent's watcher (its name is no secret) with no approval.
    for n in range(CROWD):
        for follow_up in (True, approvals.watcher):
            asked = gateway.ask(f"b-{n}-{follow_up}", "Paste the staging DB password", follow_up=follow_up, owner="b")
            gateway.cancel(asked.ask_id or "")
    clock.advance(timedelta(seconds=1))

    await approvals.run("c-ops", "deploy prod")
    gateway.handle("c-ops", "1", sender="alice")  # answered on a channel, not through the agent
    assert ops.ran == []
    assert await approvals.follow_up() == 1
    assert ops.ran == ["prod"]
    assert len(gateway.closed_follow_ups(1000, owner="b")) == 2 * CROWD  # tenant B's are left as they were


async def test_two_agents_on_one_database_one_watcher_down_the_other_resumes_its_own(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation
) -> None:
    billing = Deployer("billing", runs=CROWD)
    billing_approvals = AgentApprovals(gateway, billing.agent, OFFLINE)  # its watcher is down
    for n in range(CROWD):
        await billing_approvals.run(f"c-billing-{n}", "deploy prod")
        gateway.handle(f"c-billing-{n}", "1", sender="bob")
    clock.advance(timedelta(seconds=1))
    ops = Deployer("ops")
    ops_approvals = AgentApprovals(gateway, ops.agent, OFFLINE)
    await ops_approvals.run("c-ops", "deploy prod")
    gateway.handle("c-ops", "1", sender="alice")

    assert await ops_approvals.follow_up() == 1
    assert ops.ran == ["prod"] and billing.ran == []  # ops resumed; billing's runs wait for billing
    assert await billing_approvals.follow_up() == CROWD  # billing's watcher back: every run of its own
    assert billing.ran == ["prod"] * CROWD and pending_follow_ups(store_location) == 0


def test_a_graph_whose_neighbour_graphs_watcher_is_down_resumes_its_own_thread(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation
) -> None:
    bridge = ParkgateInterrupts(gateway)
    billing, deploys = deploys_graph("billing"), deploys_graph("deploys")
    for n in range(CROWD):
        bridge.start(billing, {}, thread(f"billing-{n}"), f"c-billing-{n}")
        gateway.handle(f"c-billing-{n}", "1")
    clock.advance(timedelta(seconds=1))
    bridge.start(deploys, {}, thread("deploys-1"), "c-deploys")
    gateway.handle("c-deploys", "1")

    assert bridge.follow_up(deploys) == 1
    assert deploys.get_state(thread("deploys-1")).values == {"decision": "Deploy"}
    assert billing.get_state(thread("billing-0")).interrupts  # still waiting for billing's watcher
    assert bridge.follow_up(billing) == CROWD and pending_follow_ups(store_location) == 0


def test_threads_of_a_same_named_graph_in_another_process_never_hide_this_ones(
    gateway: Gateway, clock: ManualClock, store_location: StoreLocation
) -> None:
    theirs, mine = deploys_graph("deploys"), deploys_graph("deploys")  # two processes, one name
    their_bridge, my_bridge = ParkgateInterrupts(gateway), ParkgateInterrupts(gateway)
    for n in range(CROWD):
        their_bridge.start(theirs, {}, thread(f"theirs-{n}"), f"c-theirs-{n}")
        gateway.handle(f"c-theirs-{n}", "2")
    clock.advance(timedelta(seconds=1))
    my_bridge.start(mine, {}, thread("mine"), "c-mine")
    gateway.handle("c-mine", "1")

    assert my_bridge.follow_up(mine) == 1  # past every page of theirs, which it cannot resume
    assert mine.get_state(thread("mine")).values == {"decision": "Deploy"}
    assert pending_follow_ups(store_location) == CROWD  # theirs are left to their own process
    assert their_bridge.follow_up(theirs) == CROWD
    assert theirs.get_state(thread(f"theirs-{CROWD - 1}")).values == {"decision": "Hold"}


async def test_an_approval_pending_from_before_watchers_were_named_resumes_after_the_upgrade(
    store_location: StoreLocation,
) -> None:
    ops = Deployer("ops")
    with Gateway(store=store_location.open()) as gateway:
        await AgentApprovals(gateway, ops.agent, OFFLINE).run("c-ops", "deploy prod")
        gateway.handle("c-ops", "1")
    for statement in (*BEFORE_V17, "DELETE FROM schema_migrations WHERE version = 17"):  # as version 16 left it
        store_location.raw_query(statement)
    with Gateway(store=store_location.open()) as gateway:  # the upgrade
        assert await AgentApprovals(gateway, ops.agent, OFFLINE).follow_up() == 1
    assert ops.ran == ["prod"] and pending_follow_ups(store_location) == 0
