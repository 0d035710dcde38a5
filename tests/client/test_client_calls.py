"""Every call of the client against a real ``parkgate serve``, sync and async, on both stores.

Each test body runs with :class:`~parkgate.client.Client` and with
:class:`~parkgate.client.AsyncClient` (the ``connect`` fixture); what comes back is the
library's own types: a :class:`~parkgate.Reply`, an :class:`~parkgate.client.AskView`
with the library's enums, a :class:`~parkgate.store.Run`.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from live_server import Receiver, Server, wait_until

from parkgate import AskKind, AskStatus, ReplyKind
from parkgate.client import AskPage, AskView
from parkgate.core.expect import Expect
from parkgate.core.model import CallbackStatus, Run

MARKED = "Here is the plan.\n[[ask]]\nWhich diagram?\n1. Sequence\n2. Class\n[[/ask]]\nThanks."


def test_a_choice_is_parked_matched_and_read_back_typed(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    asked = client.ask(
        conv, "Deploy now?", ["Yes", "No"], ttl=timedelta(hours=2), default="No", context={"pr": 42, "by": "ci"}
    )
    assert asked.kind is ReplyKind.ASKED and asked.parked
    assert "1. Yes" in asked.text and asked.ask_id and asked.run_id

    ask = client.get(asked.ask_id)
    assert isinstance(ask, AskView) and ask.is_open
    assert (ask.ask_id, ask.conversation_id, ask.run_id) == (asked.ask_id, conv, asked.run_id)
    assert (ask.kind, ask.status, ask.prompt) == (AskKind.CHOICE, AskStatus.OPEN, "Deploy now?")
    assert ask.options == ("Yes", "No")
    assert (ask.ttl_seconds, ask.mismatches, ask.context) == (7200.0, 0, {"pr": 42, "by": "ci"})
    assert ask.asked_at.tzinfo is not None and ask.answered_at is None and ask.callback is None

    assert client.handle(conv, "huh").kind is ReplyKind.RETRY
    assert client.handle(conv, "menu").kind is ReplyKind.RESHOWN
    selected = client.handle(conv, "2", message_id="m-1")
    assert (selected.kind, selected.answer, selected.option_index) == (ReplyKind.SELECTED, "No", 2)
    assert not selected.parked
    assert client.handle(conv, "2", message_id="m-1") == selected  # a redelivery: the first reply, nothing changed
    assert client.handle(conv, "anything").kind is ReplyKind.PASS  # nothing is parked now

    answered = client.get(asked.ask_id)
    assert (answered.status, answered.answer, answered.option_index, answered.outcome) == (
        AskStatus.ANSWERED,
        "No",
        2,
        "selected",
    )
    assert answered.mismatches == 0 and answered.answered_at is not None


def test_a_text_ask_with_an_expected_form(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    asked = client.ask(conv, "How many replicas?", expect={"form": "integer", "minimum": 1}, kind=AskKind.TEXT)
    ask = client.get(asked.ask_id)
    assert (ask.kind, ask.options, ask.expect) == (AskKind.TEXT, (), Expect("integer", minimum=1))
    assert client.handle(conv, "lots").kind is ReplyKind.RETRY
    answered = client.handle(conv, "3")
    assert (answered.kind, answered.answer) == (ReplyKind.ANSWERED, "3")


def test_a_skill_output_parks_its_marked_stopping_point_and_one_without_parks_nothing(
    served: Server, connect: Any, conv: str
) -> None:
    client = connect(served)
    nothing = client.ask_from_text(conv, "Just prose, no question.")
    assert (nothing.kind, nothing.parked, nothing.ask_id) == (ReplyKind.PASS, False, None)
    asked = client.ask_from_text(conv, MARKED, ttl=600)
    assert asked.kind is ReplyKind.ASKED
    ask = client.get(asked.ask_id)
    assert (ask.prompt, ask.options, ask.ttl_seconds) == ("Which diagram?", ("Sequence", "Class"), 600.0)
    replaced = client.ask_from_text(conv, MARKED, replace=True)
    assert client.get(asked.ask_id).outcome == "replaced" and client.get(replaced.ask_id).is_open


def test_a_workflow_is_started_followed_through_its_run_and_finished(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    assert "uml" in client.workflows()
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    started = client.start(conv, "uml", run_id=run_id)
    assert (started.kind, started.run_id, started.parked) == (ReplyKind.ASKED, run_id, True)
    run = client.run(run_id)
    assert isinstance(run, Run)
    assert (run.id, run.conversation_id, run.workflow, run.status, run.pending_ask_id) == (
        run_id,
        conv,
        "uml",
        "running",
        started.ask_id,
    )
    first = client.handle(conv, "1")
    assert (first.kind, first.answer, first.parked) == (ReplyKind.SELECTED, "Sequence", True)
    assert first.next_ask is not None and first.next_ask.kind is ReplyKind.ASKED
    assert client.get(first.next_ask.ask_id).phase == "describe"
    assert client.run(run_id).context == {"diagram": "Sequence"}  # a workflow run's answers so far
    done = client.handle(conv, "A user logs in")
    assert done.kind is ReplyKind.ANSWERED and "@startuml" in done.text
    finished = client.run(run_id)
    assert (finished.status, finished.outcome, finished.context) == (
        "complete",
        "done",
        {"diagram": "Sequence", "describe": "A user logs in"},
    )


def test_a_plain_asks_run_is_finished_with_its_outcome(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    asked = client.ask(conv, "Ship it?", ["Yes", "No"])
    client.handle(conv, "yes")
    finished = client.finish_run(asked.run_id, "shipped")
    assert (finished.id, finished.status, finished.outcome, finished.pending_ask_id) == (
        asked.run_id,
        "complete",
        "shipped",
        None,
    )
    assert client.run(asked.run_id) == finished
    assert client.run(f"no-such-run-{conv}") is None  # as Gateway.run says: no run, no error


def test_an_operator_cancel_closes_the_ask_and_a_second_returns_it_as_it_is(
    served: Server, connect: Any, conv: str
) -> None:
    client = connect(served)
    asked = client.ask(conv, "Deploy?", ["Yes", "No"])
    cancelled = client.cancel(asked.ask_id)
    assert (cancelled.status, cancelled.outcome, cancelled.is_open) == (AskStatus.CANCELLED, "cancelled", False)
    assert client.cancel(asked.ask_id) == cancelled
    assert client.run(asked.run_id).status == "complete"
    assert client.handle(conv, "1").kind is ReplyKind.PASS


def test_open_asks_come_a_page_at_a_time_and_the_iterator_walks_every_page(served: Server, connect: Any) -> None:
    client = connect(served)
    batch = f"page-{uuid.uuid4().hex[:8]}"
    mine = [client.ask(f"{batch}-{number}", f"Question {number}?", ["A", "B"]).ask_id for number in range(5)]
    first = client.open_asks(limit=2)
    assert isinstance(first, AskPage) and len(first.asks) == 2 and first.next is not None
    assert all(ask.is_open and ask.hours_open is not None for ask in first.asks)

    pages, cursor, seen = 0, None, []
    while True:
        page = client.open_asks(limit=2, cursor=cursor)
        pages += 1
        seen += [ask.ask_id for ask in page.asks]
        if page.next is None:
            break
        cursor = page.next
    assert pages >= 3 and len(seen) == len(set(seen))
    assert [ask_id for ask_id in seen if ask_id in mine] == mine  # oldest first, none missed, none twice

    walked = [ask.ask_id for ask in client.iter_open_asks(page_size=2)]
    assert [ask_id for ask_id in walked if ask_id in mine] == mine and len(walked) == len(set(walked))
    client.cancel(mine[2])
    assert mine[2] not in [ask.ask_id for ask in client.iter_open_asks(page_size=3)]
    for ask_id in mine:
        client.cancel(ask_id)


def test_a_failed_callback_is_listed_and_rearmed(served: Server, connect: Any, conv: str, receiver: Receiver) -> None:
    client = connect(served)
    receiver.status = 503  # every delivery fails; the server gives up after one attempt
    asked = client.ask(conv, "Deploy?", ["Yes", "No"], callback_url=receiver.url)
    assert client.get(asked.ask_id).callback.status is CallbackStatus.PENDING
    client.handle(conv, "1")
    wait_until(lambda: client.get(asked.ask_id).callback.status is CallbackStatus.FAILED, 30, "the callback to fail")
    failed = client.get(asked.ask_id).callback
    assert (failed.attempts, failed.last_error) == (1, "HTTP 503")
    assert asked.ask_id in [ask.ask_id for ask in client.failed_callbacks()]

    receiver.status = 200
    rearmed = client.retry_callback(asked.ask_id)
    assert rearmed.ask_id == asked.ask_id and rearmed.callback.status is CallbackStatus.PENDING
    assert rearmed.callback.attempts == 0
    wait_until(lambda: client.get(asked.ask_id).callback.status is CallbackStatus.DELIVERED, 30, "the redelivery")
    assert asked.ask_id not in [ask.ask_id for ask in client.failed_callbacks()]
    assert [got.data["ask_id"] for got in receiver.got()] == [asked.ask_id, asked.ask_id]


def test_a_base_url_with_a_trailing_slash_or_v1_is_the_same_server(served: Server, connect: Any, conv: str) -> None:
    asked = connect(served).ask(conv, "Deploy?", ["Yes", "No"])
    for spelling in (served.url + "/", served.url + "/v1", served.url + "/v1/"):
        client = connect(spelling)
        assert client.base_url == served.url + "/"
        assert client.get(asked.ask_id).ask_id == asked.ask_id
    assert connect(served.url + "/v1").handle(conv, "1").kind is ReplyKind.SELECTED


def test_an_answer_naming_a_closed_ask_is_late(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    asked = client.ask(conv, "Deploy now?", ["Yes", "No"])
    client.cancel(asked.ask_id)
    late = client.handle(conv, "1", sender="alice", ask_id=asked.ask_id)
    assert (late.kind, late.parked, late.ask_id) == (ReplyKind.LATE, False, asked.ask_id)
    assert late.text.startswith("This question is already closed (dropped by an operator at ")
    assert client.get(asked.ask_id).status is AskStatus.CANCELLED
