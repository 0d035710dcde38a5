"""An email's link followed in Chromium (the system Chromium under Playwright) through a
live server on both stores, with aiosmtpd as the SMTP server: the page shows the question
and the choice, loads nothing from another origin and breaks no rule of its policy, and
its button answers the ask. The screenshots of the email and of the page are the ones
docs/channels/email.md shows (written by the SQLite run)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from email_setup import ALICE, email_server, park
from live_server import Server, browser_page, chromium
from smtp_server import SmtpServer

from parkgate import ManualClock

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "channels" / "images"
Factory = Any


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    running = SmtpServer().start()
    yield running
    running.stop()


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_link_followed_in_chromium_and_confirmed_answers_the_ask(
    engine: str, browser: Any, smtp: SmtpServer, store_url_factory: Factory, tmp_path: Path
) -> None:
    server: Server = email_server(store_url_factory(engine), tmp_path, smtp, ManualClock()).start()
    try:
        with server.client() as client, browser_page(browser, width=900, height=640) as page:
            ask_id = park(client, "deploy-browser", [ALICE], responders=[ALICE])
            (sent,) = smtp.wait_for(1)

            # The email as a mail client shows its HTML part.
            page.set_content(sent.html)
            assert page.get_by_role("link", name="1. Deploy").get_attribute("href") == sent.links[0]
            if engine == "sqlite":
                page.screenshot(path=str(IMAGES / "email-message.png"), full_page=True)

            requests: list[str] = []
            problems: list[str] = []
            page.on("request", lambda request: requests.append(request.url))
            page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
            page.goto(sent.links[0])
            assert page.locator("#choice").inner_text() == "Deploy"
            assert page.locator(".question").inner_text() == "Deploy to production?"
            # The console's style sheet applies (its accent on the button), from this origin only.
            color = page.locator("#confirm").evaluate("button => getComputedStyle(button).backgroundColor")
            assert color == "rgb(47, 91, 211)"
            assert requests and all(url.startswith(server.url + "/") for url in requests), requests
            if engine == "sqlite":
                page.screenshot(path=str(IMAGES / "email-confirm.png"), full_page=True)
            assert client.get(f"/v1/asks/{ask_id}").json()["status"] == "open"  # opening it recorded nothing

            page.locator("#confirm").click()
            page.locator("#outcome").wait_for()
            assert page.locator("#outcome").inner_text() == "Selected 1. Deploy"
            assert problems == []
            ask = client.get(f"/v1/asks/{ask_id}").json()
            assert (ask["status"], ask["answer"], ask["answered_by"]) == ("answered", "Deploy", ALICE)
    finally:
        server.stop()
    for name in ("email-message.png", "email-confirm.png"):
        assert (IMAGES / name).read_bytes().startswith(b"\x89PNG")
