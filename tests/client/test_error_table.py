"""Each error's HTTP answer is stated once, on its class in :mod:`parkgate.errors`: the
status and code the server answers with, and the exception the client reads back, are
that one statement. Every error goes through the server's real handlers and back through
the client's reading of the response, and comes back as itself. No store is needed.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

import parkgate
import parkgate.errors
from parkgate.client import wire
from parkgate.client.responses import raise_error
from parkgate.core import events
from parkgate.errors import (
    AskAlreadyOpen,
    CallbackNotFailed,
    CallbackRefused,
    ConversationBusy,
    ErrorResponse,
    Forbidden,
    InputError,
    ParkgateError,
    RateLimited,
    RunClosed,
    RunStillAsking,
    SchemaMissing,
    Scope,
    ServerError,
    SettingsError,
    StoppingPointError,
    StoreClosed,
    StoreError,
    StoreUnavailable,
    TooManyLongPolls,
    TooManyOpenAsks,
    UnexpectedResponse,
    UnknownAsk,
    UnknownRun,
    UnknownWorkflow,
)
from parkgate.http.errors import add_error_handlers
from parkgate.prove import outcome

#: The ids the calls below name: a client rebuilds an error's ids from its call's.
CONVERSATION, ASK, RUN, WORKFLOW = "c-1", "a-1", "r-1", "deploy"
CALL = wire.Call("GET", "v1/fail", lambda data: data, about={"conversation_id": CONVERSATION, "ask_id": ASK})
RUN_CALL = wire.Call("GET", "v1/fail", lambda data: data, about={"run_id": RUN, "workflow": WORKFLOW})

#: One of each error the server answers with a code of its own, and the call it answers.
LIBRARY_ERRORS: list[tuple[ParkgateError, wire.Call[Any]]] = [
    (ParkgateError("refused for a reason of its own"), CALL),
    (InputError("the prompt is not text"), CALL),
    (StoppingPointError("repeats option 1", line=3), CALL),
    (StoppingPointError("has no options"), CALL),
    (AskAlreadyOpen(CONVERSATION, ASK), CALL),
    (ConversationBusy(CONVERSATION), CALL),
    (RunClosed(RUN), RUN_CALL),
    (RunStillAsking(RUN, ASK), RUN_CALL),
    (CallbackNotFailed(ASK, "delivered"), CALL),
    (CallbackNotFailed(ASK, None), CALL),
    (UnknownAsk(ASK), CALL),
    (UnknownRun(RUN), RUN_CALL),
    (UnknownWorkflow(WORKFLOW, ["uml", "review"]), RUN_CALL),
    (StoreError("the database is read-only"), CALL),
    (StoreUnavailable("the connection was cut"), CALL),
]
#: The server's own refusals, read back as the client's error for their code.
SERVER_ONLY: list[tuple[ParkgateError, type[ErrorResponse], float]] = [
    (parkgate.errors.QuotaExceeded("agent", 3, 60), TooManyOpenAsks, 60.0),
    (TooManyLongPolls(100, "PARKGATE_MAX_LONG_POLLS", 5), RateLimited, 5.0),
]


def _error_classes() -> list[type[ParkgateError]]:
    return [
        value
        for value in vars(parkgate.errors).values()
        if isinstance(value, type) and issubclass(value, ParkgateError) and value.__module__ == "parkgate.errors"
    ]


async def _answer(error: ParkgateError) -> httpx.Response:
    """The response an app with the server's error handlers gives when a route raises ``error``."""
    app = FastAPI()
    add_error_handlers(app)

    @app.get("/v1/fail")
    async def fail() -> None:
        raise error

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        return await http.get("/v1/fail")


def _read(call: wire.Call[Any], response: httpx.Response) -> ParkgateError:
    """The exception the client raises for ``response``."""
    with pytest.raises(ParkgateError) as raised:
        raise_error(call, response, response.json() if response.content.startswith(b"{") else None)
    return raised.value


@pytest.mark.parametrize(("error", "call"), LIBRARY_ERRORS, ids=lambda value: type(value).__name__)
async def test_a_library_error_comes_back_through_the_wire_as_itself(
    error: ParkgateError, call: wire.Call[Any]
) -> None:
    response = await _answer(error)
    status, code = type(error).answered_as()
    assert (response.status_code, response.json()["error"]) == (status, code)
    back = _read(call, response)
    assert type(back) is type(error)
    assert (str(back), vars(back)) == (str(error), vars(error))
    assert isinstance(back.__cause__, ErrorResponse)
    assert (back.__cause__.status, back.__cause__.code) == (status, code)


async def test_the_fields_and_headers_an_error_sends_are_those_its_class_states() -> None:
    busy = await _answer(AskAlreadyOpen(CONVERSATION, ASK))
    assert busy.json() == {
        "error": "ask_already_open",
        "detail": f"conversation '{CONVERSATION}' already has open ask {ASK}; answer or cancel it first, "
        'or send "replace": true',
        "open_ask_id": ASK,
    }
    assert str(_read(CALL, busy)).endswith("or pass replace=True")  # the library's sentence, for Python
    retry = await _answer(CallbackNotFailed(ASK, "pending"))
    assert (retry.status_code, retry.json()["callback_status"]) == (409, "pending")
    store = await _answer(StoreUnavailable("cut"))
    assert (store.status_code, store.headers["retry-after"]) == (503, "1")
    polls = await _answer(TooManyLongPolls(1, "PARKGATE_MAX_LONG_POLLS", 7))
    assert (polls.headers["retry-after"], polls.headers["connection"]) == ("7", "close")


@pytest.mark.parametrize(("error", "kind", "retry_after"), SERVER_ONLY, ids=lambda value: type(value).__name__)
async def test_a_refusal_only_the_server_raises_comes_back_as_the_clients_error(
    error: ParkgateError, kind: type[ErrorResponse], retry_after: float
) -> None:
    back = _read(CALL, await _answer(error))
    assert type(back) is kind and isinstance(back, RateLimited)
    assert (back.status, back.code, back.detail, back.retry_after) == (429, error.wire_code, str(error), retry_after)
    assert back.__cause__ is None


@pytest.mark.parametrize(
    ("error", "base"),
    [
        (CallbackRefused("the callback URL reaches an internal address"), InputError),
        (SettingsError("PARKGATE_X is not a number"), ParkgateError),
        (SchemaMissing("tenant_a"), StoreError),
        (StoreClosed("get"), StoreError),
    ],
    ids=lambda value: getattr(value, "__name__", type(value).__name__),
)
async def test_an_error_with_no_code_of_its_own_comes_back_as_its_nearest_base_with_one(
    error: ParkgateError, base: type[ParkgateError]
) -> None:
    back = _read(CALL, await _answer(error))
    assert (type(back), str(back)) == (base, str(error))


def test_every_error_with_a_code_of_its_own_goes_through_the_wire_above() -> None:
    stating = {kind for kind in _error_classes() if "wire_code" in vars(kind) and not issubclass(kind, ErrorResponse)}
    tried = {type(error) for error, _ in LIBRARY_ERRORS} | {type(error) for error, _, _ in SERVER_ONLY}
    assert stating == tried


def _client_cases() -> list[tuple[type[ErrorResponse], str]]:
    return [
        (kind, code)
        for kind in _error_classes()
        if issubclass(kind, ErrorResponse) and kind is not ErrorResponse
        for code in kind.declared_codes()
    ]


@pytest.mark.parametrize(("kind", "code"), _client_cases(), ids=lambda value: getattr(value, "__name__", value))
def test_each_code_of_the_clients_errors_is_read_as_the_class_that_states_it(
    kind: type[ErrorResponse], code: str
) -> None:
    body = {"error": code, "detail": "refused", "scope": "read"}
    back = _read(CALL, httpx.Response(kind.http_status, json=body))
    assert (type(back), back.status, back.code, back.detail) == (kind, kind.http_status, code, "refused")
    if kind is Forbidden:
        assert back.scope is Scope.READ


def test_a_status_is_read_as_the_class_that_claims_it_whatever_the_body() -> None:
    claimed = {kind.http_status: kind for kind in _error_classes() if vars(kind).get("claims_status")}
    assert sorted(claimed) == [400, 401, 403, 413, 415, 429]
    for status, kind in claimed.items():
        page = _read(CALL, httpx.Response(status, text="<html>a proxy's page</html>"))
        assert (type(page), page.code) == (kind, None), status
    for status, kind in ((404, UnexpectedResponse), (422, UnexpectedResponse), (502, ServerError)):
        assert type(_read(CALL, httpx.Response(status, text="<html>"))) is kind, status
    for status, code in ((405, ErrorResponse.METHOD_NOT_ALLOWED), (431, ErrorResponse.REQUEST_HEAD_TOO_LARGE)):
        answer = _read(CALL, httpx.Response(status, json={"error": code, "detail": "no"}))
        assert (type(answer), answer.code) == (ErrorResponse, code)
    framework = httpx.Response(500, json={"error": ErrorResponse.HTTP_ERROR, "detail": "x"})
    assert type(_read(CALL, framework)) is ServerError


def _declared() -> list[str]:
    return [code for kind in _error_classes() for code in kind.declared_codes()]


def test_each_wire_code_is_declared_exactly_once() -> None:
    codes = _declared()
    assert sorted(code for code in set(codes) if codes.count(code) > 1) == []
    assert {"refused", "ask_already_open", "unauthorized", "cross_site", "request_head_too_large"} <= set(codes)
    for kind in _error_classes():
        if "wire_code" in vars(kind):
            assert "http_status" in vars(kind), f"{kind.__name__} states a code without its status"


def test_no_other_module_spells_a_wire_code_out() -> None:
    """The server's modules and the client name a code by its class's attribute, never as a string."""
    codes = set(_declared())
    source = Path(parkgate.__file__).parent
    #: The prove report's word for input refused before the machine, and the event log's
    #: type of a refused message: not wire codes.
    unrelated = {(Path(outcome.__file__), outcome.REFUSED), (Path(events.__file__), events.EventKind.REFUSED.value)}
    spelled = sorted(
        f"{path.relative_to(source)}:{node.lineno} {node.value!r}"
        for path in source.rglob("*.py")
        if path != Path(parkgate.errors.__file__)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value in codes and (path, node.value) not in unrelated
    )
    assert spelled == []
