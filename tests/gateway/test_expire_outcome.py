"""``Gateway.expire(ask_id, outcome=...)``: an expiry that says why nobody answered.

The ask closes as ``expired`` as its TTL would close it, but keeps the outcome given
(``dismissed``: a dialog closed without an answer), and so does its run; the metrics
count it under that outcome and no ``ask_expired`` line is logged.
"""

from __future__ import annotations

import logging

import pytest

from parkgate import AskStatus, Gateway, InputError


def test_an_expiry_with_its_own_outcome_keeps_it_on_the_ask_and_the_run(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    ask_id = gateway.ask("c1", "Deploy?", ["Deploy", "Hold"], run_id="r1").ask_id or ""
    with caplog.at_level(logging.INFO, logger="parkgate"):
        closed = gateway.expire(ask_id, outcome="dismissed")
    assert (closed.status, closed.outcome, closed.answer, closed.closed_by) == (
        AskStatus.EXPIRED,
        "dismissed",
        None,
        None,
    )
    run = gateway.run("r1")
    assert run is not None and (run.status, run.outcome) == ("complete", "dismissed")
    assert not [record for record in caplog.records if "ask_expired" in record.getMessage()]
    labels = {"outcome": "dismissed", "surface": gateway.metrics.surface}
    assert gateway.metrics.registry.get_sample_value("parkgate_asks_closed_total", labels) == 1
    assert gateway.expire(ask_id, outcome="other") == closed  # closed already: unchanged


def test_a_default_still_stands_in_and_the_run_goes_on(gateway: Gateway) -> None:
    ask_id = gateway.ask("c1", "Deploy?", ["Deploy", "Hold"], run_id="r1", default="Hold").ask_id or ""
    closed = gateway.expire(ask_id, outcome="dismissed")
    assert (closed.status, closed.outcome, closed.answer, closed.option_index) == (
        AskStatus.EXPIRED,
        "dismissed",
        "Hold",
        2,
    )
    run = gateway.run("r1")
    assert run is not None and run.status == "running"


@pytest.mark.parametrize("outcome", ["", "a\x00b", "x" * 201])
def test_a_bad_outcome_is_refused_and_changes_nothing(gateway: Gateway, outcome: str) -> None:
    ask_id = gateway.ask("c1", "Deploy?", ["Deploy", "Hold"]).ask_id or ""
    with pytest.raises(InputError, match="outcome"):
        gateway.expire(ask_id, outcome=outcome)
    assert gateway.get(ask_id).is_open
