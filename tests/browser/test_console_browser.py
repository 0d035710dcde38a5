"""The web console in a real headless Chromium against a real server (with a token).

An operator sees open asks with their phase, mismatches and age, cancels one after
confirming (it disappears, the API reports it ``cancelled``, and the chat panel says so
when it shows that conversation); a new user talks to the demo through the chat panel
and sees each reply's kind and text, the diagram in a monospace font; a second start
keeps the open question, and an empty Send with nothing parked posts nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from live_server import Server, messages_path, wait_until
from playwright.sync_api import expect

from parkgate.core.kinds import ReplyKind
from parkgate.core.phrases import CHAT_STILL_PARKED, CONSOLE_RESTART, OPERATOR_CANCELLED, PHRASES, STAND_IN_MODEL

pytestmark = pytest.mark.browser


def open_console(page: Any, server: Server, token: str) -> None:
    page.goto(server.url + "/")
    expect(page.locator("h1")).to_contain_text("parkgate")
    # Without the token the API refuses, and the page says what to do.
    expect(page.locator("#status")).to_contain_text("token")
    page.fill("#token", token)
    page.click("#token-save")


def test_the_console_lists_an_open_ask_and_the_operator_cancels_it(
    page: Any, console_server: Server, console_token: str, tmp_path: Path
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
    page.screenshot(path=str(tmp_path / "console.png"), full_page=True)

    # A cancel asks first: dismissed, nothing happens; confirmed, the ask is cancelled.
    asked: list[str] = []

    def answer(dialog: Any, accept: bool) -> None:
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, False))
    row.locator("button.cancel").click()
    expect(row.locator("button.cancel")).to_be_enabled()
    assert len(asked) == 1 and "ops-demo" in asked[0] and "Which UML diagram?" in asked[0]
    with console_server.client() as http:
        assert http.get(f"/v1/asks/{demo['ask_id']}").json()["status"] == "open"
    page.once("dialog", lambda dialog: answer(dialog, True))
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
    # The event stream stays open (the network is never idle): its state says it answered.
    expect(page.locator("#live")).to_contain_text("Live updates: on")
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
        in_thread=True,
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
        expect(item).to_contain_text("1 attempt, last:")
        item.locator("button.retry").click()
        expect(page.locator("#status")).to_contain_text("due again")
        callback = http.get(ask_url).json()["callback"]
        assert callback["status"] in ("pending", "failed") and callback["attempts"] <= 1  # re-armed: counted anew


def start_demo(page: Any, conversation: str) -> Any:
    """Start the demo in ``conversation`` from the chat panel; the chat's replies."""
    page.fill("#chat-conversation", conversation)
    page.click("#chat-start-button")
    replies = page.locator("#chat-log li.gate")
    expect(replies.last.locator(".kind")).to_have_text("asked")
    return replies


def test_a_second_start_keeps_the_open_question_and_says_how_to_leave_it(
    page: Any, console_server: Server, console_token: str
) -> None:
    open_console(page, console_server, console_token)
    replies = start_demo(page, "twice")
    page.fill("#chat-text", "nonsense")
    page.press("#chat-text", "Enter")
    expect(replies.last.locator(".kind")).to_have_text("retry")
    with console_server.client() as http:
        (first,) = [a for a in http.get("/v1/asks?status=open").json()["asks"] if a["conversation_id"] == "twice"]

    page.click("#chat-start-button")
    expect(replies.last.locator(".text")).to_have_text(CHAT_STILL_PARKED.format(restart=CONSOLE_RESTART))
    with console_server.client() as http:
        (still,) = [a for a in http.get("/v1/asks?status=open").json()["asks"] if a["conversation_id"] == "twice"]
    assert (still["ask_id"], still["mismatches"]) == (first["ask_id"], 1)  # not replaced, not reset
    page.fill("#chat-text", "/cancel")
    page.press("#chat-text", "Enter")
    expect(replies.last.locator(".kind")).to_have_text("cancelled")


def test_an_operator_cancel_from_the_list_shows_in_the_chat(
    page: Any, console_server: Server, console_token: str
) -> None:
    open_console(page, console_server, console_token)
    replies = start_demo(page, "ops-chat")
    row = page.locator('tr.ask-row:has(td.conversation:text-is("ops-chat"))')
    expect(row).to_have_count(1)
    page.once("dialog", lambda dialog: dialog.accept())
    row.locator("button.cancel").click()
    expect(row).to_have_count(0)
    expect(replies.last.locator(".kind")).to_have_text("cancelled")
    expect(replies.last.locator(".text")).to_have_text(OPERATOR_CANCELLED)
    expect(replies.last.locator(".note")).to_contain_text("by an operator")


def test_an_empty_send_with_nothing_parked_posts_nothing(page: Any, console_server: Server, console_token: str) -> None:
    open_console(page, console_server, console_token)
    page.fill("#chat-conversation", "empty-send")
    page.click("#chat-send-button")
    expect(page.locator("#status")).to_contain_text("Type a message")
    expect(page.locator("#chat-log li")).to_have_count(0)  # no "you" line, no stand-in reply
    assert STAND_IN_MODEL.split("{")[0] not in page.locator("#chat-log").inner_text()
    # With a question parked, an empty message is the person's miss: it goes through.
    replies = start_demo(page, "empty-send")
    page.click("#chat-send-button")
    expect(replies.last.locator(".kind")).to_have_text("retry")


def test_the_diagram_is_shown_in_a_monospace_font(page: Any, console_server: Server, console_token: str) -> None:
    open_console(page, console_server, console_token)
    replies = start_demo(page, "mono")
    for text in ("2", "An order has many lines"):
        count = replies.count()
        page.fill("#chat-text", text)
        page.press("#chat-text", "Enter")
        expect(replies).to_have_count(count + 1)
    diagram = replies.last.locator("pre.code")
    expect(diagram).to_have_count(1)
    expect(diagram).to_contain_text('Order "1" -- "*" Lines')
    text = diagram.inner_text()
    assert text.startswith("@startuml") and text.endswith("@enduml")
    font = diagram.evaluate("element => getComputedStyle(element).fontFamily")
    assert "monospace" in font, font
    prose = replies.last.locator(".text").evaluate("element => getComputedStyle(element).fontFamily")
    assert "monospace" not in prose  # the reply around it stays in the page's font


def test_a_wrong_token_is_told_apart_from_a_missing_one(page: Any, console_server: Server) -> None:
    page.goto(console_server.url + "/")
    expect(page.locator("#status")).to_contain_text("this server needs a token")
    page.fill("#token", "not-the-token")
    page.click("#token-save")
    expect(page.locator("#status")).to_contain_text("does not know this token")


def test_an_ask_with_reminders_shows_how_many_went_and_when_the_next_is_due(
    page: Any, console_server: Server, console_token: str
) -> None:
    with console_server.client() as http:
        body = {"conversation_id": "ops-remind", "prompt": "Deploy 1.4.2?", "ttl_seconds": 600}
        parked = http.post("/v1/asks", json={**body, "remind_after": [1, 500]}).json()

        def reminded() -> bool:
            return bool(http.get(f"/v1/asks/{parked['ask_id']}").json()["reminders_sent"] == 1)

        wait_until(reminded, 20, "the first reminder")
    open_console(page, console_server, console_token)
    row = page.locator(f'tr[data-ask-id="{parked["ask_id"]}"]')
    expect(row.locator(".schedule")).to_contain_text("1 of 2 reminders sent")
    expect(row.locator(".schedule")).to_contain_text("next due")
