"""Redelivery: every message delivered 1-3 times, out of order across conversations.

Each ``message_id`` takes effect once; every later delivery returns the first reply
and changes nothing, even after the conversation has moved on to a new ask.
"""

from __future__ import annotations

import random

import pytest

from parkgate.core.kinds import AskStatus, ReplyKind

from ._support import (
    Message,
    StoreSpec,
    check_against_replay,
    park_conversations,
    redelivery_plan,
    reply_view,
    run_in_processes,
    run_in_threads,
    script_for,
    send_all,
)


def test_shuffled_redeliveries_take_effect_once_and_return_the_first_reply(spec: StoreSpec) -> None:
    gateway = spec.gateway()
    try:
        spec.instrument_commit_order()
        initial = park_conversations(gateway, 50, "redeliver")
        rng = random.Random(5)
        deliveries: list[Message] = []
        copies: dict[str, int] = {}
        for conversation, ask in initial.items():
            for k, text in enumerate(script_for(ask)):
                message = Message(conversation, text, f"{conversation}/m{k}")
                copies[message.message_id] = rng.randint(1, 3)
                deliveries.extend([message] * copies[message.message_id])
        rng.shuffle(deliveries)
        assert set(copies.values()) == {1, 2, 3}
        sent = send_all(gateway, deliveries)
        check_against_replay(spec, gateway, initial, [deliveries], [sent])

        # The database took the messages in the order of their *first* delivery.
        first_order = list(dict.fromkeys(m.message_id for m in deliveries))
        assert [mid for _, mid, _ in spec.commit_order()] == first_order
        first_reply = {s.message_id: reply_view(s.reply) for s in reversed(sent)}

        # Later: every conversation has moved on to a new ask. Old message ids delivered
        # again (some with different text, as a buggy client might) return their first
        # reply and do not touch the new ask.
        fresh = {
            conversation: gateway.ask(conversation, "A new question?", ["Yes", "No"]).ask_id for conversation in initial
        }
        before = {conversation: gateway.get(ask_id) for conversation, ask_id in fresh.items() if ask_id}
        rows = spec.count("inbound_messages")
        again = [
            Message(m.conversation_id, rng.choice([m.text, "1", "/cancel", "No"]), m.message_id)
            for m in dict.fromkeys(deliveries)
        ]
        rng.shuffle(again)
        for message in again:
            reply = gateway.handle(message.conversation_id, message.text, message_id=message.message_id)
            assert reply_view(reply) == first_reply[message.message_id]
        assert spec.count("inbound_messages") == rows
        for conversation, ask in before.items():
            assert gateway.get(ask.id) == ask, f"{conversation}: a redelivered message touched the new ask"
    finally:
        gateway.close()


def test_a_message_id_is_scoped_to_its_conversation(spec: StoreSpec) -> None:
    """The same message_id in another conversation is another message: no reply crosses over."""
    gateway = spec.gateway()
    try:
        a = gateway.ask("conv-a", "Deploy?", ["Deploy", "Hold"])
        b = gateway.ask("conv-b", "Which?", ["Left", "Right"])
        first = gateway.handle("conv-a", "1", message_id="m-1")
        assert first.kind is ReplyKind.SELECTED and first.answer == "Deploy"
        other = gateway.handle("conv-b", "nonsense", message_id="m-1")
        assert other.kind is ReplyKind.RETRY and other.ask_id == b.ask_id
        assert a.ask_id and b.ask_id
        assert gateway.get(b.ask_id).status is AskStatus.OPEN
        assert gateway.get(b.ask_id).mismatches == 1
        assert gateway.get(a.ask_id).answer == "Deploy"
    finally:
        gateway.close()


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_concurrent_redeliveries_of_one_message_id_apply_once(spec: StoreSpec, mode: str) -> None:
    """Copies of one message racing each other through different workers apply once."""
    gateway = spec.gateway()
    try:
        spec.instrument_commit_order()
        initial = park_conversations(gateway, 50, f"dup-{mode}")
        plans = redelivery_plan(initial, 4, seed=11 if mode == "threads" else 12)
        sent = run_in_threads(gateway, plans) if mode == "threads" else run_in_processes(spec, plans)
        total = sum(len(plan) for plan in plans)
        distinct = len({m.message_id for plan in plans for m in plan})
        assert total > distinct  # there really were redeliveries
        check_against_replay(spec, gateway, initial, plans, sent)
    finally:
        gateway.close()
