"""The exhaustive enumeration through a real Gateway on SQLite and PostgreSQL.

Every case parks a real ask, sends its misses as real messages (one transaction each),
moves the injected clock and sends the input; the store's reply and row must agree
with the pure machine and with the properties. The last test breaks the store on
purpose to show that the comparison can fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from parkgate import Gateway, prove
from parkgate.core.kinds import AskStatus
from parkgate.core.model import Ask
from parkgate.store.sqlite import SQLiteTransaction

# 4 asks x 6 mismatch counts x 2 expiries; (29 + 29 + 26 + 28) inputs per count and expiry.
STATES, TRANSITIONS = 48, 1344


def test_sqlite_store_never_disagrees_with_the_machine(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'prove.db'}"
    report = prove.check_store(url)
    assert report.failures == []
    assert (report.states, report.transitions) == (STATES, TRANSITIONS)
    assert report.render().splitlines()[-1] == f"checked {STATES} states, {TRANSITIONS} transitions, 0 failures"
    assert report.rows == prove.check().rows
    with Gateway(url) as gateway:  # the run parks nothing for good in the store it checked
        assert gateway.audit() == []


@pytest.mark.postgres
def test_postgres_store_never_disagrees_with_the_machine(pg_url: str, pg_schema: str) -> None:
    report = prove.check_store(pg_url, schema=pg_schema)
    assert report.failures == []
    assert (report.states, report.transitions) == (STATES, TRANSITIONS)
    assert report.rows == prove.check().rows


def test_a_rerun_on_the_same_store_still_agrees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'again.db'}"
    few = [c for c in prove.enumerate_cases() if c.mismatches == 3]
    monkeypatch.setattr(prove, "enumerate_cases", lambda escalate_after=3: few)
    first = prove.check_store(url)
    second = prove.check_store(url)
    assert first.failures == [] and second.failures == []
    assert first.transitions == second.transitions == len(few)


def test_a_store_that_loses_a_cancel_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_save = SQLiteTransaction.save_ask

    def forgets_cancels(self: SQLiteTransaction, ask: Ask) -> None:
        if ask.status is AskStatus.CANCELLED:
            return  # the row stays open: the conversation would stay parked
        real_save(self, ask)

    slash_cancels = [
        c for c in prove.enumerate_cases() if c.input_class is prove.InputClass.SLASH_CONTROL and c.mismatches in (0, 4)
    ]
    monkeypatch.setattr(prove, "enumerate_cases", lambda escalate_after=3: slash_cancels)
    monkeypatch.setattr(SQLiteTransaction, "save_ask", forgets_cancels)
    report = prove.check_store(f"sqlite:///{tmp_path / 'broken.db'}")
    assert report.failures
    assert any("store and pure machine disagree on status" in f for f in report.failures)
    assert any("property 2" in f and "[store]" in f for f in report.failures)
    assert report.render().splitlines()[-1].endswith(f"{len(report.failures)} failures")
