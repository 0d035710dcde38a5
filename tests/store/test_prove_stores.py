"""The exhaustive enumeration through a real Gateway on SQLite and PostgreSQL.

Every case parks a real ask (for its responders, with its quorum), sends its vote and
misses as real messages (one transaction each), moves the injected clock and sends the
input from the case's sender; the store's reply and row must agree with the pure
machine and with the properties. The last tests break the store on purpose to show
that the comparison can fail.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from click.testing import CliRunner

from parkgate import Gateway, prove
from parkgate.cli import main
from parkgate.core.kinds import AskStatus
from parkgate.core.model import Ask
from parkgate.store.sqlite import SQLiteTransaction

# Every state of the pure run: (2 kinds x 2 collisions; 4 whos for a choice, 2 for text)
# x 6 mismatch counts x 2 expiries.
STATES = (2 * 4 + 2 * 2) * 6 * 2
# Every input from no sender to an ask anyone may answer: (29 + 29 + 26 + 28) x 6 x 2.
ANYONES = 1344
# Every other (who, sender) pair, per state: a digit, a second digit, /cancel, /menu, a
# blank and a non-text input; past the TTL a digit and a non-text input.
OTHER_PAIRS = (2 * 4 + 2 * 2) * 4 - 4  # (kind, collision, who) x sender, less anyone's with no sender
TRANSITIONS = ANYONES + OTHER_PAIRS * 6 * (6 + 2)
SENDER_CLASSES = ["no sender", "a responder", "a non-responder", "a second responder"]
WHOS = ["anyone", "2 responders, quorum 1", "3 responders, quorum 2", "quorum 2, 1 vote cast"]


@functools.cache
def pure() -> prove.Report:
    """The pure run, made once (when a test first compares with it, not while the suite is
    collected): the store runs are compared with it."""
    return prove.check()


def assert_agrees(report: prove.Report) -> None:
    """The store run found nothing, covered every state and sender class, and saw what the pure run saw."""
    assert report.failures == []
    assert (report.states, report.transitions) == (STATES, TRANSITIONS)
    assert report.render().splitlines()[-1] == f"checked {STATES} states, {TRANSITIONS} transitions, 0 failures"
    assert report.rows == pure().rows
    assert (report.senders, report.audiences) == (SENDER_CLASSES, WHOS)
    # Each (kind, who, sender, expiry) row: the same reply kinds as the pure run's.
    assert [row[:4] + row[5:] for row in report.who_rows] == [row[:4] + row[5:] for row in pure().who_rows]
    theirs = [row for row in report.who_rows if row[1] != "anyone" and row[2] in SENDER_CLASSES[::2] and row[3] == "no"]
    assert len(theirs) == (3 + 1) * 2 and all(row[5] == "not_yours, refused" for row in theirs)


def test_sqlite_store_never_disagrees_with_the_machine(tmp_path: Path) -> None:
    # The check is of what each step decides and writes, not of the disk: no sync per commit.
    url = f"sqlite:///{tmp_path / 'prove.db'}?synchronous=normal"
    report = prove.check_store(url)
    assert_agrees(report)
    with Gateway(url) as gateway:  # the run parks nothing for good in the store it checked
        assert gateway.audit() == []


@pytest.mark.postgres
def test_postgres_store_never_disagrees_with_the_machine(pg_url: str, pg_schema: str) -> None:
    report = prove.check_store(pg_url, schema=pg_schema)
    assert_agrees(report)


def test_parkgate_prove_reports_the_sender_classes_for_the_machine_and_a_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}?synchronous=normal"
    result = CliRunner().invoke(main, ["prove", "--db", url])
    assert result.exit_code == 0, result.output
    sections = result.output.split("== ")[1:]
    assert [section.splitlines()[0] for section in sections] == ["pure machine", url]
    for section, transitions in zip(sections, (pure().transitions, TRANSITIONS), strict=True):
        assert f"sender classes: {', '.join(SENDER_CLASSES)}" in section
        assert f"who may answer: {'; '.join(WHOS)}" in section
        assert "not_yours, refused" in section
        assert section.rstrip().endswith(f"checked {STATES} states, {transitions} transitions, 0 failures")


def test_a_rerun_on_the_same_store_still_agrees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'again.db'}?synchronous=normal"
    few = [c for c in prove.store_cases() if c.mismatches == 3]
    monkeypatch.setattr(prove, "store_cases", lambda escalate_after=3: few)
    first = prove.check_store(url)
    second = prove.check_store(url)
    assert first.failures == [] and second.failures == []
    assert first.transitions == second.transitions == len(few)


def test_a_store_that_loses_a_vote_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_save = SQLiteTransaction.save_ask

    def keeps_only_the_last_vote(self: SQLiteTransaction, ask: Ask) -> None:
        real_save(self, ask.evolve(votes=ask.votes[-1:]))  # a changed or second vote wipes the others

    quorum = [c for c in prove.store_cases() if c.who is prove.Who.QUORUM_VOTED and not c.expired]
    monkeypatch.setattr(prove, "store_cases", lambda escalate_after=3: quorum)
    monkeypatch.setattr(SQLiteTransaction, "save_ask", keeps_only_the_last_vote)
    report = prove.check_store(f"sqlite:///{tmp_path / 'votes.db'}?synchronous=normal")
    assert any("a second responder [store]: store and pure machine disagree on votes" in f for f in report.failures)


def test_a_store_that_loses_a_cancel_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_save = SQLiteTransaction.save_ask

    def forgets_cancels(self: SQLiteTransaction, ask: Ask) -> None:
        if ask.status is AskStatus.CANCELLED:
            return  # the row stays open: the conversation would stay parked
        real_save(self, ask)

    slash_cancels = [
        c for c in prove.store_cases() if c.input_class is prove.InputClass.SLASH_CONTROL and c.mismatches in (0, 4)
    ]
    monkeypatch.setattr(prove, "store_cases", lambda escalate_after=3: slash_cancels)
    monkeypatch.setattr(SQLiteTransaction, "save_ask", forgets_cancels)
    report = prove.check_store(f"sqlite:///{tmp_path / 'broken.db'}?synchronous=normal")
    assert report.failures
    assert any("store and pure machine disagree on status" in f for f in report.failures)
    assert any("property 2" in f and "[store]" in f for f in report.failures)
    assert report.render().splitlines()[-1].endswith(f"{len(report.failures)} failures")
