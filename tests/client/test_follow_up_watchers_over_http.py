"""Follow-up watchers over HTTP read only their own closed asks: a real ``parkgate serve``
with two named tokens (two tenants), on SQLite and PostgreSQL, and the LangGraph bridge on
a :class:`~parkgate.client.Client` following up a real graph's thread.

Each thread's question is answered on a surface of its own (a client's ``handle``, as a
channel answers), so only the bridge's ``follow_up`` pass resumes it.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from live_server import Server

from parkgate import ReplyKind, UnknownAsk
from parkgate.adapters.langgraph import Closed, Graph, ParkgateInterrupts
from parkgate.adapters.langgraph.calls import FOLLOW_UP_BATCH
from parkgate.client import Client
from parkgate.http.tokens import digest

#: More closed asks than one page of a watcher holds.
CROWD = FOLLOW_UP_BATCH + 1
SCOPES = '["park", "answer", "read", "operate"]'


class State(TypedDict, total=False):
    decision: str


def _approve(state: State) -> State:
    choice = interrupt({"prompt": "Deploy to production?", "options": ["Deploy", "Hold"]})
    return {"decision": f"not deployed ({choice.outcome})" if isinstance(choice, Closed) else choice}


def graph_named(name: str) -> Graph:
    builder = StateGraph(State)
    builder.add_node("approve", _approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=InMemorySaver(), name=name)


def thread(name: str) -> RunnableConfig:
    return {"configurable": {"thread_id": name}}


@pytest.fixture
def tenants(database: Any, launch: Any, tmp_path: Path) -> tuple[Server, dict[str, str]]:
    """A server whose tokens file names two tenants, ``a`` and ``b``, each with every scope
    the bridge needs; and their tokens."""
    tokens = {name: secrets.token_urlsafe(24) for name in ("a", "b")}
    entries = [
        f'[[token]]\nname = "{name}"\nsha256 = "{digest(token)}"\nscopes = {SCOPES}\n' for name, token in tokens.items()
    ]
    (tmp_path / "tokens.toml").write_text("\n".join(entries), encoding="utf-8")
    server = launch(database, extra_env={"PARKGATE_TOKENS_FILE": str(tmp_path / "tokens.toml")})
    return server, tokens


def test_another_tenants_closed_follow_ups_never_keep_a_threads_answer_from_resuming_it(
    tenants: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = tenants
    deploys = graph_named("deploys")
    with Client(server.url, tokens["a"]) as agent, Client(server.url, tokens["b"]) as tenant_b:
        bridge = ParkgateInterrupts(agent)
        # Tenant B's closed follow-ups: plain ones, and ones naming A's graph (no secret).
        for n in range(CROWD):
            for follow_up in (True, "langgraph:deploys"):
                asked = tenant_b.ask(f"b-{n}-{follow_up}", "Paste the staging DB password", follow_up=follow_up)
                tenant_b.cancel(asked.ask_id or "")
        started = bridge.start(deploys, {}, thread("deploys-1"), "c-deploys").asked
        assert started is not None and started.ask_id is not None
        assert agent.handle("c-deploys", "1").kind is ReplyKind.SELECTED  # answered on a channel

        assert bridge.follow_up(deploys) == 1
        assert deploys.get_state(thread("deploys-1")).values == {"decision": "Deploy"}
        assert len(tenant_b.closed_follow_ups(1000)) == 2 * CROWD  # B's own are left to B
        with pytest.raises(UnknownAsk):  # nor can B page from A's ask (it is not B's to name)
            tenant_b.closed_follow_ups(after=started.ask_id)


def test_two_graphs_of_one_tenant_one_watcher_down_the_other_resumes_its_own_thread(
    tenants: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = tenants
    billing, deploys = graph_named("billing"), graph_named("deploys")
    with Client(server.url, tokens["a"]) as agent:
        bridge = ParkgateInterrupts(agent)
        for n in range(CROWD):  # billing's threads, answered while billing's watcher is down
            bridge.start(billing, {}, thread(f"billing-{n}"), f"c-billing-{n}")
            agent.handle(f"c-billing-{n}", "2")
        bridge.start(deploys, {}, thread("deploys-1"), "c-deploys")
        agent.handle("c-deploys", "1")

        assert bridge.follow_up(deploys) == 1
        assert deploys.get_state(thread("deploys-1")).values == {"decision": "Deploy"}
        assert billing.get_state(thread("billing-0")).interrupts  # left to billing's watcher
        assert bridge.follow_up(billing) == CROWD
        assert billing.get_state(thread(f"billing-{CROWD - 1}")).values == {"decision": "Hold"}
