"""``parkgate history`` and ``parkgate stats`` on a database: closed asks with their close
and answer times and short ids ``show`` takes, the filters as flags, the figures as tables
and JSON, and a read that closes the lapsed asks it lists."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from parkgate import Gateway, ManualClock
from parkgate.cli import main

T0 = datetime.now(UTC) - timedelta(days=2)
WIDE = {"COLUMNS": "160"}


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A database with an answered ask, a cancelled one and one that lapsed unread, two days ago."""
    url = f"sqlite:///{tmp_path / 'history.db'}"
    clock = ManualClock(T0)
    with Gateway(url, clock=clock) as gateway:
        gateway.ask("c-answered", "Deploy the api?", ["Yes", "No"], responders=["U_ALICE"])
        gateway.ask("c-cancelled", "Rotate the keys?", ["Yes", "No"])
        gateway.ask("c-lapsed", "Scale the workers?", ["Yes", "No"], ttl=60)
        clock.advance(90)
        gateway.handle("c-answered", "1", sender="U_ALICE")
        gateway.cancel(gateway.parked("c-cancelled").id)  # type: ignore[union-attr]
    return url


def test_history_lists_closed_asks_with_their_times_and_who(db: str) -> None:
    listed = CliRunner().invoke(main, ["history", "--db", db], env=WIDE)
    assert listed.exit_code == 0, listed.output
    assert "Deploy the api?" in listed.stdout and "U_ALICE" in listed.stdout and "1.5m" in listed.stdout
    assert "Rotate the keys?" in listed.stdout and "operator (cancel)" in listed.stdout
    assert "Scale the workers?" in listed.stdout, "the read closed the lapsed ask and listed it"
    assert "3 listed" in listed.stdout
    rows = [
        json.loads(line) for line in CliRunner().invoke(main, ["history", "--db", db, "--json"]).stdout.splitlines()
    ]
    lapsed = next(row for row in rows if row["conversation_id"] == "c-lapsed")
    assert lapsed["status"] == "expired" and lapsed["answered_at"] is None
    assert datetime.fromisoformat(lapsed["closed_at"]) == T0 + timedelta(seconds=60), "its due time"
    shown = CliRunner().invoke(main, ["show", lapsed["ask_id"][:12], "--db", db, "--json"])
    assert shown.exit_code == 0 and json.loads(shown.stdout)["status"] == "expired"


def test_history_filters_as_flags(db: str) -> None:
    def ids(*flags: str) -> list[str]:
        result = CliRunner().invoke(main, ["history", "--db", db, "--json", *flags])
        assert result.exit_code == 0, result.output
        return [json.loads(line)["conversation_id"] for line in result.stdout.splitlines()]

    assert ids("--status", "answered") == ["c-answered"]
    assert ids("--responder", "U_ALICE") == ["c-answered"]
    assert ids("-q", "ROTATE") == ["c-cancelled"]
    assert sorted(ids("--status", "all", "--since", "3d")) == ["c-answered", "c-cancelled", "c-lapsed"]
    assert ids("--since", "1d") == [], "closed two days ago"
    refused = CliRunner().invoke(main, ["history", "--db", db, "--since", "last week"])
    assert refused.exit_code != 0 and "not a duration" in refused.output


def test_stats_shows_the_figures_and_groups(db: str) -> None:
    shown = CliRunner().invoke(main, ["stats", "--db", db, "--since", "3d", "--by", "responder"], env=WIDE)
    assert shown.exit_code == 0, shown.output
    assert "opened" in shown.stdout and "answer p50" in shown.stdout and "U_ALICE" in shown.stdout
    figures = json.loads(CliRunner().invoke(main, ["stats", "--db", db, "--since", "3d", "--json"]).stdout)
    total = figures["total"]
    assert (total["opened"], total["answered"], total["expired"], total["cancelled"]) == (3, 1, 1, 1)
    assert total["time_to_answer"]["p50"] == 90.0
