"""The JSON the API gives about asks, runs and the server, as pydantic models: what the
OpenAPI schema shows for each response. The bodies it takes, and a message's reply, are
:mod:`parkgate.http.models`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from parkgate.http.channel_targets import ChannelPostsOut
from parkgate.http.models import (
    AskKindName,
    AskStatusName,
    CallbackStatusName,
    ExpectJSON,
    RunStatusName,
)


class CallbackOut(BaseModel):
    """An ask's callback: ``pending`` (the ask is open, or the callback waits for an attempt),
    ``delivered``, or ``failed`` (given up on; ``POST /v1/asks/{id}/callback/retry`` re-arms it)."""

    status: CallbackStatusName
    attempts: int
    last_error: str | None = None
    next_attempt_at: str | None = None


class VoteOut(BaseModel):
    """A responder's current vote on a quorum ask."""

    sender: str
    option_index: int
    answer: str
    at: str


class AskOut(ChannelPostsOut):
    """An ask as stored (``status`` open, answered, cancelled or expired), and where it is
    posted on a channel, under the channel's name (:class:`~parkgate.http.channel_targets.ChannelPostsOut`)."""

    ask_id: str
    conversation_id: str
    run_id: str
    kind: AskKindName
    prompt: str
    options: list[str]
    status: AskStatusName
    outcome: str | None = None
    answer: str | None = None
    option_index: int | None = None
    mismatches: int
    phase: str | None = None
    ttl_seconds: float
    expect: ExpectJSON | None = None
    asked_at: str
    last_touched: str
    answered_at: str | None = None
    context: dict[str, Any] | None = Field(
        default=None, description="What else was parked with the ask (a JSON object), shown with it."
    )
    owner: str | None = Field(
        default=None, description="The name of the token that parked it (null without named tokens)."
    )
    responders: list[str] = Field(default_factory=list, description="Who may answer (empty: anyone).")
    quorum: int = Field(default=1, description="How many responders must pick one option to select it.")
    votes: list[VoteOut] = Field(default_factory=list, description="Each responder's current vote, in order cast.")
    answered_by: str | None = Field(default=None, description="The sender whose message selected or answered it.")
    closed_by: str | None = Field(
        default=None, description="The sender of the cancel word that closed it, or operator (null for an expiry)."
    )
    hours_open: float | None = None
    callback: CallbackOut | None = Field(
        default=None, description="Where its callback stands (an ask parked with a callback_url)."
    )


class RunOut(BaseModel):
    """A run: ``running`` while its caller works or an ask is pending, then ``complete``."""

    run_id: str
    conversation_id: str
    workflow: str | None = None
    status: RunStatusName
    outcome: str | None = None
    pending_ask_id: str | None = None
    answers: dict[str, str] = Field(description="The run's answers by phase; empty when its asks name no phase.")
    created_at: str
    updated_at: str
    owner: str | None = Field(
        default=None, description="The name of the token that started it (null without named tokens)."
    )
    output: Any = Field(
        default=None, description="What the run gave when it finished (an agent's final output); null: nothing."
    )


class ConversationOut(BaseModel):
    """A conversation as a surface sees it: its open ask, ``null`` when nothing is parked."""

    conversation_id: str
    ask: AskOut | None = None


class AskListOut(BaseModel):
    """One page of open asks, oldest first, each with ``hours_open``; ``next`` is the
    ``cursor`` of the page after it (``null`` on the last page)."""

    asks: list[AskOut]
    next: str | None = None


class ErrorOut(BaseModel):
    """Every error: a short code and a sentence naming what is wrong."""

    error: str
    detail: str


class HealthOut(BaseModel):
    """The service answers, its store is reachable and its deliverer (if any) is not failing."""

    status: Literal["ok"]
    store: str
    schema_version: int
    deliverer: Literal["starting", "running", "off"] = Field(
        description="This process's deliverer: starting (no pass yet), running, or off (none runs here)"
    )


__all__ = [
    "AskListOut",
    "AskOut",
    "CallbackOut",
    "ErrorOut",
    "HealthOut",
    "RunOut",
    "VoteOut",
]
