"""An idle ``parkgate serve`` with Slack and Telegram switched on costs what one without
channels costs: its deliverer sleeps while no channel job is due (measured from
``/proc``, two real server processes side by side, on both stores).

The idle window is one deliverer heartbeat interval (so it always holds a heartbeat), and
what a server may burn in it is a share of it: 5% of a core (an idle server here uses
under 2% on SQLite, where it reads its due times, and 0.5% on PostgreSQL)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from live_server import Server
from slack_stand_in import BOT_TOKEN, SIGNING_SECRET, SlackWebApi
from telegram_bot_api import BotApiStandIn, bot_api

from parkgate.gateway import HEARTBEAT_SECONDS
from polling import until

TOKEN = "secret-token"
TELEGRAM_TOKEN = "123456:TEST-bot-token"
#: Real seconds each server is left idle, and the CPU seconds it may use meanwhile.
IDLE_SECONDS = HEARTBEAT_SECONDS
MAX_CPU_SECONDS = 0.05 * IDLE_SECONDS
Factory = Any


@pytest.fixture
def telegram_api() -> Iterator[BotApiStandIn]:
    with bot_api(TELEGRAM_TOKEN) as stand_in:
        yield stand_in


@pytest.fixture
def slack_api() -> Iterator[SlackWebApi]:
    api = SlackWebApi().start()
    yield api
    api.stop()


def cpu_seconds(session: int) -> float:
    """User and system CPU seconds of every live process in ``session`` (a server and its workers)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # a process that ended meanwhile
            continue
        if int(fields[3]) == session:  # after the name: state, ppid, pgrp, session, ...
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def park(server: Server, conversation: str, **fields: Any) -> str:
    with server.client() as client:
        body = {"conversation_id": conversation, "prompt": "Deploy?", "options": ["Deploy", "Hold"], **fields}
        answer = client.post("/v1/asks", json=body)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["ask_id"])


# Both engines: an idle server waits on LISTEN/NOTIFY on PostgreSQL and on its own due reads
# on SQLite, so what it burns idle depends on the engine.
@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_an_idle_server_with_channels_uses_what_one_without_uses(
    engine: str, store_url_factory: Factory, tmp_path: Path, telegram_api: BotApiStandIn, slack_api: SlackWebApi
) -> None:
    channels = {
        "PARKGATE_SLACK_BOT_TOKEN": BOT_TOKEN,
        "PARKGATE_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "PARKGATE_SLACK_API_URL": slack_api.url,
        "PARKGATE_TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN,
        "PARKGATE_TELEGRAM_WEBHOOK_SECRET": "webhook-secret_1",
        "PARKGATE_TELEGRAM_API_URL": telegram_api.root,
    }
    servers: dict[str, Server] = {}
    try:
        for name, env in (("with Slack and Telegram", channels), ("without channels", {})):
            location = store_url_factory(engine)
            log = tmp_path / f"{len(servers)}.log"
            servers[name] = Server(
                location.url, log, token=TOKEN, schema=location.schema, extra_env=env, via_cli=True
            ).start()
        # Each channel has had its jobs (a post), so the deliverer has run them and is idle again.
        busy = servers["with Slack and Telegram"]
        park(busy, "on-slack", slack={"channel": "C1"})
        park(busy, "on-telegram", telegram={"chat_id": -1001})
        until(lambda: slack_api.of("chat.postMessage") and telegram_api.of("sendMessage"), 30, "both posts")
        park(servers["without channels"], "plain")
        sessions = {name: server.proc.pid for name, server in servers.items() if server.proc is not None}
        before = {name: cpu_seconds(session) for name, session in sessions.items()}
        time.sleep(IDLE_SECONDS)  # real time is what is under test: what an idle server burns in it
        used = {name: cpu_seconds(session) - before[name] for name, session in sessions.items()}
    finally:
        for server in servers.values():
            server.stop()
    print(f"CPU seconds in {IDLE_SECONDS:g} s idle ({engine}): " + ", ".join(f"{k}: {v:.2f}" for k, v in used.items()))
    assert all(seconds <= MAX_CPU_SECONDS for seconds in used.values()), used
