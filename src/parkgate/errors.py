"""The errors parkgate raises: one tree, rooted at :class:`ParkgateError`.

``except ParkgateError`` catches every one of them, the store's and the HTTP client's
included. Over HTTP each is a JSON ``{"error": code, "detail": message}`` with the
status and code shown, never a 500: the server reads them off
:data:`parkgate.http.codes.LIBRARY_ERRORS`, and one that is not listed there answers as
its nearest listed base. The tree, drawn as httpx draws its own::

    * ParkgateError .......................... 422 refused
      x InputError (a ValueError) ............ 422 invalid_input
        + StoppingPointError ................. 422 malformed_stopping_point
        + UnknownRun (a LookupError) ......... 404 unknown_run
        + CallbackRefused (parkgate.fence) ... 422 invalid_input
        + SettingsError (parkgate.http.settings): the server does not start
        + TokenFileError (parkgate.http.tokens): the server does not start
      x AskAlreadyOpen ....................... 409 ask_already_open
      x ConversationBusy ..................... 409 conversation_busy
      x RunClosed ............................ 409 run_closed
      x RunStillAsking ....................... 409 run_still_asking
      x CallbackNotFailed .................... 409 callback_not_failed
      x UnknownAsk (a LookupError) ........... 404 unknown_ask
      x UnknownWorkflow (a LookupError) ...... 404 unknown_workflow
      x QuotaExceeded (parkgate.http.quota) .. 429 too_many_open_asks, with Retry-After
      x MissingExtra (a ModuleNotFoundError): an adapter imported without its framework
      x NotThisGraph, GraphKeepsAsking (parkgate.adapters.langgraph)
      x Undeliverable, Refused (parkgate.delivery.outbox): a callback not sent, kept as
        its outbox row's last error
      x StoreError (parkgate.store.base) ..... 503 store_error, with Retry-After
        + StoreUnavailable ................... 503 store_unavailable
        + StoreClosed: the Gateway is closed
        + StoreConflict: a race, retried by the gateway before it reaches anyone
        + SchemaMissing: a PostgreSQL schema to create first (parkgate migrate)
      x ClientError (parkgate.client.errors): raised by the HTTP client of its own
        + Unreachable: no answer (refused, timed out, cut off)
        + ErrorResponse: an error response with no library exception of its own
          - BadRequest 400, Unauthorized 401, Forbidden 403, NotFound 404,
            BodyTooLarge 413, UnsupportedMediaType 415, ServerError 5xx,
            UnexpectedResponse (not parkgate's JSON)
          - InvalidRequest 422 (also an InputError)
          - RateLimited 429
            · TooManyOpenAsks 429 too_many_open_asks

``InputError`` is bad input, refused before anything is read or written: the parked ask
stays as it is. ``StoreError`` is a database out of reach or unusable: the request may
succeed once it is back. The client raises an error response that stands for a library
error as that library exception (``ask_already_open`` as :class:`AskAlreadyOpen`).

A :class:`~parkgate.workflow.Workflow` that is defined wrong, or whose ``then`` names a
phase it does not have, raises :class:`InputError`: the message that reached that phase
is refused and nothing is written.
"""

from __future__ import annotations

# ParkgateError and InputError live in the pure core (parkgate.core.errors) so that the
# core can raise them; this module publishes them with the rest of the tree.
from parkgate.core.errors import InputError, ParkgateError
from parkgate.core.stopping_point import StoppingPointError
from parkgate.store.base import SchemaMissing, StoreClosed, StoreConflict, StoreError, StoreUnavailable

#: How the message of :class:`AskAlreadyOpen` says "replace it" to a Python caller, and to
#: an HTTP client (the request's JSON field).
REPLACE_IN_PYTHON = "pass replace=True"
REPLACE_IN_JSON = 'send "replace": true'


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


class UnknownAsk(ParkgateError, LookupError):
    """No ask has this id."""

    def __init__(self, ask_id: str) -> None:
        self.ask_id = ask_id
        super().__init__(f"no ask with id {ask_id!r}")


class UnknownRun(InputError, LookupError):
    """No run has this id. An :class:`InputError` too, so a caller that catches bad input catches it."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run with id {run_id!r}")


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


class UnknownWorkflow(ParkgateError, LookupError):
    """No workflow of this name is registered with the gateway."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"no workflow named {name!r}; known: {', '.join(known) or 'none'}")


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


__all__ = [
    "REPLACE_IN_JSON",
    "REPLACE_IN_PYTHON",
    "AskAlreadyOpen",
    "CallbackNotFailed",
    "ConversationBusy",
    "InputError",
    "MissingExtra",
    "ParkgateError",
    "RunClosed",
    "RunStillAsking",
    "SchemaMissing",
    "StoppingPointError",
    "StoreClosed",
    "StoreConflict",
    "StoreError",
    "StoreUnavailable",
    "UnknownAsk",
    "UnknownRun",
    "UnknownWorkflow",
]
