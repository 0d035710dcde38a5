"""A stand-in for "pager", a made-up chat platform that only the tests know (its channel
is :mod:`pager_channel`): an HTTP API on loopback that records what is posted, edited and
replied, and answers each post with its message id."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class PagerCall:
    """One call: ``post`` (a new message in a room), ``edit`` or ``reply`` (to a message)."""

    kind: str
    message: str
    body: dict[str, Any]


@dataclass
class PagerPlatform:
    """Records each call; a post answers ``{"message": "m-1"}``, ``m-2``, ... ."""

    calls: list[PagerCall] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> PagerPlatform:
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                parts = self.path.strip("/").split("/")  # messages | messages/<id>/edit | messages/<id>/replies
                with platform._lock:
                    if parts == ["messages"]:
                        message = f"m-{1 + sum(call.kind == 'post' for call in platform.calls)}"
                        platform.calls.append(PagerCall("post", message, body))
                    elif len(parts) == 3 and parts[0] == "messages" and parts[2] in ("edit", "replies"):
                        message = parts[1]
                        platform.calls.append(PagerCall("edit" if parts[2] == "edit" else "reply", message, body))
                    else:
                        self.send_error(404)
                        return
                answer = json.dumps({"message": message}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def of(self, kind: str) -> list[PagerCall]:
        """The calls of ``kind`` so far, in order."""
        with self._lock:
            return [call for call in self.calls if call.kind == kind]
