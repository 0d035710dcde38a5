"""The webhook secrets a server signs its callbacks with, checked, and the signer.

``PARKGATE_WEBHOOK_SECRET`` holds one secret, or several separated by spaces while a
secret is rotated. Each is ``whsec_`` followed by the base64 of at least
:data:`MIN_SECRET_BYTES` random bytes (the Standard Webhooks form); anything else stops
the start with a message saying how to make one. With several, each callback carries one
``v1,`` signature per secret, separated by spaces as the spec allows, so a receiver that
knows either secret verifies it.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Sequence
from datetime import datetime

from standardwebhooks import Webhook

#: The environment variable holding the signing secrets (``whsec_`` + base64, space-separated).
ENV_WEBHOOK_SECRET = "PARKGATE_WEBHOOK_SECRET"
#: The fewest random bytes a secret holds.
MIN_SECRET_BYTES = 24
_PREFIX = "whsec_"
#: How to make a good secret, as the refusal says.
MAKE_ONE = "make one with: python -c \"import base64, os; print('whsec_' + base64.b64encode(os.urandom(32)).decode())\""


def check_secret(secret: str, what: str = ENV_WEBHOOK_SECRET) -> str:
    """``secret`` if it is ``whsec_`` + the base64 of at least :data:`MIN_SECRET_BYTES` bytes.

    Raises:
        ValueError: It is not; the message says why, and how to make one.
    """
    if not secret.startswith(_PREFIX):
        raise ValueError(f"{what} must start with {_PREFIX} (then base64 of {MIN_SECRET_BYTES}+ bytes); {MAKE_ONE}")
    try:
        key = base64.b64decode(secret[len(_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} is not {_PREFIX} followed by base64; {MAKE_ONE}") from None
    if len(key) < MIN_SECRET_BYTES:
        raise ValueError(f"{what} holds {len(key)} bytes; it needs at least {MIN_SECRET_BYTES}; {MAKE_ONE}")
    return secret


def parse_secrets(raw: str) -> tuple[str, ...]:
    """The secrets in ``raw`` (separated by spaces), each checked by :func:`check_secret`."""
    return tuple(check_secret(secret) for secret in raw.split())


class Signer:
    """Signs a callback with each of its secrets (the first is the newest)."""

    def __init__(self, secrets: Sequence[str]) -> None:
        if not secrets:
            raise ValueError("a signer needs at least one secret")
        self._hooks = [Webhook(secret) for secret in secrets]

    def sign(self, msg_id: str, timestamp: datetime, data: str | bytes) -> str:
        """The ``webhook-signature`` header: one ``v1,`` signature per secret, space-separated."""
        return " ".join(hook.sign(msg_id, timestamp, data) for hook in self._hooks)


def signer_from_env() -> Signer | None:
    """The signer for ``PARKGATE_WEBHOOK_SECRET``, or ``None`` when it is not set.

    Raises:
        ValueError: A secret in it is not usable (see :func:`check_secret`).
    """
    secrets = parse_secrets(os.environ.get(ENV_WEBHOOK_SECRET, ""))
    return Signer(secrets) if secrets else None
