"""The ``error`` codes of the API's error bodies that a client branches on: one definition
for the server that answers with them (:mod:`parkgate.http.errors`, :mod:`parkgate.http.guard`)
and the client that reads them (:mod:`parkgate.client`)."""

from __future__ import annotations

from parkgate.errors import (
    AskAlreadyOpen,
    CallbackNotFailed,
    ConversationBusy,
    InputError,
    ParkgateError,
    RunClosed,
    RunStillAsking,
    StoppingPointError,
    StoreError,
    StoreUnavailable,
    UnknownAsk,
    UnknownRun,
    UnknownWorkflow,
)

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

#: The library's errors and what the API answers for each: status and ``error`` code. An
#: error takes the entry of the nearest class in its MRO: ``ParkgateError``'s is for one
#: that has no entry of its own.
LIBRARY_ERRORS: tuple[tuple[type[Exception], int, str], ...] = (
    (ParkgateError, 422, REFUSED),
    (InputError, 422, INVALID_INPUT),
    (StoppingPointError, 422, MALFORMED_STOPPING_POINT),
    (AskAlreadyOpen, 409, ASK_ALREADY_OPEN),
    (ConversationBusy, 409, CONVERSATION_BUSY),
    (RunClosed, 409, RUN_CLOSED),
    (RunStillAsking, 409, RUN_STILL_ASKING),
    (CallbackNotFailed, 409, CALLBACK_NOT_FAILED),
    (UnknownAsk, 404, UNKNOWN_ASK),
    (UnknownRun, 404, UNKNOWN_RUN),
    (UnknownWorkflow, 404, UNKNOWN_WORKFLOW),
    (StoreError, 503, STORE_ERROR),
    (StoreUnavailable, 503, STORE_UNAVAILABLE),
)
