"""Due callbacks are claimed in turns between receiver hosts, never past a host's room,
and each is counted against the owner of its ask until it is delivered or given up.

A receiver that holds every connection it gets must not hold every delivery slot: the
claim takes each host's oldest due row before any host's second, and leaves a host alone
once it has ``per_host`` deliveries in flight (its rows wait for one of them to end).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from parkgate.store import Store
from parkgate.store.writes import QueuedCallback, Writes

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
LEASE = NOW + timedelta(minutes=1)


def _queue(store: Store, host: str, count: int, *, owner: str | None = None, offset: int = 0) -> None:
    """Queue ``count`` callbacks to ``host``, one a second from ``NOW + offset`` seconds."""
    queued = tuple(
        QueuedCallback(
            f"{host}-{n}", f"http://{host}/hook?n={n}", "{}", NOW + timedelta(seconds=offset + n), host, owner
        )
        for n in range(count)
    )
    with store.transaction() as tx:
        tx.write(Writes(callbacks=queued))


def test_a_long_queue_to_one_host_does_not_fill_the_claim(store: Store) -> None:
    _queue(store, "slow.test", 40)
    _queue(store, "fine.test", 1, offset=30)  # queued well after the slow host's first 30
    later = NOW + timedelta(minutes=5)
    claimed = store.claim_callbacks(later, later + timedelta(minutes=1), 4)
    assert "fine.test-0" in [row.ask_id for row in claimed]
    assert {row.host for row in claimed} == {"slow.test", "fine.test"}


def test_a_host_gets_no_more_rows_than_its_room(store: Store) -> None:
    _queue(store, "slow.test", 40)
    _queue(store, "fine.test", 3, offset=50)
    later = NOW + timedelta(minutes=5)
    claimed = store.claim_callbacks(later, later + timedelta(minutes=1), 32, 4, {"slow.test": 3})
    hosts = sorted(row.host or "" for row in claimed)
    assert hosts == ["fine.test"] * 3 + ["slow.test"]  # the slow host had room for one more
    again = store.claim_callbacks(later, later + timedelta(minutes=1), 32, 4, {"slow.test": 4, "fine.test": 3})
    assert again == []  # every host at its cap: nothing is claimed, the rest stay due
    third = store.claim_callbacks(later, later + timedelta(minutes=1), 32, 4, {})
    assert [row.host for row in third] == ["slow.test"] * 4


def test_the_next_callback_time_leaves_out_the_full_hosts(store: Store) -> None:
    _queue(store, "slow.test", 3)
    _queue(store, "fine.test", 1, offset=60)
    assert store.next_callback_at() == NOW
    assert store.next_callback_at({"slow.test"}) == NOW + timedelta(seconds=60)
    assert store.next_callback_at({"slow.test", "fine.test"}) is None


def test_an_owners_undelivered_callbacks_are_counted_until_delivered_or_failed(store: Store) -> None:
    _queue(store, "a.test", 3, owner="agent")
    _queue(store, "b.test", 2, owner="other-agent")
    with store.transaction() as tx:
        assert (tx.outbox.count_pending_callbacks("agent"), tx.outbox.count_pending_callbacks("other-agent")) == (3, 2)
    rows = {row.ask_id: row.id for row in store.claim_callbacks(NOW + timedelta(minutes=1), LEASE, 10)}
    store.callbacks_done([rows["a.test-0"]], NOW)
    store.callback_failed(rows["a.test-1"], "HTTP 500", None)  # given up on
    store.callback_failed(rows["a.test-2"], "HTTP 500", NOW + timedelta(minutes=1))  # to be retried
    with store.transaction() as tx:
        assert tx.outbox.count_pending_callbacks("agent") == 1
        assert tx.outbox.count_pending_callbacks("nobody") == 0
