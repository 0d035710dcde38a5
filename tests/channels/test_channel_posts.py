"""What a posted question says on Slack, Telegram and Discord, against each platform's
recording stand-in (email's, through a live server: ``test_email_served.py``): whom it is
for, named as the platform names them (a Slack mention, a Telegram ``@username``, a
Discord mention, pinged), how many must agree on a quorum ask, and until when it stays
open (Slack's date each reader sees in their own time; elsewhere UTC and the TTL); an ask
anyone may answer says so. After a vote, the thread's line names each option's voters.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from discord_stand_in import BOT_TOKEN as DISCORD_TOKEN
from discord_stand_in import DiscordApi
from slack_sdk import WebClient
from slack_stand_in import BOT_TOKEN as SLACK_TOKEN
from slack_stand_in import SlackWebApi
from telegram_bot_api import BotApiStandIn, bot_api
from telegram_updates import press, typed

from parkgate import ChannelTarget, Gateway, ManualClock
from parkgate.channels.deliver import ChannelDeliverer
from parkgate.channels.discord import DiscordApi as DiscordRest
from parkgate.channels.discord import DiscordChannel
from parkgate.channels.slack import SlackChannel
from parkgate.channels.telegram import BotApi, TelegramChannel, TelegramInbound
from parkgate.channels.telegram.buttons import button_data
from parkgate.channels.telegram.texts import question_text

#: The asks' TTL, and their due time as T0 (the tests' clock) plus it.
TTL = 6 * 3600
DUE_UTC = "2026-01-05 15:00 UTC"
DUE_STAMP = 1767625200  # 2026-01-05T15:00:00Z


@pytest.fixture
def gateway(tmp_path: Path, clock: ManualClock) -> Iterator[Gateway]:
    """A gateway on SQLite: what a platform is sent does not depend on the store."""
    with Gateway(f"sqlite:///{tmp_path / 'posts.db'}", clock=clock) as opened:
        yield opened


def deliver(gateway: Gateway) -> int:
    return ChannelDeliverer(gateway.store, gateway.clock, gateway.channels, draw=lambda: 0.0).run_due()


def park(gateway: Gateway, channel: str, where: dict[str, Any], **fields: Any) -> str:
    asked = gateway.ask(
        "deploy-42", "Deploy build 42?", ["Deploy", "Hold"], ttl=TTL, post_to=ChannelTarget(channel, where), **fields
    )
    assert asked.ask_id is not None
    deliver(gateway)
    return asked.ask_id


def vote(gateway: Gateway, ask_id: str, sender: str, option: str, event: str) -> None:
    """A responder's press, as each channel's inbound side hands it over."""
    assert gateway.handle_in_channel("deploy-42", option, event, sender, ask_id=ask_id).kind.value == "voted"
    deliver(gateway)


# Slack


@pytest.fixture
def slack_api() -> Iterator[SlackWebApi]:
    api = SlackWebApi().start()
    yield api
    api.stop()


def test_a_slack_post_mentions_its_responders_says_how_many_must_agree_and_until_when(
    gateway: Gateway, slack_api: SlackWebApi
) -> None:
    gateway.add_channel(SlackChannel(WebClient(token=SLACK_TOKEN, base_url=slack_api.url)))
    ask_id = park(gateway, "slack", {"channel": "C1"}, responders=["UALICE", "UBOB", "UCAROL"], quorum=2)
    (post,) = slack_api.of("chat.postMessage")
    context = post.args["blocks"][-1]
    assert context["type"] == "context"
    about = (
        "For <@UALICE>, <@UBOB> or <@UCAROL> · 2 of 3 must agree · "
        f"open until <!date^{DUE_STAMP}^{{date_short_pretty}} {{time}}|{DUE_UTC}>"
    )
    assert context["elements"][0]["text"] == about
    assert post.args["text"].endswith(about)  # the notification says it too

    vote(gateway, ask_id, "UBOB", "1", "e1")
    vote(gateway, ask_id, "UALICE", "2", "e2")
    lines = [call.args["text"] for call in slack_api.of("chat.postMessage")[1:]]
    assert lines[-1] == (
        'Vote taken: 1 of 2 votes for "Hold" (option 2).\n'
        "Votes so far (2 needed): 1. Deploy: <@UBOB>; 2. Hold: <@UALICE>."
    )


def test_a_slack_post_anyone_may_answer_says_it_is_for_anyone(gateway: Gateway, slack_api: SlackWebApi) -> None:
    gateway.add_channel(SlackChannel(WebClient(token=SLACK_TOKEN, base_url=slack_api.url)))
    park(gateway, "slack", {"channel": "C1"})
    (post,) = slack_api.of("chat.postMessage")
    assert post.args["blocks"][-1]["elements"][0]["text"].startswith("For anyone here · open until <!date^")
    assert "must agree" not in post.args["text"]


# Telegram

TELEGRAM_TOKEN = "123:ABC"
GROUP = -100
ALICE, BOB, CAROL = 11, 22, 33


@pytest.fixture
def telegram() -> Iterator[BotApiStandIn]:
    with bot_api(TELEGRAM_TOKEN) as stand_in:
        yield stand_in


def test_a_telegram_post_names_its_responders_by_username_and_says_how_many_and_until_when(
    gateway: Gateway, telegram: BotApiStandIn
) -> None:
    channel = TelegramChannel(BotApi(TELEGRAM_TOKEN, telegram.root))
    gateway.add_channel(channel)
    inbound = TelegramInbound(gateway, channel)
    for user_id, username in ((ALICE, "alice"), (BOB, "bob")):  # seen in the group: their usernames known
        inbound.handle(typed(GROUP, "hello", user_id=user_id, username=username))
    responders = [str(ALICE), str(BOB), str(CAROL)]
    ask_id = park(gateway, "telegram", {"chat_id": GROUP}, responders=responders, quorum=2)
    (post,) = telegram.of("sendMessage")
    # Carol was never seen and the chat does not say (the stand-in has no getChatMember): her id.
    assert post.params["text"].endswith(
        f"\n\nFor @alice, @bob or {CAROL} · 2 of 3 must agree · open for 6 h, until {DUE_UTC}"
    )
    message_id = int(json.loads(gateway.channel_post(ask_id).location or "{}")["message_id"])

    inbound.handle(press(GROUP, message_id, button_data(ask_id, 1), user_id=ALICE, username="alice"))
    deliver(gateway)
    line = telegram.of("sendMessage")[-1].params["text"]
    assert line == 'Vote taken: 1 of 2 votes for "Deploy" (option 1).\nVotes so far (2 needed): 1. Deploy: @alice.'


def test_a_telegram_post_anyone_may_answer_says_it_is_for_anyone(gateway: Gateway, telegram: BotApiStandIn) -> None:
    gateway.add_channel(TelegramChannel(BotApi(TELEGRAM_TOKEN, telegram.root)))
    park(gateway, "telegram", {"chat_id": GROUP})
    (post,) = telegram.of("sendMessage")
    assert post.params["text"].endswith(f"\n\nFor anyone here · open for 6 h, until {DUE_UTC}")


DANA = 44
DANA_NAME = "Dana \U0001f680"  # an emoji: two UTF-16 code units, as Telegram counts offsets


def units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def mentioned(params: dict[str, Any]) -> list[tuple[str, int]]:
    """The text each ``text_mention`` entity of a sent message selects (UTF-16 offsets), and whose it is."""
    text = params["text"].encode("utf-16-le")
    found = []
    for entity in params.get("entities", []):
        assert entity["type"] == "text_mention" and entity["user"]["is_bot"] is False
        start, end = 2 * entity["offset"], 2 * (entity["offset"] + entity["length"])
        found.append((text[start:end].decode("utf-16-le"), entity["user"]["id"]))
    return found


def test_a_telegram_person_without_a_username_is_named_by_a_text_mention_wherever_the_channel_names_them(
    gateway: Gateway, telegram: BotApiStandIn, clock: ManualClock
) -> None:
    channel = TelegramChannel(BotApi(TELEGRAM_TOKEN, telegram.root))
    gateway.add_channel(channel)
    inbound = TelegramInbound(gateway, channel)
    inbound.handle(typed(GROUP, "hello", user_id=ALICE, username="alice"))  # a username: @alice
    inbound.handle(typed(GROUP, "hello", user_id=DANA, first_name=DANA_NAME))  # none: her first name
    asked = gateway.ask(
        "deploy-42",
        f"{DANA_NAME} built 42. Deploy?",  # her name quoted in the prompt is not the one mentioned
        ["Deploy", "Hold"],
        ttl=TTL,
        post_to=ChannelTarget("telegram", {"chat_id": GROUP}),
        responders=[str(ALICE), str(DANA), str(CAROL)],
        quorum=2,
        remind_after=600,
    )
    assert asked.ask_id is not None
    deliver(gateway)
    (post,) = telegram.of("sendMessage")
    text = post.params["text"]
    # Alice by her @username and Carol (never seen) by her id: no entity; Dana by a text mention.
    assert text.endswith(f"\n\nFor @alice, {DANA_NAME} or {CAROL} · 2 of 3 must agree · open for 6 h, until {DUE_UTC}")
    assert mentioned(post.params) == [(DANA_NAME, DANA)]
    (entity,) = post.params["entities"]
    assert entity["offset"] == units(text[: text.rindex(DANA_NAME)]) and entity["length"] == 7
    assert entity["user"] == {"id": DANA, "is_bot": False, "first_name": DANA_NAME}
    # The reminder line names whom the ask waits on the same way.
    clock.advance(timedelta(seconds=601))
    assert gateway.read_due(10) == 1
    deliver(gateway)
    reminder = telegram.of("sendMessage")[-1].params
    assert reminder["text"].startswith(f"Still waiting on @alice, {DANA_NAME} or {CAROL}: ")
    assert mentioned(reminder) == [(DANA_NAME, DANA)]
    # Her vote's line names her as a voter.
    message_id = int(json.loads(gateway.channel_post(asked.ask_id).location or "{}")["message_id"])
    inbound.handle(press(GROUP, message_id, button_data(asked.ask_id, 1), user_id=DANA, first_name=DANA_NAME))
    deliver(gateway)
    vote = telegram.of("sendMessage")[-1].params
    assert vote["text"].endswith(f"Votes so far (2 needed): 1. Deploy: {DANA_NAME}.")
    assert mentioned(vote) == [(DANA_NAME, DANA)]


def test_a_telegram_close_edit_mentions_who_dropped_the_ask_by_a_text_mention(
    gateway: Gateway, telegram: BotApiStandIn
) -> None:
    channel = TelegramChannel(BotApi(TELEGRAM_TOKEN, telegram.root))
    gateway.add_channel(channel)
    inbound = TelegramInbound(gateway, channel)
    ask_id = park(gateway, "telegram", {"chat_id": GROUP}, responders=[str(DANA)])
    message_id = int(json.loads(gateway.channel_post(ask_id).location or "{}")["message_id"])
    inbound.handle(typed(GROUP, "/cancel", user_id=DANA, first_name="Dana", reply_to=message_id))
    deliver(gateway)
    (edit,) = telegram.of("editMessageText")
    assert edit.params["text"].endswith("Dropped by Dana, nothing ran.")
    assert mentioned(edit.params) == [("Dana", DANA)]


def test_a_telegram_line_cut_to_fit_keeps_no_mention_of_a_name_it_cut(
    gateway: Gateway, telegram: BotApiStandIn
) -> None:
    channel = TelegramChannel(BotApi(TELEGRAM_TOKEN, telegram.root))
    gateway.add_channel(channel)
    inbound = TelegramInbound(gateway, channel)
    inbound.handle(typed(GROUP, "hi", user_id=DANA, first_name="Dana"))
    inbound.handle(typed(GROUP, "hi", user_id=BOB, first_name="Bobby"))
    # Room under the question for "For Dana or Bo…" only: Dana is mentioned, Bobby's cut name is not.
    label = "Deploy " + "x" * 60
    sizing = gateway.ask("sizing", "p", [label])
    assert sizing.ask_id is not None
    around = units(question_text(gateway.get(sizing.ask_id))) - 1  # the question less its prompt
    prompt = "p" * (4096 - around - units("\n\nFor Dana or Bo…"))
    asked = gateway.ask(
        "long",
        prompt,
        [label],
        post_to=ChannelTarget("telegram", {"chat_id": GROUP}),
        responders=[str(DANA), str(BOB)],
    )
    assert asked.ask_id is not None
    deliver(gateway)
    assert gateway.failed_channel_jobs() == []
    (post,) = telegram.of("sendMessage")
    assert units(post.params["text"]) == 4096 and post.params["text"].endswith("For Dana or Bo…")
    assert mentioned(post.params) == [("Dana", DANA)]


# Discord

DISCORD_CHANNEL = "800000000000000001"
D_ALICE, D_BOB = "700000000000000011", "700000000000000022"


@pytest.fixture
def discord() -> Iterator[DiscordApi]:
    running = DiscordApi().start()
    yield running
    running.stop()


def test_a_discord_post_mentions_and_pings_its_responders_and_says_how_many_and_until_when(
    gateway: Gateway, discord: DiscordApi
) -> None:
    gateway.add_channel(DiscordChannel(DiscordRest(DISCORD_TOKEN, discord.url)))
    ask_id = park(gateway, "discord", {"channel_id": DISCORD_CHANNEL}, responders=[D_ALICE, D_BOB], quorum=2)
    (post,) = discord.posts(DISCORD_CHANNEL)
    assert post.body["content"].endswith(
        f"\n\nFor <@{D_ALICE}> or <@{D_BOB}> · 2 of 2 must agree · open for 6 h, until {DUE_UTC}"
    )
    assert post.body["allowed_mentions"] == {"parse": [], "users": sorted([D_ALICE, D_BOB]), "roles": []}

    vote(gateway, ask_id, D_BOB, "2", "e1")
    (line,) = [call for call in discord.posts() if call not in discord.posts(DISCORD_CHANNEL)]
    assert line.body["content"] == (
        f'Vote taken: 1 of 2 votes for "Hold" (option 2).\nVotes so far (2 needed): 2. Hold: <@{D_BOB}>.'
    )
    assert line.body["allowed_mentions"] == {"parse": []}  # a vote's line pings no one


def test_a_discord_post_anyone_may_answer_says_it_is_for_anyone_and_pings_no_one(
    gateway: Gateway, discord: DiscordApi
) -> None:
    gateway.add_channel(DiscordChannel(DiscordRest(DISCORD_TOKEN, discord.url)))
    park(gateway, "discord", {"channel_id": DISCORD_CHANNEL})
    (post,) = discord.posts(DISCORD_CHANNEL)
    assert post.body["content"].endswith(f"\n\nFor anyone here · open for 6 h, until {DUE_UTC}")
    assert post.body["allowed_mentions"] == {"parse": []}
