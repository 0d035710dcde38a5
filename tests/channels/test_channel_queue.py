"""The channel job queue under a slow or hostile platform, on both stores: an idle
deliverer claims nothing, a slow Bot API holds back no Slack post, two deliverers on one
database post an ask once, a post cut off by a crash leaves no dead buttons, and a close
update goes before a flood of notices."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from recording_channel import RecordingChannel
from slack_sdk import WebClient
from slack_stand_in import BOT_TOKEN, SlackWebApi
from telegram_bot_api import BotApiStandIn, Call, bot_api
from telegram_updates import press

from late_words import at
from parkgate import Gateway, ManualClock
from parkgate.channels import ChannelTarget
from parkgate.channels.deliver import LEASE_SECONDS, ChannelDeliverer
from parkgate.channels.slack import SlackChannel
from parkgate.channels.telegram import BotApi, TelegramChannel, TelegramInbound
from parkgate.channels.telegram.buttons import button_data
from parkgate.gateway.delivering import deliverer_for
from parkgate.store.channels_sql import SqlChannels
from parkgate.store.signal import FALLBACK_READ_SECONDS, Change
from polling import until

TOKEN = "123:ABC"
GROUP = -100
ALICE, MALLORY = 11, 33
Reopen = Any
MakeGateway = Any
StoreLocation = Any


@pytest.fixture
def api() -> Iterator[BotApiStandIn]:
    with bot_api(TOKEN) as stand_in:
        yield stand_in


@pytest.fixture
def slack_api() -> Iterator[SlackWebApi]:
    api = SlackWebApi().start()
    yield api
    api.stop()


def wire(gateway: Gateway, api: BotApiStandIn) -> TelegramInbound:
    channel = TelegramChannel(BotApi(TOKEN, api.root))
    gateway.add_channel(channel)
    return TelegramInbound(gateway, channel)


def deliver(gateway: Gateway) -> int:
    return ChannelDeliverer(gateway.store, gateway.clock, gateway.channels, draw=lambda: 0.0).run_due()


def park(gateway: Gateway, prompt: str, channel: str = "telegram", **fields: Any) -> str:
    where = {"telegram": {"chat_id": GROUP}, "slack": {"channel": "C1"}}.get(channel, {"room": "r1"})
    reply = gateway.ask(f"c-{prompt}", prompt, ["Deploy", "Hold"], post_to=ChannelTarget(channel, where), **fields)
    assert reply.ask_id is not None
    return reply.ask_id


def message_id(gateway: Gateway, ask_id: str) -> int | None:
    post = gateway.channel_post(ask_id)
    return None if post is None or post.location is None else int(json.loads(post.location)["message_id"])


def counted_claims(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every claim statement the store runs, counted (each is a write: the lock on SQLite)."""
    claims: list[int] = []
    claim = SqlChannels.claim_jobs

    def counted(self: SqlChannels, *args: Any) -> Any:
        claims.append(1)
        return claim(self, *args)

    monkeypatch.setattr(SqlChannels, "claim_jobs", counted)
    return claims


async def test_an_idle_deliverer_claims_nothing_and_sleeps_until_a_channel_job_is_due(
    gateway: Gateway, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    claims = counted_claims(monkeypatch)
    channel = RecordingChannel(failures=1)
    gateway.add_channel(channel)
    deliverer = deliverer_for(gateway)
    (jobs,) = deliverer.jobs
    wakes: list[int] = []
    jobs.on_done = lambda: wakes.append(1)  # what wakes the deliverer's loop again at once
    deliverer.outbox.open()

    async def one_pass() -> float:
        pause = await deliverer.deliver_once()
        await jobs.aclose()  # a lane it started has ended
        return pause

    try:
        # Idle, with a channel: no claim, no wake, and the loop sleeps its longest.
        for _ in range(3):
            assert await one_pass() == FALLBACK_READ_SECONDS
        assert (claims, wakes) == ([], [])
        # A post that fails is retried later: the loop sleeps until then, claiming nothing meanwhile.
        park(gateway, "Deploy?", "recorder")
        await one_pass()
        assert (len(claims), wakes, channel.calls) == (2, [1], [])  # the post's claim, then the empty one
        retry_at = jobs.next_job_at()
        assert retry_at is not None and retry_at > clock.now()
        for _ in range(3):
            assert await one_pass() == (retry_at - clock.now()).total_seconds()
        assert (len(claims), wakes) == (2, [1])
        clock.set(retry_at)
        await one_pass()
        assert [call[0] for call in channel.calls] == ["post"]
        assert await one_pass() == FALLBACK_READ_SECONDS
        assert (len(claims), wakes) == (4, [1, 1])
    finally:
        await deliverer.outbox.aclose()


def test_a_slow_bot_api_holds_back_no_slack_post(
    make_gateway: MakeGateway,
    store_location: StoreLocation,
    clock: ManualClock,
    api: BotApiStandIn,
    slack_api: SlackWebApi,
) -> None:
    answering, asked = threading.Event(), threading.Event()

    def slow(call: Call) -> None:
        asked.set()
        answering.wait(30)  # a Bot API that answers only once the test lets it

    api.slow["sendMessage"] = slow
    gateway = make_gateway(store_location, clock, deliver=True)
    try:
        # A client that waits longer than the test: the Bot API is slow, not timed out.
        telegram = TelegramChannel(BotApi(TOKEN, api.root, client=httpx.Client(timeout=60)))
        gateway.add_channel(telegram)
        gateway.add_channel(SlackChannel(WebClient(token=BOT_TOKEN, base_url=slack_api.url)))
        on_telegram = park(gateway, "Deploy build 42?")
        until(asked.is_set, 10, "the Bot API's sendMessage")
        on_slack = park(gateway, "Ship the docs?", "slack")
        recorded = lambda: (post := gateway.channel_post(on_slack)) is not None and post.location is not None  # noqa: E731
        until(recorded, 10, "the Slack post while the Bot API is slow")
        assert message_id(gateway, on_telegram) is None  # Telegram's is still on its way
    finally:
        answering.set()
    try:
        until(lambda: message_id(gateway, on_telegram), 10, "the Telegram post once the Bot API answers")
        assert [call.args["text"].split("\n", 1)[0] for call in slack_api.of("chat.postMessage")] == ["Ship the docs?"]
    finally:
        gateway.close()


def test_a_channel_job_queued_by_another_process_wakes_a_sleeping_deliverer(
    make_gateway: MakeGateway, store_location: StoreLocation, clock: ManualClock, api: BotApiStandIn
) -> None:
    delivering = make_gateway(store_location, clock, deliver=True)  # parkgate deliver
    serving = make_gateway(store_location, clock)  # parkgate serve, where the asks are parked
    try:
        wire(delivering, api)
        first = park(delivering, "First?")
        until(lambda: message_id(delivering, first), 10, "the post of an ask parked in the deliverer's process")
        # Asleep now, with nothing due: the store's change check (SQLite) or NOTIFY
        # (PostgreSQL) is what tells it of another process's job, as of a callback.
        heard: list[Change] = []
        delivering.signal.listen(lambda change, ask_id: heard.append(change))
        second = park(serving, "Second?")
        until(lambda: {Change.OUTBOX, Change.COMMITTED} & set(heard), 10, "the deliverer's process hearing of the job")
        until(lambda: message_id(delivering, second), 10, "the post of an ask parked in another process")
    finally:
        serving.close()
        delivering.close()


def test_two_deliverers_on_one_database_post_each_ask_once_through_a_slow_bot_api(
    gateway: Gateway, api: BotApiStandIn, reopen: Reopen, clock: ManualClock
) -> None:
    wire(gateway, api)
    other = reopen()  # parkgate deliver beside parkgate serve, on the same database
    wire(other, api)
    prompts = [f"Ask {n}" for n in range(1, 11)]
    for prompt in prompts:
        park(gateway, prompt)
    calls = itertools.count(1)
    its_first_call = threading.Event()
    others: list[threading.Thread] = []

    def slow(call: Call) -> None:
        number = next(calls)
        clock.advance(timedelta(seconds=10))  # each call takes the Bot API's whole 10 s
        if number == 7:  # the other deliverer runs while this one is in the middle of its work
            others.append(threading.Thread(target=deliver, args=(other,)))
            others[0].start()
            its_first_call.wait(20)
        elif number > 7:
            its_first_call.set()

    api.slow["sendMessage"] = slow
    deliver(gateway)
    others[0].join(30)
    sent = sorted(call.params["text"].split("\n", 1)[0] for call in api.of("sendMessage"))
    assert sent == sorted(prompts)  # each once
    assert its_first_call.is_set()  # both worked, side by side
    other.close()


def test_a_post_cut_off_by_a_crash_is_sent_again_and_the_first_messages_buttons_still_answer(
    gateway: Gateway, api: BotApiStandIn, reopen: Reopen, clock: ManualClock
) -> None:
    wire(gateway, api)
    ask_id = park(gateway, "Deploy build 42?", responders=[str(ALICE)])
    released = threading.Event()
    api.slow["sendMessage"] = lambda call: released.wait(30)  # Telegram posted; the answer never gets back
    crashed = threading.Thread(target=deliver, args=(gateway,))  # the process killed during sendMessage
    crashed.start()
    try:
        (first,) = until(lambda: api.of("sendMessage"), 10, "the first sendMessage")
        first_id = max(message for _, message in api.texts)
        api.slow.clear()
        clock.advance(timedelta(seconds=LEASE_SECONDS + 1))
        again = reopen()  # the restarted process
        inbound = wire(again, api)
        assert deliver(again) == 1
        second_id = message_id(again, ask_id)
        assert second_id is not None and second_id != first_id
        # The first message's buttons are the ask's: a press on it answers the ask.
        pressed = inbound.handle(press(GROUP, first_id, button_data(ask_id, 1), user_id=ALICE, username="alice"))
        assert pressed is not None and "Selected 1. Deploy" in pressed["text"]
        answered_at = clock.now()
        assert again.get(ask_id).answer == "Deploy"
        deliver(again)
        (edit,) = api.of("editMessageText")
        assert edit.params["message_id"] == second_id  # the recorded post shows how it ended
        late = inbound.handle(press(GROUP, first_id, button_data(ask_id, 2), user_id=MALLORY))
        assert (
            late is not None
            and late["text"] == f"This question is already closed (answered by @alice {at(answered_at)})."
        )
        # The same data from another chat still answers nothing.
        elsewhere = inbound.handle(press(-555, first_id, button_data(ask_id, 2), user_id=MALLORY))
        assert elsewhere is not None and "text" not in elsewhere
    finally:
        released.set()
        crashed.join(30)
    # The first process's late answer changes nothing: the recorded post stays the second.
    assert message_id(again, ask_id) == second_id
    assert first.params["text"].startswith("Deploy build 42?")
    again.close()


def test_the_close_update_goes_before_300_notices_to_a_non_responder(gateway: Gateway, api: BotApiStandIn) -> None:
    inbound = wire(gateway, api)
    ask_id = park(gateway, "Deploy build 42?", responders=[str(ALICE)])
    deliver(gateway)
    posted = message_id(gateway, ask_id)
    assert posted is not None
    for _ in range(300):
        inbound.handle(press(GROUP, posted, button_data(ask_id, 2), user_id=MALLORY))
    inbound.handle(press(GROUP, posted, button_data(ask_id, 1), user_id=ALICE, username="alice"))
    sent = len(api.calls)
    assert deliver(gateway) == 301
    methods = [call.method for call in api.calls[sent:]]
    assert methods[0] == "editMessageText"  # the close update first, the notices after it
    assert api.calls[sent].params["text"].endswith("Answered: Deploy, by @alice")
    assert methods[1:] == ["sendMessage"] * 300
