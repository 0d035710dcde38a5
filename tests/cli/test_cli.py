"""The CLI as a user runs it: exit codes, JSON lines, tables, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.cli import DOORCHECK_EXIT, DOORCHECK_INPUTS, doorcheck_verdict, main
from parkgate.core import phrases as P


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


def test_doorcheck_in_process_passes_and_prints_one_json_line_per_reply() -> None:
    result = CliRunner().invoke(main, ["doorcheck"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [line["input"] for line in lines] == [*DOORCHECK_INPUTS, DOORCHECK_EXIT]
    assert [line["kind"] for line in lines] == ["retry", "retry", "escalated", "escalated", "cancelled"]
    assert [line["parked"] for line in lines] == [True, True, True, True, False]
    assert lines[-1]["text"] == P.PHRASES[ReplyKind.CANCELLED]


def test_doorcheck_runs_as_an_installed_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "parkgate", "doorcheck", "--db", f"sqlite:///{tmp_path / 'd.db'}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 5


@pytest.mark.parametrize(
    "kinds, parked_at_end, problem",
    [
        (["retry"] * 4 + ["cancelled"], False, "never changed shape"),
        (["retry", "retry", "escalated", "escalated", "retry"], True, "did not leave"),
        (["retry", "pass", "escalated", "escalated", "cancelled"], False, "passed on"),
        (["retry", "retry", "escalated", "escalated", "cancelled"], True, "did not leave"),
    ],
)
def test_doorcheck_verdict_rejects_a_broken_door(kinds: list[str], parked_at_end: bool, problem: str) -> None:
    lines = [{"kind": kind, "parked": True, "text": "", "input": ""} for kind in kinds]
    lines[-1]["parked"] = parked_at_end
    verdict = doorcheck_verdict(lines)
    assert verdict is not None and problem in verdict


def _park(db: str, conversation: str, at: datetime, ttl: timedelta = timedelta(hours=6)) -> str:
    with Gateway(db, clock=ManualClock(at), ttl=ttl) as gateway:
        reply = gateway.ask(conversation, "Deploy?", ["Yes", "No"])
    assert reply.ask_id is not None
    return reply.ask_id


def test_asks_lists_open_asks_and_exits_zero_when_none_is_past_its_ttl(db: str) -> None:
    _park(db, "fresh", datetime.now(UTC) - timedelta(minutes=30))
    result = CliRunner().invoke(main, ["asks", "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["conversation_id"] for row in rows] == ["fresh"]
    assert 0.4 < rows[0]["hours_open"] < 0.6
    assert rows[0]["overdue"] is False


def test_asks_exits_one_when_an_open_ask_is_past_its_ttl_and_closes_nothing(db: str) -> None:
    stale = _park(db, "stale", datetime.now(UTC) - timedelta(hours=7))
    _park(db, "fresh", datetime.now(UTC) - timedelta(minutes=5))
    result = CliRunner().invoke(main, ["asks", "--db", db])
    assert result.exit_code == 1
    assert "1 past their TTL" in result.stdout and "stale" in result.stdout
    again = CliRunner().invoke(main, ["asks", "--db", db, "--json"])
    assert stale in again.stdout  # the audit looked; it did not expire the row


def test_asks_older_than_filters(db: str) -> None:
    _park(db, "old", datetime.now(UTC) - timedelta(hours=3))
    _park(db, "new", datetime.now(UTC) - timedelta(minutes=3))
    result = CliRunner().invoke(main, ["asks", "--db", db, "--json", "--older-than", "2h"])
    assert [json.loads(line)["conversation_id"] for line in result.stdout.splitlines()] == ["old"]
    bad = CliRunner().invoke(main, ["asks", "--db", db, "--older-than", "soon"])
    assert bad.exit_code == 2 and "not a duration" in bad.output


def test_db_comes_from_the_environment(db: str) -> None:
    _park(db, "env", datetime.now(UTC))
    result = CliRunner().invoke(main, ["asks", "--json"], env={"PARKGATE_DB": db})
    assert "env" in result.stdout


def test_migrate_reports_the_schema_version(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    first = CliRunner().invoke(main, ["migrate", "--db", url])
    assert first.exit_code == 0 and "applied migration(s) 1, 2, 3" in first.output
    second = CliRunner().invoke(main, ["migrate", "--db", url])
    assert "up to date at schema version 3" in second.output


def test_a_file_that_is_not_a_parkgate_database_is_a_clear_error_and_left_alone(tmp_path: Path) -> None:
    junk = tmp_path / "notes.db"
    junk.write_bytes(b"these are my notes, not a database" * 100)
    before = junk.read_bytes()
    result = CliRunner().invoke(main, ["asks", "--db", str(junk)])
    assert result.exit_code == 1
    assert "not a parkgate database" in result.output
    assert junk.read_bytes() == before


def test_chat_runs_the_demo_and_never_sends_a_parked_reply_to_the_model(db: str) -> None:
    script = b"hello\n2\nA class for orders\nwhat is the weather\n/start\n\xff\xfe\n/cancel\nbye\n"
    result = CliRunner().invoke(main, ["chat", "--db", db, "--conversation", "c1"], input=script)
    assert result.exit_code == 0, result.output
    out = result.stdout
    stand_in = P.STAND_IN_MODEL.split("{")[0]
    # "hello" arrived while the menu was parked: a retry, not a model call.
    assert "[retry]" in out and "You said: hello" not in out
    assert "@startuml" in out and "@enduml" in out
    assert out.count(stand_in) == 2  # "what is the weather" and "bye", nothing else
    assert "not valid UTF-8" in out
    assert P.PHRASES[ReplyKind.CANCELLED] in out


def test_chat_logs_an_expiry_as_one_json_line_on_stderr(db: str) -> None:
    """The conversation is on stdout; the structured expiry line goes to stderr, as under serve."""
    ask_id = _park(db, "c-exp", datetime.now(UTC) - timedelta(hours=7))
    done = subprocess.run(
        [sys.executable, "-m", "parkgate", "chat", "--db", db, "--conversation", "c-exp"],
        input="/cancel\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert [(line["event"], line["ask_id"]) for line in lines] == [("ask_expired", ask_id)]
    assert 419 < lines[0]["idle_minutes"] < 421
    assert "ask_expired" not in done.stdout and "Which UML diagram?" in done.stdout


def test_asks_logs_nothing_because_it_closes_nothing(db: str) -> None:
    _park(db, "stale", datetime.now(UTC) - timedelta(hours=7))
    done = subprocess.run(
        [sys.executable, "-m", "parkgate", "asks", "--db", db, "--json"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and done.stderr == ""
    assert json.loads(done.stdout)["overdue"] is True
