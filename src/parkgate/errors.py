"""The errors parkgate raises at its surfaces. Each message names what is wrong."""

from __future__ import annotations

from parkgate.core.stopping_point import StoppingPointError
from parkgate.store.base import StoreError, StoreUnavailable


class ParkgateError(Exception):
    """Base of the errors below (store and stopping-point errors have their own bases)."""


class InputError(ParkgateError, ValueError):
    """The input is not usable as given (not text, too long, an empty id, ...).

    Raised before anything is read or written: the parked ask stays as it was.
    """


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


class UnknownWorkflow(ParkgateError, LookupError):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"no workflow named {name!r}; known: {', '.join(known) or 'none'}")


__all__ = [
    "AskAlreadyOpen",
    "InputError",
    "ParkgateError",
    "StoppingPointError",
    "StoreError",
    "StoreUnavailable",
    "UnknownAsk",
    "UnknownWorkflow",
]
