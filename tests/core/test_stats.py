"""The operator's figures computed from ask rows (:mod:`parkgate.core.stats`): each figure's
window, the nearest-rank percentiles, the open asks' age buckets and the groups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from parkgate.core.kinds import AskKind, AskStatus
from parkgate.core.model import Ask, Vote
from parkgate.core.stats import ANYONE, NOT_POSTED, StatsBy, age_bucket, compute_stats, percentile

T0 = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def _ask(name: str, asked: datetime, status: AskStatus = AskStatus.OPEN, after: float = 0.0, **fields: object) -> Ask:
    closed = asked + timedelta(seconds=after)
    ask = Ask(name, f"c-{name}", f"r-{name}", AskKind.CHOICE, "Ship?", ("Yes", "No"), AskStatus.OPEN, asked, asked, 1e6)
    if status is not AskStatus.OPEN:
        answered = closed if status is AskStatus.ANSWERED else None
        ask = ask.evolve(status=status, closed_at=closed, answered_at=answered)
    return ask.evolve(**fields)


def test_each_figure_counts_by_its_own_time() -> None:
    asks = [
        _ask("a", T0, AskStatus.ANSWERED, 30, mismatches=0, reminders_sent=2),
        _ask("b", T0 + timedelta(hours=1), AskStatus.EXPIRED, 600, mismatches=3),
        _ask("c", T0 - DAY, AskStatus.ANSWERED, DAY.total_seconds() + 90),  # asked before, answered in the window
        _ask("d", T0 - 2 * DAY, escalated_at=T0 + timedelta(minutes=5)),  # open since before
        _ask("e", T0 + timedelta(hours=2), AskStatus.CANCELLED, 5),
    ]
    now = T0 + timedelta(hours=3)
    total = compute_stats(asks, T0, T0 + DAY, now).total
    assert [total[key] for key in ("opened", "answered", "expired", "cancelled")] == [3, 2, 1, 1]
    assert total["time_to_answer"] == {
        "p50": 30.0,
        "p90": DAY.total_seconds() + 90,
        "p99": DAY.total_seconds() + 90,
        "count": 2,
    }
    assert (total["reminders"], total["escalations"]) == (2, 1)
    assert total["misses_per_ask"] == 1.0  # (0 + 3 + 0) / 3 opened
    assert total["open_by_age"] == {"<1h": 0, "1-6h": 0, "6-24h": 0, ">24h": 1}


def test_groups_by_day_responder_and_channel() -> None:
    asks = [
        _ask(
            "a",
            T0,
            AskStatus.ANSWERED,
            30,
            responders=("U_A", "U_B"),
            answered_by="U_B",
            votes=(Vote("U_A", 1, "Yes", T0),),
        ),
        _ask("b", T0 + DAY, AskStatus.EXPIRED, 60),
    ]
    now = T0 + 3 * DAY
    days = compute_stats(asks, None, None, now, StatsBy.DAY).groups
    assert [(day["key"], day["opened"], day["answered"], day["expired"]) for day in days] == [
        ("2026-02-01", 1, 1, 0),
        ("2026-02-02", 1, 0, 1),
    ]
    people = {group["key"]: group for group in compute_stats(asks, None, None, now, StatsBy.RESPONDER).groups}
    assert set(people) == {"U_A", "U_B", ANYONE} and people["U_B"]["answered"] == 1 and people[ANYONE]["expired"] == 1
    places = compute_stats(asks, None, None, now, StatsBy.CHANNEL, {"a": "slack:C0OPS"})
    assert places.group("slack:C0OPS")["answered"] == 1 and places.group(NOT_POSTED)["expired"] == 1  # type: ignore[index]
    shown = compute_stats(asks, None, None, now, StatsBy.DAY).to_dict()
    assert shown["by"] == "day" and shown["groups"][0]["key"] == "2026-02-01" and "time_to_answer" in shown["total"]


@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=50), st.sampled_from([50, 90, 99]))
def test_a_percentile_is_a_value_with_at_least_that_share_at_or_under_it(values: list[float], rank: int) -> None:
    found = percentile(values, rank)
    assert found in values
    assert sum(value <= found for value in values) >= rank / 100 * len(values)
    assert percentile([], rank) is None


def test_age_buckets_meet_without_gaps() -> None:
    assert [age_bucket(timedelta(minutes=m)) for m in (0, 59, 60, 359, 360, 1439, 1440)] == [
        "<1h",
        "<1h",
        "1-6h",
        "1-6h",
        "6-24h",
        "6-24h",
        ">24h",
    ]
