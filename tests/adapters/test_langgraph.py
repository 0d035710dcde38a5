"""LangGraph interrupts parked and resumed through parkgate, on a real StateGraph.

The graph uses the SQLite checkpointer (a file), the gateway its own SQLite file:
non-answers must leave the graph's checkpoint exactly where it was, a selection
must resume it with the chosen label, and cancel/expiry must never run the node on.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Interrupt, interrupt

from parkgate import AskStatus, Gateway, ManualClock, ReplyKind, StoppingPointError
from parkgate.adapters.langgraph import (
    ParkgateInterrupts,
    pending_interrupts,
    spec_from_payload,
    thread_id,
)
from parkgate.core import phrases as P
from parkgate.core import stopping_point
from parkgate.core.phrases import AskKind

OPTIONS = ["Sequence", "Class", "State machine"]
PROMPT = "Which UML diagram?"


class State(TypedDict, total=False):
    topic: str
    diagram: str
    description: str
    finished: bool


class Counter:
    """Counts node entries and completions: a node that runs on shows up here."""

    def __init__(self) -> None:
        self.entered: dict[str, int] = {}
        self.completed: dict[str, int] = {}

    def enter(self, name: str) -> None:
        self.entered[name] = self.entered.get(name, 0) + 1

    def complete(self, name: str) -> None:
        self.completed[name] = self.completed.get(name, 0) + 1


def build_graph(checkpointer: Any, counter: Counter) -> Any:
    def pick(state: State) -> dict[str, Any]:
        counter.enter("pick")
        choice = interrupt({"prompt": PROMPT, "options": OPTIONS})
        counter.complete("pick")
        return {"diagram": choice}

    def describe(state: State) -> dict[str, Any]:
        counter.enter("describe")
        text = interrupt(f"Describe the {state['diagram']} diagram for {state['topic']}")
        counter.complete("describe")
        return {"description": text}

    def done(state: State) -> dict[str, Any]:
        counter.complete("done")
        return {"finished": True}

    builder = StateGraph(State)
    builder.add_node("pick", pick)
    builder.add_node("describe", describe)
    builder.add_node("done", done)
    builder.add_edge(START, "pick")
    builder.add_edge("pick", "describe")
    builder.add_edge("describe", "done")
    builder.add_edge("done", END)
    return builder.compile(checkpointer=checkpointer)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def gateway(tmp_path: Path, clock: ManualClock) -> Iterator[Gateway]:
    gw = Gateway(f"sqlite:///{tmp_path / 'parkgate.db'}", clock=clock, ttl=timedelta(hours=6))
    yield gw
    gw.close()


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "graph.db", check_same_thread=False)
    yield SqliteSaver(conn)
    conn.close()


@pytest.fixture
def counter() -> Counter:
    return Counter()


@pytest.fixture
def graph(saver: SqliteSaver, counter: Counter) -> Any:
    return build_graph(saver, counter)


CONFIG: RunnableConfig = {"configurable": {"thread_id": "thread-1"}}


def checkpoint_id(graph: Any, config: RunnableConfig = CONFIG) -> str:
    return str(graph.get_state(config).config["configurable"]["checkpoint_id"])


def test_a_three_option_interrupt_is_parked_as_a_numbered_menu(gateway: Gateway, graph: Any, counter: Counter) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")

    assert first.reply.kind is ReplyKind.ASKED
    assert first.parked and not first.finished and not first.resumed
    for number, label in enumerate(OPTIONS, start=1):
        assert f"{number}. {label}" in first.text
    [ask] = gateway.open_asks()
    assert (ask.kind, ask.prompt, ask.options) == (AskKind.CHOICE, PROMPT, tuple(OPTIONS))
    assert ask.run_id == "thread-1"
    assert ask.phase == "pick"  # the node that interrupted
    assert counter.completed.get("pick", 0) == 0


def test_non_answers_bounce_without_touching_the_graph_and_a_selection_resumes_it(
    gateway: Gateway, graph: Any, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    before = checkpoint_id(graph)
    entered = dict(counter.entered)

    kinds = []
    for text in ["4", "the second one", "menu", "1.5", "Clas"]:
        step = bridge.drive(graph, CONFIG, "chat-1", text)
        kinds.append(step.reply.kind)
        assert not step.resumed
        assert step.output is None
        assert step.parked
        assert step.text == step.reply.text != ""
    assert kinds == [
        ReplyKind.RETRY,
        ReplyKind.RETRY,
        ReplyKind.RESHOWN,
        ReplyKind.ESCALATED,
        ReplyKind.ESCALATED,
    ]
    # Nothing ran: same checkpoint, no node entered again, still waiting at "pick".
    assert checkpoint_id(graph) == before
    assert counter.entered == entered
    assert graph.get_state(CONFIG).next == ("pick",)
    assert "diagram" not in graph.get_state(CONFIG).values

    chosen = bridge.drive(graph, CONFIG, "chat-1", "2")
    assert chosen.reply.kind is ReplyKind.SELECTED
    assert chosen.reply.answer == "Class"
    assert chosen.resumed
    assert graph.get_state(CONFIG).values["diagram"] == "Class"
    assert counter.completed["pick"] == 1
    # The graph asked its next question (a plain string payload: a text ask).
    assert chosen.asked is not None and chosen.asked.kind is ReplyKind.ASKED
    assert chosen.text.startswith(chosen.reply.text)
    assert "Describe the Class diagram for login" in chosen.text
    [ask] = gateway.open_asks()
    assert ask.kind is AskKind.TEXT and ask.phase == "describe"


def test_the_whole_run_finishes_and_closes_its_run(gateway: Gateway, graph: Any) -> None:
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    bridge.drive(graph, CONFIG, "chat-1", "state machine")  # the exact label selects
    answered = bridge.drive(graph, CONFIG, "chat-1", "Login: idle -> authenticating -> in")

    assert answered.reply.kind is ReplyKind.ANSWERED
    assert answered.resumed and answered.finished and not answered.parked
    values = graph.get_state(CONFIG).values
    assert values["diagram"] == "State machine"
    assert values["description"] == "Login: idle -> authenticating -> in"
    assert values["finished"] is True
    assert answered.output["finished"] is True
    assert gateway.open_asks() == []
    run = gateway.run("thread-1")
    assert run is not None and run.status == "complete" and run.outcome == "done"
    # Nothing is parked any more: the next message is the caller's to route.
    after = bridge.drive(graph, CONFIG, "chat-1", "thanks")
    assert after.reply.kind is ReplyKind.PASS and not after.resumed


def test_a_cancel_word_closes_the_ask_and_never_resumes_the_graph(
    gateway: Gateway, graph: Any, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    before = checkpoint_id(graph)

    step = bridge.drive(graph, CONFIG, "chat-1", "/stop")
    assert step.reply.kind is ReplyKind.CANCELLED
    assert step.text == P.PHRASES[ReplyKind.CANCELLED]
    assert not step.resumed and not step.parked
    assert checkpoint_id(graph) == before
    assert counter.completed.get("pick", 0) == 0
    assert gateway.get(first.reply.ask_id or "").status is AskStatus.CANCELLED
    run = gateway.run("thread-1")
    assert run is not None and run.status == "complete" and run.outcome == "cancelled"
    # A later "2" is not an answer to anything: pass, and the graph still did not run.
    late = bridge.drive(graph, CONFIG, "chat-1", "2")
    assert late.reply.kind is ReplyKind.PASS and not late.resumed
    assert "diagram" not in graph.get_state(CONFIG).values


def test_an_expired_ask_passes_and_the_graph_is_not_resumed(
    gateway: Gateway, graph: Any, clock: ManualClock, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    clock.advance(timedelta(hours=6, seconds=1))

    step = bridge.drive(graph, CONFIG, "chat-1", "2")
    assert step.reply.kind is ReplyKind.PASS
    assert step.reply.expired_ask_id == first.reply.ask_id
    assert not step.resumed
    assert counter.completed.get("pick", 0) == 0
    assert gateway.get(first.reply.ask_id or "").status is AskStatus.EXPIRED


def test_a_redelivered_selection_does_not_resume_the_graph_twice(
    gateway: Gateway, graph: Any, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    once = bridge.drive(graph, CONFIG, "chat-1", "1", message_id="m-1")
    assert once.resumed
    before = checkpoint_id(graph)

    again = bridge.drive(graph, CONFIG, "chat-1", "1", message_id="m-1")
    assert again.reply == once.reply  # the gateway's first reply, unchanged
    assert not again.resumed
    assert checkpoint_id(graph) == before
    assert counter.completed["pick"] == 1
    [ask] = gateway.open_asks()
    assert ask.phase == "describe"  # still waiting for the description, not re-answered


def test_a_redelivered_selection_returns_the_first_outcome_with_the_next_question_parked(
    gateway: Gateway, graph: Any, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    first = bridge.drive(graph, CONFIG, "chat-1", "2", message_id="m1")
    assert first.resumed and first.parked and first.asked is not None
    before = checkpoint_id(graph)
    [pending] = gateway.open_asks()

    again = bridge.drive(graph, CONFIG, "chat-1", "2", message_id="m1")
    # The same outcome: the same reply, the same next question, still parked on it.
    assert again.reply == first.reply
    assert again.asked == first.asked
    assert again.parked and not again.finished
    assert again.text == first.text
    assert "Describe the Class diagram for login" in again.text
    # ...and nothing changed: the graph did not run again, the same ask is open.
    assert not again.resumed
    assert checkpoint_id(graph) == before
    assert counter.completed == {"pick": 1}
    assert gateway.open_asks() == [pending]


def test_a_redelivered_last_answer_reports_the_run_finished_again(gateway: Gateway, graph: Any) -> None:
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    bridge.drive(graph, CONFIG, "chat-1", "1", message_id="m1")
    last = bridge.drive(graph, CONFIG, "chat-1", "Alice -> Bob", message_id="m2")
    assert last.finished and not last.parked
    before = checkpoint_id(graph)

    again = bridge.drive(graph, CONFIG, "chat-1", "Alice -> Bob", message_id="m2")
    assert again.reply == last.reply and again.finished and not again.parked
    assert again.text == last.text
    assert not again.resumed and checkpoint_id(graph) == before


class LoopState(TypedDict, total=False):
    picks: list[str]


def test_a_redelivered_selection_never_answers_the_same_question_asked_again(gateway: Gateway) -> None:
    """A node that asks the identical question twice: a redelivery must not answer round two."""

    def pick(state: LoopState) -> dict[str, Any]:
        return {"picks": [*state.get("picks", []), interrupt({"prompt": PROMPT, "options": OPTIONS})]}

    builder = StateGraph(LoopState)
    builder.add_node("pick", pick)
    builder.add_edge(START, "pick")
    builder.add_conditional_edges("pick", lambda state: END if len(state["picks"]) >= 2 else "pick")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "loop"}}
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"picks": []}, config, "chat-loop")

    first = bridge.drive(graph, config, "chat-loop", "1", message_id="m-1")
    assert first.resumed and first.asked is not None  # the same menu, asked again
    again = bridge.drive(graph, config, "chat-loop", "1", message_id="m-1")
    assert not again.resumed
    assert graph.get_state(config).values["picks"] == ["Sequence"]
    second = bridge.drive(graph, config, "chat-loop", "3", message_id="m-2")
    assert second.resumed and second.finished
    assert graph.get_state(config).values["picks"] == ["Sequence", "State machine"]


def test_a_selection_for_another_run_never_resumes_this_thread(gateway: Gateway, graph: Any) -> None:
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    other: RunnableConfig = {"configurable": {"thread_id": "thread-2"}}
    step = bridge.drive(graph, other, "chat-1", "1")
    # The person's "1" selected the conversation's ask, but that ask is thread-1's.
    assert step.reply.kind is ReplyKind.SELECTED
    assert not step.resumed
    assert "diagram" not in graph.get_state(CONFIG).values


def test_park_and_resume_value_by_hand_with_the_in_memory_saver(gateway: Gateway) -> None:
    counter = Counter()
    graph = build_graph(InMemorySaver(), counter)
    config: RunnableConfig = {"configurable": {"thread_id": "t-hand"}}
    bridge = ParkgateInterrupts(gateway)

    result = graph.invoke({"topic": "billing"}, config)
    asked = bridge.park("chat-9", result, run_id=thread_id(config))
    assert asked.kind is ReplyKind.ASKED

    assert bridge.resume_value(gateway.handle("chat-9", "nope")) is None
    assert bridge.resume_value(gateway.handle("chat-9", "options")) is None
    reply = gateway.handle("chat-9", "3")
    command = bridge.resume_value(reply)
    assert isinstance(command, Command) and command.resume == "State machine"
    [pending] = pending_interrupts(result)
    keyed = bridge.resume_value(reply, pending.id)
    assert keyed is not None and keyed.resume == {pending.id: "State machine"}

    graph.invoke(keyed, config)
    assert graph.get_state(config).values["diagram"] == "State machine"


def test_resume_with_shapes_the_value_the_node_receives(gateway: Gateway, graph: Any) -> None:
    bridge = ParkgateInterrupts(gateway, resume_with=lambda reply: f"{reply.option_index}:{reply.answer}")
    bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    bridge.drive(graph, CONFIG, "chat-1", "2")
    assert graph.get_state(CONFIG).values["diagram"] == "2:Class"


def test_a_graph_that_never_interrupts_passes_and_parks_nothing(gateway: Gateway) -> None:
    builder = StateGraph(State)
    builder.add_node("only", lambda state: {"finished": True})
    builder.add_edge(START, "only")
    builder.add_edge("only", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    step = ParkgateInterrupts(gateway).start(graph, {"topic": "x"}, {"configurable": {"thread_id": "q"}}, "chat-q")
    assert step.reply.kind is ReplyKind.PASS and step.finished and not step.parked
    assert gateway.open_asks() == []


async def test_the_async_variants_resume_the_same_way(gateway: Gateway) -> None:
    counter = Counter()
    graph = build_graph(InMemorySaver(), counter)
    config: RunnableConfig = {"configurable": {"thread_id": "t-async"}}
    bridge = ParkgateInterrupts(gateway)
    first = await bridge.astart(graph, {"topic": "search"}, config, "chat-a")
    assert first.reply.kind is ReplyKind.ASKED
    bounced = await bridge.adrive(graph, config, "chat-a", "zero")
    assert bounced.reply.kind is ReplyKind.RETRY and not bounced.resumed
    chosen = await bridge.adrive(graph, config, "chat-a", "1")
    assert chosen.resumed and (await graph.aget_state(config)).values["diagram"] == "Sequence"
    assert counter.completed["pick"] == 1


def test_payloads_map_onto_asks() -> None:
    assert spec_from_payload({"prompt": "Deploy?", "options": ["Yes", "No"]}) == stopping_point.make_spec(
        AskKind.CHOICE, "Deploy?", ["Yes", "No"]
    )
    assert spec_from_payload({"prompt": "Why?", "kind": "text"}).kind is AskKind.TEXT
    marked = "Some model output.\n[[ask]]\nPick one\n\n1) Red\n2) Blue\n[[/ask]]\ntrailing"
    assert spec_from_payload(marked) == stopping_point.make_spec(AskKind.CHOICE, "Pick one", ["Red", "Blue"])
    plain = spec_from_payload("What is the ticket number?")
    assert (plain.kind, plain.prompt, plain.options) == (AskKind.TEXT, "What is the ticket number?", ())
    with pytest.raises(StoppingPointError, match="unknown field"):
        spec_from_payload({"prompt": "x", "choices": ["a"]})
    with pytest.raises(StoppingPointError, match="gap"):
        spec_from_payload("[[ask]]\nPick\n1. a\n3. b\n[[/ask]]")
    with pytest.raises(StoppingPointError, match="mapping"):
        spec_from_payload(42)


def test_pending_interrupts_reads_every_result_shape() -> None:
    one = Interrupt(value="q?", id="i-1")
    assert pending_interrupts({"__interrupt__": (one,)}) == (one,)
    assert pending_interrupts(one) == (one,)
    assert pending_interrupts([one, "noise"]) == (one,)
    assert pending_interrupts({"diagram": "Class"}) == ()
    assert pending_interrupts("text") == ()


def test_a_bad_payload_parks_nothing(gateway: Gateway) -> None:
    bridge = ParkgateInterrupts(gateway)
    with pytest.raises(StoppingPointError):
        bridge.park("chat-bad", Interrupt(value={"prompt": "", "options": ["a"]}, id="x"), run_id="r")
    assert gateway.open_asks() == []


def test_importing_parkgate_does_not_import_the_frameworks() -> None:
    code = (
        "import sys, parkgate, parkgate.adapters\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('langgraph', 'mcp', 'mcp_types'))\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


class MaybeState(TypedDict, total=False):
    ask: bool
    answer: str


def test_a_thread_restarted_to_its_end_cancels_the_question_it_no_longer_asks(gateway: Gateway) -> None:
    """start() again on a thread parked at an interrupt, with input that runs to the end:
    the run is finished, and its open ask (a question the graph no longer has) is
    cancelled rather than left parked for a finished run."""

    def maybe(state: MaybeState) -> dict[str, Any]:
        if state.get("ask"):
            return {"answer": interrupt({"prompt": "Proceed?", "options": ["Yes", "No"]})}
        return {"answer": "skipped"}

    builder = StateGraph(MaybeState)
    builder.add_node("maybe", maybe)
    builder.add_edge(START, "maybe")
    builder.add_edge("maybe", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "restart-thread"}}
    adapter = ParkgateInterrupts(gateway)
    first = adapter.start(graph, {"ask": True}, config, "conv-restart")
    assert first.reply.kind is ReplyKind.ASKED and first.reply.ask_id is not None
    again = adapter.start(graph, {"ask": False}, config, "conv-restart")
    assert again.finished and again.output == {"ask": False, "answer": "skipped"}
    assert gateway.get(first.reply.ask_id).status is AskStatus.CANCELLED
    run = gateway.run("restart-thread")
    assert run is not None and (run.status, run.outcome) == ("complete", "done")
    assert gateway.handle("conv-restart", "1").kind is ReplyKind.PASS  # nothing left parked
