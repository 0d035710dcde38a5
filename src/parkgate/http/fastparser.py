"""The default HTTP protocol of ``parkgate serve``: uvicorn's httptools protocol, bounded.

httptools (llhttp, in C) parses a request several times faster than h11 (pure Python);
``--http h11`` keeps :class:`parkgate.http.connections.BoundedH11Protocol`. Both hold the
same bounds: the head timeout and the per-peer cap
(:class:`~parkgate.http.connections.ConnectionBoundsMixin`), and a cap on the bytes of a
request head that has not ended yet.

h11 has that cap built in (``h11_max_incomplete_event_size``); httptools has none: it
keeps a header that has not ended in memory, however long. So here, while a request's
head is incomplete, the bytes that arrived for it are counted; once they pass the cap
(uvicorn's ``h11_max_incomplete_event_size``, which :func:`parkgate.http.server.serve`
sets to the 64 KiB head limit) the connection is answered 431
``request_head_too_large`` and closed before more is read. At most the cap plus two reads
(a read that ends one request and starts the next is not counted) is buffered. A complete
head over the cap that arrived in one read is answered 431 by the app
(:func:`parkgate.http.guard.check_head`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from parkgate.errors import ErrorResponse
from parkgate.http.connections import ConnectionBoundsMixin


def head_refusal(limit: int) -> bytes:
    """The 431 (JSON ``{"error", "detail"}``, ``Connection: close``) for a head past ``limit`` bytes."""
    body = json.dumps(
        {
            "error": ErrorResponse.REQUEST_HEAD_TOO_LARGE,
            "detail": f"the request head passed {limit} bytes before it ended",
        }
    ).encode()
    return (
        b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
        b"content-type: application/json\r\n"
        b"x-content-type-options: nosniff\r\n"
        b"cache-control: no-store\r\n"
        b"connection: close\r\n"
        b"content-length: %d\r\n\r\n%s"
    ) % (len(body), body)


class BoundedHttpToolsProtocol(ConnectionBoundsMixin, HttpToolsProtocol):
    """uvicorn's httptools protocol with the head timeout, the per-peer cap and a cap on an
    incomplete head's bytes (module docstring)."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.head_limit: int = config.h11_max_incomplete_event_size or 0
        self._in_head = True  # no request's head has ended since the last one ended
        self._head_bytes = 0  # the bytes counted for the head in progress
        self._began = False  # a request began during the read being parsed

    def data_received(self, data: bytes) -> None:
        """Parse ``data``; refuse the connection once an incomplete head passes the cap."""
        self._began = False
        super().data_received(data)
        if not self._in_head or not self.head_limit or self.transport.is_closing():
            return
        if not self._began:  # a read that started this head also held the end of the last request
            self._head_bytes += len(data)
        if self._head_bytes > self.head_limit:
            self.logger.warning("Refused a request head over %d bytes.", self.head_limit)
            self.transport.write(head_refusal(self.head_limit))
            self.transport.close()

    def on_message_begin(self) -> None:
        """A request's head starts: nothing of it is counted yet."""
        super().on_message_begin()
        self._in_head, self._head_bytes, self._began = True, 0, True

    def on_headers_complete(self) -> None:
        """The head ended: its size is the app's to check (:func:`parkgate.http.guard.check_head`)."""
        self._in_head = False
        super().on_headers_complete()


__all__ = ["BoundedHttpToolsProtocol", "head_refusal"]
