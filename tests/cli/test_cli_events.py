"""``parkgate events ASK_ID`` (an ask's timeline as a table or JSON lines, by its short id),
``parkgate events --follow`` (a real process: an event written by another process is
printed, Ctrl-C ends it with exit 0) and ``parkgate prune --events-older-than`` (closed
asks' old events go, an open ask's stay, and the count is printed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from parkgate import Gateway, ManualClock
from parkgate.cli import main

WIDE = {"COLUMNS": "200"}
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture
def db(tmp_path: Path) -> str:
    """An ask for two responders: a miss, a refusal, two votes (it closes answered)."""
    url = f"sqlite:///{tmp_path / 'events.db'}"
    with Gateway(url, clock=ManualClock(datetime(2026, 5, 1, 9, 0, tzinfo=UTC))) as gateway:
        asked = gateway.ask("c-1", "Deploy the api?", ["Yes", "No"], responders=["U_ALICE", "U_BOB"], quorum=2)
        (tmp_path / "ask_id").write_text(asked.ask_id or "", encoding="utf-8")
        gateway.handle("c-1", "what?", sender="U_ALICE")
        gateway.handle("c-1", "1", sender="U_EVE")
        gateway.handle("c-1", "1", sender="U_ALICE")
        gateway.handle("c-1", "1", sender="U_BOB")
    return url


def test_the_timeline_is_a_table_of_who_did_what_and_when(db: str, tmp_path: Path) -> None:
    ask_id = (tmp_path / "ask_id").read_text(encoding="utf-8")
    names = tmp_path / "people.json"
    names.write_text(json.dumps({"U_ALICE": "Alice Liddell"}), encoding="utf-8")
    shown = CliRunner().invoke(
        main, ["events", ask_id[:12], "--db", db], env={**WIDE, "PARKGATE_DIRECTORY": str(names)}
    )
    assert shown.exit_code == 0, shown.output
    rows = [line.split() for line in shown.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [row[0] for row in rows] == ["1", "2", "3", "4", "5", "6"]
    assert [row[3] for row in rows] == ["parked", "touched", "refused", "voted", "voted", "closed"]
    assert "2026-05-01 09:00:00" in shown.stdout
    assert "for Alice Liddell, U_BOB (2 of 2 must agree)" in shown.stdout  # a name where the directory has one
    assert "refused: not_yours" in shown.stdout and "U_EVE" in shown.stdout
    assert "voted Yes (2 of 2 needed)" in shown.stdout and "answered" in shown.stdout
    assert "what?" not in shown.stdout  # a miss's text is never kept

    lines = CliRunner().invoke(main, ["events", ask_id, "--db", db, "--json"]).stdout.splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["parked", "touched", "refused", "voted", "voted", "closed"]
    assert CliRunner().invoke(main, ["events", "--db", db]).exit_code == 2  # neither an id nor --follow


def test_follow_prints_each_new_event_and_ctrl_c_ends_it_cleanly(db: str) -> None:
    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "200"}
    follower = subprocess.Popen(
        [sys.executable, "-m", "parkgate", "events", "--follow", "--db", db],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert follower.stderr is not None and follower.stdout is not None
        assert follower.stderr.readline().startswith("following events after 6")  # the log's latest, then new ones
        with Gateway(db) as gateway:
            parked = gateway.ask("c-2", "Rotate the keys?", ["Yes", "No"], owner="ops-bot")
        line = follower.stdout.readline()
        assert f"{(parked.ask_id or '')[:12]} #1 parked ops-bot: for anyone" in line
        assert line.split()[0] == "7"
        follower.send_signal(signal.SIGINT)
        assert follower.wait(20) == 0
        rest = follower.stderr.read()
        assert "stopped after event 7" in rest and "Traceback" not in rest
    finally:
        follower.kill()
        follower.wait()


def test_prune_deletes_closed_asks_old_events_and_keeps_an_open_asks(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    clock = ManualClock(datetime.now(UTC) - timedelta(days=100))
    with Gateway(url, clock=clock) as gateway:
        closed = gateway.ask("c-old", "Old question?", ["Yes", "No"]).ask_id or ""
        gateway.handle("c-old", "Yes")
        still_open = gateway.ask("c-open", "Still open?", ["Yes", "No"], ttl=timedelta(days=365)).ask_id or ""
        clock.advance(timedelta(days=95))
        recent = gateway.ask("c-new", "New question?", ["Yes", "No"]).ask_id or ""
        gateway.handle("c-new", "No")

    pruned = CliRunner().invoke(main, ["prune", "--events-older-than", "90d", "--db", url])
    assert pruned.exit_code == 0, pruned.output
    assert pruned.stdout.startswith("deleted 3 events of closed asks")  # parked, touched, closed
    with Gateway(url) as gateway:
        assert gateway.events(closed) == []
        assert [e.type.value for e in gateway.events(still_open)] == ["parked"]
        assert len(gateway.events(recent)) == 3
    again = CliRunner().invoke(main, ["prune", "--events-older-than", "10d", "--db", url])
    assert again.stdout.startswith("deleted 0 events"), "the recent ask's events are five days old"
    hours = CliRunner().invoke(main, ["prune", "--events-older-than", "12h", "--db", url])
    assert hours.stdout.startswith("deleted 2 events")  # the newest event stays, so ids count on
    with Gateway(url) as gateway:
        assert [e.type.value for e in gateway.events(still_open)] == ["parked"]  # 100 days old, still open
    refused = CliRunner().invoke(main, ["prune", "--events-older-than", "soon", "--db", url])
    assert refused.exit_code == 2 and "not a duration" in refused.output
