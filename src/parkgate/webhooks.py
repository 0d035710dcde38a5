"""Verifying parkgate's callbacks, for receivers.

Every callback is one event of an ask, in Standard Webhooks' recommended shape::

    {"type": "ask.closed", "timestamp": "2026-01-01T12:00:00+00:00", "data": {...the ask...}}

``type`` is ``ask.opened`` (sent to the server-wide ``PARKGATE_EVENTS_URL`` only),
``ask.reminder``, ``ask.escalated`` or ``ask.closed``. Callbacks are signed per the
Standard Webhooks spec when the server has a secret (``PARKGATE_WEBHOOK_SECRET``,
``whsec_`` + base64): ``webhook-id`` (the event's id, the same on every attempt),
``webhook-timestamp`` (Unix seconds) and ``webhook-signature`` (``v1,`` + base64
HMAC-SHA256 of ``id.timestamp.body``; while a secret is rotated, one such signature per
secret, separated by spaces). A receiver checks all three against the raw body before it
acts::

    from parkgate.webhooks import verify, WebhookVerificationError

    try:
        event = verify(request_body_bytes, request_headers, secret)
    except WebhookVerificationError:
        return 401            # forged, altered, or older than 5 minutes
    if already_seen(request_headers["webhook-id"]):
        return 200            # delivery is at least once: the same event may come again
    if event["type"] == "ask.closed":
        act_on(event["data"])  # event["data"]["status"]: answered, cancelled or expired

Any Standard Webhooks library verifies them as well; this wraps the ``standardwebhooks``
package's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError


def verify(body: bytes | str, headers: Mapping[str, str], secret: str | Sequence[str]) -> dict[str, Any]:
    """The callback's event if ``headers`` sign ``body`` with ``secret``.

    Args:
        body: The request body exactly as received (verify before parsing it).
        headers: The request's headers, ``webhook-id``, ``webhook-timestamp`` and
            ``webhook-signature`` among them.
        secret: The server's ``PARKGATE_WEBHOOK_SECRET`` (``whsec_`` + base64), or several
            such secrets (while one is rotated): any one of them verifies.

    Returns:
        The event: ``{"type", "timestamp", "data"}``, ``data`` the ask's JSON object.

    Raises:
        WebhookVerificationError: A header is missing, no signature matches a secret, the
            timestamp is more than 5 minutes from now (a replay), or the body is not an event.
    """
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise WebhookVerificationError("no secret to verify with")
    failure: WebhookVerificationError | None = None
    for one in secrets:
        try:
            event = Webhook(one).verify(body, dict(headers))
        except WebhookVerificationError as error:
            failure = error
            continue
        if not isinstance(event, dict) or not isinstance(event.get("data"), dict) or "type" not in event:
            raise WebhookVerificationError("the body is not a parkgate event (type, timestamp, data)")
        return event
    assert failure is not None
    raise failure


__all__ = ["WebhookVerificationError", "verify"]
