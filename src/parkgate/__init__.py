"""parkgate: hold human-in-the-loop questions open for agent stacks, and make sure they close.

Start with :class:`Gateway`::

    from parkgate import Gateway
    gateway = Gateway("sqlite:///parkgate.db")
    gateway.ask("chat-1", "Deploy now?", ["Yes", "No"])
    reply = gateway.handle("chat-1", "2")  # reply.kind is ReplyKind.SELECTED
"""

from parkgate.async_gateway import AsyncGateway
from parkgate.clock import Clock, ManualClock, SystemClock
from parkgate.core.kinds import AskKind, AskStatus, ReplyKind
from parkgate.core.model import Ask
from parkgate.core.stopping_point import AskSpec, StoppingPointError
from parkgate.errors import (
    AskAlreadyOpen,
    ConversationBusy,
    InputError,
    ParkgateError,
    RunClosed,
    RunStillAsking,
    UnknownAsk,
    UnknownRun,
    UnknownWorkflow,
)
from parkgate.gateway import DEFAULT_TTL, Gateway, ask_to_dict
from parkgate.reply import Reply
from parkgate.store import Run, Store, StoreClosed, StoreError, StoreUnavailable, open_store
from parkgate.workflow import Phase, Workflow

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_TTL",
    "Ask",
    "AskAlreadyOpen",
    "AskKind",
    "AskSpec",
    "AskStatus",
    "AsyncGateway",
    "Clock",
    "ConversationBusy",
    "Gateway",
    "InputError",
    "ManualClock",
    "ParkgateError",
    "Phase",
    "Reply",
    "ReplyKind",
    "Run",
    "RunClosed",
    "RunStillAsking",
    "StoppingPointError",
    "Store",
    "StoreClosed",
    "StoreError",
    "StoreUnavailable",
    "SystemClock",
    "UnknownAsk",
    "UnknownRun",
    "UnknownWorkflow",
    "Workflow",
    "ask_to_dict",
    "open_store",
]
