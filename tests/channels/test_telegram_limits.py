"""Telegram's limits and formatting, attacked through the library on both stores, against
the recording Bot API stand-in (which, like Telegram, refuses a text over 4,096 UTF-16 code
units with a 400): a question too long to post is refused when parked; a close edit quoting
a long answer is cut to fit and succeeds; ``/cancel@YourBot`` is read without a Bot API call,
so a failing ``getMe`` never fails an update; prompts, labels, answers and first names
mention no one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from telegram_bot_api import MAX_TEXT, BotApiStandIn, bot_api
from telegram_updates import press, typed

from parkgate import Gateway
from parkgate.channels import ChannelTarget
from parkgate.channels.deliver import ChannelDeliverer
from parkgate.channels.telegram import BotApi, TelegramChannel, TelegramInbound
from parkgate.channels.telegram.buttons import SHOW_OPTIONS, button_data
from parkgate.channels.telegram.serving import channel_from_env
from parkgate.channels.telegram.texts import cut
from parkgate.errors import InputError, SettingsError

TOKEN = "123:ABC"
GROUP = -100
ALICE, BOB = 11, 22
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


def units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def message_of(gateway: Gateway, ask_id: str) -> int:
    posted = gateway.channel_post(ask_id)
    assert posted is not None and posted.location is not None
    return int(json.loads(posted.location)["message_id"])


TARGET = ChannelTarget("telegram", {"chat_id": GROUP})


def test_a_question_longer_than_a_telegram_message_is_refused_when_parked(gateway: Gateway, api: BotApiStandIn) -> None:
    wire(gateway, api)
    labels = [f"Option {n} " + "x" * 180 for n in range(1, 11)]  # each label fits; together they do not
    with pytest.raises(InputError, match="at most 4096"):
        gateway.ask("long-1", "Which one? " + "p" * 2500, labels, post_to=TARGET)
    # Telegram counts UTF-16 code units: 2,040 rockets are 4,080 of them, and the exits do not fit.
    with pytest.raises(InputError, match="4096"):
        gateway.ask("long-2", "\U0001f680" * 2040, post_to=TARGET)
    assert gateway.open_asks() == [] and gateway.failed_channel_jobs() == []
    assert deliver(gateway) == 0 and api.calls == []
    # The longest prompt parkgate takes, with one option, fits and is posted.
    fits = gateway.ask("long-3", "p" * 4000, ["Deploy"], post_to=TARGET)
    assert deliver(gateway) == 1 and gateway.failed_channel_jobs() == []
    (sent,) = api.of("sendMessage")
    assert sent.params["text"].startswith("p" * 4000) and units(sent.params["text"]) <= MAX_TEXT
    assert fits.ask_id is not None and message_of(gateway, fits.ask_id) > 0


def test_a_close_edit_quoting_a_long_answer_is_cut_to_fit_and_succeeds(gateway: Gateway, api: BotApiStandIn) -> None:
    inbound = wire(gateway, api)
    prompt = "Describe the incident. " + "q" * 3000
    reply = gateway.ask("incident", prompt, post_to=TARGET)
    assert reply.ask_id is not None
    deliver(gateway)
    answer = "It started at 03:00 " + "a" * 3980  # as long as a Telegram message may be
    inbound.handle(typed(GROUP, answer, user_id=ALICE, username="alice", reply_to=message_of(gateway, reply.ask_id)))
    assert gateway.get(reply.ask_id).answer == answer  # the answer is kept whole; only the edit is cut
    deliver(gateway)
    assert gateway.failed_channel_jobs() == []
    (edit,) = api.of("editMessageText")
    text = edit.params["text"]
    assert units(text) <= MAX_TEXT and api.texts[(GROUP, edit.params["message_id"])] == text
    assert text.startswith(prompt + "\n\nAnswered: It started at 03:00 aaa") and text.endswith("a…, by @alice")
    # An answer given elsewhere (16,000 characters over HTTP) to a question at the limit: still one message.
    other = gateway.ask("incident-2", "r" * 4000, post_to=TARGET)
    assert other.ask_id is not None
    deliver(gateway)
    gateway.handle("incident-2", "b" * 16_000)
    deliver(gateway)
    assert gateway.failed_channel_jobs() == []
    last = api.of("editMessageText")[-1].params["text"]
    assert units(last) <= MAX_TEXT and last.endswith("…") and "Answered: " in last


def test_the_cut_keeps_whole_characters() -> None:
    assert cut("\U0001f680" * 3, 4) == "\U0001f680…"  # never half a surrogate pair
    assert cut("abc", 3) == "abc" and cut("abcd", 3) == "ab…"


def test_an_addressed_command_is_read_without_a_bot_api_call_even_when_get_me_fails(
    gateway: Gateway, api: BotApiStandIn, reopen: Reopen
) -> None:
    wire(gateway, api)
    reply = gateway.ask("deploy", "Deploy?", ["Deploy", "Hold"], post_to=TARGET)
    assert reply.ask_id is not None
    deliver(gateway)
    gateway.close()
    # A restart: this process has sent nothing yet, and the Bot API fails getMe.
    api.fail("getMe", 100)
    again = reopen()
    inbound = wire(again, api)
    assert inbound.channel.learn_username() is None  # logged; the username stays unknown
    calls_before = len(api.calls)
    assert inbound.handle(typed(GROUP, "/cancel@YourBot", user_id=BOB, username="bob")) is None
    assert inbound.handle(typed(GROUP, "/cancel@OtherBot", user_id=BOB, username="bob")) is None
    assert len(api.calls) == calls_before  # no getMe (nor anything else) on the update's path
    assert again.get(reply.ask_id).is_open  # a command addressed to a bot it cannot name is not taken
    inbound.handle(typed(GROUP, "/cancel", user_id=BOB, username="bob"))  # the unaddressed form works
    assert again.get(reply.ask_id).closed_by == str(BOB)
    again.close()


def test_the_username_is_learnt_from_the_bots_own_post_without_get_me(gateway: Gateway, api: BotApiStandIn) -> None:
    api.fail("getMe", 100)
    inbound = wire(gateway, api)
    reply = gateway.ask("deploy", "Deploy?", ["Deploy", "Hold"], post_to=TARGET)
    assert reply.ask_id is not None
    deliver(gateway)
    assert inbound.channel.bot_username == "YourBot" and api.of("getMe") == []
    inbound.handle(typed(GROUP, "/cancel@OtherBot", user_id=BOB))
    assert gateway.get(reply.ask_id).is_open
    inbound.handle(typed(GROUP, "/cancel@YourBot", user_id=BOB, username="bob"))
    assert gateway.get(reply.ask_id).closed_by == str(BOB)


def test_prompts_labels_answers_and_names_mention_no_one_and_are_not_markup(
    gateway: Gateway, api: BotApiStandIn
) -> None:
    inbound = wire(gateway, api)
    prompt = "Ping @alice: is <b>prod</b> *down*? [docs](https://evil.example) mail ops@example.com"
    reply = gateway.ask("fmt", prompt, ["@bob approves", "Hold"], post_to=TARGET)
    assert reply.ask_id is not None
    deliver(gateway)
    (sent,) = api.of("sendMessage")
    assert "parse_mode" not in sent.params and "entities" not in sent.params  # plain text: no markup is read
    text = sent.params["text"]
    assert "\uff20alice" in text and "1. \uff20bob approves" in text and "@alice" not in text and "@bob" not in text
    assert "<b>prod</b> *down*? [docs](https://evil.example)" in text and "ops@example.com" in text
    message_id = message_of(gateway, reply.ask_id)
    # Show options posts the question again: quoted the same way.
    inbound.handle(press(GROUP, message_id, button_data(reply.ask_id, SHOW_OPTIONS), user_id=BOB))
    deliver(gateway)
    reshown = api.of("sendMessage")[-1].params["text"]
    assert "\uff20alice" in reshown and "@alice" not in reshown
    # A person with no username whose first name is "@everyone" is named, and mentions no one.
    update = press(GROUP, message_id, button_data(reply.ask_id, 2), user_id=ALICE)
    update["callback_query"]["from"]["first_name"] = "@everyone"
    inbound.handle(update)
    deliver(gateway)
    closed = api.of("editMessageText")[-1].params["text"]
    assert closed.endswith("Answered: Hold, by \uff20everyone") and "@everyone" not in closed and "@alice" not in closed


def test_a_typed_answer_is_quoted_in_the_close_edit_without_its_mentions(gateway: Gateway, api: BotApiStandIn) -> None:
    inbound = wire(gateway, api)
    reply = gateway.ask("text", "What changed?", post_to=TARGET)
    assert reply.ask_id is not None
    deliver(gateway)
    inbound.handle(typed(GROUP, "ask @carol, she knows", user_id=ALICE, username="alice"))
    deliver(gateway)
    closed = api.of("editMessageText")[-1].params["text"]
    assert closed.endswith("Answered: ask \uff20carol, she knows, by @alice")  # the code's own mention stays


def test_a_configured_username_is_used_without_get_me_and_a_bad_one_stops_the_start(api: BotApiStandIn) -> None:
    env = {"PARKGATE_TELEGRAM_BOT_TOKEN": TOKEN, "PARKGATE_TELEGRAM_API_URL": api.root}
    channel = channel_from_env({**env, "PARKGATE_TELEGRAM_BOT_USERNAME": "@YourBot"})
    assert channel.bot_username == "YourBot" and channel.learn_username() == "YourBot" and api.calls == []
    with pytest.raises(SettingsError, match="PARKGATE_TELEGRAM_BOT_USERNAME"):
        channel_from_env({**env, "PARKGATE_TELEGRAM_BOT_USERNAME": "your bot"})
