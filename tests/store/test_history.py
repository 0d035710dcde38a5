"""The history of every ask on both engines (:class:`parkgate.store.tables.History` through
:meth:`Gateway.history`, :meth:`Gateway.stats` and :meth:`Gateway.asks_starting`): each
status in its order, every filter, paging by cursor with nothing seen twice, and a listing
that closes the lapsed asks it bears on as expired at their due time."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from parkgate import AskStatus, Gateway, ManualClock
from parkgate.core.history import HistoryQuery
from parkgate.errors import InputError

TTL = 600.0


def _ids(page: object) -> list[str]:
    return [ask.conversation_id for ask in page.asks]  # type: ignore[attr-defined]


def _post(gateway: Gateway, ask_id: str, channel: str, target: dict[str, object]) -> None:
    """The ask's channel post row, as a park with ``post_to`` writes it."""
    with gateway.store.transaction() as tx:
        tx.query(  # type: ignore[attr-defined]
            "INSERT INTO channel_posts (ask_id, channel, target) VALUES (?, ?, ?)",
            (ask_id, channel, json.dumps(target, sort_keys=True)),
        )


def _four(gateway: Gateway, clock: ManualClock) -> dict[str, str]:
    """Four asks a minute apart, then: c-answered answered, c-cancelled cancelled, c-lapsed
    past its TTL (unread), c-open still open."""
    ids: dict[str, str] = {}
    for name, options in (
        ("c-answered", {"responders": ["U_A", "U_B"], "quorum": 2}),
        ("c-cancelled", {"owner": "team-b"}),
        ("c-lapsed", {"ttl": 120.0}),
        ("c-open", {"escalate_after": 60.0, "escalate_to": ["U_C"], "responders": ["U_D"]}),
    ):
        ids[name] = gateway.ask(name, f"Deploy {name} now?", ["Deploy", "Hold"], **{"ttl": TTL, **options}).ask_id or ""
        clock.advance(60)
    gateway.handle("c-answered", "1", sender="U_A")
    clock.advance(5)
    gateway.handle("c-answered", "1", sender="U_B")
    clock.advance(5)
    gateway.cancel(ids["c-cancelled"])
    clock.advance(300)  # c-lapsed fell due 120 s after it was asked
    return ids


def test_each_status_in_its_order_and_a_listing_closes_what_it_finds_lapsed(
    gateway: Gateway, clock: ManualClock
) -> None:
    ids = _four(gateway, clock)
    assert gateway.audit()[0].status is AskStatus.OPEN, "the lapsed ask is stored open before the listing"
    expired = gateway.history(status="expired").asks
    assert [ask.id for ask in expired] == [ids["c-lapsed"]]
    lapsed = gateway.get(ids["c-lapsed"])
    assert lapsed.status is AskStatus.EXPIRED and lapsed.closed_at == lapsed.asked_at + timedelta(seconds=120)
    # A closed status: the latest close first (the expiry's close is its due time).
    assert _ids(gateway.history(status="closed")) == ["c-cancelled", "c-answered", "c-lapsed"]
    assert _ids(gateway.history(status="answered")) == ["c-answered"]
    assert _ids(gateway.history(status="all")) == ["c-open", "c-lapsed", "c-cancelled", "c-answered"]
    assert _ids(gateway.history()) == ["c-open"], "open by default, oldest first"


def test_an_open_listing_leaves_out_and_closes_an_ask_past_its_ttl(gateway: Gateway, clock: ManualClock) -> None:
    first = gateway.ask("c-1", "One?", ["Yes", "No"], ttl=60).ask_id
    clock.advance(30)
    gateway.ask("c-2", "Two?", ["Yes", "No"], ttl=600)
    clock.advance(40)
    assert _ids(gateway.history(status="open")) == ["c-2"]
    assert gateway.get(first or "").status is AskStatus.EXPIRED


def test_since_and_until_bound_the_close_of_a_closed_status_and_the_ask_of_all(
    gateway: Gateway, clock: ManualClock
) -> None:
    start = clock.now()
    _four(gateway, clock)
    # Closes: c-lapsed at start+240 (due), c-answered at start+245, c-cancelled at start+250.
    window = {"since": start + timedelta(seconds=241), "until": start + timedelta(seconds=250)}
    assert _ids(gateway.history(status="closed", **window)) == ["c-answered"]
    assert _ids(gateway.history(status="closed", since=start + timedelta(seconds=240))) == [
        "c-cancelled",
        "c-answered",
        "c-lapsed",
    ]
    # Asked: c-answered at start, c-cancelled at +60, c-lapsed at +120, c-open at +180.
    assert _ids(
        gateway.history(status="all", since=start + timedelta(seconds=60), until=start + timedelta(seconds=180))
    ) == [
        "c-lapsed",
        "c-cancelled",
    ]


def test_every_filter_keeps_only_its_asks(gateway: Gateway, clock: ManualClock) -> None:
    ids = _four(gateway, clock)
    _post(gateway, ids["c-answered"], "slack", {"channel": "C0OPS"})
    _post(gateway, ids["c-open"], "slack", {"channel": "C0DEV", "thread_ts": "1.2"})
    _post(gateway, ids["c-cancelled"], "telegram", {"chat_id": -100777})
    every = {"status": "all"}
    assert _ids(gateway.history(**every, q="DEPLOY C-LAPSED")) == ["c-lapsed"], "letter case aside"
    assert _ids(gateway.history(**every, conversation_id="c-open")) == ["c-open"]
    assert _ids(gateway.history(**every, owner="team-b")) == ["c-cancelled"]
    assert _ids(gateway.history(**every, outcome="selected")) == ["c-answered"]
    assert _ids(gateway.history(**every, responder="U_B")) == ["c-answered"], "a responder who voted"
    assert _ids(gateway.history(**every, responder="U_C")) == ["c-open"], "the escalation's"
    assert _ids(gateway.history(**every, responder="U_D")) == ["c-open"]
    assert _ids(gateway.history(**every, responder="U_")) == [], "a whole name, never a part of one"
    assert _ids(gateway.history(**every, channel="slack")) == ["c-open", "c-answered"]
    assert _ids(gateway.history(**every, channel="slack:C0OPS")) == ["c-answered"]
    assert _ids(gateway.history(**every, channel="telegram:-100777")) == ["c-cancelled"]
    assert _ids(gateway.history(**every, channel="telegram:-1")) == []
    query = HistoryQuery(status="closed", responder="U_A")  # type: ignore[arg-type]
    assert _ids(gateway.history(query)) == ["c-answered"]
    assert _ids(gateway.history(query, responder="U_Z")) == [], "filters given beside a query override it"


def test_pages_by_cursor_visit_every_ask_once_in_order(gateway: Gateway, clock: ManualClock) -> None:
    for number in range(7):
        gateway.ask(f"c-{number}", "Ship?", ["Yes", "No"])
        if number % 3:  # some share their asked_at: the id orders them
            clock.advance(1)
    for status, expected in (("all", [f"c-{n}" for n in reversed(range(7))]), ("open", [f"c-{n}" for n in range(7)])):
        seen: list[str] = []
        page = gateway.history(status=status, limit=3)
        while True:
            seen += _ids(page)
            if page.next_cursor is None:
                break
            page = gateway.history(status=status, limit=3, cursor=page.next_cursor)
        assert sorted(seen) == sorted(expected) and len(seen) == 7
        times = [ask.asked_at for ask in gateway.history(status=status, limit=7).asks]
        assert times == sorted(times, reverse=status == "all")


def test_bad_filters_are_refused(gateway: Gateway) -> None:
    with pytest.raises(InputError, match="status must be one of"):
        gateway.history(status="lost")
    with pytest.raises(InputError, match="cursor"):
        gateway.history(cursor="not-a-cursor")
    with pytest.raises(InputError, match="limit"):
        gateway.history(limit=0)
    with pytest.raises(InputError, match="HistoryQuery"):
        gateway.history(colour="red")


def test_an_id_start_finds_open_and_closed_asks(gateway: Gateway) -> None:
    first = gateway.ask("c-a", "A?", ["Yes", "No"]).ask_id or ""
    gateway.cancel(first)
    found = gateway.asks_starting(first[:12])
    assert [ask.id for ask in found] == [first] and found[0].status is AskStatus.CANCELLED
    assert gateway.asks_starting("zzzz") == []


def test_figures_count_the_window_and_the_lapsed_asks_as_expired(gateway: Gateway, clock: ManualClock) -> None:
    start = clock.now()
    _four(gateway, clock)
    stats = gateway.stats(since=start, until=start + timedelta(hours=1))
    total = stats.total
    assert [total[key] for key in ("opened", "answered", "expired", "cancelled")] == [4, 1, 1, 1]
    assert total["time_to_answer"]["count"] == 1 and total["time_to_answer"]["p50"] == 245.0
    assert total["open_by_age"] == {"<1h": 1, "1-6h": 0, "6-24h": 0, ">24h": 0}
    by_responder = {group["key"]: group for group in gateway.stats(since=start, by="responder").groups}
    assert by_responder["U_A"]["answered"] == 1 and by_responder["U_C"]["opened"] == 1
    assert by_responder["(anyone)"]["opened"] == 2
    days = gateway.stats(by="day").groups
    assert [group["key"] for group in days] == [start.date().isoformat()]
