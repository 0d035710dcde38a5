"""Telegram through a live server on loopback (in a thread, configured from the environment
as ``parkgate serve`` configures its workers), against a recording Bot API stand-in
(``PARKGATE_TELEGRAM_API_URL``): an ask posted with its keyboard, presses and typed commands
through ``POST /telegram/webhook`` (Telegram's JSON, parsed by python-telegram-bot), the
webhook's secret checked, every close shown by an edit.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_server import Server
from telegram_bot_api import BotApiStandIn, Call, bot_api
from telegram_updates import press, typed

from late_words import at, closed_time
from parkgate import ManualClock
from parkgate.channels.telegram.buttons import CANCEL, SHOW_OPTIONS, button_data
from parkgate.errors import SettingsError
from polling import until

TOKEN = "secret-token"
BOT_TOKEN = "123456:TEST-bot-token"
SECRET = "webhook-secret_1"
GROUP = -1001
ALICE, BOB, MALLORY = 11, 22, 33
Factory = Any


@pytest.fixture
def api() -> Iterator[BotApiStandIn]:
    with bot_api(BOT_TOKEN) as stand_in:
        yield stand_in


def telegram_server(location: Any, tmp_path: Path, api: BotApiStandIn, clock: ManualClock | None = None) -> Server:
    env = {
        "PARKGATE_TELEGRAM_BOT_TOKEN": BOT_TOKEN,
        "PARKGATE_TELEGRAM_WEBHOOK_SECRET": SECRET,
        "PARKGATE_TELEGRAM_API_URL": api.root,
    }
    log = tmp_path / "server.log"
    return Server(location.url, log, token=TOKEN, schema=location.schema, extra_env=env, in_thread=True, clock=clock)


# One engine: the channel behaviour here is above the store (issue 39; the store suite runs both).
@pytest.fixture(params=["sqlite"])
def server(
    request: pytest.FixtureRequest, store_url_factory: Factory, tmp_path: Path, api: BotApiStandIn
) -> Iterator[Server]:
    running = telegram_server(store_url_factory(request.param), tmp_path, api, ManualClock()).start()
    yield running
    running.stop()


def park(client: httpx.Client, conversation: str, **fields: Any) -> str:
    body = {"conversation_id": conversation, "prompt": "Deploy to production?", "options": ["Deploy", "Hold"], **fields}
    answer = client.post("/v1/asks", json=body)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["ask_id"])


def webhook(telegram: httpx.Client, update: dict[str, Any], secret: str | None = SECRET) -> httpx.Response:
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret is not None else {}
    return telegram.post("/telegram/webhook", json=update, headers=headers)


def calls(api: BotApiStandIn, method: str, count: int = 1) -> list[Call]:
    return until(lambda: (found := api.of(method))[count - 1 :] and found, 10, f"{count} {method} call(s)")


def posted_at(client: httpx.Client, ask_id: str) -> dict[str, int]:
    return until(lambda: client.get(f"/v1/asks/{ask_id}").json().get("telegram"), 10, "the post's location")


def test_an_ask_is_posted_with_its_keyboard_and_a_responders_press_answers_it(
    server: Server, api: BotApiStandIn
) -> None:
    with server.client() as client, httpx.Client(base_url=server.url, timeout=30) as telegram:
        ask_id = park(client, "deploy-1", telegram={"chat_id": GROUP}, responders=[str(ALICE)])
        (sent,) = calls(api, "sendMessage")
        keyboard = sent.params["reply_markup"]["inline_keyboard"]
        assert [[button["text"] for button in row] for row in keyboard] == [
            ["1. Deploy"],
            ["2. Hold"],
            ["Cancel", "Show options"],
        ]
        where = posted_at(client, ask_id)
        assert where["chat_id"] == GROUP
        message_id = where["message_id"]

        # The wrong secret, or none: 401, and nothing changes.
        update = press(GROUP, message_id, button_data(ask_id, 1), user_id=ALICE, username="alice")
        assert webhook(telegram, update, secret="not-the-secret").status_code == 401
        assert webhook(telegram, update, secret=None).status_code == 401
        assert client.get(f"/v1/asks/{ask_id}").json()["status"] == "open"

        # Someone who is not a responder: nothing changes; the alert is theirs alone.
        stranger = webhook(telegram, press(GROUP, message_id, button_data(ask_id, 2), user_id=MALLORY))
        assert stranger.status_code == 200
        assert stranger.json()["method"] == "answerCallbackQuery" and stranger.json()["show_alert"] is True
        assert str(ALICE) in stranger.json()["text"]
        assert client.get(f"/v1/asks/{ask_id}").json()["status"] == "open"

        # The responder's press answers it; Telegram's redelivery of the update applies once.
        answered = webhook(telegram, update)
        assert answered.status_code == 200 and answered.json()["text"] == "Selected 1. Deploy"
        assert webhook(telegram, update).status_code == 200
        (edit,) = calls(api, "editMessageText")
        assert edit.params["chat_id"] == GROUP and edit.params["message_id"] == message_id
        assert edit.params["text"].endswith("Answered: Deploy, by @alice")
        assert "reply_markup" not in edit.params  # the keyboard is removed
        ask = client.get(f"/v1/asks/{ask_id}").json()
        assert (ask["status"], ask["answer"], ask["answered_by"]) == ("answered", "Deploy", str(ALICE))


def test_cancel_typed_in_a_group_to_this_bot_drops_the_ask(server: Server, api: BotApiStandIn) -> None:
    with server.client() as client, httpx.Client(base_url=server.url, timeout=30) as telegram:
        ask_id = park(client, "deploy-2", telegram={"chat_id": GROUP, "message_thread_id": 5})
        posted_at(client, ask_id)
        assert webhook(telegram, typed(GROUP, "/cancel@SomeOtherBot", user_id=BOB, thread_id=5)).status_code == 200
        assert webhook(telegram, typed(GROUP, "/menu", user_id=BOB, thread_id=5)).status_code == 200
        reshown = calls(api, "sendMessage", 2)[1]
        assert reshown.params["message_thread_id"] == 5 and "1. Deploy" in reshown.params["text"]
        assert client.get(f"/v1/asks/{ask_id}").json()["status"] == "open"
        cancel = typed(GROUP, "/cancel@YourBot", user_id=BOB, username="bob", thread_id=5)
        assert webhook(telegram, cancel).status_code == 200
        (edit,) = calls(api, "editMessageText")
        assert edit.params["text"].endswith("Dropped by @bob, nothing ran.")
        assert client.get(f"/v1/asks/{ask_id}").json()["closed_by"] == str(BOB)
        assert api.of("getMe")  # the bot's username, asked once for the addressed command


def test_an_ask_nobody_touches_is_edited_as_expired_by_the_due_read(server: Server, api: BotApiStandIn) -> None:
    with server.client() as client:
        ask_id = park(client, "deploy-3", telegram={"chat_id": GROUP}, ttl_seconds=1)
        calls(api, "sendMessage")
        assert api.of("editMessageText") == [] and client.get(f"/v1/asks/{ask_id}").json()["status"] == "open"
        server.clock.advance(2)  # past the TTL: the due read this wakes expires the ask and edits the post
        (edit,) = calls(api, "editMessageText")
        assert edit.params["text"].endswith("Expired after 1 s, nothing ran.")
        assert client.get(f"/v1/asks/{ask_id}").json()["status"] == "expired"


def test_malformed_updates_are_400_and_a_chat_with_nothing_parked_is_acknowledged(
    server: Server, api: BotApiStandIn
) -> None:
    with server.client() as client, httpx.Client(base_url=server.url, timeout=30) as telegram:
        ask_id = park(client, "deploy-4", telegram={"chat_id": GROUP})
        message_id = posted_at(client, ask_id)["message_id"]
        headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET, "Content-Type": "application/json"}
        for body in (b"{not json", b"[]", b'{"update_id": "x"}'):
            assert telegram.post("/telegram/webhook", content=body, headers=headers).status_code == 400
        assert webhook(telegram, typed(-42, "1", user_id=ALICE)).status_code == 200
        closed = webhook(telegram, press(GROUP, message_id, button_data(ask_id, CANCEL), user_id=BOB))
        assert closed.status_code == 200 and closed.json()["text"] == "Dropped the menu, nothing ran."
        late = webhook(telegram, press(GROUP, message_id, button_data(ask_id, SHOW_OPTIONS), user_id=ALICE))
        dropped = client.get(f"/v1/asks/{ask_id}").json()
        told = f"This question is already closed (dropped by User {BOB} {at(closed_time(dropped))})."
        assert late.json()["text"] == told
        assert dropped["status"] == "cancelled"
        timeline = client.get(f"/v1/asks/{ask_id}/events").json()["events"]
        timeline = [event for event in timeline if event["type"] in ("closed", "late")]  # not the deliverer's posts
        assert [(event["type"], event["sender"]) for event in timeline] == [("closed", str(BOB)), ("late", str(ALICE))]
        assert timeline[-1]["data"]["text"] is None  # Show options answers nothing
        assert [call.params["chat_id"] for call in api.of("sendMessage")] == [GROUP]


def test_telegram_asks_are_refused_where_telegram_is_not_served_and_the_secret_is_required(
    store_url_factory: Factory, tmp_path: Path, api: BotApiStandIn
) -> None:
    location = store_url_factory("sqlite")
    plain = Server(location.url, tmp_path / "plain.log", token=TOKEN, in_thread=True).start()
    try:
        with plain.client() as client:
            body = {"conversation_id": "c", "prompt": "Deploy?", "options": ["Yes"], "telegram": {"chat_id": 1}}
            refused = client.post("/v1/asks", json=body)
            assert refused.status_code == 422 and "telegram" in refused.json()["detail"]
            both = client.post("/v1/asks", json={**body, "slack": {"channel": "C1"}})
            assert both.status_code == 422 and "one channel" in both.json()["detail"]
            assert client.post("/telegram/webhook", json={}).status_code == 404
    finally:
        plain.stop()
    unsafe = telegram_server(location, tmp_path, api)
    unsafe.extra_env["PARKGATE_TELEGRAM_WEBHOOK_SECRET"] = ""
    with pytest.raises(SettingsError, match="PARKGATE_TELEGRAM_WEBHOOK_SECRET"):  # the start stops, naming it
        unsafe.start()


def test_a_question_too_long_for_a_telegram_message_is_a_422_and_never_posted(
    server: Server, api: BotApiStandIn
) -> None:
    with server.client() as client:
        labels = [f"Option {n} " + "x" * 180 for n in range(1, 11)]
        body = {"conversation_id": "long", "prompt": "p" * 2500, "options": labels, "telegram": {"chat_id": GROUP}}
        refused = client.post("/v1/asks", json=body)
        assert refused.status_code == 422, refused.text
        assert "4096" in refused.json()["detail"] and "Telegram" in refused.json()["detail"]
        assert client.get("/v1/asks").json()["asks"] == []
        park(client, "short", telegram={"chat_id": GROUP})  # the next ask is posted, alone
        (sent,) = calls(api, "sendMessage")
        assert sent.params["text"].startswith("Deploy to production?")


def test_a_failing_get_me_never_fails_the_webhook(
    store_url_factory: Factory, tmp_path: Path, api: BotApiStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    api.fail("getMe", 1000)  # the Bot API refuses getMe from the start
    server = telegram_server(store_url_factory("sqlite"), tmp_path, api).start()
    try:
        with server.client() as client, httpx.Client(base_url=server.url, timeout=30) as telegram:
            ask_id = park(client, "deploy-getme", telegram={"chat_id": GROUP})
            posted_at(client, ask_id)
            assert webhook(telegram, typed(GROUP, "/cancel@SomeOtherBot", user_id=BOB)).status_code == 200
            assert client.get(f"/v1/asks/{ask_id}").json()["status"] == "open"
            # The username came with the bot's own post: no getMe was needed.
            mine = webhook(telegram, typed(GROUP, "/cancel@YourBot", user_id=BOB, username="bob"))
            assert mine.status_code == 200
            assert client.get(f"/v1/asks/{ask_id}").json()["closed_by"] == str(BOB)
        # The failure is logged, without a traceback: the log records of this process, where the
        # app was built (getMe is asked from its start, before the server's log file is attached).
        assert "getMe" in caplog.text and "Traceback" not in server.log_tail() + caplog.text
        assert [record.getMessage() for record in caplog.records if record.exc_info] == []
    finally:
        server.stop()
