"""A stand-in for Slack on loopback: a Web API that records every call (``chat.postMessage``,
``chat.update``, ``chat.postEphemeral``, ``auth.test``) and answers as Slack does, and the
requests Slack sends, signed with ``slack_sdk``'s :class:`SignatureVerifier` HMAC."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode

import httpx

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-test-token"
#: A channel the stand-in does not know: Slack answers ``channel_not_found``, for good.
MISSING_CHANNEL = "CGONE"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    token: str | None


@dataclass
class SlackWebApi:
    """Records each Web API call; ``failing`` methods answer a 500 while it is set; ``held``
    methods are recorded on arrival and answered only once ``release`` is set (a slow Slack)."""

    calls: list[Call] = field(default_factory=list)
    failing: set[str] = field(default_factory=set)
    held: set[str] = field(default_factory=set)
    release: threading.Event = field(default_factory=threading.Event)
    #: How many held calls are waiting for ``release`` now.
    holding: int = 0
    _ts: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> SlackWebApi:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                method = self.path.rsplit("/", 1)[-1]
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if "json" in (self.headers.get("Content-Type") or ""):
                    args = json.loads(raw or "{}")
                else:
                    args = {key: values[0] for key, values in parse_qs(raw).items()}
                if method in api.failing:
                    self.send_response(500)
                    self.end_headers()
                    return
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ") or None
                answer = api.answer(method, args, token)
                if method in api.held:
                    api.hold()
                body = json.dumps(answer).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up on a held call
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll interval: stop() waits for serve_forever to notice it (0.5 s by default).
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/api/"

    def hold(self) -> None:
        """Wait, counted in ``holding``, until the test sets ``release`` (at most a minute)."""
        with self._lock:
            self.holding += 1
        try:
            self.release.wait(60)
        finally:
            with self._lock:
                self.holding -= 1

    def stop(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def answer(self, method: str, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        with self._lock:
            self.calls.append(Call(method, args, token))
            self._ts += 1
            ts = f"1712345678.{self._ts:06d}"
        if method == "auth.test":
            return {"ok": True, "user_id": "UBOT", "bot_id": "BBOT", "team_id": "T1", "team": "test"}
        if method == "chat.postMessage" and args["channel"] == MISSING_CHANNEL:
            return {"ok": False, "error": "channel_not_found"}
        if method == "chat.postMessage":
            return {"ok": True, "channel": args["channel"], "ts": ts, "message": {"text": args.get("text")}}
        if method == "chat.update":
            return {"ok": True, "channel": args["channel"], "ts": args["ts"]}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": ts}
        return {"ok": False, "error": "unknown_method"}

    def message_of(self, ask_id: str) -> tuple[str, str]:
        """The channel and ts of the latest message posted with ``ask_id``'s buttons."""
        with self._lock:
            posts = [(n, c) for n, c in enumerate(self.calls, start=1) if c.method == "chat.postMessage"]
        for number, call in reversed(posts):
            values = {e.get("value") for b in call.args.get("blocks") or [] for e in b.get("elements", [])}
            if ask_id in values:
                return str(call.args["channel"]), f"1712345678.{number:06d}"
        raise AssertionError(f"no message holds ask {ask_id}'s buttons")

    def click(self, ask_id: str, action_id: str, user: str, trigger_id: str) -> bytes:
        """A click on ``ask_id``'s button ``action_id``, on the message that holds it."""
        channel, ts = self.message_of(ask_id)
        return click_body(ask_id, action_id, user, trigger_id, channel=channel, ts=ts)

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [call for call in self.calls if call.method == method]


def signed_headers(body: bytes, secret: str = SIGNING_SECRET, at: int | None = None) -> dict[str, str]:
    """The headers Slack signs a request with (``v0=`` HMAC-SHA256 of ``v0:{timestamp}:{body}``)."""
    timestamp = str(int(time.time()) if at is None else at)
    base = f"v0:{timestamp}:".encode() + body
    signature = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature}


def event_body(event: dict[str, Any], event_id: str) -> bytes:
    """An Events API ``event_callback``."""
    return json.dumps(
        {
            "token": "x",
            "team_id": "T1",
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": event_id,
            "event_time": int(time.time()),
            "event": event,
        }
    ).encode()


def click_body(ask_id: str, action_id: str, user: str, trigger_id: str, channel: str = "C1", ts: str = "") -> bytes:
    """An interactivity ``block_actions`` payload, form-encoded as Slack sends it."""
    payload = {
        "type": "block_actions",
        "team": {"id": "T1"},
        "user": {"id": user, "username": user.lower(), "team_id": "T1"},
        "api_app_id": "A1",
        "trigger_id": trigger_id,
        "channel": {"id": channel},
        "container": {"type": "message", "channel_id": channel, "message_ts": ts},
        "message": {"ts": ts, "text": ""},
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": f"parkgate-{ask_id}",
                "value": ask_id,
                "action_ts": str(time.time()),
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def send(client: httpx.Client, body: bytes, *, form: bool = False, **headers: str) -> httpx.Response:
    """POST ``body`` to ``/slack/events``, signed unless ``headers`` say otherwise."""
    content_type = "application/x-www-form-urlencoded" if form else "application/json"
    sent = {"Content-Type": content_type, **signed_headers(body), **headers}
    return client.post("/slack/events", content=body, headers=sent)
