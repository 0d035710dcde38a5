"""The links in an email: each signed with the server's secret, binding the ask, the
choice, the recipient's address and the ask's expiry, so a link answers nothing it was not
made for and nothing after the ask's time.

A link's token is ``<payload>.<mac>``, both unpadded base64url: the payload is the JSON
list ``[version, ask id, choice, address, expiry]`` (the expiry in whole Unix seconds),
the mac its HMAC-SHA256 under a key of its own (:data:`LINK_LABEL`). Changing any byte
of either makes :meth:`LinkSigner.read` refuse the token. The confirm page carries a CSRF
token bound to the link (:meth:`LinkSigner.csrf`, another HMAC), so the POST that
records an answer comes from the page made for that link.

A choice is an option's number (``"1"``), :data:`CANCEL` or, for a text ask, :data:`ANSWER`
(the link to the answer form).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime

from parkgate.errors import InputError

#: The choice of the link that drops the ask.
CANCEL = "cancel"
#: The choice of a text ask's link to its answer form.
ANSWER = "answer"
#: The token's version, first in its payload.
VERSION = 1
#: What each HMAC is keyed for, so a mac of one kind is never a mac of the other.
LINK_LABEL = b"parkgate email link\x00"
CSRF_LABEL = b"parkgate email confirm\x00"
#: The longest token read (an ask id and an address at their limits fit well within it).
MAX_TOKEN_CHARS = 2048


@dataclass(frozen=True, slots=True)
class Link:
    """What a signed link binds."""

    ask_id: str
    #: An option's number as text, :data:`CANCEL` or :data:`ANSWER`.
    choice: str
    #: The recipient: the sender of what the link answers.
    address: str
    #: When the link stops answering: the ask's due time when the email was sent.
    expires_at: datetime

    @property
    def option_number(self) -> int | None:
        """The option's 1-based number, for an option's link."""
        return int(self.choice) if self.choice.isdigit() else None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class LinkSigner:
    """Signs and reads links with one key.

    Args:
        key: The secret's bytes (``PARKGATE_EMAIL_SECRET``'s, decoded).
    """

    def __init__(self, key: bytes) -> None:
        self._key = key

    def _mac(self, label: bytes, data: bytes) -> bytes:
        return hmac.new(self._key, label + data, hashlib.sha256).digest()

    def sign(self, link: Link) -> str:
        """The token of ``link``."""
        expires = math.ceil(link.expires_at.timestamp())  # never before the ask's own time
        payload = json.dumps([VERSION, link.ask_id, link.choice, link.address, expires], separators=(",", ":"))
        data = payload.encode("utf-8")
        return f"{_b64(data)}.{_b64(self._mac(LINK_LABEL, data))}"

    def read(self, token: str) -> Link:
        """The link ``token`` signs.

        Raises:
            InputError: It is not a token this key signed, as it is (changed, cut, or
                another server's): the page refuses it and nothing is read.
        """
        if len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
            raise InputError("not a link this server made")
        encoded, _, mac = token.partition(".")
        try:
            data, given = _unb64(encoded), _unb64(mac)
        except (binascii.Error, ValueError):
            raise InputError("not a link this server made") from None
        if not hmac.compare_digest(given, self._mac(LINK_LABEL, data)):
            raise InputError("the link's signature does not match: it was changed, or made with another secret")
        try:
            version, ask_id, choice, address, expires = json.loads(data)
        except (ValueError, TypeError):
            raise InputError("not a link this server made") from None
        if version != VERSION or not all(isinstance(part, str) for part in (ask_id, choice, address)):
            raise InputError("not a link this server made")
        if not isinstance(expires, int):
            raise InputError("not a link this server made")
        return Link(ask_id, choice, address, datetime.fromtimestamp(expires, UTC))

    def csrf(self, token: str) -> str:
        """The confirm form's CSRF token for the link ``token``."""
        return _b64(self._mac(CSRF_LABEL, token.encode("utf-8")))

    def check_csrf(self, token: str, given: str) -> bool:
        """Whether ``given`` is the CSRF token of the link ``token``."""
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.csrf(token).encode("ascii"))


def event_id(token: str, text: str = "") -> str:
    """The message id a confirmation is handed to the gateway with: the same link (and, on
    the answer form, the same text) confirmed twice counts once."""
    digest = hashlib.sha256(token.encode("utf-8") + b"\x00" + text.encode("utf-8")).hexdigest()
    return f"email-{digest[:40]}"
