"""A recording Bot API stand-in on loopback: ``{root}/bot{token}/{method}``, as a self-hosted
Bot API server serves it.

It answers the methods parkgate calls (``sendMessage``, ``editMessageText``,
``editMessageReplyMarkup``, ``answerCallbackQuery``, ``setWebhook``, ``getMe`` and
``getUpdates``) as Telegram does, records every call, and can be told to fail the next
calls of a method (an outage), to run a test's hook before a method's answer goes back
(a slow Bot API), or to queue updates for ``getUpdates`` (long polling). Like Telegram,
it refuses a message text over 4,096 characters (UTF-16 code units) with a 400, and
``entities`` that do not lie within the text (offsets and lengths in UTF-16 code units),
or a ``text_mention`` without its user, with Telegram's "can't parse entities" 400.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

BOT_USERNAME = "YourBot"
BOT_ID = 777
#: The longest message text Telegram sends, in UTF-16 code units.
MAX_TEXT = 4096
_PATH = re.compile(r"/bot(?P<token>[^/]+)/(?P<method>[A-Za-z]+)")


@dataclass
class Call:
    """One recorded call: its method and its parameters (JSON-decoded)."""

    method: str
    params: dict[str, Any]


@dataclass
class BotApiStandIn:
    """The stand-in's state: the token it accepts, every call, the messages it "sent"."""

    token: str
    calls: list[Call] = field(default_factory=list)
    #: message text by (chat_id, message_id), as the last send or edit left it.
    texts: dict[tuple[int, int], str] = field(default_factory=dict)
    #: reply markup by (chat_id, message_id); ``None`` once an edit removed it.
    markups: dict[tuple[int, int], Any] = field(default_factory=dict)
    updates: list[dict[str, Any]] = field(default_factory=list)
    failing: dict[str, int] = field(default_factory=dict)
    failing_with: dict[str, tuple[int, str]] = field(default_factory=dict)
    root: str = ""
    #: Run with a call of the method once it is answered, before the answer goes back (a
    #: slow Bot API: the hook blocks, or moves the test's clock), in the request's thread.
    slow: dict[str, Callable[[Call], None]] = field(default_factory=dict)
    _next_message_id: int = 100
    _lock: threading.Condition = field(default_factory=threading.Condition)

    def of(self, method: str) -> list[Call]:
        """The recorded calls of ``method``, in order."""
        with self._lock:
            return [call for call in self.calls if call.method == method]

    def fail(self, method: str, times: int, status: int = 502, description: str = "Bad Gateway") -> None:
        """Answer the next ``times`` calls of ``method`` with ``status`` (a 502: an outage)."""
        with self._lock:
            self.failing[method] = times
            self.failing_with[method] = (status, description)

    def queue_update(self, update: dict[str, Any]) -> None:
        """Hand ``update`` to the next ``getUpdates``."""
        with self._lock:
            self.updates.append(update)
            self._lock.notify_all()

    def answer(self, token: str, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and JSON body the Bot API would answer this call with."""
        with self._lock:
            if token != self.token:
                return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
            if method != "getUpdates":
                self.calls.append(Call(method, params))
            if self.failing.get(method, 0) > 0:
                self.failing[method] -= 1
                status, description = self.failing_with[method]
                return status, {"ok": False, "error_code": status, "description": description}
            if method == "getUpdates":
                return 200, {"ok": True, "result": self._updates(params)}
            text = params.get("text")
            if method in ("sendMessage", "editMessageText") and len(str(text).encode("utf-16-le")) // 2 > MAX_TEXT:
                return 400, {"ok": False, "error_code": 400, "description": "Bad Request: message is too long"}
            if method in ("sendMessage", "editMessageText") and not _entities_fit(params.get("entities"), str(text)):
                return 400, {"ok": False, "error_code": 400, "description": "Bad Request: can't parse entities"}
            result = self._result(method, params)
        if result is None:
            return 404, {"ok": False, "error_code": 404, "description": "Not Found: method not found"}
        return 200, {"ok": True, "result": result}

    def _result(self, method: str, params: dict[str, Any]) -> Any:
        if method == "sendMessage":
            self._next_message_id += 1
            key = (int(params["chat_id"]), self._next_message_id)
            self.texts[key] = params["text"]
            self.markups[key] = params.get("reply_markup")
            return self._message(key, params)
        if method in ("editMessageText", "editMessageReplyMarkup"):
            key = (int(params["chat_id"]), int(params["message_id"]))
            if key not in self.texts:
                return None
            self.texts[key] = params.get("text", self.texts[key])
            self.markups[key] = params.get("reply_markup")
            return self._message(key, params)
        if method in ("answerCallbackQuery", "setWebhook", "deleteWebhook"):
            return True
        if method == "getMe":
            return {"id": BOT_ID, "is_bot": True, "first_name": "Your Bot", "username": BOT_USERNAME}
        return None

    def _message(self, key: tuple[int, int], params: dict[str, Any]) -> dict[str, Any]:
        chat_id, message_id = key
        message: dict[str, Any] = {
            "message_id": message_id,
            "date": 1767603600,
            "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"},
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "Your Bot", "username": BOT_USERNAME},
            "text": self.texts[key],
        }
        if params.get("message_thread_id") is not None:
            message["message_thread_id"] = params["message_thread_id"]
            message["is_topic_message"] = True
        if self.markups.get(key):
            message["reply_markup"] = self.markups[key]
        return message

    def _updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """The queued updates from ``offset`` on, waiting up to ``timeout`` (at most 1 s) for one."""
        offset = int(params.get("offset") or 0)
        self.updates = [update for update in self.updates if update["update_id"] >= offset]
        if not self.updates:
            self._lock.wait(min(float(params.get("timeout") or 0), 1.0))
        return list(self.updates)


def _entities_fit(entities: Any, text: str) -> bool:
    """Whether ``entities`` (absent, or a list) each lie within ``text``, as Telegram checks them."""
    if entities is None:
        return True
    size = len(text.encode("utf-16-le")) // 2
    for entity in entities if isinstance(entities, list) else [None]:
        if not isinstance(entity, dict):
            return False
        offset, length = entity.get("offset"), entity.get("length")
        if not isinstance(offset, int) or not isinstance(length, int) or offset < 0 or length < 1:
            return False
        if offset + length > size:
            return False
        user = entity.get("user")
        if entity.get("type") == "text_mention" and not (isinstance(user, dict) and isinstance(user.get("id"), int)):
            return False
    return True


def _params(handler: BaseHTTPRequestHandler) -> dict[str, Any]:
    """A call's parameters, sent as JSON or as a form (JSON-valued fields decoded)."""
    body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    if "json" in (handler.headers.get("Content-Type") or ""):
        return dict(json.loads(body or b"{}"))
    params: dict[str, Any] = {}
    for key, value in parse_qsl(body.decode()):
        try:
            params[key] = json.loads(value) if value[:1] in "[{" else value
        except ValueError:
            params[key] = value
    return params


@contextmanager
def bot_api(token: str) -> Iterator[BotApiStandIn]:
    """A stand-in serving on ``127.0.0.1`` for the life of the block; its ``root`` is set."""
    state = BotApiStandIn(token)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            found = _PATH.fullmatch(self.path)
            if found is None:
                status, body = 404, {"ok": False, "error_code": 404, "description": "Not Found"}
            else:
                params = _params(self)
                status, body = state.answer(found["token"], found["method"], params)
                hook = state.slow.get(found["method"])
                if hook is not None:
                    hook(Call(found["method"], params))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            pass  # a client gone mid-request (a polling bot stopped): nothing to record

    server = Server(("127.0.0.1", 0), Handler)
    state.root = f"http://127.0.0.1:{server.server_port}"
    # A short poll interval: shutdown() waits for serve_forever to notice it (0.5 s by default).
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
