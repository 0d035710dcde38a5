"""A LangGraph thread as the bridge sees it: its config, its state, its record on an ask.

Also the graph effects a bridge step yields (read the state, invoke, update the state as
a node) and how the sync and the asyncio drivers perform them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.pregel import Pregel
from langgraph.types import GraphOutput, Interrupt, StateSnapshot

from parkgate.adapters import common
from parkgate.adapters.following import watcher_name
from parkgate.adapters.langgraph import percall
from parkgate.adapters.langgraph.questions import CHECKPOINT_TYPES, CONTEXT_KEY, Answer, QuestionKey
from parkgate.core.model import Ask, Reply
from parkgate.errors import GraphKeepsAsking as GraphKeepsAsking
from parkgate.errors import InputError
from parkgate.errors import NotThisGraph as NotThisGraph

Graph = Pregel[Any, Any, Any, Any]
"""Any compiled LangGraph graph (``StateGraph(...).compile(checkpointer=...)``)."""

#: The key LangGraph puts interrupts under in a ``version="v1"`` ``invoke()`` result.
INTERRUPT_KEY = "__interrupt__"
#: The checkpoint metadata key under which the bridge's graph calls record their run.
RUN_KEY = "parkgate_run"
#: How many times a graph is resumed with :class:`Closed` after its ask closed, if it keeps
#: interrupting, before the bridge gives up (:class:`GraphKeepsAsking`).
MAX_CLOSED_RESUMES = 8


@dataclass(frozen=True, slots=True)
class Drive:
    """What one call of the bridge did.

    ``reply`` is the gateway's reply to the person's message (for ``start``, the ``asked``
    reply of the first question, or ``pass`` when the graph did not ask). ``resumed`` says
    whether the thread was resumed; ``output`` is what that graph call returned. ``asked``
    is the question parked next, ``finished`` that the thread ran to its end.
    """

    reply: Reply
    resumed: bool = False
    output: Any = None
    asked: Reply | None = None
    finished: bool = False

    @property
    def text(self) -> str:
        """Everything to show the person, in order (empty for a plain ``pass``)."""
        return common.turn_text(self.reply, self.asked)

    @property
    def parked(self) -> bool:
        """True when the conversation has an open ask after this call."""
        if self.asked is not None:
            return self.asked.parked
        return self.reply.parked


@dataclass(frozen=True, slots=True)
class Outcome:
    """What following up a thread did (``refused``: why its interrupt could not be asked;
    the thread and its run were closed, and the bridge call raises it)."""

    resumed: bool = False
    output: Any = None
    asked: Reply | None = None
    finished: bool = False
    refused: InputError | None = None


@dataclass(frozen=True, slots=True)
class Record:
    """Who an ask belongs to and what was answered before it (the ask's ``langgraph`` context)."""

    graph: str
    thread: str
    question: QuestionKey
    answers: tuple[Answer, ...] = ()

    @classmethod
    def of(cls, ask: Ask) -> Record | None:
        data = (ask.context or {}).get(CONTEXT_KEY)
        if not isinstance(data, Mapping):
            return None
        try:
            return cls(
                str(data["graph"]),
                str(data["thread_id"]),
                (str(data["interrupt_id"]), int(data["item"]), str(data["part"])),
                tuple(Answer.from_json(item) for item in data.get("answers", ())),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def to_json(self) -> dict[str, Any]:
        interrupt_id, item, part = self.question
        return {
            "graph": self.graph,
            "thread_id": self.thread,
            "interrupt_id": interrupt_id,
            "item": item,
            "part": part,
            "answers": [answer.to_json() for answer in self.answers],
        }


def pending_interrupts(source: object) -> tuple[Interrupt, ...]:
    """The interrupts waiting for an answer in ``source``: an ``invoke()`` result (a mapping
    with ``__interrupt__``, or a ``GraphOutput``), a ``StateSnapshot``, one ``Interrupt``
    or a sequence of them. Anything else has none."""
    if isinstance(source, Interrupt):
        return (source,)
    if isinstance(source, (StateSnapshot, GraphOutput)):
        return tuple(source.interrupts)
    if isinstance(source, Mapping):
        found = source.get(INTERRUPT_KEY, ())
        return tuple(item for item in found if isinstance(item, Interrupt))
    if isinstance(source, Sequence) and not isinstance(source, (str, bytes)):
        return tuple(item for item in source if isinstance(item, Interrupt))
    return ()


def thread_id(config: RunnableConfig) -> str:
    """The ``thread_id`` of a LangGraph config."""
    value = (config.get("configurable") or {}).get("thread_id")
    if value is None:
        raise InputError('the LangGraph config has no configurable "thread_id"')
    return str(value)


def thread_config(base: RunnableConfig | None, thread: str, run_id: str | None = None) -> RunnableConfig:
    """``base`` pointed at ``thread``'s latest checkpoint, recording ``run_id`` in the
    checkpoints the call writes."""
    base = base or {}
    configurable = {key: value for key, value in (base.get("configurable") or {}).items() if key != "checkpoint_id"}
    configurable["thread_id"] = thread
    config = cast(RunnableConfig, {**base, "configurable": configurable})
    if run_id is not None:
        config["metadata"] = {**(base.get("metadata") or {}), RUN_KEY: run_id}
    return config


def pending_of(snapshot: StateSnapshot) -> list[tuple[str, Any]]:
    """The snapshot's interrupts as ``(id, value)`` pairs; a per-call review interrupt's
    value is read as a review request of its one tool call (:mod:`.percall`)."""
    return [
        (item.id, percall.as_review_request(item.value, item.response_schema))
        if percall.is_tool_approval(item.value)
        else (item.id, item.value)
        for item in snapshot.interrupts
    ]


def has_checkpoint(snapshot: StateSnapshot) -> bool:
    return bool((snapshot.config.get("configurable") or {}).get("checkpoint_id"))


def node_of(snapshot: StateSnapshot, interrupt_id: str) -> str | None:
    """The node whose task raised the interrupt ``interrupt_id``."""
    for task in snapshot.tasks:
        if any(item.id == interrupt_id for item in task.interrupts):
            return task.name
    return None


def graph_name(graph: Graph) -> str:
    return str(getattr(graph, "name", None) or "LangGraph")


def graph_watcher(graph: Graph) -> str:
    """What the graph's asks are parked with (``follow_up``) and its watcher lists: ``langgraph:<name>``."""
    return watcher_name("langgraph", graph_name(graph))


def allow_closed(graph: Graph) -> None:
    """Let the graph's checkpointer read :class:`Closed` back: its msgpack allowlist, where
    it keeps one (strict mode, or an explicit list), gets :data:`CHECKPOINT_TYPES`
    (``BaseCheckpointSaver.with_allowlist``; a saver already allowing it is kept)."""
    saver = graph.checkpointer
    if isinstance(saver, BaseCheckpointSaver) and isinstance(saver.serde, (JsonPlusSerializer, EncryptedSerializer)):
        allowed = saver.with_allowlist(CHECKPOINT_TYPES)  # any other serializer has no allowlist to add to
        if allowed is not saver:
            graph.checkpointer = allowed


# -- the graph effects a step yields ----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GetState:
    config: RunnableConfig


@dataclass(frozen=True, slots=True)
class Invoke:
    value: Any
    config: RunnableConfig


@dataclass(frozen=True, slots=True)
class UpdateState:
    """Write ``values`` as if node ``as_node`` returned them (``graph.update_state``)."""

    config: RunnableConfig
    values: Any
    as_node: str | None


def perform(graph: Graph, effect: GetState | Invoke | UpdateState) -> Any:
    """Do a graph effect with blocking calls."""
    if isinstance(effect, GetState):
        return graph.get_state(effect.config)
    if isinstance(effect, UpdateState):
        return graph.update_state(effect.config, effect.values, as_node=effect.as_node)
    return graph.invoke(effect.value, effect.config)


async def aperform(graph: Graph, effect: GetState | Invoke | UpdateState) -> Any:
    """Do a graph effect with the graph's asyncio methods."""
    if isinstance(effect, GetState):
        return await graph.aget_state(effect.config)
    if isinstance(effect, UpdateState):
        return await graph.aupdate_state(effect.config, effect.values, as_node=effect.as_node)
    return await graph.ainvoke(effect.value, effect.config)
