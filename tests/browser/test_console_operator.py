"""The console as an operator's tool, in a real Chromium against a real server, at a
laptop's 1280 px and a phone's 390 px: History with its filters and cursor paging, an
ask's page with its timeline, Charts drawn from ``GET /v1/stats``, a live event arriving
without a reload, and a bulk cancel that asks first. Every request the page makes stays
on the server's origin, and nothing scrolls sideways or cuts a button's label.

The history server's clock is a :class:`~parkgate.ManualClock` moved through three days
of asks (answered after a vote, expired, cancelled, reminded and escalated), so its
pages and charts are the same on every run. With ``PARKGATE_UPDATE_SCREENSHOTS=1`` the
History, ask page and Charts screenshots are written to ``docs/images/`` (the console's
docs page shows them); otherwise under the test output folder.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from live_server import Server, messages_path, running, wait_until
from playwright.sync_api import expect
from test_console_layout import MEASURE

from parkgate.clock import ManualClock

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SHOTS = (
    ROOT / "docs" / "images"
    if os.environ.get("PARKGATE_UPDATE_SCREENSHOTS") == "1"
    else Path(os.environ.get("PARKGATE_TEST_OUTPUT") or ROOT / "test-output") / "browser"
)
WIDTHS = [pytest.param(1280, 800, id="1280"), pytest.param(390, 844, id="390")]
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
#: The charts' window: the three days of the seeded history.
WINDOW = "since=2026-03-02T00:00:00Z&until=2026-03-05T00:00:00Z"
TEAM = ["U_ALICE", "U_BOB", "U_CAROL"]


@contextlib.contextmanager
def console(browser: Any, server: Server, token: str, width: int, height: int) -> Iterator[Any]:
    """A page on ``server``'s console with ``token`` in its tab, in UTC and British English
    (the same dates on every machine); on the way out, every request it made is checked to
    have stayed on the server's origin."""
    context = browser.new_context(viewport={"width": width, "height": height}, timezone_id="UTC", locale="en-GB")
    context.set_default_timeout(20_000)
    context.add_init_script(f"sessionStorage.setItem('parkgate.token', {token!r})")
    requested: list[str] = []
    context.on("request", lambda request: requested.append(request.url))
    try:
        yield context.new_page()
    finally:
        context.close()
    elsewhere = [url for url in requested if not (url.startswith(server.url + "/") or url.startswith("data:"))]
    assert requested and elsewhere == []


def keep(page: Any, name: str, width: int) -> None:
    """The view's screenshot as ``console-<name>-<width>.png`` (see the module docstring)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"console-{name}-{width}.png"), full_page=True)


def laid_out(page: Any) -> None:
    """Nothing scrolls sideways, and no button label or title is cut or wraps."""
    assert page.evaluate(MEASURE) == []


def shown_ids(page: Any, rows: str) -> list[str]:
    """The asks the rows show, read in one go (a redraw meanwhile cannot mix two lists)."""
    return list(page.locator(rows).evaluate_all("rows => rows.map((row) => row.dataset.askId)"))


def listed(http: Any, **params: Any) -> list[str]:
    """The ids ``GET /v1/asks`` lists for ``params`` (every page)."""
    ids: list[str] = []
    cursor = None
    while True:
        page = http.get("/v1/asks", params={**params, **({"cursor": cursor} if cursor else {})}).json()
        ids += [ask["ask_id"] for ask in page["asks"]]
        cursor = page["next"]
        if not cursor:
            return ids


def seed(server: Server, clock: ManualClock) -> dict[str, str]:
    """Three days of asks; their ids by conversation."""
    ids: dict[str, str] = {}
    with server.client() as http:

        def park(conversation: str, prompt: str, **body: Any) -> None:
            reply = http.post("/v1/asks", json={"conversation_id": conversation, "prompt": prompt, **body})
            assert reply.status_code == 201, reply.text
            ids[conversation] = reply.json()["ask_id"]

        def say(conversation: str, text: str, sender: str | None = None) -> str:
            body = {"text": text, **({"sender": sender} if sender else {})}
            return str(http.post(messages_path(conversation), json=body).json()["kind"])

        def ask_of(conversation: str) -> dict[str, Any]:
            return dict(http.get(f"/v1/asks/{ids[conversation]}").json())

        # Day 1: a vote of two, reminded and escalated on the way; an expiry; a text answer.
        park(
            "deploy-42",
            "Deploy build 42 to production?",
            options=["Deploy", "Hold"],
            responders=TEAM,
            quorum=2,
            ttl_seconds=6 * 3600,
            remind_after=[300],
            escalate_after=600,
            escalate_to=["U_DAVE"],
        )
        park("db-restart", "Restart the primary database?", options=["Yes", "No"], ttl_seconds=3600)
        park("release-notes", "What goes in the release notes?", ttl_seconds=4 * 3600)
        clock.advance(timedelta(minutes=1))
        assert say("deploy-42", "1", "U_MALLORY") == "not_yours"
        clock.advance(timedelta(minutes=1))
        assert say("deploy-42", "ship it?", "U_ALICE") == "retry"
        clock.advance(timedelta(minutes=5, seconds=1))
        wait_until(lambda: ask_of("deploy-42")["reminders_sent"] == 1, 20, "the reminder")
        clock.advance(timedelta(minutes=5))
        wait_until(lambda: ask_of("deploy-42")["escalated_at"] is not None, 20, "the escalation")
        clock.advance(timedelta(minutes=1))
        assert say("deploy-42", "1", "U_ALICE") == "voted"
        clock.advance(timedelta(minutes=2))
        assert say("deploy-42", "1", "U_DAVE") == "selected"
        clock.advance(timedelta(minutes=16))
        assert say("release-notes", "Faster parks and the new console", "U_CAROL") == "answered"
        clock.advance(timedelta(hours=2))  # db-restart lapses at 10:00
        assert ask_of("db-restart")["status"] == "expired"

        # Day 2: two expiries, an operator's cancel, an answer after 45 minutes.
        clock.set(START + timedelta(days=1))
        park("cache-flush", "Flush the CDN cache?", options=["Flush", "Skip"], ttl_seconds=1800)
        park("rotate-keys", "Rotate the signing keys now?", options=["Rotate", "Wait"], ttl_seconds=1800)
        park("vacuum", "Vacuum the events table tonight?", options=["Yes", "No"])
        park("scale-up", "Scale the workers to 12?", options=["Scale", "Keep"], responders=["U_BOB"])
        clock.advance(timedelta(minutes=45))
        assert say("scale-up", "Scale", "U_BOB") == "selected"
        assert http.post(f"/v1/asks/{ids['vacuum']}/cancel").json()["status"] == "cancelled"
        clock.advance(timedelta(hours=1))
        assert ask_of("cache-flush")["status"] == ask_of("rotate-keys")["status"] == "expired"

        # Day 3: a quick answer, an expiry, and two asks still open (3 h and 20 min old).
        clock.set(START + timedelta(days=2))
        park("release-1", "Tag release 1.5.0?", options=["Tag", "Wait"], responders=["U_ALICE"])
        park("flag-off", "Turn the beta flag off?", options=["Off", "Keep"], ttl_seconds=600)
        park("open-migration", "Run migration 22 on the replica?", options=["Run", "Later"], ttl_seconds=86400)
        clock.advance(timedelta(minutes=2))
        assert say("release-1", "1", "U_ALICE") == "selected"
        clock.advance(timedelta(hours=2, minutes=40))
        park("open-invoice", "Approve invoice 1187 (EUR 4,200)?", options=["Approve", "Reject"], ttl_seconds=86400)
        clock.advance(timedelta(minutes=20))
        assert ask_of("flag-off")["status"] == "expired"
    return ids


@pytest.fixture(scope="module")
def history_server(
    tmp_path_factory: pytest.TempPathFactory, console_token: str
) -> Iterator[tuple[Server, dict[str, str]]]:
    """A server with three days of history (its clock stopped at day 3, 12:00 UTC)."""
    folder = tmp_path_factory.mktemp("operator")
    clock = ManualClock(START)
    server = Server(
        f"sqlite:///{folder / 'parkgate.db'}", folder / "server.log", token=console_token, in_thread=True, clock=clock
    )
    with running(server.start()):
        yield server, seed(server, clock)


@pytest.fixture
def fresh_server(tmp_path: Path, console_token: str) -> Iterator[Server]:
    """A server of the test's own (real time), for what changes asks."""
    server = Server(
        f"sqlite:///{tmp_path / 'parkgate.db'}", tmp_path / "server.log", token=console_token, in_thread=True
    )
    with running(server.start()):
        yield server


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_history_filters_and_pages_what_the_api_lists(
    browser: Any, history_server: tuple[Server, dict[str, str]], console_token: str, width: int, height: int
) -> None:
    server, ids = history_server
    with console(browser, server, console_token, width, height) as page, server.client() as http:
        asked: list[str] = []
        page.on("request", lambda request: "/v1/asks?" in request.url and asked.append(request.url))
        page.goto(server.url + "/")
        page.click("#nav-history")
        expect(page.locator("#nav-history")).to_have_attribute("aria-current", "page")
        rows = "#history-body tr.history-row"
        closed = listed(http, status="closed")
        assert len(closed) == 9
        expect(page.locator(rows)).to_have_count(len(closed))
        assert shown_ids(page, rows) == closed  # newest first, as the API lists them
        keep(page, "history", width)
        laid_out(page)

        def search(expected: list[str], **fields: str) -> None:
            """Fill every filter (those not given blank), press Enter: the rows are ``expected``."""
            page.select_option("#f-status", fields.get("status", "closed"))
            for name in ("since", "until", "conversation", "responder", "channel", "outcome", "q"):
                page.fill(f"#f-{name}", fields.get(name, ""))
            with page.expect_response(lambda response: "/v1/asks?" in response.url):
                page.press("#f-q", "Enter")  # Enter in a field searches
            wait_until(lambda: shown_ids(page, rows) == expected, 10, f"the rows of {fields}")
            expect(page.locator("#history-empty")).to_be_visible(visible=not expected)

        search(listed(http, status="expired"), status="expired")
        assert {page.locator(rows).nth(n).get_attribute("data-status") for n in range(4)} == {"expired"}
        assert "status=expired" in asked[-1]
        search([ids["rotate-keys"]], status="all", q="signing keys")
        assert "q=signing+keys" in asked[-1]
        search(listed(http, status="all", responder="U_BOB"), status="all", responder="U_BOB")
        assert sorted(listed(http, status="all", responder="U_BOB")) == sorted([ids["deploy-42"], ids["scale-up"]])
        search([ids["release-notes"]], conversation="release-notes")
        assert listed(http, status="all", outcome="cancelled") == [ids["vacuum"]]
        search([ids["vacuum"]], status="all", outcome="cancelled")
        search(listed(http, status="answered", outcome="selected"), status="answered", outcome="selected")
        # Day 2's expiries: the form's local moments (this page is in UTC) sent with their zone.
        day_two = listed(http, status="expired", since="2026-03-03T00:00:00Z", until="2026-03-04T00:00:00Z")
        assert sorted(day_two) == sorted([ids["rotate-keys"], ids["cache-flush"]])
        search(day_two, status="expired", since="2026-03-03T00:00", until="2026-03-04T00:00")
        assert "since=2026-03-03T00%3A00%3A00.000Z" in asked[-1] and "until=2026-03-04T00%3A00%3A00.000Z" in asked[-1]
        search([], status="all", channel="slack:C0NOWHERE")
        assert "channel=slack%3AC0NOWHERE" in asked[-1]
        page.click("#history-reset")  # every filter cleared: the closed asks again
        expect(page).to_have_url(re.compile(r"#/history$"))
        expect(page.locator("#f-q")).to_have_value("")
        expect(page.locator(rows)).to_have_count(len(closed))

        # Cursor paging, three a page (a bookmark may set the page's size): next, next, previous.
        everything = listed(http, status="all")
        assert len(everything) == 11

        def showing(page_number: int, ids_: list[str]) -> None:
            wait_until(lambda: shown_ids(page, rows) == ids_, 10, f"page {page_number}")
            expect(page.locator("#history-page")).to_have_text(f"Page {page_number}")

        page.goto(server.url + "/#/history?status=all&limit=3")
        showing(1, everything[:3])
        expect(page.locator("#history-previous")).to_be_disabled()
        page.click("#history-next")
        showing(2, everything[3:6])
        assert "cursor=" in asked[-1]
        page.focus("#history-next")
        page.keyboard.press("Enter")  # the keyboard pages too
        showing(3, everything[6:9])
        page.click("#history-previous")
        showing(2, everything[3:6])
        page.click("#history-next")
        showing(3, everything[6:9])
        page.click("#history-next")
        showing(4, everything[9:])
        expect(page.locator("#history-next")).to_be_disabled()
        laid_out(page)


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_an_asks_page_shows_its_timeline_who_what_and_when(
    browser: Any, history_server: tuple[Server, dict[str, str]], console_token: str, width: int, height: int
) -> None:
    server, ids = history_server
    with console(browser, server, console_token, width, height) as page, server.client() as http:
        page.goto(server.url + "/#/history?conversation_id=deploy-42")
        page.locator("#history-body a.ask-link").first.click()  # from History to the ask's page
        expect(page).to_have_url(re.compile("#/ask/" + ids["deploy-42"]))
        expect(page.locator("#ask-title")).to_have_text("Ask in deploy-42")
        expect(page.locator("#ask-title")).to_be_focused()  # the keyboard starts at the page's heading
        expect(page.locator('#ask-facts dd[data-fact="Status"]')).to_have_text("answered")
        expect(page.locator('#ask-facts dd[data-fact="Closed"]')).to_have_text("answered by U_DAVE")
        expect(page.locator('#ask-facts dd[data-fact="Time to answer"]')).to_have_text("15.0 min")
        events = http.get(f"/v1/asks/{ids['deploy-42']}/events").json()["events"]
        items = page.locator("#timeline li.event")
        expect(items).to_have_count(len(events))
        assert [item.get_attribute("data-type") for item in items.all()] == [event["type"] for event in events]
        types = [event["type"] for event in events]
        assert types[0] == "parked" and types[-1] == "closed"
        for kind in ("refused", "reminded", "escalated", "voted"):
            assert kind in types, types
        voted = page.locator('#timeline li[data-type="voted"]')
        expect(voted.first.locator(".sender")).to_have_text("U_ALICE")
        expect(voted.first.locator(".what")).to_contain_text("voted 1. Deploy")
        expect(page.locator('#timeline li[data-type="refused"] .sender')).to_have_text("U_MALLORY")
        expect(page.locator('#timeline li[data-type="escalated"] .what')).to_contain_text("to U_DAVE")
        expect(page.locator('#timeline li[data-type="parked"] time')).to_have_attribute("datetime", events[0]["at"])
        expect(page.locator('#timeline li[data-type="parked"] time')).to_have_text("02/03/2026, 09:00:00")
        expect(page.locator("#ask-cancel")).to_be_hidden()  # closed: nothing to cancel
        keep(page, "ask", width)
        laid_out(page)
        page.go_back()  # Back returns to the filtered History
        expect(page).to_have_url(re.compile(r"#/history\?conversation_id=deploy-42$"))
        expect(page.locator("#history-body tr.history-row")).to_have_count(1)


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_charts_draw_the_stats_figures_as_svg(
    browser: Any, history_server: tuple[Server, dict[str, str]], console_token: str, width: int, height: int
) -> None:
    server, _ = history_server
    with server.client() as http:
        stats = {by: http.get(f"/v1/stats?{WINDOW}&by={by}").json() for by in ("day", "responder", "channel")}
    days = stats["day"]["groups"]
    assert [day["key"] for day in days] == ["2026-03-02", "2026-03-03", "2026-03-04"]
    assert [day["expired"] for day in days] == [1, 2, 1]
    with console(browser, server, console_token, width, height) as page:
        page.goto(server.url + f"/#/charts?{WINDOW}")
        expect(page.locator("#c-since")).to_have_value("2026-03-02T00:00")
        expired = page.locator("#chart-expired svg rect.bar")
        expect(expired).to_have_count(3)
        assert [bar.get_attribute("data-value") for bar in expired.all()] == ["1", "2", "1"]
        heights = [float(bar.get_attribute("height") or 0) for bar in expired.all()]
        assert heights[1] > heights[0] == heights[2] > 0  # two expiries draw twice as tall as one
        expect(page.locator("#chart-time svg rect.bar")).to_have_count(3)  # p50, p90, p99
        p50 = stats["day"]["total"]["time_to_answer"]["p50"]
        assert float(page.locator('#chart-time rect.bar[data-key="p50"]').get_attribute("data-value") or "nan") == p50
        answered_days = [day for day in days if day["time_to_answer"]["p50"] is not None]
        expect(page.locator("#chart-time-day svg circle.point")).to_have_count(len(answered_days))
        ages = page.locator("#chart-age svg rect.bar")
        expect(ages).to_have_count(4)
        assert [bar.get_attribute("data-value") for bar in ages.all()] == ["1", "1", "0", "0"]  # 20 min and 3 h old
        responders = stats["responder"]["groups"]
        expect(page.locator("#chart-responders svg rect.bar")).to_have_count(len(responders))
        assert {"U_ALICE", "U_BOB", "U_DAVE"} <= {group["key"] for group in responders}
        expect(page.locator("#chart-channels svg rect.bar")).to_have_count(len(stats["channel"]["groups"]))
        expect(page.locator("#chart-expired svg")).to_have_attribute("role", "img")
        expect(page.locator("#chart-expired svg desc")).to_have_text("03-02: 1; 03-03: 2; 03-04: 1")
        expect(page.locator("#charts-total")).to_contain_text("4 expired")
        svg_width = page.locator("#chart-expired svg").evaluate("svg => svg.getBoundingClientRect().width")
        assert svg_width <= width  # drawn at the page's width: readable text, no sideways scroll
        keep(page, "charts", width)
        laid_out(page)
        # A new window, chosen in the form, draws again: day 2 alone.
        page.fill("#c-since", "2026-03-03T00:00")
        page.fill("#c-until", "2026-03-04T00:00")
        page.click("#charts-show")
        expect(page.locator("#chart-expired svg rect.bar")).to_have_count(1)
        expect(page.locator("#chart-expired svg rect.bar")).to_have_attribute("data-value", "2")


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_a_live_event_updates_the_open_list_and_the_asks_page_without_a_reload(
    browser: Any, fresh_server: Server, console_token: str, width: int, height: int
) -> None:
    with console(browser, fresh_server, console_token, width, height) as page, fresh_server.client() as http:
        page.goto(fresh_server.url + "/")
        expect(page.locator("#live")).to_have_text("Live updates: on")
        page.evaluate("window.notReloaded = true")
        ask = http.post(
            "/v1/asks", json={"conversation_id": "live-1", "prompt": "Go?", "options": ["Go", "Stop"]}
        ).json()
        row = page.locator(f'tr.ask-row[data-ask-id="{ask["ask_id"]}"]')
        expect(row).to_have_count(1)  # the parked event brought it, not a poll (none runs while live)
        expect(page.locator("#live")).to_contain_text("1 event")
        row.locator("a.ask-link").click()
        expect(page.locator("#timeline li.event")).to_have_count(1)
        assert http.post(messages_path("live-1"), json={"text": "maybe", "sender": "U_EVE"}).json()["kind"] == "retry"
        fresh = page.locator('#timeline li.event.fresh[data-type="touched"]')
        expect(fresh).to_have_count(1)
        expect(fresh.locator(".sender")).to_have_text("U_EVE")
        expect(fresh.locator(".what")).to_contain_text("retry")
        assert http.post(messages_path("live-1"), json={"text": "2"}).json()["kind"] == "selected"
        expect(page.locator('#timeline li.event.fresh[data-type="closed"]')).to_have_count(1)
        expect(page.locator('#ask-facts dd[data-fact="Status"]')).to_have_text("answered")
        assert page.evaluate("window.notReloaded") is True


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_a_bulk_cancel_asks_first_and_cancels_only_the_selected_asks(
    browser: Any, fresh_server: Server, console_token: str, width: int, height: int
) -> None:
    with fresh_server.client() as http:
        parked = {
            name: http.post(
                "/v1/asks", json={"conversation_id": name, "prompt": f"{name}?", "options": ["Yes", "No"]}
            ).json()
            for name in ("bulk-a", "bulk-b", "bulk-c")
        }
    with console(browser, fresh_server, console_token, width, height) as page:
        page.goto(fresh_server.url + "/")
        row = {name: page.locator(f'tr.ask-row[data-ask-id="{ask["ask_id"]}"]') for name, ask in parked.items()}
        expect(row["bulk-c"]).to_have_count(1)
        expect(page.locator("#cancel-selected")).to_be_disabled()
        for name in ("bulk-a", "bulk-c"):  # chosen with the keyboard: focus, Space
            row[name].locator("input.pick").focus()
            page.keyboard.press("Space")
            expect(row[name].locator("input.pick")).to_be_checked()
        expect(page.locator("#cancel-selected")).to_have_text("Cancel selected (2)")
        page.focus("#cancel-selected")
        page.keyboard.press("Enter")
        dialog = page.locator("#confirm")
        expect(dialog).to_be_visible()
        expect(page.locator("#confirm-title")).to_have_text("Cancel these 2 asks?")
        expect(page.locator("#confirm-list li")).to_have_text(["bulk-a: bulk-a?", "bulk-c: bulk-c?"])
        expect(page.locator("#confirm-keep")).to_be_focused()  # the safe choice has the focus
        laid_out(page)
        page.keyboard.press("Escape")  # dismissed: nothing happens
        expect(dialog).to_be_hidden()
        expect(page.locator("#status")).to_have_text("Nothing was cancelled.")
        with fresh_server.client() as http:
            assert {name: http.get(f"/v1/asks/{ask['ask_id']}").json()["status"] for name, ask in parked.items()} == {
                "bulk-a": "open", "bulk-b": "open", "bulk-c": "open"}  # fmt: skip
        page.click("#cancel-selected")
        expect(page.locator("#confirm-cancel")).to_have_text("Cancel 2 asks")
        page.click("#confirm-cancel")
        expect(page.locator("#status")).to_have_text("Cancelled 2 asks.")
        expect(row["bulk-a"]).to_have_count(0)
        expect(row["bulk-c"]).to_have_count(0)
        expect(row["bulk-b"]).to_have_count(1)
        expect(page.locator("#cancel-selected")).to_be_disabled()
        with fresh_server.client() as http:
            statuses = {name: http.get(f"/v1/asks/{ask['ask_id']}").json() for name, ask in parked.items()}
        assert {name: ask["status"] for name, ask in statuses.items()} == {
            "bulk-a": "cancelled", "bulk-b": "open", "bulk-c": "cancelled"}  # fmt: skip
        assert statuses["bulk-a"]["closed_by"] == "operator"
