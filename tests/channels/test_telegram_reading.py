"""Telegram's updates, commands and buttons read into what the gateway takes, through
python-telegram-bot's own parsing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from telegram import InlineKeyboardMarkup
from telegram_updates import press, typed

from parkgate import Gateway, ManualClock
from parkgate.channels.telegram.buttons import ask_keyboard, button_data, read_press
from parkgate.channels.telegram.commands import addressed_text
from parkgate.channels.telegram.updates import ButtonPress, Place, TypedMessage, read_update
from parkgate.core.kinds import ReplyKind
from parkgate.errors import InputError

ASK = "0123456789abcdef0123456789abcdef"


def test_a_typed_message_names_its_place_sender_and_update() -> None:
    update = typed(-100, "2", user_id=42, thread_id=7, reply_to=55, update_id=9001)
    event = read_update(update)
    assert event == TypedMessage(
        update_id=9001,
        place=Place(-100, 7),
        text="2",
        sender="42",
        name="User 42",
        reply_to_message_id=55,
        message_id=update["message"]["message_id"],
    )


def test_a_button_press_names_the_message_it_is_on() -> None:
    event = read_update(press(-100, 101, button_data(ASK, 2), user_id=42, update_id=9002))
    assert isinstance(event, ButtonPress)
    assert (event.update_id, event.sender, event.place, event.message_id) == (9002, "42", Place(-100), 101)
    assert read_press(event.data) is not None


def test_updates_parkgate_does_not_act_on_are_none() -> None:
    edited = {"update_id": 1, "edited_message": typed(5, "x")["message"]}
    photo = typed(5, "x")
    del photo["message"]["text"]
    bot = typed(5, "hello")
    bot["message"]["from"]["is_bot"] = True
    assert [read_update(update) for update in (edited, photo, bot)] == [None, None, None]


@pytest.mark.parametrize("payload", [{}, {"update_id": "1"}, {"update_id": 1, "message": {"text": "x"}}, []])
def test_a_malformed_payload_is_an_input_error(payload: object) -> None:
    with pytest.raises(InputError, match="not a Telegram update"):
        read_update(payload)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/cancel@YourBot", "/cancel"),
        ("/cancel@yourbot", "/cancel"),
        ("  /menu@YourBot please", "/menu please"),
        ("/cancel", "/cancel"),
        ("2", "2"),
        ("mail me at a@b.example", "mail me at a@b.example"),
        ("/cancel@OtherBot", None),
    ],
)
def test_the_bot_suffix_is_stripped_like_the_slash_and_another_bots_command_is_not_ours(
    text: str, expected: str | None
) -> None:
    assert addressed_text(text, "@YourBot") == expected


def test_the_suffix_is_part_of_the_slash_form_for_the_gateway() -> None:
    """With it stripped, ``/cancel@YourBot`` cancels a text ask, where a bare ``cancel`` is an answer."""
    with Gateway(":memory:", clock=ManualClock(datetime(2026, 1, 5, tzinfo=UTC))) as gateway:
        gateway.ask("c1", "Describe the change")
        text = addressed_text("/cancel@YourBot", "YourBot")
        assert text is not None
        assert gateway.handle("c1", text).kind is ReplyKind.CANCELLED


def test_the_keyboard_has_a_button_per_option_then_cancel_and_show_options() -> None:
    markup = InlineKeyboardMarkup.de_json(ask_keyboard(ASK, ["Deploy", "Hold"]), None)
    assert markup is not None
    labels = [[button.text for button in row] for row in markup.inline_keyboard]
    assert labels == [["1. Deploy"], ["2. Hold"], ["Cancel", "Show options"]]
    presses = [read_press(button.callback_data) for row in markup.inline_keyboard for button in row]  # type: ignore[arg-type]
    assert [(p.ask_id, p.text) for p in presses if p] == [(ASK, "1"), (ASK, "2"), (ASK, "/cancel"), (ASK, "/menu")]
    assert all(len(str(button.callback_data).encode()) <= 64 for row in markup.inline_keyboard for button in row)


@pytest.mark.parametrize("data", [None, "", "pg", f"pg:{ASK}", f"pg:{ASK}:0", f"pg:{ASK}:x", f"xx:{ASK}:1", "pg::1"])
def test_data_parkgate_did_not_write_is_no_press(data: str | None) -> None:
    assert read_press(data) is None
