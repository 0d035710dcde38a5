"""The errors parkgate raises: one tree, rooted at :class:`ParkgateError`, all defined here.

``except ParkgateError`` catches every one of them, the store's and the HTTP client's
included. Over HTTP each is a JSON ``{"error": code, "detail": message}`` with the
status and code shown, never a 500: the server reads them off
:data:`parkgate.http.codes.LIBRARY_ERRORS`, and one that is not listed there answers as
its nearest listed base. The tree, drawn as httpx draws its own::

    * ParkgateError .......................... 422 refused
      x InputError (a ValueError) ............ 422 invalid_input
        + StoppingPointError ................. 422 malformed_stopping_point
        + CallbackRefused .................... 422 invalid_input: the fence refused the URL
      x ConfigurationError (a ValueError): the server or CLI does not start
        + SettingsError: a setting (an environment variable, an option)
        + TokenFileError: the tokens file
      x AskAlreadyOpen ....................... 409 ask_already_open
      x ConversationBusy ..................... 409 conversation_busy
      x RunClosed ............................ 409 run_closed
      x RunStillAsking ....................... 409 run_still_asking
      x CallbackNotFailed .................... 409 callback_not_failed
      x UnknownAsk (a LookupError) ........... 404 unknown_ask
      x UnknownRun (a LookupError) ........... 404 unknown_run
      x UnknownWorkflow (a LookupError) ...... 404 unknown_workflow
      x QuotaExceeded ........................ 429 too_many_open_asks, with Retry-After
      x TooManyLongPolls ..................... 429 too_many_long_polls, with Retry-After
      x MissingExtra (a ModuleNotFoundError): an adapter imported without its framework
      x NotThisGraph, GraphKeepsAsking: the LangGraph adapter's refusals
      x Rejected: a call ``requires_approval`` gates was not approved; it did not run
      x ChannelJobFailed: kept as a channel job's last_error (as an unsendable callback's), never raised
      x StoreError ........................... 503 store_error, with Retry-After
        + StoreUnavailable ................... 503 store_unavailable
        + StoreClosed: the Gateway is closed
        + StoreConflict: a race, retried by the gateway before it reaches anyone
        + SchemaMissing: a PostgreSQL schema to create first (parkgate migrate)
        + OutOfBounds: an audit's read past its --timeout or --max-rows
      x ClientError: raised by the HTTP client of its own (parkgate.client)
        + Unreachable: no answer (refused, timed out, cut off)
        + ErrorResponse: an error response with no library exception of its own
          - BadRequest 400, Unauthorized 401, Forbidden 403, NotFound 404,
            BodyTooLarge 413, UnsupportedMediaType 415, ServerError 5xx,
            UnexpectedResponse (not parkgate's JSON)
          - InvalidRequest 422 (also an InputError)
          - RateLimited 429
            · TooManyOpenAsks 429 too_many_open_asks

``InputError`` is bad input (a :class:`~parkgate.workflow.Workflow` defined wrong included),
refused before anything is read or written: the parked ask stays as it is. An ``Unknown*``
error is an id that names nothing (or nothing of this caller's). ``ConfigurationError``
stops a start, never a request. ``StoreError`` is a database out of reach or unusable: the
request may succeed once it is back. The client raises an error response that stands for a
library error as that library exception (``ask_already_open`` as :class:`AskAlreadyOpen`).
"""

from __future__ import annotations

from typing import Any

from parkgate.wire_codes import Scope

#: How :class:`AskAlreadyOpen` says "replace it" to a Python caller, and to an HTTP client.
REPLACE_IN_PYTHON = "pass replace=True"
REPLACE_IN_JSON = 'send "replace": true'


class ParkgateError(Exception):
    """The root of every error parkgate raises: ``except ParkgateError`` catches them all."""


class InputError(ParkgateError, ValueError):
    """The input is not usable as given (not text, too long, an empty id, ...).

    Raised before anything is read or written: the parked ask stays as it was.
    """


class StoppingPointError(InputError):
    """A stopping point that cannot be parked as written. The message names the line."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        self.reason = message
        super().__init__(f"line {line}: {message}" if line is not None else message)

    def __reduce__(self) -> tuple[type[StoppingPointError], tuple[str, int | None]]:
        return (type(self), (self.reason, self.line))


class CallbackRefused(InputError):
    """A callback URL the fence refuses: it does not parse, or it reaches an internal
    address that the allow-list does not name (:mod:`parkgate.core.fence`)."""


class ConfigurationError(ParkgateError, ValueError):
    """A start refused: the server, or a command, cannot run as configured."""


class SettingsError(ConfigurationError):
    """A setting the server cannot start with; the message names it."""


class TokenFileError(ConfigurationError):
    """The tokens file cannot be used; the message names the file and the problem."""


class AskAlreadyOpen(ParkgateError):
    """The conversation already has an open ask; park with ``replace`` to replace it."""

    def __init__(self, conversation_id: str, ask_id: str) -> None:
        self.conversation_id = conversation_id
        self.ask_id = ask_id
        super().__init__(self.message(REPLACE_IN_PYTHON))

    def message(self, replace: str) -> str:
        """The message, with ``replace`` saying how this caller replaces the open ask."""
        return (
            f"conversation {self.conversation_id!r} already has open ask {self.ask_id}; "
            f"answer or cancel it first, or {replace}"
        )


class ConversationBusy(ParkgateError):
    """The conversation's open ask is another owner's: it can be neither replaced nor
    named. Unlike :class:`AskAlreadyOpen` it carries no ask id, so a caller learns
    nothing of an ask it does not own."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        super().__init__(
            f"conversation {conversation_id!r} has an open ask of another owner; "
            "it cannot be replaced: try again once it has closed"
        )


class RunClosed(ParkgateError):
    """The run named takes no new ask: it is complete (answered and finished, cancelled,
    expired), or another owner's. Both read the same, so a caller learns nothing of a run
    it does not own; a run is never reopened."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(
            f"run {run_id!r} takes no new ask: it is complete, or another owner's; leave run_id out to start a new run"
        )


class RunStillAsking(ParkgateError):
    """The run's pending ask is still open: answer or cancel it before finishing the run."""

    def __init__(self, run_id: str, ask_id: str) -> None:
        self.run_id = run_id
        self.ask_id = ask_id
        super().__init__(f"run {run_id!r} still has open ask {ask_id}; answer or cancel it before finishing the run")


class CallbackNotFailed(ParkgateError):
    """Only a failed callback can be re-armed; this ask's is pending, delivered, or absent."""

    def __init__(self, ask_id: str, status: str | None) -> None:
        self.ask_id = ask_id
        self.status = status
        where = f"its callback is {status}" if status else "it has no callback queued"
        super().__init__(f"ask {ask_id} has no failed callback to retry: {where}")


class UnknownAsk(ParkgateError, LookupError):
    """No ask has this id."""

    def __init__(self, ask_id: str) -> None:
        self.ask_id = ask_id
        super().__init__(f"no ask with id {ask_id!r}")


class UnknownRun(ParkgateError, LookupError):
    """No run has this id."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run with id {run_id!r}")


class UnknownWorkflow(ParkgateError, LookupError):
    """No workflow of this name is registered with the gateway."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"no workflow named {name!r}; known: {', '.join(known) or 'none'}")


class QuotaExceeded(ParkgateError):
    """The caller holds as many open asks and undelivered callbacks as its token allows
    (:mod:`parkgate.http.quota`); ``retry_after`` is in seconds."""

    def __init__(self, token: str, cap: int, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(
            f"the token {token!r} holds {cap} open asks and undelivered callbacks, its max_open_asks: "
            "answer, cancel or let some asks expire, or let their callbacks be delivered, before parking more"
        )


class TooManyLongPolls(ParkgateError):
    """The server process holds as many long-polls as its cap allows
    (:mod:`parkgate.http.longpolls`); ``retry_after`` is in seconds."""

    def __init__(self, cap: int, setting: str, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(f"the server holds {cap} long-polls, its {setting}: retry later, or read without wait")


class MissingExtra(ParkgateError, ModuleNotFoundError):
    """An adapter was imported without the framework it needs: the message names the
    extra to install (``pip install 'parkgate[adapters]'``)."""

    def __init__(self, adapter: str, missing: ModuleNotFoundError, extra: str = "adapters") -> None:
        self.adapter = adapter
        self.extra = extra
        module = missing.name or str(missing)
        super().__init__(
            f"{adapter} needs {module!r}, which is not installed: pip install 'parkgate[{extra}]'",
            name=missing.name,
        )


class NotThisGraph(ParkgateError):
    """The conversation's parked ask is not one this bridge's graph can resume.

    Raised before the message is applied: nothing was changed. ``thread_id`` is the owning
    thread (``None`` when the ask was not parked by the LangGraph adapter).
    """

    def __init__(self, conversation_id: str, ask_id: str, run_id: str, thread: str | None, graph: str | None) -> None:
        self.conversation_id = conversation_id
        self.ask_id = ask_id
        self.run_id = run_id
        self.thread_id = thread
        if thread is None:
            owner = f"run {run_id}, which is not a LangGraph thread (answer it with Gateway.handle)"
        else:
            owner = f"thread {thread!r} of graph {graph!r}, which this graph cannot resume"
        super().__init__(
            f"conversation {conversation_id!r}: its parked ask {ask_id} belongs to {owner}; nothing was changed"
        )


class GraphKeepsAsking(ParkgateError):
    """After its ask closed, the thread kept interrupting: its nodes ignore ``Closed``."""

    def __init__(self, thread: str, resumes: int) -> None:
        self.thread_id = thread
        super().__init__(
            f"thread {thread!r} interrupted again each time it was resumed with Closed "
            f"({resumes} times): a node must return when interrupt() gives it a Closed"
        )


class Rejected(ParkgateError):
    """A gated call did not run: its approval ask closed ``outcome`` (``rejected``, ``cancelled``,
    ``expired``, or a cancel's own outcome); ``ask_id`` is that ask."""

    def __init__(self, call: str, ask_id: str, outcome: str) -> None:
        self.ask_id, self.outcome = ask_id, outcome
        super().__init__(f"{call} was not approved ({outcome}): it did not run")


class ChannelJobFailed(ParkgateError):
    """A channel job that can never succeed as it is (an ask never posted, a target the
    platform refuses for good): given up at once, kept as its ``channel_outbox`` row's
    ``last_error`` (:mod:`parkgate.channels`); no caller sees it raised."""


class StoreError(ParkgateError):
    """The store cannot be used as asked (not a parkgate database, read-only, ...).

    Over HTTP a 503 with ``Retry-After``: it may succeed once the database is back or fixed.
    """


class StoreUnavailable(StoreError):
    """The database is out of reach for now (a restart, a network cut); try again."""


class StoreClosed(StoreError):
    """The store was closed (:meth:`Gateway.close`, or the end of its ``with`` block); it
    stays closed, never quietly opening new connections: open a new ``Gateway`` to go on."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"{where}: this store is closed (Gateway.close() or the end of its with block closed it); "
            "open a new Gateway or store to go on"
        )


class SchemaMissing(StoreError):
    """The PostgreSQL schema a store was opened in does not exist (and it was not to create it)."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        super().__init__(
            f"the PostgreSQL schema {schema!r} does not exist in this database: create it with "
            f"`parkgate migrate` (PARKGATE_PG_SCHEMA={schema}) or by opening the store with "
            "migrate=True, or fix the name"
        )


class OutOfBounds(StoreError):
    """An audit's read stopped past its time limit or its row limit; nothing more was read."""


class StoreConflict(StoreError):
    """A unique key said no (a racing worker parked or recorded first); retry the unit."""


class ClientError(ParkgateError):
    """Base of the errors :class:`~parkgate.client.Client` raises of its own."""


class Unreachable(ClientError):
    """The server did not answer: the connection was refused, timed out or was cut.

    ``__cause__`` is the transport's error. Whether the request took effect is unknown: a
    message sent again with the same ``message_id`` is answered with its first reply.
    """


class ErrorResponse(ClientError):
    """A response the call cannot use, as the server sent it.

    ``status`` is the HTTP status; ``code`` the body's ``error`` (``None`` when the body
    is not parkgate's error JSON); ``detail`` the body's ``detail`` (else the status's
    reason phrase); ``body`` the decoded JSON (``None`` when it is not JSON); and
    ``retry_after`` the ``Retry-After`` header in seconds, when the server sent one.
    """

    def __init__(
        self, status: int, code: str | None, detail: str, body: Any = None, retry_after: float | None = None
    ) -> None:
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body
        self.retry_after = retry_after
        super().__init__(f"HTTP {status} {code}: {detail}" if code else f"HTTP {status}: {detail}")


class BadRequest(ErrorResponse):
    """400: the server refused the request before routing it (its ``Host``, its path)."""


class Unauthorized(ErrorResponse):
    """401: the server runs with tokens and this client sent none, or a wrong one."""


class Forbidden(ErrorResponse):
    """403: the token lacks the :class:`~parkgate.wire_codes.Scope` in ``scope`` for this
    call (``None`` for a request refused as cross-site)."""

    def __init__(
        self, status: int, code: str | None, detail: str, body: Any = None, retry_after: float | None = None
    ) -> None:
        super().__init__(status, code, detail, body, retry_after)
        named = body.get("scope") if isinstance(body, dict) else None
        self.scope: Scope | None = Scope(named) if named in set(Scope) else None


class NotFound(ErrorResponse):
    """404 ``not_found``: the server has no such route; the base URL may point elsewhere.

    An unknown ask, run or workflow is :class:`UnknownAsk`, :class:`UnknownRun` or
    :class:`UnknownWorkflow`.
    """


class BodyTooLarge(ErrorResponse):
    """413: the body is over the server's limit (1 MiB, 4 MiB when parking); nothing was read."""


class UnsupportedMediaType(ErrorResponse):
    """415: a write whose body is not ``Content-Type: application/json``."""


class InvalidRequest(ErrorResponse, InputError):
    """422 ``invalid_request`` or ``malformed_json``: the server's schema refused an argument
    (a wrong type, a prompt over its length, ...). An :class:`InputError`, as the library's
    own refusal of bad input is; nothing was read or written."""


class RateLimited(ErrorResponse):
    """429: too many requests for this token; ``retry_after`` says how many seconds to wait."""


class TooManyOpenAsks(RateLimited):
    """429 ``too_many_open_asks``: the token has as many open asks as its ``max_open_asks``."""


class ServerError(ErrorResponse):
    """A 5xx other than the store's 503 (``StoreUnavailable``): the server's log has the cause."""


class UnexpectedResponse(ErrorResponse):
    """A response that is not parkgate's JSON (a proxy's page, say), or a success whose
    body is not the shape the call reads."""
