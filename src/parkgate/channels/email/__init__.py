"""Email: an ask sent to each of its addresses as a message with one signed link per
option, a Cancel link and, for a text ask, a link to an answer form; the page a link
opens shows the choice and a button, and only the button's POST records it (a GET never
records anything: mail scanners and link previews fetch every URL). Reminders, the
escalation and the close follow in each address's thread. Standard library only
(:mod:`smtplib`, :mod:`email`): no extra.

- :data:`SPEC`: the channel's declaration (:mod:`parkgate.channels.registry`).
- :class:`EmailChannel` (outbound): the channel's jobs as emails over SMTP
  (:mod:`~parkgate.channels.email.smtp`).
- :class:`LinkSigner`: the links' signatures and the confirm form's CSRF token.
- :func:`serve`: what ``parkgate serve`` mounts when ``PARKGATE_SMTP_URL`` is set (with
  ``PARKGATE_EMAIL_FROM``, ``PARKGATE_EMAIL_SECRET`` and ``PARKGATE_PUBLIC_URL``):
  ``GET /email/l/{token}`` and ``POST /email/confirm``.
- :func:`sending`: the channel alone, for ``parkgate deliver``.

Importing the package imports its declaration alone; each other name is imported on
first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parkgate.channels.email.spec import (
    ENV_FROM,
    ENV_PUBLIC_URL,
    ENV_SECRET,
    ENV_SMTP_PASSWORD,
    ENV_SMTP_URL,
    ENV_SMTP_USER,
    NAME,
    SPEC,
)

if TYPE_CHECKING:
    from parkgate.channels.email.channel import EmailChannel
    from parkgate.channels.email.links import LinkSigner
    from parkgate.channels.email.serving import sending, serve

#: Where each name imported on first use is.
_LAZY = {
    "EmailChannel": "parkgate.channels.email.channel:EmailChannel",
    "LinkSigner": "parkgate.channels.email.links:LinkSigner",
    "sending": "parkgate.channels.email.serving:sending",
    "serve": "parkgate.channels.email.serving:serve",
}


#: A name of the package that needs its extra, imported on first use.
__getattr__ = SPEC.lazy(__name__, _LAZY)


__all__ = [
    "ENV_FROM",
    "ENV_PUBLIC_URL",
    "ENV_SECRET",
    "ENV_SMTP_PASSWORD",
    "ENV_SMTP_URL",
    "ENV_SMTP_USER",
    "NAME",
    "SPEC",
    "EmailChannel",
    "LinkSigner",
    "sending",
    "serve",
]
