"""The CLI as a user runs it: exit codes, JSON lines, tables, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from parkgate import Gateway, ManualClock, ReplyKind
from parkgate.cli import DOORCHECK_EXIT, DOORCHECK_INPUTS, doorcheck_verdict, main
from parkgate.core import phrases
from parkgate.store.migrations import iter_migrations


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
    assert lines[-1]["text"] == phrases.PHRASES[ReplyKind.CANCELLED]


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


def test_asks_lists_a_lapsed_unread_ask_and_exits_zero_it_closes_on_its_next_read(db: str) -> None:
    stale = _park(db, "stale", datetime.now(UTC) - timedelta(hours=7))
    _park(db, "fresh", datetime.now(UTC) - timedelta(minutes=5))
    result = CliRunner().invoke(main, ["asks", "--db", db])
    assert result.exit_code == 0, result.output  # nothing waits on it: not a fault
    assert "1 past their TTL (each closes on its next read)" in result.stdout and "stale" in result.stdout
    assert "past TTL" in result.stdout and "late" not in result.stdout
    again = CliRunner().invoke(main, ["asks", "--db", db, "--json"])
    assert stale in again.stdout  # the audit looked; it did not expire the row


def test_asks_exits_one_when_a_waited_on_ask_missed_its_due_read(db: str) -> None:
    asked_at = datetime.now(UTC) - timedelta(hours=7)
    with Gateway(db, clock=ManualClock(asked_at), ttl=timedelta(hours=6)) as gateway:
        waited = gateway.ask("watched", "Deploy?", ["Yes", "No"], follow_up=True).ask_id
        just_due = gateway.ask("just-due", "Deploy?", ["Yes", "No"], follow_up=True, ttl=7 * 3600 - 30).ask_id
    result = CliRunner().invoke(main, ["asks", "--db", db])
    assert result.exit_code == 1, result.output
    assert "2 past their TTL" in result.stdout
    assert "1 waited on and not closed: their due read is over 60 s late" in result.stdout
    assert "Is a deliverer running" in " ".join(result.stdout.split())  # the line folds at 80 columns
    rows = {
        row["ask_id"]: row
        for row in map(json.loads, CliRunner().invoke(main, ["asks", "--db", db, "--json"]).stdout.splitlines())
    }
    assert rows[waited]["late"] is True and rows[just_due]["late"] is False  # 30 s past due: not late yet
    assert rows[just_due]["overdue"] is True


@pytest.mark.parametrize("columns", ["80", "140"])
def test_the_asks_table_fits_the_width_and_shows_whole_ids_dates_and_the_question(db: str, columns: str) -> None:
    """At 80 columns (a pipe's width) nothing the operator copies is cut: the ask id, the
    date and time, the conversation and the question are all there, unbroken."""
    asked_at = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    conversation = "conversation-with-a-long-name-1234"
    with Gateway(db, clock=ManualClock(asked_at), ttl=timedelta(days=3650)) as gateway:
        reply = gateway.ask(conversation, "Deploy the new release to production?\nIt has 3 changes.", ["Yes", "No"])
    assert reply.ask_id is not None
    result = CliRunner().invoke(main, ["asks", "--db", db], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= int(columns)
    row = next(line for line in lines if reply.ask_id[:12] in line)  # the whole short id, on one line
    assert "2026-03-01 09:30" in row  # the whole date and time, on the same line
    flat = "".join(line.strip() for line in lines)  # the free-form column folds at narrow widths
    assert conversation in flat and "Deploy the new release to production?" in " ".join(result.stdout.split())


def test_asks_older_than_filters(db: str) -> None:
    _park(db, "old", datetime.now(UTC) - timedelta(hours=3))
    _park(db, "new", datetime.now(UTC) - timedelta(minutes=3))
    result = CliRunner().invoke(main, ["asks", "--db", db, "--json", "--older-than", "2h"])
    assert [json.loads(line)["conversation_id"] for line in result.stdout.splitlines()] == ["old"]
    assert result.exit_code == 0  # neither is past its TTL
    bad = CliRunner().invoke(main, ["asks", "--db", db, "--older-than", "soon"])
    assert bad.exit_code == 2 and "not a duration" in bad.output


def test_asks_older_than_narrows_the_listing_not_the_ttl_check(db: str) -> None:
    """A waited-on ask whose due read is late but younger than --older-than still fails the clock check."""
    _park(db, "old", datetime.now(UTC) - timedelta(hours=3))
    with Gateway(db, clock=ManualClock(datetime.now(UTC) - timedelta(minutes=10)), ttl=timedelta(minutes=1)) as gateway:
        gateway.ask("short", "Deploy?", ["Yes", "No"], follow_up=True)
    result = CliRunner().invoke(main, ["asks", "--db", db, "--older-than", "2h"])
    assert result.exit_code == 1
    assert "1 of 2 open listed, 1 past their TTL" in result.stdout and "1 waited on and not closed" in result.stdout
    assert "old" in result.stdout and "short" not in result.stdout


def test_db_comes_from_the_environment(db: str) -> None:
    _park(db, "env", datetime.now(UTC))
    result = CliRunner().invoke(main, ["asks", "--json"], env={"PARKGATE_DB": db})
    assert "env" in result.stdout


def test_migrate_reports_the_schema_version(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    versions = [version for version, _ in iter_migrations("sqlite")]
    assert versions == list(range(1, len(versions) + 1))  # numbered once each, in order, no gaps
    first = CliRunner().invoke(main, ["migrate", "--db", url])
    assert first.exit_code == 0 and f"applied migration(s) {', '.join(map(str, versions))};" in first.output
    second = CliRunner().invoke(main, ["migrate", "--db", url])
    assert f"up to date at schema version {versions[-1]}" in second.output


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
    stand_in = phrases.STAND_IN_MODEL.split("{")[0]
    # "hello" arrived while the menu was parked: a retry, not a model call.
    assert "[retry]" in out and "You said: hello" not in out
    assert "@startuml" in out and "@enduml" in out
    assert out.count(stand_in) == 2  # "what is the weather" and "bye", nothing else
    assert "not valid UTF-8" in out and phrases.CHAT_REFUSED.split("{")[0] in out
    assert phrases.PHRASES[ReplyKind.CANCELLED] in out


def test_chat_start_while_a_question_is_open_is_not_a_miss_and_the_end_says_how_to_start_again(db: str) -> None:
    result = CliRunner().invoke(main, ["chat", "--db", db, "--conversation", "c-again"], input=b"/start\n/start\n")
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())
    assert said.count(phrases.CHAT_STILL_PARKED.format(restart="/start")) == 2 and "[retry]" not in said
    with Gateway(db) as gateway:
        (parked,) = gateway.open_asks()
    assert parked.mismatches == 0  # /start is chat's own word: the menu never saw it
    assert phrases.CHAT_AGAIN.format(restart="/start") not in said  # the demo is still running

    script = b"1\nAlice asks the shop for an order\n/start\n/cancel\n"
    result = CliRunner().invoke(main, ["chat", "--db", db, "--conversation", "c-again-2"], input=script)
    said = " ".join(result.stdout.split())
    again = phrases.CHAT_AGAIN.format(restart="/start")
    # Once after the diagram, once after the cancel of the second run: each end says how to start again.
    assert said.count(again) == 2 and said.index("@enduml") < said.index(again)
    assert said.endswith(phrases.PHRASES[ReplyKind.CANCELLED] + " " + again)


def test_chat_on_a_conversation_with_an_open_question_says_how_to_leave_it(db: str) -> None:
    _park(db, "c-busy", datetime.now(UTC))
    result = CliRunner().invoke(main, ["chat", "--db", db, "--conversation", "c-busy"], input=b"/cancel\n/start\n")
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())  # rich wraps long lines
    assert phrases.CHAT_STILL_PARKED.format(restart="/start") in said
    assert phrases.PHRASES[ReplyKind.CANCELLED] in said  # /cancel dropped the caller's question
    assert "Which UML diagram" in said  # then /start ran the demo


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
    assert done.returncode == 0 and done.stderr == ""  # unread and lapsed: not a fault
    assert json.loads(done.stdout)["overdue"] is True


# -- Reading creates nothing ------------------------------------------------------------
def test_asks_on_a_missing_sqlite_file_is_a_clear_error_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "typo.db"
    for args in (["--db", f"sqlite:///{path}"], ["--db", str(path), "--json"]):
        result = CliRunner().invoke(main, ["asks", *args])
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert f"no parkgate database at {path}" in " ".join(result.output.split())
        assert list(tmp_path.iterdir()) == []


def test_asks_on_an_empty_file_is_a_clear_error_and_leaves_it_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    result = CliRunner().invoke(main, ["asks", "--db", f"sqlite:///{path}"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert f"no parkgate database at {path}" in " ".join(result.output.split())
    assert path.stat().st_size == 0


# -- Expected errors are one line, never a traceback ----------------------------------
def _busy(db: str, conversation: str) -> str:
    with Gateway(db) as gateway:
        reply = gateway.ask(conversation, "Deploy?", ["Yes", "No"])
    assert reply.ask_id is not None
    return reply.ask_id


def test_doorcheck_on_a_busy_conversation_is_a_clear_error_and_changes_nothing(db: str) -> None:
    ask_id = _busy(db, "busy2")
    result = CliRunner().invoke(main, ["doorcheck", "--db", db, "--conversation", "busy2"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    message = " ".join(result.output.split())
    assert "busy2" in message and "--conversation" in message and "Traceback" not in message
    assert len(result.output.strip().splitlines()) == 1
    with Gateway(db) as gateway:
        ask = gateway.get(ask_id)
        assert ask.is_open and ask.mismatches == 0
        assert [ask.id for ask in gateway.audit()] == [ask_id]


def test_doorcheck_on_a_busy_conversation_prints_no_traceback_as_a_program(db: str) -> None:
    _busy(db, "busy3")
    done = subprocess.run(
        [sys.executable, "-m", "parkgate", "doorcheck", "--db", db, "--conversation", "busy3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["asks", "--db", "ftp://example.org/x"], "unknown store URL"),
        (["asks", "--db", "{tmp}"], "is a folder"),
        (["asks", "--older-than", "99999999999999d"], "not a duration"),
        (["chat", "--db", "sqlite:///{tmp}/no/such/folder.db"], "does not exist"),
        (["chat", "--db", "{tmp}/junk.db"], "not a parkgate database"),
        (["chat", "--conversation", "x" * 500], "conversation_id is 500 characters"),
        (["doorcheck", "--db", "{tmp}/junk.db"], "not a parkgate database"),
        (["doorcheck", "--url", "http://[not-a-host"], "did not answer"),
        (["doorcheck", "--url", "ftp://127.0.0.1:1"], "must look like http://host:port"),
        (["migrate", "--db", "sqlite:///{tmp}/no/such/folder.db"], "does not exist"),
        (["prove", "--db", "ftp://example.org/x"], "unknown store URL"),
    ],
)
def test_bad_input_to_any_command_is_a_clear_error_not_a_traceback(tmp_path: Path, args: list[str], says: str) -> None:
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 200)
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    result = CliRunner().invoke(main, argv, input="", env={"PARKGATE_DB": f"sqlite:///{tmp_path / 'env.db'}"})
    assert result.exit_code in (1, 2) and isinstance(result.exception, SystemExit), (result.output, result.exception)
    assert says in " ".join(result.output.split())


# -- chat's expiry notice -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(6 * 3600, "6"), (1800, "0.5"), (5400, "1.5"), (2 * 86400, "48"), (8100, "2.25"), (90, "0.025")],
)
def test_hours_are_shown_without_a_pointless_decimal(seconds: float, shown: str) -> None:
    from parkgate.cli import format_hours

    assert format_hours(seconds) == shown


@pytest.mark.parametrize(("ttl", "shown"), [(timedelta(hours=2), "2"), (timedelta(minutes=30), "0.5")])
def test_chat_says_how_long_the_expired_ask_itself_waited(
    db: str, monkeypatch: pytest.MonkeyPatch, ttl: timedelta, shown: str
) -> None:
    """Someone else's ask (its own TTL, not chat's 6 h default) is open when chat starts,
    and expires while the person types: the notice gives that ask's TTL, as written."""
    import parkgate.cli.stores as cli_stores

    started = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    _park(db, "c-ttl", started, ttl=ttl)

    class LateGateway(Gateway):
        def handle(self, *args: Any, **kwargs: Any) -> Any:
            assert isinstance(self.clock, ManualClock)
            self.clock.advance(timedelta(hours=3))  # the person comes back later
            return super().handle(*args, **kwargs)

    monkeypatch.setattr(cli_stores, "Gateway", lambda **options: LateGateway(clock=ManualClock(started), **options))
    result = CliRunner().invoke(main, ["chat", "--db", db, "--conversation", "c-ttl"], input="hello\n")
    assert result.exit_code == 0, result.output
    assert phrases.EXPIRED_NOTICE.format(hours=shown) in result.stdout
    assert ".0 h" not in result.stdout and "6 h" not in result.stdout  # not the gateway's default TTL
    assert "replace=True" not in result.stdout  # the busy start speaks to a person at a terminal


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://app:s3cr%40t@db.example:5432/prod", "postgresql://app:***@db.example:5432/prod"),
        (
            "postgresql://db.example/prod?user=app&password=s3cret&sslmode=require",
            "postgresql://db.example/prod?user=app&password=***&sslmode=require",
        ),
        ("postgresql://app@db.example/prod", "postgresql://app@db.example/prod"),
        ("sqlite:///parkgate.db", "sqlite:///parkgate.db"),
    ],
)
def test_printed_store_urls_never_show_a_password(url: str, shown: str) -> None:
    from parkgate.cli import shown_url

    assert shown_url(url) == shown


@pytest.mark.postgres
def test_migrate_prints_the_url_without_its_password(
    pg_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urllib.parse import urlsplit

    from parkgate.store import ENV_PG_SCHEMA

    monkeypatch.setenv(ENV_PG_SCHEMA, pg_schema)  # its own schema: never the shared database's public

    parts = urlsplit(pg_url)
    with_password = pg_url.replace(
        f"{parts.netloc}", f"{parts.username or 'postgres'}:not-needed@{parts.hostname}:{parts.port or 5432}", 1
    )
    result = CliRunner().invoke(main, ["migrate", "--db", with_password])
    assert result.exit_code == 0, result.output
    assert "not-needed" not in result.output and ":***@" in result.output
