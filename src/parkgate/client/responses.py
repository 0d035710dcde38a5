"""How the clients read a response: a success as the call's value, an error response as
the exception it stands for (the library's own where the service names one, else the
client's, :mod:`parkgate.client.errors`).

Which exception that is comes from the error classes themselves (:mod:`parkgate.errors`):
the class that states the body's ``error`` code, else the :class:`ErrorResponse` subclass
that claims the status, and that class's :meth:`~parkgate.errors.ParkgateError.from_wire`
builds it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import httpx

from parkgate import errors
from parkgate.errors import ErrorResponse, ParkgateError, ServerError, UnexpectedResponse

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


def _error_classes() -> list[type[ParkgateError]]:
    """Every error class :mod:`parkgate.errors` defines."""
    return [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, ParkgateError) and value.__module__ == errors.__name__
    ]


#: The class that states each ``error`` code the service answers with. ``ErrorResponse``'s
#: own codes are left out: an answer with one of them is read by its status.
BY_CODE: dict[str, type[ParkgateError]] = {
    code: kind for kind in _error_classes() if kind is not ErrorResponse for code in kind.declared_codes()
}
#: The client's error for any error response of a status whose code no class states.
BY_STATUS: dict[int, type[ErrorResponse]] = {
    kind.http_status: kind
    for kind in _error_classes()
    if issubclass(kind, ErrorResponse) and vars(kind).get("claims_status", False)
}


def raise_error(call: Call[Any], response: httpx.Response, data: Any) -> NoReturn:
    """Raise the exception an error response stands for (see :mod:`parkgate.client.errors`).

    A library exception is raised with the :class:`ErrorResponse` it was read from as its
    ``__cause__``.
    """
    status = response.status_code
    code = data.get("error") if isinstance(data, dict) and isinstance(data.get("error"), str) else None
    detail = str(data.get("detail", "")) if code is not None else (response.reason_phrase or f"HTTP {status}")
    retry_after = _retry_after(response.headers.get("Retry-After"))
    error = _kind(status, code).from_wire(status, code, detail, data, retry_after, call.about)
    if isinstance(error, ErrorResponse):
        raise error
    raise error from ErrorResponse(status, code, detail, data, retry_after)


def _kind(status: int, code: str | None) -> type[ParkgateError]:
    """The class an error response of ``status`` and ``code`` is read as."""
    if code is not None and code in BY_CODE:
        return BY_CODE[code]
    if status in BY_STATUS:
        return BY_STATUS[status]
    if status >= 500:
        return ServerError
    return UnexpectedResponse if code is None else ErrorResponse


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds; ``None`` when absent or not a number."""
    try:
        return None if value is None else max(0.0, float(value))
    except ValueError:  # an HTTP date: the server sends seconds, a proxy may not
        return None
