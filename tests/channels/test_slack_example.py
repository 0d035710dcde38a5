"""examples/slack_approval.py, run as printed against the Web API stand-in: the approval is
posted, a signed click answers it, and the waiter gets the answer."""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from slack_bolt import BoltRequest
from slack_stand_in import BOT_TOKEN, SIGNING_SECRET, SlackWebApi, signed_headers

from parkgate import Ask, Gateway
from polling import until

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "slack_approval.py"


@pytest.fixture
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("slack_approval", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["slack_approval"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def slack_api() -> Iterator[SlackWebApi]:
    api = SlackWebApi().start()
    yield api
    api.stop()


def test_the_example_posts_the_approval_and_the_click_answers_the_waiter(
    example: ModuleType, slack_api: SlackWebApi, tmp_path: Path
) -> None:
    with Gateway(f"sqlite:///{tmp_path / 'approvals.db'}", deliver=True) as gateway:
        app = example.build_app(gateway, BOT_TOKEN, SIGNING_SECRET, api_url=slack_api.url)
        closed: list[Ask] = []
        waiter = threading.Thread(target=lambda: closed.append(example.request_approval(gateway, "C1", timeout=30)))
        waiter.start()
        post = until(lambda: slack_api.of("chat.postMessage"), 10, "the approval's post")[0]
        ask_id = post.args["blocks"][1]["elements"][0]["value"]
        until(lambda: gateway.channel_post(ask_id) and gateway.channel_post(ask_id).location, 10, "the post's ts")
        body = slack_api.click(ask_id, "parkgate:option:1", "UALICE", "trig-1")
        headers = {"content-type": "application/x-www-form-urlencoded", **signed_headers(body)}
        answer = app.dispatch(BoltRequest(body=body.decode(), headers={k.lower(): v for k, v in headers.items()}))
        assert answer.status == 200
        waiter.join(30)
        assert [(ask.status.value, ask.answer, ask.answered_by) for ask in closed] == [("answered", "Deploy", "UALICE")]
        update = until(lambda: slack_api.of("chat.update"), 10, "the update")[0]
        assert update.args["text"] == "Answered: Deploy, by <@UALICE>"
