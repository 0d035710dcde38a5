"""What the wire names, shared by the server and the HTTP client: the ``error`` codes of
the API's error bodies, and the scopes a token may hold.

One definition for the server that answers with them (:mod:`parkgate.http`) and the
client that reads them (:mod:`parkgate.client`): both import this module, and the client
imports nothing of the server package. It imports nothing of parkgate itself.
"""

from __future__ import annotations

from enum import StrEnum


class Scope(StrEnum):
    """What a token may do on ``/v1`` (a 403's body names the one it lacked)."""

    PARK = "park"
    ANSWER = "answer"
    READ = "read"
    OPERATE = "operate"


#: 422: a parkgate error with no code of its own (see :mod:`parkgate.errors`).
REFUSED = "refused"
INVALID_INPUT = "invalid_input"
MALFORMED_STOPPING_POINT = "malformed_stopping_point"
ASK_ALREADY_OPEN = "ask_already_open"
#: 409: the conversation's open ask is another owner's (its id is not given).
CONVERSATION_BUSY = "conversation_busy"
#: 409: the run is complete or another owner's: it takes no new ask.
RUN_CLOSED = "run_closed"
RUN_STILL_ASKING = "run_still_asking"
CALLBACK_NOT_FAILED = "callback_not_failed"
UNKNOWN_ASK = "unknown_ask"
UNKNOWN_RUN = "unknown_run"
UNKNOWN_WORKFLOW = "unknown_workflow"
#: 503: the store is out of reach (``StoreUnavailable``), or failed otherwise (``StoreError``).
STORE_UNAVAILABLE = "store_unavailable"
STORE_ERROR = "store_error"
#: 503 from ``/healthz``: the store answers, but the deliverer's passes fail (or it is being restarted).
DELIVERER_FAILING = "deliverer_failing"
#: 403: a token that speaks for one sender posted a message naming another (nothing changed).
SENDER_MISMATCH = "sender_mismatch"
#: 403: a named token parked an ask for a channel target its tokens-file ``channels`` does not allow.
CHANNEL_NOT_ALLOWED = "channel_not_allowed"
#: 404 for a path no route serves.
NOT_FOUND = "not_found"
#: 422: the body is not what the route's schema takes / is not JSON at all.
INVALID_REQUEST = "invalid_request"
MALFORMED_JSON = "malformed_json"
#: 429: the token has as many open asks as its ``max_open_asks``.
TOO_MANY_OPEN_ASKS = "too_many_open_asks"
#: 429: the server holds as many long-polls (``?wait=``) as ``PARKGATE_MAX_LONG_POLLS``.
TOO_MANY_LONG_POLLS = "too_many_long_polls"
#: 431: the request line and headers are over 64 KiB.
REQUEST_HEAD_TOO_LARGE = "request_head_too_large"

__all__ = [
    "ASK_ALREADY_OPEN",
    "CALLBACK_NOT_FAILED",
    "CHANNEL_NOT_ALLOWED",
    "CONVERSATION_BUSY",
    "DELIVERER_FAILING",
    "INVALID_INPUT",
    "INVALID_REQUEST",
    "MALFORMED_JSON",
    "MALFORMED_STOPPING_POINT",
    "NOT_FOUND",
    "REFUSED",
    "REQUEST_HEAD_TOO_LARGE",
    "RUN_CLOSED",
    "RUN_STILL_ASKING",
    "SENDER_MISMATCH",
    "STORE_ERROR",
    "STORE_UNAVAILABLE",
    "TOO_MANY_LONG_POLLS",
    "TOO_MANY_OPEN_ASKS",
    "UNKNOWN_ASK",
    "UNKNOWN_RUN",
    "UNKNOWN_WORKFLOW",
    "Scope",
]
