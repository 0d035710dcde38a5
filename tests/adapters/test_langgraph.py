"""LangGraph interrupts parked and resumed through parkgate, on a real StateGraph.

The graph's checkpoints go to a SQLite file (``SqliteSaver``); the gateway runs on SQLite
and on PostgreSQL (the ``gateway`` fixture). Non-answers must leave the checkpoint where it
was, a selection must resume the thread with the chosen label, and whatever closes an ask
(a cancel, an expiry, an operator in another process) must resume the thread that owns it,
once, so that no thread is left interrupted, no ask open and no run ``running``.
"""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Interrupt, interrupt

from parkgate import AskAlreadyOpen, AskStatus, Gateway, InputError, ManualClock, ReplyKind, StoppingPointError
from parkgate.adapters.langgraph import (
    UNASKABLE,
    Closed,
    NotThisGraph,
    ParkgateInterrupts,
    pending_interrupts,
    spec_from_payload,
    thread_id,
)
from parkgate.core import phrases as P
from parkgate.core import stopping_point
from parkgate.core.kinds import AskKind
from parkgate.gateway import ask_to_dict
from polling import until

if TYPE_CHECKING:
    from conftest import Reopen

OPTIONS = ["Sequence", "Class", "State machine"]
PROMPT = "Which UML diagram?"
TTL = timedelta(hours=6)


class State(TypedDict, total=False):
    topic: str
    diagram: str
    description: str
    finished: bool
    closed: str


class Counter:
    """Counts node entries and completions, and keeps what each ``interrupt()`` returned."""

    def __init__(self) -> None:
        self.entered: dict[str, int] = {}
        self.completed: dict[str, int] = {}
        self.got: list[Any] = []

    def enter(self, name: str) -> None:
        self.entered[name] = self.entered.get(name, 0) + 1

    def complete(self, name: str) -> None:
        self.completed[name] = self.completed.get(name, 0) + 1


def build_graph(checkpointer: Any, counter: Counter, *, name: str = "uml") -> Any:
    """pick (a menu) -> describe (a text question) -> done; a Closed ends the run at once."""

    def pick(state: State) -> Any:
        counter.enter("pick")
        choice = interrupt({"prompt": PROMPT, "options": OPTIONS})
        counter.got.append(choice)
        if isinstance(choice, Closed):
            return {"closed": choice.outcome}  # nothing ran
        counter.complete("pick")
        return {"diagram": choice}

    def describe(state: State) -> Any:
        counter.enter("describe")
        text = interrupt(f"Describe the {state['diagram']} diagram for {state['topic']}")
        counter.got.append(text)
        if isinstance(text, Closed):
            return {"closed": text.outcome}
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
    builder.add_conditional_edges("pick", lambda state: END if state.get("closed") else "describe")
    builder.add_conditional_edges("describe", lambda state: END if state.get("closed") else "done")
    builder.add_edge("done", END)
    return builder.compile(checkpointer=checkpointer, name=name)


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


def config_of(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


CONFIG = config_of("thread-1")


def checkpoint_id(graph: Any, config: RunnableConfig = CONFIG) -> str:
    return str(graph.get_state(config).config["configurable"]["checkpoint_id"])


def run_of(gateway: Gateway, run_id: str) -> tuple[str, str | None]:
    run = gateway.run(run_id)
    assert run is not None, run_id
    return run.status, run.outcome


def eventually(check: Callable[[], bool], what: str) -> None:
    """Wait for a watcher in another thread to have done ``what`` (polls; asserts no timing)."""
    until(check, 60, what)


# -- asking and answering ---------------------------------------------------------------


def test_a_three_option_interrupt_is_parked_as_a_numbered_menu(gateway: Gateway, graph: Any, counter: Counter) -> None:
    first = ParkgateInterrupts(gateway).start(graph, {"topic": "login"}, CONFIG, "chat-1")

    assert first.reply.kind is ReplyKind.ASKED
    assert first.parked and not first.finished and not first.resumed
    for number, label in enumerate(OPTIONS, start=1):
        assert f"{number}. {label}" in first.text
    [ask] = gateway.open_asks()
    assert (ask.kind, ask.prompt, ask.options) == (AskKind.CHOICE, PROMPT, tuple(OPTIONS))
    assert ask.run_id == "thread-1"
    assert ask.phase == "pick"  # the node that interrupted
    assert ask.context is not None and ask.context["langgraph"]["thread_id"] == "thread-1"
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
        assert not step.resumed and step.output is None and step.parked
        assert step.text == step.reply.text != ""
    assert kinds == [ReplyKind.RETRY, ReplyKind.RETRY, ReplyKind.RESHOWN, ReplyKind.ESCALATED, ReplyKind.ESCALATED]
    assert checkpoint_id(graph) == before
    assert counter.entered == entered
    assert graph.get_state(CONFIG).next == ("pick",)

    chosen = bridge.drive(graph, CONFIG, "chat-1", "2")
    assert chosen.reply.kind is ReplyKind.SELECTED and chosen.reply.answer == "Class"
    assert chosen.resumed
    assert graph.get_state(CONFIG).values["diagram"] == "Class"
    assert counter.completed["pick"] == 1
    assert chosen.asked is not None and chosen.asked.kind is ReplyKind.ASKED
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
    assert (values["diagram"], values["description"], values["finished"]) == (
        "State machine",
        "Login: idle -> authenticating -> in",
        True,
    )
    assert gateway.open_asks() == []
    assert run_of(gateway, "thread-1") == ("complete", "done")
    after = bridge.drive(graph, CONFIG, "chat-1", "thanks")
    assert after.reply.kind is ReplyKind.PASS and not after.resumed


# -- a cancel or an expiry resumes the thread -----------------------------------------------


def test_a_cancel_word_resumes_the_thread_with_closed_and_nothing_runs(
    gateway: Gateway, graph: Any, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")

    step = bridge.drive(graph, CONFIG, "chat-1", "/stop")
    assert step.reply.kind is ReplyKind.CANCELLED
    assert step.text == P.PHRASES[ReplyKind.CANCELLED]
    assert step.resumed and step.finished and not step.parked
    # The node learned what happened, within the call that cancelled, and ran nothing.
    assert counter.got == [Closed("cancelled", first.reply.ask_id or "")]
    assert counter.completed == {}
    state = graph.get_state(CONFIG)
    assert state.next == () and state.interrupts == ()
    assert state.values["closed"] == "cancelled" and "diagram" not in state.values
    assert gateway.get(first.reply.ask_id or "").status is AskStatus.CANCELLED
    assert run_of(gateway, "thread-1") == ("complete", "cancelled")
    assert gateway.closed_follow_ups() == []
    late = bridge.drive(graph, CONFIG, "chat-1", "2")
    assert late.reply.kind is ReplyKind.PASS and not late.resumed


def test_an_expiry_found_by_a_message_resumes_the_thread_with_closed(
    gateway: Gateway, graph: Any, clock: ManualClock, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    clock.advance(TTL + timedelta(seconds=1))

    step = bridge.drive(graph, CONFIG, "chat-1", "2")
    assert step.reply.kind is ReplyKind.PASS  # the message is the caller's to route onward
    assert step.reply.expired_ask_id == first.reply.ask_id
    assert step.resumed and step.finished
    assert counter.got == [Closed("expired", first.reply.ask_id or "")]
    assert graph.get_state(CONFIG).next == ()
    assert run_of(gateway, "thread-1") == ("complete", "expired")


class DeployState(TypedDict, total=False):
    service: str
    status: str


def deploy_graph(checkpointer: Any, payload: dict[str, Any], seen: list[Any]) -> Any:
    def approve(state: DeployState) -> dict[str, Any]:
        choice = interrupt(payload)
        seen.append(choice)
        if isinstance(choice, Closed):
            return {"status": choice.outcome}
        return {"status": f"chose {choice}"}

    builder = StateGraph(DeployState)
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=checkpointer, name="deploy")


def test_a_payload_ttl_and_default_resume_the_thread_with_the_default_when_it_expires(
    gateway: Gateway, saver: SqliteSaver, clock: ManualClock
) -> None:
    seen: list[Any] = []
    payload = {"question": "Deploy api?", "choices": ["Deploy", "Hold"], "ttl_seconds": 60, "default": "Hold"}
    graph = deploy_graph(saver, payload, seen)
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"service": "api"}, CONFIG, "chat-1")
    ask = gateway.get(first.reply.ask_id or "")
    assert (ask.ttl_seconds, ask.default, ask.options) == (60.0, "Hold", ("Deploy", "Hold"))

    clock.advance(timedelta(seconds=61))
    step = bridge.drive(graph, CONFIG, "chat-1", "hello")
    assert step.reply.expired_ask_id == ask.id and step.resumed and step.finished
    assert seen == ["Hold"]  # like a selection of the default
    assert graph.get_state(CONFIG).values["status"] == "chose Hold"
    assert run_of(gateway, "thread-1") == ("complete", "done")


def test_a_payload_schedule_reminds_and_escalates_the_threads_ask(
    gateway: Gateway, saver: SqliteSaver, clock: ManualClock
) -> None:
    payload = {
        "question": "Deploy api?",
        "choices": ["Deploy", "Hold"],
        "ttl_seconds": 60,
        "remind_after": [10, 20],
        "escalate_after": 30,
        "escalate_to": ["U_CAROL"],
    }
    graph = deploy_graph(saver, payload, [])
    first = ParkgateInterrupts(gateway).start(graph, {"service": "api"}, CONFIG, "chat-1")
    ask = gateway.get(first.reply.ask_id or "")
    assert (ask.remind_after, ask.escalate_after, ask.escalate_to) == ((10.0, 20.0), 30.0, ("U_CAROL",))
    assert "remind_after" not in (ask_to_dict(ask)["context"] or {})  # a field, not context
    clock.advance(timedelta(seconds=30))
    assert gateway.read_due() == 1
    fired = gateway.get(ask.id)
    assert (fired.reminders_sent, fired.escalated_at is not None, fired.is_open) == (2, True, True)


def test_payloads_people_write_are_parked_with_their_extra_keys_as_context(
    gateway: Gateway, saver: SqliteSaver
) -> None:
    seen: list[Any] = []
    payload = {
        "question": "Deploy api to production?",
        "details": {"version": "1.4.2", "changes": 12},
        "action_request": {"action": "deploy", "args": {"env": "prod"}},
    }
    graph = deploy_graph(saver, payload, seen)
    first = ParkgateInterrupts(gateway).start(graph, {"service": "api"}, CONFIG, "chat-1")
    ask = gateway.get(first.reply.ask_id or "")
    assert (ask.kind, ask.prompt) == (AskKind.TEXT, "Deploy api to production?")
    shown = ask_to_dict(ask)["context"]
    assert shown["details"] == {"version": "1.4.2", "changes": 12}
    assert shown["action_request"] == {"action": "deploy", "args": {"env": "prod"}}


def test_an_agent_inbox_style_request_is_parked_from_its_description(gateway: Gateway, saver: SqliteSaver) -> None:
    payload = {
        "action_request": {"action": "send_email", "args": {"to": "ops@example.com"}},
        "config": {"allow_accept": True, "allow_respond": True},
        "description": "Send the release notes to ops?",
    }
    graph = deploy_graph(saver, payload, [])
    first = ParkgateInterrupts(gateway).start(graph, {"service": "api"}, CONFIG, "chat-1")
    ask = gateway.get(first.reply.ask_id or "")
    assert ask.prompt == "Send the release notes to ops?"
    assert ask.context is not None and ask.context["config"] == {"allow_accept": True, "allow_respond": True}


def test_an_operator_cancel_in_another_process_is_followed_up_by_the_watcher(
    gateway: Gateway, graph: Any, counter: Counter, reopen: Reopen
) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    stop = threading.Event()
    watcher = threading.Thread(target=bridge.watch, args=(graph,), kwargs={"stop": stop}, daemon=True)
    watcher.start()
    try:
        operator = reopen()  # the console's process
        operator.cancel(first.reply.ask_id or "")
        eventually(lambda: graph.get_state(CONFIG).next == (), "the thread resumed after the operator's cancel")
    finally:
        stop.set()
        watcher.join(timeout=30)
    assert counter.got == [Closed("cancelled", first.reply.ask_id or "")]
    assert run_of(gateway, "thread-1") == ("complete", "cancelled")
    assert gateway.closed_follow_ups() == []


def test_an_expiry_nobody_reads_is_closed_by_the_due_read_and_resumes_the_thread(
    gateway: Gateway, graph: Any, clock: ManualClock, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    stop = threading.Event()
    watcher = threading.Thread(target=bridge.watch, args=(graph,), kwargs={"stop": stop}, daemon=True)
    watcher.start()
    try:
        clock.advance(TTL + timedelta(seconds=1))
        assert gateway.read_due() == 1  # what a deliverer does when the TTL falls due
        eventually(lambda: graph.get_state(CONFIG).next == (), "the thread resumed after the due read")
    finally:
        stop.set()
        watcher.join(timeout=30)
    assert counter.got == [Closed("expired", first.reply.ask_id or "")]
    assert run_of(gateway, "thread-1") == ("complete", "expired")


def test_a_watcher_started_after_the_close_catches_up_and_two_never_resume_twice(
    gateway: Gateway, graph: Any, counter: Counter, reopen: Reopen
) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    gateway.cancel(first.reply.ask_id or "")  # while no watcher runs
    assert graph.get_state(CONFIG).next == ("pick",)  # still interrupted: nobody followed up yet

    other = ParkgateInterrupts(reopen())  # a second process with its own watcher
    results: list[int] = []
    passes = [threading.Thread(target=lambda b=b: results.append(b.follow_up(graph))) for b in (bridge, other)]
    for each in passes:
        each.start()
    for each in passes:
        each.join(timeout=60)
    assert sorted(results) == [0, 1]  # one of them resumed the thread, the other found it claimed
    assert counter.got == [Closed("cancelled", first.reply.ask_id or "")]
    assert graph.get_state(CONFIG).next == ()
    assert bridge.follow_up(graph) == 0 and counter.got == [Closed("cancelled", first.reply.ask_id or "")]


# -- whose ask a message answers ---------------------------------------------------------


def test_a_message_is_applied_to_the_thread_that_owns_the_parked_ask(
    gateway: Gateway, graph: Any, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    other = config_of("thread-2")

    step = bridge.drive(graph, other, "chat-1", "1")
    assert step.reply.kind is ReplyKind.SELECTED and step.resumed
    assert graph.get_state(CONFIG).values["diagram"] == "Sequence"  # thread-1 ran on
    assert step.asked is not None and "Describe the Sequence diagram" in step.text
    assert graph.get_state(other).values == {}  # thread-2 never ran
    [ask] = gateway.open_asks()
    assert ask.run_id == "thread-1"


def test_a_message_for_an_ask_the_graph_cannot_resume_is_refused_changing_nothing(gateway: Gateway, graph: Any) -> None:
    plain = gateway.ask("chat-1", "Ship it?", ["Yes", "No"])  # parked by hand, not by the bridge
    with pytest.raises(NotThisGraph, match="not a LangGraph thread") as raised:
        ParkgateInterrupts(gateway).drive(graph, CONFIG, "chat-1", "1")
    assert raised.value.ask_id == plain.ask_id and raised.value.thread_id is None
    [ask] = gateway.open_asks()
    assert ask.id == plain.ask_id and ask.mismatches == 0 and ask.is_open


def test_a_message_for_another_graphs_thread_is_refused_naming_the_thread(
    gateway: Gateway, graph: Any, saver: SqliteSaver
) -> None:
    other = build_graph(saver, Counter(), name="other")
    ParkgateInterrupts(gateway).start(other, {"topic": "x"}, config_of("their-thread"), "chat-1")
    with pytest.raises(NotThisGraph, match="their-thread") as raised:
        ParkgateInterrupts(gateway).drive(graph, CONFIG, "chat-1", "1")
    assert raised.value.thread_id == "their-thread"
    [ask] = gateway.open_asks()
    assert ask.is_open and ask.mismatches == 0


# -- start() checks before it runs ----------------------------------------------------------


def test_start_refuses_when_another_threads_ask_is_open_and_runs_nothing(
    gateway: Gateway, graph: Any, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    second = config_of("thread-2")

    with pytest.raises(AskAlreadyOpen):
        bridge.start(graph, {"topic": "billing"}, second, "chat-1")
    assert counter.entered == {"pick": 1}  # thread-2's graph never ran
    assert graph.get_state(second).values == {}
    assert [ask.id for ask in gateway.open_asks()] == [first.reply.ask_id]


def test_start_with_replace_cancels_the_other_threads_ask_and_resumes_it_with_closed(
    gateway: Gateway, graph: Any, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    second = config_of("thread-2")

    step = bridge.start(graph, {"topic": "billing"}, second, "chat-1", replace=True)
    assert step.reply.kind is ReplyKind.ASKED
    assert counter.got == [Closed("cancelled", first.reply.ask_id or "")]
    assert graph.get_state(CONFIG).next == ()  # thread-1 is not left interrupted
    assert run_of(gateway, "thread-1") == ("complete", "cancelled")
    [ask] = gateway.open_asks()
    assert ask.run_id == "thread-2"


def test_start_again_on_its_own_thread_cancels_the_stale_ask_first(
    gateway: Gateway, graph: Any, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")

    again = bridge.start(graph, {"topic": "billing"}, CONFIG, "chat-1")
    assert again.reply.kind is ReplyKind.ASKED
    assert gateway.get(first.reply.ask_id or "").status is AskStatus.CANCELLED
    assert run_of(gateway, "thread-1") == ("complete", "cancelled")  # a finished run stays finished
    [ask] = gateway.open_asks()
    assert ask.run_id == "thread-1#2"
    assert counter.got == []  # the old interrupt was replaced by the new input, not resumed
    assert graph.get_state(CONFIG).values["topic"] == "billing"


def test_starting_a_thread_whose_run_finished_never_reopens_that_run(gateway: Gateway, graph: Any) -> None:
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    bridge.drive(graph, CONFIG, "chat-1", "/cancel")
    assert run_of(gateway, "thread-1") == ("complete", "cancelled")

    bridge.start(graph, {"topic": "billing", "closed": ""}, CONFIG, "chat-1")
    assert run_of(gateway, "thread-1") == ("complete", "cancelled")
    assert run_of(gateway, "thread-1#2") == ("running", None)
    bridge.drive(graph, CONFIG, "chat-1", "2")
    done = bridge.drive(graph, CONFIG, "chat-1", "A -> B")
    assert done.finished and run_of(gateway, "thread-1#2") == ("complete", "done")
    assert run_of(gateway, "thread-1") == ("complete", "cancelled")


# -- redelivery ------------------------------------------------------------------------------


def test_a_redelivered_selection_returns_the_first_outcome_and_resumes_nothing(
    gateway: Gateway, graph: Any, counter: Counter
) -> None:
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"topic": "login"}, CONFIG, "chat-1")
    first = bridge.drive(graph, CONFIG, "chat-1", "2", message_id="m1")
    assert first.resumed and first.parked and first.asked is not None
    before = checkpoint_id(graph)
    [pending] = gateway.open_asks()

    again = bridge.drive(graph, CONFIG, "chat-1", "2", message_id="m1")
    assert again.reply == first.reply and again.asked == first.asked and again.text == first.text
    assert not again.resumed and again.parked and not again.finished
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
    assert again.reply == last.reply and again.finished and not again.parked and not again.resumed
    assert checkpoint_id(graph) == before


class LoopState(TypedDict, total=False):
    picks: list[str]


def test_a_redelivered_selection_never_answers_the_same_question_asked_again(
    gateway: Gateway, saver: SqliteSaver
) -> None:
    def pick(state: LoopState) -> dict[str, Any]:
        return {"picks": [*state.get("picks", []), interrupt({"prompt": PROMPT, "options": OPTIONS})]}

    builder = StateGraph(LoopState)
    builder.add_node("pick", pick)
    builder.add_edge(START, "pick")
    builder.add_conditional_edges("pick", lambda state: END if len(state["picks"]) >= 2 else "pick")
    graph = builder.compile(checkpointer=saver, name="loop")
    config = config_of("loop")
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


# -- several interrupts at once ------------------------------------------------------------


class PairState(TypedDict, total=False):
    color: str
    size: str


def test_parallel_interrupts_are_asked_one_after_another_and_resumed_once(gateway: Gateway, saver: SqliteSaver) -> None:
    entered: list[str] = []

    def color(state: PairState) -> dict[str, Any]:
        entered.append("color")
        return {"color": interrupt({"prompt": "Colour?", "options": ["Red", "Blue"]})}

    def size(state: PairState) -> dict[str, Any]:
        entered.append("size")
        return {"size": interrupt({"prompt": "Size?", "options": ["S", "M"]})}

    builder = StateGraph(PairState)
    builder.add_node("color", color)
    builder.add_node("size", size)
    builder.add_edge(START, "color")
    builder.add_edge(START, "size")
    builder.add_edge("color", END)
    builder.add_edge("size", END)
    graph = builder.compile(checkpointer=saver, name="pair")
    bridge = ParkgateInterrupts(gateway)
    first = bridge.start(graph, {}, CONFIG, "chat-1")
    assert first.reply.kind is ReplyKind.ASKED
    runs_before = len(entered)

    one = bridge.drive(graph, CONFIG, "chat-1", "2")
    assert not one.resumed and one.asked is not None and one.parked  # the second question
    assert len(entered) == runs_before  # nothing resumed yet
    two = bridge.drive(graph, CONFIG, "chat-1", "1")
    assert two.resumed and two.finished
    values = graph.get_state(CONFIG).values
    assert sorted([values["color"], values["size"]]) == sorted([one.reply.answer or "", two.reply.answer or ""])


# -- a payload that cannot be asked closes the thread ------------------------------------------

UNASKABLE_PAYLOADS = [
    pytest.param({"options": ["Deploy", "Hold"], "details": {"v": 1}}, "prompt or question", id="no-text"),
    pytest.param({"question": "Deploy api?", "options": []}, "at least one option", id="empty-options"),
    pytest.param(
        {"question": "Deploy api?", "choices": ["Deploy", "Hold"], "default": "Later"},
        "'Later' is not one of the options",
        id="default-not-an-option",
    ),
    pytest.param({"question": "Deploy api?", "ttl_seconds": 0}, "ttl_seconds must be a positive", id="ttl-zero"),
    pytest.param({"question": "Deploy api?", "ttl_seconds": "60"}, "ttl_seconds must be a positive", id="ttl-text"),
    pytest.param({"question": "Deploy api?", "ttl_seconds": 10**12}, "ttl_seconds .* longer than", id="ttl-too-long"),
    pytest.param(42, "mapping with a prompt, or a string, not int", id="an-int"),
]


def confirm_graph(checkpointer: Any, second: Any, seen: list[Any]) -> Any:
    """approve (a good menu) -> confirm (``second``, the payload under test)."""

    def approve(state: DeployState) -> dict[str, Any]:
        choice = interrupt({"question": "Deploy api?", "options": ["Deploy", "Hold"]})
        seen.append(choice)
        return {"status": f"chose {choice}"}

    def confirm(state: DeployState) -> dict[str, Any]:
        sure = interrupt(second)
        seen.append(sure)
        if isinstance(sure, Closed):
            return {"status": sure.outcome}
        return {"status": "confirmed"}

    builder = StateGraph(DeployState)
    builder.add_node("approve", approve)
    builder.add_node("confirm", confirm)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", "confirm")
    builder.add_edge("confirm", END)
    return builder.compile(checkpointer=checkpointer, name="confirm")


def assert_closed_as_unaskable(gateway: Gateway, graph: Any, bridge: ParkgateInterrupts, error: Exception) -> None:
    """The thread ran to its end, its run closed as unaskable, nothing is parked, and the
    error says what was done."""
    state = graph.get_state(CONFIG)
    assert state.next == () and state.interrupts == ()
    assert state.values["status"] == "unaskable"
    assert run_of(gateway, "thread-1") == ("complete", "unaskable")
    assert gateway.open_asks() == [] and gateway.parked("chat-1") is None
    assert gateway.closed_follow_ups() == []
    assert any("Closed(outcome='unaskable')" in note for note in getattr(error, "__notes__", []))
    later = bridge.drive(graph, CONFIG, "chat-1", "1")
    assert later.reply.kind is ReplyKind.PASS and not later.resumed


@pytest.mark.parametrize(("payload", "wrong"), UNASKABLE_PAYLOADS)
def test_start_with_a_payload_that_cannot_be_asked_closes_the_thread_then_raises(
    gateway: Gateway, saver: SqliteSaver, payload: Any, wrong: str
) -> None:
    seen: list[Any] = []
    graph = deploy_graph(saver, payload, seen)
    bridge = ParkgateInterrupts(gateway)
    with pytest.raises(StoppingPointError, match=wrong) as raised:
        bridge.start(graph, {"service": "api"}, CONFIG, "chat-1")
    # The node learned it, within the call, with the reason the caller is given.
    assert seen == [Closed(UNASKABLE, None, None, str(raised.value))]
    assert_closed_as_unaskable(gateway, graph, bridge, raised.value)


@pytest.mark.parametrize(("payload", "wrong"), UNASKABLE_PAYLOADS[:3])
def test_drive_to_a_next_question_that_cannot_be_asked_closes_the_thread_then_raises(
    gateway: Gateway, saver: SqliteSaver, payload: Any, wrong: str
) -> None:
    seen: list[Any] = []
    graph = confirm_graph(saver, payload, seen)
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"service": "api"}, CONFIG, "chat-1")
    with pytest.raises(StoppingPointError, match=wrong) as raised:
        bridge.drive(graph, CONFIG, "chat-1", "1")
    assert seen == ["Deploy", Closed(UNASKABLE, None, None, str(raised.value))]
    assert_closed_as_unaskable(gateway, graph, bridge, raised.value)


def test_a_watcher_that_finds_the_next_question_unaskable_closes_the_thread_and_logs_why(
    gateway: Gateway, saver: SqliteSaver, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[Any] = []
    graph = confirm_graph(saver, {"question": "Sure?", "options": []}, seen)
    bridge = ParkgateInterrupts(gateway)
    bridge.start(graph, {"service": "api"}, CONFIG, "chat-1")
    assert gateway.handle("chat-1", "1").kind is ReplyKind.SELECTED  # answered on another surface

    with caplog.at_level(logging.ERROR, logger="parkgate.langgraph"):
        assert bridge.follow_up(graph) == 1  # one pass of watch(): it logs, it does not raise
    assert "thread-1" in caplog.text and "at least one option" in caplog.text
    assert [type(item) for item in seen] == [str, Closed] and seen[1].outcome == UNASKABLE
    state = graph.get_state(CONFIG)
    assert state.next == () and state.values["status"] == "unaskable"
    assert run_of(gateway, "thread-1") == ("complete", "unaskable")
    assert gateway.open_asks() == [] and gateway.closed_follow_ups() == []
    assert bridge.follow_up(graph) == 0  # followed up once


def test_a_question_the_gateway_refuses_closes_the_thread_too(gateway: Gateway, saver: SqliteSaver) -> None:
    """A good payload in a node whose name is too long to be an ask's phase."""
    seen: list[Any] = []

    def approve(state: DeployState) -> dict[str, Any]:
        choice = interrupt({"question": "Deploy api?", "options": ["Deploy", "Hold"]})
        seen.append(choice)
        return {"status": choice.outcome if isinstance(choice, Closed) else "deployed"}

    builder = StateGraph(DeployState)
    builder.add_node("approve-" + "x" * 200, approve)
    builder.add_edge(START, "approve-" + "x" * 200)
    graph = builder.compile(checkpointer=saver, name="long")
    with pytest.raises(InputError, match="phase is 208 characters") as raised:
        ParkgateInterrupts(gateway).start(graph, {"service": "api"}, CONFIG, "chat-1")
    assert seen == [Closed(UNASKABLE, None, None, str(raised.value))]
    assert graph.get_state(CONFIG).next == ()
    assert run_of(gateway, "thread-1") == ("complete", "unaskable")
    assert gateway.open_asks() == []


def test_parallel_interrupts_are_checked_before_any_is_asked(gateway: Gateway, saver: SqliteSaver) -> None:
    got: dict[str, Any] = {}

    def color(state: PairState) -> dict[str, Any]:
        got["color"] = interrupt({"prompt": "Colour?", "options": ["Red", "Blue"]})
        return {}

    def size(state: PairState) -> dict[str, Any]:
        got["size"] = interrupt({"prompt": "Size?", "options": ["S", "M"], "default": "XL"})
        return {}

    builder = StateGraph(PairState)
    builder.add_node("color", color)
    builder.add_node("size", size)
    builder.add_edge(START, "color")
    builder.add_edge(START, "size")
    builder.add_edge("color", END)
    builder.add_edge("size", END)
    graph = builder.compile(checkpointer=saver, name="pair")
    bridge = ParkgateInterrupts(gateway)

    with pytest.raises(StoppingPointError, match="'XL' is not one of the options") as raised:
        bridge.start(graph, {}, CONFIG, "chat-1")
    # Nobody was asked the good question: its node is closed too, without an answer.
    closed = Closed(UNASKABLE, None, None, str(raised.value))
    assert got == {"color": closed, "size": closed}
    assert graph.get_state(CONFIG).next == ()
    assert run_of(gateway, "thread-1") == ("complete", "unaskable")
    assert gateway.open_asks() == [] and gateway.closed_follow_ups() == []


def test_a_node_that_asks_again_after_an_unaskable_closed_is_closed_too(gateway: Gateway, saver: SqliteSaver) -> None:
    def approve(state: DeployState) -> dict[str, Any]:
        first = interrupt({"question": "Deploy api?", "ttl_seconds": -5})
        second = interrupt({"question": "Deploy api? (yes or no)"})  # asks again, ignoring the Closed
        return {"status": f"{first.outcome} then {second.outcome}"}

    builder = StateGraph(DeployState)
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    graph = builder.compile(checkpointer=saver, name="again")
    with pytest.raises(StoppingPointError, match="ttl_seconds"):
        ParkgateInterrupts(gateway).start(graph, {}, CONFIG, "chat-1")
    # As after a cancel: the run is over, so the next interrupt gets the Closed too.
    state = graph.get_state(CONFIG)
    assert state.next == () and state.values["status"] == "unaskable then unaskable"
    assert gateway.open_asks() == []
    assert run_of(gateway, "thread-1") == ("complete", "unaskable")


def test_a_thread_closed_as_unaskable_starts_again_as_a_new_run(gateway: Gateway, saver: SqliteSaver) -> None:
    def approve(state: DeployState) -> dict[str, Any]:
        options = ["Yes"] if state["service"] else []
        choice = interrupt({"question": f"Deploy {state['service']}?", "options": options})
        return {"status": choice.outcome if isinstance(choice, Closed) else f"chose {choice}"}

    builder = StateGraph(DeployState)
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    graph = builder.compile(checkpointer=saver, name="again")
    bridge = ParkgateInterrupts(gateway)
    with pytest.raises(StoppingPointError):
        bridge.start(graph, {"service": ""}, CONFIG, "chat-1")
    again = bridge.start(graph, {"service": "api"}, CONFIG, "chat-1")
    assert again.reply.kind is ReplyKind.ASKED and again.reply.run_id == "thread-1#2"
    assert bridge.drive(graph, CONFIG, "chat-1", "1").finished
    assert run_of(gateway, "thread-1") == ("complete", "unaskable")  # a finished run stays finished
    assert run_of(gateway, "thread-1#2") == ("complete", "done")


# -- the pure parts ---------------------------------------------------------------------------


def test_payloads_map_onto_asks() -> None:
    assert spec_from_payload({"prompt": "Deploy?", "options": ["Yes", "No"]}) == stopping_point.make_spec(
        AskKind.CHOICE, "Deploy?", ["Yes", "No"]
    )
    assert spec_from_payload({"question": "Deploy?", "choices": ["Yes", "No"]}).options == ("Yes", "No")
    assert spec_from_payload({"prompt": "Why?", "kind": "text"}).kind is AskKind.TEXT
    marked = "Some model output.\n[[ask]]\nPick one\n\n1) Red\n2) Blue\n[[/ask]]\ntrailing"
    assert spec_from_payload(marked) == stopping_point.make_spec(AskKind.CHOICE, "Pick one", ["Red", "Blue"])
    plain = spec_from_payload("What is the ticket number?")
    assert (plain.kind, plain.prompt, plain.options) == (AskKind.TEXT, "What is the ticket number?", ())
    with pytest.raises(StoppingPointError, match="gap"):
        spec_from_payload("[[ask]]\nPick\n1. a\n3. b\n[[/ask]]")
    with pytest.raises(StoppingPointError, match="mapping"):
        spec_from_payload(42)
    with pytest.raises(StoppingPointError, match="prompt or question"):
        spec_from_payload({"options": ["a"]})
    with pytest.raises(StoppingPointError, match="both"):
        spec_from_payload({"prompt": "a", "question": "b"})
    with pytest.raises(StoppingPointError, match="adapter's own"):
        spec_from_payload({"prompt": "a", "langgraph": 1})
    with pytest.raises(StoppingPointError, match="ttl_seconds"):
        spec_from_payload({"prompt": "a", "ttl_seconds": 0})
    with pytest.raises(StoppingPointError, match="not one of the options"):
        spec_from_payload({"prompt": "a", "options": ["x"], "default": "y"})


def test_pending_interrupts_reads_every_result_shape() -> None:
    one = Interrupt(value="q?", id="i-1")
    assert pending_interrupts({"__interrupt__": (one,)}) == (one,)
    assert pending_interrupts(one) == (one,)
    assert pending_interrupts([one, "noise"]) == (one,)
    assert pending_interrupts({"diagram": "Class"}) == ()
    assert pending_interrupts("text") == ()
    assert thread_id(CONFIG) == "thread-1"


def test_importing_parkgate_does_not_import_the_frameworks() -> None:
    code = (
        "import sys, parkgate, parkgate.adapters\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('langgraph', 'langchain', 'mcp', 'mcp_types'))\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
