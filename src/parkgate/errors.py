"""The errors parkgate raises: one tree, rooted at :class:`ParkgateError`, all defined here.

``except ParkgateError`` catches every one of them, the store's and the HTTP client's
included. Each class states how it goes over HTTP, once: its status (``http_status``), its
``error`` code (``wire_code``, and ``wire_cases`` where one class stands for several
answers), the body's other keys (``wire_fields``), the JSON it is sent as
(:meth:`~ParkgateError.wire_detail`) and the exception a client raises for it
(:meth:`~ParkgateError.from_wire`). The server's handlers and the client's reading of an
error response are derived from these classes and nothing else. Over HTTP each error is a
JSON ``{"error": code, "detail": message}`` with the status and code shown, never a 500:
one with no code of its own answers as its nearest base that has one. The tree, drawn
as httpx draws its own::

    * ParkgateError .......................... 422 refused
      x InputError (a ValueError) ............ 422 invalid_input
        + StoppingPointError ................. 422 malformed_stopping_point
        + CallbackRefused .................... 422 invalid_input: the fence refused the URL
      x ConfigurationError (a ValueError): the server or CLI does not start
        + SettingsError: a setting (an environment variable, an option)
        + TokenFileError: the tokens file
      x AskAlreadyOpen ....................... 409 ask_already_open, with open_ask_id
      x ConversationBusy ..................... 409 conversation_busy
      x RunClosed ............................ 409 run_closed
      x RunStillAsking ....................... 409 run_still_asking, with open_ask_id
      x CallbackNotFailed .................... 409 callback_not_failed, with callback_status
      x UnknownAsk (a LookupError) ........... 404 unknown_ask
      x UnknownRun (a LookupError) ........... 404 unknown_run
      x UnknownWorkflow (a LookupError) ...... 404 unknown_workflow
      x QuotaExceeded ........................ 429 too_many_open_asks, with Retry-After
      x TooManyLongPolls ..................... 429 too_many_long_polls, with Retry-After
      x MissingExtra (a ModuleNotFoundError): an adapter imported without its framework
      x NotThisGraph, GraphKeepsAsking: the LangGraph adapter's refusals
      x Rejected: a call ``requires_approval`` gates was not approved; it did not run
      x ChannelJobFailed: kept as a channel job's last_error (as an unsendable callback's), never raised
      x ChannelRetryLater: a platform's "not before" (a 429's retry_after), kept as a job's retry time
      x StoreError ........................... 503 store_error, with Retry-After
        + StoreUnavailable ................... 503 store_unavailable
        + StoreClosed: the Gateway is closed
        + StoreConflict: a race, retried by the gateway before it reaches anyone
        + SchemaMissing: a PostgreSQL schema to create first (parkgate migrate)
        + OutOfBounds: an audit's read past its --timeout or --max-rows
      x ClientError: raised by the HTTP client of its own (parkgate.client)
        + Unreachable: no answer (refused, timed out, cut off)
        + ErrorResponse: an error response with no library exception of its own
          (405 method_not_allowed, 431 request_head_too_large, http_error)
          - BadRequest ....................... 400 bad_request, host_not_allowed
          - Unauthorized ..................... 401 unauthorized
          - Forbidden ........................ 403 missing_scope, cross_site,
                                               sender_mismatch, channel_not_allowed
          - NotFound ......................... 404 not_found
          - BodyTooLarge ..................... 413 body_too_large
          - UnsupportedMediaType ............. 415 unsupported_media_type
          - InvalidRequest (an InputError) ... 422 invalid_request, malformed_json
          - RateLimited ...................... 429 rate_limited (too_many_long_polls)
            · TooManyOpenAsks ................ 429 too_many_open_asks
          - ServerError ...................... 5xx internal_error, deliverer_failing
          - UnexpectedResponse: not parkgate's JSON

``InputError`` is bad input (a :class:`~parkgate.workflow.Workflow` defined wrong included),
refused before anything is read or written: the parked ask stays as it is. An ``Unknown*``
error is an id that names nothing (or nothing of this caller's). ``ConfigurationError``
stops a start, never a request. ``StoreError`` is a database out of reach or unusable: the
request may succeed once it is back. The client raises an error response that stands for a
library error as that library exception (``ask_already_open`` as :class:`AskAlreadyOpen`);
the server's own refusals (the guard's, :class:`QuotaExceeded`'s, ...) as the
:class:`ErrorResponse` subclass that declares their code, or their status.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, ClassVar, Self

#: How :class:`AskAlreadyOpen` says "replace it" to a Python caller, and to an HTTP client.
REPLACE_IN_PYTHON = "pass replace=True"
REPLACE_IN_JSON = 'send "replace": true'


class Scope(StrEnum):
    """What a token may do on ``/v1`` (a 403 ``missing_scope``'s body names the one it lacked)."""

    PARK = "park"
    ANSWER = "answer"
    READ = "read"
    OPERATE = "operate"


class ParkgateError(Exception):
    """The root of every error parkgate raises: ``except ParkgateError`` catches them all.

    Its class attributes are its HTTP answer, stated once (see the module docstring);
    a subclass that states no ``wire_code`` answers as its nearest base that does.
    """

    #: The HTTP status a parkgate server answers with.
    http_status: ClassVar[int] = 422
    #: The body's ``error`` code.
    wire_code: ClassVar[str] = "refused"
    #: The other codes an answer of this class carries, each also bound to a name of its
    #: own (read through :meth:`declared_codes`: a subclass's are its own).
    wire_cases: ClassVar[tuple[str, ...]] = ()
    #: The body's keys past ``error`` and ``detail``, each with the attribute it carries.
    wire_fields: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def declared_codes(cls) -> tuple[str, ...]:
        """The codes this class states itself (its ``wire_code`` and ``wire_cases``), none inherited."""
        own = vars(cls)
        codes: tuple[str, ...] = own.get("wire_cases", ())
        return (own["wire_code"], *codes) if "wire_code" in own else codes

    @classmethod
    def answered_as(cls) -> tuple[int, str]:
        """The status and ``error`` code a parkgate server answers this error with.

        Those of the nearest class in its MRO that states a ``wire_code``, the client's own
        errors passed over: a :class:`ClientError` raised inside a server (by a client it
        calls) is another server's answer, never this one's. ``ParkgateError`` states one,
        so no parkgate error is ever a 500.

        Returns:
            ``(http_status, wire_code)``.
        """
        return next(
            (base.http_status, base.wire_code)
            for base in cls.__mro__
            if issubclass(base, ParkgateError) and "wire_code" in vars(base) and not issubclass(base, ClientError)
        )

    def wire_detail(self) -> dict[str, Any]:
        """The JSON body a parkgate server answers this error with.

        Returns:
            ``{"error": code, "detail": message}``, then each of :attr:`wire_fields`.
        """
        fields = {key: getattr(self, name) for key, name in self.wire_fields.items()}
        return {"error": self.answered_as()[1], "detail": str(self), **fields}

    def wire_headers(self) -> dict[str, str]:
        """The headers a parkgate server answers this error with (none but the usual here)."""
        return {}

    @classmethod
    def from_wire(
        cls, status: int, code: str | None, detail: str, body: Any, retry_after: float | None, about: Mapping[str, str]
    ) -> ParkgateError:
        """The exception a client raises for an error response with this class's code.

        Args:
            status: the response's HTTP status.
            code: the body's ``error`` (``None`` when the body is not parkgate's JSON).
            detail: the body's ``detail`` (else the status's reason phrase).
            body: the decoded JSON (``None`` when it is not JSON).
            retry_after: the ``Retry-After`` header in seconds, when the server sent one.
            about: the ids the call named (``conversation_id``, ``ask_id``, ``run_id``,
                ``workflow``), which the error's attributes are rebuilt from.

        Returns:
            An instance of this class whose message is the server's ``detail``.
        """
        error = cls._rebuilt(about, body)
        error.args = (detail,)  # the sentence the library would say, with what the client cannot rebuild
        return error

    @classmethod
    def _rebuilt(cls, about: Mapping[str, str], body: Any) -> Self:
        """This error with its attributes rebuilt from the call's ids and the body's fields
        (:meth:`from_wire` sets its message)."""
        return cls()


class InputError(ParkgateError, ValueError):
    """The input is not usable as given (not text, too long, an empty id, ...).

    Raised before anything is read or written: the parked ask stays as it was.
    """

    http_status = 422
    wire_code = "invalid_input"


class StoppingPointError(InputError):
    """A stopping point that cannot be parked as written. The message names the line."""

    http_status = 422
    wire_code = "malformed_stopping_point"

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        self.reason = message
        super().__init__(f"line {line}: {message}" if line is not None else message)

    def __reduce__(self) -> tuple[type[StoppingPointError], tuple[str, int | None]]:
        return (type(self), (self.reason, self.line))

    @classmethod
    def from_wire(
        cls, status: int, code: str | None, detail: str, body: Any, retry_after: float | None, about: Mapping[str, str]
    ) -> Self:
        """The server's message, its ``line N:`` read back into ``line`` and ``reason``."""
        found = re.fullmatch(r"line (\d+): (.*)", detail, re.DOTALL)
        return cls(found[2], int(found[1])) if found else cls(detail)


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

    http_status = 409
    wire_code = "ask_already_open"
    #: It names the open ask, so a client can read or cancel it.
    wire_fields: ClassVar[Mapping[str, str]] = {"open_ask_id": "ask_id"}

    def __init__(self, conversation_id: str, ask_id: str) -> None:
        self.conversation_id = conversation_id
        self.ask_id = ask_id
        super().__init__(self.message(REPLACE_IN_PYTHON))

    def wire_detail(self) -> dict[str, Any]:
        """The JSON body, its message saying how to replace the ask in JSON."""
        return {**super().wire_detail(), "detail": self.message(REPLACE_IN_JSON)}

    @classmethod
    def from_wire(
        cls, status: int, code: str | None, detail: str, body: Any, retry_after: float | None, about: Mapping[str, str]
    ) -> Self:
        """The library's own sentence (``replace=True``), not the JSON one the server sent."""
        return cls(about.get("conversation_id", ""), str(body.get("open_ask_id", "")))

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

    http_status = 409
    wire_code = "conversation_busy"

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        super().__init__(
            f"conversation {conversation_id!r} has an open ask of another owner; "
            "it cannot be replaced: try again once it has closed"
        )

    @classmethod
    def _rebuilt(cls, about: Mapping[str, str], body: Any) -> Self:
        """The error, for the conversation the call named."""
        return cls(about.get("conversation_id", ""))


class RunClosed(ParkgateError):
    """The run named takes no new ask: it is complete (answered and finished, cancelled,
    expired), or another owner's. Both read the same, so a caller learns nothing of a run
    it does not own; a run is never reopened."""

    http_status = 409
    wire_code = "run_closed"

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(
            f"run {run_id!r} takes no new ask: it is complete, or another owner's; leave run_id out to start a new run"
        )

    @classmethod
    def _rebuilt(cls, about: Mapping[str, str], body: Any) -> Self:
        """The error, for the run the call named."""
        return cls(about.get("run_id", ""))


class RunStillAsking(ParkgateError):
    """The run's pending ask is still open: answer or cancel it before finishing the run."""

    http_status = 409
    wire_code = "run_still_asking"
    #: It names the open ask, so a client can read or cancel it.
    wire_fields: ClassVar[Mapping[str, str]] = {"open_ask_id": "ask_id"}

    def __init__(self, run_id: str, ask_id: str) -> None:
        self.run_id = run_id
        self.ask_id = ask_id
        super().__init__(f"run {run_id!r} still has open ask {ask_id}; answer or cancel it before finishing the run")

    @classmethod
    def _rebuilt(cls, about: Mapping[str, str], body: Any) -> Self:
        """The error, for the run the call named and the open ask the body names."""
        return cls(about.get("run_id", ""), str(body.get("open_ask_id", "")))


class CallbackNotFailed(ParkgateError):
    """Only a failed callback can be re-armed; this ask's is pending, delivered, or absent."""

    http_status = 409
    wire_code = "callback_not_failed"
    #: It says where the callback stands.
    wire_fields: ClassVar[Mapping[str, str]] = {"callback_status": "status"}

    def __init__(self, ask_id: str, status: str | None) -> None:
        self.ask_id = ask_id
        self.status = status
        where = f"its callback is {status}" if status else "it has no callback queued"
        super().__init__(f"ask {ask_id} has no failed callback to retry: {where}")

    @classmethod
    def _rebuilt(cls, about: Mapping[str, str], body: Any) -> Self:
        """The error, for the ask the call named and the callback status the body names."""
        return cls(about.get("ask_id", ""), body.get("callback_status"))


class UnknownAsk(ParkgateError, LookupError):
    """No ask has this id."""

    http_status = 404
    wire_code = "unknown_ask"

    def __init__(self, ask_id: str) -> None:
        self.ask_id = ask_id
        super().__init__(f"no ask with id {ask_id!r}")

    @classmethod
    def _rebuilt(cls, about: Mapping[str, str], body: Any) -> Self:
        """The error, for the ask the call named."""
        return cls(about.get("ask_id", ""))


class UnknownRun(ParkgateError, LookupError):
    """No run has this id."""

    http_status = 404
    wire_code = "unknown_run"

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run with id {run_id!r}")

    @classmethod
    def _rebuilt(cls, about: Mapping[str, str], body: Any) -> Self:
        """The error, for the run the call named."""
        return cls(about.get("run_id", ""))


class UnknownWorkflow(ParkgateError, LookupError):
    """No workflow of this name is registered with the gateway."""

    http_status = 404
    wire_code = "unknown_workflow"

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"no workflow named {name!r}; known: {', '.join(known) or 'none'}")

    @classmethod
    def _rebuilt(cls, about: Mapping[str, str], body: Any) -> Self:
        """The error, for the workflow the call named (the known ones are in the server's words)."""
        return cls(about.get("workflow", ""), [])


class QuotaExceeded(ParkgateError):
    """The caller holds as many open asks and undelivered callbacks as its token allows
    (:mod:`parkgate.http.quota`); ``retry_after`` is in seconds. Only the server raises it:
    a client raises :class:`TooManyOpenAsks` for it."""

    http_status = 429
    wire_code = "too_many_open_asks"

    def __init__(self, token: str, cap: int, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(
            f"the token {token!r} holds {cap} open asks and undelivered callbacks, its max_open_asks: "
            "answer, cancel or let some asks expire, or let their callbacks be delivered, before parking more"
        )

    def wire_headers(self) -> dict[str, str]:
        """When to try again."""
        return {"Retry-After": str(self.retry_after)}

    @classmethod
    def from_wire(
        cls, status: int, code: str | None, detail: str, body: Any, retry_after: float | None, about: Mapping[str, str]
    ) -> TooManyOpenAsks:
        """The client's :class:`TooManyOpenAsks`, a :class:`RateLimited` with ``retry_after``."""
        return TooManyOpenAsks(status, code, detail, body, retry_after)


class TooManyLongPolls(ParkgateError):
    """The server process holds as many long-polls as its cap allows
    (:mod:`parkgate.http.longpolls`); ``retry_after`` is in seconds. Only the server raises
    it: a client raises :class:`RateLimited` for it."""

    http_status = 429
    wire_code = "too_many_long_polls"

    def __init__(self, cap: int, setting: str, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(f"the server holds {cap} long-polls, its {setting}: retry later, or read without wait")

    def wire_headers(self) -> dict[str, str]:
        """When to try again; and the connection is closed, so its slot goes back at once."""
        return {"Retry-After": str(self.retry_after), "Connection": "close"}

    @classmethod
    def from_wire(
        cls, status: int, code: str | None, detail: str, body: Any, retry_after: float | None, about: Mapping[str, str]
    ) -> RateLimited:
        """The client's :class:`RateLimited`, with ``retry_after``."""
        return RateLimited(status, code, detail, body, retry_after)


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


class ChannelRetryLater(ParkgateError):
    """A platform asked for a channel job's call to be made again no sooner than
    ``seconds`` from now (a 429's ``retry_after``): the job is retried then, not before
    (:mod:`parkgate.channels.deliver`); no caller sees it raised."""

    def __init__(self, message: str, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds


class StoreError(ParkgateError):
    """The store cannot be used as asked (not a parkgate database, read-only, ...).

    Over HTTP a 503 with ``Retry-After``: it may succeed once the database is back or fixed.
    """

    http_status = 503
    wire_code = "store_error"

    def wire_headers(self) -> dict[str, str]:
        """Try again in a second."""
        return {"Retry-After": "1"}


class StoreUnavailable(StoreError):
    """The database is out of reach for now (a restart, a network cut); try again."""

    http_status = 503
    wire_code = "store_unavailable"


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
    is not parkgate's JSON); ``detail`` the body's ``detail`` (else the status's
    reason phrase); ``body`` the decoded JSON (``None`` when it is not JSON); and
    ``retry_after`` the ``Retry-After`` header in seconds, when the server sent one.

    Each subclass states the status and codes of the answers it stands for; the server
    refuses with them, and the client reads them back into the subclass. The codes here
    have no class of their own: a client reads them by their status.
    """

    #: 405: a method no route serves on this path (``Allow`` names those that do).
    METHOD_NOT_ALLOWED = "method_not_allowed"
    #: 431: the request line and headers are over 64 KiB.
    REQUEST_HEAD_TOO_LARGE = "request_head_too_large"
    #: Any other refusal of the HTTP framework's, with its own status.
    HTTP_ERROR = "http_error"
    wire_cases: ClassVar[tuple[str, ...]] = (METHOD_NOT_ALLOWED, REQUEST_HEAD_TOO_LARGE, HTTP_ERROR)
    #: Whether a client reads any error response of ``http_status`` as this class, whatever
    #: its code (a proxy's page included), when no class states the code.
    claims_status: ClassVar[bool] = False

    def __init__(
        self, status: int, code: str | None, detail: str, body: Any = None, retry_after: float | None = None
    ) -> None:
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body
        self.retry_after = retry_after
        super().__init__(f"HTTP {status} {code}: {detail}" if code else f"HTTP {status}: {detail}")

    @classmethod
    def from_wire(
        cls, status: int, code: str | None, detail: str, body: Any, retry_after: float | None, about: Mapping[str, str]
    ) -> Self:
        """This class, with what the client read."""
        return cls(status, code, detail, body, retry_after)


class BadRequest(ErrorResponse):
    """400: the server refused the request before routing it (its ``Host``, its path)."""

    http_status = 400
    wire_code = "bad_request"
    #: A ``Host`` the server does not answer to.
    HOST_NOT_ALLOWED = "host_not_allowed"
    wire_cases = (HOST_NOT_ALLOWED,)
    claims_status = True


class Unauthorized(ErrorResponse):
    """401: the server runs with tokens and this client sent none, or a wrong one."""

    http_status = 401
    wire_code = "unauthorized"
    claims_status = True


class Forbidden(ErrorResponse):
    """403: the token lacks the :class:`Scope` in ``scope`` for this call (``None`` for
    another of the 403s: a request refused as cross-site, a sender or a channel target
    the token may not name)."""

    http_status = 403
    wire_code = "missing_scope"
    #: Another site's request (a browser's), refused before it is read.
    CROSS_SITE = "cross_site"
    #: A token that speaks for one sender posted a message naming another (nothing changed).
    SENDER_MISMATCH = "sender_mismatch"
    #: A named token parked an ask for a channel target its tokens-file ``channels`` does not allow.
    CHANNEL_NOT_ALLOWED = "channel_not_allowed"
    wire_cases = (CROSS_SITE, SENDER_MISMATCH, CHANNEL_NOT_ALLOWED)
    claims_status = True

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

    http_status = 404
    wire_code = "not_found"


class BodyTooLarge(ErrorResponse):
    """413: the body is over the server's limit (1 MiB, 4 MiB when parking); nothing was read."""

    http_status = 413
    wire_code = "body_too_large"
    claims_status = True


class UnsupportedMediaType(ErrorResponse):
    """415: a write whose body is not ``Content-Type: application/json``."""

    http_status = 415
    wire_code = "unsupported_media_type"
    claims_status = True


class InvalidRequest(ErrorResponse, InputError):
    """422 ``invalid_request`` or ``malformed_json``: the server's schema refused an argument
    (a wrong type, a prompt over its length, ...). An :class:`InputError`, as the library's
    own refusal of bad input is; nothing was read or written."""

    http_status = 422
    wire_code = "invalid_request"
    #: The body is not JSON at all (or not UTF-8).
    MALFORMED_JSON = "malformed_json"
    wire_cases = (MALFORMED_JSON,)


class RateLimited(ErrorResponse):
    """429: too many requests for this token (or, ``too_many_long_polls``, long-polls for
    the server); ``retry_after`` says how many seconds to wait."""

    http_status = 429
    wire_code = "rate_limited"
    claims_status = True


class TooManyOpenAsks(RateLimited):
    """429 ``too_many_open_asks``: the token has as many open asks as its ``max_open_asks``
    (:class:`QuotaExceeded`, on the server)."""


class ServerError(ErrorResponse):
    """A 5xx other than the store's 503 (``StoreUnavailable``): the server's log has the cause.

    A client reads every 5xx whose code no other class states as this one.
    """

    http_status = 500
    wire_code = "internal_error"
    #: 503 from ``/healthz``: the store answers, but the deliverer's passes fail (or it is being restarted).
    DELIVERER_FAILING = "deliverer_failing"
    wire_cases = (DELIVERER_FAILING,)


class UnexpectedResponse(ErrorResponse):
    """A response that is not parkgate's JSON (a proxy's page, say), or a success whose
    body is not the shape the call reads."""
