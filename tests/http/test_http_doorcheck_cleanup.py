"""``parkgate doorcheck --url`` against a production server cleans up after itself: a check
that fails leaves no ask parked there; its ask is cancelled with the outcome ``doorcheck``."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner
from live_server import Server

from parkgate import Gateway
from parkgate.cli import main
from parkgate.client import Client


def test_a_failed_check_over_http_cancels_its_ask_as_a_check(
    served_sqlite: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A door whose exit word is not taken: the check fails with its ask still parked.
    monkeypatch.setattr(sys.modules["parkgate.cli.doorcheck"], "DOORCHECK_EXIT", "still not an answer")
    result = CliRunner().invoke(main, ["doorcheck", "--url", served_sqlite.url, "--conversation", "c-door-http"])
    assert result.exit_code == 1 and "doorcheck FAILED" in result.output
    with Client(served_sqlite.url) as client:
        assert client.parked("c-door-http") is None
        assert client.open_asks(conversation_id="c-door-http").asks == ()
    with Gateway(served_sqlite.db_url) as gateway, gateway.store.transaction() as tx:
        rows = tx.query("SELECT status, outcome FROM asks WHERE conversation_id = ?", ("c-door-http",)).fetchall()  # type: ignore[attr-defined]
    assert [tuple(row) for row in rows] == [("cancelled", "doorcheck")]
