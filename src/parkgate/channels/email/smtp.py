"""Sending over SMTP with the standard library's :mod:`smtplib`: one connection per job,
TLS as the settings say, each message to its one recipient.

A failure that may pass (the server away, a timeout, a 4xx) raises
:class:`ConnectionError`, and the job is retried with backoff. A refusal that no retry
changes (a 5xx for the sender, the login or the message) raises
:class:`~parkgate.errors.ChannelJobFailed`, and the job is given up at once. A recipient
the server refuses for good (a 5xx for that address) is left out, logged, and the others
are sent; when every one is refused, the job is given up.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from collections.abc import Sequence
from email.message import EmailMessage

from parkgate.channels.email.settings import SmtpServer
from parkgate.errors import ChannelJobFailed

#: Seconds one SMTP command may take before the job is retried later.
SMTP_TIMEOUT_SECONDS = 10.0

log = logging.getLogger("parkgate.channels.email")


class Mailer:
    """Sends messages through one SMTP server.

    Args:
        server: The server, its TLS and its login.
        context: The TLS context (default: the system's trusted certificates, host names checked).
    """

    def __init__(self, server: SmtpServer, context: ssl.SSLContext | None = None) -> None:
        self.server = server
        self.context = context or ssl.create_default_context()

    def send(self, messages: Sequence[EmailMessage]) -> list[EmailMessage]:
        """Send each message (one ``To`` each) over one connection.

        Args:
            messages: The messages, in order.

        Returns:
            The messages sent: all of them but those whose recipient was refused for good.

        Raises:
            ConnectionError: The server could not be reached or failed for now.
            ChannelJobFailed: It refused the sender, the login or every recipient, for good.
        """
        sent: list[EmailMessage] = []
        try:
            with self._connect() as smtp:
                for message in messages:
                    if self._send_one(smtp, message):
                        sent.append(message)
        except smtplib.SMTPResponseException as error:
            raise _classified(error) from None
        except (smtplib.SMTPException, OSError) as error:  # refused, reset, timed out, TLS failed
            where = f"{self.server.host}:{self.server.port}"
            raise ConnectionError(f"SMTP {where}: {type(error).__name__}: {error}") from None
        if messages and not sent:
            raise ChannelJobFailed("the SMTP server refused every recipient for good")
        return sent

    def _connect(self) -> smtplib.SMTP:
        server = self.server
        smtp: smtplib.SMTP
        if server.tls:
            smtp = smtplib.SMTP_SSL(server.host, server.port, timeout=SMTP_TIMEOUT_SECONDS, context=self.context)
        else:
            smtp = smtplib.SMTP(server.host, server.port, timeout=SMTP_TIMEOUT_SECONDS)
        try:
            smtp.ehlo()
            if server.starttls:
                if not smtp.has_extn("starttls"):
                    raise ChannelJobFailed(
                        f"the SMTP server {server.host}:{server.port} does not offer STARTTLS; use smtps://, "
                        "or ?starttls=off for a relay on this host"
                    )
                smtp.starttls(context=self.context)
                smtp.ehlo()
            if server.user is not None and server.password is not None:
                smtp.login(server.user, server.password)
        except BaseException:
            smtp.close()
            raise
        return smtp

    @staticmethod
    def _send_one(smtp: smtplib.SMTP, message: EmailMessage) -> bool:
        """Send ``message``; whether it was taken (``False``: its recipient refused for good)."""
        try:
            smtp.send_message(message)
        except smtplib.SMTPRecipientsRefused as refused:
            codes = [code for code, _ in refused.recipients.values()]
            if all(code >= 500 for code in codes):
                log.warning("the SMTP server refused %s for good: %s", message["To"], refused.recipients)
                return False
            raise ConnectionError(f"the SMTP server refused {message['To']} for now: {refused.recipients}") from None
        return True


def _classified(error: smtplib.SMTPResponseException) -> Exception:
    """A response's error as the deliverer takes it: for good (5xx) or for now."""
    text = error.smtp_error.decode("utf-8", "replace") if isinstance(error.smtp_error, bytes) else str(error.smtp_error)
    described = f"SMTP {error.smtp_code} {text} ({type(error).__name__})"
    return ChannelJobFailed(described) if error.smtp_code >= 500 else ConnectionError(described)
