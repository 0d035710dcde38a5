"""The email channel: sends an ask to each of its addresses, and follows it up in each
one's thread (a reminder, the escalation, the close), over SMTP.

Each method runs as a job of parkgate's durable channel queue, in the deliverer's worker
thread: an SMTP server that is away delays the email and loses nothing (the job is retried
with backoff; :mod:`~parkgate.channels.email.smtp` says which failures are for good). A
retried send sends each message again with its Message-ID, which mail clients take as the
same message.

Email cannot be edited, so a close is a follow-up in the thread, and the replies a link's
page shows (a vote counted, ``not_yours``) are shown on that page alone: the person who
confirmed sees them, and nobody else is mailed about them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from email.message import EmailMessage
from typing import Any

from parkgate.channels.base import ChannelReply, Posted
from parkgate.channels.email.links import LinkSigner
from parkgate.channels.email.messages import (
    ask_email,
    compose,
    message_id,
    note_html,
    subject_of,
    when,
)
from parkgate.channels.email.models import ADDRESS_PATTERN, MAX_ADDRESS_CHARS, MAX_RECIPIENTS
from parkgate.channels.email.phrases import CLOSED_AT, SUBJECT_REPLY
from parkgate.channels.email.settings import EmailSettings
from parkgate.channels.email.smtp import Mailer
from parkgate.channels.email.spec import NAME
from parkgate.channels.lines import closed_line
from parkgate.core.kinds import EventType
from parkgate.core.model import Ask
from parkgate.core.schedule import escalated_to
from parkgate.errors import InputError

_ADDRESS = re.compile(ADDRESS_PATTERN)


def check_addresses(where: Mapping[str, Any]) -> list[str]:
    """A target's addresses: ``{"to": ["alice@example.com", ...]}``.

    Raises:
        InputError: ``to`` is missing or empty, holds something that is not an address,
            or the target has another key.
    """
    to = where.get("to")
    if not isinstance(to, list) or not to or len(to) > MAX_RECIPIENTS:
        raise InputError(f"email.to must be a list of 1 to {MAX_RECIPIENTS} addresses, such as ['alice@example.com']")
    for address in to:
        if not isinstance(address, str) or len(address) > MAX_ADDRESS_CHARS or not _ADDRESS.match(address):
            raise InputError(f"email.to holds {address!r}, which is not an address such as alice@example.com")
    if len(set(to)) != len(to):
        raise InputError("email.to names an address twice")
    unknown = sorted(set(where) - {"to"})
    if unknown:
        raise InputError(f"email takes to, not {unknown[0]!r}")
    return list(to)


def closed_at(ask: Ask) -> str:
    """When closed ``ask`` closed, as the email says it (its ``closed_at``: an expired ask's
    due time, any other's moment of closing)."""
    return when(ask.closed_at or ask.due_at)


class EmailChannel:
    """Parkgate's asks by email.

    Args:
        settings: The server, the sender, the link key and the links' base.
        mailer: What sends (by default, SMTP to ``settings.smtp``).
    """

    name = NAME

    def __init__(self, settings: EmailSettings, mailer: Mailer | None = None) -> None:
        self.settings = settings
        self.signer = LinkSigner(settings.key)
        self.mailer = mailer or Mailer(settings.smtp)

    def check_post(self, ask: Ask, where: Mapping[str, Any]) -> None:
        """Refuse a target that is not addresses, or an address that could not answer:
        on an ask with responders, each address must be one of them."""
        addresses = check_addresses(where)
        if ask.responders:
            outside = [address for address in addresses if address not in ask.responders]
            if outside:
                raise InputError(
                    f"email.to names {outside[0]!r}, who is not one of the ask's responders, so their links "
                    "would answer nothing: add the address to responders (written the same way) or leave it out"
                )

    def post(self, ask: Ask, target: Mapping[str, Any]) -> Posted:
        """Send the ask to each address, each email with its own signed links."""
        addresses = check_addresses(target)
        ids = {address: message_id(ask.id, address, self.settings.domain) for address in addresses}
        messages = [self._ask_email(ask, address, ids[address]) for address in addresses]
        sent = [str(message["To"]) for message in self.mailer.send(messages)]
        return Posted({"to": sent, "message_ids": [ids[address] for address in sent]})

    def closed(self, ask: Ask, location: Mapping[str, Any]) -> None:
        """A follow-up in each thread: how the ask ended, and when."""
        line = f"{closed_line(ask, mention=str)} {CLOSED_AT.format(when=closed_at(ask))}"
        subject = SUBJECT_REPLY.format(subject=subject_of(ask))
        messages = [
            compose(
                sender=self.settings.sender,
                to=address,
                subject=subject,
                msg_id=message_id(ask.id, address, self.settings.domain, "closed"),
                text=line + "\n",
                html=note_html(line),
                thread=thread,
            )
            for address, thread in self._threads(ask, location)
        ]
        self.mailer.send(messages)

    def reply(self, ask: Ask, location: Mapping[str, Any], reply: ChannelReply) -> None:
        """A reminder or the escalation: a follow-up in each thread with the links again
        (signed with the ask's due time now). A message's reply is shown on the page of
        the link that sent it, and mailed to nobody."""
        if not isinstance(reply.kind, EventType) or not ask.is_open:
            return
        part = f"{reply.kind.value}.{ask.reminders_sent}"
        messages = [
            self._ask_email(
                ask,
                address,
                message_id(ask.id, address, self.settings.domain, part),
                thread=thread,
                lead=reply.shown(str),
            )
            for address, thread in self._threads(ask, location)
        ]
        self.mailer.send(messages)

    def _threads(self, ask: Ask, location: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Each address the ask went to, with its email's Message-ID; after an escalation,
        the addresses it added too (their thread is the email they would have had)."""
        threads = list(zip(location["to"], location["message_ids"], strict=True))
        known = set(location["to"])
        added = [name for name in escalated_to(ask) if name not in known and _ADDRESS.match(name)]
        threads.extend((address, message_id(ask.id, address, self.settings.domain)) for address in added)
        return threads

    def _ask_email(
        self, ask: Ask, address: str, msg_id: str, thread: str | None = None, lead: str | None = None
    ) -> EmailMessage:
        return ask_email(
            ask,
            address,
            sender=self.settings.sender,
            signer=self.signer,
            public_url=self.settings.public_url,
            msg_id=msg_id,
            thread=thread,
            lead=lead,
        )
