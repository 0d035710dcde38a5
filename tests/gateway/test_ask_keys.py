"""Idempotent parks: a park with a key the owner parked before returns that ask; two stores racing
on one key run on both engines, whose locking lets one park."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

from parkgate import Gateway
from parkgate.core.kinds import AskStatus, ReplyKind
from parkgate.errors import AskAlreadyOpen, InputError

if TYPE_CHECKING:
    from conftest import Reopen
    from parkgate.clock import ManualClock


def test_a_second_park_with_the_key_returns_the_open_ask(gateway: Gateway) -> None:
    first = gateway.ask("c-key", "Deploy?", ["Yes", "No"], key="run-42/approve")
    again = gateway.ask("c-key", "Deploy?", ["Yes", "No"], key="run-42/approve")
    assert again == first and again.kind is ReplyKind.ASKED and again.parked
    assert [ask.id for ask in gateway.open_asks()] == [first.ask_id]
    # Without the key, the same park is refused: the key is what makes it idempotent.
    with pytest.raises(AskAlreadyOpen):
        gateway.ask("c-key", "Deploy?", ["Yes", "No"])


def test_once_answered_the_key_returns_the_answer_and_parks_nothing(gateway: Gateway) -> None:
    first = gateway.ask("c-key", "Deploy?", ["Yes", "No"], key="run-42/approve")
    assert gateway.handle("c-key", "1").kind is ReplyKind.SELECTED
    again = gateway.ask("c-key", "Deploy?", ["Yes", "No"], key="run-42/approve")
    assert again.ask_id == first.ask_id and not again.parked
    assert (again.answer, again.option_index) == ("Yes", 1)
    assert gateway.parked("c-key") is None
    assert gateway.wait(again.ask_id, 0).status is AskStatus.ANSWERED


def test_a_key_whose_ask_lapsed_returns_it_expired(gateway: Gateway, clock: ManualClock) -> None:
    first = gateway.ask("c-key", "Name?", key="k-1", ttl=60)
    clock.advance(61)
    again = gateway.ask("c-key", "Name?", key="k-1", ttl=60)
    assert again.ask_id == first.ask_id and not again.parked and again.answer is None
    assert gateway.get(first.ask_id).status is AskStatus.EXPIRED


def test_keys_belong_to_their_owner_and_other_keys_park_anew(gateway: Gateway) -> None:
    mine = gateway.ask("c-a", "Deploy?", ["Yes", "No"], key="same", owner="alice")
    theirs = gateway.ask("c-b", "Deploy?", ["Yes", "No"], key="same", owner="bob")
    assert mine.ask_id != theirs.ask_id and theirs.parked
    gateway.cancel(mine.ask_id)
    other = gateway.ask("c-a", "Deploy?", ["Yes", "No"], key="another", owner="alice")
    assert other.parked and other.ask_id != mine.ask_id


def test_a_restarted_gateway_finds_the_key(gateway: Gateway, reopen: Reopen) -> None:
    first = gateway.ask("c-key", "Deploy?", ["Yes", "No"], key="run-7/approve")
    gateway.close()
    restarted = reopen()
    assert restarted.ask("c-key", "Deploy?", ["Yes", "No"], key="run-7/approve").ask_id == first.ask_id
    assert len(restarted.open_asks()) == 1


def test_a_repeat_is_not_counted_as_a_new_park(gateway: Gateway) -> None:
    gateway.ask("c-key", "Deploy?", ["Yes", "No"], key="once")
    gateway.ask("c-key", "Deploy?", ["Yes", "No"], key="once")
    assert (
        gateway.metrics.registry.get_sample_value("parkgate_replies_total", {"kind": "asked", "surface": "library"})
        == 1
    )


def test_a_bad_key_is_refused_before_anything_is_written(gateway: Gateway) -> None:
    with pytest.raises(InputError, match="key"):
        gateway.ask("c-key", "Deploy?", ["Yes", "No"], key="")
    assert gateway.parked("c-key") is None


@pytest.mark.engines("two stores race on one key: the engine's locking lets one park")
def test_two_processes_racing_on_one_key_park_one_ask(gateway: Gateway, reopen: Reopen) -> None:
    other = reopen()  # a second process on the same database
    start = threading.Barrier(2)
    replies: list[str | None] = []

    def park(on: Gateway, conversation: str) -> None:
        start.wait()
        replies.append(on.ask(conversation, "Deploy?", ["Yes", "No"], key="raced").ask_id)

    threads = [threading.Thread(target=park, args=args) for args in ((gateway, "c-one"), (other, "c-two"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    other.close()
    assert len(replies) == 2 and replies[0] == replies[1]
    assert len(gateway.open_asks()) == 1


def test_a_skills_marked_output_parks_once_with_a_key(gateway: Gateway) -> None:
    output = "Before I go on:\n[[ask text]]\nWhich branch?\n[[/ask]]"
    first = gateway.ask_from_text("c-skill", output, key="skill/branch")
    assert gateway.ask_from_text("c-skill", output, key="skill/branch").ask_id == first.ask_id
    gateway.handle("c-skill", "main")
    again = gateway.ask_from_text("c-skill", output, key="skill/branch")
    assert (again.ask_id, again.parked, again.answer) == (first.ask_id, False, "main")
