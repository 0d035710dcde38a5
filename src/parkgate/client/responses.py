"""How the clients read a response: a success as the call's value, an error response as
the exception it stands for (the library's own where the service names one, else the
client's, :mod:`parkgate.client.errors`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from parkgate import wire_codes as codes
from parkgate.client.errors import (
    BadRequest,
    BodyTooLarge,
    ErrorResponse,
    Forbidden,
    InvalidRequest,
    NotFound,
    RateLimited,
    ServerError,
    TooManyOpenAsks,
    Unauthorized,
    UnexpectedResponse,
    UnsupportedMediaType,
)
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

if TYPE_CHECKING:
    from parkgate.client.wire import Call

T = TypeVar("T")


def result(call: Call[T], response: httpx.Response) -> T:
    """The call's value from a success; otherwise raise the error the response stands for."""
    data = _body(response)
    if not response.is_success:
        raise_error(call, response, data)
    if data is None:
        raise UnexpectedResponse(response.status_code, None, "not parkgate's JSON")
    try:
        return call.read(data)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        detail = f"the body is not what {call.method} /{call.path} answers ({type(error).__name__}: {error})"
        raise UnexpectedResponse(response.status_code, None, detail, data) from None


def _body(response: httpx.Response) -> Any:
    """The response's JSON, or ``None`` when it is not JSON."""
    try:
        return response.json()
    except ValueError:  # not JSON, or not UTF-8
        return None


#: The library's exception for each ``error`` code the service answers with, built from the
#: call's ids and the error body (its ``detail`` becomes the message).
EXCEPTION_FOR_CODE: dict[str, Callable[[Mapping[str, str], Mapping[str, Any], str], Exception]] = {
    codes.REFUSED: lambda about, body, detail: ParkgateError(detail),
    codes.INVALID_INPUT: lambda about, body, detail: InputError(detail),
    codes.MALFORMED_STOPPING_POINT: lambda about, body, detail: StoppingPointError(detail),
    codes.ASK_ALREADY_OPEN: lambda about, body, detail: AskAlreadyOpen(
        about.get("conversation_id", ""), str(body.get("open_ask_id", ""))
    ),
    codes.CONVERSATION_BUSY: lambda about, body, detail: ConversationBusy(about.get("conversation_id", "")),
    codes.RUN_CLOSED: lambda about, body, detail: RunClosed(about.get("run_id", "")),
    codes.RUN_STILL_ASKING: lambda about, body, detail: RunStillAsking(
        about.get("run_id", ""), str(body.get("open_ask_id", ""))
    ),
    codes.CALLBACK_NOT_FAILED: lambda about, body, detail: CallbackNotFailed(
        about.get("ask_id", ""), body.get("callback_status")
    ),
    codes.UNKNOWN_ASK: lambda about, body, detail: UnknownAsk(about.get("ask_id", "")),
    codes.UNKNOWN_RUN: lambda about, body, detail: UnknownRun(about.get("run_id", "")),
    codes.UNKNOWN_WORKFLOW: lambda about, body, detail: UnknownWorkflow(about.get("workflow", ""), []),
    codes.STORE_UNAVAILABLE: lambda about, body, detail: StoreUnavailable(detail),
    codes.STORE_ERROR: lambda about, body, detail: StoreError(detail),
}

#: The client's own error for each status (and, on 404/422/429, code) with no library exception.
_BY_STATUS: dict[int, type[ErrorResponse]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    413: BodyTooLarge,
    415: UnsupportedMediaType,
    429: RateLimited,
}
_BY_CODE: dict[str, type[ErrorResponse]] = {
    codes.NOT_FOUND: NotFound,
    codes.INVALID_REQUEST: InvalidRequest,
    codes.MALFORMED_JSON: InvalidRequest,
    codes.TOO_MANY_OPEN_ASKS: TooManyOpenAsks,
}


def raise_error(call: Call[Any], response: httpx.Response, data: Any) -> None:
    """Raise the exception an error response stands for (see :mod:`parkgate.client.errors`)."""
    status = response.status_code
    code = data.get("error") if isinstance(data, dict) and isinstance(data.get("error"), str) else None
    detail = str(data.get("detail", "")) if code is not None else (response.reason_phrase or f"HTTP {status}")
    retry_after = _retry_after(response.headers.get("Retry-After"))
    if code in EXCEPTION_FOR_CODE:
        error = EXCEPTION_FOR_CODE[code](call.about, data, detail)
        if not isinstance(error, AskAlreadyOpen):  # its sentence names replace=True; the server's, the JSON field
            error.args = (detail,)  # the server's own words (the same sentence the library would say)
        raise error from ErrorResponse(status, code, detail, data, retry_after)
    if code in _BY_CODE:
        kind = _BY_CODE[code]
    elif status in _BY_STATUS:
        kind = _BY_STATUS[status]
    elif status >= 500:
        kind = ServerError
    elif code is None:
        kind = UnexpectedResponse
    else:
        kind = ErrorResponse
    raise kind(status, code, detail, data, retry_after)


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds; ``None`` when absent or not a number."""
    try:
        return None if value is None else max(0.0, float(value))
    except ValueError:  # an HTTP date: the server sends seconds, a proxy may not
        return None
