"""examples/telegram_approval.py, run as printed against the Bot API stand-in: the approval
is posted, a press answers it, the waiter gets the answer and the message is edited."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from telegram_bot_api import bot_api
from telegram_updates import press

from parkgate.channels.telegram.buttons import button_data
from polling import until

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "telegram_approval.py"
TOKEN = "123456:EXAMPLE"
CHAT = -1001234567890


def test_the_example_posts_the_approval_and_a_press_answers_the_waiter(tmp_path: Path) -> None:
    with bot_api(TOKEN) as api:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("PARKGATE_")},
            "PARKGATE_TELEGRAM_BOT_TOKEN": TOKEN,
            "PARKGATE_TELEGRAM_API_URL": api.root,
            "PARKGATE_DB": f"sqlite:///{tmp_path / 'approvals.db'}",
        }
        run = subprocess.Popen(
            [sys.executable, str(EXAMPLE), str(CHAT)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            (sent,) = until(lambda: api.of("sendMessage"), 20, "the approval's post")
            ask_id = sent.params["reply_markup"]["inline_keyboard"][0][0]["callback_data"].split(":")[1]
            ((chat, message_id),) = api.texts
            api.queue_update(press(chat, message_id, button_data(ask_id, 1), user_id=7, username="alice"))
            out, err = run.communicate(timeout=60)
        finally:
            run.kill()
        assert run.returncode == 0, err
        assert out.splitlines() == ["answered: Deploy (by 7)"]
        edit = until(lambda: api.of("editMessageText"), 10, "the edit")[0]
        assert edit.params["text"].endswith("Answered: Deploy, by @alice")
