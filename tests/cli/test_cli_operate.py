"""``parkgate show`` and ``parkgate cancel`` by whole or short id, an ambiguous start
refused, and a door check that leaves nothing open behind it."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from parkgate import AskStatus, Gateway
from parkgate.cli import main
from parkgate.core.kinds import AskKind
from parkgate.core.model import Ask, Run, RunStatus
from parkgate.store import open_store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


def _park(db: str, conversation: str, prompt: str = "Deploy?") -> str:
    with Gateway(db) as gateway:
        reply = gateway.ask(conversation, prompt, ["Yes", "No"], run_id=f"run-{conversation}")
    assert reply.ask_id is not None
    return reply.ask_id


def _park_with_id(db: str, ask_id: str) -> None:
    """An open ask whose id the test chooses (two that share a start)."""
    with open_store(db) as store, store.transaction() as tx:
        now = datetime.now(UTC)
        tx.save_run(Run(f"run-{ask_id}", f"c-{ask_id}", None, RunStatus.RUNNING, None, {}, ask_id, now, now))  # type: ignore[attr-defined]
        ask = Ask(
            ask_id,
            f"c-{ask_id}",
            f"run-{ask_id}",
            AskKind.CHOICE,
            "Deploy?",
            ("Yes", "No"),
            AskStatus.OPEN,
            now,
            now,
            3600.0,
        )
        tx.insert_ask(ask)  # type: ignore[attr-defined]


def test_show_finds_an_ask_by_the_short_id_asks_prints(db: str) -> None:
    ask_id = _park(db, "c-show", "Deploy the api\nto production?")
    listed = CliRunner().invoke(main, ["asks", "--db", db], env={"COLUMNS": "120"})
    assert ask_id[:12] in listed.stdout
    shown = CliRunner().invoke(main, ["show", ask_id[:12], "--db", db, "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    assert (data["ask_id"], data["conversation_id"], data["status"]) == (ask_id, "c-show", "open")
    table = CliRunner().invoke(main, ["show", ask_id, "--db", db], env={"COLUMNS": "100"})
    assert table.exit_code == 0, table.output
    assert ask_id in table.stdout and "c-show" in table.stdout and "to production?" in table.stdout


def test_show_finds_a_closed_ask_by_the_short_id_asks_printed_while_it_was_open(db: str) -> None:
    cancelled, lapsed = _park(db, "c-closed"), _park(db, "c-lapsed")
    listed = CliRunner().invoke(main, ["asks", "--db", db], env={"COLUMNS": "120"})
    assert cancelled[:12] in listed.stdout and lapsed[:12] in listed.stdout
    with Gateway(db) as gateway:
        gateway.cancel(cancelled)
        gateway.expire(lapsed)
    for ask_id, status in ((cancelled, "cancelled"), (lapsed, "expired")):
        shown = CliRunner().invoke(main, ["show", ask_id[:12], "--db", db, "--json"])
        assert shown.exit_code == 0, shown.output
        data = json.loads(shown.stdout)
        assert (data["ask_id"], data["status"]) == (ask_id, status)
        assert data["closed_at"] is not None and data["answered_at"] is None


def test_an_ambiguous_start_among_closed_asks_names_them_with_their_status(db: str) -> None:
    _park(db, "c-first")  # creates the database
    _park_with_id(db, "feed1111aaaa")
    _park_with_id(db, "feed2222bbbb")
    with Gateway(db) as gateway:
        gateway.cancel("feed1111aaaa")
    refused = CliRunner().invoke(main, ["show", "feed", "--db", db])
    assert refused.exit_code == 1
    assert "2 asks have ids starting 'feed'" in refused.output
    assert "feed1111aaaa (cancelled)" in refused.output and "feed2222bbbb (open)" in refused.output
    unknown = CliRunner().invoke(main, ["show", "feed3", "--db", db])
    assert unknown.exit_code == 1 and "no ask's id starts with it" in unknown.output


def test_cancel_by_short_id_records_the_outcome_and_a_second_cancel_says_it_is_closed(db: str) -> None:
    ask_id = _park(db, "c-cancel")
    done = CliRunner().invoke(main, ["cancel", ask_id[:12], "--db", db, "--outcome", "abandoned"])
    assert done.exit_code == 0, done.output
    assert f"cancelled ask {ask_id} in c-cancel (abandoned)" in done.stdout
    with Gateway(db) as gateway:
        closed = gateway.get(ask_id)
        run = gateway.run("run-c-cancel")
    assert (closed.status, closed.outcome, closed.closed_by) == (AskStatus.CANCELLED, "abandoned", "operator")
    assert run is not None and run.outcome == "abandoned"
    again = CliRunner().invoke(main, ["cancel", ask_id, "--db", db])
    assert again.exit_code == 0 and "was already cancelled (abandoned)" in again.stdout


def test_an_ambiguous_start_is_refused_naming_the_asks_and_cancels_nothing(db: str) -> None:
    _park(db, "c-first")  # creates the database
    _park_with_id(db, "abcd1111aaaa")
    _park_with_id(db, "abcd2222bbbb")
    refused = CliRunner().invoke(main, ["cancel", "abcd", "--db", db])
    assert refused.exit_code == 1
    assert "2 asks have ids starting 'abcd'" in refused.output
    assert "abcd1111aaaa" in refused.output and "abcd2222bbbb" in refused.output
    with Gateway(db) as gateway:
        assert {ask.id for ask in gateway.open_asks()} >= {"abcd1111aaaa", "abcd2222bbbb"}
    picked = CliRunner().invoke(main, ["cancel", "abcd2", "--db", db])
    assert picked.exit_code == 0 and "cancelled ask abcd2222bbbb" in picked.stdout


@pytest.mark.parametrize("given", ["zzzzzzzz", "ab"])
def test_an_id_nothing_has_is_one_error_line(db: str, given: str) -> None:
    _park(db, "c-none")
    result = CliRunner().invoke(main, ["show", given, "--db", db])
    assert result.exit_code == 1 and result.output.startswith("Error: no ask has the id")


def test_a_door_check_that_fails_cancels_its_ask_as_a_check(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A door whose exit word is not taken: the check fails with its ask still parked.
    monkeypatch.setattr(sys.modules["parkgate.cli.doorcheck"], "DOORCHECK_EXIT", "still not an answer")
    result = CliRunner().invoke(main, ["doorcheck", "--db", db, "--conversation", "c-door"])
    assert result.exit_code == 1 and "doorcheck FAILED" in result.output
    with Gateway(db) as gateway:
        assert gateway.parked("c-door") is None  # nothing left waiting in the gateway
        with gateway.store.transaction() as tx:
            (ask_id,) = tx.query("SELECT id FROM asks WHERE conversation_id = ?", ("c-door",)).fetchone()  # type: ignore[attr-defined]
        ask = gateway.get(ask_id)
    assert (ask.status, ask.outcome) == (AskStatus.CANCELLED, "doorcheck")
