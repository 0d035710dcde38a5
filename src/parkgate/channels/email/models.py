"""Where an email ask is sent, and what was sent, as ``POST /v1/asks`` takes the one and
an ask's JSON shows the other (the field ``email``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

#: An address as parkgate sends to it: ``local@domain``, no display name, no spaces, no
#: characters that would end a header or a list (so it can never add a header or a
#: recipient), a domain of dot-separated labels. Compared as written: the address is the
#: sender of what its links answer.
ADDRESS_PATTERN = (
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"
)
#: The longest address (RFC 5321's path limit, less its brackets).
MAX_ADDRESS_CHARS = 254
#: The most addresses one ask is sent to.
MAX_RECIPIENTS = 50

Address = Annotated[str, Field(pattern=ADDRESS_PATTERN, max_length=MAX_ADDRESS_CHARS)]


class EmailTarget(BaseModel):
    """Where ``POST /v1/asks`` sends the ask by email: each address gets a message of its
    own, whose links answer as that address (a responder's name on a quorum ask)."""

    to: Annotated[list[Address], Field(min_length=1, max_length=MAX_RECIPIENTS)] = Field(
        description="The addresses to ask, such as ['alice@example.com']; each is the sender of its links' answers."
    )


class EmailPost(BaseModel):
    """What was sent: the addresses, and each one's message id (the thread its reminders,
    escalation and close follow, by ``In-Reply-To``)."""

    to: list[str]
    message_ids: list[str] = Field(description="Each address's Message-ID, in the order of to.")
