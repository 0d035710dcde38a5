"""A real SMTP server for the email channel's tests: aiosmtpd on loopback, in a thread,
keeping every message it takes. It stops and starts again on the same port (an SMTP
server away, then back), and can refuse the sender for good (a 550)."""

from __future__ import annotations

import email
import email.policy
import re
import threading
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller
from live_server import free_port

from polling import until

#: A link in an email's text part, as the channel writes them.
LINK = re.compile(r"https?://\S+/email/l/\S+")


@dataclass
class Received:
    """One message the server took."""

    envelope_to: list[str]
    message: EmailMessage

    @property
    def to(self) -> str:
        return str(self.message["To"])

    def part(self, subtype: str) -> str:
        """The text of its ``text/<subtype>`` part."""
        found = self.message.get_body(preferencelist=(subtype,))
        assert found is not None and found.get_content_type() == f"text/{subtype}", subtype
        return str(found.get_content())

    @property
    def text(self) -> str:
        return self.part("plain")

    @property
    def html(self) -> str:
        return self.part("html")

    @property
    def links(self) -> list[str]:
        """The links in its text part, in order (each option's, then Cancel)."""
        return LINK.findall(self.text)


class SmtpServer:
    """aiosmtpd on 127.0.0.1, recording what it is sent."""

    def __init__(self) -> None:
        self.port = free_port()
        self.received: list[Received] = []
        #: The reply to MAIL FROM: a 550 refuses every message for good.
        self.refuse_sender: str | None = None
        self._lock = threading.Lock()
        self._controller: Controller | None = None

    @property
    def url(self) -> str:
        """``PARKGATE_SMTP_URL`` for it: in the clear, as a relay on this host is."""
        return f"smtp://127.0.0.1:{self.port}?starttls=off"

    def start(self) -> SmtpServer:
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    async def handle_MAIL(self, server: Any, session: Any, envelope: Any, address: str, options: list[str]) -> str:
        if self.refuse_sender is not None:
            return self.refuse_sender
        envelope.mail_from = address
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        parsed = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        with self._lock:
            self.received.append(Received(list(envelope.rcpt_tos), parsed))
        return "250 OK"

    def got(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    def wait_for(self, count: int, timeout: float = 20) -> list[Received]:
        """Once it has taken ``count`` messages, all of them."""
        return until(lambda: (got := self.got())[count - 1 :] and got, timeout, f"{count} email(s)")
