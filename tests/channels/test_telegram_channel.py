"""The Telegram channel on both stores, through the library: a posted ask's keyboard, a
responder's press, a stranger's press, commands typed in a group, typed replies routed
by reply-to and by place, the expiry edit with nobody reading, an outage, a restart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from telegram_bot_api import BotApiStandIn, bot_api
from telegram_updates import press, typed

from late_words import at
from parkgate import Gateway, ManualClock
from parkgate.channels import ChannelTarget
from parkgate.channels.deliver import ChannelDeliverer
from parkgate.channels.telegram import BotApi, TelegramChannel, TelegramInbound
from parkgate.channels.telegram.buttons import CANCEL, SHOW_OPTIONS, button_data
from parkgate.errors import InputError

TOKEN = "123:ABC"
GROUP = -100
ALICE, BOB, MALLORY = 11, 22, 33
Reopen = Any


@pytest.fixture
def api() -> Iterator[BotApiStandIn]:
    with bot_api(TOKEN) as stand_in:
        yield stand_in


def wire(gateway: Gateway, api: BotApiStandIn) -> TelegramInbound:
    channel = TelegramChannel(BotApi(TOKEN, api.root))
    gateway.add_channel(channel)
    return TelegramInbound(gateway, channel)


def deliver(gateway: Gateway) -> int:
    return ChannelDeliverer(gateway.store, gateway.clock, gateway.channels, draw=lambda: 0.0).run_due()


def post(gateway: Gateway, api: BotApiStandIn, conversation: str = "deploy-42", **fields: Any) -> tuple[str, int]:
    where = {"chat_id": GROUP, **fields.pop("where", {})}
    reply = gateway.ask(
        conversation, "Deploy build 42?", ["Deploy", "Hold"], post_to=ChannelTarget("telegram", where), **fields
    )
    assert reply.ask_id is not None
    deliver(gateway)
    posted = gateway.channel_post(reply.ask_id)
    assert posted is not None and posted.location is not None
    return reply.ask_id, int(json.loads(posted.location)["message_id"])


def test_an_ask_is_posted_with_its_options_cancel_and_show_options(gateway: Gateway, api: BotApiStandIn) -> None:
    wire(gateway, api)
    ask_id, message_id = post(gateway, api, where={"message_thread_id": 7})
    (sent,) = api.of("sendMessage")
    assert sent.params["chat_id"] == GROUP and sent.params["message_thread_id"] == 7
    assert sent.params["text"].startswith("Deploy build 42?\n\n1. Deploy\n2. Hold")
    keyboard = sent.params["reply_markup"]["inline_keyboard"]
    assert [[button["text"] for button in row] for row in keyboard] == [
        ["1. Deploy"],
        ["2. Hold"],
        ["Cancel", "Show options"],
    ]
    post_row = gateway.channel_post(ask_id)
    assert post_row is not None and post_row.location is not None
    assert json.loads(post_row.location) == {"chat_id": GROUP, "message_id": message_id, "message_thread_id": 7}


def test_a_responders_press_answers_and_the_message_names_option_and_person(
    gateway: Gateway, api: BotApiStandIn, clock: ManualClock
) -> None:
    inbound = wire(gateway, api)
    ask_id, message_id = post(gateway, api, responders=[str(ALICE)])
    update = press(GROUP, message_id, button_data(ask_id, 1), user_id=ALICE, username="alice")
    answer = inbound.handle(update)
    assert answer is not None and answer["method"] == "answerCallbackQuery" and "Selected 1. Deploy" in answer["text"]
    assert gateway.get(ask_id).answered_by == str(ALICE)
    deliver(gateway)
    (edit,) = api.of("editMessageText")
    assert edit.params["message_id"] == message_id
    assert edit.params["text"].endswith("Answered: Deploy, by @alice")
    assert "reply_markup" not in edit.params and api.markups[(GROUP, message_id)] is None
    # The same update again (Telegram's redelivery) changes nothing; a later press is told why.
    inbound.handle(update)
    late = inbound.handle(press(GROUP, message_id, button_data(ask_id, 2), user_id=BOB))
    told = f"This question is already closed (answered by @alice {at(clock.now())})."
    assert late is not None and late["text"] == told
    assert gateway.get(ask_id).answer == "Deploy"
    logged = gateway.events(ask_id)[-1]
    assert (logged.type, logged.sender, logged.data["surface"], logged.data["text"]) == (
        "late",
        str(BOB),
        "telegram",
        "Hold",
    )
    # A reply typed to the closed ask's message is late too, and told the same in reply.
    replied = inbound.handle(typed(GROUP, "Deploy after all", user_id=BOB, reply_to=message_id))
    assert replied is not None and (replied["method"], replied["text"]) == ("sendMessage", told)
    logged = gateway.events(ask_id)[-1]
    assert (logged.type, logged.data["text"]) == ("late", "Deploy after all")
    assert gateway.get(ask_id).answer == "Deploy"
    assert deliver(gateway) == 0


def test_a_strangers_press_changes_nothing_and_is_told_privately(gateway: Gateway, api: BotApiStandIn) -> None:
    inbound = wire(gateway, api)
    ask_id, message_id = post(gateway, api, responders=[str(ALICE)])
    for button in (1, CANCEL):
        answer = inbound.handle(press(GROUP, message_id, button_data(ask_id, button), user_id=MALLORY))
        assert (
            answer is not None and answer["show_alert"] is True and answer["text"] == f"This question is for {ALICE}."
        )
    ask = gateway.get(ask_id)
    assert ask.is_open and ask.mismatches == 0
    deliver(gateway)
    assert api.of("editMessageText") == []
    # The not_yours line went to the stranger's own chat with the bot, not the group.
    assert [call.params["chat_id"] for call in api.of("sendMessage")[1:]] == [MALLORY, MALLORY]


def test_the_not_yours_line_names_responders_by_their_telegram_names(gateway: Gateway, api: BotApiStandIn) -> None:
    inbound = wire(gateway, api)
    ask_id, message_id = post(gateway, api, responders=[str(ALICE), str(BOB)])
    inbound.handle(typed(GROUP, "hello", user_id=ALICE, username="alice"))  # seen here: @alice
    answer = inbound.handle(press(GROUP, message_id, button_data(ask_id, 1), user_id=MALLORY))
    assert answer is not None and answer["text"] == f"This question is for @alice or {BOB}."
    deliver(gateway)  # the line in Mallory's own chat asks the group for Bob's name
    (dm,) = [call for call in api.of("sendMessage") if call.params["chat_id"] == MALLORY]
    assert dm.params["text"].startswith("This question is for @alice or ")


def test_a_strangers_typed_reply_stays_private_when_the_bot_cannot_write_to_them(
    gateway: Gateway, api: BotApiStandIn
) -> None:
    inbound = wire(gateway, api)
    ask_id, message_id = post(gateway, api, responders=[str(ALICE)])
    sent_before = len(api.of("sendMessage"))
    api.fail("sendMessage", 1, status=403, description="Forbidden: bot can't initiate conversation with a user")
    inbound.handle(typed(GROUP, "1", user_id=MALLORY, reply_to=message_id))
    deliver(gateway)
    group_lines = [call for call in api.of("sendMessage")[sent_before:] if call.params["chat_id"] == GROUP]
    assert group_lines == []  # the group never sees who the question is for, nor that Mallory tried
    assert gateway.get(ask_id).is_open and gateway.failed_channel_jobs() == []


def test_a_press_whose_data_is_not_on_the_asks_message_answers_nothing(gateway: Gateway, api: BotApiStandIn) -> None:
    inbound = wire(gateway, api)
    ask_id, message_id = post(gateway, api)
    for chat, message in ((GROUP, message_id + 1), (-555, message_id)):
        answer = inbound.handle(press(chat, message, button_data(ask_id, 1), user_id=MALLORY))
        assert answer is not None and "text" not in answer
    assert gateway.get(ask_id).is_open and gateway.get(ask_id).mismatches == 0


def test_show_options_posts_the_question_again_in_the_chat(gateway: Gateway, api: BotApiStandIn) -> None:
    inbound = wire(gateway, api)
    ask_id, message_id = post(gateway, api)
    answer = inbound.handle(press(GROUP, message_id, button_data(ask_id, SHOW_OPTIONS), user_id=ALICE))
    assert answer is not None and "text" not in answer  # the question is posted again instead
    deliver(gateway)
    reshown = api.of("sendMessage")[-1].params
    assert reshown["chat_id"] == GROUP and reshown["reply_parameters"]["message_id"] == message_id
    assert "1. Deploy" in reshown["text"]


def test_cancel_addressed_to_this_bot_in_a_group_drops_the_ask(gateway: Gateway, api: BotApiStandIn) -> None:
    inbound = wire(gateway, api)
    ask_id, _ = post(gateway, api)
    inbound.handle(typed(GROUP, "/cancel@OtherBot", user_id=BOB))
    assert gateway.get(ask_id).is_open  # another bot's command is not ours
    inbound.handle(typed(GROUP, "/cancel@YourBot", user_id=BOB, username="bob"))
    ask = gateway.get(ask_id)
    assert ask.status.value == "cancelled" and ask.closed_by == str(BOB)
    deliver(gateway)
    assert api.of("editMessageText")[-1].params["text"].endswith("Dropped by @bob, nothing ran.")


def test_a_typed_message_goes_to_the_ask_it_replies_to_else_the_latest_open_one_in_its_place(
    gateway: Gateway, api: BotApiStandIn
) -> None:
    inbound = wire(gateway, api)
    first, first_message = post(gateway, api, "c1")
    second, _ = post(gateway, api, "c2")
    topic, _ = post(gateway, api, "c3", where={"message_thread_id": 7})
    inbound.handle(typed(GROUP, "2", user_id=ALICE, reply_to=first_message))
    assert gateway.get(first).answer == "Hold" and gateway.get(second).is_open
    inbound.handle(typed(GROUP, "1", user_id=ALICE))
    assert gateway.get(second).answer == "Deploy" and gateway.get(topic).is_open
    inbound.handle(typed(GROUP, "Hold", user_id=ALICE, thread_id=7))
    assert gateway.get(topic).answer == "Hold"
    inbound.handle(typed(GROUP, "1", user_id=ALICE, reply_to=first_message))  # a closed ask's: nothing new
    inbound.handle(typed(-200, "1", user_id=ALICE))  # a chat where nothing was posted
    assert [ask.id for ask in gateway.open_asks()] == []


def test_a_miss_is_answered_in_the_chat_naming_the_typed_exits(gateway: Gateway, api: BotApiStandIn) -> None:
    inbound = wire(gateway, api)
    _, message_id = post(gateway, api)
    for text in ("maybe", "perhaps", "dunno"):
        inbound.handle(typed(GROUP, text, user_id=ALICE))
    deliver(gateway)
    lines = [call.params["text"] for call in api.of("sendMessage")[1:]]
    assert lines[0].startswith("That did not match any option.")
    assert "/cancel" in lines[2] and "/menu" in lines[2]  # on Telegram the typed commands work
    assert all(call.params["reply_parameters"]["message_id"] == message_id for call in api.of("sendMessage")[1:])


def test_an_ask_nobody_touches_is_edited_as_expired_by_the_due_read(
    gateway: Gateway, api: BotApiStandIn, clock: ManualClock
) -> None:
    wire(gateway, api)
    ask_id, _ = post(gateway, api, ttl=60)
    clock.advance(timedelta(seconds=61))
    assert gateway.read_due() == 1
    deliver(gateway)
    (edit,) = api.of("editMessageText")
    assert edit.params["text"].endswith("Expired after 1 min, nothing ran.")
    assert gateway.get(ask_id).status.value == "expired"


def test_an_outage_delays_the_post_and_loses_nothing(gateway: Gateway, api: BotApiStandIn, clock: ManualClock) -> None:
    wire(gateway, api)
    api.fail("sendMessage", 2)
    reply = gateway.ask("c1", "Deploy?", ["Deploy"], post_to=ChannelTarget("telegram", {"chat_id": GROUP}))
    assert deliver(gateway) == 1
    clock.advance(timedelta(seconds=1))
    deliver(gateway)
    clock.advance(timedelta(seconds=2))
    deliver(gateway)
    assert len(api.of("sendMessage")) == 3 and len(api.texts) == 1
    assert reply.ask_id is not None and gateway.failed_channel_jobs() == []


def test_a_chat_that_refuses_the_bot_gives_the_post_up_at_once_visibly(gateway: Gateway, api: BotApiStandIn) -> None:
    wire(gateway, api)
    api.fail("sendMessage", 1, status=403, description="Forbidden: bot was kicked from the supergroup chat")
    reply = gateway.ask("c1", "Deploy?", ["Deploy"], post_to=ChannelTarget("telegram", {"chat_id": GROUP}))
    assert deliver(gateway) == 1
    ((job, error),) = gateway.failed_channel_jobs()
    assert (job.ask_id, job.job, job.attempts) == (reply.ask_id, "post", 1)
    assert "bot was kicked" in (error or "")


def test_a_target_telegram_cannot_take_is_refused_when_parked_else_given_up_at_once(
    gateway: Gateway, api: BotApiStandIn
) -> None:
    # Parked where the channel is not added yet, nothing can check the target: the post gives it up.
    gateway.ask("c1", "Deploy?", ["Deploy"], post_to=ChannelTarget("telegram", {"chat_id": "@ops"}))
    gateway.ask("c2", "Deploy?", ["Deploy"], post_to=ChannelTarget("telegram", {"chat": 5}))
    wire(gateway, api)
    # Where it is added, the park is refused before anything is written.
    with pytest.raises(InputError, match=r"telegram\.chat_id must be a whole number"):
        gateway.ask("c3", "Deploy?", ["Deploy"], post_to=ChannelTarget("telegram", {"chat_id": "@ops"}))
    assert len(gateway.open_asks()) == 2
    deliver(gateway)
    errors = sorted(error or "" for _, error in gateway.failed_channel_jobs())
    assert "telegram takes chat_id and message_thread_id, not chat" in errors[0]
    assert "telegram.chat_id must be a whole number" in errors[1]
    assert api.calls == []


def test_a_restart_between_posting_and_pressing(gateway: Gateway, api: BotApiStandIn, reopen: Reopen) -> None:
    wire(gateway, api)
    ask_id, message_id = post(gateway, api)
    gateway.close()
    again = reopen()
    inbound = wire(again, api)
    inbound.handle(press(GROUP, message_id, button_data(ask_id, 2), user_id=ALICE, username="alice"))
    deliver(again)
    assert api.of("editMessageText")[-1].params["text"].endswith("Answered: Hold, by @alice")
    again.close()
