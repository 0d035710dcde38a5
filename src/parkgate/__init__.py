"""parkgate: hold human-in-the-loop questions open for agent stacks, and make sure they close.

Start with :class:`Gateway`::

    from parkgate import Gateway
    gateway = Gateway("sqlite:///parkgate.db")
    gateway.ask("chat-1", "Deploy now?", ["Yes", "No"])
    reply = gateway.handle("chat-1", "2")  # reply.kind is ReplyKind.SELECTED
"""

from parkgate.channels.base import Channel, ChannelReply, ChannelTarget, Posted
from parkgate.clock import Clock, ManualClock, SystemClock
from parkgate.core.events import EventKind, LoggedEvent
from parkgate.core.expect import Expect
from parkgate.core.history import HistoryPage, HistoryQuery
from parkgate.core.kinds import AskKind, AskStatus, EventType, ReplyKind, RunOutcome, RunStatus
from parkgate.core.model import Ask, CallbackState, CallbackStatus, Reply, Run, Vote
from parkgate.core.schedule import ScheduleFields
from parkgate.core.stats import Stats
from parkgate.core.stopping_point import AskSpec
from parkgate.delivery.health import Backoff, DelivererHealth, DelivererState
from parkgate.errors import (
    AskAlreadyOpen,
    CallbackRefused,
    ConversationBusy,
    InputError,
    ParkgateError,
    Rejected,
    RunClosed,
    RunStillAsking,
    StoppingPointError,
    StoreClosed,
    StoreError,
    UnknownAsk,
    UnknownRun,
    UnknownWorkflow,
)
from parkgate.gateway import DEFAULT_TTL, Gateway, ask_to_dict
from parkgate.gateway.async_gateway import AsyncGateway
from parkgate.gateway.calls import InlineAnswer
from parkgate.gateway.options import AskFields, OwnedParkFields, OwnedRunFields
from parkgate.metrics import Metrics
from parkgate.store import AskGauges, ChannelJob, ChannelPost, Store, open_store
from parkgate.workflow import Phase, Workflow

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_TTL",
    "Ask",
    "AskAlreadyOpen",
    "AskFields",
    "AskGauges",
    "AskKind",
    "AskSpec",
    "AskStatus",
    "AsyncGateway",
    "Backoff",
    "CallbackRefused",
    "CallbackState",
    "CallbackStatus",
    "Channel",
    "ChannelJob",
    "ChannelPost",
    "ChannelReply",
    "ChannelTarget",
    "Clock",
    "ConversationBusy",
    "DelivererHealth",
    "DelivererState",
    "EventKind",
    "EventType",
    "Expect",
    "Gateway",
    "HistoryPage",
    "HistoryQuery",
    "InlineAnswer",
    "InputError",
    "LoggedEvent",
    "ManualClock",
    "Metrics",
    "OwnedParkFields",
    "OwnedRunFields",
    "ParkgateError",
    "Phase",
    "Posted",
    "Rejected",
    "Reply",
    "ReplyKind",
    "Run",
    "RunClosed",
    "RunOutcome",
    "RunStatus",
    "RunStillAsking",
    "ScheduleFields",
    "Stats",
    "StoppingPointError",
    "Store",
    "StoreClosed",
    "StoreError",
    "SystemClock",
    "UnknownAsk",
    "UnknownRun",
    "UnknownWorkflow",
    "Vote",
    "Workflow",
    "ask_to_dict",
    "open_store",
]
