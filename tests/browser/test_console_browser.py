"""The web console in a real headless Chromium against a real server (with a token).

An operator sees open asks with their phase, mismatches and age, cancels one (it
disappears, and the API reports it ``cancelled``); a new user talks to the demo
through the chat panel and sees each reply's kind and text.
"""

from __future__ import annotations

from typing import Any

import pytest
from live_server import Server, messages_path
from playwright.sync_api import expect

from parkgate.core.phrases import PHRASES, STAND_IN_MODEL, ReplyKind

pytestmark = pytest.mark.browser
SCREENSHOT = "/tmp/parkgate-console.png"


def open_console(page: Any, server: Server, token: str) -> None:
    page.goto(server.url + "/")
    expect(page.locator("h1")).to_contain_text("parkgate")
    # Without the token the API refuses, and the page says what to do.
    expect(page.locator("#status")).to_contain_text("token")
    page.fill("#token", token)
    page.click("#token-save")


def test_the_console_lists_an_open_ask_and_the_operator_cancels_it(
    page: Any, console_server: Server, console_token: str
) -> None:
    with console_server.client() as http:
        demo = http.post("/v1/workflows/uml/start", json={"conversation_id": "ops-demo"}).json()
        for text in ("a sequence one?", "no idea"):
            assert http.post(messages_path("ops-demo"), json={"text": text}).json()["kind"] == "retry"
        other = http.post(
            "/v1/asks",
            json={"conversation_id": "ops-text", "prompt": "What changed <b>here</b>?", "context": {"tool": "deploy"}},
        )
        other_id = other.json()["ask_id"]

    open_console(page, console_server, console_token)
    row = page.locator(f'tr[data-ask-id="{demo["ask_id"]}"]')
    expect(row).to_have_count(1)
    expect(row.locator("td.conversation")).to_have_text("ops-demo")
    expect(row.locator("td.phase")).to_have_text("diagram")
    expect(row.locator("td.mismatches")).to_have_text("2")
    expect(row.locator("td.hours")).to_have_text("0.00")
    expect(row.locator("td.prompt")).to_contain_text("Which UML diagram?")
    expect(row.locator("td.prompt")).to_contain_text("2. Class")
    text_row = page.locator(f'tr[data-ask-id="{other_id}"]')
    # Text from the API is shown as text, never as HTML.
    expect(text_row.locator("td.prompt")).to_contain_text("What changed <b>here</b>?")
    expect(text_row.locator(".context")).to_have_text('{"tool":"deploy"}')  # what was parked with it
    expect(page.locator("#asks-count")).to_have_text("(2)")
    page.screenshot(path=SCREENSHOT, full_page=True)

    row.locator("button.cancel").click()
    expect(row).to_have_count(0)
    expect(page.locator("#status")).to_contain_text("cancelled")
    expect(text_row).to_have_count(1)
    with console_server.client() as http:
        ask = http.get(f"/v1/asks/{demo['ask_id']}").json()
        assert (ask["status"], ask["outcome"]) == ("cancelled", "cancelled")
        assert http.get(f"/v1/asks/{other_id}").json()["status"] == "open"
        http.post(f"/v1/asks/{other_id}/cancel")
    page.click("#refresh")
    expect(page.locator("#asks-empty")).to_be_visible()


def test_the_demo_chat_panel_talks_to_the_demo(page: Any, console_server: Server, console_token: str) -> None:
    open_console(page, console_server, console_token)
    page.fill("#chat-conversation", "chat-1")
    page.click("#chat-start-button")
    replies = page.locator("#chat-log li.gate")
    expect(replies).to_have_count(1)
    expect(replies.last.locator(".kind")).to_have_text("asked")
    expect(replies.last.locator(".text")).to_contain_text("Which UML diagram?")
    expect(page.locator('tr.ask-row td.conversation:text-is("chat-1")')).to_have_count(1)

    def send(text: str, kind: str, *shown: str) -> None:
        count = replies.count()
        page.fill("#chat-text", text)
        page.press("#chat-text", "Enter")
        expect(replies).to_have_count(count + 1)
        expect(replies.last.locator(".kind")).to_have_text(kind)
        for part in shown:
            expect(replies.last.locator(".text")).to_contain_text(part)

    send("the big one", "retry", "did not match")
    send("menu", "reshown", "1. Sequence")
    send("2", "selected", "Class", "Describe the Class diagram")
    expect(page.locator('tr.ask-row:has(td.conversation:text-is("chat-1")) td.phase')).to_have_text("describe")
    send("Orders have many lines", "answered", "@startuml", "Orders have many lines")
    expect(page.locator('tr.ask-row td.conversation:text-is("chat-1")')).to_have_count(0)
    send("thanks!", "pass", STAND_IN_MODEL.format(text="thanks!"))
    # and the way out works from the panel too
    page.click("#chat-start-button")
    expect(replies.last.locator(".kind")).to_have_text("asked")
    send("/cancel", "cancelled", PHRASES[ReplyKind.CANCELLED])
    expect(page.locator("#chat-log li.you")).to_have_count(8)


@pytest.mark.parametrize("path", ["/", "/console/index.html"])
def test_the_console_loads_with_no_browser_errors(
    page: Any, console_server: Server, console_token: str, path: str
) -> None:
    """No console error, no uncaught exception, no failed or 4xx/5xx request (favicon included)."""
    problems: list[str] = []
    page.on("console", lambda message: message.type == "error" and problems.append(f"console: {message.text}"))
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("requestfailed", lambda request: problems.append(f"failed: {request.url} {request.failure}"))
    page.on(
        "response", lambda response: response.status >= 400 and problems.append(f"{response.status} {response.url}")
    )
    # The operator's token is already in this tab, as after "Use token": every API call is authorised.
    page.add_init_script(f"sessionStorage.setItem('parkgate.token', {console_token!r})")
    with console_server.client() as http:
        http.post("/v1/asks", json={"conversation_id": f"clean{path}", "prompt": "Clean?", "options": ["Yes"]})
    page.goto(console_server.url + path)
    expect(page.locator(f'tr.ask-row td.conversation:text-is("clean{path}")')).to_have_count(1)
    page.click("#refresh")
    page.fill("#chat-conversation", f"clean-chat{path}")
    page.click("#chat-start-button")
    expect(page.locator("#chat-log li.gate .kind").last).to_have_text("asked")
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(500)  # the favicon is fetched after load
    assert problems == []


def test_a_failed_callback_shows_in_the_console_and_the_operator_retries_it(
    page: Any, tmp_path: Any, console_token: str
) -> None:
    from live_server import free_port, running, wait_until

    nobody = free_port()  # nothing listens there: every attempt is refused
    server = Server(
        f"sqlite:///{tmp_path / 'parkgate.db'}",
        tmp_path / "server.log",
        token=console_token,
        extra_env={"PARKGATE_CALLBACK_ALLOW": "127.0.0.1", "PARKGATE_CALLBACK_MAX_ATTEMPTS": "1"},
    )
    with running(server.start()), server.client() as http:
        body = {"conversation_id": "hooked", "prompt": "Ship?", "options": ["Yes", "No"]}
        parked = http.post("/v1/asks", json={**body, "callback_url": f"http://127.0.0.1:{nobody}/hook"}).json()
        http.post(messages_path("hooked"), json={"text": "1"})
        ask_url = f"/v1/asks/{parked['ask_id']}"
        wait_until(lambda: http.get(ask_url).json()["callback"]["status"] == "failed", 30, "the callback to fail")

        open_console(page, server, console_token)
        item = page.locator(f'li.failed-callback[data-ask-id="{parked["ask_id"]}"]')
        expect(item).to_contain_text("hooked")
        expect(item).to_contain_text("1 attempts")
        item.locator("button.retry").click()
        expect(page.locator("#status")).to_contain_text("due again")
        callback = http.get(ask_url).json()["callback"]
        assert callback["status"] in ("pending", "failed") and callback["attempts"] <= 1  # re-armed: counted anew
