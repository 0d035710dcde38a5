"""``GET /v1/stats`` against the event log, through a live server: every figure equals the
one a reader computes from the asks' timelines (``GET /v1/asks/{id}/events``) alone. The
server reads a :class:`~parkgate.ManualClock` the test moves."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from live_server import messages_path, wait_until

from parkgate import ManualClock
from parkgate.core.stats import percentile
from parkgate.store.signal import FALLBACK_READ_SECONDS

TICK = 0.001


def from_events(timelines: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """The figures of a window holding every event, computed from the timelines alone."""

    def closed(timeline: list[dict[str, Any]], status: str) -> bool:
        return any(e["type"] == "closed" and e["data"]["status"] == status for e in timeline)

    def moment(event: dict[str, Any]) -> datetime:
        return datetime.fromisoformat(event["at"])

    answered = [t for t in timelines if closed(t, "answered")]
    waits = sorted(
        (moment(next(e for e in t if e["type"] == "closed")) - moment(t[0])).total_seconds() for t in answered
    )
    misses = [sum(e["type"] == "touched" and e["data"]["kind"] in ("retry", "escalated") for e in t) for t in timelines]
    return {
        "opened": sum(t[0]["type"] == "parked" for t in timelines),
        "answered": len(answered),
        "expired": sum(closed(t, "expired") for t in timelines),
        "cancelled": sum(closed(t, "cancelled") for t in timelines),
        "time_to_answer": {
            "p50": percentile(waits, 50),
            "p90": percentile(waits, 90),
            "p99": percentile(waits, 99),
            "count": len(waits),
        },
        "reminders": sum(e["type"] == "reminded" for t in timelines for e in t),
        "escalations": sum(e["type"] == "escalated" for t in timelines for e in t),
        "misses_per_ask": sum(misses) / len(timelines),
        "open": sum(not any(e["type"] == "closed" for e in t) for t in timelines),
    }


def test_the_stats_equal_what_the_event_log_says(database: Any, start_server: Any, conv: str) -> None:
    clock = ManualClock(datetime.now(UTC))
    server = start_server(database, clock=clock)
    with server.client() as client:

        def park(name: str, **fields: Any) -> str:
            body = {"conversation_id": f"{conv}-{name}", "prompt": f"{name}?", "options": ["Yes", "No"], **fields}
            parked = client.post("/v1/asks", json=body)
            assert parked.status_code == 201, parked.text
            return str(parked.json()["ask_id"])

        def say(name: str, text: str, sender: str | None = None) -> str:
            body = {"text": text} if sender is None else {"text": text, "sender": sender}
            return str(client.post(messages_path(f"{conv}-{name}"), json=body).json()["kind"])

        def timeline(ask_id: str) -> list[dict[str, Any]]:
            events: list[dict[str, Any]] = client.get(f"/v1/asks/{ask_id}/events").json()["events"]
            return events

        quick = park("quick")
        slow = park("slow")
        lapsing = park("lapsing", ttl_seconds=100, remind_after=10)
        dropped = park("dropped")
        voted = park("voted", responders=["U_A", "U_B"], quorum=2, escalate_after=20, escalate_to=["U_C"])
        waiting = park("waiting")
        assert say("quick", "maybe") == "retry"
        assert say("waiting", "hm") == "retry"
        clock.advance(5)
        assert say("quick", "yes") == "selected"  # after a miss: misses survive the answer
        clock.advance(5 + TICK)
        wait_until(lambda: timeline(lapsing)[-1]["type"] == "reminded", FALLBACK_READ_SECONDS, "the reminder")
        assert client.post(f"/v1/asks/{dropped}/cancel").status_code == 200
        clock.advance(10)
        wait_until(lambda: timeline(voted)[-1]["type"] == "escalated", FALLBACK_READ_SECONDS, "the escalation")
        assert (say("voted", "1", "U_A"), say("voted", "1", "U_C")) == ("voted", "selected")
        clock.advance(40)
        assert (say("slow", "nope?"), say("slow", "no")) == ("retry", "selected")
        clock.advance(60)
        wait_until(lambda: timeline(lapsing)[-1]["type"] == "closed", FALLBACK_READ_SECONDS, "the expiry")

        stats = client.get("/v1/stats").json()
        timelines = [timeline(ask_id) for ask_id in (quick, slow, lapsing, dropped, voted, waiting)]

    expected = from_events(timelines)
    total = stats["total"]
    assert {key: total[key] for key in expected if key != "open"} == {k: v for k, v in expected.items() if k != "open"}
    assert sum(total["open_by_age"].values()) == expected["open"] == 1
    assert (total["answered"], total["expired"], total["cancelled"], total["reminders"]) == (3, 1, 1, 1)
