"""Verifying parkgate's callbacks, for receivers.

Callbacks are signed per the Standard Webhooks spec when the server has a secret
(``PARKGATE_WEBHOOK_SECRET``, ``whsec_`` + base64): ``webhook-id`` (the ask id, the same
on every attempt), ``webhook-timestamp`` (Unix seconds) and ``webhook-signature``
(``v1,`` + base64 HMAC-SHA256 of ``id.timestamp.body``). A receiver checks all three
against the raw body before it acts::

    from parkgate.webhooks import verify, WebhookVerificationError

    try:
        outcome = verify(request_body_bytes, request_headers, secret)
    except WebhookVerificationError:
        return 401            # forged, altered, or older than 5 minutes
    if already_seen(outcome["ask_id"]):
        return 200            # delivery is at least once: the same id may come again
    act_on(outcome)           # outcome["status"]: answered, cancelled or expired

Any Standard Webhooks library verifies them as well; this wraps the ``standardwebhooks``
package's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError


def verify(body: bytes | str, headers: Mapping[str, str], secret: str) -> dict[str, Any]:
    """The callback's JSON (the ask) if ``headers`` sign ``body`` with ``secret``.

    Args:
        body: The request body exactly as received (verify before parsing it).
        headers: The request's headers, ``webhook-id``, ``webhook-timestamp`` and
            ``webhook-signature`` among them.
        secret: The server's ``PARKGATE_WEBHOOK_SECRET`` (``whsec_`` + base64).

    Returns:
        The ask as the callback's JSON object.

    Raises:
        WebhookVerificationError: A header is missing, the signature is wrong, the
            timestamp is more than 5 minutes from now (a replay), or the body is not a
            JSON object.
    """
    outcome = Webhook(secret).verify(body, dict(headers))
    if not isinstance(outcome, dict):
        raise WebhookVerificationError("the body is not a JSON object")
    return outcome


__all__ = ["WebhookVerificationError", "verify"]
