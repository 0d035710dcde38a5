"""Edge inputs to Gateway.ask/handle: each is a clear error (or a miss), never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from parkgate import Gateway, InputError, ManualClock, ReplyKind, StoppingPointError


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    return Gateway(f"sqlite:///{tmp_path / 'e.db'}", clock=ManualClock())


@pytest.mark.parametrize(
    "kwargs, error, says",
    [
        ({"prompt": "a\ud800"}, StoppingPointError, "lone surrogate"),
        ({"prompt": "Q", "options": ["ok", "b\ud800"]}, StoppingPointError, "option 2"),
        ({"prompt": "Q", "default": "x\ud800"}, InputError, "default"),
        ({"prompt": "Q", "ttl": 1e300}, InputError, "out of range"),
        ({"prompt": "Q", "ttl": -5}, InputError, "positive"),
        ({"prompt": "Q", "callback_url": "http://a\x00b"}, InputError, "NUL"),
        ({"prompt": "Q", "callback_url": "ftp://host/x"}, InputError, "http"),
        ({"prompt": "Q", "options": ["A", "B"], "default": "C"}, InputError, "not one of the options"),
    ],
)
def test_bad_ask_arguments_are_clear_errors_and_park_nothing(
    gw: Gateway, kwargs: dict[str, object], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        gw.ask("c", **kwargs)  # type: ignore[arg-type]
    assert gw.audit() == []


def test_a_long_callback_url_is_accepted(gw: Gateway) -> None:
    url = "http://127.0.0.1:9/hook?" + "a" * 1000
    assert gw.ask("c", "Q?", ["A"], callback_url=url).kind is ReplyKind.ASKED


def test_a_clock_given_as_a_callable_with_naive_times_works(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    now = [datetime(2026, 1, 1, 9, 0)]
    gateway = Gateway(f"sqlite:///{tmp_path / 'c.db'}", clock=lambda: now[0], ttl=60)
    asked = gateway.ask("c", "Q?", ["A", "B"])
    now[0] += timedelta(seconds=61)
    reply = gateway.handle("c", "1")
    assert reply.kind is ReplyKind.PASS and reply.expired_ask_id == asked.ask_id
