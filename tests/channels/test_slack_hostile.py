"""Slack attacked the way issue 38 found it, on Bolt's real dispatch and against the
recording Web API stand-in: hostile text in prompts, options, names and answers is shown
as text (never a mention or a disguised link); a click acts only on the ask posted on its
message (or on an earlier message of a post cut off by a crash, in the channel it was
posted to), through the action ids parkgate makes; thread broadcasts and replies with files
are read; a reply too long to be an answer is refused to the person with a 200 to Slack.

The in-process tests dispatch signed requests to a Bolt app with parkgate registered, its
listeners run before the response (``process_before_response``) so each click is handled
when ``dispatch`` returns; the served app's own threads are attacked through a live
``parkgate serve`` in ``test_slack_served_hostile.py``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from recording_channel import RecordingChannel
from slack_bolt import App, BoltRequest, BoltResponse
from slack_sdk import WebClient
from slack_stand_in import BOT_TOKEN, SIGNING_SECRET, SlackWebApi, click_body, event_body, signed_headers

from late_words import at
from parkgate import ChannelTarget, Gateway, ManualClock
from parkgate.channels.deliver import LEASE_SECONDS, ChannelDeliverer
from parkgate.channels.slack import phrases as SP
from parkgate.channels.slack import register
from parkgate.core import phrases as P
from parkgate.core.events import EventKind
from parkgate.gateway.checks import MAX_MESSAGE_CHARS
from polling import until

Reopen = Any

#: What a hostile prompt, option, name or answer holds: channel pings, a user mention, a disguised link.
PINGS = ("<!channel>", "<!everyone>", "<!here>", "<@UCEO>")
DISGUISED = "<https://evil.example/sso|https://ci.internal/build/42>"


@pytest.fixture
def slack_api() -> Iterator[SlackWebApi]:
    api = SlackWebApi().start()
    yield api
    api.stop()


@pytest.fixture
def sqlite_gateway(tmp_path: Path, clock: ManualClock) -> Iterator[Gateway]:
    """A gateway on SQLite, for what the store has no part in (what Slack is sent)."""
    with Gateway(f"sqlite:///{tmp_path / 'slack.db'}", clock=clock) as gateway:
        yield gateway


class Served:
    """A Bolt app with parkgate registered, dispatched to in process, and the deliverer's pass."""

    def __init__(self, gateway: Gateway, api: SlackWebApi) -> None:
        client = WebClient(token=BOT_TOKEN, base_url=api.url)
        self.app = App(
            token=BOT_TOKEN,
            signing_secret=SIGNING_SECRET,
            client=client,
            token_verification_enabled=False,
            process_before_response=True,
        )
        register(self.app, gateway)
        self.gateway = gateway
        self.api = api

    def send(self, body: bytes, *, form: bool = False) -> BoltResponse:
        content_type = "application/x-www-form-urlencoded" if form else "application/json"
        headers = {"content-type": content_type, **signed_headers(body)}
        return self.app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))

    def click(self, body: bytes) -> None:
        assert self.send(body, form=True).status == 200

    def deliver(self) -> int:
        return ChannelDeliverer(self.gateway.store, self.gateway.clock, self.gateway.channels).run_due()

    def park(self, conversation: str, prompt: str = "Deploy?", **fields: Any) -> str:
        fields.setdefault("post_to", ChannelTarget("slack", {"channel": "C1"}))
        options = fields.pop("options", ["Deploy", "Hold"])
        asked = self.gateway.ask(conversation, prompt, options, **fields)
        assert asked.ask_id is not None
        self.deliver()
        return asked.ask_id

    def thread(self, ask_id: str) -> str:
        return self.api.message_of(ask_id)[1]

    def told(self, user: str, count: int = 1) -> list[str]:
        """Once ``user`` was sent ``count`` private lines, their texts."""

        def lines() -> list[str] | None:
            texts = [c.args["text"] for c in self.api.of("chat.postEphemeral") if c.args["user"] == user]
            return texts if len(texts) >= count else None

        return until(lines, 10, f"{count} private line(s) to {user}")


def message(thread: str, text: str, ts: str, user: str = "UALICE", **fields: Any) -> dict[str, Any]:
    return {"type": "message", "channel": "C1", "user": user, "text": text, "ts": ts, "thread_ts": thread, **fields}


def recorded_ts(gateway: Gateway, ask_id: str) -> str | None:
    """The ts of ``ask_id``'s Slack post as recorded (``None``: not recorded)."""
    post = gateway.channel_post(ask_id)
    return None if post is None or post.location is None else str(json.loads(post.location)["ts"])


def raw_markup(text: str) -> list[str]:
    """The hostile markup ``text`` would make Slack act on."""
    return [found for found in (*PINGS, "<https://") if found in text]


def texts_of(call: Any) -> list[str]:
    """Every text a Web API call asks Slack to render: its ``text`` and each block's text objects."""
    found = [call.args["text"]]
    for block in call.args.get("blocks") or []:
        found += [block["text"]["text"]] if "text" in block else []
        found += [
            element["text"]["text"] if element["type"] == "button" else element["text"]
            for element in block.get("elements", [])
        ]
    return found


def test_hostile_prompts_options_names_and_answers_are_shown_as_text(
    sqlite_gateway: Gateway, clock: ManualClock, slack_api: SlackWebApi
) -> None:
    served = Served(sqlite_gateway, slack_api)
    prompt = f"Deploy {' '.join(PINGS)}? Build: {DISGUISED} & more"
    ask_id = served.park(
        "c1",
        prompt,
        options=["<!channel> Deploy", "<https://evil.example/sso|Hold>"],
        responders=["UALICE", "<!channel>"],
        ttl=3600,
        remind_after=600,
        escalate_after=1200,
        escalate_to=["<!here>"],
    )
    (post,) = slack_api.of("chat.postMessage")
    for text in texts_of(post):
        assert raw_markup(text) == [], text
    section = post.args["blocks"][0]["text"]
    assert section["verbatim"] is True  # Slack makes no link or mention of its own from it
    assert "Deploy &lt;!channel&gt; &lt;!everyone&gt; &lt;!here&gt; &lt;@UCEO&gt;?" in section["text"]
    assert "&lt;https://evil.example/sso|https://ci.internal/build/42&gt; &amp; more" in section["text"]
    labels = [e["text"]["text"] for e in post.args["blocks"][1]["elements"]]
    assert labels[:2] == ["&lt;!channel&gt; Deploy", "&lt;https://evil.example/sso|Hold&gt;"]

    # A non-responder is told who may answer: a Slack user id as a mention, anything else as text.
    served.click(slack_api.click(ask_id, "parkgate:option:1", "UMALLORY", "t-1"))
    served.deliver()
    assert served.told("UMALLORY") == ["This question is for <@UALICE> or &lt;!channel&gt;."]

    # The reminder and the escalation name the responders as text.
    clock.advance(timedelta(seconds=601))
    assert sqlite_gateway.read_due(10) == 1
    served.deliver()
    clock.advance(timedelta(seconds=600))
    assert sqlite_gateway.read_due(10) == 1
    served.deliver()
    thread = served.thread(ask_id)
    reminder, escalation = [
        c.args["text"] for c in slack_api.of("chat.postMessage") if c.args.get("thread_ts") == thread
    ]
    assert reminder.startswith(
        "Still waiting on <@UALICE> or &lt;!channel&gt;: Deploy &lt;!channel&gt; &lt;!everyone&gt;"
    )
    assert escalation.startswith("Now also asking &lt;!here&gt;: Deploy &lt;!channel&gt;")
    assert raw_markup(reminder) == [] and raw_markup(escalation) == []

    # The answer's close edit: the option as text, the responder mentioned (the one markup made).
    served.click(slack_api.click(ask_id, "parkgate:option:1", "UALICE", "t-2"))
    served.deliver()
    (update,) = slack_api.of("chat.update")
    assert update.args["text"] == "Answered: &lt;!channel&gt; Deploy, by <@UALICE>"
    for text in texts_of(update):
        assert raw_markup(text) == [], text


def test_an_answer_and_a_name_from_elsewhere_are_shown_as_text(
    sqlite_gateway: Gateway, slack_api: SlackWebApi, clock: ManualClock
) -> None:
    served = Served(sqlite_gateway, slack_api)
    # Typed in the thread: Slack sends "<b> & " escaped and the person's @channel as markup.
    typed = served.park("c2", "Release notes?", options=None)
    assert (
        served.send(event_body(message(served.thread(typed), "&lt;b&gt; &amp; <!channel>", "2.1"), "Ev1")).status == 200
    )
    assert sqlite_gateway.get(typed).answer == "<b> & <!channel>"  # what the person typed
    # Answered over HTTP by a sender whose name is markup.
    named = served.park("c3", "Release notes?", options=None)
    sqlite_gateway.handle("c3", DISGUISED, "m-1", sender="<!everyone>")
    served.deliver()
    first, second = slack_api.of("chat.update")
    assert first.args["text"] == "Answered: &lt;b&gt; &amp; &lt;!channel&gt;, by <@UALICE>"
    assert second.args["text"] == (
        "Answered: &lt;https://evil.example/sso|https://ci.internal/build/42&gt;, by &lt;!everyone&gt;"
    )
    served.click(slack_api.click(named, "parkgate:menu", "UBOB", "t-1"))
    assert served.told("UBOB") == [
        f"This question is already closed (answered by &lt;!everyone&gt; {at(clock.now())})."
    ]


def test_a_click_acts_only_on_the_ask_posted_on_its_message(
    gateway: Gateway, slack_api: SlackWebApi, clock: ManualClock
) -> None:
    served = Served(gateway, slack_api)
    gateway.add_channel(RecordingChannel(name="telegram"))
    here = served.park("c1")
    other = served.park("c2")
    nowhere = served.park("c3", post_to=None)
    telegram = served.park("c4", post_to=ChannelTarget("telegram", {"room": "r1"}))
    channel, ts = slack_api.message_of(here)
    for named in (other, nowhere, telegram):
        served.click(click_body(named, "parkgate:option:1", "UALICE", f"t-{named}", channel=channel, ts=ts))
    for named in (here, other, nowhere, telegram):
        assert gateway.get(named).is_open and gateway.get(named).mismatches == 0
    assert served.told("UALICE", 3) == [SP.NOT_THIS_MESSAGE] * 3

    # Once the message's own ask closed, such a click answers how it stands.
    served.click(slack_api.click(here, "parkgate:option:2", "UALICE", "t-here"))
    assert gateway.get(here).answer == "Hold"
    served.click(click_body(other, "parkgate:cancel", "UBOB", "t-bob", channel=channel, ts=ts))
    assert served.told("UBOB") == [f"This question is already closed (answered by <@UALICE> {at(clock.now())})."]
    assert gateway.get(other).is_open
    # It was late for the message's own ask: logged so (what the button named was another ask's).
    late = gateway.events(here)[-1]
    assert (late.type, late.sender, late.data["surface"], late.data["text"]) == (EventKind.LATE, "UBOB", "slack", None)
    assert all(event.type is not EventKind.LATE for event in gateway.events(other))


def test_a_post_cut_off_by_a_crash_is_posted_again_and_a_click_on_the_first_message_still_answers(
    gateway: Gateway, slack_api: SlackWebApi, reopen: Reopen, clock: ManualClock
) -> None:
    Served(gateway, slack_api)
    asked = gateway.ask("c1", "Deploy build 42?", ["Deploy", "Hold"], post_to=ChannelTarget("slack", {"channel": "C1"}))
    ask_id = asked.ask_id
    assert ask_id is not None
    slack_api.held.add("chat.postMessage")  # Slack posted; the answer never gets back
    crashed = threading.Thread(target=ChannelDeliverer(gateway.store, clock, gateway.channels).run_due)
    crashed.start()  # the process killed during chat.postMessage
    try:
        until(lambda: slack_api.holding == 1, 10, "the first chat.postMessage")
        channel, first_ts = slack_api.message_of(ask_id)
        slack_api.held.clear()
        clock.advance(timedelta(seconds=LEASE_SECONDS + 1))
        served = Served(reopen(), slack_api)  # the restarted process
        again = served.gateway
        assert served.deliver() == 1
        second_ts = served.thread(ask_id)
        assert second_ts != first_ts and recorded_ts(again, ask_id) == second_ts
        # A click with the first message's ts from another channel still changes nothing.
        served.click(click_body(ask_id, "parkgate:option:2", "UMALLORY", "t-1", channel="C9", ts=first_ts))
        assert served.told("UMALLORY") == [SP.NOT_THIS_MESSAGE]
        assert again.get(ask_id).is_open
        # The first message's buttons are the ask's: a click on it answers the ask.
        served.click(click_body(ask_id, "parkgate:option:1", "UALICE", "t-2", channel=channel, ts=first_ts))
        answered_at = clock.now()
        assert again.get(ask_id).answer == "Deploy"
        served.deliver()
        (update,) = slack_api.of("chat.update")
        assert update.args["ts"] == second_ts  # the recorded post shows how it ended
        # A click on it once the ask closed is told how it closed, not nothing.
        served.click(click_body(ask_id, "parkgate:option:2", "UBOB", "t-3", channel=channel, ts=first_ts))
        assert served.told("UBOB") == [f"This question is already closed (answered by <@UALICE> {at(answered_at)})."]
    finally:
        slack_api.release.set()
        crashed.join(30)
    # The first process's late answer changes nothing: the recorded post stays the second.
    assert recorded_ts(again, ask_id) == second_ts
    again.close()


@pytest.mark.parametrize(
    "action_id",
    [
        "parkgate:option:Hold",
        "parkgate:option:ship it",
        "parkgate:option:01",
        "parkgate:option:2\n",
        "parkgate:option: 2",
        "parkgate:option:0",
        "parkgate:option:-1",
        "parkgate:option:3",
        "parkgate:option:2:1",
        "parkgate:cancel ",
        "parkgate:menu2",
        "parkgate:Cancel",
    ],
)
def test_only_the_action_ids_parkgate_makes_are_taken(
    sqlite_gateway: Gateway, slack_api: SlackWebApi, action_id: str
) -> None:
    served = Served(sqlite_gateway, slack_api)
    choice = served.park("c1")
    text = served.park("c2", "Why?", options=None)
    for ask_id in (choice, text):
        served.click(slack_api.click(ask_id, action_id, "UALICE", f"t-{ask_id}"))
    served.deliver()
    for ask_id in (choice, text):
        ask = sqlite_gateway.get(ask_id)
        assert (ask.is_open, ask.answer, ask.mismatches) == (True, None, 0)
    assert len(slack_api.of("chat.postMessage")) == 2  # the two posts: no reply, no menu
    served.click(slack_api.click(choice, "parkgate:option:2", "UALICE", "t-ok"))
    assert sqlite_gateway.get(choice).answer == "Hold"


def test_a_broadcast_reply_and_a_file_with_text_answer_and_a_file_alone_is_told_why_not(
    sqlite_gateway: Gateway, slack_api: SlackWebApi
) -> None:
    served = Served(sqlite_gateway, slack_api)
    broadcast, with_text, alone = (served.park(f"c{n}") for n in (1, 2, 3))
    files = [{"id": "F1", "name": "plan.pdf"}]
    sent = [
        message(served.thread(broadcast), "2", "2.1", subtype="thread_broadcast"),
        message(served.thread(with_text), "1", "2.2", subtype="file_share", files=files),
        message(served.thread(alone), "", "2.3", subtype="file_share", files=files),
    ]
    for number, event in enumerate(sent):
        assert served.send(event_body(event, f"Ev{number}")).status == 200
    assert sqlite_gateway.get(broadcast).answer == "Hold"
    assert sqlite_gateway.get(with_text).answer == "Deploy"
    assert sqlite_gateway.get(alone).is_open
    (line,) = served.told("UALICE")
    assert line == SP.FILE_NOT_READ
    (private,) = slack_api.of("chat.postEphemeral")
    assert private.args["thread_ts"] == served.thread(alone)


def test_a_reply_too_long_to_be_an_answer_is_refused_to_the_person_and_slack_gets_a_200(
    sqlite_gateway: Gateway, slack_api: SlackWebApi
) -> None:
    served = Served(sqlite_gateway, slack_api)
    ask_id = served.park("c1", options=None)
    body = event_body(message(served.thread(ask_id), "x" * (MAX_MESSAGE_CHARS + 1), "2.1"), "Ev-long")
    assert served.send(body).status == 200
    assert served.send(body).status == 200  # Slack's retry, had there been one
    assert served.told("UALICE", 2)[0] == P.CHANNEL_MESSAGE_TOO_LONG.format(
        count=MAX_MESSAGE_CHARS + 1, limit=MAX_MESSAGE_CHARS
    )
    ask = sqlite_gateway.get(ask_id)
    assert (ask.is_open, ask.mismatches) == (True, 0)
    just = event_body(message(served.thread(ask_id), "y" * MAX_MESSAGE_CHARS, "2.2"), "Ev-just")
    assert served.send(just).status == 200
    assert sqlite_gateway.get(ask_id).answer == "y" * MAX_MESSAGE_CHARS


def test_a_button_pressed_on_an_expired_asks_post_is_late_and_told_how_and_when_it_closed(
    gateway: Gateway, slack_api: SlackWebApi, clock: ManualClock
) -> None:
    served = Served(gateway, slack_api)
    ask_id = served.park("c1", ttl=600)
    due_at = clock.now() + timedelta(seconds=600)
    clock.advance(timedelta(seconds=900))  # nobody answered: the ask is past its TTL
    served.click(slack_api.click(ask_id, "parkgate:option:1", "UBOB", "t-1"))
    assert served.told("UBOB") == [f"This question is already closed (it expired {at(due_at)})."]
    ask = gateway.get(ask_id)
    assert (ask.status.value, ask.answer, ask.answered_by) == ("expired", None, None)  # as it closed
    *_, closed, late = gateway.events(ask_id)
    assert (closed.type, closed.data["status"]) == (EventKind.CLOSED, "expired")
    assert (late.type, late.sender, late.at) == (EventKind.LATE, "UBOB", clock.now())
    assert (late.data["surface"], late.data["status"], late.data["text"]) == ("slack", "expired", "Deploy")
