"""Another site's page, a DNS-rebound name and careless start-up options, against ``parkgate serve``.

A page the operator opens on another origin auto-submits a form and
sends ``fetch(..., {mode: "no-cors", body: Blob})`` requests: cancel an ask, select
"Deploy" on another, start a workflow, park an ask whose callback would go where the
page chose. Every one is refused, on a server without a token (loopback), and every ask
and callback the page did not own stays exactly as it was. A page served under a
DNS-rebound name reads nothing. A blank token, or a non-loopback address without one,
stops the start.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from attack import ATTACKER_HOST, clean_env, serve_command, snapshot
from live_server import Receiver, free_port, messages_path, wait_until

pytestmark = pytest.mark.browser


class AttackerSite:
    """Another origin on loopback (its own port) serving one HTML page."""

    def __init__(self, html: str) -> None:
        self.html = html.encode()
        self.port = free_port()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(owner.html)))
                self.end_headers()
                self.wfile.write(owner.html)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    hook = Receiver().start()
    try:
        yield hook
    finally:
        hook.stop()


def plant(http: httpx.Client, receiver: Receiver) -> dict[str, str]:
    """Asks the attack does not own: two open (one with a callback), one answered."""
    deploy = http.post(
        "/v1/asks",
        json={"conversation_id": "victim-deploy", "prompt": "Ship it?", "options": ["Deploy", "Hold"],
              "callback_url": receiver.url},
    )  # fmt: skip
    assert deploy.status_code == 201, deploy.text
    text = http.post("/v1/asks", json={"conversation_id": "victim-text", "prompt": "Why?"}).json()
    done = http.post("/v1/asks", json={"conversation_id": "victim-done", "prompt": "Ok?", "options": ["Ok"]}).json()
    assert http.post(messages_path("victim-done"), json={"text": "1"}).json()["kind"] == "selected"
    return {"deploy": deploy.json()["ask_id"], "text": text["ask_id"], "done": done["ask_id"]}


def attack_page(target: str, asks: dict[str, str], receiver: Receiver) -> str:
    """The page: a form auto-submitted to cancel, and no-cors fetches with Blob bodies."""
    park = json.dumps({"conversation_id": "evil-park", "prompt": "x", "callback_url": receiver.url + "?evil"})
    start = json.dumps({"conversation_id": "evil-flow"})
    return f"""<!doctype html><html><body>
<iframe name="sink"></iframe>
<form id="cancel" method="POST" action="{target}/v1/asks/{asks["text"]}/cancel" target="sink"></form>
<form id="plain" method="POST" enctype="text/plain" target="sink"
      action="{target}/v1/conversations/victim-deploy/messages">
  <input name='{{"text": "1", "x": "' value='"}}'>
</form>
<script>
  const T = {json.dumps(target)};
  document.getElementById("cancel").submit();
  setTimeout(() => document.getElementById("plain").submit(), 300);
  const blob = (text) => new Blob([text]);
  fetch(T + "/v1/conversations/victim-deploy/messages",
        {{method: "POST", mode: "no-cors", body: blob('{{"text": "Deploy"}}')}});
  fetch(T + "/v1/workflows/uml/start", {{method: "POST", mode: "no-cors", body: blob({json.dumps(start)})}});
  fetch(T + "/v1/asks", {{method: "POST", mode: "no-cors", body: blob({json.dumps(park)})}});
  fetch(T + "/v1/asks/{asks["deploy"]}/cancel", {{method: "POST", mode: "no-cors"}});
</script></body></html>"""


def refusals(log: str) -> int:
    return sum(1 for line in log.splitlines() if '"POST /v1/' in line and " 403 " in line)


def test_another_sites_page_changes_nothing(page: Any, launch: Any, database: Any, receiver: Receiver) -> None:
    server = launch(
        database,
        extra_env={"PARKGATE_CALLBACK_ALLOW": f"127.0.0.1:{receiver.port}"},
        extra_args=["--access-log"],  # the refusals are counted in the access log
    )
    with server.client() as http:
        asks = plant(http, receiver)
    before = snapshot(database)
    site = AttackerSite(attack_page(server.url, asks, receiver))
    try:
        page.goto(site.url)
        # The browser sent all six requests; each was refused (the server's access log).
        wait_until(lambda: refusals(server.log_text()) >= 6, 30, "six refused cross-site POSTs")
    finally:
        site.close()
    assert snapshot(database) == before
    with server.client() as http:
        assert http.get(f"/v1/asks/{asks['deploy']}").json()["status"] == "open"
        for conversation in ("evil-park", "evil-flow"):
            assert http.post(messages_path(conversation), json={"text": "1"}).json()["kind"] == "pass"
    assert receiver.got() == []


def test_a_plain_client_still_works_and_a_body_must_be_json(launch: Any, database: Any) -> None:
    server = launch(database)
    with server.client() as http:
        parked = http.post("/v1/asks", json={"conversation_id": "plain", "prompt": "Q?", "options": ["A"]}).json()
        before = snapshot(database)
        # A body without Content-Type, or with a form's or text's, is refused unread.
        for headers in ({}, {"content-type": "text/plain"}, {"content-type": "application/x-www-form-urlencoded"}):
            refused = http.post(messages_path("plain"), content=b'{"text": "1"}', headers=headers)
            assert refused.status_code == 415, refused.text
            assert refused.json()["error"] == "unsupported_media_type"
        assert snapshot(database) == before
        # A cancel from curl: a POST with no body needs no Content-Type.
        cancelled = http.post(f"/v1/asks/{parked['ask_id']}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


def test_a_dns_rebound_name_is_not_served(page: Any, launch: Any, database: Any) -> None:
    server = launch(database)
    with server.client() as http:
        http.post("/v1/asks", json={"conversation_id": "secret-conv", "prompt": "The secret prompt?"})
    before = snapshot(database)
    rebound = f"http://{ATTACKER_HOST}:{server.port}"
    response = page.goto(rebound + "/v1/asks")
    assert response.status == 400
    assert "secret" not in page.content() and "host_not_allowed" in page.content()
    page.goto(rebound + "/")
    assert "secret" not in page.content()
    read = page.evaluate("fetch('/v1/asks').then(r => r.text().then(t => [r.status, t]))")
    assert read[0] == 400 and "secret" not in read[1]
    # Any client naming a foreign Host is refused the same way; loopback names are served.
    with httpx.Client(base_url=server.url, timeout=30) as http:
        foreign = http.get("/v1/asks", headers={"Host": f"{ATTACKER_HOST}:{server.port}"})
        assert foreign.status_code == 400 and foreign.json()["error"] == "host_not_allowed"
        for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}"):
            assert http.get("/v1/asks", headers={"Host": host}).status_code == 200
    assert snapshot(database) == before


def test_an_allowed_host_is_served(launch: Any, database: Any) -> None:
    server = launch(database, extra_args=["--allowed-host", "gate.internal"])
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.get("/v1/asks", headers={"Host": f"gate.internal:{server.port}"}).status_code == 200
        assert http.get("/v1/asks", headers={"Host": "other.internal"}).status_code == 400


@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_a_blank_token_stops_the_start(tmp_path: Path, blank: str) -> None:
    db = f"sqlite:///{tmp_path / 'p.db'}"
    for args, env in (
        (["--db", db, "--token", blank or " "], clean_env()),
        (["--db", db], clean_env(PARKGATE_TOKEN=blank or " ")),
    ):
        done = serve_command(*args, "--port", str(free_port()), env=env)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "blank" in done.stderr and "Traceback" not in done.stderr
    token_file = tmp_path / "token"
    token_file.write_text(blank + "\n")
    done = serve_command("--db", db, "--token-file", str(token_file), "--port", str(free_port()), env=clean_env())
    assert done.returncode == 1 and "blank" in done.stderr
    assert not (tmp_path / "p.db").exists()  # refused before anything was made


def test_a_non_loopback_address_needs_a_token_or_says_it_loudly(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'p.db'}"
    refused = serve_command("--db", db, "--host", "0.0.0.0", "--port", str(free_port()), env=clean_env())
    assert refused.returncode == 1
    assert "without a token" in refused.stderr and "--insecure-no-token" in refused.stderr
    assert not (tmp_path / "p.db").exists()
    # Allowed on purpose: it starts (here it cannot bind a taken port, after the warning).
    taken = free_port()
    with socket.socket() as holder:  # on loopback: nothing here listens beyond this machine
        holder.bind(("127.0.0.1", taken))
        holder.listen()
        warned = serve_command("--db", db, "--host", "0.0.0.0", "--port", str(taken), "--insecure-no-token",
                               env=clean_env())  # fmt: skip
    assert "WITHOUT A TOKEN" in warned.stderr
    assert "cannot listen" in warned.stderr  # it went on to start, past the check
