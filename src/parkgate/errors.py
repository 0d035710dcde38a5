"""The errors parkgate raises at its surfaces. Each message names what is wrong.

``ParkgateError`` is the base of all of them except the store's (``StoreError``).
``InputError`` (a ``ValueError``) is bad input, refused before anything is read or
written; ``StoppingPointError`` is the ``InputError`` for a malformed ask.
"""

from __future__ import annotations

# ParkgateError and InputError live in the pure core (parkgate.core.errors), which
# StoppingPointError (an InputError) needs: the same classes, published here.
from parkgate.core.errors import InputError, ParkgateError
from parkgate.core.stopping_point import StoppingPointError
from parkgate.store.base import StoreError, StoreUnavailable


class AskAlreadyOpen(ParkgateError):
    """The conversation already has an open ask; pass ``replace=True`` to replace it."""

    def __init__(self, conversation_id: str, ask_id: str) -> None:
        self.conversation_id = conversation_id
        self.ask_id = ask_id
        super().__init__(
            f"conversation {conversation_id!r} already has open ask {ask_id}; "
            "answer or cancel it first, or pass replace=True"
        )


class UnknownAsk(ParkgateError, LookupError):
    """No ask has this id."""

    def __init__(self, ask_id: str) -> None:
        self.ask_id = ask_id
        super().__init__(f"no ask with id {ask_id!r}")


class UnknownRun(InputError, LookupError):
    """No run has this id (an :class:`InputError`, as it was before it had its own class)."""

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
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"no workflow named {name!r}; known: {', '.join(known) or 'none'}")


__all__ = [
    "AskAlreadyOpen",
    "CallbackNotFailed",
    "InputError",
    "ParkgateError",
    "RunStillAsking",
    "StoppingPointError",
    "StoreError",
    "StoreUnavailable",
    "UnknownAsk",
    "UnknownRun",
    "UnknownWorkflow",
]
