"""What the server answers for each library error: its status and ``error`` code.

The codes themselves are defined once in :mod:`parkgate.wire_codes`, which the client
imports too; this module re-exports them for the server's modules
(:mod:`parkgate.http.errors`, :mod:`parkgate.http.guard`, ...)."""

from __future__ import annotations

from parkgate import wire_codes as W
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
from parkgate.wire_codes import *  # noqa: F403 (the codes, for the server's modules)

#: The library's errors and what the API answers for each: status and ``error`` code. An
#: error takes the entry of the nearest class in its MRO: ``ParkgateError``'s is for one
#: that has no entry of its own.
LIBRARY_ERRORS: tuple[tuple[type[Exception], int, str], ...] = (
    (ParkgateError, 422, W.REFUSED),
    (InputError, 422, W.INVALID_INPUT),
    (StoppingPointError, 422, W.MALFORMED_STOPPING_POINT),
    (AskAlreadyOpen, 409, W.ASK_ALREADY_OPEN),
    (ConversationBusy, 409, W.CONVERSATION_BUSY),
    (RunClosed, 409, W.RUN_CLOSED),
    (RunStillAsking, 409, W.RUN_STILL_ASKING),
    (CallbackNotFailed, 409, W.CALLBACK_NOT_FAILED),
    (UnknownAsk, 404, W.UNKNOWN_ASK),
    (UnknownRun, 404, W.UNKNOWN_RUN),
    (UnknownWorkflow, 404, W.UNKNOWN_WORKFLOW),
    (StoreError, 503, W.STORE_ERROR),
    (StoreUnavailable, 503, W.STORE_UNAVAILABLE),
)
