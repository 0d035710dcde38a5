"""The console's layout in Chromium at a laptop's 1280 px and a phone's 390 px: no button
label wraps or is cut, no heading or column title is cut short or broken inside a word, a
long prompt wraps with every line shown, and nothing scrolls the page sideways. Each
width's screenshot is kept under the test output folder (``PARKGATE_TEST_OUTPUT``, else
``test-output/`` at the repository's root) as ``browser/console-<width>.png``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from live_server import Server, browser_page, free_port, messages_path, running, wait_until
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

OUTPUT = Path(os.environ.get("PARKGATE_TEST_OUTPUT") or Path(__file__).resolve().parents[2] / "test-output") / "browser"
LONG_PROMPT = "\n".join(
    f"Step {n}: check the rollout of release 1.4.{n} across every region before going on." for n in range(1, 31)
)

#: The layout's problems, as the page measures them (an empty list: none).
MEASURE = """() => {
  const problems = [];
  const shown = (el) => el.getClientRects().length > 0;
  const lines = (el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    return new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
  };
  for (const button of document.querySelectorAll("button")) {
    if (!shown(button)) continue;
    if (lines(button) > 1) problems.push("button label wraps: " + button.textContent);
    if (button.scrollWidth > button.clientWidth + 1) problems.push("button label cut: " + button.textContent);
  }
  for (const title of document.querySelectorAll("h1, h2, th")) {
    if (!shown(title) || !title.textContent.trim()) continue;
    if (title.scrollWidth > title.clientWidth + 1) problems.push("title cut: " + title.textContent);
    const words = title.textContent.trim().split(/\\s+/).length;
    if (lines(title) > words) problems.push("title broken inside a word: " + title.textContent);
  }
  for (const prompt of document.querySelectorAll(".prompt-text")) {
    if (!shown(prompt)) continue;
    if (prompt.scrollHeight > prompt.clientHeight + 1 || prompt.scrollWidth > prompt.clientWidth + 1)
      problems.push("prompt clipped: " + prompt.textContent.slice(0, 40));
  }
  if (document.documentElement.scrollWidth > window.innerWidth) problems.push("the page scrolls sideways");
  return problems;
}"""


@pytest.fixture(scope="module")
def busy_console(tmp_path_factory: pytest.TempPathFactory, console_token: str) -> Iterator[Server]:
    """A server whose console shows every kind of row: a long prompt, a choice with long
    labels, a long conversation id, and a failed callback."""
    folder = tmp_path_factory.mktemp("layout")
    server = Server(
        f"sqlite:///{folder / 'parkgate.db'}",
        folder / "server.log",
        token=console_token,
        extra_env={"PARKGATE_CALLBACK_ALLOW": "127.0.0.1", "PARKGATE_CALLBACK_MAX_ATTEMPTS": "1"},
        in_thread=True,
    )
    with running(server.start()), server.client() as http:
        http.post("/v1/workflows/uml/start", json={"conversation_id": "ops-demo"})
        http.post("/v1/asks", json={"conversation_id": "release-train", "prompt": LONG_PROMPT})
        labels = ["Deploy to every production region now", "Hold the release until Monday", "Roll back"]
        http.post(
            "/v1/asks",
            json={"conversation_id": "slack:T0123/C0456/1712345678.000100", "prompt": "Ship?", "options": labels},
        )
        hook = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens: the callback fails
        parked = http.post(
            "/v1/asks", json={"conversation_id": "hooked", "prompt": "Ok?", "options": ["Yes"], "callback_url": hook}
        ).json()
        http.post(messages_path("hooked"), json={"text": "1"})
        wait_until(
            lambda: http.get(f"/v1/asks/{parked['ask_id']}").json()["callback"]["status"] == "failed",
            30,
            "the failed callback",
        )
        yield server


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_no_button_label_wraps_and_nothing_is_cut(
    browser: Any, busy_console: Server, console_token: str, width: int, height: int
) -> None:
    with browser_page(browser, width, height) as page:
        page.add_init_script(f"sessionStorage.setItem('parkgate.token', {console_token!r})")
        page.goto(busy_console.url + "/")
        expect(page.locator('tr.ask-row td.conversation:text-is("release-train")')).to_have_count(1)
        expect(page.locator("li.failed-callback")).to_contain_text("1 attempt, last:")
        page.fill("#chat-conversation", f"layout-{width}")
        page.click("#chat-start-button")
        expect(page.locator("#chat-log li.gate .kind").last).to_have_text("asked")
        OUTPUT.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(OUTPUT / f"console-{width}.png"), full_page=True)
        assert page.evaluate(MEASURE) == []
        assert (OUTPUT / f"console-{width}.png").stat().st_size > 0
