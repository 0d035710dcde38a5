"""Each error a real server answers with, raised by the client as the library's exception or
as the client's own (:mod:`parkgate.client.errors`), sync and async, on both stores."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from live_server import Receiver, Server, TcpProxy, free_port, running, wait_until

from parkgate import ReplyKind
from parkgate.client import (
    AsyncClient,
    Client,
    ClientError,
    ErrorResponse,
    Forbidden,
    InvalidRequest,
    NotFound,
    RateLimited,
    ServerError,
    TooManyOpenAsks,
    Unauthorized,
    UnexpectedResponse,
    Unreachable,
    UnsupportedMediaType,
)
from parkgate.core.model import CallbackStatus
from parkgate.errors import (
    AskAlreadyOpen,
    CallbackNotFailed,
    InputError,
    ParkgateError,
    RunStillAsking,
    StoppingPointError,
    StoreUnavailable,
    UnknownAsk,
    UnknownRun,
    UnknownWorkflow,
)
from parkgate.http.settings import ENV_PG_TIMEOUT
from parkgate.http.tokens import Scope


def response_of(error: BaseException) -> ErrorResponse:
    """The error response a library exception was raised from."""
    assert isinstance(error.__cause__, ErrorResponse), repr(error.__cause__)
    return error.__cause__


# -- the library's exceptions ------------------------------------------------------------


def test_a_busy_conversation_is_ask_already_open_naming_the_open_ask(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    first = client.ask(conv, "Deploy?", ["Yes", "No"])
    for park in (lambda: client.ask(conv, "Again?", ["A"]), lambda: client.start(conv, "uml")):
        with pytest.raises(AskAlreadyOpen) as refused:
            park()
        assert (refused.value.conversation_id, refused.value.ask_id) == (conv, first.ask_id)
        assert str(refused.value) == str(AskAlreadyOpen(conv, first.ask_id))  # the library's own sentence
        assert (response_of(refused.value).status, response_of(refused.value).code) == (409, "ask_already_open")
    assert client.get(first.ask_id).is_open and client.get(first.ask_id).mismatches == 0


def test_unknown_ids_are_the_librarys_unknown_errors(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    missing = f"no-such-{conv}"
    for call in (client.get, client.cancel, client.retry_callback, lambda ask_id: client.wait(ask_id, 1)):
        with pytest.raises(UnknownAsk) as unknown:
            call(missing)
        assert unknown.value.ask_id == missing and response_of(unknown.value).status == 404
    with pytest.raises(UnknownRun) as no_run:
        client.finish_run(missing)
    assert no_run.value.run_id == missing and isinstance(no_run.value, LookupError)
    with pytest.raises(UnknownWorkflow, match="no workflow named 'nope'; known: uml"):
        client.start(conv, "nope")


def test_a_run_with_an_open_ask_is_run_still_asking(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    asked = client.ask(conv, "Deploy?", ["Yes", "No"])
    with pytest.raises(RunStillAsking) as still:
        client.finish_run(asked.run_id)
    assert (still.value.run_id, still.value.ask_id) == (asked.run_id, asked.ask_id)
    assert response_of(still.value).code == "run_still_asking"
    assert client.run(asked.run_id).status == "running"


def test_a_callback_that_has_not_failed_cannot_be_retried(
    served: Server, connect: Any, conv: str, receiver: Receiver
) -> None:
    client = connect(served)
    plain = client.ask(conv, "Deploy?", ["Yes", "No"])
    with pytest.raises(CallbackNotFailed) as none:
        client.retry_callback(plain.ask_id)
    assert (none.value.ask_id, none.value.status) == (plain.ask_id, None)
    hooked = client.ask(conv + "-hook", "Deploy?", ["Yes", "No"], callback_url=receiver.url)
    client.handle(conv + "-hook", "1")
    wait_until(lambda: client.get(hooked.ask_id).callback.status is CallbackStatus.DELIVERED, 30, "the delivery")
    with pytest.raises(CallbackNotFailed, match="its callback is delivered") as delivered:
        client.retry_callback(hooked.ask_id)
    assert delivered.value.status == "delivered" and response_of(delivered.value).status == 409


def test_bad_input_is_an_input_error_from_the_server_or_before_sending(served: Server, connect: Any, conv: str) -> None:
    client = connect(served)
    with pytest.raises(InputError, match="control character") as control:  # the gateway's own check, on the server
        client.ask("a\x01b", "Deploy?", ["Yes", "No"])
    assert response_of(control.value).code == "invalid_input"
    with pytest.raises(StoppingPointError, match="repeats option 1") as duplicate:
        client.ask(conv, "Pick one", ["A", "A"])
    assert response_of(duplicate.value).code == "malformed_stopping_point"
    with pytest.raises(InvalidRequest, match="prompt") as schema:  # the server's schema: an InputError too
        client.ask(conv, "x" * 5000)
    assert isinstance(schema.value, InputError) and (schema.value.status, schema.value.code) == (422, "invalid_request")

    # Refused before anything is sent: what the URL path or the JSON cannot carry.
    for refuse in (
        lambda: client.get(""),
        lambda: client.handle(conv, b"\xff\xfe"),
        lambda: client.wait("some-ask", "soon"),
        lambda: client.ask(conv, "Deploy?", ["Yes"], ttl=-1),
        lambda: client.ask(conv, "Deploy?", ["Yes"], context={"when": object()}),
        lambda: client.ask_from_text(conv, "x" * 5_000_000),  # as Gateway.ask_from_text: never a 413
    ):
        with pytest.raises(InputError) as local:
            refuse()
        assert local.value.__cause__ is None
    assert client.handle(conv, "1").kind is ReplyKind.PASS  # nothing was parked by any of them


def test_a_base_url_that_reaches_no_route_is_not_found(served: Server, connect: Any, conv: str) -> None:
    with pytest.raises(NotFound) as nowhere:
        connect(served.url + "/somewhere/else").handle(conv, "hi")
    assert (nowhere.value.status, nowhere.value.code) == (404, "not_found")


class PlainTextTransport(httpx.HTTPTransport):
    """The ordinary transport behind a proxy that relabels every body as text/plain."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if "content-type" in request.headers:
            request.headers["Content-Type"] = "text/plain"
        return super().handle_request(request)


class AsyncPlainTextTransport(httpx.AsyncHTTPTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if "content-type" in request.headers:
            request.headers["Content-Type"] = "text/plain"
        return await super().handle_async_request(request)


def test_a_body_relabelled_on_the_way_is_unsupported_media_type(
    served: Server, connect: Any, flavour: str, conv: str
) -> None:
    transport = PlainTextTransport() if flavour == "sync" else AsyncPlainTextTransport()
    with pytest.raises(UnsupportedMediaType) as relabelled:
        connect(served, transport=transport).ask(conv, "Deploy?", ["Yes", "No"])
    assert (relabelled.value.status, relabelled.value.code) == (415, "unsupported_media_type")


def test_a_server_that_does_not_answer_is_unreachable(connect: Any, conv: str) -> None:
    with pytest.raises(Unreachable) as gone:
        connect(f"http://127.0.0.1:{free_port()}", timeout=5).handle(conv, "hi")
    assert isinstance(gone.value.__cause__, httpx.ConnectError) and str(gone.value)
    assert isinstance(gone.value, ClientError) and isinstance(gone.value, ParkgateError)


def test_a_server_that_is_not_parkgate_is_an_unexpected_response(connect: Any, conv: str, receiver: Receiver) -> None:
    other = connect(f"http://127.0.0.1:{receiver.port}")
    with pytest.raises(UnexpectedResponse) as odd:
        other.handle(conv, "hi")  # a 200 with an empty body
    assert (odd.value.status, odd.value.code, odd.value.detail) == (200, None, "not parkgate's JSON")
    with pytest.raises(ServerError) as unsupported:
        other.get("some-ask")  # it answers GET with 501 and an HTML page
    assert (unsupported.value.status, unsupported.value.code) == (501, None)


# -- tokens: 401, 403, 429 -------------------------------------------------------------------


def test_no_token_or_a_wrong_one_is_unauthorized(guarded: Any, connect: Any, conv: str) -> None:
    for token in (None, "not-the-token"):
        with pytest.raises(Unauthorized) as refused:
            connect(guarded, token).handle(conv, "hi")
        assert (refused.value.status, refused.value.code) == (401, "unauthorized")
        assert "not-the-token" not in str(refused.value)
    assert connect(guarded, guarded.tokens["everything"]).handle(conv, "hi").kind is ReplyKind.PASS


def test_a_token_without_the_calls_scope_is_forbidden_naming_the_scope(guarded: Any, connect: Any, conv: str) -> None:
    auditor = connect(guarded, guarded.tokens["auditor"])
    agent = connect(guarded, guarded.tokens["agent"])
    everything = connect(guarded, guarded.tokens["everything"])
    theirs = everything.ask(conv, "Deploy?", ["Yes", "No"])
    mine = agent.ask(conv + "-agent", "Ship?", ["Yes", "No"])
    for call, scope in (
        (lambda: auditor.ask(conv + "-x", "Deploy?", ["Yes"]), Scope.PARK),
        (lambda: agent.handle(conv, "1"), Scope.ANSWER),
        (lambda: auditor.cancel(theirs.ask_id), Scope.OPERATE),
    ):
        with pytest.raises(Forbidden) as refused:
            call()
        assert (refused.value.status, refused.value.code, refused.value.scope) == (403, "missing_scope", scope)
        assert f"'{scope.value}'" in refused.value.detail
    with pytest.raises(UnknownAsk):  # a park token reads only the asks it parked: another's is unknown to it
        agent.get(theirs.ask_id)
    assert agent.get(mine.ask_id).is_open and auditor.get(theirs.ask_id).is_open  # nothing changed
    everything.cancel(theirs.ask_id)
    everything.cancel(mine.ask_id)


def test_a_token_over_its_rate_is_rate_limited_with_retry_after(guarded: Any, connect: Any) -> None:
    slow = connect(guarded, guarded.tokens["slow"])
    with pytest.raises(RateLimited) as limited:
        for _ in range(2):  # its one request a second's worth may be left from another test
            slow.workflows()
    assert (limited.value.status, limited.value.code) == (429, "rate_limited")
    assert not isinstance(limited.value, TooManyOpenAsks)
    assert limited.value.retry_after is not None and limited.value.retry_after >= 1


def test_a_token_at_its_open_ask_cap_is_too_many_open_asks(guarded: Any, connect: Any, conv: str) -> None:
    capped = connect(guarded, guarded.tokens["capped"])
    with pytest.raises(TooManyOpenAsks) as full:
        for number in range(2):  # max_open_asks = 1 (the first may be parked by another test already)
            capped.ask(f"{conv}-{number}", "Deploy?", ["Yes", "No"])
    assert isinstance(full.value, RateLimited)
    assert (full.value.status, full.value.code, full.value.retry_after) == (429, "too_many_open_asks", 60.0)


# -- 503 ------------------------------------------------------------------------------------


@pytest.mark.postgres
async def test_a_store_out_of_reach_is_store_unavailable(pg_url: str, pg_schema: str, tmp_path: Any) -> None:
    parts = urlsplit(pg_url)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432).start()
    user = f"{parts.username}:{parts.password}@" if parts.password else f"{parts.username}@" if parts.username else ""
    url = urlunsplit((parts.scheme, f"{user}127.0.0.1:{proxy.port}", parts.path, parts.query, ""))
    # A request waits PARKGATE_PG_TIMEOUT for a connection before its 503: 1 s, not the 3 s default.
    server = Server(url, tmp_path / "serve.log", schema=pg_schema, in_thread=True, extra_env={ENV_PG_TIMEOUT: "1"})
    try:
        with running(server.start()), Client(server.url, timeout=30) as client:
            asked = client.ask("away", "Deploy?", ["Yes", "No"])
            proxy.cut()
            with pytest.raises(StoreUnavailable) as away:
                client.handle("away", "1")
            assert (response_of(away.value).status, response_of(away.value).code) == (503, "store_unavailable")
            assert response_of(away.value).retry_after == 1.0
            async with AsyncClient(server.url, timeout=30) as async_client:
                with pytest.raises(StoreUnavailable):
                    await async_client.get(asked.ask_id)
    finally:
        proxy.cut()


# -- without a server ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"base_url": "ftp://127.0.0.1:8080"}, "base_url must look like http://host:port"),
        ({"base_url": "http://127.0.0.1:abc"}, "base_url 'http://127.0.0.1:abc' is not a valid URL"),
        ({"base_url": "http://127.0.0.1:8080", "token": "two words"}, "token must be printable ASCII"),
        ({"base_url": "http://127.0.0.1:8080", "timeout": 0}, "timeout must be a number of seconds above 0"),
        ({"base_url": "http://127.0.0.1:8080", "long_poll": 61}, "long_poll must be .* at most 60"),
    ],
)
@pytest.mark.parametrize("make", [Client, AsyncClient])
def test_a_client_with_a_bad_argument_is_an_input_error_naming_it(
    make: Any, arguments: dict[str, Any], says: str
) -> None:
    with pytest.raises(InputError, match=says) as refused:
        make(**arguments)
    assert "two words" not in str(refused.value)  # a token is never shown
